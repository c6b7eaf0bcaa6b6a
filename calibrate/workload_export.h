#pragma once
// The rank-0 program of a single-GPU prediction as the reference executor's workload file
// (calibrate/bench/workload_file.h): every task in issue order with its stream, phase, memory effects,
// predecessors and operation; communication and host work become `skip` (one GPU has no peer).

#include "calibrate/bench/workload_file.h"
#include "sim/predict.h"

namespace orrery {

/// Errors: Error::invalid naming "cluster.num_gpus" when the plan spans more than one GPU.
bench::WorkloadFile export_workload(const Prediction& prediction);

}  // namespace orrery
