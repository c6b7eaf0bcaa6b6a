#include "sim/placement_compare.h"

namespace orrery {

std::vector<PlacementOutcome> compare_placements(const Scenario& scenario, const PredictOptions& options) {
  std::vector<PlacementOutcome> out;
  for (PlacementPolicy policy : {PlacementPolicy::kSequential, PlacementPolicy::kRandom, PlacementPolicy::kOptimized}) {
    Scenario s = scenario;
    PlacementSpec p = s.placement.value_or(PlacementSpec{});
    p.policy = policy;
    p.rank_to_node.clear();
    if (!s.placement || s.placement->policy != PlacementPolicy::kRandom) p.seed = 1;
    s.placement = p;
    const Prediction prediction = predict(resolve(s), options);
    PlacementOutcome o;
    o.summary = summarize_placement(prediction.scenario);
    o.iteration_time = prediction.report.iteration_time;
    o.exposed_dp_comm = prediction.report.breakdown.exposed_dp_comm;
    o.exposed_pp_comm = prediction.report.breakdown.exposed_pp_comm;
    out.push_back(std::move(o));
  }
  return out;
}

}  // namespace orrery
