#pragma once
// The compute-side cost-model parameters fitted once, globally, to published training runs (ARCHITECTURE.md "Cost
// models", the validation issue: at most about a dozen fitted parameters in all, no per-record or per-source factors).
// Each record is lowered once; an evaluation only re-prices the operations and re-runs the engine.

#include <filesystem>
#include <string>
#include <vector>

#include "hardware/cost_params.h"
#include "sim/engine/engine.h"
#include "sim/instances.h"
#include "sim/scenario.h"
#include "sim/task_vocabulary.h"

namespace orrery {

struct FitRecord {
  std::string name;
  std::string prefix;        // source prefix (sim/validation.h)
  Scenario scenario;
  WorkloadGraph graph;
  Instantiation instances;
  double measured = 0;       // expect.iteration_time_s
};

/// Loads every scenario under `paths` that has expect.iteration_time_s and simulates today, except those whose
/// prefix is in `exclude` or whose name contains one of `skip`. Records the simulator refuses ("not modelled
/// yet") are skipped.
std::vector<FitRecord> load_fit_records(const std::vector<std::string>& paths, const std::vector<std::string>& exclude,
                                        const std::vector<std::string>& skip = {});

/// Predicted iteration time of every record under `params` (records simulated in parallel on `threads`).
std::vector<double> predict_records(const std::vector<FitRecord>& records, const CostParams& params, int threads = 0);

/// One compute parameter the record fit adjusts: its name in cost_model.json (and its unit there), the bounds
/// of the search, and how to read and write it.
struct ComputeKnob {
  const char* name;
  double lower, upper;  // in the preset's unit
  double (*get)(const ComputeParams&);
  void (*set)(ComputeParams&, double);
};

/// The compute parameters the record fit adjusts, in this order.
const std::vector<ComputeKnob>& fitted_compute_knobs();

/// Fits the compute parameters (least squares on log(predicted / measured) iteration time), starting from
/// `start`; network parameters are held at their values.
CostParams fit_compute_params(const std::vector<FitRecord>& records, const CostParams& start, int threads = 0);

}  // namespace orrery
