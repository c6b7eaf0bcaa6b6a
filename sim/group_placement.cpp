#include "sim/group_placement.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <unordered_map>

#include "models/error.h"
#include "sim/link_sharing.h"
#include "sim/placement.h"

namespace orrery {

namespace {

// The period, in ranks, after which physical_gpu repeats the NVLink domains and nodes: a group moved by a multiple of
// it moves every member by whole domains, so it touches as many domains and nodes with as many members each. Without
// segments a GPU is its rank, and the period is the least common multiple of the domain and the node. With segments
// (S of a domain's D nodes, floor(D / S) blocks to a domain), rank + floor(D / S) S gpus_per_node sits exactly one
// domain further (physical_gpu).
std::int64_t domain_period(const ClusterSpec& c) {
  const std::int64_t gpn = std::max(1, c.gpus_per_node);
  const int S = c.segment_nodes, D = c.nodes_per_domain();
  if (S > 0 && D > 1) return std::int64_t{std::max(1, D / S)} * S * gpn;
  const std::int64_t domain = std::max(1, c.nvlink_domain_size);
  return domain / std::gcd(domain, gpn) * gpn;
}

}  // namespace

GroupPlacement costliest_group_placement(const ClusterSpec& cluster, const RankLayout& ranks, GroupKind kind,
                                         int stage, const std::vector<int>& stage_base) {
  // A scenario's `placement` (sim/placement.h): ranks anywhere on the fabric, links shared (sim/link_sharing.h).
  // Not with pools (resolve_pools refuses the two together), so stage_base is empty here.
  if (!cluster.rank_gpu.empty() || cluster.shared_links) return shared_costliest_placement(cluster, ranks, kind, stage);
  GroupPlacement worst;
  std::vector<bool> seen(static_cast<std::size_t>(ranks.num_ranks()), false);
  const int per_stage = ranks.num_ranks() / ranks.pp();
  // A rank's GPU on `cluster`: on a pool, its stage's ranks sit from stage_base on (sim/pool_assignment.h).
  const auto local = [&](int r) { return stage_base.empty() ? r : r - stage_base[static_cast<std::size_t>(r / per_stage)]; };
  const auto place = [&](std::vector<int> members) {
    for (int& m : members) m = local(m);
    return place_members(cluster, members);
  };
  // A stage's groups of one kind are one pattern of rank offsets from their first member (RankLayout numbers ranks
  // by coordinates), so groups whose first members are a domain period apart fall on domains and nodes alike: those
  // are counted once, and only the network tier, which depends on where the group's ends are, is found for each.
  // Every group's offsets are checked against the first's; one that differs is placed on its own.
  const std::int64_t period = domain_period(cluster);
  std::vector<int> pattern;
  int lowest = 0, highest = 0;  // the pattern's extreme offsets
  std::unordered_map<std::int64_t, GroupPlacement> placed;  // by first member mod period
  for (int i = 0; i < per_stage; ++i) {
    const int r = stage * per_stage + i;  // rank = tp + TP (cp + CP dp) + TP CP DP pp (sim/rank_layout.h)
    if (seen[static_cast<std::size_t>(r)]) continue;
    const std::vector<int> members = ranks.group_members(kind, r);
    if (members.empty()) continue;
    // A pair belongs to its sender alone; a group covers each of its members once.
    if (is_pipeline_transfer(kind)) {
      seen[static_cast<std::size_t>(r)] = true;
    } else {
      for (int m : members) seen[static_cast<std::size_t>(m)] = true;
    }
    if (pattern.empty()) {
      for (int m : members) pattern.push_back(m - members.front());
      lowest = *std::min_element(pattern.begin(), pattern.end());
      highest = *std::max_element(pattern.begin(), pattern.end());
    }
    bool alike = members.size() == pattern.size();
    for (std::size_t k = 0; alike && k < members.size(); ++k) alike = members[k] - members.front() == pattern[k];
    GroupPlacement p;
    if (!alike) {
      p = place(members);
    } else if (const auto [at, fresh] = placed.try_emplace(local(members.front()) % period); fresh) {
      p = at->second = place(members);
    } else {
      p = at->second;
      if (p.domains > 1) {
        place_across_network(cluster, physical_gpu(cluster, local(members.front() + lowest)),
                             physical_gpu(cluster, local(members.front() + highest)), p);
      }
    }
    if (worst.size <= 1 || costlier(p, worst)) worst = p;
  }
  return worst;
}

int default_segment_nodes(const ClusterSpec& c) {
  const int D = c.nodes_per_domain();
  if (D <= 1) return 0;
  const int nodes = c.num_nodes();
  if (nodes <= D) return nodes;
  for (int s = D; s > 1; --s) {
    if (nodes % s == 0) return s;
  }
  return 1;
}

namespace {

const char* group_name(GroupKind kind) {
  switch (kind) {
    case GroupKind::kTp: return "TP";
    case GroupKind::kCp: return "CP";
    case GroupKind::kEp: return "EP";
    case GroupKind::kExpertTp: return "expert TP";
    default: return "?";
  }
}

}  // namespace

void resolve_placement(Scenario& s) {
  ClusterSpec& c = s.cluster;
  if (c.has_pools()) {
    c.segment_nodes = 0;  // each pool's own is resolved with the stages it runs (sim/pool_assignment.h)
    return;
  }
  if (c.segment_nodes == ClusterSpec::kSegmentDefault) {
    c.segment_nodes = default_segment_nodes(c);
  } else if (c.segment_nodes > 0) {
    const std::string value = std::to_string(c.segment_nodes);
    if (c.segment_nodes > c.nodes_per_domain()) {
      throw Error::invalid("cluster.segment_nodes", value,
                           fmt::format("must be at most the nodes of one NVLink domain ({} of {} GPUs)",
                                       c.nodes_per_domain(), c.gpus_per_node));
    }
    if (c.num_nodes() % c.segment_nodes != 0) {
      throw Error::invalid("cluster.segment_nodes", value,
                           fmt::format("must divide the job's nodes ({}), as Slurm's --segment requires", c.num_nodes()));
    }
  }
  resolve_rank_placement(s);
  const RankLayout ranks(s.parallel);
  for (GroupKind kind : {GroupKind::kTp, GroupKind::kCp, GroupKind::kEp, GroupKind::kExpertTp}) {
    for (int stage = 0; stage < ranks.pp(); ++stage) {
      const GroupPlacement p = costliest_group_placement(c, ranks, kind, stage);
      // A group whose ranks span more than a domain in Megatron's rank order (larger than one, or strided, as CP
      // groups are TP ranks apart) must cross the network; one that would fit but straddles is the surprise.
      if (p.domains <= 1 || p.span > c.nvlink_domain_size) continue;
      const bool segmented = c.segment_nodes > 0 && c.nodes_per_domain() > 1;
      s.warnings.push_back(fmt::format(
          "{} groups of {} ranks fit in one NVLink domain of {} GPUs, but one straddles {} ({} of its ranks on the "
          "emptiest): its collectives cross the network and are priced so{}",
          group_name(kind), p.size, c.nvlink_domain_size, p.domains, p.fewest_per_domain,
          c.nodes_per_domain() > 1 && !segmented ? "; cluster.segment_nodes (Slurm's --segment) keeps groups inside a domain"
          : c.nvlink_domain_size % p.size != 0     ? "; a group size that divides the domain keeps every group inside one"
                                                   : ""));
      break;
    }
  }
}

}  // namespace orrery
