#pragma once
// Prices every task of a workload graph with the cost models (DESIGN.md: simulate(WorkloadGraph, CostModels)).

#include "hardware/collective_cost.h"
#include "hardware/compute_cost.h"
#include "sim/engine.h"
#include "sim/workload_graph.h"

namespace orrery {

struct CostModels {
  const ComputeCostModel& compute;
  const CollectiveCostModel& network;
};

/// Seconds for one operation under the cost models.
Seconds op_duration(const Op& op, const CostModels& models);

/// Durations of every distinct operation of every program.
Durations price_graph(const WorkloadGraph& graph, const CostModels& models);

}  // namespace orrery
