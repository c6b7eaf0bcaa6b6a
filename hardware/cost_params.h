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

/// CPU time a rank's host thread spends per kernel or collective it issues: the framework's Python, the dispatcher
/// and autograd, and the launch call (the host timeline, sim/engine/engine.h: a kernel starts no earlier than its host has
/// issued it). Measured on PyTorch eager, whose costs differ by phase (the forward runs the module's Python, the
/// backward the autograd engine, the optimizer its per-step Python over the parameter lists): the `pytorch` and
/// `fsdp2` frameworks take these. Megatron-Core's fused Transformer Engine paths issue from C++ with less Python per
/// kernel, and its recipes capture parts of the step in CUDA graphs; no Megatron-Core trace is committed to measure
/// it, so the Megatron frameworks take the launch call alone (`library`), a lower bound.
struct HostIssueCosts {
  Seconds pytorch_forward = 0;    // PyTorch eager, forward (and recomputed forward)
  Seconds pytorch_backward = 0;   // PyTorch eager, backward
  Seconds pytorch_optimizer = 0;  // PyTorch eager, optimizer step
  /// A launch a library's C++ makes in a loop with no Python between (torch.distributed's per-rank chunk copies
  /// of a list-based collective, TaskKind::kCommCopy): the launch call alone.
  Seconds library = 0;
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
  Seconds launch_gap = 0;               // GPU time between back-to-back kernels (launch and tail), per kernel
  double overlap_slowdown = 0;          // compute slows by this fraction while communication kernels run
  HostIssueCosts host;                  // CPU time to issue each kernel (the host timeline, sim/engine/engine.h)
  double pcie_efficiency = 0;           // fraction of the PCIe link rate pinned-memory copies reach
  double host_memory_efficiency = 0;    // fraction of datasheet host DRAM bandwidth streaming CPU work reaches
};

struct NetworkParams {
  double nvlink_efficiency = 0;  // fraction of per-direction NVLink bandwidth NCCL rings reach
  double nvls_efficiency = 0;    // fraction of per-direction NVLink bandwidth an NVLS all-reduce moves
  double nic_efficiency = 0;     // fraction of NIC line rate reached
  /// NCCL's pipeline fill beyond its own per-step latencies (src/graph/tuning.cc): a message streams through the
  /// ring or tree in chunks, and the first chunk crosses every step before the pipe is full. The chunk grows with
  /// the message up to NCCL's fixed chunk size, so the cost rises with the size and levels off: priced as
  /// pipeline_fill x S / (S + pipeline_fill_half) for a call of S bytes (both fitted to nccl-tests logs; a tiny
  /// message pays NCCL's step latencies alone, a large one the whole fill).
  Seconds pipeline_fill = 0;
  Bytes pipeline_fill_half = 0;  // message size at which the pipeline fill reaches half its full cost (0: full)
  /// Fixed cost of a call whose group leaves its NVLink domain, beyond NCCL's per-hop latencies: the proxy
  /// thread's network setup and completion polling for the call (fitted to the multi-node nccl-tests logs).
  Seconds network_call_latency = 0;
  double expert_dispatch_nvlink_efficiency = 0;  // fraction of NVLink's rate the flex dispatcher's forwarding reaches
  double expert_dispatch_nic_efficiency = 0;     // fraction of the NIC rate its RDMA transfers reach
  /// Fraction of the line rate NCCL's socket transport (TCP, no RDMA) reaches: the path between two pools without a
  /// common RDMA transport (hardware/pool_link.h). Not fitted; cost_model.json gives its sources.
  double tcp_efficiency = 0;
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
