#pragma once
// "sm_contention" (sim/engine/resource_model.h): compute beside communication kernels on one GPU.

#include <vector>

#include "sim/engine/resource_model.h"

namespace orrery {

/// A compute action runs at 1 / (1 + slowdown) of its speed while at least one contender (an NCCL kernel, which
/// occupies SMs and memory bandwidth) runs on its instance. The slowdown is the cost model's calibrated
/// compute.overlap_slowdown (hardware/cost_params.h). Role bits: 1 compute, 2 contender.
class SmContention final : public ResourceModel {
 public:
  SmContention(double slowdown, std::size_t instances, int slot);
  std::uint8_t paced_roles() const override { return kCompute; }
  void started(Pacing& pacing, std::int32_t instance, std::uint8_t roles, std::int32_t action, Nanoseconds now) override;
  void ended(Pacing& pacing, std::int32_t instance, std::uint8_t roles, std::int32_t action, Nanoseconds now) override;

  static constexpr std::uint8_t kCompute = 1, kContender = 2;

 private:
  double factor_;  // 1 + slowdown
  int slot_;
  std::vector<int> contenders_;  // per instance: contenders running
  // The compute actions running on each instance: usually one (one GPU), kept inline; more (streams that do not
  // share a lane) go to `more_`.
  std::vector<std::int32_t> first_;                // per instance, -1: none
  std::vector<std::vector<std::int32_t>> more_;    // per instance

  void set_all(Pacing& pacing, std::size_t instance, double factor, Nanoseconds now);
};

}  // namespace orrery
