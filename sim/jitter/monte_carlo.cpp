#include "sim/jitter/monte_carlo.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>

#include "sim/jitter/rank_factors.h"
#include "sim/jitter/random.h"

namespace orrery {

std::vector<Seconds> jitter_step_times(const WorkloadGraph& graph, const Instantiation& per_rank, const Durations& durations,
                                       const RunOptions& run, const JitterSpec& spec, Seconds jitter_free_step) {
  std::int64_t ranks = 0;
  for (const Instance& in : per_rank.instances) {
    if (in.rank_count != 1) throw std::logic_error("jitter: an instance stands for more than one rank");
    ranks = std::max<std::int64_t>(ranks, in.representative_rank + 1);
  }
  Instantiation drawn = per_rank;
  std::vector<RankFactors> factors;
  std::vector<Seconds> steps;
  steps.reserve(static_cast<std::size_t>(spec.iterations));
  for (int i = 0; i < spec.iterations; ++i) {
    JitterRandom rng(spec.seed, static_cast<std::uint64_t>(i));
    draw_rank_factors(spec, ranks, jitter_free_step, rng, factors);
    for (std::size_t k = 0; k < drawn.instances.size(); ++k) {
      const Instance& base = per_rank.instances[k];
      const RankFactors& f = factors[static_cast<std::size_t>(base.representative_rank)];
      Instance& in = drawn.instances[k];
      in.compute_slowdown = base.compute_slowdown * f.compute_slowdown;
      in.network_slowdown = base.network_slowdown * f.network_slowdown;
      in.start_delay = base.start_delay + f.start_delay;
    }
    steps.push_back(from_nanos(run_engine(graph, drawn, durations, run).makespan));
  }
  return steps;
}

JitterSummary summarize_jitter(const JitterSpec& spec, std::int64_t ranks, Seconds jitter_free_step, std::vector<Seconds> steps) {
  if (steps.empty()) throw std::invalid_argument("jitter: no steps to summarise");
  if (!(jitter_free_step > 0) || std::any_of(steps.begin(), steps.end(), [](Seconds s) { return !(s > 0); })) {
    throw std::invalid_argument("jitter: a step that is not positive");
  }
  JitterSummary out;
  out.spec = spec;
  out.ranks = ranks;
  out.jitter_free_step = jitter_free_step;
  std::vector<Seconds> sorted = steps;
  std::sort(sorted.begin(), sorted.end());
  // Nearest-rank percentile: the smallest sample with at least p of them at or below it.
  const auto percentile = [&](double p) {
    const auto n = static_cast<double>(sorted.size());
    const auto k = static_cast<std::size_t>(std::max(1.0, std::ceil(p * n)));
    return sorted[std::min(k, sorted.size()) - 1];
  };
  out.mean = std::accumulate(sorted.begin(), sorted.end(), 0.0) / static_cast<double>(sorted.size());
  out.p50 = percentile(0.50);
  out.p90 = percentile(0.90);
  out.p99 = percentile(0.99);
  out.min = sorted.front();
  out.max = sorted.back();
  out.expected_loss = out.mean / jitter_free_step - 1.0;
  out.analytic_expected_max_slowdown = expected_max_compute_slowdown(spec, ranks);
  out.scaling = jitter_scaling(spec, ranks);
  out.steps = std::move(steps);
  return out;
}

}  // namespace orrery
