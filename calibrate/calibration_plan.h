#pragma once
// What to measure on a GPU: the GEMM and attention shapes sim/ lowers for a set of scenarios (so the profile covers
// the ops predictions actually price), plus log-spaced grids that let the profiled model interpolate between them
// (hardware/profiled_compute.h), memory-kernel sizes, collective sizes and the launch overhead. Written as the
// plan file orrery-calibrate and tools/calibrate_attention.py read (calibrate/bench/bench_plan.h).

#include <cstdint>
#include <string>
#include <vector>

#include "calibrate/bench/bench_plan.h"
#include "sim/scenario.h"

namespace orrery {

struct CalibrationPlanOptions {
  /// GEMM grid: every (m, n, k) over these sizes, in every grid dtype. Powers of two from 512 to 16384 span the
  /// token counts (sequence x micro-batch) and hidden sizes / TP of the models in scenarios/.
  std::vector<std::int64_t> gemm_grid{512, 1024, 2048, 4096, 8192, 16384};
  std::vector<std::string> gemm_grid_dtypes{"bf16", "fp16", "tf32", "fp8"};
  /// Sequence lengths measured for every attention head shape the scenarios lower (batch chosen to keep
  /// `attention_tokens` tokens per call, at least 1).
  std::vector<std::int64_t> attention_seqs{512, 1024, 2048, 4096, 8192, 16384, 32768};
  std::int64_t attention_tokens = 32768;
  bool grid = true;  // false: only the scenarios' own shapes
};

/// The plan for `scenarios` (each lowered as predict lowers it). Shapes appear once each, in a stable order: the
/// scenarios' GEMMs, the grid, memory kernels (copy, elementwise, reduction at 32 KiB x 4^i up to 32 GiB: one
/// 8192-wide BF16 RMSNorm row at the small end, past the logits of a 128K vocabulary at the large end), collectives
/// (1 KiB x 4^i up to 1 GiB, five ops), attention, launch. Grouped (MoE) GEMMs contribute their per-expert shape;
/// strided-batched GEMMs (unfused attention scores) and FP32 GEMMs are not measured. Errors: those of lowering.
/// `notes`, when given, receives a line for each kind of op the scenarios lower that the plan cannot measure.
bench::BenchPlan calibration_plan(const std::vector<Scenario>& scenarios, const CalibrationPlanOptions& options = {},
                                  std::vector<std::string>* notes = nullptr);

}  // namespace orrery
