// `predict --timeline`: the simulated timeline (tools/orrery/outputs.h), streamed task by task.
#include "tools/orrery/outputs.h"

namespace orrery::cli {

void write_timeline(const TextSink& sink, const Prediction& p) {
  JsonStream out(sink);
  out.print("{{\"source\":\"orrery simulation\",\"name\":");
  out.quoted(p.report.name);
  out.print(",\"tasks\":[");
  bool first = true;
  for (std::size_t i = 0; i < p.instances.instances.size(); ++i) {
    const InstanceRun& run = p.run.instances[i];
    if (!run.recorded) continue;
    const Instance& in = p.instances.instances[i];
    const Program& prog = p.graph.programs[static_cast<std::size_t>(in.program)];
    for (std::size_t t = 0; t < prog.tasks.size(); ++t) {
      const Task& task = prog.tasks[t];
      const TaskTiming& tm = run.timings[t];
      out.print("{}{{\"rank\":{},\"stream\":\"{}\",\"kind\":\"{}\",\"name\":", first ? "\n" : ",\n", in.representative_rank,
                p.graph.streams[task.stream].name, to_string(task.kind));
      out.quoted(task_name(prog, task));
      out.print(",\"stage\":{},\"layer\":{},\"microbatch\":{},\"phase\":\"{}\",\"start_s\":", in.program, task.layer,
                task.microbatch, to_string(task.phase));
      out.number(from_nanos(tm.start));
      out.print(",\"end_s\":");
      out.number(from_nanos(tm.end));
      out.print("}}");
      first = false;
    }
  }
  out.print("\n],\"memory\":[");
  first = true;
  for (std::size_t i = 0; i < p.instances.instances.size(); ++i) {
    const InstanceRun& run = p.run.instances[i];
    if (!run.recorded) continue;
    const Instance& in = p.instances.instances[i];
    out.print("{}{{\"rank\":{},\"stage\":{},\"ranks_represented\":{},\"samples\":[", first ? "\n" : ",\n",
              in.representative_rank, in.program, in.rank_count);
    for (std::size_t k = 0; k < run.memory.size(); ++k) {
      out.print("{}[", k > 0 ? "," : "");
      out.number(from_nanos(run.memory[k].time));
      out.print(",{}]", run.memory[k].live);
    }
    out.print("]}}");
    first = false;
  }
  out.print("\n]}}\n");
  out.flush();
}

}  // namespace orrery::cli
