#include "sim/plan/plan_point.h"

#include <fmt/format.h>

#include <cmath>

#include "hardware/gpu_power.h"
#include "models/error.h"
#include "sim/plan/time_to_train.h"

namespace orrery {

namespace {

// The largest budgets a plan takes: 1e16 tokens (about 270 times the 36T of today's largest published runs) and
// 1e10 steps; beyond them a run is a typo, and its failures could not be sampled in any time.
constexpr double kMaxTokens = 1e16, kMaxSteps = 1e10;

double run_steps(const TrainingRun& run, double tokens_per_step) {
  const bool by_tokens = run.tokens > 0, by_steps = run.steps > 0;
  require(std::isfinite(run.tokens) && std::isfinite(run.steps) && run.tokens >= 0 && run.steps >= 0 &&
              by_tokens != by_steps,
          by_tokens ? "--tokens" : "--steps", fmt::format("{}", by_tokens ? run.tokens : run.steps),
          "give exactly one of --tokens and --steps, above 0 and finite");
  if (by_steps) {
    require(run.steps == std::floor(run.steps) && run.steps <= kMaxSteps, "--steps", fmt::format("{}", run.steps),
            fmt::format("must be a whole number of steps up to {:g}", kMaxSteps));
    return run.steps;
  }
  require(run.tokens <= kMaxTokens, "--tokens", fmt::format("{}", run.tokens), fmt::format("must be at most {:g}", kMaxTokens));
  return std::ceil(run.tokens / tokens_per_step);
}

}  // namespace

PlanPoint plan_point(const Prediction& p, const TrainingRun& run) {
  require(!p.run.stopped && p.report.iteration_time > 0, "plan", p.job.scenario().name,
          "has no finished step to plan from");
  const Job& job = p.job;
  const ClusterSpec& cluster = job.cluster();
  PlanPoint out;
  out.num_gpus = p.report.num_gpus;
  out.iteration_time = p.report.iteration_time;
  out.tokens_per_step = job.tokens_per_iteration();
  out.tokens_per_s = p.report.tokens_per_s;
  out.tokens_per_s_per_gpu = p.report.tokens_per_s_per_gpu;
  out.mfu = p.report.mfu;
  out.steps = run_steps(run, out.tokens_per_step);
  out.tokens = out.steps * out.tokens_per_step;
  out.time_to_train = out.steps * out.iteration_time;
  out.gpu_hours = gpu_hours(out.num_gpus, out.time_to_train);

  // Each stage's GPUs draw their own GPU's power (a mixed cluster's pools differ).
  std::vector<GpuPower> power;
  for (std::size_t stage = 0; stage < p.graph.programs.size(); ++stage) {
    power.push_back(gpu_power(job.stage_cluster(static_cast<int>(stage)).gpu));
  }
  out.step_energy = step_energy(p.graph, p.instances, p.run, to_nanos(out.iteration_time), power);
  const FacilitySpec& facility = job.scenario().energy;
  // Hosts and NICs draw their nodes' power: the cluster's, or each pool's for the nodes the job uses on it.
  double host_W = 0, network_W = 0;
  if (job.pools().stage_pool.empty()) {
    host_W = host_power_W_per_node(facility, cluster) * cluster.num_nodes();
    network_W = network_power_W_per_node(facility, cluster) * cluster.num_nodes();
  } else {
    for (const ClusterSpec& pool : job.pools().pools) {
      if (pool.num_gpus == 0) continue;
      host_W += host_power_W_per_node(facility, pool) * pool.num_nodes();
      network_W += network_power_W_per_node(facility, pool) * pool.num_nodes();
    }
  }
  RunEnergy& e = out.energy;
  e.gpu_J = out.step_energy.gpu_joules * out.steps;
  e.host_J = host_W * out.time_to_train;
  e.network_J = network_W * out.time_to_train;
  e.pue = facility.pue;
  e.facility_J = (e.gpu_J + e.host_J + e.network_J) * e.pue;
  e.average_power_W = out.time_to_train > 0 ? e.facility_J / out.time_to_train : 0;
  e.average_gpu_power_W = out.step_energy.average_gpu_power_W;
  e.energy_per_token_J = out.tokens > 0 ? e.facility_J / out.tokens : 0;

  const Prices prices = job.scenario().cost.for_gpu(cluster.gpu.name);
  if (prices.on_demand) out.cost_on_demand_usd = *prices.on_demand * out.gpu_hours;
  if (prices.reserved) out.cost_reserved_usd = *prices.reserved * out.gpu_hours;
  if (prices.spot) out.cost_spot_usd = *prices.spot * out.gpu_hours;
  return out;
}

}  // namespace orrery
