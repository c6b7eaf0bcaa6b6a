#pragma once
// `orrery calibrate fit`: from the raw measurements `orrery-calibrate` writes ("orrery-gpu-raw", version 1;
// calibrate/bench/raw_profile_writer.h) and, optionally, the attention measurements of
// tools/calibrate_attention.py ("orrery-attention-raw", version 1) and PyTorch's eager kernel families of
// tools/calibrate_pytorch_kernels.py ("orrery-pytorch-kernels-raw", version 1), to the profile the cost models read
// (hardware/gpu_profile.h):
//   - each benchmark's time is the median of its timed repetitions (robust to the odd slow repetition);
//   - a summary `fitted` line per GEMM dtype and memory kernel: time = overhead + work / rate, linear least squares
//     (Eigen, column-pivoting QR) over the samples large enough to be throughput-bound (GEMMs of at least
//     `min_gemm_flops`, memory kernels of at least `min_memory_bytes`), the overhead held at zero if it fits negative;
//   - the empty-kernel launch overhead, GPU and host side, as medians.
// Collectives measured on the local GPUs keep their group size (`ranks`) and `nodes` 1.

#include <nlohmann/json_fwd.hpp>

#include <string>

#include "hardware/gpu_profile.h"

namespace orrery {

struct RawFitOptions {
  Flops min_gemm_flops = 1e11;          // ~0.1 ms at Hopper rates: large enough to leave launch latency behind
  Bytes min_memory_bytes = 64ll << 20;  // 64 MiB: well past the 50-60 MB L2 of Hopper and Blackwell
};

/// The profile from raw measurements. `attention` may be null. Errors: Error::invalid naming the file and field
/// (wrong format or version, a benchmark without repetitions, a non-positive or non-finite time or size, an
/// unknown dtype or kind).
GpuProfile fit_raw_profile(const nlohmann::json& raw, const std::string& raw_path, const nlohmann::json* attention,
                           const std::string& attention_path, const RawFitOptions& options = {});

/// Adds the PyTorch kernel-family samples of tools/calibrate_pytorch_kernels.py to `profile.memory` (kinds
/// pytorch_vectorized, pytorch_cast, ...: profile_kind in models/ops.h; time the median of the repetitions) and a
/// fitted "memory KIND" line per family over its samples of at least `options.min_memory_bytes`. Errors:
/// Error::invalid naming the file and field (wrong format or version, an unknown kind, a repeated size, a
/// non-positive time or size).
void add_pytorch_kernels(const nlohmann::json& doc, const std::string& path, GpuProfile& profile,
                         const RawFitOptions& options = {});

/// time = overhead + work / rate by least squares over (work, seconds) pairs, overhead >= 0. Errors: Error::invalid
/// naming `what` when fewer than one pair is given or the fitted rate is not positive.
FittedRate fit_rate(const std::string& what, const std::vector<std::pair<double, double>>& work_seconds);

}  // namespace orrery
