#pragma once
// Collective cost models (DESIGN.md "Cost models"): the time of one collective or point-to-point transfer for a
// group placed on the topology. Sizes follow nccl-tests: all-reduce and reduce-scatter take the input buffer size,
// all-gather the output size, all-to-all the per-rank buffer, send/recv the message. Bus bandwidth factors:
// all-reduce 2(n-1)/n; all-gather, reduce-scatter, all-to-all (n-1)/n (nccl-tests doc/PERFORMANCE.md).

#include <string>

#include "hardware/cluster_spec.h"
#include "hardware/cost_params.h"
#include "hardware/topology.h"

namespace orrery {

enum class CollectiveKind { kAllReduce, kAllGather, kReduceScatter, kAllToAll, kSendRecv };

const char* to_string(CollectiveKind kind);

struct CollectiveOp {
  CollectiveKind kind = CollectiveKind::kAllReduce;
  Bytes bytes = 0;
  GroupPlacement placement;
  bool operator==(const CollectiveOp&) const = default;
};

/// nccl-tests' bus-bandwidth factor for `kind` over `n` ranks.
double bus_bandwidth_factor(CollectiveKind kind, int n);

class CollectiveCostModel {
 public:
  virtual ~CollectiveCostModel() = default;
  virtual std::string name() const = 0;
  /// Seconds from the moment every member has arrived until the collective completes. 0 for one-rank groups.
  virtual Seconds time(const CollectiveOp& op) const = 0;
};

/// NCCL-style ring and tree latency-bandwidth model over the hierarchy. Inside one NVLink domain the ring runs at
/// the per-direction NVLink bandwidth; across domains every member drives its own share of the node's NICs, so the
/// bus bandwidth is min(NVLink, members-per-node x NIC-per-GPU / oversubscription), each times its efficiency.
/// Ring latency: a base cost plus one hop per ring step, the steps that leave a domain paying the network hop.
/// All-reduces across domains may instead take NCCL's tree (a chain inside each domain, a double binary tree
/// across them): the same bandwidth, latency 2 ((members per domain - 1) NVLink hops + log2(domains) network hops)
/// (NCCL src/graph/tuning.cc); like NCCL's tuner the model takes whichever is faster.
class RingCollectiveModel final : public CollectiveCostModel {
 public:
  RingCollectiveModel(ClusterSpec cluster, NetworkParams params);
  std::string name() const override { return "ring-tree"; }
  Seconds time(const CollectiveOp& op) const override;

  /// The bus bandwidth (bytes/s) the model gives a large message of this kind on this placement.
  BytesPerSecond bus_bandwidth(const CollectiveOp& op) const;

 private:
  Seconds latency(const CollectiveOp& op) const;
  Seconds tree_latency(const CollectiveOp& op) const;
  ClusterSpec cluster_;
  NetworkParams params_;
};

}  // namespace orrery
