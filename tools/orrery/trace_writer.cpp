// `predict --trace`: the Chrome trace, streamed event by event, with the selection and the event limit of
// TraceSelection (outputs.h).
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <utility>

#include "tools/orrery/outputs.h"

namespace orrery::cli {

namespace {

bool selects(const std::vector<int>& list, int value) {
  return list.empty() || std::binary_search(list.begin(), list.end(), value);
}

// Which tasks and memory samples the trace takes: the selection, tasks that ran (zero-length ones draw nothing),
// and, once the limit is known, only events before `cut`.
struct Filter {
  const Prediction& p;
  const TraceSelection& s;
  std::vector<char> on;  // per instance: recorded and selected
  Nanoseconds cut = std::numeric_limits<Nanoseconds>::max();

  Filter(const Prediction& prediction, const TraceSelection& selection) : p(prediction), s(selection) {
    for (std::size_t i = 0; i < p.instances.instances.size(); ++i) {
      const Instance& in = p.instances.instances[i];
      on.push_back(p.run.instances[i].recorded && selects(s.ranks, in.representative_rank) && selects(s.stages, in.program));
    }
  }
  const Program& program(std::size_t i) const {
    return p.graph.programs[static_cast<std::size_t>(p.instances.instances[i].program)];
  }
  bool task(std::size_t i, std::size_t t) const {
    if (!on[i]) return false;
    const TaskTiming& tm = p.run.instances[i].timings[t];
    return tm.end > tm.start && tm.start < cut && tm.end > s.window_start && tm.start < s.window_end &&
           (s.microbatches.empty() || std::binary_search(s.microbatches.begin(), s.microbatches.end(), program(i).tasks[t].microbatch));
  }
  bool sample(const MemorySample& m) const { return m.time >= s.window_start && m.time < s.window_end && m.time < cut; }
};

// The flows that join the members of each rendezvous across tracks. A rendezvous is group g's tasks of one issue
// order q (Task::group_seq), as the engine matches them; its members run in flow order, a pipeline sender before its
// receiver, else by rank. A flow runs from each member the filter takes to the next one it takes; its id,
// base[g] + q * members + position of its start, is unique in the trace and the same at both ends.
class Flows {
 public:
  explicit Flows(const Prediction& p)
      : graph_(p.graph), inst_(p.instances), kinds_(p.graph.group_kinds.size()),
        by_seq_(p.graph.programs.size(), std::vector<std::vector<std::int32_t>>(kinds_)) {
    for (std::size_t prog = 0; prog < p.graph.programs.size(); ++prog) {
      const std::vector<Task>& tasks = p.graph.programs[prog].tasks;
      for (std::size_t t = 0; t < tasks.size(); ++t) {
        if (!tasks[t].is_rendezvous() || tasks[t].group_seq < 0) continue;
        std::vector<std::int32_t>& row = by_seq_[prog][static_cast<std::size_t>(tasks[t].group)];
        const auto q = static_cast<std::size_t>(tasks[t].group_seq);
        if (row.size() <= q) row.resize(q + 1, -1);
        row[q] = static_cast<std::int32_t>(t);
      }
    }
    members_.resize(inst_.group_size.size());
    for (std::size_t i = 0; i < inst_.instances.size(); ++i) {
      for (std::size_t k = 1; k < kinds_; ++k) {
        const std::int32_t g = inst_.group(i, static_cast<std::uint8_t>(k));
        if (g >= 0 && inst_.group_size[static_cast<std::size_t>(g)] > 1) members_[static_cast<std::size_t>(g)].push_back({i, static_cast<std::uint8_t>(k)});
      }
    }
    position_.assign(inst_.group_of.size(), -1);
    std::uint64_t next = 0;
    for (std::vector<Member>& m : members_) {
      std::stable_partition(m.begin(), m.end(), [&](const Member& x) {
        const GroupKindInfo& kind = graph_.group_kinds[x.kind];
        return kind.pair >= 0 && kind.sends;
      });
      for (std::size_t pos = 0; pos < m.size(); ++pos) position_[slot(m[pos].instance, m[pos].kind)] = static_cast<std::int32_t>(pos);
      base_.push_back(next);
      std::size_t rendezvous = 0;
      for (const Member& x : m) rendezvous = std::max(rendezvous, row(x).size());
      next += rendezvous * m.size();
    }
  }

  struct Links {
    std::int64_t in = -1, out = -1;  // ids of the flows that end and start at this task; -1: none
    int count() const { return (in >= 0 ? 1 : 0) + (out >= 0 ? 1 : 0); }
  };

  // The flows of task `t` of instance `i`, among the tasks `filter` takes.
  Links links(std::size_t i, const Task& t, const Filter& filter) const {
    if (!t.is_rendezvous() || t.group_seq < 0) return {};
    const std::int32_t pos = position_[slot(i, t.group)];
    if (pos < 0) return {};
    const auto g = static_cast<std::size_t>(inst_.group(i, t.group));
    const std::vector<Member>& m = members_[g];
    const auto q = static_cast<std::size_t>(t.group_seq);
    const auto taken = [&](const Member& x) {
      const std::vector<std::int32_t>& r = row(x);
      return q < r.size() && r[q] >= 0 && filter.task(x.instance, static_cast<std::size_t>(r[q]));
    };
    const std::int64_t first = static_cast<std::int64_t>(base_[g] + q * m.size());
    Links l;
    for (std::int32_t j = pos - 1; j >= 0 && l.in < 0; --j) {
      if (taken(m[static_cast<std::size_t>(j)])) l.in = first + j;
    }
    for (auto j = static_cast<std::size_t>(pos) + 1; j < m.size() && l.out < 0; ++j) {
      if (taken(m[j])) l.out = first + pos;
    }
    return l;
  }

 private:
  struct Member {
    std::size_t instance;
    std::uint8_t kind;  // WorkloadGraph::group_kinds index
  };
  const WorkloadGraph& graph_;
  const Instantiation& inst_;
  std::size_t kinds_;
  std::vector<std::vector<std::vector<std::int32_t>>> by_seq_;  // [program][kind][q] -> task
  std::vector<std::vector<Member>> members_;  // per group, in flow order
  std::vector<std::int32_t> position_;        // [instance * kinds + kind] -> position in its group's members
  std::vector<std::uint64_t> base_;           // per group: its first flow id

  std::size_t slot(std::size_t i, std::uint8_t k) const { return i * kinds_ + k; }
  const std::vector<std::int32_t>& row(const Member& x) const {
    return by_seq_[static_cast<std::size_t>(inst_.instances[x.instance].program)][static_cast<std::size_t>(x.kind)];
  }
};

// A flow's name: its group kind's, the sending kind's for a point-to-point pair, so both ends carry the same one.
const std::string& flow_name(const WorkloadGraph& graph, std::uint8_t k) {
  const GroupKindInfo& kind = graph.group_kinds[k];
  return kind.pair >= 0 && !kind.sends ? graph.group_kinds[static_cast<std::size_t>(kind.pair)].name : kind.name;
}

// The time from which events must be left out so that at most `limit` remain: the events are counted in 2^20 time
// buckets, which needs no copy of their times; the cut falls on a bucket edge, so the trace may keep a little fewer
// than `limit`.
class Cutter {
 public:
  Cutter(Nanoseconds makespan, bool on) : width_(makespan / kBuckets + 1), counts_(on ? kBuckets : 0, 0) {}
  void add(Nanoseconds time, int events) {
    if (counts_.empty()) return;
    const auto b = std::min(static_cast<std::size_t>(std::max<Nanoseconds>(time, 0) / width_), kBuckets - 1);
    counts_[b] += events;
  }
  Nanoseconds cut(std::int64_t limit) const {
    std::int64_t kept = 0;
    for (std::size_t b = 0; b < counts_.size(); ++b) {
      if (kept + counts_[b] > limit) return static_cast<Nanoseconds>(b) * width_;
      kept += counts_[b];
    }
    return std::numeric_limits<Nanoseconds>::max();
  }

 private:
  static constexpr std::size_t kBuckets = std::size_t{1} << 20;
  Nanoseconds width_;
  std::vector<std::int64_t> counts_;
};

void write_track_names(JsonStream& out, const WorkloadGraph& graph, const Instance& in, bool& first) {
  const int pid = in.representative_rank;
  const std::string label = in.rank_count > 1 ? fmt::format("rank {} (stage {}, stands for {} ranks)", pid, in.program, in.rank_count)
                                              : fmt::format("rank {} (stage {})", pid, in.program);
  out.print("{}{{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":{},\"args\":{{\"name\":", first ? "\n" : ",\n", pid);
  out.quoted(label);
  out.print("}}}},\n{{\"ph\":\"M\",\"name\":\"process_sort_index\",\"pid\":{},\"args\":{{\"sort_index\":{}}}}}", pid, pid);
  for (std::size_t s = 0; s < graph.streams.size(); ++s) {
    out.print(",\n{{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":{},\"tid\":{},\"args\":{{\"name\":\"{}\"}}}}", pid, s,
              graph.streams[s].name);
  }
  first = false;
}

// One task's slice and flow events; returns how many events it wrote.
int write_task(JsonStream& out, int pid, const WorkloadGraph& graph, const Program& prog, const Task& task, const TaskTiming& tm, const Flows::Links& l) {
  const int tid = static_cast<int>(task.stream);
  out.print(",\n{{\"ph\":\"X\",\"pid\":{},\"tid\":{},\"name\":", pid, tid);
  out.quoted(task_name(prog, task));
  out.print(",\"cat\":\"{}\",\"ts\":", to_string(task.phase));
  out.micros(tm.start);
  out.print(",\"dur\":");
  out.micros(tm.end - tm.start);
  out.print(",\"args\":{{\"layer\":{},\"microbatch\":{},\"chunk\":{}}}}}", task.layer, task.microbatch, task.chunk);
  const auto flow = [&](const char* ph, const char* bind, std::int64_t id) {
    out.print(",\n{{\"ph\":\"{}\"{},\"id\":{},\"pid\":{},\"tid\":{},\"name\":\"{}\",\"cat\":\"flow\",\"ts\":", ph, bind, id, pid,
              tid, flow_name(graph, task.group));
    out.micros(tm.start);
    out.print("}}");
  };
  if (l.in >= 0) flow("f", ",\"bp\":\"e\"", l.in);
  if (l.out >= 0) flow("s", "", l.out);
  return 1 + l.count();
}

std::string all_or(const std::vector<int>& list) { return list.empty() ? "all" : list_text(list); }

// How many events the selection holds (before the limit), and when the limit of `max_events` cuts them.
std::pair<std::int64_t, Nanoseconds> count_events(const Prediction& p, const Filter& filter, const Flows& flows) {
  std::int64_t total = 0;
  Cutter cutter(p.run.makespan, filter.s.max_events > 0);
  for (std::size_t i = 0; i < p.instances.instances.size(); ++i) {
    if (!filter.on[i]) continue;
    const Program& prog = filter.program(i);
    const InstanceRun& run = p.run.instances[i];
    for (std::size_t t = 0; t < prog.tasks.size(); ++t) {
      if (!filter.task(i, t)) continue;
      const int events = 1 + flows.links(i, prog.tasks[t], filter).count();
      total += events;
      cutter.add(run.timings[t].start, events);
    }
    for (const MemorySample& m : run.memory) {
      if (!filter.sample(m)) continue;
      ++total;
      cutter.add(m.time, 1);
    }
  }
  const bool over = filter.s.max_events > 0 && total > filter.s.max_events;
  return {total, over ? cutter.cut(filter.s.max_events) : std::numeric_limits<Nanoseconds>::max()};
}

// One track's events: its names, its tasks with their flows, its memory samples. Returns how many it wrote.
std::int64_t write_track(JsonStream& out, const Prediction& p, const Filter& filter, const Flows& flows, std::size_t i,
                         bool& first) {
  const Instance& in = p.instances.instances[i];
  const Program& prog = filter.program(i);
  const InstanceRun& run = p.run.instances[i];
  write_track_names(out, p.graph, in, first);
  std::int64_t events = 0;
  for (std::size_t t = 0; t < prog.tasks.size(); ++t) {
    if (!filter.task(i, t)) continue;
    const Task& task = prog.tasks[t];
    events += write_task(out, in.representative_rank, p.graph, prog, task, run.timings[t], flows.links(i, task, filter));
  }
  for (const MemorySample& m : run.memory) {
    if (!filter.sample(m)) continue;
    out.print(",\n{{\"ph\":\"C\",\"pid\":{},\"name\":\"memory GiB\",\"ts\":", in.representative_rank);
    out.micros(m.time);
    out.print(",\"args\":{{\"live\":");
    out.number(to_GiB(m.live));
    out.print("}}}}");
    ++events;
  }
  return events;
}

// The top-level "otherData": the selection, and what the limit left out.
void write_other_data(JsonStream& out, const Prediction& p, const TraceSelection& s, const TraceSummary& summary) {
  out.print("\"otherData\":{{\"generator\":\"orrery predict --trace\",\"scenario\":");
  out.quoted(p.report.name);
  const std::string window =
      s.window_end == std::numeric_limits<Nanoseconds>::max() ? fmt::format("from {} s on", from_nanos(s.window_start))
                                                              : fmt::format("{} s to {} s", from_nanos(s.window_start), from_nanos(s.window_end));
  out.print(",\"ranks\":\"{}\",\"stages\":\"{}\",\"microbatches\":\"{}\",\"window\":\"{}\",\"max_events\":{},\"events\":{},"
            "\"events_left_out\":{}",
            all_or(s.ranks), all_or(s.stages), all_or(s.microbatches), window, s.max_events, summary.events,
            summary.left_out);
  if (summary.left_out > 0) {
    out.print(",\"left_out\":\"the {} events from {} s on (the iteration ends at {} s): more with --trace-max-events, "
              "or select fewer with --trace-ranks, --trace-stages, --trace-microbatches or --trace-window\"",
              summary.left_out, from_nanos(summary.cut), from_nanos(p.run.makespan));
  }
  out.print("}}");
}

}  // namespace

std::string list_text(const std::vector<int>& list) {
  std::string out;
  for (std::size_t i = 0; i < list.size(); ++i) {
    std::size_t j = i;
    while (j + 1 < list.size() && list[j + 1] == list[j] + 1) ++j;
    if (!out.empty()) out += ',';
    out += j > i ? fmt::format("{}-{}", list[i], list[j]) : std::to_string(list[i]);
    i = j;
  }
  return out;
}

TraceSummary write_chrome_trace(const TextSink& sink, const Prediction& p, const TraceSelection& s) {
  Filter filter(p, s);
  const Flows flows(p);
  // Two passes over the tasks: the first counts the events and finds the cut, the second writes.
  const auto [total, cut] = count_events(p, filter, flows);
  filter.cut = cut;
  TraceSummary summary;
  JsonStream out(sink);
  out.print("{{\"traceEvents\":[");
  bool first = true;
  for (std::size_t i = 0; i < p.instances.instances.size(); ++i) {
    if (!filter.on[i]) continue;
    summary.ranks.push_back(p.instances.instances[i].representative_rank);
    summary.events += write_track(out, p, filter, flows, i, first);
  }
  summary.left_out = total - summary.events;
  if (summary.left_out > 0) {
    summary.cut = cut;
    // A global instant event marks where the trace stops, so the viewer shows the cut.
    out.print("{}{{\"ph\":\"i\",\"s\":\"g\",\"pid\":{},\"tid\":0,\"name\":\"orrery: events from here on left out "
              "(--trace-max-events)\",\"ts\":",
              first ? "\n" : ",\n", summary.ranks.empty() ? 0 : summary.ranks.front());
    out.micros(cut);
    out.print("}}");
  }
  // Tracks come in instance order, which is rank order: sorted.
  for (int r : s.ranks) {
    if (!std::binary_search(summary.ranks.begin(), summary.ranks.end(), r)) summary.missing_ranks.push_back(r);
  }
  out.print("\n],\n\"displayTimeUnit\":\"ms\",\n");
  write_other_data(out, p, s, summary);
  out.print("}}\n");
  out.flush();
  return summary;
}

}  // namespace orrery::cli
