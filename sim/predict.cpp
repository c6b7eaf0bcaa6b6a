#include "sim/predict.h"

#include <fmt/format.h>

#include "hardware/gpu_profile.h"
#include "hardware/profiled_collective.h"
#include "hardware/profiled_compute.h"
#include "models/error.h"
#include "models/limits.h"

#include "sim/lowering.h"

namespace orrery {

DefaultCostModels::DefaultCostModels(const ClusterSpec& cluster, const CostParams& params)
    : compute(std::make_unique<RooflineComputeModel>(cluster.gpu, params.compute,
                                                     cluster.host_memory_bandwidth / cluster.gpus_per_node)),
      network(std::make_unique<NcclCollectiveModel>(cluster, params.network)) {
  // `--profile` wins over a profile the cluster names.
  const std::shared_ptr<const GpuProfile>& profile = params.profile ? params.profile : cluster.profile;
  // A profile measured at the stock power limit, priced under another one: its tensor-core times scale with the
  // clock (GpuSpec::sustained_clock_fraction).
  const double clock_slowdown = cluster.gpu.measured_clock_fraction() / cluster.gpu.sustained_clock_fraction();
  if (profile) compute = std::make_unique<ProfiledComputeModel>(*profile, std::move(compute), clock_slowdown);
  if (profile && !profile->collectives.empty()) {
    network = std::make_unique<ProfiledCollectiveModel>(*profile, std::move(network));
  }
}

namespace {

// Errors: Error::invalid naming --expand-ranks when `task_instances` (tasks x simulated ranks) is above
// limits::kTaskInstances.
void check_task_instances(double task_instances, int ranks, double limit) {
  require(task_instances <= limit, "--expand-ranks", std::to_string(ranks) + " ranks",
          fmt::format("would simulate {:.3g} task instances, above the limit of {:.3g}; simulate one rank per stage",
                      task_instances, limit));
}

// Bytes of the graph and of the engine's state for `instances` instances running `task_instances` tasks in all:
// every task keeps its timings within RunOptions::record_budget, else about one instance per stage does.
double run_bytes(const WorkloadGraph& graph, double task_instances, double instances, const RunOptions& run) {
  double tasks = 0;
  for (const Program& program : graph.programs) tasks += static_cast<double>(program.tasks.size());
  const double recorded = task_instances <= static_cast<double>(run.record_budget) ? task_instances : tasks;
  return estimated_graph_bytes(tasks) + estimated_engine_bytes(task_instances, instances, recorded, paced_streams(graph));
}

// The measured profile `--profile` gives applies to the pools of its GPU; another pool keeps its own (if it names
// one) or the default model.
CostParams params_for_pool(const CostParams& params, const ClusterSpec& pool) {
  CostParams out = params;
  if (out.profile && !same_gpu_model(out.profile->gpu, pool.gpu)) out.profile = nullptr;
  return out;
}

// What a prediction's report says of the measured profile behind `models` (priced for GPU `gpu`): which it is,
// whether it was measured on another GPU, and what its tables do not cover.
void add_profile_warnings(const DefaultCostModels& models, const GpuSpec& gpu, Report& r) {
  if (const auto* measured = dynamic_cast<const ProfiledCollectiveModel*>(models.network.get());
      measured && measured->uncovered() > 0) {
    r.warnings.push_back(fmt::format("the profile's collective tables do not cover {} collective calls (group "
                                     "size, node count or message size); the NCCL model priced them",
                                     measured->uncovered()));
  }
  if (const auto* profiled = dynamic_cast<const ProfiledComputeModel*>(models.compute.get())) {
    const GpuProfile& prof = profiled->profile();
    r.profile = prof.file.empty() ? prof.gpu : prof.file;
    if (!same_gpu_model(prof.gpu, gpu)) {
      r.warnings.push_back(fmt::format("the profile {} was measured on {}, the cluster's GPU is {}", prof.file, prof.gpu, gpu.name));
    }
    if (profiled->uncovered_gemms() > 0 || profiled->uncovered_memory() > 0 || profiled->uncovered_attention() > 0) {
      r.warnings.push_back(fmt::format(
          "the profile {} does not cover {} distinct GEMM shapes (e.g. {}), {} memory-bound kernel sizes and {} "
          "attention shapes; the default model priced them",
          prof.file, profiled->uncovered_gemms(), profiled->example_uncovered().empty() ? "none" : profiled->example_uncovered(),
          profiled->uncovered_memory(), profiled->uncovered_attention()));
    }
  }
}

}  // namespace

Prediction predict(const Scenario& scenario, const PredictOptions& options) { return predict(resolve(scenario), options); }

Prediction predict(const Job& job, const PredictOptions& options) {
  const CostParams& params = options.params ? *options.params : default_cost_params();
  Prediction p;
  p.job = job;
  p.scenario = job.scenario();
  const double tasks = estimated_tasks(p.scenario);
  check_memory_estimate(estimated_graph_bytes(tasks), options.memory_budget,
                        fmt::format("the workload graph (about {:.3g} tasks)", tasks));
  p.graph = lower(job, params.memory);
  // Every rank of a stage runs the stage's program, so the count is known before any per-rank structure is built
  // (with --expand-ranks, an instance and its groups per rank): a run beyond the limit is refused at once.
  if (options.expansion == Expansion::kAllRanks) {
    const int ranks_per_stage = job.ranks_per_stage();
    double task_instances = 0;
    for (const Program& program : p.graph.programs) task_instances += static_cast<double>(program.tasks.size());
    task_instances *= ranks_per_stage;
    const int ranks = job.ranks().num_ranks();
    check_task_instances(task_instances, ranks, options.max_task_instances);
    check_memory_estimate(run_bytes(p.graph, task_instances, ranks, options.run), options.memory_budget,
                          fmt::format("--expand-ranks ({} ranks, {:.3g} task instances)", ranks, task_instances));
  }
  if (options.expansion == Expansion::kAuto && !p.scenario.stragglers.empty()) {
    // Splitting the ranks by how they relate to each straggler keeps a signature of one int per straggler for
    // each rank (sim/instances.cpp), up to one class per rank: refused up front when that alone is above budget.
    // Per rank: the signature and its copy as a map key, plus the map node and the rank's instance index (64 B).
    const double ranks = static_cast<double>(job.num_gpus());
    const double stragglers = static_cast<double>(p.scenario.stragglers.size());
    check_memory_estimate(ranks * (stragglers + 1) * 2 * sizeof(int) + ranks * 64, options.memory_budget,
                          fmt::format("splitting {:.0f} ranks by {:.0f} stragglers", ranks, stragglers));
  }
  p.instances = make_instances(job.scenario().parallel, job.ranks(), p.scenario.stragglers, options.expansion);
  double task_instances = 0;
  for (const Instance& in : p.instances.instances) {
    task_instances += static_cast<double>(p.graph.programs[static_cast<std::size_t>(in.program)].tasks.size());
  }
  const auto instances = static_cast<int>(p.instances.instances.size());
  check_task_instances(task_instances, instances, options.max_task_instances);
  check_memory_estimate(run_bytes(p.graph, task_instances, instances, options.run), options.memory_budget,
                        fmt::format("the simulation ({} instances, {:.3g} task instances)", instances, task_instances));
  RunOptions run = engine_options(params, options.run);
  run.memory_budget = options.memory_budget;
  // One set of cost models per pool a stage runs on (the cluster's own when it has no pools); each program is
  // priced on its stage's.
  std::vector<std::unique_ptr<DefaultCostModels>> all_models;
  std::vector<GpuSpec> model_gpus;  // the GPU each of all_models prices
  std::vector<CostModels> per_program;
  if (job.pools().stage_pool.empty()) {
    all_models.push_back(std::make_unique<DefaultCostModels>(p.scenario.cluster, params));
    model_gpus.push_back(p.scenario.cluster.gpu);
    per_program = std::vector<CostModels>(p.graph.programs.size(), all_models.front()->models());
  } else {
    std::vector<int> model_of_pool(job.pools().pools.size(), -1);
    for (std::size_t stage = 0; stage < p.graph.programs.size(); ++stage) {
      const int pool = job.pools().stage_pool[stage];
      int& index = model_of_pool[static_cast<std::size_t>(pool)];
      if (index < 0) {
        index = static_cast<int>(all_models.size());
        const ClusterSpec& pool_cluster = job.stage_cluster(static_cast<int>(stage));
        all_models.push_back(std::make_unique<DefaultCostModels>(pool_cluster, params_for_pool(params, pool_cluster)));
        model_gpus.push_back(pool_cluster.gpu);
      }
      per_program.push_back(all_models[static_cast<std::size_t>(index)]->models());
    }
  }
  p.durations = price_graph(p.graph, per_program, host_issue_costs(params.compute.host, p.scenario.training.framework));
  p.run = run_engine(p.graph, p.instances, p.durations, run);
  if (p.run.stopped) return p;  // an observer's cut-off: no report of a partial run
  p.report = analyze(job, p.graph, p.instances, p.run);
  for (std::size_t i = 0; i < all_models.size(); ++i) add_profile_warnings(*all_models[i], model_gpus[i], p.report);
  return p;
}

RunOptions engine_options(const CostParams& params, RunOptions base) {
  // SM contention first: the order fixes how the models' factors multiply (each task is paced by one of them).
  base.resources.clear();
  if (params.compute.overlap_slowdown > 0) base.resources.push_back({"sm_contention", params.compute.overlap_slowdown});
  base.resources.push_back({"port_fair_share", 0.0});
  return base;
}

}  // namespace orrery
