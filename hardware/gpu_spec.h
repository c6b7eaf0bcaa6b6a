#pragma once
// One accelerator's datasheet figures (hardware/presets/gpus.json gives each with its source).

#include <nlohmann/json_fwd.hpp>

#include <string>

#include "models/ops.h"
#include "models/units.h"

namespace orrery {

struct GpuSpec {
  std::string name;          // preset key, e.g. "h100-sxm"
  std::string display_name;  // e.g. "NVIDIA H100 SXM5 80GB"
  std::string architecture;  // GPU generation, lower case as the presets write it ("ampere", "hopper"); "" unknown
  /// Who makes it, lower case as the presets write it ("nvidia", "amd"); "" unknown. GPUs of two vendors share no
  /// collective library (NCCL and RCCL do not interoperate), so traffic between them is staged through host memory
  /// (hardware/pool_link.h).
  std::string vendor;
  // Dense tensor-core peaks (FLOP/s); 0 where the chip has no such path. peak_fp32 is the non-tensor FP32 rate.
  FlopsPerSecond peak_fp32 = 0, peak_tf32 = 0, peak_fp16 = 0, peak_bf16 = 0, peak_fp8 = 0;
  Bytes hbm_capacity = 0;
  BytesPerSecond hbm_bandwidth = 0;
  int sm_count = 0;                    // SMs (NVIDIA) or compute units (AMD)
  Bytes l2_cache = 0;
  BytesPerSecond nvlink_bandwidth = 0;  // per GPU, per direction (NVLink or Infinity Fabric aggregate); 0: none
  BytesPerSecond pcie_bandwidth = 0;    // host link, per direction
  /// The rate a GPU reaches its node's other GPUs at, per direction: NVLink's, or on a PCIe-only board (no NVLink,
  /// as L40S, L20 and RTX 4090 servers) its PCIe link's, through the PCIe switch or the host bridge.
  BytesPerSecond intra_node_bandwidth() const { return nvlink_bandwidth > 0 ? nvlink_bandwidth : pcie_bandwidth; }
  double tdp_watts = 0;
  // Measured fused-attention efficiency of this GPU (fraction of the dense peak of the attention's precision);
  // 0 = the cost model's default (hardware/presets/cost_model.json).
  double attention_forward_fraction = 0, attention_backward_fraction = 0;
  // The same kernels' rate at head dim 64 over their rate at head dim 128 (forward, backward); between 64 and 128
  // the ratio is interpolated linearly in the head dim, below 64 held. 0 = no measurement: the 128 rate for all.
  double attention_head_dim_64_forward = 0, attention_head_dim_64_backward = 0;
  // Rate of block-scaled FP8 GEMMs over the per-tensor-scaled FP8 GEMM rate on this GPU (Fp8Scaling): 128-element
  // blocks (Transformer Engine's Float8BlockScaling, `fp8_recipe` "blockwise") and MXFP8's 32-element blocks
  // ("mxfp8"). 0 = the GPU cannot run that recipe (Transformer Engine's support matrix: block scaling from Hopper,
  // MXFP8 from Blackwell): the key absent from the GPU's description (a preset's is removed by an override of
  // null); a given value must lie in [0.1, 1].
  double fp8_blockwise_gemm_fraction = 0, mxfp8_gemm_fraction = 0;
  /// The SM clock long dense tensor-core kernels hold under the board power limit ("sustained_gemm_clock" in
  /// gpus.json): measured at `clock_power_W` (the stock limit), with the clock the datasheet peaks are computed at
  /// and the highest clock the GPU boosts to. 0 = no measurement: tensor-core work runs at the datasheet peak.
  double sustained_clock_MHz = 0, sustained_clock_power_W = 0, idle_power_W = 0;
  double peak_clock_MHz = 0, max_clock_MHz = 0;
  /// Measured board power by activity ("board_power" in gpus.json; hardware/gpu_power.h): the clocked-up idle draw
  /// in watts and what tensor-core, memory-bound and communication kernels add, each a fraction of the headroom to
  /// tdp_watts. 0 = not measured: hardware/gpu_power.h's H200-derived defaults.
  double power_idle_W = 0, power_tensor_fraction = 0, power_memory_fraction = 0, power_communication_fraction = 0;

  /// Dense peak for GEMMs in `dtype`. Errors: Error::invalid naming "training.precision" when the GPU lacks it.
  FlopsPerSecond peak_for(DType dtype) const;
  /// Rate of FP8 GEMMs with `scaling` over the per-tensor FP8 rate (1 for kTensor; fp8_blockwise_gemm_fraction,
  /// mxfp8_gemm_fraction). Errors: Error::invalid naming "training.fp8_recipe" when the GPU cannot run it.
  double fp8_scaling_fraction(Fp8Scaling scaling) const;
  /// The clock long GEMMs and attention kernels sustain at the board limit tdp_watts, over the clock the datasheet
  /// peak assumes (1 without a measurement). Dynamic power P - P_idle grows as f V^2 with V proportional to f over
  /// the DVFS range, so as f^3 (Weste & Harris, CMOS VLSI Design, 4th ed., Section 5.1): from the measured point
  /// (f_m at P_m), f(P) = f_m ((P - P_idle) / (P_m - P_idle))^(1/3). At most 1: a board limit above the measured
  /// one raises the clock toward max_clock_MHz, but tensor cores are never priced above their datasheet rate.
  double sustained_clock_fraction() const;
  /// sustained_clock_fraction at the measured limit (P = sustained_clock_power_W): the clock a calibrated profile's
  /// times were taken at, when they were taken at the stock limit.
  double measured_clock_fraction() const;
};

/// Parses a GPU: a preset name, or an object with "preset" plus overrides, or a full object (keys as in
/// gpus.json: peak_tflops{fp32,tf32,fp16,bf16,fp8}, hbm_capacity_GiB, hbm_bandwidth_TB_s, sm_count, l2_cache_MiB,
/// nvlink_bandwidth_GB_s, nvlink_links, pcie_bandwidth_GB_s, tdp_W, and optionally attention_peak_fraction
/// {forward, backward}, fp8_block_scaling_gemm_fraction {blockwise, mxfp8}, board_power {idle_W, tensor_fraction,
/// memory_fraction, communication_fraction}). Errors name `path`.
GpuSpec parse_gpu(const nlohmann::json& value, const std::string& path);

}  // namespace orrery
