#include "sim/link_sharing.h"

#include <algorithm>
#include <unordered_map>

namespace orrery {

namespace {

// Nodes in one child block of tier `tier`: 1 under the innermost tier, else the next tier in's block (0: unbounded).
int child_nodes(const ClusterSpec& c, int tier) {
  return tier == 0 ? 1 : c.network[static_cast<std::size_t>(tier - 1)].nodes;
}

int tiers(const ClusterSpec& c) { return static_cast<int>(c.network.size()); }

struct Hop {
  int from = 0, to = 0;       // fabric nodes
  BytesPerSecond rate = 0;    // the sending node's ring rate for this group
};

// The network hops of a group in ring order: member nodes in group order (consecutive members on one node are one
// stop), each stop sending to the next at (its members) x NIC per GPU; a pair sends once, a ring wraps around.
std::vector<Hop> hops(const ClusterSpec& c, const std::vector<int>& members, bool pair) {
  std::vector<int> nodes;
  std::unordered_map<int, int> on_node;
  for (int r : members) {
    const int node = physical_gpu(c, r) / c.gpus_per_node;
    ++on_node[node];
    if (nodes.empty() || nodes.back() != node) nodes.push_back(node);
  }
  if (nodes.size() > 1 && nodes.front() == nodes.back()) nodes.pop_back();
  std::vector<Hop> out;
  const std::size_t n = nodes.size();
  if (n < 2) return out;
  const std::size_t count = pair ? n - 1 : n;
  for (std::size_t i = 0; i < count; ++i) {
    const int u = nodes[i], v = nodes[(i + 1) % n];
    out.push_back({u, v, on_node[u] * c.nic_bandwidth_per_gpu()});
  }
  return out;
}

bool is_pair(GroupKind kind) { return is_pipeline_transfer(kind); }

}  // namespace

BytesPerSecond uplink_capacity(const ClusterSpec& c, int tier) {
  const int child = child_nodes(c, tier);
  if (child <= 0) return 0;
  const BytesPerSecond node = c.nic_bandwidth * static_cast<double>(c.nics_per_node);
  return child * node / c.network[static_cast<std::size_t>(tier)].oversubscription;
}

// Source: proportional (max-min fair with equal demands) sharing of one bottleneck link; fat-tree oversubscription
// as the down:up ratio (Leiserson, "Fat-trees", IEEE ToC 1985; Arnold, arXiv:2509.15940, Section 2).
double share_factor(BytesPerSecond demand, BytesPerSecond capacity) {
  if (capacity <= 0 || demand <= capacity) return 1.0;
  return demand / capacity;
}

UplinkLoad uplink_load(const ClusterSpec& c, const RankLayout& ranks, GroupKind kind) {
  UplinkLoad load;
  load.demand.resize(static_cast<std::size_t>(tiers(c)));
  const bool pair = is_pair(kind);
  // A receive kind's pairs are its send kind's (the kind before it), counted once from their senders.
  if (pair && !is_pipeline_send(kind)) kind = static_cast<GroupKind>(static_cast<int>(kind) - 1);
  for (int r = 0; r < ranks.num_ranks(); ++r) {
    if (ranks.group_leader(kind, r) != r) continue;  // each group once, from its leader (a pair from its sender)
    const std::vector<int> members = ranks.group_members(kind, r);
    if (members.size() < 2) continue;
    for (const Hop& h : hops(c, members, pair)) {
      for (int t = 0; t < tiers(c); ++t) {
        const int child = child_nodes(c, t);
        if (child <= 0 || h.from / child == h.to / child) break;  // the hop stays inside this tier's child block
        std::vector<BytesPerSecond>& d = load.demand[static_cast<std::size_t>(t)];
        const std::size_t block = static_cast<std::size_t>(h.from / child);
        if (d.size() <= block) d.resize(block + 1, 0.0);
        d[block] += h.rate;
      }
    }
  }
  return load;
}

double group_share_factor(const ClusterSpec& c, const UplinkLoad& load, const std::vector<int>& members, bool pair) {
  double worst = 1.0;
  for (const Hop& h : hops(c, members, pair)) {
    for (int t = 0; t < tiers(c); ++t) {
      const int child = child_nodes(c, t);
      if (child <= 0 || h.from / child == h.to / child) break;
      const std::vector<BytesPerSecond>& d = load.demand[static_cast<std::size_t>(t)];
      const std::size_t block = static_cast<std::size_t>(h.from / child);
      const BytesPerSecond demand = block < d.size() ? d[block] : 0.0;
      worst = std::max(worst, share_factor(demand, uplink_capacity(c, t)));
    }
  }
  return worst;
}

namespace {

// The collective with the least network bandwidth per member is the slowest; among equals, topology.h's order.
bool slower(const GroupPlacement& a, const GroupPlacement& b) {
  if (a.tier != Tier::kNvlink && b.tier != Tier::kNvlink) {
    const double sa = a.oversubscription / a.ranks_per_node, sb = b.oversubscription / b.ranks_per_node;
    if (sa != sb) return sa > sb;
  }
  return costlier(a, b);
}

}  // namespace

GroupPlacement shared_costliest_placement(const ClusterSpec& c, const RankLayout& ranks, GroupKind kind, int stage) {
  GroupPlacement worst;
  const int per_stage = ranks.num_ranks() / ranks.pp();
  const bool pair = is_pair(kind);
  UplinkLoad load;
  if (c.shared_links) load = uplink_load(c, ranks, kind);
  std::vector<bool> seen(static_cast<std::size_t>(ranks.num_ranks()), false);
  for (int i = 0; i < per_stage; ++i) {
    const int r = stage * per_stage + i;
    if (seen[static_cast<std::size_t>(r)]) continue;
    const std::vector<int> members = ranks.group_members(kind, r);
    if (members.empty()) continue;
    if (pair) {
      seen[static_cast<std::size_t>(r)] = true;
    } else {
      for (int m : members) seen[static_cast<std::size_t>(m)] = true;
    }
    GroupPlacement p = place_members(c, members);
    if (c.shared_links && p.tier != Tier::kNvlink) p.oversubscription = group_share_factor(c, load, members, pair);
    if (worst.size <= 1 || slower(p, worst)) worst = p;
  }
  return worst;
}

}  // namespace orrery
