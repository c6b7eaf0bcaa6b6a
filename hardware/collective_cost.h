#pragma once
// Collective cost models (ARCHITECTURE.md "Cost models"): the time of one collective or point-to-point transfer for a
// group placed on the topology. Sizes follow nccl-tests: all-reduce and reduce-scatter take the input buffer size,
// all-gather the output size, all-to-all the per-rank buffer, send/recv the message. Bus bandwidth factors:
// all-reduce 2(n-1)/n; all-gather, reduce-scatter, all-to-all (n-1)/n (nccl-tests doc/PERFORMANCE.md).
// kExpertDispatch is the MoE flex dispatcher's fused dispatch or combine (DeepEP's normal kernels, HybridEP): its
// `bytes` are what each rank forwards over NVLink and `network_bytes` what it sends across NVLink domains.

#include <string>

#include "hardware/cluster_spec.h"
#include "hardware/cost_params.h"
#include "hardware/topology.h"

namespace orrery {

enum class CollectiveKind { kAllReduce, kAllGather, kReduceScatter, kAllToAll, kSendRecv, kExpertDispatch };

const char* to_string(CollectiveKind kind);

struct CollectiveOp {
  CollectiveKind kind = CollectiveKind::kAllReduce;
  Bytes bytes = 0;
  GroupPlacement placement;
  Bytes network_bytes = 0;  // kExpertDispatch only: bytes per rank that leave its NVLink domain
  bool operator==(const CollectiveOp&) const = default;
};

/// nccl-tests' bus-bandwidth factor for `kind` over `n` ranks.
double bus_bandwidth_factor(CollectiveKind kind, int n);

/// How a collective would run: NCCL's algorithm and protocol, and its predicted time.
struct CollectivePlan {
  const char* algorithm = "ring";  // ring, tree, nvls, nvls_tree, p2p
  const char* protocol = "simple";  // ll, ll128, simple
  Seconds time = 0;
  Seconds latency = 0;
  BytesPerSecond bus_bandwidth = 0;  // achieved: bytes x bus factor / time
};

class CollectiveCostModel {
 public:
  virtual ~CollectiveCostModel() = default;
  virtual std::string name() const = 0;
  /// Seconds from the moment every member has arrived until the collective completes. 0 for one-rank groups.
  virtual Seconds time(const CollectiveOp& op) const = 0;
};

/// A model of NCCL's own tuner at v2.23.4-1 (hardware/nccl_tuning.h: src/graph/tuning.cc, src/enqueue.cc): every
/// enabled (algorithm, protocol) is priced as latency + bytes x bus factor / bandwidth, and the fastest runs, as
/// NCCL picks. Algorithms: ring; tree across nodes for all-reduce; NVLS in-switch reduction inside an NVLink
/// domain that has it; NVLS inside domains with a tree across them. Protocols LL, LL128 (NVIDIA GPUs only) and
/// Simple. Latencies are NCCL's per-step tables (baseLat, hwLat, net overhead, the ring's multi-node plateau)
/// plus a fitted pipeline fill and per-call network cost. Simple bandwidths are the links' per-direction rates
/// times fitted efficiencies: rings inside a domain at NVLink x nvlink_efficiency, across domains at min(that,
/// members-per-node x NIC-per-GPU x nic_efficiency / oversubscription); a tree over two domains moves each byte
/// across the network once per direction (twice beyond two); NVLS moves each byte into and out of the switch once
/// at NVLink x nvls_efficiency. LL and LL128 take NCCL's shares of that and its caps (ring LL half up to llMaxBw,
/// LL128 0.92 up to perChMaxRingLL128Bw a channel; tree LL 1/3.8, LL128 120/128, perChMaxTreeBw, the tree's
/// correction by size). A call smaller than NCCL's thread thresholds runs on fewer channels (enqueue.cc,
/// topoGetAlgoInfo), each at its share of the rate, so mid-size messages lose bandwidth as NCCL's do.
/// All-to-all and send/recv keep the earlier model (NCCL's p2p path is not its collective tuner).
/// kExpertDispatch is not NCCL's: DeepEP's normal kernels send each token once per destination domain over RDMA
/// (to the GPU of the sender's local index there) while forwarding over NVLink inside the domains, both at once,
/// so time = latency + max(network bytes / (NIC per GPU x e_nic / oversubscription), NVLink bytes / (NVLink x
/// e_nvlink)), the efficiencies from DeepEP's published bandwidths on H800 with CX7 NICs (docs/legacy.md; see
/// hardware/presets/cost_model.json for how its byte counts map onto these).
class NcclCollectiveModel final : public CollectiveCostModel {
 public:
  NcclCollectiveModel(ClusterSpec cluster, NetworkParams params);
  std::string name() const override { return "nccl"; }
  Seconds time(const CollectiveOp& op) const override { return plan(op).time; }
  /// The chosen algorithm and protocol with the time, latency and achieved bus bandwidth.
  CollectivePlan plan(const CollectiveOp& op) const;

 private:
  /// A member's network rate across NVLink domains: its line rate per GPU (the placement's, across pools, or the
  /// cluster's NIC share) x `rdma_efficiency` (NetworkParams::tcp_efficiency on a TCP path) / oversubscription.
  BytesPerSecond network_rate(const GroupPlacement& p, double rdma_efficiency) const;
  BytesPerSecond ring_bandwidth(const CollectiveOp& op) const;
  BytesPerSecond ring_protocol_bandwidth(int protocol, BytesPerSecond simple, int nodes) const;
  BytesPerSecond tree_protocol_bandwidth(int protocol, BytesPerSecond simple, int nodes) const;
  BytesPerSecond on_channels(int protocol, bool ring, int ranks, Bytes bytes, BytesPerSecond simple,
                             BytesPerSecond full) const;
  CollectivePlan p2p_plan(const CollectiveOp& op) const;
  CollectivePlan expert_dispatch(const CollectiveOp& op) const;
  Seconds ring_latency(const CollectiveOp& op, int protocol) const;
  Seconds tree_latency(const GroupPlacement& p, int protocol) const;
  Seconds pipeline_fill(Bytes bytes) const;  // NetworkParams::pipeline_fill's share for a call of `bytes`
  ClusterSpec cluster_;
  NetworkParams params_;
};

}  // namespace orrery
