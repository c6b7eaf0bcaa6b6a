#pragma once
// The raw measurements `orrery-calibrate` writes ("orrery-gpu-raw", version 1): the GPU and its software, how the
// timing was done, and every timed repetition of every benchmark, so that `orrery calibrate fit RAW.json`
// (calibrate/raw_profile.h) can choose its statistics later without a rerun. Times are seconds per call, each
// repetition bracketed by CUDA events on the benchmark's stream after `warmup` untimed calls.
//
//   {"format": "orrery-gpu-raw", "version": 1,
//    "gpu": "NVIDIA H200", "compute_capability": "9.0", "sm_count": 132, "memory_bytes": ..., "driver": "13.0",
//    "cuda_runtime": "13.0", "cublaslt": "130100", "nccl": "2.28.3", "date": "2026-11-30T12:00:00Z", "host": "...",
//    "warmup": 5, "repetitions": 30,
//    "gemm": [{"m", "n", "k", "dtype", "layout": "TN", "workspace_bytes", "times_s": [...]}],
//    "memory": [{"kind": "copy", "bytes", "times_s": [...]}],
//    "launch": {"kernel_s": [...], "host_s": [...]},
//    "collectives": [{"op", "ranks", "nodes": 1, "bytes", "times_s": [...]}],
//    "skipped": [{"what", "why"}]}
//
// C++17 and the standard library only (compiled by nvcc's host compiler too).

#include <cstdint>
#include <string>
#include <vector>

#include "calibrate/bench/bench_plan.h"

namespace orrery::bench {

struct RawGemm {
  PlanGemm shape;
  std::string layout = "TN";  // cuBLASLt column-major: A transposed, B not (the layout FP8 requires)
  std::int64_t workspace_bytes = 0;
  std::vector<double> seconds;
};

struct RawMemory {
  PlanMemory what;
  std::vector<double> seconds;
};

struct RawCollective {
  PlanCollective what;
  int ranks = 1, nodes = 1;
  std::vector<double> seconds;
};

struct RawSkip {
  std::string what, why;
};

struct RawProfile {
  std::string gpu, compute_capability, driver, cuda_runtime, cublaslt, nccl, date, host;
  int sm_count = 0;
  std::int64_t memory_bytes = 0;
  int warmup = 0, repetitions = 0;
  std::vector<RawGemm> gemm;
  std::vector<RawMemory> memory;
  std::vector<double> launch_kernel_s;  // GPU time per empty kernel, back-to-back launches
  std::vector<double> launch_host_s;    // host time per cudaLaunchKernel call
  std::vector<RawCollective> collectives;
  std::vector<RawSkip> skipped;
};

/// The profile as JSON text (the format above). Non-finite times are written as null, never as invalid JSON.
std::string raw_profile_json(const RawProfile& raw);

/// The median of `v` (mean of the middle two for an even count); 0 for an empty list.
double median(std::vector<double> v);

/// JSON string literal for `s` (quotes, backslashes and control characters escaped).
std::string json_string(const std::string& s);

}  // namespace orrery::bench
