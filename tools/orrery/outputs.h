#pragma once
// Observers of a finished prediction (ARCHITECTURE.md rule 14): the readable summary, the JSON report (ARCHITECTURE.md
// "Report"), the Chrome-trace/Perfetto timeline and the timeline JSON. They read the Prediction and never change it.
// The trace and the timeline are streamed as text (tools/orrery/json_stream.h), never built in memory whole.

#include <nlohmann/json.hpp>

#include <cstdint>
#include <limits>
#include <ostream>
#include <vector>

#include "sim/predict.h"
#include "tools/orrery/json_stream.h"

namespace orrery::cli {

/// The report as ARCHITECTURE.md "Report" specifies it, plus model, plan and simulation details.
nlohmann::json report_json(const Prediction& prediction);

/// A readable summary of the report.
void print_summary(std::ostream& out, const Prediction& prediction);

/// What `predict --trace` includes (the --trace-* options). An empty list selects everything.
struct TraceSelection {
  std::vector<int> ranks;         // sorted; a track's rank (without --expand-ranks, the lowest rank it stands for)
  std::vector<int> stages;        // sorted pipeline stages
  std::vector<int> microbatches;  // sorted; when given, per-iteration work (no micro-batch) is left out
  Nanoseconds window_start = 0;   // tasks that overlap [start, end), memory samples inside it
  Nanoseconds window_end = std::numeric_limits<Nanoseconds>::max();
  /// Most events (slices, flow events, memory samples; not the track names) to write; 0: no limit. When the
  /// selection holds more, the trace keeps the events before the time at which the limit is reached, on all
  /// selected tracks, and leaves out the rest. 1,000,000 events make about 150 MB, which Perfetto's UI opens.
  std::int64_t max_events = 1'000'000;
  /// The most --trace-max-events takes: a billion events, about 150 GB, beyond any trace a disk or Perfetto holds
  /// (the whole 4.3-million-event record of SC21's 530B run is 640 MB); above it the flag is refused, not saturated.
  static constexpr std::int64_t kMostEvents = 1'000'000'000;
};

/// What write_chrome_trace wrote and left out.
struct TraceSummary {
  std::int64_t events = 0;    // slices, flow events and memory samples written
  std::int64_t left_out = 0;  // selected events left out by max_events
  Nanoseconds cut = 0;        // when left_out > 0: the events from this time on were left out
  Nanoseconds end = 0;        // the last selected event's time (the iteration's end at most)
  std::vector<int> ranks;          // the ranks the trace has tracks for
  std::vector<int> missing_ranks;  // selected ranks without a track of their own
};

/// Chrome trace (Trace Event Format, loadable in Perfetto and chrome://tracing) of the selected tasks: one process
/// per simulated rank, one thread per stream, each task a complete ("X") event in microseconds, live memory as a
/// counter, and flow events ("s" to "f", bound to the enclosing slices) from each member of a collective to the
/// next member on another track and from each pipeline send to its receive. The top-level "otherData" records the
/// selection and what the limit left out. Streamed to `sink`; errors: those the sink throws.
TraceSummary write_chrome_trace(const TextSink& sink, const Prediction& prediction, const TraceSelection& selection);

/// A sorted list of numbers as the --trace-* options take them: {0, 1, 2, 5} -> "0-2,5".
std::string list_text(const std::vector<int>& list);

/// The timeline contract: "tasks" with rank, stream, kind, name, stage, layer, microbatch, phase, start_s,
/// end_s (seconds), and "memory", each recorded rank's live bytes over time ([seconds, bytes] samples). Streamed to
/// `sink`; errors: those the sink throws.
void write_timeline(const TextSink& sink, const Prediction& prediction);

}  // namespace orrery::cli
