#include "sim/instances.h"

#include <algorithm>
#include <array>
#include <map>

namespace orrery {

namespace {

// A rank's coordinates on every axis its groups are cut along: the dense grid (tp, cp, dp), hierarchical CP's two
// levels, and the expert grid (etp, ep, edp) that folds the same tp x cp x dp ranks of a stage (rank_layout.h).
std::array<int, 8> axes(const ParallelPlan& plan, const RankLayout& layout, int rank) {
  const RankCoord c = layout.coord(rank);
  const int in_stage = c.tp + plan.tp * (c.cp + plan.cp * c.dp);
  const int a2a = plan.cp_a2a_size();
  return {c.tp, c.cp, c.dp, c.cp % a2a, c.cp / a2a, in_stage % plan.etp, in_stage / plan.etp % plan.ep,
          in_stage / (plan.etp * plan.ep)};
}

// The signature that decides which instance a rank belongs to: its stage, and for each straggler the axes on which
// it shares the straggler's coordinate, which fixes how every group of the rank relates to the straggler's.
std::vector<int> signature(const ParallelPlan& plan, const RankLayout& layout, int rank,
                           const std::vector<Straggler>& stragglers, Expansion expansion) {
  if (expansion == Expansion::kAllRanks) return {rank};
  std::vector<int> sig{layout.coord(rank).pp};
  const std::array<int, 8> mine = axes(plan, layout, rank);
  for (const Straggler& s : stragglers) {
    const std::array<int, 8> theirs = axes(plan, layout, s.rank);
    int same = 0;
    for (std::size_t a = 0; a < mine.size(); ++a) same |= (mine[a] == theirs[a] ? 1 : 0) << a;
    sig.push_back(same);
  }
  return sig;
}

// The instances of `kind`'s group around `rank`: sorted and unique, except for the p2p pairs, whose order names
// sender and receiver.
std::vector<int> group_key(const RankLayout& layout, const std::vector<int>& instance_of, GroupKind kind, int rank) {
  std::vector<int> key;
  for (int m : layout.group_members(kind, rank)) key.push_back(instance_of[static_cast<std::size_t>(m)]);
  if (!is_pipeline_transfer(kind)) {
    std::sort(key.begin(), key.end());
    key.erase(std::unique(key.begin(), key.end()), key.end());
  }
  return key;
}

// Whether every rank's groups meet the same instances as its instance's representative's groups, which is what
// lets one instance stand for its ranks. The straggler signature ensures it on the dense and expert axes; a plan
// whose groups cut across them some other way falls back to all ranks rather than mismatch a rendezvous.
// Every member of a group has the group's key, so each is built once, at its leader (RankLayout::group_leader):
// O(ranks x kinds) in all, where building it per rank was O(ranks x group size) (one straggler on 65,536 GPUs ran
// for minutes).
bool consistent(const RankLayout& layout, const std::vector<int>& instance_of, const Instantiation& out) {
  std::map<std::pair<int, int>, std::vector<int>> key_of_group;  // (kind, leader) -> key
  const auto key = [&](GroupKind kind, int rank) -> const std::vector<int>& {
    const std::pair<int, int> id{static_cast<int>(kind), layout.group_leader(kind, rank)};
    auto it = key_of_group.find(id);
    if (it == key_of_group.end()) it = key_of_group.emplace(id, group_key(layout, instance_of, kind, rank)).first;
    return it->second;
  };
  for (int r = 0; r < layout.num_ranks(); ++r) {
    const int rep = out.instances[static_cast<std::size_t>(instance_of[static_cast<std::size_t>(r)])].representative_rank;
    if (rep == r) continue;
    for (int k = 1; k < kNumGroupKinds; ++k) {
      const auto kind = static_cast<GroupKind>(k);
      const bool has = layout.group_leader(kind, r) >= 0;
      if (has != (layout.group_leader(kind, rep) >= 0)) return false;
      if (has && key(kind, r) != key(kind, rep)) return false;
    }
  }
  return true;
}

// --expand-ranks: one instance per rank. A group's member list is as long as the group (a stage's ranks for the
// amax group), so keying every rank's groups by their members, as below, is O(ranks x group size) and never
// finished at 2^20 GPUs; here each group is told apart by its leader (RankLayout::group_leader) and its members
// are listed once, for its size. Groups are numbered in the order make_instances numbers them (by instance, then
// kind), which the engine's results must not depend on but now cannot.
Instantiation every_rank(const RankLayout& layout, const std::vector<Straggler>& stragglers) {
  const auto n = static_cast<std::size_t>(layout.num_ranks());
  Instantiation out;
  out.group_kinds = kNumGroupKinds;
  out.instances.reserve(n);
  for (std::size_t r = 0; r < n; ++r) out.instances.push_back({layout.coord(static_cast<int>(r)).pp, static_cast<int>(r), 1, 1.0});
  for (const Straggler& s : stragglers) out.instances[static_cast<std::size_t>(s.rank)].compute_slowdown = s.compute_slowdown;
  std::vector<std::vector<std::int32_t>> id_of_leader(kNumGroupKinds);  // by kind family, then by leader rank
  out.group_of.assign(n * kNumGroupKinds, -1);
  for (std::size_t r = 0; r < n; ++r) {
    for (int k = 1; k < kNumGroupKinds; ++k) {
      const auto kind = static_cast<GroupKind>(k);
      const int leader = layout.group_leader(kind, static_cast<int>(r));
      if (leader < 0) continue;
      const bool pair = is_pipeline_transfer(kind);
      // A receive kind follows its send kind in the enum: both name one family.
      std::vector<std::int32_t>& ids = id_of_leader[static_cast<std::size_t>(pair && !is_pipeline_send(kind) ? k - 1 : k)];
      if (ids.empty()) ids.assign(n, -1);
      std::int32_t& id = ids[static_cast<std::size_t>(leader)];
      if (id < 0) {
        id = static_cast<std::int32_t>(out.group_size.size());
        std::vector<int> members = layout.group_members(kind, leader);
        std::sort(members.begin(), members.end());
        const auto distinct = std::unique(members.begin(), members.end()) - members.begin();
        out.group_size.push_back(static_cast<std::int32_t>(pair ? 2 : distinct));
      }
      out.group_of[r * kNumGroupKinds + static_cast<std::size_t>(k)] = id;
    }
  }
  return out;
}

}  // namespace

Instantiation make_instances(const ParallelPlan& plan, const std::vector<Straggler>& stragglers, Expansion expansion) {
  return make_instances(plan, RankLayout(plan), stragglers, expansion);
}

Instantiation make_instances(const ParallelPlan& plan, const RankLayout& layout, const std::vector<Straggler>& stragglers,
                             Expansion expansion) {
  if (expansion == Expansion::kAllRanks) return every_rank(layout, stragglers);
  const int n = layout.num_ranks();
  Instantiation out;
  out.group_kinds = kNumGroupKinds;
  std::vector<int> instance_of(static_cast<std::size_t>(n));
  std::map<std::vector<int>, int> by_signature;
  for (int r = 0; r < n; ++r) {
    auto [it, fresh] = by_signature.emplace(signature(plan, layout, r, stragglers, expansion), static_cast<int>(out.instances.size()));
    if (fresh) out.instances.push_back({layout.coord(r).pp, r, 0, 1.0});
    ++out.instances[static_cast<std::size_t>(it->second)].rank_count;
    instance_of[static_cast<std::size_t>(r)] = it->second;
  }
  if (!stragglers.empty() && expansion == Expansion::kAuto && !consistent(layout, instance_of, out)) {
    return make_instances(plan, layout, stragglers, Expansion::kAllRanks);
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
      const std::vector<int> key = group_key(layout, instance_of, kind, rank);
      if (key.empty()) continue;
      const bool pair = is_pipeline_transfer(kind);
      // A receive kind follows its send kind in the enum: both name one family.
      const int family = pair && !is_pipeline_send(kind) ? k - 1 : k;
      auto [it, fresh] = group_ids.emplace(std::make_pair(family, key), static_cast<int>(out.group_size.size()));
      if (fresh) out.group_size.push_back(static_cast<int>(pair ? 2 : key.size()));
      out.group_of[i * kNumGroupKinds + static_cast<std::size_t>(k)] = it->second;
    }
  }
  return out;
}

}  // namespace orrery
