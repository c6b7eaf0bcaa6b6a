#pragma once
// A dense, tensor-parallel MLP as Megatron-Core runs it (MLP; SharedExpertMLP for an MoE layer's shared experts):
// column-parallel up (and gate) projection h -> (2) w / tp, the activation, row-parallel down projection w / tp -> h
// (Shoeybi et al. arXiv:1909.08053). Korthikanti et al. (arXiv:2205.05198) Section 4.1: it keeps its input, the
// activation's input and the down projection's input; recompute modules mlp and shared_experts drop the last two
// and run the MLP again from its input in the backward.

#include <vector>

#include "sim/lower/layer_ops.h"
#include "sim/lower/save_policy.h"

namespace orrery {

/// Which dense MLP of a layer.
enum class MlpKind {
  /// A dense layer's own (labels mlp_up and mlp_down, a parameter group each, width intermediate_size); with
  /// Transformer Engine its pre-MLP norm is fused into the up projection (TELayerNormColumnParallelLinear).
  kDense,
  /// An MoE layer's shared experts (labels shared_expert_up and shared_expert_down, one parameter group
  /// shared_experts, width num_shared_experts x shared_expert_intermediate_size).
  kSharedExperts,
};

class MlpBlock {
 public:
  MlpBlock(LayerOps& ops, MlpKind kind);

  /// Emits the forward pass after `input` (the pre-MLP norm's output, sequence-parallel shard) and returns the
  /// task producing the down projection's output. Keeps under `save.modules`: the up projection's input (with
  /// norm_outputs; a dense MLP's only with its internals too, as its checkpoint holds the norm's input instead)
  /// and, with its internals flag (mlp_internals, shared_expert_internals), the activation's and down projection's
  /// inputs. `params`, when given, receives the first use of its parameter groups.
  MaybeTask forward(MaybeTask input, const SavePolicy& save, std::vector<ParamUse>* params);

  /// Emits the backward pass after `grad` and returns the task producing the input gradient. `kept`: what the
  /// forward kept; without the internals the MLP's forward runs again first (recompute module mlp or
  /// shared_experts). `params`, when given, receives the gradient-ready task of its parameter groups.
  MaybeTask backward(MaybeTask grad, const SavePolicy& kept, std::vector<ParamUse>* params);

  /// Bytes one forward pass keeps under `save` (as forward() saves them).
  Bytes saved_bytes(const SavePolicy& save) const;
  /// The activation's input and the down projection's input (what recompute modules mlp and shared_experts drop).
  Bytes internals_saved() const;

 private:
  // The three ops; `save_input`: the up projection keeps its input; `save_internals`: the activation and the down
  // projection keep theirs (each only with `save`). `up_task` receives the up projection's task.
  MaybeTask run(MaybeTask input, bool save, bool save_input, bool save_internals, MaybeTask* up_task);
  // The forward again in the backward (Phase::kRecompute), keeping what the backward releases.
  void recompute(MaybeTask grad);

  LayerOps& ops_;
  Emitter& emit_;
  const LoweringContext& ctx_;
  const char* up_;
  const char* down_;
  const char* up_group_;
  const char* down_group_;       // null: one group for both linears, used first and finished last by the up one
  const char* fused_norm_;       // the norm fused into the up projection (null: none)
  bool SavePolicy::*internals_;  // the SavePolicy flag that keeps the internals
  std::int64_t intermediate_;    // w, all TP ranks together
};

}  // namespace orrery
