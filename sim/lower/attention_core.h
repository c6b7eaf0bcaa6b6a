#pragma once
// The part of self-attention that dense (GQA) attention and multi-head latent attention share, as Megatron-Core's
// Attention runs it (core_attention, linear_proj): the attention core softmax(Q K^T / sqrt(d)) V of the rank's
// heads, flash (fused; under context parallelism sim/lower/context_parallel.h) or unfused as Megatron ran it
// before fused kernels, and the row-parallel output projection. Forward, backward, and the core's selective
// recompute (Korthikanti et al. arXiv:2205.05198 Section 5).

#include <vector>

#include "sim/lower/layer_ops.h"
#include "sim/lower/save_policy.h"

namespace orrery {

class AttentionCore {
 public:
  explicit AttentionCore(LayerOps& ops);

  /// Emits the core after `qkv` (the task producing q, k, v) and the output projection; returns the projection's
  /// task. Keeps q, k, v with `save_inputs`, the projection's input with `save.modules`, and the core's internals
  /// with `save.attention_internals`. `params`, when given, receives the projection's first use.
  MaybeTask forward(MaybeTask qkv, bool save_inputs, const SavePolicy& save, std::vector<ParamUse>* params);
  /// Emits the output projection's backward after `grad`; returns the task producing the core output's gradient.
  /// `params`, when given, receives the projection's gradient-ready task.
  MaybeTask projection_backward(MaybeTask grad, std::vector<ParamUse>* params);
  /// Emits the core's backward after `grad` (its output's gradient) and returns the task producing dQ, dK, dV;
  /// first, when `kept` lacks the core's internals, the core runs again (selective recompute).
  MaybeTask backward(MaybeTask grad, const SavePolicy& kept);

  /// Bytes the core and the projection keep under `save`; `inputs_kept`: whether q, k, v are (not under MLA's
  /// recompute module mla_up_proj, which recomputes them).
  Bytes saved_bytes(const SavePolicy& save, bool inputs_kept) const;
  /// q, k, v of the rank's heads: (a + 2 kv) d per token, or MLA's q and k of nope + rope and v of v_head_dim.
  Bytes inputs_saved() const;

 private:
  MaybeTask core_fwd(MaybeTask input, bool save_inputs, bool save_internals);
  MaybeTask core_bwd(MaybeTask grad);
  // The score-sized tensors the unfused core keeps (softmax output, dropout mask and output), or flash's
  // log-sum-exp per query row.
  Bytes internals_saved() const;
  /// The flash attention of this rank's own tokens (q = kv = s / cp, TP-local heads).
  AttentionShape local_attention(bool backward) const;
  /// The id the next emitted task will get.
  TaskId builder_next() const { return emit_.builder().last() + 1; }

  LayerOps& ops_;
  Emitter& emit_;
  const LoweringContext& ctx_;
  std::int64_t attn_features_ = 0;  // input features of the output projection: heads x v head dim
};

}  // namespace orrery
