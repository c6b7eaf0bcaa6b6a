#include "sim/lower/fp8.h"

#include <string>

#include "sim/lower/param_groups.h"

namespace orrery {

namespace {

constexpr int kFp8LinearsPerLayer = 4;       // QKV, attention projection, MLP up/gate, MLP down
constexpr int kForwardAmaxPerGemm = 3;       // TE's forward meta: input, weight, output
constexpr int kBackwardAmaxPerGemm = 2;      // backward meta: output gradient, input gradient
// NeMo's default fp8_amax_history_len (nemo/collections/llm/recipes/precision/mixed_precision.py: 1024); each
// update rolls the history and recomputes scale and its inverse.
constexpr Bytes kAmaxHistory = 1024;

bool is_fp8_linear(const char* name) {
  const std::string n = name;
  return n == "qkv" || n == "attention_proj" || n == "mlp_up" || n == "mlp_down" || n == "mtp_eh_proj";
}

// Bytes a quantization writes for `elements` values: `copies` FP8 copies (2: row-wise and its transpose; 1: row-wise
// only), plus the block recipes' scales for each copy: an FP32 per 128 activations or gradients or per 128 x 128
// weights (blockwise), an E8M0 byte per 32 values (mxfp8). Integer division: a scale per partial block is below the
// model's resolution.
Bytes quantized_bytes(Fp8Recipe recipe, std::int64_t elements, bool weights, Bytes copies = 2) {
  const Bytes fp8_copies = copies * elements, fp32 = 4;
  switch (recipe) {
    case Fp8Recipe::kDelayed:
    case Fp8Recipe::kTensorwise: return fp8_copies;
    case Fp8Recipe::kBlockwise: return fp8_copies + copies * fp32 * elements / (weights ? 128 * 128 : 128);
    case Fp8Recipe::kMxfp8: return fp8_copies + copies * elements / 32;
  }
  return fp8_copies;
}

// Current scaling of a sequence-parallel shard: the one-FP32 amax all-reduced (MAX) over the TP group after
// `after`, blocking the cast. Returns `after` where nothing is reduced.
MaybeTask tp_amax_reduce(Emitter& emit, AmaxScope scope, MaybeTask after) {
  const LoweringContext& ctx = emit.ctx();
  if (scope != AmaxScope::kTpGroup || ctx.fp8_recipe != Fp8Recipe::kTensorwise || !ctx.plan.sequence_parallel ||
      ctx.tp == 1) {
    return after;
  }
  const Bytes fp32 = 4;
  const MaybeTask reduce =
      emit.collective("fp8_amax_tp", Stream::kTp, GroupKind::kTp, CollectiveKind::kAllReduce, fp32, {after});
  return reduce.emitted() ? reduce : after;
}

// Transformer Engine's quantization of `elements` values of `source_bytes` each into `copies` FP8 copies, after
// `after`: with current scaling an amax kernel (`amax_label`) reads the tensor first (nvte_compute_amax), its
// result reduced over the TP group for AmaxScope::kTpGroup, then the cast reads it again.
MaybeTask quantize(Emitter& emit, const char* label, const char* amax_label, std::int64_t elements, Bytes source_bytes,
                   bool weights, MaybeTask after, AmaxScope scope = AmaxScope::kRank, Bytes copies = 2) {
  const Fp8Recipe recipe = emit.ctx().fp8_recipe;
  if (recipe == Fp8Recipe::kTensorwise) {
    after = emit.elementwise(amax_label, elements * source_bytes, 0, {after});
    after = tp_amax_reduce(emit, scope, after);
  }
  return emit.elementwise(label, elements * source_bytes, quantized_bytes(recipe, elements, weights, copies), {after});
}

}  // namespace

bool fp8_gathers_quantized_grads(const LoweringContext& ctx) {
  return uses_fp8(ctx) && (ctx.fp8_recipe == Fp8Recipe::kDelayed || ctx.fp8_recipe == Fp8Recipe::kTensorwise);
}

MaybeTask emit_fp8_cast(Emitter& emit, const char* label, std::int64_t elements, MaybeTask after, AmaxScope scope) {
  return quantize(emit, label, "fp8_cast_amax", elements, emit.ctx().act_bytes, false, after, scope);
}

MaybeTask emit_fp8_shard_cast(Emitter& emit, std::int64_t elements, MaybeTask after) {
  return quantize(emit, "fp8_cast", "fp8_cast_amax", elements, emit.ctx().act_bytes, false, after,
                  AmaxScope::kTpGroup, 1);
}

MaybeTask emit_fp8_transpose(Emitter& emit, std::int64_t elements, MaybeTask after) {
  const Bytes fp8 = 1;
  return emit.elementwise("fp8_transpose", elements * fp8, elements * fp8, {after});
}

MaybeTask emit_fp8_norm_output_cast(Emitter& emit, std::int64_t elements, MaybeTask after, AmaxScope scope) {
  const Fp8Recipe recipe = emit.ctx().fp8_recipe;
  if (!uses_fp8(emit.ctx()) || recipe == Fp8Recipe::kDelayed || recipe == Fp8Recipe::kMxfp8) return after;
  // The norm (norm_fwd, which always writes the activation dtype) computed the amax with current scaling; the
  // cast reads its BF16 output back.
  after = tp_amax_reduce(emit, scope, after);
  const Bytes read = elements * emit.ctx().act_bytes;
  return emit.elementwise("fp8_norm_cast", read, quantized_bytes(recipe, elements, false), {after});
}

MaybeTask emit_fp8_weight_cast(Emitter& emit, const char* label, std::int64_t elements, MaybeTask after) {
  const LoweringContext& ctx = emit.ctx();
  if (!uses_fp8(ctx) || emit.microbatch() != 0 || emit.phase() != Phase::kForward || elements == 0) return after;
  return quantize(emit, label, "fp8_weight_amax", elements, ctx.param_bytes, true, after);
}

MaybeTask emit_fp8_amax_update(Emitter& emit, int layers, bool backward, MaybeTask after) {
  if (!uses_fp8(emit.ctx()) || emit.ctx().fp8_recipe != Fp8Recipe::kDelayed || layers == 0) return after;
  const Bytes slots = static_cast<Bytes>(layers) * kFp8LinearsPerLayer *
                      (backward ? kBackwardAmaxPerGemm : kForwardAmaxPerGemm);
  const Bytes fp32 = 4;
  const MaybeTask reduce = emit.collective("fp8_amax", Stream::kAmax, GroupKind::kAmax, CollectiveKind::kAllReduce,
                                           slots * fp32, {after});
  return emit.elementwise("fp8_scale_update", slots * kAmaxHistory * fp32, slots * (kAmaxHistory + 2) * fp32,
                          {after, reduce});
}

Bytes fp8_weight_cache_bytes(const LoweringContext& ctx, int stage) {
  if (!uses_fp8(ctx)) return 0;
  Bytes elements = 0;
  for (const ParamGroup& g : stage_param_groups(ctx, stage)) {
    if (g.layer >= 0 && is_fp8_linear(g.name)) elements += g.elements;
  }
  return elements * 2;
}

}  // namespace orrery
