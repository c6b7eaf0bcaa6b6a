#include "sim/jitter/jitter_run.h"

#include <fmt/format.h>

#include <stdexcept>

#include "models/error.h"
#include "sim/memory_budget.h"

namespace orrery {

JitterSummary run_jitter(const Prediction& base, const PredictOptions& options) {
  const Scenario& s = base.job.scenario();
  if (!s.jitter) throw std::invalid_argument("run_jitter: the scenario has no jitter section");
  if (base.run.stopped || !(base.report.iteration_time > 0)) {
    throw std::invalid_argument("run_jitter: the prediction has no report");
  }
  const JitterSpec& spec = *s.jitter;
  // Every rank's own instance: the base run's when it was expanded already.
  const bool expanded = base.instances.instances.size() == static_cast<std::size_t>(base.job.ranks().num_ranks());
  const Instantiation per_rank =
      expanded ? base.instances : make_instances(s.parallel, base.job.ranks(), s.stragglers, Expansion::kAllRanks);
  double task_instances = 0;
  for (const Instance& in : per_rank.instances) {
    task_instances += static_cast<double>(base.graph.programs[static_cast<std::size_t>(in.program)].tasks.size());
  }
  const auto ranks = static_cast<std::int64_t>(per_rank.instances.size());
  const double total = task_instances * spec.iterations;
  require(total <= kMostJitterTaskInstances, "jitter.iterations", std::to_string(spec.iterations),
          fmt::format("would simulate {:.3g} task instances ({} ranks, {:.3g} tasks each run), above the limit of "
                      "{:.3g}; take fewer iterations",
                      total, ranks, task_instances, kMostJitterTaskInstances));
  check_memory_estimate(estimated_engine_bytes(task_instances, static_cast<double>(ranks), 0, paced_streams(base.graph)),
                        options.memory_budget,
                        fmt::format("the jitter Monte-Carlo's per-rank runs ({} ranks, {:.3g} task instances)", ranks,
                                    task_instances));
  const CostParams& params = options.params ? *options.params : default_cost_params();
  RunOptions run = engine_options(params, options.run);
  run.observers.clear();
  run.record_timings = false;
  run.memory_budget = options.memory_budget;
  const Seconds step = base.report.iteration_time;
  return summarize_jitter(spec, ranks, step, jitter_step_times(base.graph, per_rank, base.durations, run, spec, step));
}

}  // namespace orrery
