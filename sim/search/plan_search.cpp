#include "sim/search/plan_search.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <numeric>
#include <thread>

#include "models/error.h"
#include "models/units.h"
#include "sim/predict.h"
#include "sim/search/plan_bounds.h"

namespace orrery {

namespace {

// Candidates simulated between two updates of the pruning threshold. Fixed (not the thread count) so that the
// evaluated set does not depend on how many threads run.
constexpr std::size_t kBlock = 16;

// What limits a plan: the largest non-compute share of the critical stage's time when it is at least a tenth of
// the compute time (an Orrery reporting choice, not a physical threshold), else "compute".
std::string limiter_of(const Report& r) {
  const Breakdown& b = r.breakdown;
  const std::pair<const char*, Seconds> parts[] = {
      {"TP comm", b.exposed_tp_comm}, {"CP comm", b.exposed_cp_comm},   {"EP comm", b.exposed_ep_comm},
      {"PP comm", b.exposed_pp_comm}, {"DP comm", b.exposed_dp_comm},   {"pipeline bubble", b.bubble},
      {"optimizer", b.optimizer},     {"host", b.host},                 {"other", b.other}};
  const auto* worst = std::max_element(std::begin(parts), std::end(parts),
                                       [](const auto& a, const auto& c) { return a.second < c.second; });
  return worst->second > 0.1 * b.compute ? worst->first : "compute";
}

double objective_of(Seconds time, const Job& job, const SearchOptions& o) {
  if (o.objective == SearchObjective::kTime) return time;
  return job.num_gpus() * o.gpu_hour_price / 3600.0 * time / job.tokens_per_iteration() * 1e6;  // $ per million tokens
}

// Bytes a plan may use: the GPU's memory (or the user's cap, if smaller) less the margin.
double usable_memory(const Job& job, const SearchOptions& o) {
  double capacity = static_cast<double>(job.cluster().gpu.hbm_capacity);
  if (o.memory_cap > 0) capacity = std::min(capacity, static_cast<double>(o.memory_cap));
  return capacity * (1 - o.memory_margin);
}

// The iteration time whose objective is `objective`: objective_of is proportional to the time.
Seconds time_of_objective(double objective, const Job& job, const SearchOptions& o) {
  return objective / objective_of(1.0, job, o);
}

// Simulates one candidate. `rank_above` (objective units; 0: none) cuts the run off once its time passes it, and
// with pruning a run that holds more than the usable memory is cut off too: either way it cannot rank, so its
// record is pruned (by the bound or by memory) with the figure that cut it off, not simulated to the end.
void simulate(PlanRecord& r, const Job& job, const SearchOptions& o, const CostParams& params, double rank_above = 0) {
  PredictOptions po;
  po.params = &params;
  po.run.record_budget = 0;  // timings are not needed, only the makespan, memory and breakdown
  const double usable = usable_memory(job, o);
  const Seconds deadline = rank_above > 0 ? time_of_objective(rank_above, job, o) : 0;
  // In whole nanoseconds and bytes, rounded up and down so that a plan at the threshold itself runs to the end.
  RunCutoff cutoff(deadline > 0 ? static_cast<Nanoseconds>(std::ceil(deadline * 1e9)) : 0,
                   o.prune ? static_cast<Bytes>(std::floor(usable)) : 0);
  po.run.observers.push_back(&cutoff);
  const Prediction p = predict(job, po);
  if (p.run.stopped) {
    r.cut_off = true;
    if (cutoff.memory_passed()) {
      r.status = PlanStatus::kPrunedMemory;
      r.reason = fmt::format("its simulation passed the usable memory ({:.1f} GiB) at {:.3f} s", usable / static_cast<double>(kGiB),
                             static_cast<double>(p.run.makespan) * 1e-9);
    } else {
      r.status = PlanStatus::kPrunedBound;
      r.reason = fmt::format("its simulation passed the top plans' iteration time ({:.3f} s) at {:.3f} s", deadline,
                             static_cast<double>(p.run.makespan) * 1e-9);
    }
    return;
  }
  r.status = PlanStatus::kSimulated;
  r.iteration_time = p.report.iteration_time;
  r.tokens_per_s_per_gpu = p.report.tokens_per_s_per_gpu;
  r.mfu = p.report.mfu;
  r.peak_memory = p.report.peak_memory;
  r.fits = static_cast<double>(p.report.peak_memory) <= usable_memory(job, o);
  r.limiter = r.fits ? limiter_of(p.report) : "memory";
  r.objective = objective_of(r.iteration_time, job, o);
}

}  // namespace

const char* to_string(PlanStatus s) {
  switch (s) {
    case PlanStatus::kInvalid: return "invalid";
    case PlanStatus::kPrunedMemory: return "pruned_memory";
    case PlanStatus::kPrunedBound: return "pruned_bound";
    case PlanStatus::kSimulated: return "simulated";
  }
  return "?";
}

void count_statuses(SearchResult& r) {
  r.enumerated = r.records.size();
  r.invalid = r.pruned_memory = r.pruned_bound = r.simulated = 0;
  for (const PlanRecord& p : r.records) {
    switch (p.status) {
      case PlanStatus::kInvalid: ++r.invalid; break;
      case PlanStatus::kPrunedMemory: ++r.pruned_memory; break;
      case PlanStatus::kPrunedBound: ++r.pruned_bound; break;
      case PlanStatus::kSimulated: ++r.simulated; break;
    }
  }
}

std::vector<std::size_t> rank_records(const std::vector<PlanRecord>& records) {
  std::vector<std::size_t> out;
  for (std::size_t i = 0; i < records.size(); ++i) {
    if (records[i].status == PlanStatus::kSimulated && records[i].fits) out.push_back(i);
  }
  std::vector<std::string> keys(records.size());
  for (std::size_t i : out) keys[i] = candidate_key(records[i].candidate);
  std::sort(out.begin(), out.end(), [&](std::size_t a, std::size_t b) {
    if (records[a].objective != records[b].objective) return records[a].objective < records[b].objective;
    return keys[a] < keys[b];
  });
  return out;
}

namespace {

// The precisions the candidates run, as candidate_job sets them: the base's (bf16 where the base is FP8) and
// FP8 with the base's recipe, e.g. "bf16 or fp8 (tensorwise scaling)".
std::string candidate_precisions(const Scenario& base, const std::vector<Candidate>& all) {
  const bool fp8 = std::any_of(all.begin(), all.end(), [](const Candidate& c) { return c.fp8; });
  const bool other = std::any_of(all.begin(), all.end(), [](const Candidate& c) { return !c.fp8; });
  const Precision p = base.training.precision == Precision::kFp8 ? Precision::kBf16 : base.training.precision;
  const std::string fp8_name = fmt::format("fp8 ({} scaling)", to_string(base.training.fp8_recipe));
  if (fp8 && other) return fmt::format("{} or {}", to_string(p), fp8_name);
  return fp8 ? fp8_name : to_string(p);
}

}  // namespace

SearchResult run_search(const Scenario& base, const SearchSpace& space, int num_gpus, const SearchOptions& o) {
  return run_search(resolve_base(base), space, num_gpus, o);
}

SearchResult run_search(const JobBase& job_base, const SearchSpace& space, int num_gpus, const SearchOptions& o) {
  const Scenario& base = job_base.scenario();
  require(o.shard_count >= 1 && o.shard_index >= 0 && o.shard_index < o.shard_count, "--shard",
          fmt::format("{}/{}", o.shard_index, o.shard_count), "must be I/N with 0 <= I < N");
  require(o.top_k >= 1, "--top", std::to_string(o.top_k), "must be at least 1");
  require(o.memory_margin >= 0 && o.memory_margin < 1, "--memory-margin", fmt::format("{}", o.memory_margin),
          "must be a fraction from 0 to below 1");
  require(o.objective != SearchObjective::kCostPerToken || o.gpu_hour_price > 0, "--gpu-hour-price",
          fmt::format("{}", o.gpu_hour_price), "must be positive for the cost-per-token objective");
  const CostParams& params = o.params ? *o.params : default_cost_params();

  SearchResult result;
  result.num_gpus = num_gpus;
  const std::vector<Candidate> all = enumerate_candidates(base, space, num_gpus);
  if (all.empty()) {
    // Nothing to search is a question that has no answer: say which sizes fail, as for any bad input.
    const auto list = [](const std::vector<int>& v) { return fmt::format("{}", fmt::join(v, ",")); };
    throw Error::invalid(
        "--tp, --pp, --cp", fmt::format("{} x {} x {}", list(space.tp), list(space.pp), list(space.cp)),
        fmt::format("give no plan for {} GPUs: tp x pp x cp must divide them, tp be at most {} (one NVLink domain) "
                    "and pp at most the {} layers",
                    num_gpus, space.max_tp, base.model.num_layers));
  }
  result.identity = fmt::format("{} on {} x {}, sequence {}, global batch {}, {}", base.model.name, base.cluster.name,
                                num_gpus, base.training.seq_length, base.training.global_batch_size,
                                candidate_precisions(base, all));
  result.shard_index = o.shard_index;
  result.shard_count = o.shard_count;
  std::vector<Job> jobs;
  for (std::size_t i = 0; i < all.size(); ++i) {
    if (static_cast<int>(i % static_cast<std::size_t>(o.shard_count)) != o.shard_index) continue;
    PlanRecord r;
    r.candidate = all[i];
    // The data-parallel size the GPUs leave, also for candidates the validator refuses.
    if (const std::int64_t dp = ParallelPlan::data_parallel_size(num_gpus, all[i].tp, all[i].pp, all[i].cp); dp > 0) {
      r.dp = static_cast<int>(dp);
    }
    try {
      Job job = candidate_job(job_base, all[i], num_gpus);
      r.dp = job.dp();
      r.precision = to_string(job.training().precision);
      if (job.training().precision == Precision::kFp8) r.fp8_recipe = to_string(job.training().fp8_recipe);
      const double capacity = usable_memory(job, o);
      const Bytes static_bytes = static_memory_lower_bound(job);
      if (static_cast<double>(static_bytes) > capacity) {
        r.status = PlanStatus::kPrunedMemory;
        r.reason = "weights, gradients and optimizer state alone exceed the memory";
      } else {
        const PlanBounds bounds = plan_bounds(job, params);
        if (static_cast<double>(first_stage_state_lower_bound(job) + bounds.activations) > capacity) {
          r.status = PlanStatus::kPrunedMemory;
          r.reason = "static state and stage 0's in-flight activations exceed the memory";
        } else {
          r.lower_bound = bounds.time;
          r.status = PlanStatus::kPrunedBound;  // until simulated
        }
      }
      jobs.push_back(std::move(job));
    } catch (const Error& e) {
      r.reason = e.what();
      jobs.emplace_back();
    }
    result.records.push_back(std::move(r));
  }
  result.enumerated = result.records.size();

  // Candidates to simulate, most promising first.
  std::vector<std::size_t> order;
  for (std::size_t i = 0; i < result.records.size(); ++i) {
    if (result.records[i].status == PlanStatus::kPrunedBound) order.push_back(i);
  }
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return result.records[a].lower_bound < result.records[b].lower_bound;
  });
  const int threads = o.threads > 0 ? o.threads : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  std::vector<double> best;  // objectives of the fitting plans so far, ascending, at most top_k
  std::size_t settled = result.enumerated - order.size();
  // The plan to rank exactly: simulated up front; candidates are pruned only above its objective too.
  double keep_below = 0;
  if (o.rank_exactly) {
    for (std::size_t j = 0; j < order.size(); ++j) {
      PlanRecord& r = result.records[order[j]];
      if (!(r.candidate == *o.rank_exactly)) continue;
      simulate(r, jobs[order[j]], o, params);
      if (r.fits) {
        keep_below = r.objective;
        best.push_back(r.objective);
      }
      order.erase(order.begin() + static_cast<std::ptrdiff_t>(j));
      ++settled;
      break;
    }
  }
  for (std::size_t start = 0; start < order.size(); start += kBlock) {
    const std::size_t end = std::min(order.size(), start + kBlock);
    std::vector<std::size_t> block;
    for (std::size_t j = start; j < end; ++j) {
      const std::size_t i = order[j];
      // The bound is in seconds; compare in objective units.
      const double bound = objective_of(result.records[i].lower_bound, jobs[i], o);
      if (o.prune && static_cast<int>(best.size()) >= o.top_k && bound >= std::max(best.back(), keep_below)) {
        result.records[i].reason = "its iteration-time lower bound cannot beat the top plans";
        continue;
      }
      block.push_back(i);
    }
    if (block.empty() && o.prune && static_cast<int>(best.size()) >= o.top_k) {
      // Sorted by bound: every later candidate is pruned as well.
      for (std::size_t j = end; j < order.size(); ++j) {
        result.records[order[j]].reason = "its iteration-time lower bound cannot beat the top plans";
      }
      settled = result.enumerated;
      break;
    }
    // Fixed for the block, so the result does not depend on which thread finishes first.
    const double rank_above = o.prune && static_cast<int>(best.size()) >= o.top_k ? std::max(best.back(), keep_below) : 0;
    std::atomic<std::size_t> next{0};
    std::vector<std::string> errors(block.size());
    const auto work = [&] {
      for (std::size_t k = next++; k < block.size(); k = next++) {
        try {
          simulate(result.records[block[k]], jobs[block[k]], o, params, rank_above);
        } catch (const std::exception& e) {
          errors[k] = e.what();
        }
      }
    };
    std::vector<std::thread> pool;
    for (int t = 1; t < std::min<int>(threads, static_cast<int>(block.size())); ++t) pool.emplace_back(work);
    work();
    for (std::thread& t : pool) t.join();
    for (std::size_t k = 0; k < block.size(); ++k) {
      PlanRecord& r = result.records[block[k]];
      if (!errors[k].empty()) {
        r.status = PlanStatus::kInvalid;
        r.reason = errors[k];
        continue;
      }
      if (r.status != PlanStatus::kSimulated || !r.fits) continue;
      best.insert(std::upper_bound(best.begin(), best.end(), r.objective), r.objective);
      if (static_cast<int>(best.size()) > o.top_k) best.pop_back();
    }
    settled += end - start;
    if (o.progress) o.progress(settled, result.enumerated);
  }
  count_statuses(result);
  result.ranking = rank_records(result.records);
  return result;
}

}  // namespace orrery
