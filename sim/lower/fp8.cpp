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

// Bytes a quantization writes per element: the FP8 copy and its transpose, plus the block recipes' scales (an
// FP32 per 128 elements, or an E8M0 byte per 32, for each copy: 1/16 byte either way).
Bytes quantized_bytes(Fp8Recipe recipe, std::int64_t elements) {
  const Bytes fp8_copies = 2 * elements;
  const bool block = recipe == Fp8Recipe::kBlockwise || recipe == Fp8Recipe::kMxfp8;
  return fp8_copies + (block ? elements / 16 : 0);
}

}  // namespace

TaskId emit_fp8_cast(Emitter& emit, const char* label, std::int64_t elements, TaskId after) {
  const Bytes bf16 = 2;
  const Fp8Recipe recipe = emit.ctx().fp8_recipe;
  if (recipe == Fp8Recipe::kTensorwise) {
    // nvte_compute_amax reads the tensor before the cast can scale it.
    after = emit.elementwise("fp8_cast_amax", elements * bf16, 0, {after});
  }
  return emit.elementwise(label, elements * bf16, quantized_bytes(recipe, elements), {after});
}

TaskId emit_fp8_norm_output_cast(Emitter& emit, std::int64_t elements, TaskId after) {
  const Fp8Recipe recipe = emit.ctx().fp8_recipe;
  if (!uses_fp8(emit.ctx()) || recipe == Fp8Recipe::kDelayed || recipe == Fp8Recipe::kMxfp8) return after;
  // The norm wrote its output in BF16 (one byte more per element than FP8); the cast reads it back.
  const Bytes bf16 = 2, wider_norm_output = elements;
  return emit.elementwise("fp8_norm_cast", elements * bf16, quantized_bytes(recipe, elements) + wider_norm_output,
                          {after});
}

TaskId emit_fp8_weight_cast(Emitter& emit, const char* label, std::int64_t elements, TaskId after) {
  const LoweringContext& ctx = emit.ctx();
  if (!uses_fp8(ctx) || emit.microbatch() != 0 || emit.phase() != Phase::kForward || elements == 0) return after;
  const Bytes amax_pass = ctx.fp8_recipe == Fp8Recipe::kTensorwise ? elements * ctx.param_bytes : 0;
  return emit.elementwise(label, elements * ctx.param_bytes + amax_pass, quantized_bytes(ctx.fp8_recipe, elements),
                          {after});
}

TaskId emit_fp8_amax_update(Emitter& emit, int layers, bool backward, TaskId after) {
  if (!uses_fp8(emit.ctx()) || emit.ctx().fp8_recipe != Fp8Recipe::kDelayed || layers == 0) return after;
  const Bytes slots = static_cast<Bytes>(layers) * kFp8LinearsPerLayer *
                      (backward ? kBackwardAmaxPerGemm : kForwardAmaxPerGemm);
  const Bytes fp32 = 4;
  const TaskId reduce = emit.collective("fp8_amax", Stream::kAmax, GroupKind::kAmax, CollectiveKind::kAllReduce,
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
