#include "hardware/pool_link.h"

#include <algorithm>

namespace orrery {

namespace {

Seconds outer_latency(const ClusterSpec& c) { return c.network.empty() ? c.nic_latency : c.network.back().latency; }

bool common_rdma(NicTransport a, NicTransport b) { return a == b && a != NicTransport::kEthernet; }

}  // namespace

PoolLink pool_link(const ClusterSpec& a, const ClusterSpec& b) {
  PoolLink link;
  link.host_staged = a.gpu.vendor != b.gpu.vendor;
  // Host-staged bytes leave host memory, where RDMA needs no GPUDirect, so the transport rule is the same.
  link.rdma = common_rdma(a.nic_transport, b.nic_transport);
  link.bandwidth_per_gpu = std::min(a.nic_bandwidth_per_gpu(), b.nic_bandwidth_per_gpu());
  if (link.host_staged) {
    link.bandwidth_per_gpu = std::min({link.bandwidth_per_gpu, a.gpu.pcie_bandwidth, b.gpu.pcie_bandwidth});
  }
  link.latency = std::max(outer_latency(a), outer_latency(b));
  return link;
}

GroupPlacement cross_pool_placement(const ClusterSpec& a, const ClusterSpec& b) {
  const PoolLink link = pool_link(a, b);
  GroupPlacement p;
  p.size = 2;
  p.ranks_per_domain = 1;
  p.fewest_per_domain = 1;
  p.domains = 2;
  p.ranks_per_node = 1;
  p.span = 2;
  p.tier = Tier::kSpine;
  p.oversubscription = 1.0;
  p.network_latency = link.latency;
  p.network_bandwidth_per_gpu = link.bandwidth_per_gpu;
  p.tcp = !link.rdma;
  return p;
}

}  // namespace orrery
