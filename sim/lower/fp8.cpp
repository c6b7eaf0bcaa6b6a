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

}  // namespace

TaskId emit_fp8_cast(Emitter& emit, const char* label, std::int64_t elements, TaskId after) {
  const Bytes bf16 = 2;
  return emit.elementwise(label, elements * bf16, elements * 2, {after});
}

TaskId emit_fp8_weight_cast(Emitter& emit, const char* label, std::int64_t elements, TaskId after) {
  const LoweringContext& ctx = emit.ctx();
  if (!uses_fp8(ctx) || emit.microbatch() != 0 || emit.phase() != Phase::kForward || elements == 0) return after;
  return emit.elementwise(label, elements * ctx.param_bytes, elements * 2, {after});
}

TaskId emit_fp8_amax_update(Emitter& emit, int layers, bool backward, TaskId after) {
  if (!uses_fp8(emit.ctx()) || layers == 0) return after;
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
