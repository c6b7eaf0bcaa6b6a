#include "hardware/topology.h"

#include <algorithm>

namespace orrery {

const char* to_string(Tier tier) {
  switch (tier) {
    case Tier::kNvlink: return "nvlink";
    case Tier::kLeaf: return "leaf";
    case Tier::kSpine: return "spine";
  }
  return "?";
}

namespace {

struct Blocks {
  int most = 0;     // members in the fullest block of consecutive ranks
  int fewest = 0;   // members in the emptiest block touched
  int touched = 0;  // blocks touched
};

// How `members` (sorted) fall into blocks of `block` consecutive GPUs.
Blocks blocks(const std::vector<int>& members, int block) {
  Blocks out;
  out.fewest = static_cast<int>(members.size());
  for (std::size_t i = 0; i < members.size();) {
    std::size_t j = i;
    while (j < members.size() && members[j] / block == members[i] / block) ++j;
    const int n = static_cast<int>(j - i);
    out.most = std::max(out.most, n);
    out.fewest = std::min(out.fewest, n);
    ++out.touched;
    i = j;
  }
  return out;
}

}  // namespace

int physical_gpu(const ClusterSpec& c, int rank) {
  if (static_cast<std::size_t>(rank) < c.rank_gpu.size()) return c.rank_gpu[static_cast<std::size_t>(rank)];
  const int S = c.segment_nodes;
  const int D = c.nodes_per_domain();
  if (S <= 0 || D <= 1) return rank;
  const int node = rank / c.gpus_per_node;
  const int per_domain = std::max(1, D / S);  // segments that fit on one domain
  const int block = node / S, offset = node % S;
  const int physical_node = (block / per_domain) * D + (block % per_domain) * S + offset;
  return physical_node * c.gpus_per_node + rank % c.gpus_per_node;
}

bool costlier(const GroupPlacement& a, const GroupPlacement& b) {
  if (a.tier != b.tier) return a.tier > b.tier;
  if (a.domains != b.domains) return a.domains > b.domains;
  if (a.fewest_per_domain != b.fewest_per_domain) return a.fewest_per_domain < b.fewest_per_domain;
  if (a.oversubscription != b.oversubscription) return a.oversubscription > b.oversubscription;
  return a.ranks_per_node < b.ranks_per_node;
}

GroupPlacement place_members(const ClusterSpec& c, const std::vector<int>& ranks) {
  GroupPlacement p;
  p.size = static_cast<int>(ranks.size());
  const auto [first, last] = std::minmax_element(ranks.begin(), ranks.end());
  p.span = *last - *first + 1;
  std::vector<int> members;
  members.reserve(ranks.size());
  for (int r : ranks) members.push_back(physical_gpu(c, r));
  std::sort(members.begin(), members.end());
  const Blocks in_domains = blocks(members, c.nvlink_domain_size);
  const Blocks in_nodes = blocks(members, c.gpus_per_node);
  const int domains = in_domains.touched;
  p.ranks_per_domain = in_domains.most;
  p.fewest_per_domain = in_domains.fewest;
  p.domains = domains;
  p.ranks_per_node = in_nodes.most;
  if (domains == 1) {
    p.tier = Tier::kNvlink;
    return p;
  }
  place_across_network(c, members.front(), members.back(), p);
  return p;
}

void place_across_network(const ClusterSpec& c, int first_gpu, int last_gpu, GroupPlacement& p) {
  const int first_node = first_gpu / c.gpus_per_node;
  const int last_node = last_gpu / c.gpus_per_node;
  p.tier = Tier::kSpine;
  p.oversubscription = 1.0;
  p.network_latency = 0;
  for (std::size_t i = 0; i < c.network.size(); ++i) {
    const NetworkTier& t = c.network[i];
    if (t.nodes == 0 || first_node / t.nodes == last_node / t.nodes) {
      p.tier = i == 0 ? Tier::kLeaf : Tier::kSpine;
      p.oversubscription = t.oversubscription;
      p.network_latency = t.latency;
      return;
    }
  }
  if (!c.network.empty()) {
    p.oversubscription = c.network.back().oversubscription;
    p.network_latency = c.network.back().latency;
  }
}

}  // namespace orrery
