#pragma once
// A calibrated GPU profile: measured kernel times from `orrery-calibrate` (calibrate/), versioned JSON:
//
//   {"format": "orrery-gpu-profile", "version": 1, "gpu": "NVIDIA H200", "driver": "...", "cuda": "...",
//    "date": "2026-11-30", "source": "how it was measured",
//    "gemm": [{"m": 4096, "n": 4096, "k": 4096, "dtype": "bf16", "seconds": 1.9e-4}, ...],
//    "memory": [{"kind": "copy", "bytes": 1073741824, "seconds": 2.6e-4}, ...],
//    "attention": [{"batch": 4, "heads": 32, "kv_heads": 8, "seq": 4096, "head_dim": 128, "causal": true,
//                   "backward": false, "dtype": "bf16", "seconds": 1.1e-3}, ...],
//    "collectives": [{"op": "all_reduce", "ranks": 16, "nodes": 2, "bytes": 67108864, "seconds": 5.1e-4}, ...],
//    "launch": {"kernel_s": 2.1e-6, "host_s": 2.4e-6},
//    "fitted": [{"what": "gemm bf16", "rate": 7.8e14, "overhead_s": 6e-6, "samples": 40}, ...]}
//
// GEMM times are medians of CUDA-event-timed cuBLASLt calls (launch included); memory times are kernels of `kind`
// (copy, elementwise, reduction; calibrate/cuda/memory_bench.h) moving `bytes` (read + write); attention times are
// fused scaled-dot-product attention calls (self-attention, q_len = kv_len = seq; tools/calibrate_attention.py);
// collective times are per call as nccl-tests reports them (out-of-place), sized as nccl-tests sizes them, for a
// group of `ranks` GPUs on `nodes` nodes (`orrery calibrate import-nccl-tests`). `fitted` holds the least-squares
// summary `orrery calibrate fit` adds (t = overhead + work / rate over the large samples): for reading, not pricing.
// ProfiledComputeModel (hardware/profiled_compute.h) prices ops from these tables.

#include <nlohmann/json_fwd.hpp>

#include <memory>
#include <string>
#include <vector>

#include "hardware/collective_cost.h"
#include "hardware/cost_params.h"
#include "hardware/gpu_spec.h"
#include "models/ops.h"

namespace orrery {

struct GemmSample {
  std::int64_t m = 0, n = 0, k = 0;
  DType dtype = DType::kBf16;
  Seconds seconds = 0;
};

struct CopySample {
  std::string kind = "copy";  // copy, elementwise, reduction (orrery-calibrate) or a PyTorch kernel family
  Bytes bytes = 0;            // (profile_kind in models/ops.h; tools/calibrate_pytorch_kernels.py)
  Seconds seconds = 0;
};

/// Whether `kind` names a memory sample a profile may hold: copy, elementwise, reduction, or profile_kind of an
/// ElementwiseKernel.
bool is_memory_sample_kind(const std::string& kind);

/// One fused attention call over `batch` sequences of `seq` tokens (q_len = kv_len), forward or backward.
struct AttentionSample {
  std::int64_t batch = 0, heads = 0, kv_heads = 0, seq = 0, head_dim = 0;
  bool causal = true, backward = false;
  DType dtype = DType::kBf16;
  Seconds seconds = 0;
};

/// A fitted summary line: time = overhead + work / rate (work in FLOPs for GEMMs, bytes for memory kernels).
struct FittedRate {
  std::string what;  // "gemm bf16", "memory copy", ...
  double rate = 0;   // FLOP/s or bytes/s
  Seconds overhead = 0;
  int samples = 0;
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
  std::vector<AttentionSample> attention;
  std::vector<CollectiveSample> collectives;
  Seconds launch_kernel = 0, launch_host = 0;  // empty-kernel launch: GPU time back to back, host call time
  std::vector<FittedRate> fitted;
};

class FieldReader;  // models/json_fields.h

/// The shape fields of an attention sample (batch, heads, kv_heads, seq, head_dim, causal), read from `r`, as profiles
/// and raw attention files spell them. Errors: Error::invalid naming the field (kv_heads must divide heads).
AttentionSample read_attention_shape(FieldReader& r);

/// Whether a CUDA device name (a profile's "gpu", as cudaDeviceProp reports it: "NVIDIA H200") names the same GPU
/// model as `gpu` (preset "NVIDIA H200 SXM 141GB"): equal names, or the same first word with a digit ("H200").
bool same_gpu_model(const std::string& device_name, const GpuSpec& gpu);

/// The dtype a profile or raw file names ("bf16", ...). Errors: Error::invalid naming `field`.
DType dtype_named(const std::string& name, const std::string& field);

/// Checks the versioned header of a calibration file: "format" must be `format` (`written_by` names the program that
/// writes it, for the message) and "version" 1. Errors: Error::invalid naming the field.
void require_format(FieldReader& in, const std::string& format, const std::string& written_by);

/// The collective a profile or raw file names ("all_reduce", ...). Errors: Error::invalid naming `field`.
CollectiveKind collective_kind_named(const std::string& op, const std::string& field);

/// The profile as JSON (the format above).
nlohmann::json gpu_profile_json(const GpuProfile& profile);

/// Parses a profile. Errors: Error::invalid naming `path` and the field (unknown format or version, a sample with
/// a non-positive size or time, an unknown dtype, memory kind or collective).
GpuProfile parse_gpu_profile(const nlohmann::json& doc, const std::string& path);

/// Reads a profile file. Errors: as parse_gpu_profile, and Error::io for an unreadable file.
GpuProfile load_gpu_profile(const std::string& file);

/// The profile compiled into the binary from hardware/profiles/NAME.json, or nullptr when there is none.
std::shared_ptr<const GpuProfile> builtin_gpu_profile(const std::string& name);
/// Names of the built-in profiles, sorted.
std::vector<std::string> builtin_gpu_profile_names();

/// The default cost parameters with the profile in `file` attached (`--profile FILE`); "" leaves them as they are.
/// Errors: as load_gpu_profile.
CostParams cost_params_with_profile(const std::string& file);

}  // namespace orrery
