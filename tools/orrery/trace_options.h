#pragma once
// The --trace-* options of `orrery predict`: which ranks, stages, micro-batches and time window the Chrome trace
// holds, and its event limit (TraceSelection, outputs.h).

#include <CLI/CLI.hpp>

#include <cstdint>
#include <optional>
#include <ostream>
#include <string>

#include "sim/job/job.h"
#include "tools/orrery/outputs.h"

namespace orrery::cli {

struct TraceFlags {
  std::string ranks, stages, microbatches, window;
  std::optional<std::int64_t> max_events;

  /// Registers --trace-ranks, --trace-stages, --trace-microbatches, --trace-window, --trace-max-events.
  void add_to(CLI::App& app);
  /// The first of them given ("--trace-ranks"), or "" when none was.
  std::string first_given() const;
  /// The selection, checked against the job before it runs: ranks below its GPU count, stages below its
  /// pipeline depth, micro-batches below its count per pipeline, a window START_S:END_S in seconds with
  /// 0 <= START < END (either side may be left empty). Errors: Error::invalid naming the option.
  TraceSelection selection(const Job& job) const;
};

/// Warns on `err` when the trace at `path` left events out (which, from when, and how to see them) or has no track
/// for a selected rank.
void warn_about_trace(std::ostream& err, const std::string& path, const TraceSummary& summary,
                      const TraceSelection& selection, const Prediction& prediction);

}  // namespace orrery::cli
