#pragma once
// The Vega-Lite 6 specs of the report's figures (tools/orrery/report_figures.h). Each takes the figure's rows (an
// array of objects in the JSON's units, see report_figures.cpp for their columns) and returns a spec with the rows
// inline; unit changes for display (seconds to days or minutes, bytes to GiB) are the spec's transforms.

#include <nlohmann/json.hpp>

#include <optional>

namespace orrery::cli::report {

/// Rows: num_gpus, gpu, time_to_train_s and/or effective_time_to_train_s. Days against GPUs (log x).
nlohmann::json time_to_train_spec(const nlohmann::json& rows);
/// Rows: num_gpus, gpu, cost_usd. US dollars against GPUs (log x).
nlohmann::json cost_spec(const nlohmann::json& rows);
/// Rows: num_gpus, gpu, strong_scaling_efficiency and/or weak_scaling_efficiency (fractions).
nlohmann::json scaling_spec(const nlohmann::json& rows);
/// Rows: num_gpus, gpu, ettr (a fraction).
nlohmann::json ettr_vs_gpus_spec(const nlohmann::json& rows);
/// Rows: interval_s, ettr. `chosen_s`: the plan's interval, drawn as a rule when given.
nlohmann::json ettr_vs_interval_spec(const nlohmann::json& rows, std::optional<double> chosen_s);
/// Rows: category, seconds (in the order to draw).
nlohmann::json breakdown_spec(const nlohmann::json& rows);
/// Rows: stage and the bytes of weights, gradients, optimizer, activations, other. `capacity_bytes`: a rule.
nlohmann::json memory_spec(const nlohmann::json& rows, std::optional<double> capacity_bytes);
/// Rows: stage, average_gpu_power_W and the seconds per state.
nlohmann::json power_per_stage_spec(const nlohmann::json& rows);
/// Rows: state, power_W.
nlohmann::json power_by_state_spec(const nlohmann::json& rows);

}  // namespace orrery::cli::report
