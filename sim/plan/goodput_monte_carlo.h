#pragma once
// A seeded Monte-Carlo run of the goodput model's process (sim/plan/goodput.h): failure arrivals are sampled, not
// training steps, so a 54-day job with a few hundred failures costs a few hundred samples per run. Its own PRNG
// (xoshiro256** seeded through splitmix64; Blackman and Vigna, "Scrambled Linear Pseudorandom Number Generators",
// ACM TOMS 2021) and inverse-CDF sampling, so that the same seed gives the same numbers with any standard library.

#include <cstdint>

#include "sim/plan/goodput.h"

namespace orrery {

struct MonteCarloSummary {
  std::uint64_t seed = 0;
  int runs = 0;
  double mean_s = 0;     // mean effective time to train, seconds
  double p50_s = 0;      // nearest-rank percentiles of the effective time
  double p90_s = 0;
  double p99_s = 0;
  double ettr_mean = 0;  // mean over runs of T / effective time
  double ettr_p10 = 0;   // its 10th percentile (the ETTR 90% of runs beat)
};

/// `runs` runs of the job with failures drawn from `seed`. Errors: Error::invalid naming "runs" unless 1 <= runs
/// <= 10,000,000, and the errors of expected_goodput_at for the job and failures.
MonteCarloSummary monte_carlo_goodput(const FailureModel& failures, const CheckpointCost& checkpoint,
                                      const GoodputJob& job, std::uint64_t seed, int runs);

}  // namespace orrery
