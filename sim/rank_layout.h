#pragma once
// Global rank numbering and communication groups, as Megatron-Core's parallel_state builds them with its default
// order "tp-cp-ep-dp-pp": rank = tp + TP (cp + CP (dp + DP pp)), so TP peers are neighbours on a node and pipeline
// stages are furthest apart. Experts fold the same TP x CP x DP ranks of a stage differently (Megatron-Core's
// expert rank generator, order "tp-ep-dp-pp" with ETP for TP): index i = tp + TP (cp + CP dp) = etp + ETP (ep + EP
// edp), so an expert-parallel group is EP ranks ETP apart and the expert-data-parallel group the rest.

#include <vector>

#include "sim/scenario.h"
#include "sim/task_vocabulary.h"

namespace orrery {

struct RankCoord {
  int tp = 0, cp = 0, dp = 0, pp = 0;
  bool operator==(const RankCoord&) const = default;
};

class RankLayout {
 public:
  explicit RankLayout(const ParallelPlan& plan);

  int num_ranks() const { return tp_ * cp_ * dp_ * pp_; }
  int pp() const { return pp_; }
  int rank(const RankCoord& c) const { return c.tp + tp_ * (c.cp + cp_ * (c.dp + dp_ * c.pp)); }
  RankCoord coord(int rank) const;

  /// Global ranks of the `kind` group that contains `rank`, in group order. For the p2p kinds the group is the
  /// pair (sender, receiver); it is empty when the pair does not exist (pp == 1).
  std::vector<int> group_members(GroupKind kind, int rank) const;
  /// The rank that names the `kind` group around `rank` in O(1): the lowest of group_members(kind, rank), or for
  /// the p2p kinds the sender; -1 when there is no group. Two ranks share a group exactly when they share the
  /// leader (for the p2p kinds: within one send/receive pair of kinds), which lets --expand-ranks tell groups apart
  /// without building every rank's member list (O(ranks) instead of O(ranks x group size)).
  int group_leader(GroupKind kind, int rank) const;

 private:
  /// A rank's place in the expert layout of its stage: the stage's first rank, and its expert-TP, EP and
  /// expert-DP coordinates (Megatron-Core's order: expert TP fastest, then EP, then expert DP).
  struct ExpertCoord {
    int base, tp, ep, dp;
  };
  ExpertCoord expert_coord(int rank) const;
  int tp_, cp_, dp_, pp_, ep_, etp_;
  int cp_a2a_;  // hierarchical CP's all-to-all group size (1 without it)
};

}  // namespace orrery
