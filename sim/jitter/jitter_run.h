#pragma once
// The jitter Monte-Carlo of a finished prediction (`orrery predict` on a scenario with `jitter`): the prediction's
// graph and durations, every rank its own instance, spec.iterations engine runs.

#include "sim/jitter/monte_carlo.h"
#include "sim/predict.h"

namespace orrery {

/// Tasks x ranks x iterations above which a Monte-Carlo is refused: ten times what one --expand-ranks run may
/// simulate (limits::kTaskInstances), minutes of engine time at the engine's tens of millions of task instances a
/// second (tools/bench-jitter.sh measures it).
inline constexpr double kMostJitterTaskInstances = 2e10;

/// Runs `base`'s scenario's jitter section (Job::scenario().jitter, which must be set) on `base`'s graph and
/// durations, under `options` (cost parameters, memory budget). The jitter-free step is base.report.iteration_time.
/// Errors: Error::invalid naming jitter.iterations when iterations x task instances is above
/// kMostJitterTaskInstances, or --memory-budget when the per-rank run's estimate is above the budget;
/// std::invalid_argument when `base` has no report (a stopped run) or no jitter section; run_engine's errors.
JitterSummary run_jitter(const Prediction& base, const PredictOptions& options);

}  // namespace orrery
