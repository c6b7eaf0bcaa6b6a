#pragma once
// The routed-expert MLP of a transformer layer, as Megatron-Core's MoELayer runs it (megatron/core/transformer/moe:
// TopKRouter, the alltoall, allgather and flex token dispatchers, GroupedMLP / TEGroupedMLP, SharedExpertMLP):
// router, dispatch, the local experts' grouped GEMMs, combine, and the shared experts (an MlpBlock). The dispatch
// and combine paths and what is saved are described at the top of sim/lower/moe_block.cpp.

#include <optional>
#include <vector>

#include "sim/lower/layer_ops.h"
#include "sim/lower/mlp_block.h"
#include "sim/lower/save_policy.h"

namespace orrery {

class MoeBlock {
 public:
  /// For an MoE layer (ModelSpec::layer_is_moe).
  explicit MoeBlock(LayerOps& ops);

  /// Emits the forward pass after `input` (the pre-MLP norm's output, sequence-parallel shard) and returns the
  /// task producing the block's output (before the residual add). Without `save.moe_internals` (recompute module
  /// moe) it keeps only its input. `params`, when given, receives the first use of each parameter group.
  MaybeTask forward(MaybeTask input, const SavePolicy& save, std::vector<ParamUse>* params);

  /// Emits the backward pass after `grad` and returns the task producing the input gradient. `kept`: what the
  /// forward kept; what it lacks runs again first (the whole block under module moe, the shared experts under
  /// shared_experts, the experts' activation under moe_act). `params`, when given, receives the gradient-ready
  /// task of each group.
  MaybeTask backward(MaybeTask grad, const SavePolicy& kept, std::vector<ParamUse>* params);

  /// Bytes one forward pass keeps under `save` (as forward() saves them).
  Bytes saved_bytes(const SavePolicy& save) const;

  /// Where the combine's post-processing runs: the EP stream with the EP overlap, else the compute stream.
  Stream combine_post_stream() const;

 private:
  // The block's forward, keeping what `policy` asks (nothing without modules).
  MaybeTask run(MaybeTask input, const SavePolicy& policy, std::vector<ParamUse>* params);

  // Sizes (bytes) of what the block saves.
  Bytes routed_saved() const;          // all but the shared experts
  Bytes checkpoint_saved() const;      // the block's input, what recompute module moe keeps
  Bytes down_input_saved() const;      // the routed experts' activation outputs, the down projection's input
  Bytes clamp_saved() const;           // the routed experts' clamped up outputs, received rows x 2 width x activation
                                       // bytes (GPT-OSS; 0 without a clamp)
  Bytes router_input_saved() const;    // the pre-MLP norm output the router keeps (0 with shared experts)

  LayerOps& ops_;
  Emitter& emit_;
  const LoweringContext& ctx_;
  std::optional<MlpBlock> shared_;  // the shared experts (none without)
};

}  // namespace orrery
