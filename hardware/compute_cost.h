#pragma once
// Compute cost models (ARCHITECTURE.md "Cost models"): the time of one kernel on one GPU. Behind a narrow interface so
// a calibrated profile can replace the default roofline model (ARCHITECTURE.md rule 10).

#include <memory>
#include <string>

#include "hardware/cost_params.h"
#include "hardware/gpu_spec.h"
#include "models/ops.h"

namespace orrery {

class ComputeCostModel {
 public:
  virtual ~ComputeCostModel() = default;
  virtual std::string name() const = 0;
  /// Seconds for one GEMM (batched GEMMs included). Errors: Error::invalid if the GPU lacks the dtype.
  virtual Seconds gemm(const GemmShape& shape) const = 0;
  /// Seconds for one fused attention kernel (forward or backward).
  virtual Seconds attention(const AttentionShape& shape) const = 0;
  /// Seconds for one memory-bound kernel.
  virtual Seconds elementwise(const ElementwiseShape& shape) const = 0;
  /// GPU seconds of a device-to-host synchronisation's small copy. The wait that follows it (the host blocked until
  /// the copy lands, then issuing the next kernels at its framework's CPU cost) is the engine's host timeline.
  virtual Seconds host_sync() const = 0;
  /// Seconds of a PCIe copy or of host-DRAM-bound CPU work. Errors: Error::invalid when the host side is unknown.
  virtual Seconds host_op(const HostOpShape& shape) const = 0;
};

/// Roofline: max(FLOPs / (peak x efficiency), bytes / (HBM bandwidth x hbm_efficiency)) + the GPU's launch gap.
/// GEMM efficiency from shape: the best of the candidate CTA tiles, each paying tile quantization (padded m, n),
/// wave quantization (a partial last wave costs gemm_wave_tail of a full one: 1 for plain tiling, less where
/// cuBLAS picks split-K or stream-K kernels) and a short-k penalty k / (k + k_half). Sources for the effects:
/// NVIDIA Deep Learning Performance Guide, "Matrix Multiplication Background" (tile and wave quantization).
class RooflineComputeModel final : public ComputeCostModel {
 public:
  /// `host_memory_bandwidth` is this GPU's share of its node's host DRAM bandwidth (0: unknown).
  RooflineComputeModel(GpuSpec gpu, ComputeParams params, BytesPerSecond host_memory_bandwidth = 0);
  std::string name() const override { return "roofline"; }
  Seconds gemm(const GemmShape& shape) const override;
  Seconds attention(const AttentionShape& shape) const override;
  Seconds elementwise(const ElementwiseShape& shape) const override;
  Seconds host_sync() const override { return params_.launch_gap; }
  /// Copies at pcie_efficiency of the GPU's per-direction PCIe bandwidth; host work at host_memory_efficiency of
  /// the GPU's share of host DRAM bandwidth (ZeRO-Offload, arXiv:2101.06840: the CPU Adam step is memory-bound).
  Seconds host_op(const HostOpShape& shape) const override;

  /// Time the GEMM's arithmetic takes under the tile/wave model, without memory bound or overhead.
  Seconds gemm_compute_time(const GemmShape& shape) const;
  /// Share of the SMs a fused attention kernel keeps busy over its waves (thread blocks = batch x heads x 128-row
  /// tiles of the queries forward, of the keys backward), relative to the grid its measured rate was taken on;
  /// in (0, 1].
  double attention_occupancy(const AttentionShape& shape) const;

 private:
  Seconds memory_time(Bytes bytes) const;
  GpuSpec gpu_;
  ComputeParams params_;
  BytesPerSecond host_memory_bandwidth_ = 0;
};

}  // namespace orrery
