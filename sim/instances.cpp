#include "sim/instances.h"

#include <algorithm>
#include <map>

namespace orrery {

namespace {

// The signature that decides which instance a rank belongs to.
std::vector<int> signature(const RankLayout& layout, int rank, const std::vector<Straggler>& stragglers,
                           Expansion expansion) {
  if (expansion == Expansion::kAllRanks) return {rank};
  const RankCoord c = layout.coord(rank);
  std::vector<int> sig{c.pp};
  for (const Straggler& s : stragglers) {
    const RankCoord sc = layout.coord(s.rank);
    sig.push_back((c.tp == sc.tp ? 1 : 0) | (c.cp == sc.cp ? 2 : 0) | (c.dp == sc.dp ? 4 : 0));
  }
  return sig;
}

}  // namespace

Instantiation make_instances(const ParallelPlan& plan, const std::vector<Straggler>& stragglers, Expansion expansion) {
  const RankLayout layout(plan);
  const int n = layout.num_ranks();
  Instantiation out;
  std::vector<int> instance_of(static_cast<std::size_t>(n));
  std::map<std::vector<int>, int> by_signature;
  for (int r = 0; r < n; ++r) {
    auto [it, fresh] = by_signature.emplace(signature(layout, r, stragglers, expansion), static_cast<int>(out.instances.size()));
    if (fresh) out.instances.push_back({layout.coord(r).pp, r, 0, 1.0});
    ++out.instances[static_cast<std::size_t>(it->second)].rank_count;
    instance_of[static_cast<std::size_t>(r)] = it->second;
  }
  for (const Straggler& s : stragglers) {
    out.instances[static_cast<std::size_t>(instance_of[static_cast<std::size_t>(s.rank)])].compute_slowdown = s.compute_slowdown;
  }
  // A group is identified by its kind family and its member instances (in group order, which matters for the
  // sender/receiver pairs: a forward send of stage s and a forward receive of stage s+1 name the same pair).
  std::map<std::pair<int, std::vector<int>>, int> group_ids;
  out.group_of.assign(out.instances.size() * kNumGroupKinds, -1);
  for (std::size_t i = 0; i < out.instances.size(); ++i) {
    const int rank = out.instances[i].representative_rank;
    for (int k = 1; k < kNumGroupKinds; ++k) {
      const auto kind = static_cast<GroupKind>(k);
      std::vector<int> members = layout.group_members(kind, rank);
      if (members.empty()) continue;
      std::vector<int> key;
      for (int m : members) key.push_back(instance_of[static_cast<std::size_t>(m)]);
      const bool pair = kind >= GroupKind::kPpForwardSend;
      if (!pair) {
        std::sort(key.begin(), key.end());
        key.erase(std::unique(key.begin(), key.end()), key.end());
      }
      int family = k;
      if (kind == GroupKind::kPpForwardRecv) family = static_cast<int>(GroupKind::kPpForwardSend);
      if (kind == GroupKind::kPpBackwardRecv) family = static_cast<int>(GroupKind::kPpBackwardSend);
      auto [it, fresh] = group_ids.emplace(std::make_pair(family, key), static_cast<int>(out.group_size.size()));
      if (fresh) out.group_size.push_back(static_cast<int>(pair ? 2 : key.size()));
      out.group_of[i * kNumGroupKinds + static_cast<std::size_t>(k)] = it->second;
    }
  }
  return out;
}

}  // namespace orrery
