#pragma once
// A compute cost model that prices ops from a measured GPU profile where the profile covers them, and falls back to
// the default (roofline) model elsewhere, counting the fallbacks so that the report can say so.
//
// GEMMs: an exact (m, n, k, dtype) sample is its measured time. Between samples, log(time) is interpolated
// trilinearly in (log m, log n, log k) over the grid the profile's samples span (the calibration measures a
// log-spaced grid), so a shape between two measured neighbours lies between their times. A shape outside the
// grid, or whose grid cell lacks a corner, goes to the default model. Grouped GEMMs are `batch` kernels of the
// per-expert shape; strided-batched GEMMs go to the default model.
// Memory-bound kernels: log(time) interpolated linearly in log(bytes) between copy samples; outside, default.

#include <memory>
#include <string>

#include "hardware/compute_cost.h"
#include "hardware/gpu_profile.h"

namespace orrery {

class ProfiledComputeModel final : public ComputeCostModel {
 public:
  ProfiledComputeModel(GpuProfile profile, std::unique_ptr<ComputeCostModel> fallback);
  std::string name() const override { return "profile"; }
  Seconds gemm(const GemmShape& shape) const override;
  Seconds attention(const AttentionShape& shape) const override { return fallback_->attention(shape); }
  Seconds elementwise(const ElementwiseShape& shape) const override;
  Seconds host_sync() const override { return fallback_->host_sync(); }
  Seconds host_op(const HostOpShape& shape) const override { return fallback_->host_op(shape); }

  /// GEMM time from the profile alone, or a negative value when the profile does not cover the shape.
  Seconds profiled_gemm(std::int64_t m, std::int64_t n, std::int64_t k, DType dtype) const;

  /// Ops priced by the default model because the profile did not cover them, since construction.
  std::int64_t uncovered_gemms() const { return uncovered_gemms_; }
  std::int64_t uncovered_memory() const { return uncovered_memory_; }
  /// One uncovered GEMM shape, for the warning ("" when none).
  const std::string& example_uncovered() const { return example_; }
  const GpuProfile& profile() const { return profile_; }

 private:
  GpuProfile profile_;
  std::unique_ptr<ComputeCostModel> fallback_;
  mutable std::int64_t uncovered_gemms_ = 0, uncovered_memory_ = 0;
  mutable std::string example_;
};

}  // namespace orrery
