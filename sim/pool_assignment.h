#pragma once
// Mixed clusters (`cluster.pools`): which pool runs each pipeline stage, and each pool as the job uses it. A stage's
// ranks all sit on one pool, so every stage is homogeneous: its program is priced on its pool's GPU and its TP, CP,
// DP and EP groups are placed on its pool's nodes; only the pipeline's sends and receives between stages on two pools
// cross between pools (hardware/pool_link.h). This is how HexiScale (arXiv:2409.01143) and HETHUB
// (arXiv:2405.16256) split a model over unlike GPUs: pipeline stages per GPU type, layers balanced to their speed.

#include <vector>

#include "hardware/cluster_spec.h"
#include "sim/scenario.h"

namespace orrery {

struct PoolAssignment {
  /// Per pipeline stage: its pool's index in cluster.pools.
  std::vector<int> stage_pool;
  /// Per pool: its description as the job uses it: num_gpus the ranks it holds (0 when it runs no stage) and
  /// segment_nodes resolved for that many nodes (sim/group_placement.h, default_segment_nodes).
  std::vector<ClusterSpec> pools;
  /// Per stage: the global rank that is its pool's local rank 0 for this stage's purposes: a rank r of stage s is
  /// GPU r - stage_base[s] of its pool (physical_gpu of the pool's description). A pool's stages fill it in stage
  /// order, each tp x cp x dp ranks.
  std::vector<int> stage_base;

  /// The pool-local rank of global rank `rank` of pipeline stage `stage`.
  int local_rank(int stage, int rank) const { return rank - stage_base[static_cast<std::size_t>(stage)]; }
};

/// Checks a mixed cluster against the resolved plan (dp and num_gpus derived) and completes it: the stage
/// assignment (parallel.pipeline_stage_pools, filled in when not given: ranks fill the pools in order), each pool's
/// capacity, and that each pool's GPU runs the precision. Warns of pools the job leaves partly or wholly idle. Does
/// nothing for a homogeneous cluster, except refuse parallel.pipeline_stage_pools.
/// Errors: Error::invalid naming parallel.pipeline_stage_pools, cluster.pools[i].num_gpus or the training precision.
void resolve_pools(Scenario& s);

/// The assignment of a resolved scenario (resolve_pools has run). Empty (no stages) for a homogeneous cluster.
/// Errors: Error::invalid naming cluster.pools[i].segment_nodes when a pool's segment does not fit its nodes.
PoolAssignment assign_pools(const Scenario& s);

}  // namespace orrery
