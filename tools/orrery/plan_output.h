#pragma once
// What `orrery plan` prints and writes: its JSON (scenarios/README.md "orrery plan"), the sweep as CSV, and the
// text summary.

#include <nlohmann/json.hpp>

#include <ostream>
#include <string>

#include "sim/plan/plan_sweep.h"

namespace orrery::cli {

/// The plan's JSON: the main point's figures at the top level (num_gpus, plan, iteration_time_s, tokens_per_s,
/// tokens_per_s_per_gpu, mfu, time_to_train_s, effective_time_to_train_s, gpu_hours, energy_J, ettr, cost, energy,
/// goodput, breakdown_s, memory), and `sweep` with every point, `skipped` with the points that could not run.
nlohmann::json plan_json(const PlanSweep& sweep);

/// The `goodput` object of one point.
nlohmann::json goodput_json(const SweepPoint& point);

/// The sweep's points as CSV, one row per point, the columns of sweep_point_json plus ettr,
/// effective_time_to_train_s, strong_scaling_efficiency and weak_scaling_efficiency.
std::string sweep_csv(const nlohmann::json& plan);

/// The text summary: the main point's time, GPU-hours, cost, energy and goodput, then the sweep's table.
void print_plan_summary(std::ostream& out, const nlohmann::json& plan);

}  // namespace orrery::cli
