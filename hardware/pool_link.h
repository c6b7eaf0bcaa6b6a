#pragma once
// The path between two pools of a mixed cluster (`cluster.pools`): what a transfer between a GPU of one and a GPU
// of the other may use. Each pool's own collectives are priced on its own description; traffic across pools (the
// pipeline's sends and receives between stages on different pools) leaves both pools' fabrics and is priced here.

#include "hardware/cluster_spec.h"
#include "hardware/topology.h"

namespace orrery {

/// How two pools reach each other.
struct PoolLink {
  /// Line rate per GPU the path allows: the smaller of the two sides' NIC share per GPU, and with host staging also
  /// of their host links (the staged copies GPU -> host and host -> GPU are pipelined with the network transfer in
  /// chunks, so the slowest leg sets the rate).
  BytesPerSecond bandwidth_per_gpu = 0;
  bool rdma = true;          // a common RDMA transport: both InfiniBand, or both RoCE (NicTransport)
  bool host_staged = false;  // GPUs of two vendors: no shared collective library, bytes staged through host memory
  /// One hop through the outer fabric: the larger of the two pools' outermost tier latencies (NetworkTier), or of
  /// their NIC latencies when a pool lists no tier.
  Seconds latency = 0;
};

/// The path between pools `a` and `b` (in either order: the result is symmetric). RDMA needs the same transport on
/// both sides (an InfiniBand HCA and a RoCE NIC do not interoperate; Holmes, arXiv:2312.03549, Section 2, builds
/// its cross-cluster pipeline on exactly this), else NCCL falls back to its socket transport (TCP). GPUs of two
/// vendors cannot share a NCCL or RCCL communicator, so their bytes are assumed to go through host memory on both
/// sides (a copy to the host, the network, a copy to the device), over TCP or host-memory RDMA by the rule above.
/// Errors: none.
PoolLink pool_link(const ClusterSpec& a, const ClusterSpec& b);

/// The placement of a point-to-point pair with one member in pool `a` and one in pool `b`: two NVLink domains, one
/// member each, across the outermost tier (Tier::kSpine, no oversubscription: the pools' own uplinks are assumed
/// non-blocking towards each other), with the link's rate, latency and transport.
GroupPlacement cross_pool_placement(const ClusterSpec& a, const ClusterSpec& b);

}  // namespace orrery
