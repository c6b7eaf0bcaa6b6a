#pragma once
// Times GPU work with CUDA events: `warmup` untimed calls, then `repetitions` calls each bracketed by its own pair of
// events on `stream`, so every repetition is one sample (the raw file keeps them all; the fit takes the median).

#include <cuda_runtime.h>

#include <vector>

#include "calibrate/cuda/check.h"

namespace orrery::bench {

struct TimingOptions {
  int warmup = 5;
  int repetitions = 30;
};

/// Seconds per call of `work(stream)`, one entry per repetition. Errors: std::runtime_error from any CUDA call.
template <class Work>
std::vector<double> time_on_stream(cudaStream_t stream, const TimingOptions& opt, Work&& work) {
  for (int i = 0; i < opt.warmup; ++i) work(stream);
  ORRERY_CUDA(cudaStreamSynchronize(stream));
  std::vector<cudaEvent_t> start(static_cast<std::size_t>(opt.repetitions)), stop(start.size());
  for (std::size_t i = 0; i < start.size(); ++i) {
    ORRERY_CUDA(cudaEventCreate(&start[i]));
    ORRERY_CUDA(cudaEventCreate(&stop[i]));
  }
  for (std::size_t i = 0; i < start.size(); ++i) {
    ORRERY_CUDA(cudaEventRecord(start[i], stream));
    work(stream);
    ORRERY_CUDA(cudaEventRecord(stop[i], stream));
  }
  ORRERY_CUDA(cudaStreamSynchronize(stream));
  std::vector<double> seconds;
  for (std::size_t i = 0; i < start.size(); ++i) {
    float ms = 0;
    ORRERY_CUDA(cudaEventElapsedTime(&ms, start[i], stop[i]));
    seconds.push_back(static_cast<double>(ms) * 1e-3);
    ORRERY_CUDA(cudaEventDestroy(start[i]));
    ORRERY_CUDA(cudaEventDestroy(stop[i]));
  }
  return seconds;
}

}  // namespace orrery::bench
