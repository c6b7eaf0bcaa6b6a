#pragma once
// A calibrated GPU profile: measured kernel times from `orrery-calibrate` (calibrate/), versioned JSON:
//
//   {"format": "orrery-gpu-profile", "version": 1, "gpu": "NVIDIA H200", "driver": "...", "cuda": "...",
//    "date": "2026-11-30", "source": "how it was measured",
//    "gemm": [{"m": 4096, "n": 4096, "k": 4096, "dtype": "bf16", "seconds": 1.9e-4}, ...],
//    "memory": [{"bytes": 1073741824, "seconds": 2.6e-4}, ...],
//    "collectives": [{"op": "all_reduce", "ranks": 16, "nodes": 2, "bytes": 67108864, "seconds": 5.1e-4}, ...]}
//
// GEMM times are medians of CUDA-event-timed cuBLASLt calls (launch included); memory times are device copies
// moving `bytes` (read + write); collective times are per call as nccl-tests reports them (out-of-place), sized as
// nccl-tests sizes them, for a group of `ranks` GPUs on `nodes` nodes (`orrery calibrate import-nccl-tests`).
// ProfiledComputeModel (hardware/profiled_compute.h) prices ops from these tables.

#include <nlohmann/json_fwd.hpp>

#include <string>
#include <vector>

#include "hardware/collective_cost.h"
#include "hardware/cost_params.h"
#include "models/ops.h"

namespace orrery {

struct GemmSample {
  std::int64_t m = 0, n = 0, k = 0;
  DType dtype = DType::kBf16;
  Seconds seconds = 0;
};

struct CopySample {
  Bytes bytes = 0;
  Seconds seconds = 0;
};

struct CollectiveSample {
  CollectiveKind kind = CollectiveKind::kAllReduce;
  int ranks = 0, nodes = 0;
  Bytes bytes = 0;
  Seconds seconds = 0;
  std::string source;  // the log it came from
};

struct GpuProfile {
  std::string gpu, driver, cuda, date, source, file;
  std::vector<GemmSample> gemm;
  std::vector<CopySample> memory;
  std::vector<CollectiveSample> collectives;
};

/// The profile as JSON (the format above).
nlohmann::json gpu_profile_json(const GpuProfile& profile);

/// Parses a profile. Errors: Error::invalid naming `path` and the field (unknown format or version, a sample with
/// a non-positive size or time, an unknown dtype).
GpuProfile parse_gpu_profile(const nlohmann::json& doc, const std::string& path);

/// Reads a profile file. Errors: as parse_gpu_profile, and Error::io for an unreadable file.
GpuProfile load_gpu_profile(const std::string& file);

/// The default cost parameters with the profile in `file` attached (`--profile FILE`); "" leaves them as they are.
/// Errors: as load_gpu_profile.
CostParams cost_params_with_profile(const std::string& file);

}  // namespace orrery
