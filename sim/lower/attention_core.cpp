#include "sim/lower/attention_core.h"

#include "sim/lower/context_parallel.h"

namespace orrery {

AttentionCore::AttentionCore(LayerOps& ops) : ops_(ops), emit_(ops.emit()), ctx_(ops.ctx()) {
  const ModelSpec& m = ctx_.model;
  attn_features_ = m.num_attention_heads * (m.is_mla() ? m.mla.v_head_dim : m.head_dim);
}

AttentionShape AttentionCore::local_attention(bool backward) const {
  const ModelSpec& m = ctx_.model;
  AttentionShape a;
  a.batch = ctx_.batch;
  a.heads = m.num_attention_heads / ctx_.tp;
  a.kv_heads = m.num_kv_heads / ctx_.tp;
  a.q_len = a.kv_len = ctx_.seq;
  a.head_dim_qk = m.head_dim;
  a.head_dim_v = m.is_mla() ? m.mla.v_head_dim : m.head_dim;
  a.causal = true;
  a.window = m.layer_window(ops_.layer());
  a.packed_fraction = ctx_.packed_fraction_of(emit_.microbatch());
  a.backward = backward;
  a.dtype = ctx_.act_dtype;
  return a;
}

Bytes AttentionCore::inputs_saved() const {
  const ModelSpec& m = ctx_.model;
  if (m.is_mla()) {  // q and k of nope + rope per head, v of v_head_dim
    return ctx_.tokens * m.num_attention_heads / ctx_.tp * (2 * m.head_dim + m.mla.v_head_dim) * ctx_.act_bytes;
  }
  return ctx_.tokens * (m.num_attention_heads + 2 * m.num_kv_heads) / ctx_.tp * m.head_dim * ctx_.act_bytes;
}

Bytes AttentionCore::internals_saved() const {
  const std::int64_t heads = ctx_.model.num_attention_heads / ctx_.tp;
  if (ctx_.training.attention_backend == AttentionBackend::kFlash) {
    return ctx_.batch * heads * ctx_.seq * 4;  // fp32 log-sum-exp per query row
  }
  const std::int64_t scores = ctx_.batch * heads * ctx_.seq * ctx_.seq;
  // Softmax output, and with attention dropout its 1-byte mask and its output.
  return scores * ctx_.act_bytes + (ops_.dropout_attention() ? scores * (1 + ctx_.act_bytes) : 0);
}

Bytes AttentionCore::saved_bytes(const SavePolicy& s, bool inputs_kept) const {
  Bytes saved = s.attention_internals ? internals_saved() : 0;
  if (s.modules) saved += (inputs_kept ? inputs_saved() : 0) + ops_.row_saved(attn_features_);
  return saved;
}

MaybeTask AttentionCore::core_fwd(MaybeTask input, bool save_inputs, bool save_internals) {
  const ModelSpec& m = ctx_.model;
  const std::int64_t heads = m.num_attention_heads / ctx_.tp, s = ctx_.seq, d = m.head_dim;
  MaybeTask first, last;
  if (ctx_.training.attention_backend == AttentionBackend::kFlash) {
    const AttentionShape a = local_attention(false);
    if (ctx_.plan.cp > 1) {
      const TaskId next = builder_next();
      last = emit_cp_attention_forward(emit_, a, input);
      if (emit_.builder().last() >= next) first = MaybeTask(next);  // none when the mode dropped them all
    } else {
      first = last = emit_.attention("attention", a, {input});
    }
  } else {
    // Unfused attention as Megatron ran it before fused kernels: batched QK^T, fused scale-mask-softmax,
    // dropout, batched probabilities x V. The score-sized tensors live in HBM.
    const std::int64_t bh = ctx_.batch * heads;
    const Bytes scores = bh * s * s * ctx_.act_bytes;
    first = emit_.gemm("attention_scores", GemmShape{s, s, d, bh, ctx_.act_dtype}, {input});
    emit_.elementwise("softmax", scores, scores);
    if (ops_.dropout_attention()) emit_.elementwise("attention_dropout", scores, scores + bh * s * s);
    last = emit_.gemm("attention_values", GemmShape{s, d, s, bh, ctx_.act_dtype});
  }
  if (save_inputs) emit_.save(first, inputs_saved());
  if (save_internals) emit_.save(first, internals_saved());
  return last;
}

MaybeTask AttentionCore::forward(MaybeTask qkv, bool save_inputs, const SavePolicy& save,
                                 std::vector<ParamUse>* params) {
  MaybeTask c = core_fwd(qkv, save_inputs, save.attention_internals);
  MaybeTask o = ops_.row_fwd("attention_proj", c, attn_features_, save.modules);
  ops_.record(params, "attention_proj", o, true);
  return o;
}

MaybeTask AttentionCore::projection_backward(MaybeTask grad, std::vector<ParamUse>* params) {
  MaybeTask w;
  const MaybeTask g = ops_.row_bwd("attention_proj", grad, attn_features_, &w);
  ops_.record(params, "attention_proj", w, false);
  return g;
}

MaybeTask AttentionCore::core_bwd(MaybeTask grad) {
  const ModelSpec& m = ctx_.model;
  const std::int64_t heads = m.num_attention_heads / ctx_.tp, s = ctx_.seq, d = m.head_dim;
  MaybeTask last;
  if (ctx_.training.attention_backend == AttentionBackend::kFlash) {
    const AttentionShape a = local_attention(true);
    last = ctx_.plan.cp > 1 ? emit_cp_attention_backward(emit_, a, grad) : emit_.attention("attention", a, {grad});
  } else {
    const std::int64_t bh = ctx_.batch * heads;
    const Bytes scores = bh * s * s * ctx_.act_bytes;
    emit_.gemm("attention_values", GemmShape{s, s, d, bh, ctx_.act_dtype}, {grad});  // d(probs) = dO V^T
    emit_.gemm("attention_values", GemmShape{s, d, s, bh, ctx_.act_dtype});          // dV = P^T dO
    if (ops_.dropout_attention()) emit_.elementwise("attention_dropout", scores + bh * s * s, scores);
    emit_.elementwise("softmax", 2 * scores, scores);
    emit_.gemm("attention_scores", GemmShape{s, d, s, bh, ctx_.act_dtype});  // dQ = dS K
    last = emit_.gemm("attention_scores", GemmShape{s, d, s, bh, ctx_.act_dtype});  // dK = dS^T Q
  }
  emit_.release(last, inputs_saved() + internals_saved());
  return last;
}

MaybeTask AttentionCore::backward(MaybeTask grad, const SavePolicy& kept) {
  if (!kept.attention_internals) {
    // Selective recompute (Korthikanti et al. Section 5): only the attention core runs again.
    PhaseScope scope(emit_, Phase::kRecompute);
    core_fwd(grad, false, true);
  }
  return core_bwd(grad);
}

}  // namespace orrery
