#pragma once
// Memory-bound kernels for achieved HBM bandwidth, and kernel launch overhead. Each kernel streams its bytes once
// with 16-byte vector accesses over a grid of 4 blocks per SM (grid-stride loops), the access pattern of
// Megatron's fused elementwise kernels:
//   copy         out = in                          (bytes/2 read, bytes/2 written)
//   elementwise  out = a * s + b   (FP32)          (2 bytes/3 read, bytes/3 written)
//   reduction    RMSNorm rows of 8192 BF16 values: y = x / sqrt(mean(x^2) + eps)  (bytes/2 read, bytes/2 written)
// Sizes are rounded down to whole 16-byte vectors (and whole rows for reduction).

#include <cuda_runtime.h>

#include <vector>

#include "calibrate/bench/bench_plan.h"
#include "calibrate/cuda/event_timer.h"

namespace orrery::bench {

/// Seconds per call of the kernel `m.kind` moving about `m.bytes`, one per repetition; `moved` receives the bytes
/// the kernel really reads and writes after rounding (what the raw file records). Errors: std::runtime_error.
std::vector<double> run_memory(const PlanMemory& m, int sm_count, cudaStream_t stream, const TimingOptions& opt,
                               std::int64_t* moved);

/// GPU seconds per empty kernel when `launches` are queued back to back behind a spin kernel (one sample per
/// repetition): the GPU's own cost per kernel, without the host's launch rate.
std::vector<double> launch_gpu_seconds(cudaStream_t stream, const TimingOptions& opt, int launches = 1000);

/// Host seconds per cudaLaunchKernel call of an empty kernel (one sample per repetition of `launches` calls).
std::vector<double> launch_host_seconds(cudaStream_t stream, const TimingOptions& opt, int launches = 1000);

}  // namespace orrery::bench
