#pragma once
// "port_fair_share" (sim/engine/resource_model.h): transfers that leave an instance's NVLink domain share its
// network port.

#include <array>
#include <vector>

#include "sim/engine/resource_model.h"

namespace orrery {

/// Each direction of the port is split evenly among the actions using it (max-min fair share of one link, as
/// InfiniBand's and RoCE's per-queue-pair arbitration gives equal flows): an action runs at 1 / n of its own speed
/// while n actions, itself included, use the busiest direction it uses. Role bits: 1 send, 2 receive (a collective
/// does both). Its durations are those of a transfer that has the port to itself.
class PortFairShare final : public ResourceModel {
 public:
  PortFairShare(std::size_t instances, int slot);
  std::uint8_t paced_roles() const override { return kSend | kReceive; }
  bool eager() const override { return true; }
  void started(Pacing& pacing, std::int32_t instance, std::uint8_t roles, std::int32_t action, Nanoseconds now) override;
  void ended(Pacing& pacing, std::int32_t instance, std::uint8_t roles, std::int32_t action, Nanoseconds now) override;

  static constexpr std::uint8_t kSend = 1, kReceive = 2;

 private:
  struct User {
    std::int32_t action;
    std::uint8_t roles;
    int share;  // the factor last set
  };
  int slot_;
  std::vector<std::array<int, 2>> users_;      // per instance: actions sending, receiving
  std::vector<std::vector<User>> running_;     // per instance, in start order

  void reshare(Pacing& pacing, std::size_t instance, Nanoseconds now);
};

}  // namespace orrery
