#include "sim/jitter/rank_factors.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <utility>

namespace orrery {

namespace {

// Garbage-collection pauses of one rank in `step` seconds: a Poisson count of mean rate x step, each `pause` long.
// Source: Python's generational GC runs when allocations pass a threshold, at no fixed phase of the step (the Python
// gc module's documentation); the Poisson process is the memoryless assumption for it. Up to a mean of 30 the count
// is the number of exponential gaps that fit in the step (exact); above it, the normal approximation rounded (its
// error in the mean is below 1%, and a step with over 30 collections is far outside the published cases).
Seconds gc_pauses(double rate, Seconds pause, Seconds step, JitterRandom& rng) {
  if (rate <= 0 || pause <= 0 || step <= 0) return 0;
  const double mean = rate * step;
  if (mean > 30) return pause * std::max(0.0, std::round(mean + std::sqrt(mean) * rng.normal()));
  Seconds total = 0;
  for (Seconds t = rng.exponential(1.0 / rate); t <= step; t += rng.exponential(1.0 / rate)) total += pause;
  return total;
}

// Picks `count` of `ranks` ranks uniformly without replacement (a partial Fisher-Yates shuffle of `order`) and
// applies `hit` to each.
template <typename Hit>
void pick(std::int64_t count, std::vector<std::int64_t>& order, JitterRandom& rng, Hit hit) {
  const auto n = static_cast<std::int64_t>(order.size());
  for (std::int64_t k = 0; k < count && k < n; ++k) {
    const auto j = k + static_cast<std::int64_t>(rng.below(static_cast<std::uint64_t>(n - k)));
    std::swap(order[static_cast<std::size_t>(k)], order[static_cast<std::size_t>(j)]);
    hit(order[static_cast<std::size_t>(k)]);
  }
}

}  // namespace

std::int64_t ranks_hit(double fraction, std::int64_t ranks) {
  return static_cast<std::int64_t>(std::llround(fraction * static_cast<double>(ranks)));
}

void draw_rank_factors(const JitterSpec& spec, std::int64_t ranks, Seconds step, JitterRandom& rng,
                       std::vector<RankFactors>& out) {
  out.assign(static_cast<std::size_t>(ranks), RankFactors{});
  for (RankFactors& f : out) {
    // Folded lognormal: exp(sigma |Z|) (sim/jitter/jitter_spec.h).
    if (spec.compute_sigma > 0) f.compute_slowdown = std::exp(spec.compute_sigma * std::fabs(rng.normal()));
    if (spec.launch_delay_mean > 0) f.start_delay += rng.exponential(spec.launch_delay_mean);
    f.start_delay += gc_pauses(spec.gc_rate_per_s, spec.gc_pause, step, rng);
  }
  std::vector<std::int64_t> order(static_cast<std::size_t>(ranks));
  if (spec.thermal_fraction > 0 && spec.thermal_clock_factor < 1) {
    std::iota(order.begin(), order.end(), std::int64_t{0});
    pick(ranks_hit(spec.thermal_fraction, ranks), order, rng,
         [&](std::int64_t r) { out[static_cast<std::size_t>(r)].compute_slowdown /= spec.thermal_clock_factor; });
  }
  if (spec.network_fraction > 0 && spec.network_slowdown > 1) {
    std::iota(order.begin(), order.end(), std::int64_t{0});
    pick(ranks_hit(spec.network_fraction, ranks), order, rng,
         [&](std::int64_t r) { out[static_cast<std::size_t>(r)].network_slowdown = spec.network_slowdown; });
  }
}

}  // namespace orrery
