#include "sim/search/pool_balance.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "models/error.h"

namespace orrery {

namespace {

constexpr double kNoPlan = std::numeric_limits<double>::infinity();

// The step of `s` with the pipeline `pools` and `layout`, or kNoPlan when it does not fit in memory or is invalid.
double step_of(const Scenario& s, const std::vector<int>& pools, const std::vector<int>& layout,
               const PredictOptions& options, PoolBalance& out, double& best) {
  Scenario c = s;
  c.parallel.pipeline_stage_pools = pools;
  c.parallel.pipeline_layout = layout;
  c.parallel.decoder_first_pipeline_num_layers.reset();
  c.parallel.decoder_last_pipeline_num_layers.reset();
  c.parallel.account_for_embedding_in_pipeline_split = false;
  c.parallel.account_for_loss_in_pipeline_split = false;
  ++out.evaluated;
  Prediction p;
  try {
    p = predict(c, options);
  } catch (const Error&) {
    return kNoPlan;
  }
  for (const StageMemory& m : p.report.per_stage) {
    if (m.peak > m.capacity) return kNoPlan;
  }
  const double t = p.report.iteration_time;
  if (t < best) {
    best = t;
    out.stage_pools = pools;
    out.pipeline_layout = layout;
    out.best = std::move(p);
  }
  return t;
}

// Layers in proportion to each stage's GPU peak (largest remainders first, ties to the earlier stage), at least one
// a stage.
std::vector<int> proportional_layout(const std::vector<double>& speed, int layers) {
  const int pp = static_cast<int>(speed.size());
  double total = 0;
  for (double v : speed) total += v;
  std::vector<int> out(speed.size(), 1);
  const int spare = layers - pp;
  std::vector<std::pair<double, int>> remainder;
  int given = 0;
  for (int i = 0; i < pp; ++i) {
    const double share = spare * speed[static_cast<std::size_t>(i)] / total;
    const int whole = static_cast<int>(std::floor(share));
    out[static_cast<std::size_t>(i)] += whole;
    given += whole;
    remainder.push_back({-(share - whole), i});
  }
  std::sort(remainder.begin(), remainder.end());
  for (int k = 0; k < spare - given; ++k) ++out[static_cast<std::size_t>(remainder[static_cast<std::size_t>(k)].second)];
  return out;
}

}  // namespace

PoolBalance balance_pools(const Scenario& scenario, const PredictOptions& options, int max_predictions) {
  require(scenario.cluster.has_pools(), "cluster.pools", "absent", "balancing a pipeline over pools needs a mixed cluster");
  const Job job = resolve(scenario);
  const Scenario& s = job.scenario();
  require(s.parallel.vpp == 1, "parallel.vpp", std::to_string(s.parallel.vpp),
          "must be 1 to balance layers over pools (each stage one model chunk)");
  const int pp = s.parallel.pp;
  const int layers = s.model.num_layers;
  require(layers >= pp, "parallel.pp", std::to_string(pp), fmt::format("must be at most the layers ({})", layers));
  // The pools that run stages, each with its stage count; every order of them is a pipeline to try.
  std::vector<int> order;
  std::vector<int> stages_of(s.cluster.pools.size(), 0);
  for (int pool : s.parallel.pipeline_stage_pools) {
    if (stages_of[static_cast<std::size_t>(pool)]++ == 0) order.push_back(pool);
  }
  std::sort(order.begin(), order.end());
  PoolBalance out;
  double best = kNoPlan;
  do {
    std::vector<int> pools;
    std::vector<double> speed;
    for (int pool : order) {
      for (int k = 0; k < stages_of[static_cast<std::size_t>(pool)]; ++k) {
        pools.push_back(pool);
        speed.push_back(s.cluster.pools[static_cast<std::size_t>(pool)].gpu.peak_for(job.gemm_dtype()));
      }
    }
    std::vector<int> layout = proportional_layout(speed, layers);
    double here = step_of(s, pools, layout, options, out, best);
    // Move one layer at a time between two stages while the step gets shorter (the best move each round).
    while (out.evaluated < max_predictions) {
      double round = here;
      std::vector<int> chosen;
      for (int from = 0; from < pp && out.evaluated < max_predictions; ++from) {
        if (layout[static_cast<std::size_t>(from)] <= 1) continue;
        for (int to = 0; to < pp && out.evaluated < max_predictions; ++to) {
          if (to == from) continue;
          std::vector<int> moved = layout;
          --moved[static_cast<std::size_t>(from)];
          ++moved[static_cast<std::size_t>(to)];
          const double t = step_of(s, pools, moved, options, out, best);
          if (t < round) {
            round = t;
            chosen = moved;
          }
        }
      }
      if (chosen.empty()) break;
      layout = chosen;
      here = round;
    }
  } while (std::next_permutation(order.begin(), order.end()) && out.evaluated < max_predictions);
  require(best < kNoPlan, "cluster.pools", fmt::format("{} pools", s.cluster.pools.size()),
          "hold no balanced pipeline of this plan that fits in memory");
  return out;
}

double pool_alone_tokens_per_s(const Scenario& scenario, int pool, const PredictOptions& options) {
  const ClusterSpec& given = scenario.cluster.pools.at(static_cast<std::size_t>(pool));
  const std::string field = fmt::format("cluster.pools[{}]", pool);
  double best = 0;
  for (int pp = 1; pp <= scenario.model.num_layers; ++pp) {
    if (scenario.model.num_layers % pp != 0) continue;
    Scenario s = scenario;
    s.cluster = given;
    s.cluster.pools.clear();
    const int mp = s.parallel.tp * s.parallel.cp * pp;
    s.cluster.num_gpus = given.num_gpus / mp * mp;
    if (s.cluster.num_gpus == 0) continue;
    s.parallel.pp = pp;
    s.parallel.dp = 0;
    s.parallel.pipeline_stage_pools.clear();
    s.parallel.pipeline_layout.clear();
    s.parallel.decoder_first_pipeline_num_layers.reset();
    s.parallel.decoder_last_pipeline_num_layers.reset();
    try {
      const Prediction p = predict(s, options);
      bool fits = true;
      for (const StageMemory& m : p.report.per_stage) fits = fits && m.peak <= m.capacity;
      if (fits) best = std::max(best, p.report.tokens_per_s);
    } catch (const Error&) {
      continue;  // a pipeline size the batch or the plan does not allow
    }
  }
  require(best > 0, field, given.name, "runs no pipeline of the plan's tp and cp alone that fits in memory");
  return best;
}

PoolBounds pool_bounds(const Scenario& scenario, const Prediction& mixed, const PredictOptions& options) {
  PoolBounds out;
  const Job& job = mixed.job;
  int fastest = -1;
  for (std::size_t i = 0; i < scenario.cluster.pools.size(); ++i) {
    const bool used = job.pools().pools[i].num_gpus > 0;
    out.alone_tokens_per_s.push_back(used ? pool_alone_tokens_per_s(scenario, static_cast<int>(i), options) : 0.0);
    out.upper_bound_tokens_per_s += out.alone_tokens_per_s.back();
    const GpuSpec& gpu = scenario.cluster.pools[i].gpu;
    if (used && (fastest < 0 || gpu.peak_for(job.gemm_dtype()) >
                                    scenario.cluster.pools[static_cast<std::size_t>(fastest)].gpu.peak_for(job.gemm_dtype()))) {
      fastest = static_cast<int>(i);
    }
  }
  out.fraction_of_upper_bound = mixed.report.tokens_per_s / out.upper_bound_tokens_per_s;
  // The homogeneous cluster as one pool of the fastest GPU, its layers balanced the same way, so that both sides
  // run a good plan (an even split would charge the homogeneous side for the embedding and LM head stages).
  Scenario homogeneous = job.scenario();
  ClusterSpec pool = scenario.cluster.pools[static_cast<std::size_t>(fastest)];
  pool.num_gpus = job.num_gpus();
  homogeneous.cluster = pool;
  homogeneous.cluster.pools = {pool};
  homogeneous.cluster.num_gpus = job.num_gpus();
  homogeneous.parallel.pipeline_stage_pools.assign(static_cast<std::size_t>(homogeneous.parallel.pp), 0);
  out.homogeneous_gpu = pool.gpu.name;
  out.homogeneous_mfu = balance_pools(homogeneous, options).best.report.mfu;
  out.gap_to_homogeneous = 1.0 - mixed.report.mfu / out.homogeneous_mfu;
  return out;
}

}  // namespace orrery
