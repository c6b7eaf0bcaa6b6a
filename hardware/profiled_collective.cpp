#include "hardware/profiled_collective.h"

#include <cmath>

namespace orrery {

int nodes_of(const GroupPlacement& p) { return (p.size + p.ranks_per_node - 1) / std::max(1, p.ranks_per_node); }

ProfiledCollectiveModel::ProfiledCollectiveModel(GpuProfile profile, std::unique_ptr<CollectiveCostModel> fallback)
    : profile_(std::move(profile)), fallback_(std::move(fallback)) {}

Seconds ProfiledCollectiveModel::time(const CollectiveOp& op) const {
  if (op.placement.size <= 1) return 0.0;
  const int nodes = nodes_of(op.placement);
  const CollectiveSample* lo = nullptr;
  const CollectiveSample* hi = nullptr;
  for (const CollectiveSample& s : profile_.collectives) {
    if (s.kind != op.kind || s.ranks != op.placement.size || s.nodes != nodes) continue;
    if (s.bytes <= op.bytes && (!lo || s.bytes > lo->bytes)) lo = &s;
    if (s.bytes >= op.bytes && (!hi || s.bytes < hi->bytes)) hi = &s;
  }
  if (!lo || !hi) {
    ++uncovered_;
    return fallback_->time(op);
  }
  if (lo->bytes == hi->bytes) return lo->seconds;
  const double w = std::log(static_cast<double>(op.bytes) / static_cast<double>(lo->bytes)) /
                   std::log(static_cast<double>(hi->bytes) / static_cast<double>(lo->bytes));
  return std::exp((1 - w) * std::log(lo->seconds) + w * std::log(hi->seconds));
}

}  // namespace orrery
