#include "tools/orrery/plan_json.h"

#include "sim/scenario.h"

namespace orrery::cli {

using nlohmann::json;

namespace {

json optional_number(const std::optional<double>& v) { return v ? json(*v) : json(nullptr); }

std::optional<double> first_cost(const PlanPoint& p) {
  if (p.cost_on_demand_usd) return p.cost_on_demand_usd;
  if (p.cost_reserved_usd) return p.cost_reserved_usd;
  return p.cost_spot_usd;
}

}  // namespace

json energy_json(const PlanPoint& point, const GpuPower& power) {
  const RunEnergy& e = point.energy;
  const StepEnergy& s = point.step_energy;
  json stages = json::array();
  for (const StageEnergy& st : s.stages) {
    stages.push_back({{"stage", st.stage},
                      {"gpus", st.ranks},
                      {"average_gpu_power_W", st.average_power_W},
                      {"compute_s", st.seconds.tensor},
                      {"memory_s", st.seconds.memory},
                      {"communication_s", st.seconds.communication},
                      {"idle_s", st.seconds.idle}});
  }
  return {{"gpu_J", e.gpu_J},
          {"host_J", e.host_J},
          {"network_J", e.network_J},
          {"facility_J", e.facility_J},
          {"pue", e.pue},
          {"average_power_W", e.average_power_W},
          {"average_gpu_power_W", e.average_gpu_power_W},
          {"energy_per_token_J", e.energy_per_token_J},
          {"power_by_state_W",
           {{"compute", power.watts({.tensor = true})},
            {"memory", power.watts({.memory = true})},
            {"communication", power.watts({.communication = true})},
            {"idle", power.watts({})}}},
          {"gpu_seconds_by_state",
           {{"compute", s.gpu_seconds.tensor},
            {"memory", s.gpu_seconds.memory},
            {"communication", s.gpu_seconds.communication},
            {"idle", s.gpu_seconds.idle}}},
          {"per_stage", stages}};
}

json plan_layout_json(const Job& job) {
  const Scenario& s = job.scenario();
  const ParallelPlan& p = s.parallel;
  return {{"tp", p.tp},
          {"pp", p.pp},
          {"dp", p.dp},
          {"cp", p.cp},
          {"ep", p.ep},
          {"vpp", p.vpp},
          {"micro_batch_size", s.training.micro_batch_size},
          {"global_batch_size", s.training.global_batch_size},
          {"recompute", to_string(s.training.recompute)},
          {"zero_stage", p.zero_stage},
          {"precision", to_string(s.training.precision)}};
}

json cost_json(const PlanPoint& point, const Prices& prices) {
  return {{"price_per_gpu_hour_usd",
           {{"on_demand", optional_number(prices.on_demand)},
            {"reserved", optional_number(prices.reserved)},
            {"spot", optional_number(prices.spot)}}},
          {"on_demand_usd", optional_number(point.cost_on_demand_usd)},
          {"reserved_usd", optional_number(point.cost_reserved_usd)},
          {"spot_usd", optional_number(point.cost_spot_usd)}};
}

json sweep_point_json(const PlanPoint& point, const Job& job) {
  const std::optional<double> cost = first_cost(point);
  return {{"num_gpus", point.num_gpus},
          {"gpu", job.cluster().gpu.display_name},
          {"cluster", job.cluster().name},
          {"plan", plan_layout_json(job)},
          {"iteration_time_s", point.iteration_time},
          {"tokens_per_s", point.tokens_per_s},
          {"tokens_per_s_per_gpu", point.tokens_per_s_per_gpu},
          {"mfu", point.mfu},
          {"time_to_train_s", point.time_to_train},
          {"gpu_hours", point.gpu_hours},
          {"cost_usd", optional_number(cost)},
          {"energy_J", point.energy.facility_J},
          {"energy_per_token_J", point.energy.energy_per_token_J},
          {"cost_per_token_usd", cost && point.tokens > 0 ? json(*cost / point.tokens) : json(nullptr)},
          {"average_power_W", point.energy.average_power_W}};
}

}  // namespace orrery::cli
