#include "sim/engine/sm_contention.h"

#include <algorithm>

namespace orrery {

SmContention::SmContention(double slowdown, std::size_t instances, int slot)
    : factor_(1.0 + slowdown), slot_(slot), contenders_(instances, 0), computing_(instances) {}

void SmContention::started(Pacing& pacing, std::int32_t instance, std::uint8_t roles, std::int32_t action,
                           Nanoseconds now) {
  const auto i = static_cast<std::size_t>(instance);
  if (roles & kCompute) {
    computing_[i].push_back(action);
    if (contenders_[i] > 0) pacing.set_factor(action, slot_, factor_, now);
  }
  if ((roles & kContender) && ++contenders_[i] == 1) {
    for (std::int32_t a : computing_[i]) pacing.set_factor(a, slot_, factor_, now);
  }
}

void SmContention::ended(Pacing& pacing, std::int32_t instance, std::uint8_t roles, std::int32_t action,
                         Nanoseconds now) {
  const auto i = static_cast<std::size_t>(instance);
  if (roles & kCompute) {
    std::vector<std::int32_t>& running = computing_[i];
    running.erase(std::find(running.begin(), running.end(), action));
  }
  if ((roles & kContender) && --contenders_[i] == 0) {
    for (std::int32_t a : computing_[i]) pacing.set_factor(a, slot_, 1.0, now);
  }
}

}  // namespace orrery
