#pragma once
// The reference executor: runs a one-GPU workload graph (calibrate/bench/workload_file.h) on the GPU task by task,
// on one CUDA stream per graph stream, each task after its predecessors (events across streams), and times every
// task with CUDA events. Real work for every op:
//   gemm       cuBLASLt at the task's shape and dtype (TN, FP32 accumulation; `batch` kernels when grouped, one
//              strided-batched kernel otherwise), on pseudo-random operands;
//   attention  UNFUSED: strided-batched cuBLASLt GEMMs (scores Q K^T, then P V; backward dP, dV, dQ, dK) and a
//              kernel streaming the score matrix (softmax and its backward), with grouped-query heads batched per KV
//              head. The causal mask is not exploited, so it does about twice a flash kernel's FLOPs plus the score
//              traffic: the executor's attention rows are an upper bound, not the fused kernel (measure that with
//              tools/calibrate_attention.py or a real PyTorch trace);
//   memory     a kernel that reads READ bytes and writes WRITTEN bytes;
//   sync       the host waits for the compute stream (cudaStreamSynchronize);
//   skip       nothing (communication, host work).
// Memory effects become stream-ordered allocations from a dedicated pool (cudaMallocFromPoolAsync / cudaFreeAsync):
// static bytes at the start, START_BYTES when a task starts, END_BYTES freed (oldest blocks of that kind first) when
// it ends; the peak is the pool's used-memory high-water mark. Operand scratch comes from outside that pool.

#include <cuda_runtime.h>

#include <string>
#include <vector>

#include "calibrate/bench/workload_file.h"

namespace orrery::bench {

struct ExecutedTask {
  double start_s = 0, end_s = 0;
};

struct Execution {
  std::vector<ExecutedTask> tasks;  // by workload task id, relative to the run's first event
  long long peak_bytes = 0;         // pool high-water mark: static plus the graph's live allocations
  std::string gpu;
};

/// Runs `w` `repeat` times (the last run is reported; earlier ones warm up cuBLASLt and the pool). Errors:
/// std::runtime_error from CUDA or cuBLASLt, or when the scratch or the graph's memory does not fit.
Execution execute_workload(const WorkloadFile& w, int repeat);

}  // namespace orrery::bench
