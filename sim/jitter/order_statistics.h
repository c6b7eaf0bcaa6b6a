#pragma once
// The analytic side of the jitter Monte-Carlo: the expected slowest compute slowdown of N ranks, from the order
// statistics of the per-rank distribution (sim/jitter/jitter_spec.h), for the report's "how the loss grows with the
// number of ranks". A step that is one synchronised compute phase (data parallelism whose all-reduce waits for
// every rank) takes E[max of N slowdowns] times its jitter-free compute; launch, GC and network terms are not in it.

#include <cstdint>
#include <vector>

#include "sim/jitter/jitter_spec.h"

namespace orrery {

/// E[max_i s_i] over `ranks` (>= 1) ranks, where each rank's compute slowdown is s = exp(sigma |Z|) (Z standard
/// normal) and round(thermal_fraction x ranks) of them are, besides, divided by thermal_clock_factor.
/// Source: for X >= 1, E[X] = 1 + integral from 1 to infinity of P(X > x) dx, and P(max <= x) is the product of the
/// ranks' CDFs (order statistics of independent ranks; David and Nagaraja, "Order Statistics", 3rd ed., eq. 2.1.1);
/// the folded lognormal's CDF is erf(ln x / (sigma sqrt 2)) for x >= 1. Integrated by composite Simpson in ln x, up
/// to 9 sigma above the throttled factor (the tail left out is below 1e-13 of the mean at a million ranks).
/// Dimensionless; with sigma 0 it is 1 / clock factor when some rank is throttled, else 1.
double expected_max_compute_slowdown(const JitterSpec& spec, std::int64_t ranks);

/// One row of the scaling table: the same distribution at `ranks` ranks.
struct JitterScalePoint {
  std::int64_t ranks = 0;
  double expected_max_slowdown = 1;  // expected_max_compute_slowdown
  double expected_loss = 0;          // its excess over 1: the fraction a compute-bound synchronous step loses
};

/// The scaling table at 8, 64, 512, 4,096, 32,768 and 262,144 ranks, with `job_ranks` put in its place.
std::vector<JitterScalePoint> jitter_scaling(const JitterSpec& spec, std::int64_t job_ranks);

}  // namespace orrery
