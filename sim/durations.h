#pragma once
// Prices every task of a workload graph with the cost models (ARCHITECTURE.md "Data flow").

#include <vector>

#include "hardware/collective_cost.h"
#include "hardware/compute_cost.h"
#include "hardware/cost_params.h"
#include "sim/engine/engine.h"
#include "sim/scenario.h"
#include "sim/task_vocabulary.h"

namespace orrery {

struct CostModels {
  const ComputeCostModel& compute;
  const CollectiveCostModel& network;
};

/// Seconds for one operation under the cost models.
Seconds op_duration(const Op& op, const CostModels& models);

/// CPU seconds a rank's host spends issuing one kernel, by the phase of the task it belongs to (sim/engine/engine.h's
/// host timeline). All zero: the host is never behind.
struct HostIssue {
  Seconds forward = 0;    // forward and recomputed forward
  Seconds backward = 0;   // backward (input and weight gradients)
  Seconds optimizer = 0;  // optimizer step, gradient norm, clipping
  Seconds library = 0;    // a launch from a library's C++ loop (TaskKind::kCommCopy), whatever the phase
  /// The cost per launch of a task of `kind` in `phase`.
  Seconds of(TaskKind kind, Phase phase) const;
  bool any() const { return forward > 0 || backward > 0 || optimizer > 0 || library > 0; }
};

/// The per-kernel CPU costs of the software that runs the step: PyTorch eager's per phase for `pytorch` and `fsdp2`
/// (torchtitan's eager modules); the launch call alone, a lower bound, for the Megatron frameworks (HostIssueCosts).
HostIssue host_issue_costs(const HostIssueCosts& costs, Framework framework);

/// Kernels and collective calls the host launches for `op`: one per kernel (a grouped GEMM's batch, a memory-bound
/// task's `kernels`), one per collective or copy, none for an op with no work (nothing is launched).
std::int64_t host_launches(const Op& op);

/// Durations of every distinct operation of every program; with `host`, also each task's CPU issue time
/// (Durations::issue_seconds = host_launches x host.of(kind, phase)).
Durations price_graph(const WorkloadGraph& graph, const CostModels& models, const HostIssue& host = {});
/// The same with each program priced by its own models (`per_program[i]` for graph.programs[i], one per program):
/// the stages of a mixed cluster, each on its pool's GPU and fabric. Errors: std::out_of_range when `per_program`
/// is shorter than the graph's programs.
Durations price_graph(const WorkloadGraph& graph, const std::vector<CostModels>& per_program, const HostIssue& host = {});

}  // namespace orrery
