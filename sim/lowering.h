#pragma once
// lower(scenario) -> WorkloadGraph (ARCHITECTURE.md "Data flow"): one program per pipeline stage, built by the schedule
// (sim/pipeline_schedule.h) from the per-layer, embedding/head and data-parallel lowerings in sim/lower/.

#include "hardware/cost_params.h"
#include "sim/scenario.h"
#include "sim/task_vocabulary.h"

namespace orrery {

/// Lowers a validated scenario. `memory` sizes the per-rank workspace, NCCL buffers and framework overhead.
/// Errors: Error::invalid / Error::not_modelled as parse_scenario (a scenario that came through it passes).
WorkloadGraph lower(const Scenario& scenario, const MemoryParams& memory);

}  // namespace orrery
