#include "sim/plan/checkpoint_interval.h"

#include <cmath>
#include <fmt/format.h>

#include "models/error.h"

namespace orrery {

namespace {

void check(double checkpoint_s, double mtbf_s) {
  require(std::isfinite(checkpoint_s) && checkpoint_s >= 0, "checkpoint time", fmt::format("{} s", checkpoint_s),
          "must be finite and at least 0");
  require(std::isfinite(mtbf_s) && mtbf_s > 0, "mean time between failures", fmt::format("{} s", mtbf_s),
          "must be finite and above 0");
}

}  // namespace

double young_checkpoint_interval_s(double checkpoint_s, double mtbf_s) {
  check(checkpoint_s, mtbf_s);
  return std::sqrt(2.0 * checkpoint_s * mtbf_s);
}

double daly_checkpoint_interval_s(double checkpoint_s, double mtbf_s) {
  check(checkpoint_s, mtbf_s);
  if (checkpoint_s >= 2.0 * mtbf_s) return mtbf_s;
  const double x = checkpoint_s / (2.0 * mtbf_s);
  return std::sqrt(2.0 * checkpoint_s * mtbf_s) * (1.0 + std::sqrt(x) / 3.0 + x / 9.0) - checkpoint_s;
}

}  // namespace orrery
