#pragma once
// Observers of a jitter Monte-Carlo (sim/jitter/monte_carlo.h): the `jitter` object of `orrery predict --json` and
// its lines in the readable summary. They read the finished summary and change nothing (ARCHITECTURE.md rule 14).

#include <nlohmann/json.hpp>

#include <ostream>

#include "sim/jitter/monte_carlo.h"

namespace orrery::cli {

/// The `jitter` report object: the inputs, the step's mean and nearest-rank percentiles (seconds), the expected
/// loss (mean / jitter-free - 1), the analytic E[max of N compute slowdowns] by N, and every iteration's step.
nlohmann::json jitter_json(const JitterSummary& summary);

/// A few lines for the text summary.
void print_jitter_summary(std::ostream& out, const JitterSummary& summary);

}  // namespace orrery::cli
