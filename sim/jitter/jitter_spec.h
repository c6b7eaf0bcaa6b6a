#pragma once
// The scenario's `jitter` section: stochastic stragglers and noise, sampled per rank and per iteration by a seeded
// Monte-Carlo over engine runs (sim/jitter/monte_carlo.h). Every component defaults to off, so a `jitter` object
// that names only `seed` and `iterations` predicts the jitter-free step; scenarios/README.md "jitter" lists the
// keys with the published figures to set them from. Plain struct, read by parse_jitter (ARCHITECTURE.md rule 7).

#include <nlohmann/json_fwd.hpp>

#include <cstdint>
#include <string>

#include "models/units.h"

namespace orrery {

struct JitterSpec {
  /// Seed of the sampler (xoshiro256**, sim/jitter/random.h): the same seed gives byte-identical output.
  std::uint64_t seed = 1;
  /// Monte-Carlo samples: each is one engine run of one iteration with every rank's factors drawn afresh. The
  /// default 16 is an assumption (enough for the mean within a few per cent of the spread), not a published figure.
  int iterations = 16;
  /// Per-rank compute speed: a rank's compute takes exp(compute_sigma x |Z|) times as long, Z standard normal, i.e.
  /// a lognormal of median 1 folded at 1 (a rank is never faster than the cost model, as `stragglers` require).
  /// 0: none.
  double compute_sigma = 0;
  /// Thermal throttling: round(thermal_fraction x ranks) ranks, chosen afresh each iteration, run their compute at
  /// thermal_clock_factor of the clock (compute slowdown 1 / factor; memory-bound kernels are stretched too, which
  /// is pessimistic for them). 0: none.
  double thermal_fraction = 0;
  double thermal_clock_factor = 1;
  /// Slow links or NICs: round(network_fraction x ranks) ranks, chosen afresh each iteration, whose transfers that
  /// leave the NVLink domain take network_slowdown times as long (a rendezvous waits for its slowest member).
  double network_fraction = 0;
  double network_slowdown = 1;
  /// Launch jitter: each rank's host starts issuing the iteration late by an exponential delay of this mean (an
  /// assumption on the shape: the sources give no distribution). 0: none.
  Seconds launch_delay_mean = 0;
  /// Garbage-collection pauses: Python's GC stalls a rank's host for gc_pause each time it runs; runs arrive as a
  /// Poisson process of gc_rate_per_s over the jitter-free step, and the rank's stalls of one iteration are taken
  /// before it (a stall in the middle of a step costs a synchronous job about the same; the engine holds the
  /// instance's host back, Instance::start_delay). 0: none.
  double gc_rate_per_s = 0;
  Seconds gc_pause = 0;

  /// True when no component is on: every sample is the jitter-free step.
  bool identity() const {
    return compute_sigma == 0 && (thermal_fraction == 0 || thermal_clock_factor == 1) &&
           (network_fraction == 0 || network_slowdown == 1) && launch_delay_mean == 0 &&
           (gc_rate_per_s == 0 || gc_pause == 0);
  }
};

/// Reads a `jitter` object at `field` ("jitter"). Keys: seed, iterations, and the optional objects compute
/// {sigma}, thermal {fraction, clock_factor}, network {fraction, slowdown}, launch {mean_delay_s}, gc {rate_per_s,
/// pause_s}. Errors: Error::invalid naming the field, its value and the rule, for an unknown key, a value out of
/// its range, or a fraction without its factor.
JitterSpec parse_jitter(const nlohmann::json& value, const std::string& field);

}  // namespace orrery
