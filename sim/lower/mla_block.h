#pragma once
// Self-attention of a layer with multi-head latent attention (DeepSeek-V2, arXiv:2405.04434; DeepSeek-V3,
// arXiv:2412.19437), as Megatron-Core's MLASelfAttention runs it: the down projections to the compressed q and kv,
// their norms, the up projections to per-head q, k and v, rotary, then the core and the row-parallel output
// projection (sim/lower/attention_core.h). The projections' path is described at the top of
// sim/lower/mla_block.cpp.

#include <vector>

#include "sim/lower/attention_core.h"
#include "sim/lower/layer_ops.h"
#include "sim/lower/save_policy.h"

namespace orrery {

class MlaBlock {
 public:
  /// For a model with multi-head latent attention (ModelSpec::is_mla).
  explicit MlaBlock(LayerOps& ops);

  /// Emits the forward pass after `input` (the input norm's output) and returns the output projection's task
  /// (before the residual add). Without `save.mla_up_outputs` (recompute module mla_up_proj) neither the up
  /// projections' inputs nor the core's q, k, v are kept. `params`, when given, receives the first use of each
  /// parameter group.
  MaybeTask forward(MaybeTask input, const SavePolicy& save, std::vector<ParamUse>* params);

  /// Emits the backward pass after `grad` (the output's gradient) and returns the task producing the input
  /// gradient. `kept`: what the forward kept; the up projections and rotary run again when it lacks
  /// mla_up_outputs, the core when it lacks the core's internals. `params`, when given, receives the
  /// gradient-ready task of each group.
  MaybeTask backward(MaybeTask grad, const SavePolicy& kept, std::vector<ParamUse>* params);

  /// Bytes one forward pass keeps under `save` (as forward() saves them).
  Bytes saved_bytes(const SavePolicy& save) const;

 private:
  // From the normed input to rotary-applied per-head q and k (and v), and back.
  // `keep_up_inputs`: whether the up projections keep their (normed) inputs; not under mla_up_proj, whose
  // checkpoint keeps the pre-norm compressed tensors (the norms are fused into the up projections with TE).
  MaybeTask projections_fwd(MaybeTask input, bool save, std::vector<ParamUse>* params, bool keep_up_inputs);
  // Recompute module mla_up_proj: the up projections and rotary run again when the backward reaches the attention
  // core's output, and the core's inputs (q, k, v) are kept again until its backward.
  MaybeTask recompute_up(MaybeTask grad);
  MaybeTask projections_bwd(MaybeTask grad, std::vector<ParamUse>* params);
  // What the projections keep: the down projections' input, the norms' inputs, the up projections' inputs (and
  // without q_lora_rank the direct q projection's input).
  Bytes projection_saved() const;

  LayerOps& ops_;
  Emitter& emit_;
  const LoweringContext& ctx_;
  AttentionCore core_;
};

}  // namespace orrery
