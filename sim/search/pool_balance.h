#pragma once
// The search over a mixed cluster's pipeline (cluster.pools): which pool runs each stage, in which order, and how
// many layers each stage holds. HexiScale (arXiv:2409.01143) and HETHUB (arXiv:2405.16256) both split the layers
// over unlike GPUs in proportion to their speed and then refine; so does this: it starts from layers in proportion
// to each stage's GPU peak at the job's GEMM precision and moves one layer at a time between stages while the
// predicted step gets shorter, for each order of the pools along the pipeline (the first stage holds the embedding,
// the last the LM head and loss, so the order matters).

#include <string>
#include <vector>

#include "sim/predict.h"
#include "sim/scenario.h"

namespace orrery {

struct PoolBalance {
  std::vector<int> stage_pools;      // parallel.pipeline_stage_pools of the best plan found
  std::vector<int> pipeline_layout;  // its layers per stage
  Prediction best;                   // its prediction
  int evaluated = 0;                 // plans predicted
};

/// Balances `scenario`'s pipeline over its pools. Keeps how many stages each pool runs (from the scenario's
/// assignment, given or filled in order) and tries every distinct order of them; vpp must be 1 and every stage
/// keeps at least one layer. Deterministic: ties keep the earlier plan. At most `max_predictions` predictions.
/// Errors: Error::invalid naming cluster.pools (not a mixed cluster) or parallel.vpp (above 1); resolve()'s.
PoolBalance balance_pools(const Scenario& scenario, const PredictOptions& options = {}, int max_predictions = 2000);

/// Tokens per second of `scenario`'s model on one pool alone: the best of the given plan's tensor and context
/// sizes at every pipeline size that divides the layers and fits in memory, on all the pool's GPUs that the plan
/// can use. Each pool's figure summed is the upper bound HETHUB (arXiv:2405.16256) measures a mixed run against.
/// Errors: Error::invalid naming cluster.pools[i] when no plan fits.
double pool_alone_tokens_per_s(const Scenario& scenario, int pool, const PredictOptions& options = {});

/// How a mixed run compares with what its pools could do: HETHUB's fraction of the upper bound (the sum of each
/// pool's tokens per second alone, pool_alone_tokens_per_s) and HexiScale's gap to a homogeneous cluster of equal
/// peak FLOP/s. A homogeneous cluster of the fastest pool's GPU running the same plan on the same GPU count, its
/// layers balanced as balance_pools balances them, has MFU M_h; scaled to the mixed job's summed peak it would give M_h x peak tokens, so the gap is 1 - MFU / M_h (MFU,
/// the mixed run's, is already over the summed peak).
struct PoolBounds {
  std::vector<double> alone_tokens_per_s;  // per pool, in cluster.pools order (0 for a pool the job leaves idle)
  double upper_bound_tokens_per_s = 0;
  double fraction_of_upper_bound = 0;      // the mixed run's tokens/s over the upper bound
  std::string homogeneous_gpu;             // the fastest pool's GPU
  double homogeneous_mfu = 0;
  double gap_to_homogeneous = 0;           // 1 - MFU / homogeneous_mfu
};

/// The bounds of `mixed`, a prediction of `scenario` (a mixed cluster). Errors: pool_alone_tokens_per_s's; resolve()'s
/// for the homogeneous plan.
PoolBounds pool_bounds(const Scenario& scenario, const Prediction& mixed, const PredictOptions& options = {});

}  // namespace orrery
