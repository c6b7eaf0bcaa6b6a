#include "sim/plan/step_energy.h"

#include <algorithm>
#include <array>

#include "models/error.h"

namespace orrery {

namespace {

enum Activity { kTensor, kMemory, kCommunication, kNone };

Activity activity_of(TaskKind kind) {
  switch (kind) {
    case TaskKind::kGemm:
    case TaskKind::kAttention: return kTensor;
    case TaskKind::kElementwise:
    case TaskKind::kOptimizer:
    case TaskKind::kCommCopy: return kMemory;
    case TaskKind::kCollective:
    case TaskKind::kSendRecv: return kCommunication;
    case TaskKind::kHostSync:
    case TaskKind::kHostOp: return kNone;
  }
  return kNone;
}

}  // namespace

StateSeconds state_seconds(const Program& program, const InstanceRun& run, Nanoseconds step) {
  struct Edge {
    Nanoseconds time;
    int activity;
    int delta;
  };
  std::vector<Edge> edges;
  edges.reserve(2 * program.tasks.size());
  for (std::size_t i = 0; i < program.tasks.size(); ++i) {
    const Activity a = activity_of(program.tasks[i].kind);
    const TaskTiming& t = run.timings[i];
    const Nanoseconds start = std::min(t.start, step), end = std::min(t.end, step);
    if (a == kNone || end <= start) continue;
    edges.push_back({start, a, +1});
    edges.push_back({end, a, -1});
  }
  std::sort(edges.begin(), edges.end(), [](const Edge& x, const Edge& y) { return x.time < y.time; });
  std::array<int, 3> active{};
  std::array<Nanoseconds, 4> spent{};
  Nanoseconds now = 0;
  std::size_t e = 0;
  while (now < step) {
    for (; e < edges.size() && edges[e].time <= now; ++e) active[static_cast<std::size_t>(edges[e].activity)] += edges[e].delta;
    const Nanoseconds next = e < edges.size() ? std::min(edges[e].time, step) : step;
    const int state = active[kTensor] > 0 ? kTensor
                      : active[kMemory] > 0 ? kMemory
                      : active[kCommunication] > 0 ? kCommunication
                                                   : kNone;
    spent[static_cast<std::size_t>(state)] += next - now;
    now = next;
  }
  return {from_nanos(spent[kTensor]), from_nanos(spent[kMemory]), from_nanos(spent[kCommunication]),
          from_nanos(spent[kNone])};
}

double state_joules(const StateSeconds& s, const GpuPower& power) {
  // Memory-bound kernels and communication overlap in the memory state; the power model adds them only where the
  // timeline says both run, which the exclusive states do not keep, so the memory state is priced alone (the
  // communication fraction is a tenth of the memory one).
  return s.tensor * power.watts({.tensor = true}) + s.memory * power.watts({.memory = true}) +
         s.communication * power.watts({.communication = true}) + s.idle * power.watts({});
}

StepEnergy step_energy(const WorkloadGraph& graph, const Instantiation& instances, const RunResult& run,
                       Nanoseconds step, const GpuPower& power) {
  return step_energy(graph, instances, run, step, std::vector<GpuPower>(graph.programs.size(), power));
}

StepEnergy step_energy(const WorkloadGraph& graph, const Instantiation& instances, const RunResult& run,
                       Nanoseconds step, const std::vector<GpuPower>& per_program) {
  StepEnergy out;
  out.step = from_nanos(step);
  // The figures of each program's first recorded instance, for the instances of that program not recorded.
  std::vector<int> recorded_of(graph.programs.size(), -1);
  for (std::size_t i = 0; i < instances.instances.size(); ++i) {
    const int p = instances.instances[i].program;
    if (run.instances[i].recorded && recorded_of[static_cast<std::size_t>(p)] < 0) recorded_of[static_cast<std::size_t>(p)] = static_cast<int>(i);
  }
  // Each recorded instance's states, swept once; the others take their stage representative's.
  std::vector<StateSeconds> seconds_of(instances.instances.size());
  for (std::size_t i = 0; i < instances.instances.size(); ++i) {
    const auto p = static_cast<std::size_t>(instances.instances[i].program);
    if (run.instances[i].recorded) seconds_of[i] = state_seconds(graph.programs[p], run.instances[i], step);
  }
  for (std::size_t p = 0; p < graph.programs.size(); ++p) {
    if (recorded_of[p] < 0) {
      throw Error::invalid("energy", "pipeline stage " + std::to_string(p), "has no recorded instance to integrate power over");
    }
    StageEnergy stage;
    stage.stage = graph.programs[p].stage;
    const auto rep = static_cast<std::size_t>(recorded_of[p]);
    stage.seconds = seconds_of[rep];
    stage.joules_per_gpu = state_joules(stage.seconds, per_program.at(p));
    stage.average_power_W = out.step > 0 ? stage.joules_per_gpu / out.step : 0;
    out.stages.push_back(stage);
  }
  double gpus = 0;
  for (std::size_t i = 0; i < instances.instances.size(); ++i) {
    const Instance& inst = instances.instances[i];
    const auto p = static_cast<std::size_t>(inst.program);
    const StateSeconds& s = run.instances[i].recorded ? seconds_of[i] : out.stages[p].seconds;
    out.gpu_joules += state_joules(s, per_program.at(p)) * inst.rank_count;
    out.gpu_seconds.tensor += s.tensor * inst.rank_count;
    out.gpu_seconds.memory += s.memory * inst.rank_count;
    out.gpu_seconds.communication += s.communication * inst.rank_count;
    out.gpu_seconds.idle += s.idle * inst.rank_count;
    out.stages[p].ranks += inst.rank_count;
    gpus += inst.rank_count;
  }
  out.average_gpu_power_W = gpus > 0 && out.step > 0 ? out.gpu_joules / (gpus * out.step) : 0;
  return out;
}

}  // namespace orrery
