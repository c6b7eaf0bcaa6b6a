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

struct Blocks {
  int most = 0;     // members in the fullest block of consecutive ranks
  int fewest = 0;   // members in the emptiest block touched
  int touched = 0;  // blocks touched
};

// How `members` fall into blocks of `block` consecutive ranks.
Blocks blocks(const std::vector<int>& members, int block) {
  std::map<int, int> count;
  for (int r : members) ++count[r / block];
  Blocks out;
  out.fewest = static_cast<int>(members.size());
  for (const auto& [b, n] : count) out.most = std::max(out.most, n), out.fewest = std::min(out.fewest, n);
  out.touched = static_cast<int>(count.size());
  return out;
}

}  // namespace

GroupPlacement place_members(const ClusterSpec& c, const std::vector<int>& members) {
  GroupPlacement p;
  p.size = static_cast<int>(members.size());
  const Blocks in_domains = blocks(members, c.nvlink_domain_size);
  const Blocks in_nodes = blocks(members, c.gpus_per_node);
  const int domains = in_domains.touched, nodes = in_nodes.touched;
  p.ranks_per_domain = in_domains.most;
  p.fewest_per_domain = in_domains.fewest;
  p.domains = domains;
  p.ranks_per_node = in_nodes.most;
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
