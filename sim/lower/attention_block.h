#pragma once
// Self-attention of a dense decoder layer (GPT- or Llama-style, multi-head or grouped-query), as Megatron-Core's
// SelfAttention runs it: the column-parallel QKV projection h -> (a + 2 kv) d / tp, optional per-head q and k
// norms (qk_layernorm), rotary embedding of q and k, then the core and the row-parallel output projection
// (sim/lower/attention_core.h).

#include <vector>

#include "sim/lower/attention_core.h"
#include "sim/lower/layer_ops.h"
#include "sim/lower/save_policy.h"

namespace orrery {

class AttentionBlock {
 public:
  /// For a layer without multi-head latent attention (sim/lower/mla_block.h has that).
  explicit AttentionBlock(LayerOps& ops);

  /// Emits the forward pass after `input` (the input norm's output) and returns the output projection's task
  /// (before the residual add). The QKV projection keeps its input with `save.modules` and norm_outputs.
  /// `params`, when given, receives the first use of each parameter group.
  MaybeTask forward(MaybeTask input, const SavePolicy& save, std::vector<ParamUse>* params);

  /// Emits the backward pass after `grad` (the output's gradient) and returns the task producing the input
  /// gradient. `kept`: what the forward kept; the core runs again when it lacks the core's internals.
  /// `params`, when given, receives the gradient-ready task of each group.
  MaybeTask backward(MaybeTask grad, const SavePolicy& kept, std::vector<ParamUse>* params);

  /// Bytes one forward pass keeps under `save` (as forward() saves them).
  Bytes saved_bytes(const SavePolicy& save) const;

 private:
  // q and k of the rank's heads, (a + kv) d per token: what the q and k norms and rotary read and write.
  Bytes qk_bytes() const;
  // The rotary embedding of q and k (`qk` bytes together), forward and backward: Transformer Engine's fused kernel,
  // or Megatron-Core's unfused PyTorch ops (TrainingSpec::apply_rope_fusion false).
  bool rope_fused() const;
  MaybeTask rope_fwd(Bytes qk);
  MaybeTask rope_bwd(Bytes qk, MaybeTask grad);

  LayerOps& ops_;
  Emitter& emit_;
  const LoweringContext& ctx_;
  AttentionCore core_;
  std::int64_t qkv_features_ = 0;  // output features of the QKV projection (all heads)
};

}  // namespace orrery
