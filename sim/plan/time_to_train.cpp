#include "sim/plan/time_to_train.h"

#include <cmath>
#include <fmt/format.h>

#include "models/error.h"

namespace orrery {

namespace {

// models/error.h's require, for a number.
void require_number(bool ok, const char* what, double value, const char* rule) {
  require(ok, what, fmt::format("{}", value), rule);
}

}  // namespace

double time_to_train_s(double tokens, double tokens_per_s) {
  require_number(std::isfinite(tokens) && tokens >= 0, "tokens", tokens, "must be finite and at least 0");
  require_number(std::isfinite(tokens_per_s) && tokens_per_s > 0, "tokens_per_s", tokens_per_s,
                 "must be finite and above 0");
  return tokens / tokens_per_s;
}

double approximate_flops_per_token(double parameters, bool full_recompute) {
  require_number(std::isfinite(parameters) && parameters > 0, "parameters", parameters, "must be finite and above 0");
  return (full_recompute ? 8.0 : 6.0) * parameters;
}

double tokens_per_s_at(double parameters, bool full_recompute, double gpus, double flops_per_gpu) {
  require_number(std::isfinite(gpus) && gpus > 0, "gpus", gpus, "must be finite and above 0");
  require_number(std::isfinite(flops_per_gpu) && flops_per_gpu > 0, "flops_per_gpu", flops_per_gpu,
                 "must be finite and above 0");
  return gpus * flops_per_gpu / approximate_flops_per_token(parameters, full_recompute);
}

double gpu_hours(double gpus, double seconds) {
  require_number(std::isfinite(gpus) && gpus >= 0, "gpus", gpus, "must be finite and at least 0");
  require_number(std::isfinite(seconds) && seconds >= 0, "seconds", seconds, "must be finite and at least 0");
  return gpus * seconds / 3600.0;
}

}  // namespace orrery
