#pragma once
// One prediction end to end: lower -> price -> simulate -> analyze (ARCHITECTURE.md "Data flow").

#include <memory>

#include "hardware/cost_params.h"
#include "models/limits.h"
#include "sim/durations.h"
#include "sim/engine/engine.h"
#include "sim/instances.h"
#include "sim/job/job.h"
#include "sim/memory_budget.h"
#include "sim/report.h"
#include "sim/scenario.h"
#include "sim/task_vocabulary.h"

namespace orrery {

struct PredictOptions {
  Expansion expansion = Expansion::kAuto;
  const CostParams* params = nullptr;  // null: hardware/presets/cost_model.json
  RunOptions run;
  /// Tasks x simulated ranks above this are refused (Error::invalid) before pricing; the fuzzer lowers it.
  double max_task_instances = static_cast<double>(limits::kTaskInstances);
  /// Bytes of memory the process may hold (sim/memory_budget.h): a prediction whose estimate is above it is refused
  /// before lowering or simulating, and one that reaches it while simulating stops; both Error::invalid naming
  /// --memory-budget. 0: no budget.
  std::int64_t memory_budget = default_memory_budget();
};

/// Everything a prediction produced, for reports and observers (traces, timelines). When an observer of
/// PredictOptions::run stopped the run (RunResult::stopped), `report` is left empty.
struct Prediction {
  Job job;            // the resolved plan the prediction ran
  Scenario scenario;  // job.scenario(), for the observers
  WorkloadGraph graph;
  Instantiation instances;
  Durations durations;
  RunResult run;
  Report report;
};

/// The default cost models for a cluster.
struct DefaultCostModels {
  DefaultCostModels(const ClusterSpec& cluster, const CostParams& params);
  std::unique_ptr<ComputeCostModel> compute;
  std::unique_ptr<CollectiveCostModel> network;
  CostModels models() const { return {*compute, *network}; }
};

/// Errors: those of lower(); Error::invalid naming --expand-ranks above max_task_instances, or --memory-budget
/// (see PredictOptions::memory_budget); std::logic_error for internal deadlocks.
Prediction predict(const Job& job, const PredictOptions& options = {});

/// predict(resolve(scenario), options). Errors: resolve()'s, then predict()'s.
Prediction predict(const Scenario& scenario, const PredictOptions& options = {});

/// `base` with what a prediction under `params` runs the engine with: compute slowed by the fitted
/// overlap_slowdown beside communication, and transfers across NVLink domains sharing each rank's network port.
/// The record fit (calibrate/record_fit.cpp) runs the engine the same way.
RunOptions engine_options(const CostParams& params, RunOptions base = {});

}  // namespace orrery
