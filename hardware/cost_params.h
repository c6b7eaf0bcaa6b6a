#pragma once
// Parameters of the default compute and collective cost models, read from hardware/presets/cost_model.json where
// each carries its source (a datasheet, a paper, or "fitted" with the fit that produced it).

#include <nlohmann/json_fwd.hpp>

#include <string>
#include <memory>
#include <vector>

#include "models/units.h"

namespace orrery {

/// A CTA tile shape cuBLAS-style GEMM kernels choose from, with its efficiency relative to the best tile.
struct GemmTile {
  int m = 128, n = 128;
  double relative_efficiency = 1.0;
};

struct ComputeParams {
  double gemm_peak_fraction = 0;        // fraction of dense peak a large, well-shaped GEMM sustains
  double gemm_fp8_peak_fraction = 0;    // the same for FP8 GEMMs, of the FP8 dense peak
  std::vector<GemmTile> gemm_tiles;      // candidate tiles for tile and wave quantization
  double gemm_k_half = 0;               // k at which the short-k penalty k/(k + k_half) halves throughput
  double gemm_wave_tail = 1;            // share of a partial last wave that costs a full one (1: plain tiling)
  double attention_forward_peak_fraction = 0;   // fused attention forward, of dense peak
  double attention_backward_peak_fraction = 0;  // fused attention backward, of dense peak
  double hbm_efficiency = 0;            // fraction of datasheet HBM bandwidth memory-bound kernels reach
  Seconds kernel_overhead = 0;          // per-kernel gap on the GPU (launch, tail)
  double overlap_slowdown = 0;          // compute slows by this fraction while communication kernels run
  Seconds host_sync_gap = 0;            // GPU idle after a device-to-host synchronisation
  double pcie_efficiency = 0;           // fraction of the PCIe link rate pinned-memory copies reach
  double host_memory_efficiency = 0;    // fraction of datasheet host DRAM bandwidth streaming CPU work reaches
};

struct NetworkParams {
  double nvlink_efficiency = 0;  // fraction of per-direction NVLink bandwidth NCCL rings reach
  double nvls_efficiency = 0;    // fraction of per-direction NVLink bandwidth an NVLS all-reduce moves
  double nic_efficiency = 0;     // fraction of NIC line rate reached
  Seconds call_latency = 0;      // fixed cost of one NCCL call beyond NCCL's own per-step latencies
  double expert_dispatch_nvlink_efficiency = 0;  // fraction of NVLink's rate the flex dispatcher's forwarding reaches
  double expert_dispatch_nic_efficiency = 0;     // fraction of the NIC rate its RDMA transfers reach
};

/// Memory outside parameters, optimizer state and activations ("other" in the report).
struct MemoryParams {
  Bytes workspace = 0;                  // cuBLAS/cuDNN workspace per rank
  Bytes nccl_buffer_per_communicator = 0;  // NCCL channel buffers per communicator the rank uses
  Bytes framework_overhead = 0;         // CUDA context, library handles, allocator slack
};

struct GpuProfile;  // hardware/gpu_profile.h

struct CostParams {
  ComputeParams compute;
  NetworkParams network;
  MemoryParams memory;
  /// A measured GPU profile (calibrate/, `--profile FILE`): where it covers an op, its time replaces the default
  /// compute model's. Null: the default model everywhere.
  std::shared_ptr<const GpuProfile> profile;
};

/// The defaults from hardware/presets/cost_model.json.
const CostParams& default_cost_params();

/// Parses a cost-model object of cost_model.json's shape. Errors name `path`.
CostParams parse_cost_params(const nlohmann::json& value, const std::string& path);

}  // namespace orrery
