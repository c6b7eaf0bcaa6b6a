#include "hardware/collective_cost.h"

#include <algorithm>
#include <cmath>

namespace orrery {

const char* to_string(CollectiveKind kind) {
  switch (kind) {
    case CollectiveKind::kAllReduce: return "all_reduce";
    case CollectiveKind::kAllGather: return "all_gather";
    case CollectiveKind::kReduceScatter: return "reduce_scatter";
    case CollectiveKind::kAllToAll: return "all_to_all";
    case CollectiveKind::kSendRecv: return "send_recv";
  }
  return "?";
}

double bus_bandwidth_factor(CollectiveKind kind, int n) {
  const double nn = static_cast<double>(n);
  switch (kind) {
    case CollectiveKind::kAllReduce: return 2.0 * (nn - 1.0) / nn;
    case CollectiveKind::kAllGather:
    case CollectiveKind::kReduceScatter:
    case CollectiveKind::kAllToAll: return (nn - 1.0) / nn;
    case CollectiveKind::kSendRecv: return 1.0;
  }
  return 1.0;
}

RingCollectiveModel::RingCollectiveModel(ClusterSpec cluster, NetworkParams params)
    : cluster_(std::move(cluster)), params_(params) {}

BytesPerSecond RingCollectiveModel::bus_bandwidth(const CollectiveOp& op) const {
  const GroupPlacement& p = op.placement;
  const BytesPerSecond nvlink = cluster_.gpu.nvlink_bandwidth * params_.nvlink_efficiency;
  if (p.tier == Tier::kNvlink) return nvlink;
  const BytesPerSecond nic = cluster_.nic_bandwidth_per_gpu() * params_.nic_efficiency / p.oversubscription;
  if (op.kind == CollectiveKind::kSendRecv) return nic;
  if (op.kind == CollectiveKind::kAllToAll) {
    // Only the (n - members on this domain) / (n - 1) part of each rank's traffic leaves the domain.
    const double n = p.size;
    const double off_domain = (n - p.ranks_per_domain) / (n - 1.0);
    return std::min(nvlink, nic / off_domain);
  }
  return std::min(nvlink, nic * static_cast<double>(p.ranks_per_node));
}

Seconds RingCollectiveModel::latency(const CollectiveOp& op) const {
  const GroupPlacement& p = op.placement;
  const int n = p.size;
  int steps = (op.kind == CollectiveKind::kAllReduce) ? 2 * (n - 1) : (op.kind == CollectiveKind::kSendRecv ? 1 : n - 1);
  int network_steps = 0;
  if (p.tier != Tier::kNvlink) {
    network_steps = op.kind == CollectiveKind::kSendRecv ? 1 : std::min(steps, steps * (p.domains - 1) / std::max(1, n - 1));
  }
  const Seconds network_hop = cluster_.nic_latency + p.network_latency;
  return params_.base_latency + (steps - network_steps) * cluster_.nvlink_latency + network_steps * network_hop;
}

Seconds RingCollectiveModel::tree_latency(const CollectiveOp& op) const {
  const GroupPlacement& p = op.placement;
  const double levels = std::ceil(std::log2(static_cast<double>(p.domains)));
  const Seconds network_hop = cluster_.nic_latency + p.network_latency;
  return params_.base_latency + 2.0 * ((p.ranks_per_domain - 1) * cluster_.nvlink_latency + levels * network_hop);
}

Seconds RingCollectiveModel::time(const CollectiveOp& op) const {
  if (op.placement.size <= 1 || op.bytes <= 0) return 0.0;
  const double volume = static_cast<double>(op.bytes) * bus_bandwidth_factor(op.kind, op.placement.size);
  const Seconds transfer = volume / bus_bandwidth(op);
  Seconds start = latency(op);
  if (op.kind == CollectiveKind::kAllReduce && op.placement.tier != Tier::kNvlink) start = std::min(start, tree_latency(op));
  return start + transfer;
}

}  // namespace orrery
