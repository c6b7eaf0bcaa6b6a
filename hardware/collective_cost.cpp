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
    case CollectiveKind::kExpertDispatch: return "expert_dispatch";
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
    case CollectiveKind::kSendRecv:
    case CollectiveKind::kExpertDispatch: return 1.0;
  }
  return 1.0;
}

namespace {

// NCCL src/graph/tuning.cc (2.18-2.20), microseconds, indexed by protocol {LL, LL128, Simple}.
constexpr double kRingBase[3] = {6.6, 14.0, 8.4};
constexpr double kRingNvlinkHop[3] = {0.6, 1.9, 3.4};
constexpr double kRingNetworkHop[3] = {2.7, 4.0, 14.0};
constexpr double kTreeBase[3] = {6.8, 14.0, 0.0};
constexpr double kTreeNvlinkHop[3] = {0.6, 1.25, 4.0};
constexpr double kTreeNetworkHop[3] = {5.0, 8.5, 14.0};
constexpr double kNvlsHop = 25.0;  // NVLS, Simple only; one hop into and one out of the switch
constexpr const char* kProtocols[3] = {"ll", "ll128", "simple"};

// Share of the link bandwidth each protocol carries as payload (NCCL tuning.cc model refinements).
double protocol_share(int protocol, CollectiveKind kind, bool multi_domain) {
  if (protocol == 0) return (multi_domain || kind == CollectiveKind::kAllReduce) ? 0.25 : 1.0 / 3.0;
  if (protocol == 1) return 0.92;
  return 1.0;
}

}  // namespace

NcclCollectiveModel::NcclCollectiveModel(ClusterSpec cluster, NetworkParams params)
    : cluster_(std::move(cluster)), params_(params) {}

BytesPerSecond NcclCollectiveModel::ring_bandwidth(const CollectiveOp& op) const {
  const GroupPlacement& p = op.placement;
  const BytesPerSecond nvlink = cluster_.gpu.nvlink_bandwidth * params_.nvlink_efficiency;
  if (p.tier == Tier::kNvlink) return nvlink;
  const BytesPerSecond nic = cluster_.nic_bandwidth_per_gpu() * params_.nic_efficiency / p.oversubscription;
  if (op.kind == CollectiveKind::kSendRecv) return nic;
  if (op.kind == CollectiveKind::kAllToAll) {
    // Only the (n - members on its domain) / (n - 1) part of a rank's traffic leaves the domain; the ranks on the
    // domain holding the fewest members send the most across, and the exchange ends when they are done.
    const double n = p.size;
    const double off_domain = (n - p.fewest_per_domain) / (n - 1.0);
    return std::min(nvlink, nic / off_domain);
  }
  return std::min(nvlink, nic * static_cast<double>(p.ranks_per_node));
}

CollectivePlan NcclCollectiveModel::expert_dispatch(const CollectiveOp& op) const {
  const GroupPlacement& p = op.placement;
  const BytesPerSecond nvlink = cluster_.gpu.nvlink_bandwidth * params_.expert_dispatch_nvlink_efficiency;
  const BytesPerSecond nic =
      cluster_.nic_bandwidth_per_gpu() * params_.expert_dispatch_nic_efficiency / p.oversubscription;
  const double network = static_cast<double>(op.network_bytes);
  const bool crosses = network > 0 && p.tier != Tier::kNvlink;
  const Seconds transfer = std::max(static_cast<double>(op.bytes) / nvlink, crosses ? network / nic : 0.0);
  // One Simple-protocol step, and one network hop when anything crosses domains.
  const Seconds latency = pipeline_fill(op.bytes) + from_us(kRingBase[2] + (crosses ? kRingNetworkHop[2] : 0.0)) +
                          (crosses ? p.network_latency + params_.network_call_latency : 0.0);
  CollectivePlan plan{"two_level", kProtocols[2], latency + transfer, latency, 0};
  plan.bus_bandwidth = (static_cast<double>(op.bytes) + network) / plan.time;
  return plan;
}

Seconds NcclCollectiveModel::ring_latency(const CollectiveOp& op, int protocol) const {
  const GroupPlacement& p = op.placement;
  const int n = p.size;
  const int domains = p.domains;
  int steps = 1, network_steps = p.tier == Tier::kNvlink ? 0 : 1;  // send/recv, all-to-all: one exchange
  if (op.kind == CollectiveKind::kAllReduce) {
    steps = 2 * (n - 1);
    network_steps = 2 * (domains - 1);
  } else if (op.kind == CollectiveKind::kAllGather || op.kind == CollectiveKind::kReduceScatter) {
    steps = n - 1;
    network_steps = domains - 1;
  }
  const double us = kRingBase[protocol] + (steps - network_steps) * kRingNvlinkHop[protocol] +
                    network_steps * kRingNetworkHop[protocol];
  return from_us(us) + network_steps * p.network_latency;
}

Seconds NcclCollectiveModel::tree_latency(const GroupPlacement& p, int protocol) const {
  const double levels = std::ceil(std::log2(static_cast<double>(p.domains)));
  const double us =
      kTreeBase[protocol] + 2.0 * ((p.ranks_per_domain - 1) * kTreeNvlinkHop[protocol] + levels * kTreeNetworkHop[protocol]);
  return from_us(us) + 2.0 * levels * p.network_latency;
}

Seconds NcclCollectiveModel::pipeline_fill(Bytes bytes) const {
  if (bytes <= 0) return 0.0;
  const double s = static_cast<double>(bytes);
  return params_.pipeline_fill * s / (s + static_cast<double>(params_.pipeline_fill_half));
}

CollectivePlan NcclCollectiveModel::plan(const CollectiveOp& op) const {
  CollectivePlan best;
  const GroupPlacement& p = op.placement;
  if (op.kind == CollectiveKind::kExpertDispatch) return p.size <= 1 ? best : expert_dispatch(op);
  if (p.size <= 1 || op.bytes <= 0) return best;
  const double bytes = static_cast<double>(op.bytes);
  const double volume = bytes * bus_bandwidth_factor(op.kind, p.size);
  best.time = INFINITY;
  const bool multi = p.tier != Tier::kNvlink;
  const Seconds fill = pipeline_fill(op.bytes) + (multi ? params_.network_call_latency : 0.0);
  auto consider = [&](const char* algorithm, int protocol, Seconds steps, Seconds transfer) {
    const Seconds latency = steps + fill;
    if (latency + transfer < best.time) {
      best = {algorithm, kProtocols[protocol], latency + transfer, latency, 0};
    }
  };
  const BytesPerSecond ring = ring_bandwidth(op);
  for (int proto = 0; proto < 3; ++proto) {
    const double share = protocol_share(proto, op.kind, multi);
    consider(op.kind == CollectiveKind::kSendRecv ? "p2p" : "ring", proto, ring_latency(op, proto), volume / (ring * share));
  }
  const BytesPerSecond nvlink = cluster_.gpu.nvlink_bandwidth;
  const bool nvls = cluster_.nvls && op.kind == CollectiveKind::kAllReduce && p.ranks_per_domain > 2;
  if (nvls && !multi) {
    // In-switch reduction: each byte goes into the switch once and comes back reduced once.
    consider("nvls", 2, from_us(2 * kNvlsHop), bytes / (nvlink * params_.nvls_efficiency));
  }
  if (op.kind == CollectiveKind::kAllReduce && multi) {
    const double crossings = p.domains == 2 ? 1.0 : 2.0;
    const BytesPerSecond nic = cluster_.nic_bandwidth_per_gpu() * params_.nic_efficiency / p.oversubscription;
    const Seconds inter = crossings * bytes / (nic * p.ranks_per_node);
    const BytesPerSecond intra_bw = nvlink * (nvls ? params_.nvls_efficiency : params_.nvlink_efficiency);
    const Seconds intra = bytes / intra_bw;
    for (int proto = 0; proto < 3; ++proto) {
      const double share = protocol_share(proto, op.kind, true);
      const Seconds extra = nvls ? from_us(2 * kNvlsHop) : 0.0;
      consider(nvls ? "nvls_tree" : "tree", proto, tree_latency(p, proto) + extra, std::max(inter, intra) / share);
    }
  }
  best.bus_bandwidth = volume / best.time;
  return best;
}

}  // namespace orrery
