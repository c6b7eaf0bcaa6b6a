#pragma once
// Where a communication group sits on the cluster: how many of its ranks share an NVLink domain or a node, how many
// domains it spans, and the outermost network tier it must cross. Ranks are numbered as Megatron-LM numbers them,
// consecutive ranks filling a node first (Megatron-Core parallel_state, order tp-cp-ep-dp-pp).

#include <string>
#include <vector>

#include "hardware/cluster_spec.h"

namespace orrery {

enum class Tier {
  kNvlink,  // every member on one NVLink domain
  kLeaf,    // across domains, within one leaf group of the fat tree
  kSpine,   // through the spine (or beyond the last listed tier)
};

const char* to_string(Tier tier);

struct GroupPlacement {
  int size = 1;              // ranks in the group
  int ranks_per_domain = 1;  // members on each NVLink domain it touches (the most on any one)
  int fewest_per_domain = 1;  // the fewest members on a domain it touches: those ranks send most across domains
  int domains = 1;           // NVLink domains spanned
  int ranks_per_node = 1;    // members on each node it touches
  int span = 1;              // last rank - first rank + 1 in rank order (size for consecutive ranks)
  Tier tier = Tier::kNvlink;
  double oversubscription = 1.0;  // of the outermost tier crossed
  Seconds network_latency = 0;    // one hop through the outermost tier crossed (0 on NVLink)
  /// Members in two pools of a mixed cluster (hardware/pool_link.h): the line rate per GPU their path allows (the
  /// slower side's NIC share, or its host link when the bytes are staged through host memory); 0: the cluster's
  /// own NIC share.
  BytesPerSecond network_bandwidth_per_gpu = 0;
  /// The path has no common RDMA transport and runs over TCP sockets (NCCL's socket transport), at
  /// NetworkParams::tcp_efficiency of the line rate instead of nic_efficiency.
  bool tcp = false;

  bool operator==(const GroupPlacement&) const = default;
};

/// Where global rank `rank` runs: its GPU's index in the cluster's physical order (domain by domain, node by node).
/// Ranks fill nodes in order (Megatron-LM, torchrun), and nodes come as the scheduler allocates them: with
/// cluster.segment_nodes = S > 0 (Slurm's --segment), block b of S consecutive nodes goes to NVLink domain
/// b / floor(D / S), at slot (b mod floor(D / S)) S, D nodes to a domain; domains are never shared by two blocks
/// that do not fit together, so a block's ranks never straddle a domain (the rest of a domain stays idle). With
/// S = 0 the job's nodes fill the domains in order. Needs segment_nodes resolved (not kSegmentDefault). With a
/// cluster.rank_gpu (a scenario's `placement`), rank r runs on GPU rank_gpu[r] instead, and physical_gpu is no
/// longer increasing in the rank.
int physical_gpu(const ClusterSpec& cluster, int rank);

/// Places the group of global ranks `members` (any order, no duplicates, at least one), each at its physical_gpu.
/// ranks_per_domain and ranks_per_node are the largest number of members sharing one domain or node.
GroupPlacement place_members(const ClusterSpec& cluster, const std::vector<int>& members);

/// The network part of a placement on more than one NVLink domain, from the group's first and last physical GPU
/// (the lowest and highest physical GPUs of its members: tiers group consecutive nodes, so a tier block that holds
/// both holds every member): the innermost tier
/// (cluster.network, in order) whose node blocks hold both ends sets `tier` (kLeaf for the first, else kSpine),
/// `oversubscription` and `network_latency`; beyond every tier, the outermost's figures and kSpine.
void place_across_network(const ClusterSpec& cluster, int first_gpu, int last_gpu, GroupPlacement& placement);

/// True when a collective over `a` is costlier than over `b` of the same size: an outer tier, then more domains
/// spanned, then fewer members on its emptiest domain (those send the most across domains), then more
/// oversubscription, then more nodes' worth of members on one node's NICs (fewer members per node).
bool costlier(const GroupPlacement& a, const GroupPlacement& b);

}  // namespace orrery
