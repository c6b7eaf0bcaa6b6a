#pragma once
// One iteration's draw of every rank's jitter factors (sim/jitter/jitter_spec.h): what the Monte-Carlo sets on the
// rank's engine instance (Instance::compute_slowdown, network_slowdown, start_delay).

#include <cstdint>
#include <vector>

#include "models/units.h"
#include "sim/jitter/jitter_spec.h"
#include "sim/jitter/random.h"

namespace orrery {

struct RankFactors {
  double compute_slowdown = 1.0;  // multiplies the rank's compute durations (speed spread x thermal throttling)
  double network_slowdown = 1.0;  // multiplies its transfers through the network port
  Seconds start_delay = 0;        // its host's late start: launch delay plus garbage-collection pauses
};

/// How many of `ranks` ranks a component of `fraction` hits: round(fraction x ranks), half away from zero.
std::int64_t ranks_hit(double fraction, std::int64_t ranks);

/// Draws the factors of `ranks` ranks (>= 1) for one iteration into `out` (resized), from `rng`. `step` is the
/// jitter-free step in seconds, the exposure of the garbage-collection process. The draws are made in a fixed
/// order (per rank: speed, launch, GC; then the throttled ranks; then the slow-network ranks), so a seed fixes them.
void draw_rank_factors(const JitterSpec& spec, std::int64_t ranks, Seconds step, JitterRandom& rng,
                       std::vector<RankFactors>& out);

}  // namespace orrery
