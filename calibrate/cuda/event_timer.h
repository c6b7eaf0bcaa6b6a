#pragma once
// Times GPU work with CUDA events so that the GPU never waits for the host: each repetition first holds the stream
// with a spin kernel long enough for the host to enqueue the whole batch, then brackets `batch` back-to-back calls
// with one pair of events; the sample is the batch's time over `batch`. Per-call event pairs would add the host's
// enqueue latency (cuBLASLt, NCCL or kernel launch) to every short kernel. The batch is chosen from the warm-up
// calls so that a repetition lasts about `batch_target_s` (1 for long kernels, up to `max_batch` for short ones).

#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "calibrate/cuda/check.h"

namespace orrery::bench {

struct TimingOptions {
  int warmup = 5;
  int repetitions = 30;
  double batch_target_s = 2e-3;
  int max_batch = 64;
};

/// Holds `stream` busy for about `seconds` (a clock64 spin on one thread block). Errors: std::runtime_error.
void spin_stream(cudaStream_t stream, double seconds);

/// Host time to enqueue one call, at most, that the spin must cover (cuBLASLt and NCCL calls take a few us).
inline constexpr double kEnqueueAllowance = 40e-6;

/// Seconds per call of `work(stream)`, one sample per repetition. Errors: std::runtime_error from any CUDA call.
template <class Work>
std::vector<double> time_on_stream(cudaStream_t stream, const TimingOptions& opt, Work&& work) {
  cudaEvent_t start = nullptr, stop = nullptr;
  ORRERY_CUDA(cudaEventCreate(&start));
  ORRERY_CUDA(cudaEventCreate(&stop));
  // Warm-up, timed as one batch to size the repetitions' batches.
  const int warmup = std::max(opt.warmup, 1);
  ORRERY_CUDA(cudaEventRecord(start, stream));
  for (int i = 0; i < warmup; ++i) work(stream);
  ORRERY_CUDA(cudaEventRecord(stop, stream));
  ORRERY_CUDA(cudaEventSynchronize(stop));
  float ms = 0;
  ORRERY_CUDA(cudaEventElapsedTime(&ms, start, stop));
  const double per_call = std::max(static_cast<double>(ms) * 1e-3 / warmup, 1e-7);
  const int batch = std::clamp(static_cast<int>(std::ceil(opt.batch_target_s / per_call)), 1, opt.max_batch);
  std::vector<double> seconds;
  for (int r = 0; r < opt.repetitions; ++r) {
    spin_stream(stream, std::max(100e-6, batch * kEnqueueAllowance));
    ORRERY_CUDA(cudaEventRecord(start, stream));
    for (int i = 0; i < batch; ++i) work(stream);
    ORRERY_CUDA(cudaEventRecord(stop, stream));
    ORRERY_CUDA(cudaEventSynchronize(stop));
    ORRERY_CUDA(cudaEventElapsedTime(&ms, start, stop));
    seconds.push_back(static_cast<double>(ms) * 1e-3 / batch);
  }
  ORRERY_CUDA(cudaEventDestroy(start));
  ORRERY_CUDA(cudaEventDestroy(stop));
  return seconds;
}

}  // namespace orrery::bench
