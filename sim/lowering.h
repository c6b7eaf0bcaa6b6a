#pragma once
// lower(job) -> WorkloadGraph (ARCHITECTURE.md "Data flow"): one program per pipeline stage, built by the schedule
// (sim/pipeline_schedule.h) from the per-layer, embedding/head and data-parallel lowerings in sim/lower/.

#include "hardware/cost_params.h"
#include "sim/job/job.h"
#include "sim/scenario.h"
#include "sim/task_vocabulary.h"

namespace orrery {

/// Lowers a resolved job. `memory` sizes the per-rank workspace, NCCL buffers and framework overhead.
/// Errors: Error::not_modelled for features a lowering refuses (a job whose scenario parse_scenario accepts passes).
WorkloadGraph lower(const Job& job, const MemoryParams& memory);

/// lower(resolve(scenario), memory). Errors: resolve()'s, then lower()'s.
WorkloadGraph lower(const Scenario& scenario, const MemoryParams& memory);

}  // namespace orrery
