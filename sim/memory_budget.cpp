#include "sim/memory_budget.h"

#include <fmt/format.h>

#include <algorithm>
#include <vector>

#include "models/error.h"
#include "models/process_memory.h"
#include "sim/lower/context_parallel.h"

namespace orrery {

namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

// Bytes per unit. The engine's exact part is at most 2 bytes per task instance (the pending-predecessor count of a
// task with two or more predecessors) and 32 per recorded task (TaskTiming); the rest was measured with orrery-bench-memory (tools/bench/memory_bench.cpp, peak
// resident memory of 11 predictions, from 981 tasks on 1 rank to 88 million task instances on 16,384 ranks and
// 262,144 ranks) and rounded up: the estimate came out 1.14 to 1.40 times each measured peak, 3.5 for the smallest
// (2026-12-02, g++ 12 Release, after issue 22's engine). Before that engine, llama3-8b on 2^20 GPUs expanded (727
// million task instances) measured 2.1 GiB against 3.05 GiB estimated; it now estimates 4.05 GiB.
constexpr double kGraphBytesPerTask = 96;           // task, edges, op, durations: 71-85 measured
constexpr double kEngineBytesPerTaskInstance = 3;    // pending count: 2 or none
// instance, groups, lanes, queues, live memory: with issue 22's engine's actions (72 bytes for each paced stream, 7
// in the measured cases) 1,700-4,600 measured, the most where the graph is smallest (262,144 ranks of 127 tasks)
constexpr double kEngineBytesPerInstance = 1536;
constexpr double kEngineBytesPerPacedStream = 72;  // one Action (sim/engine/engine.cpp) per instance
constexpr double kBytesPerRecordedTask = 56;         // timings and memory samples: about 48
constexpr double kBaseBytes = 16.0 * 1024 * 1024;    // program, presets, cost tables: 4 MiB measured

std::string gib(double bytes) { return fmt::format("{:.3g} GiB", bytes / kGiB); }

}  // namespace

std::int64_t default_memory_budget() {
  constexpr std::int64_t kStated = std::int64_t{16} << 30;
  const std::int64_t physical = physical_memory_bytes();
  return physical > 0 ? std::min(kStated, physical / 4 * 3) : kStated;
}

double estimated_tasks(const Scenario& s) {
  const ParallelPlan& p = s.parallel;
  const double per_layer = 48.0 + cp_extra_tasks_per_layer(p);
  const double layers = static_cast<double>(s.model.num_layers) + s.model.mtp_num_layers;  // MTP depths are layers too
  return 2.0 * s.num_microbatches() * (per_layer * layers + 40.0 * p.pp * p.vpp);
}

double estimated_graph_bytes(double tasks) { return kGraphBytesPerTask * tasks; }

double estimated_engine_bytes(double task_instances, double instances, double recorded_tasks, int paced) {
  return kBaseBytes + kEngineBytesPerTaskInstance * task_instances +
         (kEngineBytesPerInstance + kEngineBytesPerPacedStream * paced) * instances + kBytesPerRecordedTask * recorded_tasks;
}

int paced_streams(const WorkloadGraph& graph) {
  constexpr std::uint8_t kPaced = demand_bits::kSmCompute | demand_bits::kPortSend | demand_bits::kPortReceive;
  std::vector<bool> paced(graph.streams.size(), false);
  for (const Program& p : graph.programs) {
    for (std::size_t t = 0; t < p.demands.size(); ++t) {
      if (p.demands[t] & kPaced) paced[p.tasks[t].stream] = true;
    }
  }
  return static_cast<int>(std::count(paced.begin(), paced.end(), true));
}

void check_memory_estimate(double bytes, std::int64_t budget, const std::string& what) {
  if (budget <= 0 || bytes <= static_cast<double>(budget)) return;
  throw Error::invalid("--memory-budget", gib(static_cast<double>(budget)),
                       fmt::format("is below the {} estimated for {}; raise it (up to the machine's memory) or "
                                   "simulate less (one rank per stage, fewer micro-batches)",
                                   gib(bytes), what));
}

}  // namespace orrery
