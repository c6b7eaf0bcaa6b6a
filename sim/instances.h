#pragma once
// Which ranks the engine simulates (ARCHITECTURE.md "Symmetry"). Ranks that provably behave alike share one instance:
// by default one representative per pipeline stage; with stragglers, the ranks are split by how they relate to
// each straggler (same TP/CP/DP coordinate or not), which keeps every collective's membership identical for all
// ranks of an instance; --expand-ranks gives every rank its own instance. All three use the same engine.

#include <vector>

#include "sim/engine/instantiation.h"
#include "sim/rank_layout.h"
#include "sim/scenario.h"

namespace orrery {

enum class Expansion {
  kAuto,      // one instance per stage, or per straggler class when stragglers are given
  kAllRanks,  // one instance per rank (--expand-ranks)
};

/// The instances of `plan`, whose ranks are laid out as `layout` (the Job's: sim/job/job.h owns the rank layout),
/// with `stragglers` (ranks within the layout, validated by the Job).
Instantiation make_instances(const ParallelPlan& plan, const RankLayout& layout, const std::vector<Straggler>& stragglers,
                             Expansion expansion);
/// The same for a hand-built plan (tests, calibration records): lays its ranks out first.
Instantiation make_instances(const ParallelPlan& plan, const std::vector<Straggler>& stragglers, Expansion expansion);

}  // namespace orrery
