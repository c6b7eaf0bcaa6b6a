#pragma once
// Collective cost models (DESIGN.md "Cost models"): the time of one collective or point-to-point transfer for a
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

/// A model of NCCL's own tuner (src/graph/tuning.cc): for each algorithm (ring; tree across nodes for
/// all-reduce; NVLS in-switch reduction inside an NVLink domain that has it; NVLS inside domains with a tree
/// across them) and protocol (LL, LL128, Simple), time = latency + bytes x bus factor / bandwidth, and the
/// fastest wins, as NCCL picks. Latencies are NCCL's per-step tables (base + NVLink or network hop per ring step,
/// 2 (chain + log2(domains)) hops for trees) plus a fitted per-call cost; bandwidths are the links' per-direction
/// rates times fitted efficiencies: rings inside a domain run at NVLink x nvlink_efficiency, across domains at
/// min(that, members-per-node x NIC-per-GPU x nic_efficiency / oversubscription); a tree over two domains moves
/// each byte across the network once per direction (twice beyond two, as interior nodes of the double binary
/// tree relay); NVLS moves each byte into and out of the switch once at NVLink x nvls_efficiency. Protocol
/// bandwidth shares: LL 1/4 (all-reduce) or 1/3, LL128 0.92 (NCCL's own ratios).
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
  BytesPerSecond ring_bandwidth(const CollectiveOp& op) const;
  CollectivePlan expert_dispatch(const CollectiveOp& op) const;
  Seconds ring_latency(const CollectiveOp& op, int protocol) const;
  Seconds tree_latency(const GroupPlacement& p, int protocol) const;
  Seconds pipeline_fill(Bytes bytes) const;  // NetworkParams::pipeline_fill's share for a call of `bytes`
  ClusterSpec cluster_;
  NetworkParams params_;
};

}  // namespace orrery
