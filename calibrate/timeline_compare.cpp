#include "calibrate/timeline_compare.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <tuple>

#include "models/error.h"
#include "models/json_fields.h"
#include "sim/task_vocabulary.h"

namespace orrery {

Timeline parse_timeline(const nlohmann::json& doc, const std::string& path) {
  FieldReader in(doc, path);
  Timeline t;
  t.source = in.optional_string("source").value_or("");
  for (const char* key : {"name", "device", "notes", "peak_memory_bytes"}) in.allow(key);
  const nlohmann::json* tasks = in.raw("tasks");
  if (!tasks || !tasks->is_array()) {
    throw Error::invalid(in.field("tasks"), tasks ? describe_json(*tasks) : "missing", "must be a list of tasks");
  }
  for (std::size_t i = 0; i < tasks->size(); ++i) {
    FieldReader r((*tasks)[i], fmt::format("{}.tasks[{}]", path, i));
    TimelineTask x;
    x.rank = static_cast<int>(r.int_or("rank", 0, 0, INT32_MAX));
    x.stream = r.optional_string("stream").value_or("");
    x.kind = r.require_string("kind");
    bool known = false;
    for (TaskKind k : kTaskKinds) known = known || x.kind == to_string(k);
    require(known, r.field("kind"), x.kind, "must be a task kind the simulator writes (gemm, attention, elementwise, ...)");
    x.name = r.require_string("name");
    x.phase = r.optional_string("phase").value_or("");
    x.layer = static_cast<int>(r.int_or("layer", -1, -1, INT32_MAX));
    x.microbatch = static_cast<int>(r.int_or("microbatch", -1, -1, INT32_MAX));
    x.start = r.require_double("start_s");
    x.end = r.require_double("end_s");
    require(x.start >= 0, r.field("start_s"), fmt::format("{}", x.start), "must not be negative");
    require(x.end >= x.start, r.field("end_s"), fmt::format("{}", x.end),
            fmt::format("must not be before start_s ({})", x.start));
    r.allow("stage");
    r.reject_unknown();
    t.tasks.push_back(std::move(x));
  }
  if (const nlohmann::json* memory = in.raw("memory")) {
    if (!memory->is_array()) throw Error::invalid(in.field("memory"), describe_json(*memory), "must be a list");
    for (std::size_t i = 0; i < memory->size(); ++i) {
      const nlohmann::json& m = (*memory)[i];
      if (!m.is_object() || !m.contains("samples") || !m["samples"].is_array()) {
        throw Error::invalid(fmt::format("{}.memory[{}].samples", path, i), "missing", "must be a list of [time_s, bytes]");
      }
      for (const nlohmann::json& s : m["samples"]) {
        if (!s.is_array() || s.size() != 2 || !s[1].is_number()) {
          throw Error::invalid(fmt::format("{}.memory[{}].samples", path, i), describe_json(s), "must hold [time_s, bytes] pairs");
        }
        require(s[1].get<double>() >= 0, fmt::format("{}.memory[{}].samples", path, i), describe_json(s),
                "live bytes must not be negative");
        t.peak_memory = std::max(t.peak_memory, static_cast<Bytes>(s[1].get<double>()));
      }
    }
  }
  in.reject_unknown();
  return t;
}

TimelineComparison compare_timelines(const Timeline& predicted, const Timeline& measured, int misses) {
  TimelineComparison c;
  const auto span = [](const Timeline& t) {
    Seconds first = INFINITY, last = 0;
    for (const TimelineTask& x : t.tasks) {
      first = std::min(first, x.start);
      last = std::max(last, x.end);
    }
    return t.tasks.empty() ? 0.0 : last - first;
  };
  c.iteration = {span(predicted), span(measured)};
  c.predicted_peak = predicted.peak_memory;
  c.measured_peak = measured.peak_memory;
  // The n-th occurrence of (rank, name, phase) in each timeline, in start order.
  using Key = std::tuple<int, std::string, std::string, int>;
  const auto index = [](const Timeline& t) {
    std::vector<std::size_t> order(t.tasks.size());
    for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return t.tasks[a].start < t.tasks[b].start; });
    std::map<std::tuple<int, std::string, std::string>, int> seen;
    std::map<Key, std::size_t> out;
    for (std::size_t i : order) {
      const TimelineTask& x = t.tasks[i];
      const int n = seen[{x.rank, x.name, x.phase}]++;
      out[{x.rank, x.name, x.phase, n}] = i;
    }
    return out;
  };
  const auto p_index = index(predicted), m_index = index(measured);
  for (const auto& [key, pi] : p_index) {
    const auto it = m_index.find(key);
    if (it == m_index.end()) {
      ++c.only_predicted;
      continue;
    }
    const TimelineTask& p = predicted.tasks[pi];
    const TimelineTask& m = measured.tasks[it->second];
    ++c.matched;
    const TimePair d{p.end - p.start, m.end - m.start};
    c.by_kind[p.kind].predicted += d.predicted;
    c.by_kind[p.kind].measured += d.measured;
    c.by_layer[p.layer].predicted += d.predicted;
    c.by_layer[p.layer].measured += d.measured;
    c.largest_misses.push_back({p.name, p.kind, p.phase, p.layer, d});
  }
  for (const auto& [key, mi] : m_index) {
    if (!p_index.contains(key)) ++c.only_measured;
  }
  std::stable_sort(c.largest_misses.begin(), c.largest_misses.end(), [](const TaskMiss& a, const TaskMiss& b) {
    return std::abs(a.time.predicted - a.time.measured) > std::abs(b.time.predicted - b.time.measured);
  });
  if (static_cast<int>(c.largest_misses.size()) > misses) c.largest_misses.resize(static_cast<std::size_t>(misses));
  return c;
}

}  // namespace orrery
