#include "sim/group_placement.h"

#include <fmt/format.h>

#include "models/error.h"

namespace orrery {

GroupPlacement costliest_group_placement(const ClusterSpec& cluster, const RankLayout& ranks, GroupKind kind,
                                         int stage) {
  GroupPlacement worst;
  std::vector<bool> seen(static_cast<std::size_t>(ranks.num_ranks()), false);
  const int per_stage = ranks.num_ranks() / ranks.pp();
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
    GroupPlacement p = place_members(cluster, members);
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
