#include "sim/lower/save_policy.h"

namespace orrery {

SavePolicy save_policy(const TrainingSpec& training) { return save_policy(training, training.recompute); }

SavePolicy save_policy(const TrainingSpec& training, Recompute policy) {
  const TrainingSpec::RecomputeModules& m = training.recompute_modules;
  switch (policy) {
    case Recompute::kNone: return {};
    case Recompute::kSelective:
      return {true, true, !m.core_attn, !m.layernorm, !m.moe_act, !m.mlp, !m.shared_experts, !m.mla_up_proj, !m.moe};
    case Recompute::kFull: return {true, false, false, false, false};
  }
  return {};
}

}  // namespace orrery
