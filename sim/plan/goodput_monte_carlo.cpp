#include "sim/plan/goodput_monte_carlo.h"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <vector>

#include "models/error.h"
#include "sim/plan/goodput_process.h"
#include "sim/xoshiro256.h"

namespace orrery {

namespace {

constexpr int kMaxRuns = 10'000'000;

class Run {
 public:
  Run(const GoodputProcess& p, const std::vector<double>& cumulative, Xoshiro256& rng)
      : p_(p), cumulative_(cumulative), rng_(rng) {}

  double time() {
    double t = p_.initial_startup_s;
    t += segments(p_.full_segments, p_.segment_s);
    if (p_.last_segment_s > 0) t += segments(1, p_.last_segment_s);
    return t;
  }

 private:
  // `count` segments of `length` seconds each: draw the time to the next failure (inverse CDF of the exponential);
  // the whole segments it spans complete, the one it strikes is lost and restarts after a downtime. Memorylessness
  // lets the next draw start afresh after the downtime.
  double segments(std::int64_t count, double length) {
    double t = 0;
    while (count > 0) {
      if (p_.rate_per_s <= 0) return t + static_cast<double>(count) * length;
      const double x = -std::log(rng_.uniform_open0()) / p_.rate_per_s;
      const double whole = std::floor(x / length);
      if (whole >= static_cast<double>(count)) return t + static_cast<double>(count) * length;
      t += x + p_.downtime_s[category()];
      count -= static_cast<std::int64_t>(whole);
    }
    return t;
  }

  std::size_t category() {
    const double u = rng_.uniform_open0();
    for (std::size_t i = 0; i + 1 < cumulative_.size(); ++i)
      if (u <= cumulative_[i]) return i;
    return cumulative_.size() - 1;
  }

  const GoodputProcess& p_;
  const std::vector<double>& cumulative_;
  Xoshiro256& rng_;
};

double nearest_rank(const std::vector<double>& sorted, double p) {
  const auto rank = static_cast<std::size_t>(std::ceil(p * static_cast<double>(sorted.size())));
  return sorted[std::clamp<std::size_t>(rank, 1, sorted.size()) - 1];
}

}  // namespace

MonteCarloSummary monte_carlo_goodput(const FailureModel& failures, const CheckpointCost& checkpoint,
                                      const GoodputJob& job, std::uint64_t seed, int runs) {
  require(runs >= 1 && runs <= kMaxRuns, "runs", fmt::format("{}", runs),
          fmt::format("must be between 1 and {}", kMaxRuns));
  expected_goodput_at(failures, checkpoint, job);  // the same checks
  const GoodputProcess process = make_goodput_process(failures, checkpoint, job);
  std::vector<double> cumulative;
  double sum = 0;
  for (double rate : process.category_rate_per_s) {
    sum += rate;
    cumulative.push_back(process.rate_per_s > 0 ? sum / process.rate_per_s : 1.0);
  }

  Xoshiro256 rng(seed);
  std::vector<double> times(static_cast<std::size_t>(runs));
  std::vector<double> ettrs(times.size());
  double total = 0;
  double ettr_total = 0;
  for (std::size_t i = 0; i < times.size(); ++i) {
    times[i] = Run(process, cumulative, rng).time();
    ettrs[i] = times[i] > 0 ? job.compute_s / times[i] : 1.0;
    total += times[i];
    ettr_total += ettrs[i];
  }
  std::sort(times.begin(), times.end());
  std::sort(ettrs.begin(), ettrs.end());
  MonteCarloSummary out;
  out.seed = seed;
  out.runs = runs;
  out.mean_s = total / runs;
  out.p50_s = nearest_rank(times, 0.50);
  out.p90_s = nearest_rank(times, 0.90);
  out.p99_s = nearest_rank(times, 0.99);
  out.ettr_mean = ettr_total / runs;
  out.ettr_p10 = nearest_rank(ettrs, 0.10);
  return out;
}

}  // namespace orrery
