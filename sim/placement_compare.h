#pragma once
// The placement what-if (`orrery predict --placement-compare`): one scenario predicted under the sequential, the
// random (seeded) and the optimised placement on the same fabric, side by side.

#include <vector>

#include "sim/placement.h"
#include "sim/predict.h"

namespace orrery {

struct PlacementOutcome {
  PlacementSummary summary;   // spreads and link factors under this placement
  Seconds iteration_time = 0;
  Seconds exposed_dp_comm = 0;  // the critical stage's (Report::breakdown)
  Seconds exposed_pp_comm = 0;
};

/// Predicts `scenario` with its placement's policy replaced by sequential, random (the scenario's seed, 1 when it
/// has none) and optimized, on its placement's fabric_nodes and weights (defaults without a `placement`), with
/// `options` each time. Errors: resolve()'s and predict()'s for each; an explicit map is replaced like a policy.
std::vector<PlacementOutcome> compare_placements(const Scenario& scenario, const PredictOptions& options);

}  // namespace orrery
