#pragma once
// The jitter Monte-Carlo on the engine: each iteration draws every rank's factors (sim/jitter/rank_factors.h),
// sets them on the rank's own instance and runs the real engine once; the step is the run's makespan. The engine
// sees only per-instance factors (Instance), nothing of where they come from (ARCHITECTURE.md rule 1).

#include <cstdint>
#include <vector>

#include "models/units.h"
#include "sim/engine/engine.h"
#include "sim/jitter/jitter_spec.h"
#include "sim/jitter/order_statistics.h"

namespace orrery {

/// The step of each of spec.iterations iterations, in order (seconds). `per_rank` must give every rank its own
/// instance (rank_count 1: make_instances with Expansion::kAllRanks); its factors (fixed stragglers) are multiplied
/// by the drawn ones. `jitter_free_step` (seconds) is the exposure of the GC process. Iteration i draws from
/// JitterRandom(spec.seed, i), so the result is a function of its inputs alone. Errors: run_engine's;
/// std::logic_error for an instance that stands for more than one rank.
std::vector<Seconds> jitter_step_times(const WorkloadGraph& graph, const Instantiation& per_rank, const Durations& durations,
                                       const RunOptions& run, const JitterSpec& spec, Seconds jitter_free_step);

/// What the report says of a jitter Monte-Carlo (the `jitter` object of `orrery predict --json`).
struct JitterSummary {
  JitterSpec spec;
  std::int64_t ranks = 0;        // ranks simulated, each its own instance
  Seconds jitter_free_step = 0;  // the deterministic prediction's iteration time
  std::vector<Seconds> steps;    // one per iteration, in order
  Seconds mean = 0, p50 = 0, p90 = 0, p99 = 0, min = 0, max = 0;  // of steps; nearest-rank percentiles
  double expected_loss = 0;      // mean / jitter_free_step - 1
  /// The analytic E[max of N compute slowdowns] at this job's ranks, and the same distribution at other N
  /// (sim/jitter/order_statistics.h).
  double analytic_expected_max_slowdown = 1;
  std::vector<JitterScalePoint> scaling;
};

/// The summary of `steps` (non-empty) against `jitter_free_step` (> 0 seconds) for `ranks` ranks.
/// Errors: std::invalid_argument for no steps or a step that is not positive.
JitterSummary summarize_jitter(const JitterSpec& spec, std::int64_t ranks, Seconds jitter_free_step, std::vector<Seconds> steps);

}  // namespace orrery
