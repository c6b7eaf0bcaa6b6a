#include "sim/lower/layer_ops.h"

#include "sim/lower/fp8.h"

namespace orrery {

LayerOps::LayerOps(Emitter& emit, int layer)
    : emit_(emit),
      ctx_(emit.ctx()),
      layer_(layer),
      groups_(layer_param_groups(ctx_, layer, emit.chunk())),
      dropout_attention_(ctx_.model.attention_dropout > 0.0),
      dropout_hidden_(ctx_.model.hidden_dropout > 0.0) {}

GemmShape LayerOps::linear(std::int64_t m, std::int64_t n, std::int64_t k) const {
  return GemmShape{m, n, k, 1, ctx_.gemm_dtype};
}

void LayerOps::record(std::vector<ParamUse>* params, const char* name, MaybeTask task, bool forward) const {
  record_param_use(params, emit_, groups_, name, layer_, task, forward);
}

MaybeTask LayerOps::weight_grad(const char* label, const GemmShape& shape, Bytes release, const char* group,
                                std::vector<ParamUse>* params) {
  PhaseScope scope(emit_, Phase::kBackwardWeight);
  const MaybeTask w = emit_.gemm(label, shape);
  emit_.release(w, release);
  if (group) record(params, group, w, false);
  return w;
}

// ---- sizes of saved activations (Korthikanti et al., arXiv:2205.05198, Section 4.1) ----

Bytes LayerOps::norm_saved() const { return ctx_.tokens_sp * ctx_.model.hidden_size * ctx_.act_bytes; }

Bytes LayerOps::column_saved() const {
  // With sequence parallelism Megatron keeps the sharded input and all-gathers it again in the backward pass.
  return ctx_.tokens_sp * ctx_.model.hidden_size * linear_input_bytes(ctx_);
}

Bytes LayerOps::row_saved(std::int64_t in_features) const {
  return ctx_.tokens * (in_features / ctx_.tp) * linear_input_bytes(ctx_);
}

Bytes LayerOps::residual_saved() const {
  return dropout_hidden_ ? ctx_.tokens_sp * ctx_.model.hidden_size : 0;  // 1-byte dropout mask
}

Bytes LayerOps::activation_saved(std::int64_t rows, std::int64_t width) const {
  return rows * (ctx_.model.gated_mlp ? 2 : 1) * width * ctx_.act_bytes;
}

Bytes LayerOps::glu_clamp_saved(std::int64_t rows, std::int64_t width) const {
  return ctx_.model.gated_mlp && ctx_.model.swiglu_limit > 0 ? activation_saved(rows, width) : 0;
}

// ---- forward ----

MaybeTask LayerOps::norm_fwd(const char* label, MaybeTask input, bool save) {
  const Bytes bytes = norm_saved();
  MaybeTask t = emit_.elementwise(label, bytes, bytes, {input});
  if (save) emit_.save(t, bytes);
  return t;
}

MaybeTask LayerOps::column_fwd(const char* label, MaybeTask input, std::int64_t out_features, bool save) {
  const std::int64_t T = ctx_.tokens, h = ctx_.model.hidden_size, n = out_features / ctx_.tp;
  // With FP8 the norm before this linear writes its output in FP8 (TE's LayerNormLinear), which is gathered; with
  // tensorwise or blockwise scaling it writes BF16 and a cast follows (sim/lower/fp8.h).
  const Bytes full = T * h * linear_input_bytes(ctx_);
  input = emit_fp8_weight_cast(emit_, "fp8_weight_cast", group_elements(groups_, label), input);
  input = emit_fp8_norm_output_cast(emit_, ctx_.tokens_sp * h, input, AmaxScope::kTpGroup);
  MaybeTask first, out;
  if (ctx_.plan.sequence_parallel && ctx_.tp > 1) {
    MaybeTask gather = emit_.collective(label, Stream::kTp, GroupKind::kTp, CollectiveKind::kAllGather, full, {input});
    if (ctx_.plan.tp_overlap_active()) {
      // Pipelined all-gather + GEMM (Transformer Engine userbuffers): the GEMM works on chunks that have arrived;
      // only the last 1/tp of it waits for the whole gather.
      first = emit_.gemm(label, linear(T - T / ctx_.tp, n, h), {input});
      out = emit_.gemm(label, linear(T / ctx_.tp, n, h), {gather});
    } else {
      first = out = emit_.gemm(label, linear(T, n, h), {gather});
    }
  } else {
    first = out = emit_.gemm(label, linear(T, n, h), {input});
  }
  if (save) emit_.save(first, column_saved());
  return out;
}

MaybeTask LayerOps::row_fwd(const char* label, MaybeTask input, std::int64_t in_features, bool save) {
  const std::int64_t T = ctx_.tokens, h = ctx_.model.hidden_size, k = in_features / ctx_.tp;
  const Bytes full = T * h * ctx_.act_bytes;
  input = emit_fp8_weight_cast(emit_, "fp8_weight_cast", group_elements(groups_, label), input);
  if (uses_fp8(ctx_)) input = emit_fp8_cast(emit_, "fp8_cast", T * k, input);
  MaybeTask first, out;
  if (ctx_.tp > 1 && ctx_.plan.tp_overlap_active()) {
    // Pipelined GEMM + reduce-scatter: the scatter starts once the first chunk of output exists.
    first = emit_.gemm(label, linear(T / ctx_.tp, h, k), {input});
    MaybeTask scatter = emit_.collective(label, Stream::kTp, GroupKind::kTp, CollectiveKind::kReduceScatter, full, {first});
    emit_.gemm(label, linear(T - T / ctx_.tp, h, k));  // the rest overlaps the scatter
    out = scatter;
  } else {
    first = out = emit_.gemm(label, linear(T, h, k), {input});
    if (ctx_.tp > 1) {
      auto kind = ctx_.plan.sequence_parallel ? CollectiveKind::kReduceScatter : CollectiveKind::kAllReduce;
      out = emit_.collective(label, Stream::kTp, GroupKind::kTp, kind, full, {first});
    }
  }
  if (save) emit_.save(first, row_saved(in_features));
  return out;
}

MaybeTask LayerOps::residual_fwd(const char* label, MaybeTask input, bool save) {
  const Bytes x = ctx_.tokens_sp * ctx_.model.hidden_size * ctx_.act_bytes;
  MaybeTask t = emit_.elementwise(label, 2 * x, x + residual_saved(), {input});
  if (save) emit_.save(t, residual_saved());
  return t;
}

MaybeTask LayerOps::activation_fwd(MaybeTask input, std::int64_t rows, std::int64_t width, bool save_input,
                                   bool save_clamped) {
  const Bytes out = rows * width * ctx_.act_bytes;
  if (const Bytes both = glu_clamp_saved(rows, width); both > 0) {
    // Megatron-Core clamps outside its fused quick-GEGLU kernel (megatron/core/fusions/fused_bias_geglu.py,
    // weighted_bias_quick_geglu_impl with clamp_value): torch.chunk, one clamp per half (each reads and writes a
    // half) and torch.cat of the two (reads and writes both); the fused kernel then keeps the concatenated copy.
    input = emit_.elementwise("glu_clamp", 2 * both, 2 * both, {input});
    if (save_clamped) emit_.save(input, both);
  }
  MaybeTask t = emit_.elementwise("mlp_activation", activation_saved(rows, width), out, {input});
  if (save_input) emit_.save(t, activation_saved(rows, width));
  return t;
}

// ---- backward ----

MaybeTask LayerOps::norm_bwd(const char* label, MaybeTask grad) {
  const Bytes x = norm_saved();
  MaybeTask t = emit_.elementwise(label, 2 * x, x, {grad});
  emit_.release(t, x);
  return t;
}

MaybeTask LayerOps::column_bwd(const char* label, MaybeTask grad, std::int64_t out_features, MaybeTask* wgrad) {
  const std::int64_t T = ctx_.tokens, h = ctx_.model.hidden_size, n = out_features / ctx_.tp;
  const Bytes full = T * h * ctx_.act_bytes;
  const Bytes input_full = T * h * linear_input_bytes(ctx_);
  const bool sp = ctx_.plan.sequence_parallel && ctx_.tp > 1;
  if (uses_fp8(ctx_)) grad = emit_fp8_cast(emit_, "fp8_cast", T * n, grad);
  MaybeTask regather;
  if (sp) {
    // Korthikanti et al. Section 4.2.2: the sharded input is all-gathered again for the weight gradient.
    regather = emit_.collective(label, Stream::kTp, GroupKind::kTp, CollectiveKind::kAllGather, input_full, {grad});
    emit_.save(regather, input_full);
  }
  MaybeTask grad_input;
  if (sp && ctx_.plan.tp_overlap_active()) {
    MaybeTask head = emit_.gemm(label, linear(T / ctx_.tp, h, n), {grad});
    grad_input = emit_.collective(label, Stream::kTp, GroupKind::kTp, CollectiveKind::kReduceScatter, full, {head});
    emit_.gemm(label, linear(T - T / ctx_.tp, h, n));
  } else {
    MaybeTask d = emit_.gemm(label, linear(T, h, n), {grad});
    grad_input = d;
    if (ctx_.tp > 1) {
      // Megatron launches this asynchronously and computes the weight gradient meanwhile.
      auto kind = sp ? CollectiveKind::kReduceScatter : CollectiveKind::kAllReduce;
      grad_input = emit_.collective(label, Stream::kTp, GroupKind::kTp, kind, full, {d});
    }
  }
  MaybeTask w;
  {
    PhaseScope scope(emit_, Phase::kBackwardWeight);
    w = emit_.gemm(label, linear(n, h, T), {regather});
  }
  emit_.release(w, column_saved() + (sp ? input_full : 0));
  *wgrad = w;
  return grad_input;
}

MaybeTask LayerOps::row_bwd(const char* label, MaybeTask grad, std::int64_t in_features, MaybeTask* wgrad) {
  const std::int64_t T = ctx_.tokens, h = ctx_.model.hidden_size, k = in_features / ctx_.tp;
  const Bytes full = T * h * ctx_.act_bytes;
  const bool sp = ctx_.plan.sequence_parallel && ctx_.tp > 1;
  MaybeTask gather, dgrad, wgrad_input;
  if (sp) {
    // Per-tensor FP8 scales: each rank quantizes its shard and the FP8 copy is gathered, then transposed for the
    // weight gradient (TE's grad_output_preprocess); otherwise the BF16 gradient is gathered and quantized whole.
    const bool quantized = fp8_gathers_quantized_grads(ctx_);
    if (quantized) grad = emit_fp8_shard_cast(emit_, ctx_.tokens_sp * h, grad);
    const Bytes gathered = quantized ? T * h : full;
    gather = emit_.collective(label, Stream::kTp, GroupKind::kTp, CollectiveKind::kAllGather, gathered, {grad});
    emit_.save(gather, full);  // BF16, or the FP8 copy and its transpose: 2 bytes per element either way
    if (!quantized && uses_fp8(ctx_)) gather = emit_fp8_cast(emit_, "fp8_cast", T * h, gather);
    wgrad_input = gather;
    if (ctx_.plan.tp_overlap_active()) {
      emit_.gemm(label, linear(T - T / ctx_.tp, k, h), {grad});
      dgrad = emit_.gemm(label, linear(T / ctx_.tp, k, h), {gather});
    } else {
      dgrad = emit_.gemm(label, linear(T, k, h), {gather});
    }
  } else {
    if (uses_fp8(ctx_)) grad = emit_fp8_cast(emit_, "fp8_cast", T * h, grad);
    dgrad = emit_.gemm(label, linear(T, k, h), {grad});
  }
  MaybeTask w;
  {
    PhaseScope scope(emit_, Phase::kBackwardWeight);
    // The gathered FP8 copy's transpose, made for the weight gradient once the input gradient's GEMMs are queued
    // (so it holds up none of them, as with TE's userbuffers path, which transposes late).
    if (sp && fp8_gathers_quantized_grads(ctx_)) wgrad_input = emit_fp8_transpose(emit_, T * h, gather);
    w = emit_.gemm(label, linear(k, h, T), {wgrad_input});
  }
  emit_.release(w, row_saved(in_features) + (sp ? full : 0));
  *wgrad = w;
  return dgrad;
}

MaybeTask LayerOps::residual_bwd(const char* label, MaybeTask grad) {
  if (!dropout_hidden_) return grad;  // the add's gradient is the incoming gradient itself
  const Bytes x = ctx_.tokens_sp * ctx_.model.hidden_size * ctx_.act_bytes;
  MaybeTask t = emit_.elementwise(label, x + residual_saved(), x, {grad});
  emit_.release(t, residual_saved());
  return t;
}

MaybeTask LayerOps::activation_bwd(MaybeTask grad, std::int64_t rows, std::int64_t width) {
  const Bytes out = rows * width * ctx_.act_bytes;
  const Bytes saved = activation_saved(rows, width);
  MaybeTask t = emit_.elementwise("mlp_activation", out + saved, saved, {grad});
  emit_.release(t, saved);
  if (const Bytes both = glu_clamp_saved(rows, width); both > 0) {
    // Each clamp's gradient reads the incoming gradient and the clamp's input (a half of the up outputs) and writes
    // the masked gradient; torch.cat's backward only takes views. (The activation's backward above frees the
    // clamped copy and this one the up outputs; the two are the same size.)
    t = emit_.elementwise("glu_clamp", 2 * both, both, {t});
    emit_.release(t, both);
  }
  return t;
}

MaybeTask LayerOps::recompute_norm(const char* label, MaybeTask after) {
  // Megatron's layernorm recompute (CheckpointWithoutOutput): the norm runs again from its saved input, and its
  // output lives until the linear that reads it has its weight gradient.
  PhaseScope scope(emit_, Phase::kRecompute);
  const MaybeTask t = emit_.elementwise(label, norm_saved(), norm_saved(), {after});
  emit_.save(t, column_saved());
  return t;
}

}  // namespace orrery
