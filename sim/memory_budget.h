#pragma once
// The memory budget of one prediction: an estimate from counts before the work (graph, instances, engine state),
// refused at once when above the budget. While it runs, the engine watches the process's resident memory against
// the same budget (RunOptions::memory_budget), so that a run the estimate let through stops with an error instead
// of being killed by the operating system.

#include <cstdint>
#include <string>

#include "sim/scenario.h"
#include "sim/task_vocabulary.h"

namespace orrery {

/// Stated default: 16 GiB, or three quarters of the machine's physical memory when that is less (the rest is the
/// operating system's and other processes'). `predict --memory-budget GIB` changes it.
std::int64_t default_memory_budget();

/// Tasks the lowering will emit for `s` (validated sizes): about 48 per layer and step (more under CP), two steps
/// (forward, backward) per micro-batch and chunk, plus per-stage work. An upper estimate: about the count for MoE
/// layers, up to 2.7x it for dense ones (tests/sim/memory_budget_test.cpp); it bounds limits::kTasks before
/// lowering.
double estimated_tasks(const Scenario& s);

/// Bytes of the workload graph for `tasks` tasks: the task, its dependency edges and its op (measured, see .cpp).
double estimated_graph_bytes(double tasks);

/// Bytes the engine holds for `instances` simulated instances running `task_instances` tasks in all, of which
/// `recorded_tasks` keep their timings (RunOptions::record_budget), plus the instantiation's groups. The engine keeps
/// one action per instance for each stream with paced tasks (paced_streams(); 7 is a dense job's usual count).
double estimated_engine_bytes(double task_instances, double instances, double recorded_tasks, int paced_streams = 7);

/// The streams of `graph` with a task some resource model may pace (its compute, or the network port): the rows of
/// actions the engine keeps per instance.
int paced_streams(const WorkloadGraph& graph);

/// Errors: Error::invalid naming --memory-budget when `bytes` is above `budget` (bytes; 0: no budget). `what`
/// says whose estimate it is, e.g. "--expand-ranks (1048576 ranks)".
void check_memory_estimate(double bytes, std::int64_t budget, const std::string& what);

}  // namespace orrery
