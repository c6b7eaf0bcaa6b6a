#pragma once
// One point of a capacity plan (issue 23, `orrery plan`): a finished prediction of one training step carried to a
// whole run of `tokens` (or `steps`): wall-clock time without failures, GPU-hours, cost at each price, and energy
// from the step's timeline (sim/plan/step_energy.h) plus each node's host and network power, times the PUE.

#include <optional>

#include "sim/plan/facility.h"
#include "sim/plan/step_energy.h"
#include "sim/predict.h"

namespace orrery {

/// How long to train: a token budget, or a number of steps (exactly one of them above 0).
struct TrainingRun {
  double tokens = 0;
  double steps = 0;
};

/// Energy of a run, joules, and its average power, watts (fault-free: the steps only).
struct RunEnergy {
  double gpu_J = 0, host_J = 0, network_J = 0;  // IT energy by part
  double facility_J = 0;                        // (gpu + host + network) x PUE
  double pue = 0;
  double average_power_W = 0;       // facility_J / time to train: what the facility draws while the job runs
  double average_gpu_power_W = 0;   // per GPU, over the step
  double energy_per_token_J = 0;    // facility_J / tokens
};

struct PlanPoint {
  int num_gpus = 0;
  Seconds iteration_time = 0;
  double tokens_per_step = 0, tokens_per_s = 0, tokens_per_s_per_gpu = 0, mfu = 0;
  double steps = 0, tokens = 0;       // of the run: the budget's steps rounded up to whole steps
  Seconds time_to_train = 0;          // steps x iteration time
  double gpu_hours = 0;               // GPUs x time to train / 3600
  StepEnergy step_energy;             // one step's GPUs
  RunEnergy energy;
  /// GPU-hours x each price given (USD); unset where no price was given.
  std::optional<double> cost_on_demand_usd, cost_reserved_usd, cost_spot_usd;
};

/// The plan point of prediction `p` (its job's cluster, facility and prices) for `run`. Steps are
/// ceil(tokens / tokens per step) for a token budget.
/// Errors: Error::invalid naming --tokens or --steps unless exactly one is above 0 and finite, or when the run stopped
/// early (no report); step_energy's.
PlanPoint plan_point(const Prediction& p, const TrainingRun& run);

}  // namespace orrery
