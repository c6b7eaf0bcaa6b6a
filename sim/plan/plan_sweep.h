#pragma once
// `orrery plan`'s sweep (issue 23): one plan point per (cluster, GPU count), each with its goodput, strong and weak
// scaling efficiency, and for the main point the whole prediction (breakdown, memory and power per stage).

#include <nlohmann/json.hpp>

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "sim/plan/goodput.h"
#include "sim/plan/goodput_monte_carlo.h"
#include "sim/plan/plan_point.h"

namespace orrery {

struct SweepRequest {
  nlohmann::json document;             // the scenario, flags applied
  std::filesystem::path base_dir;      // for the scenario's relative paths
  std::vector<int> gpu_counts;         // empty: the scenario's own
  std::vector<nlohmann::json> clusters;  // cluster values (a scenario's `cluster`) to compare; empty: the scenario's
  TrainingRun run;
  bool search = false;                 // each point runs the search's best plan instead of the scenario's
  std::uint64_t seed = 1;              // of the goodput Monte-Carlo
  int monte_carlo_runs = 1000;         // 0: none
  /// Called after each point with (points done, points in total, what was done).
  std::function<void(std::size_t, std::size_t, const std::string&)> progress;
};

struct SweepPoint {
  Job job;                       // the plan the point ran (the search's best with `search`)
  PlanPoint point;
  GoodputExpectation goodput;
  std::optional<MonteCarloSummary> monte_carlo;
  std::vector<IntervalPoint> vs_checkpoint_interval;
  /// Tokens per second per GPU over the first point of the same cluster's (the same global batch): strong scaling.
  double strong_scaling_efficiency = 1;
  /// The same with the global batch grown in proportion to the GPUs (unset where that batch does not divide).
  std::optional<double> weak_scaling_efficiency;
  /// Facility energy with the failures' redone work and standing time (joules); point.energy is without them.
  double effective_energy_J = 0;
  bool fits = true;        // the peak memory is within the GPU's
  std::string fit_note;    // why not, when it does not fit
};

/// A point that could not be predicted, and why (a plan that does not divide the GPUs, a model that does not fit).
struct SkippedPoint {
  std::string cluster;
  int num_gpus = 0;
  std::string reason;
};

struct PlanSweep {
  std::vector<SweepPoint> points;
  std::vector<SkippedPoint> skipped;
  std::size_t main = 0;              // index into points: the scenario's own GPU count on the first cluster, else 0
  std::shared_ptr<const Prediction> main_prediction;
  std::string scenario_name;
};

/// Runs the sweep. A single point's error propagates; in a sweep of several, a point that fails validation or does
/// not fit in the GPU's memory is skipped with its reason. Errors also for a --clusters entry that is not a cluster,
/// a run whose expected time passes 3,000 years or whose given checkpoint interval outlasts its failures by far, and
/// a Monte-Carlo that would sample more than 5e7 failure arrivals. Errors: Error::invalid when no point could be predicted, and those of parsing, predict(),
/// plan_point() and the goodput model.
PlanSweep plan_sweep(const SweepRequest& request);

}  // namespace orrery
