#pragma once
// Lines up a predicted timeline (`orrery predict --timeline`) with a measured one in the same format (the reference
// executor's, `orrery-execute`): tasks are matched by rank, name ("L3 q_proj gemm mb0") and phase, the n-th
// occurrence with the n-th; then durations are summed per op kind and per layer, the iteration time (first start
// to last end) and the peak of the memory samples compared, and the largest per-task misses listed.
//
// Timeline JSON: {"tasks": [{"rank", "stream", "kind", "name", "stage", "layer", "microbatch", "phase", "start_s",
// "end_s"}], "memory": [{"rank", "samples": [[time_s, live_bytes], ...]}]}.

#include <nlohmann/json_fwd.hpp>

#include <map>
#include <string>
#include <vector>

#include "models/units.h"

namespace orrery {

struct TimelineTask {
  int rank = 0, layer = -1, microbatch = -1;
  std::string stream, kind, name, phase;
  Seconds start = 0, end = 0;
};

struct Timeline {
  std::string source;
  std::vector<TimelineTask> tasks;
  Bytes peak_memory = 0;  // largest live bytes over every rank's samples
};

/// Parses a timeline. Errors: Error::invalid naming `path` and the field (missing tasks, a task whose end is
/// before its start, non-numeric times).
Timeline parse_timeline(const nlohmann::json& doc, const std::string& path);

struct TimePair {
  Seconds predicted = 0, measured = 0;
  double error() const { return measured > 0 ? (predicted - measured) / measured : 0; }
};

struct TaskMiss {
  std::string name, kind, phase;
  int layer = -1;
  TimePair time;
};

struct TimelineComparison {
  TimePair iteration;
  Bytes predicted_peak = 0, measured_peak = 0;
  std::map<std::string, TimePair> by_kind;  // summed task durations per kind
  std::map<int, TimePair> by_layer;         // per layer (-1: embedding, head, optimizer)
  std::vector<TaskMiss> largest_misses;     // up to `misses`, largest |predicted - measured| first
  int matched = 0, only_predicted = 0, only_measured = 0;
};

/// Compares the two timelines (see above); `misses` bounds the list of largest misses.
TimelineComparison compare_timelines(const Timeline& predicted, const Timeline& measured, int misses = 10);

}  // namespace orrery
