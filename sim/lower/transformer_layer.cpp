#include "sim/lower/transformer_layer.h"

#include <algorithm>

#include "sim/lower/context_parallel.h"
#include "sim/lower/fp8.h"

namespace orrery {

namespace {

// Megatron-Core's TransformerBlock checkpoints layers by their index within the chunk (recompute_method "block":
// the chunk's first recompute_num_layers layers). Multi-token prediction depths keep the spec's policy.
Recompute layer_recompute(const LoweringContext& ctx, int stage, int chunk, int layer) {
  const TrainingSpec& t = ctx.training;
  if (t.recompute != Recompute::kFull || layer >= ctx.model.num_layers) return t.recompute;
  return t.recomputes_layer(layer - ctx.layout.first_layer_of(stage, chunk)) ? Recompute::kFull : Recompute::kNone;
}

// The layer's MLP block: routed experts on an MoE layer, else a dense MLP.
std::variant<MlpBlock, MoeBlock> mlp_of(LayerOps& ops) {
  using Block = std::variant<MlpBlock, MoeBlock>;
  if (ops.ctx().model.layer_is_moe(ops.layer())) return Block(std::in_place_type<MoeBlock>, ops);
  return Block(std::in_place_type<MlpBlock>, ops, MlpKind::kDense);
}

}  // namespace

TransformerLayerLowering::TransformerLayerLowering(Emitter& emit, int layer)
    : emit_(emit),
      ctx_(emit.ctx()),
      layer_(layer),
      recompute_(layer_recompute(emit.ctx(), emit.stage(), emit.chunk(), layer)),
      ops_(emit, layer),
      mlp_(mlp_of(ops_)) {
  const ModelSpec& m = ctx_.model;
  qkv_features_ = (m.num_attention_heads + 2 * m.num_kv_heads) * m.head_dim;
  mla_ = m.is_mla();
  attn_features_ = m.num_attention_heads * (mla_ ? m.mla.v_head_dim : m.head_dim);
}

AttentionShape TransformerLayerLowering::local_attention(bool backward) const {
  const ModelSpec& m = ctx_.model;
  AttentionShape a;
  a.batch = ctx_.batch;
  a.heads = m.num_attention_heads / ctx_.tp;
  a.kv_heads = m.num_kv_heads / ctx_.tp;
  a.q_len = a.kv_len = ctx_.seq;
  a.head_dim_qk = m.head_dim;
  a.head_dim_v = m.is_mla() ? m.mla.v_head_dim : m.head_dim;
  a.causal = true;
  a.window = m.layer_window(layer_);
  a.packed_fraction = ctx_.packed_fraction_of(emit_.microbatch());
  a.backward = backward;
  a.dtype = ctx_.act_dtype;
  return a;
}

Bytes TransformerLayerLowering::core_inputs_saved() const {
  const ModelSpec& m = ctx_.model;
  if (mla_) {  // q and k of nope + rope per head, v of v_head_dim
    return ctx_.tokens * m.num_attention_heads / ctx_.tp * (2 * m.head_dim + m.mla.v_head_dim) * ctx_.act_bytes;
  }
  return ctx_.tokens * (m.num_attention_heads + 2 * m.num_kv_heads) / ctx_.tp * m.head_dim * ctx_.act_bytes;
}

Bytes TransformerLayerLowering::core_internals_saved() const {
  const std::int64_t heads = ctx_.model.num_attention_heads / ctx_.tp;
  if (ctx_.training.attention_backend == AttentionBackend::kFlash) {
    return ctx_.batch * heads * ctx_.seq * 4;  // fp32 log-sum-exp per query row
  }
  const std::int64_t scores = ctx_.batch * heads * ctx_.seq * ctx_.seq;
  // Softmax output, and with attention dropout its 1-byte mask and its output.
  return scores * ctx_.act_bytes + (ops_.dropout_attention() ? scores * (1 + ctx_.act_bytes) : 0);
}

Bytes TransformerLayerLowering::saved_bytes(const SavePolicy& s) const {
  const ModelSpec& m = ctx_.model;
  Bytes total = s.layer_input ? ops_.norm_saved() : 0;
  if (s.modules) {
    total += (mla_ ? mla_projection_saved() : ops_.column_saved()) + core_inputs_saved() + ops_.row_saved(attn_features_) +
             ops_.residual_saved() + ops_.norm_saved() + ops_.residual_saved();
    // Norm output dropped: the QKV input.
    if (!s.norm_outputs) total -= mla_ ? 0 : ops_.column_saved();
    if (mla_ && !s.mla_up_outputs) {
      const MlaSpec& x = m.mla;
      total -= core_inputs_saved() + ctx_.tokens * (x.q_lora_rank + x.kv_lora_rank) * linear_input_bytes(ctx_);
    }
    if (m.qk_norm && !mla_) total += ctx_.tokens * (m.num_attention_heads + m.num_kv_heads) / ctx_.tp * m.head_dim * ctx_.act_bytes;
  }
  if (s.attention_internals) total += core_internals_saved();
  total += std::visit([&](const auto& block) { return block.saved_bytes(s); }, mlp_);
  return total;
}

// ---- forward ----
MaybeTask TransformerLayerLowering::core_fwd(MaybeTask input, bool save_inputs, bool save_internals) {
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
  if (save_inputs) emit_.save(first, core_inputs_saved());
  if (save_internals) emit_.save(first, core_internals_saved());
  return last;
}

bool TransformerLayerLowering::rope_fused() const { return ctx_.training.apply_rope_fusion.value_or(true); }

// Megatron-Core's unfused RoPE (models/common/embeddings/rope_utils.py, _apply_rotary_pos_emb_bshd @ core_v0.15.0),
// per tensor t of q and k (B bytes): cos and sin of the frequencies, each times mscale and cast (six small
// kernels on the [s, 1, 1, d] fp32 frequencies), then t * cos (read B, write B), the rotate-half's negation of its
// second half (B/2, B/2) and concatenation (B, B), * sin (B, B), the add (2B, B) and the concatenation with the
// unrotated rest (B, B): 6.5 B read and 5.5 B written in six full kernels. Its autograd backward: g * sin (B, B),
// the negation's backward (B/2, B/2), the chunk's concatenation (B, B), g * cos (B, B) and the two branches' sum
// (2B, B): 5.5 B read, 4.5 B written in five kernels.
MaybeTask TransformerLayerLowering::rope_fwd(Bytes qk) {
  if (rope_fused()) return emit_.elementwise("rope", qk, qk);
  // Per call (q, then k) and per function (cos, sin): the function (read F, write F), * mscale (F, F) and the
  // cast to the activations' dtype (F, F/2), F the fp32 frequencies of the sequence.
  const Bytes freqs = ctx_.training.seq_length * ctx_.model.head_dim * 4;
  const Bytes small_read = 2 * 2 * 3 * freqs, small_written = 2 * 2 * (2 * freqs + freqs / 2);
  return emit_.elementwise("rope", ElementwiseShape{qk * 13 / 2 + small_read, qk * 11 / 2 + small_written, 0.0, 2 * (6 + 6)});
}

MaybeTask TransformerLayerLowering::rope_bwd(Bytes qk, MaybeTask grad) {
  if (rope_fused()) return emit_.elementwise("rope", qk, qk, {grad});
  return emit_.elementwise("rope", ElementwiseShape{qk * 11 / 2, qk * 9 / 2, 0.0, 2 * 5}, {grad});
}

MaybeTask TransformerLayerLowering::forward(MaybeTask input, const SavePolicy& save, std::vector<ParamUse>* params) {
  const ModelSpec& m = ctx_.model;
  MaybeTask x = ops_.norm_fwd("input_norm", input, save.layer_input);
  ops_.record(params, "input_norm", x, true);
  MaybeTask q;
  if (mla_) {
    q = mla_fwd(x, save.modules, params, save.mla_up_outputs);
  } else {
    q = ops_.column_fwd("qkv", x, qkv_features_, save.modules && save.norm_outputs);
    ops_.record(params, "qkv", q, true);
    const Bytes qk = ctx_.tokens * (m.num_attention_heads + m.num_kv_heads) / ctx_.tp * m.head_dim * ctx_.act_bytes;
    if (m.qk_norm) {
      q = emit_.elementwise("qk_norm", qk, qk);
      if (save.modules) emit_.save(q, qk);
      ops_.record(params, "qk_norm", q, true);
    }
    if (m.position == PositionKind::kRotary) q = rope_fwd(qk);
  }
  MaybeTask c = core_fwd(q, save.modules && (!mla_ || save.mla_up_outputs), save.attention_internals);
  MaybeTask o = ops_.row_fwd("attention_proj", c, attn_features_, save.modules);
  ops_.record(params, "attention_proj", o, true);
  MaybeTask r = ops_.residual_fwd("attention_residual", o, save.modules);
  MaybeTask y = ops_.norm_fwd("post_attention_norm", r, save.modules);
  ops_.record(params, "post_attention_norm", y, true);
  const MaybeTask dn = std::visit([&](auto& block) { return block.forward(y, save, params); }, mlp_);
  // The MLP's residual add is the combine node's last kernel (mlp_bda), on its stream.
  const MoeBlock* moe = std::get_if<MoeBlock>(&mlp_);
  ComputeStreamScope on(emit_, moe ? moe->combine_post_stream() : Stream::kCompute);
  return ops_.residual_fwd("mlp_residual", dn, save.modules);
}

// ---- backward ----
MaybeTask TransformerLayerLowering::core_bwd(MaybeTask grad) {
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
  emit_.release(last, core_inputs_saved() + core_internals_saved());
  return last;
}

MaybeTask TransformerLayerLowering::backward(MaybeTask grad_output, std::vector<ParamUse>* params) {
  const ModelSpec& m = ctx_.model;
  const Recompute policy = recompute_;
  const SavePolicy saved = save();
  const SavePolicy kept = policy == Recompute::kSelective ? saved : SavePolicy{};
  if (policy == Recompute::kFull) {
    // Megatron's uniform full recompute with one layer per checkpoint: the whole layer forward runs again from
    // its saved input when the backward pass reaches it.
    PhaseScope scope(emit_, Phase::kRecompute);
    forward(grad_output, SavePolicy{false, true, true});
  }
  MaybeTask w;
  MaybeTask g = ops_.residual_bwd("mlp_residual", grad_output);
  // A dense MLP's recompute runs the pre-MLP norm again, fused into its up projection (MlpBlock).
  const bool dense_mlp_again = std::holds_alternative<MlpBlock>(mlp_) && !kept.mlp_internals;
  if (!kept.norm_outputs && !dense_mlp_again) ops_.recompute_norm("post_attention_norm");
  g = std::visit([&](auto& block) { return block.backward(g, kept, params); }, mlp_);
  g = ops_.norm_bwd("post_attention_norm", g);
  ops_.record(params, "post_attention_norm", g, false);
  g = ops_.residual_bwd("attention_residual", g);
  // Megatron hooks the input norm's recompute on the attention output's gradient: it runs as the attention
  // backward starts, and its output lives through the core's backward until the QKV weight gradient.
  if (policy == Recompute::kSelective && !saved.norm_outputs && !mla_) ops_.recompute_norm("input_norm");
  g = ops_.row_bwd("attention_proj", g, attn_features_, &w);
  ops_.record(params, "attention_proj", w, false);
  if (policy == Recompute::kSelective && mla_ && !saved.mla_up_outputs) g = recompute_mla_up(g);
  if (policy == Recompute::kSelective && !saved.attention_internals) {
    // Selective recompute (Korthikanti et al. Section 5): only the attention core runs again.
    PhaseScope scope(emit_, Phase::kRecompute);
    core_fwd(g, false, true);
  }
  g = core_bwd(g);
  if (mla_) {
    g = mla_bwd(g, params);
  } else {
    const Bytes qk = ctx_.tokens * (m.num_attention_heads + m.num_kv_heads) / ctx_.tp * m.head_dim * ctx_.act_bytes;
    if (m.position == PositionKind::kRotary) g = rope_bwd(qk, g);
    if (m.qk_norm) {
      g = emit_.elementwise("qk_norm", 2 * qk, qk, {g});
      emit_.release(g, qk);
      ops_.record(params, "qk_norm", g, false);
    }
    g = ops_.column_bwd("qkv", g, qkv_features_, &w);
    ops_.record(params, "qkv", w, false);
  }
  g = ops_.norm_bwd("input_norm", g);
  ops_.record(params, "input_norm", g, false);
  return g;
}

}  // namespace orrery
