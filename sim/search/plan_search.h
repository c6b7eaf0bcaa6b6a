#pragma once
// `orrery search`: every candidate of a plan space is validated, filtered by a static-memory lower bound, ordered
// by an iteration-time lower bound, and simulated in fixed blocks on all threads until the next candidate's bound
// cannot beat the current top-k (branch and bound). Blocks and their merge order are fixed, so the evaluated set
// and the ranking are the same for any thread count; a shard (i of n) takes every n-th candidate, and the union of
// the shards' top-k holds the global top-k.

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "hardware/cost_params.h"
#include "sim/search/search_space.h"

namespace orrery {

enum class SearchObjective {
  kTime,          // iteration time
  kCostPerToken,  // GPUs x $/GPU-hour x iteration time / tokens
};

/// What became of one candidate.
enum class PlanStatus { kInvalid, kPrunedMemory, kPrunedBound, kSimulated };
const char* to_string(PlanStatus s);

struct PlanRecord {
  Candidate candidate;
  int dp = 0;
  std::string precision;            // the candidate's training precision ("bf16", "fp16", "fp8", ...)
  std::string fp8_recipe;           // FP8 candidates: their scaling ("delayed", "tensorwise", ...); else empty
  PlanStatus status = PlanStatus::kInvalid;
  std::string reason;               // the validator's message (invalid), or why it was pruned
  Seconds lower_bound = 0;          // iteration-time lower bound (0 when invalid)
  /// Pruned while simulated: its run passed the top plans' iteration time or the usable memory and was stopped
  /// there (RunCutoff), so its figures below stay unset.
  bool cut_off = false;
  // Simulated candidates only:
  Seconds iteration_time = 0;
  double tokens_per_s_per_gpu = 0, mfu = 0;
  Bytes peak_memory = 0;
  bool fits = false;                // peak <= capacity x (1 - margin)
  std::string limiter;              // "compute" or the largest other share of the critical stage's time
  double objective = 0;             // the value ranked (seconds, or dollars per million tokens)
};

struct SearchOptions {
  SearchObjective objective = SearchObjective::kTime;
  double gpu_hour_price = 0;        // $ per GPU-hour, for kCostPerToken
  double memory_margin = 0.0;       // keep this fraction of GPU memory free
  Bytes memory_cap = 0;             // use at most this much GPU memory (0: the GPU's capacity)
  int top_k = 10;
  int threads = 0;                  // 0: std::thread::hardware_concurrency()
  bool prune = true;                // false: simulate every candidate that fits the static bound
  int shard_index = 0, shard_count = 1;
  const CostParams* params = nullptr;  // null: the default cost model
  /// A plan whose exact rank is wanted (a scenario's own plan): it is simulated first, and no candidate that might
  /// beat it is pruned, so its rank among all fitting plans is exact.
  std::optional<Candidate> rank_exactly;
  /// Called after each block with (candidates settled, candidates in total).
  std::function<void(std::size_t, std::size_t)> progress;
};

struct SearchResult {
  int num_gpus = 0;
  std::string identity;             // model, cluster, GPUs, sequence, batch, precision: what shards must share
  int shard_index = 0, shard_count = 1;
  std::size_t enumerated = 0, invalid = 0, pruned_memory = 0, pruned_bound = 0, simulated = 0;
  std::vector<PlanRecord> records;  // every candidate of this shard, in enumeration order
  std::vector<std::size_t> ranking; // indices into records: simulated plans that fit, best first
};

/// Searches `space` around `base` (its model, cluster, sequence, global batch and precision; its plan is the
/// template of every candidate's, sim/search/search_space.h candidate_job) on `num_gpus` GPUs.
/// Errors: Error::invalid for a bad shard or objective input.
SearchResult run_search(const JobBase& base, const SearchSpace& space, int num_gpus, const SearchOptions& options);

/// run_search(resolve_base(base), ...). Errors: resolve_base()'s, then run_search()'s.
SearchResult run_search(const Scenario& base, const SearchSpace& space, int num_gpus, const SearchOptions& options);

/// Sets `enumerated` and the per-status counts of `r` from its records.
void count_statuses(SearchResult& r);

/// Ranks fitting simulated records by (objective, key): what run_search's `ranking` holds, and what merging shards
/// recomputes over their union.
std::vector<std::size_t> rank_records(const std::vector<PlanRecord>& records);

}  // namespace orrery
