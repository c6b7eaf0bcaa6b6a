#include "hardware/topology.h"

#include <algorithm>
#include <map>

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

// Largest number of members in one block of `block` consecutive ranks, and the number of blocks touched.
std::pair<int, int> blocks(const std::vector<int>& members, int block) {
  std::map<int, int> count;
  for (int r : members) ++count[r / block];
  int most = 0;
  for (const auto& [b, n] : count) most = std::max(most, n);
  return {most, static_cast<int>(count.size())};
}

}  // namespace

GroupPlacement place_members(const ClusterSpec& c, const std::vector<int>& members) {
  GroupPlacement p;
  p.size = static_cast<int>(members.size());
  auto [per_domain, domains] = blocks(members, c.nvlink_domain_size);
  auto [per_node, nodes] = blocks(members, c.gpus_per_node);
  p.ranks_per_domain = per_domain;
  p.domains = domains;
  p.ranks_per_node = per_node;
  if (domains == 1) {
    p.tier = Tier::kNvlink;
    return p;
  }
  const auto [lo, hi] = std::minmax_element(members.begin(), members.end());
  const int first_node = *lo / c.gpus_per_node;
  const int last_node = *hi / c.gpus_per_node;
  p.tier = Tier::kSpine;
  for (std::size_t i = 0; i < c.network.size(); ++i) {
    const NetworkTier& t = c.network[i];
    if (t.nodes == 0 || first_node / t.nodes == last_node / t.nodes) {
      p.tier = i == 0 ? Tier::kLeaf : Tier::kSpine;
      p.oversubscription = t.oversubscription;
      p.network_latency = t.latency;
      return p;
    }
  }
  if (!c.network.empty()) {
    p.oversubscription = c.network.back().oversubscription;
    p.network_latency = c.network.back().latency;
  }
  return p;
}

}  // namespace orrery
