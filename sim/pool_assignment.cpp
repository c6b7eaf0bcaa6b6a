#include "sim/pool_assignment.h"

#include <fmt/format.h>

#include <cstdint>
#include <string>

#include "models/error.h"
#include "sim/group_placement.h"

namespace orrery {

namespace {

constexpr const char* kField = "parallel.pipeline_stage_pools";

// Ranks fill the pools in the order listed (pool 0's GPUs first), as ranks fill nodes; a stage that would start in
// one pool and end in the next cannot run on one GPU type.
std::vector<int> fill_in_order(const ClusterSpec& c, int pp, std::int64_t per_stage) {
  std::vector<int> out;
  std::int64_t pool_start = 0;
  std::size_t pool = 0;
  for (int stage = 0; stage < pp; ++stage) {
    const std::int64_t first = stage * per_stage;
    while (pool < c.pools.size() && first >= pool_start + c.pools[pool].num_gpus) pool_start += c.pools[pool++].num_gpus;
    if (pool == c.pools.size() || first + per_stage > pool_start + c.pools[pool].num_gpus) {
      throw Error::invalid(kField, "not given",
                           fmt::format("is needed: filling the pools in order, pipeline stage {} (ranks {} to {}) would "
                                       "straddle pool \"{}\"'s end; list each stage's pool, or size the pools in "
                                       "multiples of tp x cp x dp ({})",
                                       stage, first, first + per_stage - 1, c.pools[std::min(pool, c.pools.size() - 1)].name,
                                       per_stage));
    }
    out.push_back(static_cast<int>(pool));
  }
  return out;
}

}  // namespace

void resolve_pools(Scenario& s) {
  ClusterSpec& c = s.cluster;
  ParallelPlan& p = s.parallel;
  if (!c.has_pools()) {
    if (!p.pipeline_stage_pools.empty()) {
      throw Error::invalid(kField, fmt::format("{} entries", p.pipeline_stage_pools.size()),
                           "needs a mixed cluster (cluster.pools)");
    }
    return;
  }
  if (s.placement) {
    throw Error::not_modelled("placement", "given with cluster.pools",
                              "placing ranks on the fabric of a mixed cluster (each pool's ranks fill its nodes in order)");
  }
  const std::int64_t per_stage = std::int64_t{p.tp} * p.cp * p.dp;
  if (p.pipeline_stage_pools.empty()) {
    p.pipeline_stage_pools = fill_in_order(c, p.pp, per_stage);
  } else {
    require(static_cast<int>(p.pipeline_stage_pools.size()) == p.pp, kField,
            fmt::format("{} entries", p.pipeline_stage_pools.size()), fmt::format("must give one pool per pipeline stage (pp = {})", p.pp));
    for (int pool : p.pipeline_stage_pools) {
      require(pool < static_cast<int>(c.pools.size()), kField, std::to_string(pool),
              fmt::format("must index cluster.pools (0 to {})", c.pools.size() - 1));
    }
  }
  std::vector<std::int64_t> used(c.pools.size(), 0);
  for (int pool : p.pipeline_stage_pools) used[static_cast<std::size_t>(pool)] += per_stage;
  for (std::size_t i = 0; i < c.pools.size(); ++i) {
    const ClusterSpec& pool = c.pools[i];
    require(used[i] <= pool.num_gpus, fmt::format("cluster.pools[{}].num_gpus", i), std::to_string(pool.num_gpus),
            fmt::format("is too small: pool \"{}\" runs {} pipeline stages of tp x cp x dp = {} ranks ({} GPUs)", pool.name,
                        used[i] / per_stage, per_stage, used[i]));
    if (used[i] < pool.num_gpus) {
      s.warnings.push_back(fmt::format("pool \"{}\" has {} GPUs and the job uses {} of them", pool.name, pool.num_gpus, used[i]));
    }
    if (used[i] == 0) continue;
    // Each pool's GPU must run the precision's GEMMs (GpuSpec::peak_for throws otherwise) and its FP8 recipe.
    pool.gpu.peak_for(gemm_dtype(s.training.precision));
    if (s.training.precision == Precision::kFp8) pool.gpu.fp8_scaling_fraction(fp8_scaling(s.training.fp8_recipe));
    if (s.training.precision == Precision::kFp16 && pool.gpu.peak_fp16 <= 0) {
      throw Error::invalid("training.precision", "fp16", "is not supported by the GPU " + pool.gpu.name);
    }
  }
}

PoolAssignment assign_pools(const Scenario& s) {
  PoolAssignment a;
  const ClusterSpec& c = s.cluster;
  const ParallelPlan& p = s.parallel;
  if (!c.has_pools()) return a;
  const int per_stage = p.tp * p.cp * p.dp;
  a.stage_pool = p.pipeline_stage_pools;
  a.pools = c.pools;
  for (ClusterSpec& pool : a.pools) pool.num_gpus = 0;
  for (int stage = 0; stage < p.pp; ++stage) {
    ClusterSpec& pool = a.pools[static_cast<std::size_t>(a.stage_pool[static_cast<std::size_t>(stage)])];
    a.stage_base.push_back(stage * per_stage - pool.num_gpus);
    pool.num_gpus += per_stage;
  }
  for (std::size_t i = 0; i < a.pools.size(); ++i) {
    ClusterSpec& pool = a.pools[i];
    if (pool.num_gpus == 0) continue;
    if (pool.segment_nodes == ClusterSpec::kSegmentDefault) {
      pool.segment_nodes = default_segment_nodes(pool);
    } else if (pool.segment_nodes > 0) {
      const std::string field = fmt::format("cluster.pools[{}].segment_nodes", i);
      require(pool.segment_nodes <= pool.nodes_per_domain(), field, std::to_string(pool.segment_nodes),
              fmt::format("must be at most the nodes of one NVLink domain ({})", pool.nodes_per_domain()));
      require(pool.num_nodes() % pool.segment_nodes == 0, field, std::to_string(pool.segment_nodes),
              fmt::format("must divide the job's nodes on the pool ({}), as Slurm's --segment requires", pool.num_nodes()));
    }
  }
  return a;
}

}  // namespace orrery
