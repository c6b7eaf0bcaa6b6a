#pragma once
// Which ranks the engine simulates (DESIGN.md "Symmetry"). Ranks that provably behave alike share one instance:
// by default one representative per pipeline stage; with stragglers, the ranks are split by how they relate to
// each straggler (same TP/CP/DP coordinate or not), which keeps every collective's membership identical for all
// ranks of an instance; --expand-ranks gives every rank its own instance. All three use the same engine.

#include <cstdint>
#include <vector>

#include "sim/rank_layout.h"
#include "sim/scenario.h"

namespace orrery {

struct Instance {
  int program = 0;                 // pipeline stage
  int representative_rank = 0;     // lowest global rank it stands for
  int rank_count = 1;              // ranks it stands for
  double compute_slowdown = 1.0;   // multiplies its compute durations
};

/// Instances and their rendezvous groups. group_of[i * kNumGroupKinds + kind] is the group id instance i uses
/// for tasks of that kind (-1: none); group_size[g] counts the instances in group g.
struct Instantiation {
  std::vector<Instance> instances;
  std::vector<std::int32_t> group_of;
  std::vector<std::int32_t> group_size;

  std::int32_t group(std::size_t instance, GroupKind kind) const {
    return group_of[instance * kNumGroupKinds + static_cast<std::size_t>(kind)];
  }
};

enum class Expansion {
  kAuto,      // one instance per stage, or per straggler class when stragglers are given
  kAllRanks,  // one instance per rank (--expand-ranks)
};

Instantiation make_instances(const ParallelPlan& plan, const std::vector<Straggler>& stragglers, Expansion expansion);

}  // namespace orrery
