#pragma once
// The JSON of `orrery plan` (scenarios/README.md "orrery plan"; the contract's names: time_to_train_s,
// effective_time_to_train_s, gpu_hours, energy_J, ettr) and the `energy` object `orrery predict --json` carries.

#include <nlohmann/json.hpp>

#include "sim/plan/plan_point.h"

namespace orrery::cli {

/// {"gpu_J", "host_J", "network_J", "facility_J", "pue", "average_power_W", "average_gpu_power_W",
/// "energy_per_token_J", "power_by_state_W": {compute, memory, communication, idle}, "seconds_by_state"
/// (GPU-seconds of one step), "per_stage": [{stage, gpus, average_gpu_power_W, compute_s, memory_s,
/// communication_s, idle_s}]}: joules of the whole run (or of one step, for predict), watts.
nlohmann::json energy_json(const PlanPoint& point, const GpuPower& power);

/// One sweep point: num_gpus, gpu, cluster, plan, iteration_time_s, tokens_per_s, tokens_per_s_per_gpu, mfu,
/// time_to_train_s, gpu_hours, cost_usd (the first price given: on demand, else reserved, else spot; null
/// without one), energy_J, energy_per_token_J, cost_per_token_usd, average_power_W.
nlohmann::json sweep_point_json(const PlanPoint& point, const Job& job);

/// {"price_per_gpu_hour_usd": {on_demand, reserved, spot}, "on_demand_usd", "reserved_usd", "spot_usd"}, null
/// where no price was given.
nlohmann::json cost_json(const PlanPoint& point, const Prices& prices);

/// The plan's parallel layout: tp, pp, dp, cp, ep, vpp, micro_batch_size, global_batch_size, recompute,
/// zero_stage, precision.
nlohmann::json plan_layout_json(const Job& job);

}  // namespace orrery::cli
