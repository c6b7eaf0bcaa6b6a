#include "sim/engine/port_fair_share.h"

#include <algorithm>

namespace orrery {

PortFairShare::PortFairShare(std::size_t instances, int slot) : slot_(slot), users_(instances, {0, 0}), running_(instances) {}

void PortFairShare::started(Pacing& pacing, std::int32_t instance, std::uint8_t roles, std::int32_t action,
                            Nanoseconds now) {
  const auto i = static_cast<std::size_t>(instance);
  if (roles & kSend) ++users_[i][0];
  if (roles & kReceive) ++users_[i][1];
  running_[i].push_back({action, roles, 1});
  reshare(pacing, i, now);
}

void PortFairShare::ended(Pacing& pacing, std::int32_t instance, std::uint8_t roles, std::int32_t action,
                          Nanoseconds now) {
  const auto i = static_cast<std::size_t>(instance);
  if (roles & kSend) --users_[i][0];
  if (roles & kReceive) --users_[i][1];
  std::vector<User>& running = running_[i];
  running.erase(std::find_if(running.begin(), running.end(), [&](const User& u) { return u.action == action; }));
  reshare(pacing, i, now);
}

// Every user whose busiest direction changed gets its new share, in start order.
void PortFairShare::reshare(Pacing& pacing, std::size_t instance, Nanoseconds now) {
  const std::array<int, 2>& users = users_[instance];
  for (User& u : running_[instance]) {
    const int share = std::max({1, (u.roles & kSend) ? users[0] : 0, (u.roles & kReceive) ? users[1] : 0});
    if (share == u.share) continue;
    u.share = share;
    pacing.set_factor(u.action, slot_, static_cast<double>(share), now);
  }
}

}  // namespace orrery
