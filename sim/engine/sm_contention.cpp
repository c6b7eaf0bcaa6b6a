#include "sim/engine/sm_contention.h"

#include <algorithm>

namespace orrery {

SmContention::SmContention(double slowdown, std::size_t instances, int slot)
    : factor_(1.0 + slowdown), slot_(slot), contenders_(instances, 0), first_(instances, -1), more_(instances) {}

void SmContention::set_all(Pacing& pacing, std::size_t i, double factor, Nanoseconds now) {
  if (first_[i] >= 0) pacing.set_factor(first_[i], slot_, factor, now);
  for (std::int32_t a : more_[i]) pacing.set_factor(a, slot_, factor, now);
}

void SmContention::started(Pacing& pacing, std::int32_t instance, std::uint8_t roles, std::int32_t action,
                           Nanoseconds now) {
  const auto i = static_cast<std::size_t>(instance);
  if (roles & kCompute) {
    if (first_[i] < 0 && more_[i].empty()) {
      first_[i] = action;
    } else {
      more_[i].push_back(action);
    }
    if (contenders_[i] > 0) pacing.set_factor(action, slot_, factor_, now);
  }
  if ((roles & kContender) && ++contenders_[i] == 1) set_all(pacing, i, factor_, now);
}

void SmContention::ended(Pacing& pacing, std::int32_t instance, std::uint8_t roles, std::int32_t action,
                         Nanoseconds now) {
  const auto i = static_cast<std::size_t>(instance);
  if (roles & kCompute) {
    // Keep start order (the order factors are set in): the first leaves its place to the next.
    std::vector<std::int32_t>& more = more_[i];
    if (first_[i] == action) {
      first_[i] = more.empty() ? -1 : more.front();
      if (!more.empty()) more.erase(more.begin());
    } else {
      more.erase(std::find(more.begin(), more.end(), action));
    }
  }
  if ((roles & kContender) && --contenders_[i] == 0) set_all(pacing, i, 1.0, now);
}

}  // namespace orrery
