#include <fmt/format.h>

#include "tools/orrery/outputs.h"

namespace orrery::cli {

using nlohmann::json;

json chrome_trace(const Prediction& p) {
  json events = json::array();
  for (std::size_t i = 0; i < p.instances.instances.size(); ++i) {
    const InstanceRun& run = p.run.instances[i];
    if (!run.recorded) continue;
    const Instance& in = p.instances.instances[i];
    const Program& prog = p.graph.programs[static_cast<std::size_t>(in.program)];
    const int pid = in.representative_rank;
    std::string label = in.rank_count > 1 ? fmt::format("rank {} (stage {}, stands for {} ranks)", pid, in.program, in.rank_count)
                                          : fmt::format("rank {} (stage {})", pid, in.program);
    events.push_back({{"ph", "M"}, {"name", "process_name"}, {"pid", pid}, {"args", {{"name", label}}}});
    events.push_back({{"ph", "M"}, {"name", "process_sort_index"}, {"pid", pid}, {"args", {{"sort_index", pid}}}});
    for (int s = 0; s < kNumStreams; ++s) {
      events.push_back({{"ph", "M"}, {"name", "thread_name"}, {"pid", pid}, {"tid", s},
                        {"args", {{"name", to_string(static_cast<Stream>(s))}}}});
    }
    for (std::size_t t = 0; t < prog.tasks.size(); ++t) {
      const Task& task = prog.tasks[t];
      const TaskTiming& tm = run.timings[t];
      if (tm.end <= tm.start) continue;
      events.push_back({{"ph", "X"},
                        {"pid", pid},
                        {"tid", static_cast<int>(task.stream)},
                        {"name", task_name(prog, task)},
                        {"cat", to_string(task.phase)},
                        {"ts", static_cast<double>(tm.start) / 1000.0},
                        {"dur", static_cast<double>(tm.end - tm.start) / 1000.0},
                        {"args", {{"layer", task.layer}, {"microbatch", task.microbatch}, {"chunk", task.chunk}}}});
    }
    for (const MemorySample& m : run.memory) {
      events.push_back({{"ph", "C"}, {"pid", pid}, {"name", "memory GiB"}, {"ts", static_cast<double>(m.time) / 1000.0},
                        {"args", {{"live", to_GiB(m.live)}}}});
    }
  }
  return {{"traceEvents", events}, {"displayTimeUnit", "ms"}};
}

json timeline_json(const Prediction& p) {
  json tasks = json::array();
  json memory = json::array();
  for (std::size_t i = 0; i < p.instances.instances.size(); ++i) {
    const InstanceRun& run = p.run.instances[i];
    if (!run.recorded) continue;
    const Instance& in = p.instances.instances[i];
    const Program& prog = p.graph.programs[static_cast<std::size_t>(in.program)];
    for (std::size_t t = 0; t < prog.tasks.size(); ++t) {
      const Task& task = prog.tasks[t];
      const TaskTiming& tm = run.timings[t];
      tasks.push_back({{"rank", in.representative_rank},
                       {"stream", to_string(task.stream)},
                       {"kind", to_string(task.kind)},
                       {"name", task_name(prog, task)},
                       {"stage", in.program},
                       {"layer", task.layer},
                       {"microbatch", task.microbatch},
                       {"phase", to_string(task.phase)},
                       {"start_s", from_nanos(tm.start)},
                       {"end_s", from_nanos(tm.end)}});
    }
    json samples = json::array();
    for (const MemorySample& m : run.memory) samples.push_back({from_nanos(m.time), m.live});
    memory.push_back({{"rank", in.representative_rank}, {"stage", in.program}, {"ranks_represented", in.rank_count},
                      {"samples", samples}});
  }
  return {{"source", "orrery simulation"}, {"name", p.report.name}, {"tasks", tasks}, {"memory", memory}};
}

}  // namespace orrery::cli
