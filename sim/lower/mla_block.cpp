// Multi-head latent attention (DeepSeek-V2, arXiv:2405.04434, eq. 9-14; DeepSeek-V3, arXiv:2412.19437) in the
// non-absorbed training form Megatron-Core's MLASelfAttention runs:
//
//   q_down (h -> q_lora) and kv_down (h -> kv_lora + rope): replicated weights, applied to the rank's
//   sequence-parallel shard, then the compressed tensors all-gathered over TP (much smaller than h) ->
//   q_down_norm, kv_down_norm -> q_up (q_lora -> heads (nope + rope)) and kv_up (kv_lora -> heads (nope + v)),
//   column-parallel over heads -> rotary on the rope parts, the shared k_rope broadcast to every head ->
//   fused attention with head dims (nope + rope) for q and k and v for v -> attention_proj (row-parallel).
//
// Without sequence parallelism every TP rank computes the down projections on all tokens; the backward then
// all-reduces the compressed gradient (its reduce-scatter with sequence parallelism). Without q_lora_rank
// (DeepSeek-V2-Lite) queries come from an ordinary column-parallel linear `q`.
#include "sim/lower/mla_block.h"

#include "sim/lower/fp8.h"

namespace orrery {

namespace {

struct MlaSizes {
  std::int64_t heads = 0;     // local heads, a / tp
  std::int64_t q_lora = 0, kv_lora = 0, rope = 0, nope = 0, v = 0;
  std::int64_t down = 0;      // compressed width on each token: q_lora + kv_lora + rope
  std::int64_t q_up = 0;      // local query features: heads (nope + rope)
  std::int64_t kv_up = 0;     // local key-nope and value features: heads (nope + v)
};

MlaSizes mla_sizes(const LoweringContext& ctx) {
  const MlaSpec& x = ctx.model.mla;
  MlaSizes z;
  z.heads = ctx.model.num_attention_heads / ctx.tp;
  z.q_lora = x.q_lora_rank;
  z.kv_lora = x.kv_lora_rank;
  z.rope = x.qk_rope_head_dim;
  z.nope = x.qk_nope_head_dim;
  z.v = x.v_head_dim;
  z.down = z.q_lora + z.kv_lora + z.rope;
  z.q_up = z.heads * (z.nope + z.rope);
  z.kv_up = z.heads * (z.nope + z.v);
  return z;
}

}  // namespace

MlaBlock::MlaBlock(LayerOps& ops) : ops_(ops), emit_(ops.emit()), ctx_(ops.ctx()), core_(ops) {}

Bytes MlaBlock::projection_saved() const {
  const MlaSizes z = mla_sizes(ctx_);
  const Bytes in = linear_input_bytes(ctx_);
  Bytes saved = ops_.column_saved();                                     // input of the down projections
  saved += ctx_.tokens * (z.q_lora + z.kv_lora) * ctx_.act_bytes;        // inputs of the two norms
  saved += ctx_.tokens * (z.q_lora + z.kv_lora) * in;                    // inputs of q_up and kv_up
  if (z.q_lora == 0) saved += ops_.column_saved();                       // input of the direct q projection
  return saved;
}

Bytes MlaBlock::saved_bytes(const SavePolicy& s) const {
  Bytes saved = core_.saved_bytes(s, s.mla_up_outputs);
  if (!s.modules) return saved;
  saved += projection_saved();
  if (!s.mla_up_outputs) {
    const MlaSpec& x = ctx_.model.mla;
    saved -= ctx_.tokens * (x.q_lora_rank + x.kv_lora_rank) * linear_input_bytes(ctx_);
  }
  return saved;
}

MaybeTask MlaBlock::forward(MaybeTask input, const SavePolicy& save, std::vector<ParamUse>* params) {
  const MaybeTask q = projections_fwd(input, save.modules, params, save.mla_up_outputs);
  return core_.forward(q, save.modules && save.mla_up_outputs, save, params);
}

MaybeTask MlaBlock::backward(MaybeTask grad, const SavePolicy& kept, std::vector<ParamUse>* params) {
  MaybeTask g = core_.projection_backward(grad, params);
  if (!kept.mla_up_outputs) g = recompute_up(g);
  g = core_.backward(g, kept);
  return projections_bwd(g, params);
}

MaybeTask MlaBlock::projections_fwd(MaybeTask x, bool save, std::vector<ParamUse>* params, bool keep_up_inputs) {
  const MlaSizes z = mla_sizes(ctx_);
  const ModelSpec& m = ctx_.model;
  const std::int64_t T = ctx_.tokens, Ts = ctx_.tokens_sp, h = m.hidden_size;
  const bool sp = ctx_.plan.sequence_parallel && ctx_.tp > 1;
  const Bytes act = ctx_.act_bytes, in = linear_input_bytes(ctx_);
  const std::vector<ParamGroup>& groups = ops_.groups();

  MaybeTask q_direct;
  if (z.q_lora == 0) {
    q_direct = ops_.column_fwd("q", x, m.num_attention_heads * (z.nope + z.rope), save);
    ops_.record(params, "q", q_direct, true);
  }
  MaybeTask d = emit_fp8_weight_cast(emit_, "fp8_weight_cast",
                                     group_elements(groups, "q_down") + group_elements(groups, "kv_down"), x);
  // The input norm's output, as column_fwd casts it; the down projections run on the rank's own rows
  // (Megatron's "duplicated" mode), so a current-scaling amax stays the rank's.
  d = emit_fp8_norm_output_cast(emit_, Ts * h, d, AmaxScope::kRank);
  const std::int64_t down_rows = sp ? Ts : T;
  d = emit_.gemm("qkv_down", ops_.linear(down_rows, z.down, h), {d});
  if (save) emit_.save(d, ops_.column_saved());
  ops_.record(params, "q_down", d, true);
  ops_.record(params, "kv_down", d, true);
  if (sp) d = emit_.collective("qkv_down", Stream::kTp, GroupKind::kTp, CollectiveKind::kAllGather, T * z.down * act, {d});

  const Bytes norms = T * (z.q_lora + z.kv_lora) * act;
  MaybeTask n = emit_.elementwise("mla_down_norm", norms + T * z.rope * act, norms, {d});
  if (save) emit_.save(n, norms);
  ops_.record(params, "q_down_norm", n, true);
  ops_.record(params, "kv_down_norm", n, true);
  if (uses_fp8(ctx_)) n = emit_fp8_cast(emit_, "fp8_cast", T * (z.q_lora + z.kv_lora), n);
  n = emit_fp8_weight_cast(emit_, "fp8_weight_cast", group_elements(groups, "q_up") + group_elements(groups, "kv_up"), n);
  MaybeTask up = n;
  if (z.q_lora > 0) {
    up = emit_.gemm("q_up", ops_.linear(T, z.q_up, z.q_lora), {n});
    if (save && keep_up_inputs) emit_.save(up, T * z.q_lora * in);
    ops_.record(params, "q_up", up, true);
  }
  up = emit_.gemm("kv_up", ops_.linear(T, z.kv_up, z.kv_lora), {n, q_direct});
  if (save && keep_up_inputs) emit_.save(up, T * z.kv_lora * in);
  ops_.record(params, "kv_up", up, true);
  // Rotary on the rope parts of q and of the shared k_rope, and the concatenation into per-head q and k.
  const Bytes qk = T * z.heads * 2 * (z.nope + z.rope) * act;
  return emit_.elementwise("rope", T * (z.q_up + z.heads * z.nope + z.rope) * act, qk, {up});
}

MaybeTask MlaBlock::recompute_up(MaybeTask grad) {
  // Megatron-Core's MLASelfAttention with recompute_up_proj checkpoints the up projections and rotary on the
  // compressed tensors (with TE the q and kv norms are fused into the up projections, so on their pre-norm
  // inputs, which the norms keep anyway) and registers the recompute on the attention core's output gradient
  // (CheckpointWithoutOutput): the norms, the up projections (keeping their inputs for the weight gradients) and
  // rotary run again.
  const MlaSizes z = mla_sizes(ctx_);
  const std::int64_t T = ctx_.tokens;
  const Bytes act = ctx_.act_bytes, in = linear_input_bytes(ctx_);
  PhaseScope scope(emit_, Phase::kRecompute);
  const Bytes norms = T * (z.q_lora + z.kv_lora) * act;
  MaybeTask n = emit_.elementwise("mla_down_norm", norms + T * z.rope * act, norms, {grad});
  if (uses_fp8(ctx_)) n = emit_fp8_cast(emit_, "fp8_cast", T * (z.q_lora + z.kv_lora), n);
  MaybeTask up = n;
  if (z.q_lora > 0) {
    up = emit_.gemm("q_up", ops_.linear(T, z.q_up, z.q_lora), {n});
    emit_.save(up, T * z.q_lora * in);
  }
  up = emit_.gemm("kv_up", ops_.linear(T, z.kv_up, z.kv_lora), {n, up});
  emit_.save(up, T * z.kv_lora * in);
  const Bytes qk = T * z.heads * 2 * (z.nope + z.rope) * act;
  const MaybeTask rope = emit_.elementwise("rope", T * (z.q_up + z.heads * z.nope + z.rope) * act, qk, {up});
  emit_.save(rope, core_.inputs_saved());
  return rope;
}

MaybeTask MlaBlock::projections_bwd(MaybeTask g, std::vector<ParamUse>* params) {
  const MlaSizes z = mla_sizes(ctx_);
  const ModelSpec& m = ctx_.model;
  const std::int64_t T = ctx_.tokens, Ts = ctx_.tokens_sp, h = m.hidden_size;
  const bool sp = ctx_.plan.sequence_parallel && ctx_.tp > 1;
  const Bytes act = ctx_.act_bytes, in = linear_input_bytes(ctx_);

  const Bytes qk = T * z.heads * 2 * (z.nope + z.rope) * act;
  g = emit_.elementwise("rope", qk, T * (z.q_up + z.heads * z.nope + z.rope) * act, {g});
  if (uses_fp8(ctx_)) g = emit_fp8_cast(emit_, "fp8_cast", T * (z.q_up + z.kv_up), g);
  // Up projections: input gradients (partial sums over the TP ranks' heads) and weight gradients.
  MaybeTask dg = emit_.gemm("kv_up", ops_.linear(T, z.kv_lora, z.kv_up), {g});
  ops_.weight_grad("kv_up", ops_.linear(z.kv_up, z.kv_lora, T), T * z.kv_lora * in, "kv_up", params);
  if (z.q_lora > 0) {
    dg = emit_.gemm("q_up", ops_.linear(T, z.q_lora, z.q_up), {g});
    ops_.weight_grad("q_up", ops_.linear(z.q_up, z.q_lora, T), T * z.q_lora * in, "q_up", params);
  }
  const Bytes norms = T * (z.q_lora + z.kv_lora) * act;
  dg = emit_.elementwise("mla_down_norm", 2 * norms, norms + T * z.rope * act, {dg});
  emit_.release(dg, norms);
  ops_.record(params, "q_down_norm", dg, false);
  ops_.record(params, "kv_down_norm", dg, false);
  if (ctx_.tp > 1) {
    dg = emit_.collective("qkv_down", Stream::kTp, GroupKind::kTp,
                          sp ? CollectiveKind::kReduceScatter : CollectiveKind::kAllReduce, T * z.down * act, {dg});
  }
  const std::int64_t rows = sp ? Ts : T;
  if (uses_fp8(ctx_)) dg = emit_fp8_cast(emit_, "fp8_cast", rows * z.down, dg);
  dg = emit_.gemm("qkv_down", ops_.linear(rows, h, z.down), {dg});
  const MaybeTask down_w =
      ops_.weight_grad("qkv_down", ops_.linear(z.down, h, rows), ops_.column_saved(), "q_down", params);
  ops_.record(params, "kv_down", down_w, false);
  if (z.q_lora == 0) {
    MaybeTask w;
    const MaybeTask q = ops_.column_bwd("q", g, m.num_attention_heads * (z.nope + z.rope), &w);
    ops_.record(params, "q", w, false);
    dg = emit_.elementwise("mla_grad_sum", 2 * Ts * h * act, Ts * h * act, {dg, q});
  }
  return dg;
}

}  // namespace orrery
