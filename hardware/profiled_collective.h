#pragma once
// A collective cost model that uses measured collective times (nccl-tests logs imported into a GPU profile with
// `orrery calibrate import-nccl-tests`) where they cover the call, and the NCCL model elsewhere. A call is covered
// when the profile has samples of the same collective on a group of the same size over the same number of nodes,
// and its size lies within their range: log(time) is then interpolated linearly in log(bytes) between the two
// nearest sizes (a measured size is its measurement).

#include <memory>
#include <string>

#include "hardware/collective_cost.h"
#include "hardware/gpu_profile.h"

namespace orrery {

class ProfiledCollectiveModel final : public CollectiveCostModel {
 public:
  ProfiledCollectiveModel(GpuProfile profile, std::unique_ptr<CollectiveCostModel> fallback);
  std::string name() const override { return "profile"; }
  Seconds time(const CollectiveOp& op) const override;
  /// Calls priced by the fallback model because the profile did not cover them.
  std::int64_t uncovered() const { return uncovered_; }

 private:
  GpuProfile profile_;
  std::unique_ptr<CollectiveCostModel> fallback_;
  mutable std::int64_t uncovered_ = 0;
};

/// Nodes a group spans: its size over the members per node.
int nodes_of(const GroupPlacement& p);

}  // namespace orrery
