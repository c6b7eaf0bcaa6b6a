#include "hardware/collective_cost.h"

#include <algorithm>
#include <cmath>

#include "hardware/nccl_tuning.h"

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

using nccl::kLL;
using nccl::kLL128;
using nccl::kSimple;

// All-to-all and send/recv run on NCCL's p2p path, not its collective tuner: kept on the earlier model's shares
// of the link bandwidth (LL 1/4 across domains or 1/3, LL128 0.92) and the ring's per-step latencies.
double p2p_share(int protocol, bool multi_domain) {
  if (protocol == kLL) return multi_domain ? 0.25 : 1.0 / 3.0;
  return protocol == kLL128 ? 0.92 : 1.0;
}

}  // namespace

NcclCollectiveModel::NcclCollectiveModel(ClusterSpec cluster, NetworkParams params)
    : cluster_(std::move(cluster)), params_(params) {}

BytesPerSecond NcclCollectiveModel::network_rate(const GroupPlacement& p, double rdma_efficiency) const {
  const BytesPerSecond line = p.network_bandwidth_per_gpu > 0 ? p.network_bandwidth_per_gpu : cluster_.nic_bandwidth_per_gpu();
  return line * (p.tcp ? params_.tcp_efficiency : rdma_efficiency) / p.oversubscription;
}

BytesPerSecond NcclCollectiveModel::ring_bandwidth(const CollectiveOp& op) const {
  const GroupPlacement& p = op.placement;
  const BytesPerSecond nvlink = cluster_.gpu.intra_node_bandwidth() * params_.nvlink_efficiency;
  if (p.tier == Tier::kNvlink) return nvlink;
  const BytesPerSecond nic = network_rate(p, params_.nic_efficiency);
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
  const BytesPerSecond nvlink = cluster_.gpu.intra_node_bandwidth() * params_.expert_dispatch_nvlink_efficiency;
  const BytesPerSecond nic = network_rate(p, params_.expert_dispatch_nic_efficiency);
  const double network = static_cast<double>(op.network_bytes);
  const bool crosses = network > 0 && p.tier != Tier::kNvlink;
  const Seconds transfer = std::max(static_cast<double>(op.bytes) / nvlink, crosses ? network / nic : 0.0);
  // One Simple-protocol step, and one network hop when anything crosses domains.
  const Seconds latency = pipeline_fill(op.bytes) + from_us(nccl::kRingBaseUs[kSimple] + (crosses ? nccl::kRingNetUs[kSimple] : 0.0)) +
                          (crosses ? p.network_latency + params_.network_call_latency : 0.0);
  CollectivePlan plan{"two_level", nccl::protocol_name(kSimple), latency + transfer, latency, 0};
  plan.bus_bandwidth = (static_cast<double>(op.bytes) + network) / plan.time;
  return plan;
}

// tuning.cc @ v2.23.4-1 (ncclTopoTuneModel, ring): base + per-step hops, nsteps = 2 (n - 1) for all-reduce, n - 1
// for all-gather and reduce-scatter, of which 2 (nodes - 1) or nodes - 1 cross the network; across nodes an
// NVLink step costs at least the network post overhead, a network step the network hop (the tree's with one rank
// per node) plus the fabric's latency, twice for Simple (its flush).
Seconds NcclCollectiveModel::ring_latency(const CollectiveOp& op, int protocol) const {
  const GroupPlacement& p = op.placement;
  const int n = p.size;
  const int domains = p.domains;
  const bool multi = p.tier != Tier::kNvlink;
  int steps = 1, network_steps = multi ? 1 : 0;  // send/recv, all-to-all: one exchange
  if (op.kind == CollectiveKind::kAllReduce) {
    steps = 2 * (n - 1);
    network_steps = 2 * (domains - 1);
  } else if (op.kind == CollectiveKind::kAllGather || op.kind == CollectiveKind::kReduceScatter) {
    steps = n - 1;
    network_steps = domains - 1;
  }
  const bool p2p = op.kind == CollectiveKind::kSendRecv || op.kind == CollectiveKind::kAllToAll;
  double intra = nccl::kRingNvlinkUs[protocol];
  double inter = nccl::kRingNetUs[protocol];
  Seconds fabric = p.network_latency;
  if (multi && !p2p) {
    intra = std::max(intra, nccl::kNetOverheadUs * (protocol == kSimple ? 3.0 : 1.0));
    if (p.ranks_per_domain == 1) inter = nccl::kTreeNetUs[protocol];
    if (protocol == kSimple) fabric *= 2.0;
  }
  const double us = nccl::kRingBaseUs[protocol] + (steps - network_steps) * intra + network_steps * inter;
  return from_us(us) + network_steps * fabric;
}

// tuning.cc @ v2.23.4-1 (tree all-reduce): base + 2 ((ranks per node - 1) NVLink hops + log2i(nodes) network hops),
// a network hop plus the fabric's latency, twice for Simple.
Seconds NcclCollectiveModel::tree_latency(const GroupPlacement& p, int protocol) const {
  const double levels = std::floor(std::log2(static_cast<double>(p.domains)));
  const Seconds inter = from_us(nccl::kTreeNetUs[protocol]) + p.network_latency * (protocol == kSimple ? 2.0 : 1.0);
  return from_us(nccl::kTreeBaseUs[protocol]) +
         2.0 * ((p.ranks_per_domain - 1) * from_us(nccl::kTreeNvlinkUs[protocol]) + levels * inter);
}

Seconds NcclCollectiveModel::pipeline_fill(Bytes bytes) const {
  if (bytes <= 0) return 0.0;
  const double s = static_cast<double>(bytes);
  return params_.pipeline_fill * s / (s + static_cast<double>(params_.pipeline_fill_half));
}

// All-to-all and send/recv: the ring's latencies for one exchange at the link bandwidth's protocol shares.
CollectivePlan NcclCollectiveModel::p2p_plan(const CollectiveOp& op) const {
  const bool multi = op.placement.tier != Tier::kNvlink;
  const Seconds fill = pipeline_fill(op.bytes) + (multi ? params_.network_call_latency : 0.0);
  const double volume = static_cast<double>(op.bytes) * bus_bandwidth_factor(op.kind, op.placement.size);
  const BytesPerSecond ring = ring_bandwidth(op);
  CollectivePlan best;
  best.time = INFINITY;
  for (int proto = 0; proto < nccl::kProtocols; ++proto) {
    const Seconds latency = ring_latency(op, proto) + fill;
    const Seconds time = latency + volume / (ring * p2p_share(proto, multi));
    if (time < best.time) {
      // NCCL runs both as grouped ncclSend/ncclRecv (its p2p path), priced here at the ring's latencies.
      best = {"p2p", nccl::protocol_name(proto), time, latency, 0};
    }
  }
  best.bus_bandwidth = volume / best.time;
  return best;
}

// A ring's bus bandwidth with protocol `protocol` on all of NCCL's channels (tuning.cc @ v2.23.4-1): Simple at
// the fitted link rate, LL at half of it up to llMaxBw, LL128 at 0.92 of it up to perChMaxRingLL128Bw a channel.
BytesPerSecond NcclCollectiveModel::ring_protocol_bandwidth(int protocol, BytesPerSecond simple, int nodes) const {
  const nccl::Generation g = nccl::generation(cluster_.gpu);
  const double graph_channels = nccl::channels(cluster_.gpu) / 2.0;
  if (protocol == kLL) return std::min(from_GB_s(nccl::ll_max_bw(g, nodes)), simple * nccl::kRingLLShare);
  if (protocol == kLL128) {
    return std::min(simple * nccl::kRingLL128Share, graph_channels * from_GB_s(nccl::ring_ll128_per_channel(g, nodes)));
  }
  return simple;
}

// A tree all-reduce's algorithm bandwidth with `protocol` on all channels (tuning.cc @ v2.23.4-1): Simple at the
// fitted rate up to perChMaxTreeBw a channel, LL at 1/3.8 of that up to llMaxBw, LL128 at 120/128 of it up to
// perChMaxTreeLL128Bw a channel; NCCL halves its tree bus bandwidth into the algorithm's (ratio .5).
BytesPerSecond NcclCollectiveModel::tree_protocol_bandwidth(int protocol, BytesPerSecond simple, int nodes) const {
  const nccl::Generation g = nccl::generation(cluster_.gpu);
  const double graph_channels = nccl::channels(cluster_.gpu) / 2.0;
  const BytesPerSecond capped = std::min(simple, 0.5 * graph_channels * from_GB_s(nccl::tree_per_channel(g, nodes)));
  if (protocol == kLL) return std::min(capped * nccl::kTreeLLShare, 0.5 * from_GB_s(nccl::ll_max_bw(g, nodes)));
  if (protocol == kLL128) {
    return std::min(capped * nccl::kTreeLL128ShareMultiNode,
                    0.5 * graph_channels * from_GB_s(nccl::tree_ll128_per_channel(g, nodes)));
  }
  return capped;
}

// The bandwidth a call of `bytes` gets on the channels NCCL gives it (enqueue.cc @ v2.23.4-1, topoGetAlgoInfo):
// each channel is one CTA moving at most its share of the Simple rate (two channels on each path NCCL's search
// found, connect.cc) times the protocol's share of the line; a call on all channels gets `full`.
BytesPerSecond NcclCollectiveModel::on_channels(int protocol, bool ring, int ranks, Bytes bytes,
                                                BytesPerSecond simple, BytesPerSecond full) const {
  const int channels = nccl::channels(cluster_.gpu);
  const int used = nccl::channels_for(protocol, ring, ranks, bytes, channels);
  const double share = !ring                ? 1.0
                       : protocol == kLL    ? nccl::kRingLLShare
                       : protocol == kLL128 ? nccl::kRingLL128Share
                                            : 1.0;
  return std::min(full, used * 2.0 * simple / channels * share);
}

CollectivePlan NcclCollectiveModel::plan(const CollectiveOp& op) const {
  CollectivePlan best;
  const GroupPlacement& p = op.placement;
  if (op.kind == CollectiveKind::kExpertDispatch) return p.size <= 1 ? best : expert_dispatch(op);
  if (p.size <= 1 || op.bytes <= 0) return best;
  if (op.kind == CollectiveKind::kAllToAll || op.kind == CollectiveKind::kSendRecv) return p2p_plan(op);
  const double bytes = static_cast<double>(op.bytes);
  const double volume = bytes * bus_bandwidth_factor(op.kind, p.size);
  best.time = INFINITY;
  const bool multi = p.tier != Tier::kNvlink;
  const int nodes = p.domains;  // NCCL's nNodes: an NVLink domain is one node to it (MNNVL)
  const nccl::Generation gen = nccl::generation(cluster_.gpu);
  const Seconds fill = pipeline_fill(op.bytes) + (multi ? params_.network_call_latency : 0.0);
  auto consider = [&](const char* algorithm, int protocol, Seconds steps, Seconds transfer) {
    const Seconds latency = steps + fill;
    if (latency + transfer < best.time) best = {algorithm, nccl::protocol_name(protocol), latency + transfer, latency, 0};
  };
  // NCCL prices every enabled (algorithm, protocol) and runs the fastest (enqueue.cc @ v2.23.4-1, topoGetAlgoInfo).
  const BytesPerSecond ring = ring_bandwidth(op);
  const int channels = nccl::channels(cluster_.gpu);
  const bool all_reduce = op.kind == CollectiveKind::kAllReduce;
  for (int proto = 0; proto < nccl::kProtocols; ++proto) {
    if (proto == kLL128 && !nccl::ll128_enabled(gen)) continue;
    Seconds latency = ring_latency(op, proto);
    // ncclTopoGetAlgoTime's ring plateau: multi-node Simple all-reduce with >= 64 B per channel and rank.
    if (proto == kSimple && multi && all_reduce && bytes / (channels * p.size) >= 64) {
      latency *= nccl::ring_plateau_factor(gen);
    }
    const BytesPerSecond bw = on_channels(proto, true, p.size, op.bytes, ring, ring_protocol_bandwidth(proto, ring, nodes));
    consider("ring", proto, latency, volume / bw);
  }
  const BytesPerSecond nvlink = cluster_.gpu.intra_node_bandwidth();
  const bool nvls = cluster_.nvls && all_reduce && p.ranks_per_domain > 2;
  // NVLS inside one domain: each byte into the switch once and back reduced once; latency hwLat[NVLINK][NVLS]
  // alone (tuning.cc @ v2.23.4-1); it runs on NCCL_NVLS_NCHANNELS (16) whatever the size.
  if (nvls && !multi) consider("nvls", kSimple, from_us(nccl::kNvlsNvlinkUs), bytes / (nvlink * params_.nvls_efficiency));
  if (all_reduce && multi) {
    const double crossings = p.domains == 2 ? 1.0 : 2.0;
    const BytesPerSecond nic = network_rate(p, params_.nic_efficiency);
    const Seconds inter = crossings * bytes / (nic * p.ranks_per_node);
    const Seconds intra = bytes / (nvlink * params_.nvlink_efficiency);
    const BytesPerSecond tree = bytes / std::max(inter, intra);
    for (int proto = 0; proto < nccl::kProtocols; ++proto) {
      if (proto == kLL128 && !nccl::ll128_enabled(gen)) continue;
      const BytesPerSecond full = tree_protocol_bandwidth(proto, tree, nodes);
      const BytesPerSecond bw = on_channels(proto, false, p.size, op.bytes, tree, full) * nccl::tree_correction(proto, op.bytes);
      consider("tree", proto, tree_latency(p, proto), bytes / bw);
    }
    if (nvls) {
      // NVLS inside the domains, a tree across them (Simple only): latency hwLat[NVLINK][NVLS_TREE] + 2 log2i(nodes)
      // (hwLat[NET][NVLS_TREE] + fabric, twice for Simple) (tuning.cc @ v2.23.4-1).
      const double levels = std::floor(std::log2(static_cast<double>(p.domains)));
      const Seconds latency =
          from_us(nccl::kNvlsTreeNvlinkUs) + 2.0 * levels * (from_us(nccl::kNvlsTreeNetUs) + 2.0 * p.network_latency);
      const Seconds in_domain = bytes / (nvlink * params_.nvls_efficiency);
      consider("nvls_tree", kSimple, latency, std::max(inter, in_domain));
    }
  }
  best.bus_bandwidth = volume / best.time;
  return best;
}

}  // namespace orrery
