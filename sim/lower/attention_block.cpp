#include "sim/lower/attention_block.h"

namespace orrery {

AttentionBlock::AttentionBlock(LayerOps& ops) : ops_(ops), emit_(ops.emit()), ctx_(ops.ctx()), core_(ops) {
  const ModelSpec& m = ctx_.model;
  qkv_features_ = (m.num_attention_heads + 2 * m.num_kv_heads) * m.head_dim;
}

Bytes AttentionBlock::qk_bytes() const {
  const ModelSpec& m = ctx_.model;
  return ctx_.tokens * (m.num_attention_heads + m.num_kv_heads) / ctx_.tp * m.head_dim * ctx_.act_bytes;
}

Bytes AttentionBlock::saved_bytes(const SavePolicy& s) const {
  Bytes saved = core_.saved_bytes(s, true);
  if (!s.modules) return saved;
  if (s.norm_outputs) saved += ops_.column_saved();  // the QKV projection's input, the input norm's output
  if (ctx_.model.qk_norm) saved += qk_bytes();
  return saved;
}

MaybeTask AttentionBlock::forward(MaybeTask input, const SavePolicy& save, std::vector<ParamUse>* params) {
  const ModelSpec& m = ctx_.model;
  MaybeTask q = ops_.column_fwd("qkv", input, qkv_features_, save.modules && save.norm_outputs);
  ops_.record(params, "qkv", q, true);
  const Bytes qk = qk_bytes();
  if (m.qk_norm) {
    q = emit_.elementwise("qk_norm", qk, qk);
    if (save.modules) emit_.save(q, qk);
    ops_.record(params, "qk_norm", q, true);
  }
  if (m.position == PositionKind::kRotary) q = rope_fwd(qk);
  return core_.forward(q, save.modules, save, params);
}

MaybeTask AttentionBlock::backward(MaybeTask grad, const SavePolicy& kept, std::vector<ParamUse>* params) {
  const ModelSpec& m = ctx_.model;
  MaybeTask g = core_.projection_backward(grad, params);
  g = core_.backward(g, kept);
  const Bytes qk = qk_bytes();
  if (m.position == PositionKind::kRotary) g = rope_bwd(qk, g);
  if (m.qk_norm) {
    g = emit_.elementwise("qk_norm", 2 * qk, qk, {g});
    emit_.release(g, qk);
    ops_.record(params, "qk_norm", g, false);
  }
  MaybeTask w;
  g = ops_.column_bwd("qkv", g, qkv_features_, &w);
  ops_.record(params, "qkv", w, false);
  return g;
}

bool AttentionBlock::rope_fused() const { return ctx_.training.apply_rope_fusion.value_or(true); }

// Megatron-Core's unfused RoPE (models/common/embeddings/rope_utils.py, _apply_rotary_pos_emb_bshd @ core_v0.15.0),
// per tensor t of q and k (B bytes): cos and sin of the frequencies, each times mscale and cast (six small
// kernels on the [s, 1, 1, d] fp32 frequencies), then t * cos (read B, write B), the rotate-half's negation of its
// second half (B/2, B/2) and concatenation (B, B), * sin (B, B), the add (2B, B) and the concatenation with the
// unrotated rest (B, B): 6.5 B read and 5.5 B written in six full kernels. Its autograd backward: g * sin (B, B),
// the negation's backward (B/2, B/2), the chunk's concatenation (B, B), g * cos (B, B) and the two branches' sum
// (2B, B): 5.5 B read, 4.5 B written in five kernels.
MaybeTask AttentionBlock::rope_fwd(Bytes qk) {
  if (rope_fused()) return emit_.elementwise("rope", qk, qk);
  // Per call (q, then k) and per function (cos, sin): the function (read F, write F), * mscale (F, F) and the
  // cast to the activations' dtype (F, F/2), F the fp32 frequencies of the sequence.
  const Bytes freqs = ctx_.training.seq_length * ctx_.model.head_dim * 4;
  const Bytes small_read = 2 * 2 * 3 * freqs, small_written = 2 * 2 * (2 * freqs + freqs / 2);
  return emit_.elementwise("rope", ElementwiseShape{qk * 13 / 2 + small_read, qk * 11 / 2 + small_written, 0.0, 2 * (6 + 6)});
}

MaybeTask AttentionBlock::rope_bwd(Bytes qk, MaybeTask grad) {
  if (rope_fused()) return emit_.elementwise("rope", qk, qk, {grad});
  return emit_.elementwise("rope", ElementwiseShape{qk * 11 / 2, qk * 9 / 2, 0.0, 2 * 5}, {grad});
}

}  // namespace orrery
