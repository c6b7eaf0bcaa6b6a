#pragma once
// Board power of one GPU by what it is doing (issue 23's energy model): a GPU inside a job draws its clocked-up
// idle power, and each kind of work adds a fraction of the headroom up to the board power limit. Measured on an H200
// by calibrate/cuda/power_main.cu (scenarios/measured/h200-2026-12-04/README.md): 121.2 W with the context open and
// nothing running, 691.1 W for back-to-back BF16 GEMMs (held at the 700 W limit by the power cap), 587.3 W for an
// HBM-bound copy on every SM, 176.5 W for the same copy on 16 SMs (a collective's footprint).

#include "hardware/gpu_spec.h"

namespace orrery {

/// Defaults for a GPU whose preset has no `board_power` measurement: the H200's, as fractions.
/// Source: scenarios/measured/h200-2026-12-04/power-summary.json (idle the mean of the two idle phases).
inline constexpr double kIdleFractionOfLimit = 121.2 / 700.0;           // 0.173
inline constexpr double kTensorFraction = (691.1 - 121.2) / (700.0 - 121.2);   // 0.985
inline constexpr double kMemoryFraction = (587.3 - 121.2) / (700.0 - 121.2);   // 0.805
inline constexpr double kCommunicationFraction = (176.5 - 121.2) / (700.0 - 121.2);  // 0.096

/// What a GPU is doing during an interval: any mix of tensor-core work (GEMMs, attention), memory-bound kernels
/// (elementwise, norms, the optimizer, copies) and communication kernels (collectives, sends and receives).
struct GpuActivity {
  bool tensor = false, memory = false, communication = false;
};

/// The board power model of one GPU, in watts.
struct GpuPower {
  double limit_W = 0;  // the board power limit (GpuSpec::tdp_watts)
  double idle_W = 0;   // clocks up, nothing running (a bubble, a wait for a collective)
  double tensor_fraction = kTensorFraction, memory_fraction = kMemoryFraction,
         communication_fraction = kCommunicationFraction;  // each of (limit - idle)

  /// idle + (limit - idle) x min(1, sum of the active kinds' fractions): work that runs at once adds up until the
  /// power cap holds the board at its limit (the H200's GEMM beside a 16-SM copy drew 690.5 W, as the GEMM alone).
  /// Always within [idle_W, limit_W].
  double watts(GpuActivity a) const;
};

/// The power model of `gpu`: its measured `board_power` where the preset has one, else the H200's fractions scaled
/// to its tdp_W (an assumption for other GPUs, stated in hardware/presets/gpus.json's notes).
GpuPower gpu_power(const GpuSpec& gpu);

}  // namespace orrery
