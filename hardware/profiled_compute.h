#pragma once
// A compute cost model that prices ops from a measured GPU profile where the profile covers them, and falls back to
// the default (roofline) model elsewhere, counting the fallbacks so that the report can say so.
//
// GEMMs: an exact (m, n, k, dtype) sample is its measured time. Between samples, log(time) is interpolated
// trilinearly in (log m, log n, log k) over the smallest cell around the shape whose eight corners were all measured
// (the calibration measures a log-spaced grid plus the scenarios' own shapes, which do not complete a lattice), so
// a shape between measured neighbours lies between their times. A shape outside every complete cell goes to the
// default model. Grouped GEMMs are `batch` kernels of the
// per-expert shape; strided-batched GEMMs go to the default model.
// Memory-bound kernels: log(time) interpolated linearly in log(bytes) between the samples of the task's kernel
// family (ElementwiseShape::kernel: copy samples for generic kernels, a PyTorch family's own samples for its tasks);
// above the largest, that sample's bandwidth (large copies are bandwidth-bound). Below a PyTorch family's smallest
// sample (16 MiB and up), the copy samples' time scaled by the family's time over the copy's at that smallest size;
// a family the profile did not measure, the copy samples; below the smallest copy sample, the default model.
// Attention (self-attention without a window, CP half block or packing, dqk = dv): samples of the same head_dim,
// mask, direction, dtype and GQA group size (heads / kv_heads). Time per (batch x heads) is taken from the sample
// at each measured sequence length (the one whose batch x heads is nearest the op's), log-interpolated in
// log(seq) between the two measured lengths around the op's, and scaled by the op's batch x heads: fused kernels
// tile over batch x heads x query blocks, so once a call fills the GPU its time grows in proportion. A measured
// shape returns its measurement. Other shapes, and lengths outside the measured range, go to the default model.

#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "hardware/compute_cost.h"
#include "hardware/gpu_profile.h"

namespace orrery {

class ProfiledComputeModel final : public ComputeCostModel {
 public:
  /// `clock_slowdown` multiplies the measured GEMM and attention times: the clock they were measured at over the
  /// clock the priced GPU sustains (1: priced as measured).
  ProfiledComputeModel(GpuProfile profile, std::unique_ptr<ComputeCostModel> fallback, double clock_slowdown = 1.0);
  std::string name() const override { return "profile"; }
  Seconds gemm(const GemmShape& shape) const override;
  Seconds attention(const AttentionShape& shape) const override;
  Seconds elementwise(const ElementwiseShape& shape) const override;
  Seconds host_sync() const override { return fallback_->host_sync(); }
  Seconds host_op(const HostOpShape& shape) const override { return fallback_->host_op(shape); }

  /// GEMM time from the profile alone, or a negative value when the profile does not cover the shape.
  Seconds profiled_gemm(std::int64_t m, std::int64_t n, std::int64_t k, DType dtype) const;

  /// Attention time from the profile alone, or a negative value when the profile does not cover the shape.
  Seconds profiled_attention(const AttentionShape& shape) const;

  /// Ops priced by the default model because the profile did not cover them, since construction.
  std::int64_t uncovered_gemms() const { return uncovered_gemms_; }
  std::int64_t uncovered_memory() const { return uncovered_memory_; }
  std::int64_t uncovered_attention() const { return uncovered_attention_; }
  /// One uncovered GEMM shape, for the warning ("" when none).
  const std::string& example_uncovered() const { return example_; }
  const GpuProfile& profile() const { return profile_; }

 private:
  /// Seconds for `bytes` interpolated over the memory samples of `kind` as described above; 0 below the smallest
  /// sample or where there is none of that kind.
  Seconds memory_samples_time(const std::string& kind, Bytes bytes) const;
  GpuProfile profile_;
  double clock_slowdown_ = 1.0;
  std::unique_ptr<ComputeCostModel> fallback_;
  struct GemmTable {
    std::map<std::tuple<std::int64_t, std::int64_t, std::int64_t>, Seconds> seconds;
    std::vector<std::int64_t> m, n, k;  // the measured values on each axis, sorted
  };
  std::map<DType, GemmTable> gemm_tables_;
  mutable std::int64_t uncovered_gemms_ = 0, uncovered_memory_ = 0, uncovered_attention_ = 0;
  mutable std::string example_;
};

}  // namespace orrery
