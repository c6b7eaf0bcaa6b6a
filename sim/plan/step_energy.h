#pragma once
// Energy of one simulated training step (issue 23's energy model): each GPU's board power follows what it is doing
// on the timeline (hardware/gpu_power.h), integrated over the step, and summed over the ranks each simulated
// instance stands for.

#include <vector>

#include "hardware/gpu_power.h"
#include "sim/engine/engine.h"
#include "sim/engine/instantiation.h"
#include "sim/engine/workload_graph.h"

namespace orrery {

/// Seconds of one GPU's step in each exclusive state: tensor-core work running (with anything beside it), else
/// memory-bound kernels (with communication or not), else communication alone, else idle.
struct StateSeconds {
  Seconds tensor = 0, memory = 0, communication = 0, idle = 0;
};

/// One pipeline stage's GPUs over a step.
struct StageEnergy {
  int stage = 0;
  int ranks = 0;                 // GPUs of the stage
  StateSeconds seconds;          // of its representative (the first recorded instance of the stage)
  double joules_per_gpu = 0;     // board energy of one of its GPUs over the step
  double average_power_W = 0;    // joules_per_gpu / step seconds
};

/// The GPUs' energy over one step of the whole job.
struct StepEnergy {
  Seconds step = 0;
  std::vector<StageEnergy> stages;  // by stage
  double gpu_joules = 0;            // every GPU of the job: sum over instances of their energy x ranks
  double average_gpu_power_W = 0;   // gpu_joules / (GPUs x step)
  /// Seconds in each state summed over every GPU of the job (for power by state).
  StateSeconds gpu_seconds;
};

/// The states of one instance's recorded run over [0, step]: for each interval, which activities run (tensor: GEMM
/// and attention tasks; memory: elementwise, optimizer and communication-copy tasks; communication: collectives and
/// sends/receives while they transfer, not while they wait at the rendezvous); host tasks draw no GPU power.
StateSeconds state_seconds(const Program& program, const InstanceRun& run, Nanoseconds step);

/// The power integral of one GPU whose step spends `s` in each state: by hand, sum of power x seconds.
double state_joules(const StateSeconds& s, const GpuPower& power);

/// The step energy of a finished run of `graph` over `instances` with `step` the iteration time. Every instance
/// counts its ranks; one whose run was not recorded (above RunOptions::record_budget) takes the figures of the
/// first recorded instance of its program. Errors: Error::invalid when a program has no recorded instance.
StepEnergy step_energy(const WorkloadGraph& graph, const Instantiation& instances, const RunResult& run,
                       Nanoseconds step, const GpuPower& power);
/// The same with each program's GPUs under their own power model (`per_program[i]` for graph.programs[i]): the
/// stages of a mixed cluster, each on its pool's GPU. Errors: as above; std::out_of_range for a short list.
StepEnergy step_energy(const WorkloadGraph& graph, const Instantiation& instances, const RunResult& run,
                       Nanoseconds step, const std::vector<GpuPower>& per_program);

}  // namespace orrery
