#include "hardware/compute_cost.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "models/error.h"

namespace orrery {

RooflineComputeModel::RooflineComputeModel(GpuSpec gpu, ComputeParams params, BytesPerSecond host_memory_bandwidth)
    : gpu_(std::move(gpu)), params_(std::move(params)), host_memory_bandwidth_(host_memory_bandwidth) {}

Seconds RooflineComputeModel::host_op(const HostOpShape& s) const {
  if (s.bytes <= 0) return 0.0;
  const double bytes = static_cast<double>(s.bytes);
  if (s.kind == HostOpShape::Kind::kHostMemory) {
    if (host_memory_bandwidth_ <= 0) {
      throw Error::invalid("cluster.host_memory_bandwidth_GB_s", "missing", "is needed to price CPU-offloaded work");
    }
    return bytes / (host_memory_bandwidth_ * params_.host_memory_efficiency);
  }
  return bytes / (gpu_.pcie_bandwidth * params_.pcie_efficiency);
}

Seconds RooflineComputeModel::memory_time(Bytes bytes) const {
  return static_cast<double>(bytes) / (gpu_.hbm_bandwidth * params_.hbm_efficiency);
}

Seconds RooflineComputeModel::gemm_compute_time(const GemmShape& s) const {
  if (s.m <= 0 || s.n <= 0 || s.k <= 0 || s.batch <= 0) return 0.0;
  // Long tensor-core kernels run at the clock the board power limit leaves (GpuSpec::sustained_clock_fraction).
  const double peak = gpu_.peak_for(s.dtype) * gpu_.sustained_clock_fraction();
  const double sms = static_cast<double>(gpu_.sm_count);
  const double k = static_cast<double>(s.k);
  // Separate kernels per group: each is its own set of waves.
  const std::int64_t per_kernel = s.grouped ? 1 : s.batch;
  const double kernels = s.grouped ? static_cast<double>(s.batch) : 1.0;
  const double k_factor = k / (k + params_.gemm_k_half);
  const double fraction = s.dtype == DType::kFp8
                              ? params_.gemm_fp8_peak_fraction * gpu_.fp8_scaling_fraction(s.fp8_scaling)
                              : params_.gemm_peak_fraction;
  Seconds best = std::numeric_limits<double>::infinity();
  for (const GemmTile& tile : params_.gemm_tiles) {
    // The GEMM runs as ceil(CTAs / SMs) waves; each wave costs one tile's FLOPs at one SM's share of the peak.
    const std::int64_t ctas = ((s.m + tile.m - 1) / tile.m) * ((s.n + tile.n - 1) / tile.n) * per_kernel;
    // A partial last wave costs a full one under plain tiling; split-K and stream-K kernels recover part of it.
    const double ideal = static_cast<double>(ctas) / sms;
    const double waves = ideal + params_.gemm_wave_tail * (std::ceil(ideal) - ideal);
    const double tile_flops = 2.0 * tile.m * tile.n * k;
    const double sm_rate = peak / sms * fraction * tile.relative_efficiency * k_factor;
    best = std::min(best, kernels * waves * tile_flops / sm_rate);
  }
  return best;
}

Seconds RooflineComputeModel::gemm(const GemmShape& s) const {
  if (s.m <= 0 || s.n <= 0 || s.k <= 0 || s.batch <= 0) return 0.0;
  const double kernels = s.grouped ? static_cast<double>(s.batch) : 1.0;
  return std::max(gemm_compute_time(s), memory_time(s.bytes())) + kernels * params_.launch_gap;
}

double RooflineComputeModel::attention_occupancy(const AttentionShape& s) const {
  // Thread blocks of a fused attention kernel: one per (sequence, head, 128-row tile), over query tiles forward and
  // key tiles backward (FlashAttention-2, arXiv:2307.08691 Section 3.2: the forward parallelises over query blocks,
  // the backward over key blocks; FlashAttention-3 and cuDNN keep 128-row tiles on Hopper). They run in waves over
  // the SMs, so a grid of few heads per GPU (high TP) or short sequences (CP blocks) leaves SMs idle in its last
  // wave. The measured rates (attention_peak_fraction) come from FlashAttention-3's benchmark grid, 16k tokens of
  // 16 heads of 128 (arXiv:2407.08608 Section 4.1; 2048 tiles), so the factor is taken relative to that grid's own
  // occupancy on this GPU.
  constexpr std::int64_t kTile = 128, kReferenceTiles = 16'384 / kTile * 16;
  const auto occupancy = [&](double tiles) {
    const double sms = static_cast<double>(gpu_.sm_count);
    return tiles / (std::ceil(tiles / sms) * sms);
  };
  const std::int64_t rows = s.backward ? s.kv_len : s.q_len;
  const double tiles = static_cast<double>(s.batch * s.heads * ((rows + kTile - 1) / kTile));
  return std::min(1.0, occupancy(tiles) / occupancy(static_cast<double>(kReferenceTiles)));
}

Seconds RooflineComputeModel::attention(const AttentionShape& s) const {
  if (s.batch <= 0 || s.heads <= 0 || s.q_len <= 0) return 0.0;
  const double fraction =
      s.backward ? (gpu_.attention_backward_fraction > 0 ? gpu_.attention_backward_fraction
                                                         : params_.attention_backward_peak_fraction)
                 : (gpu_.attention_forward_fraction > 0 ? gpu_.attention_forward_fraction
                                                        : params_.attention_forward_peak_fraction);
  // Narrow heads: fewer FLOPs per byte of Q, K, V and per softmax element, so a lower rate (FlashAttention-3's
  // measurements of cuDNN on H100, GpuSpec::attention_head_dim_64_*).
  const double d64 = s.backward ? gpu_.attention_head_dim_64_backward : gpu_.attention_head_dim_64_forward;
  double head_dim_ratio = 1.0;
  if (d64 > 0 && s.head_dim_qk < 128) {
    const double d = static_cast<double>(std::max<std::int64_t>(s.head_dim_qk, 64));
    head_dim_ratio = d64 + (1.0 - d64) * (d - 64.0) / 64.0;
  }
  Seconds compute = s.executed_flops() / (gpu_.peak_for(s.dtype) * gpu_.sustained_clock_fraction() * fraction *
                                          head_dim_ratio * attention_occupancy(s));
  return std::max(compute, memory_time(s.bytes())) + params_.launch_gap;
}

Seconds RooflineComputeModel::elementwise(const ElementwiseShape& s) const {
  if (s.bytes() <= 0) return 0.0;
  return memory_time(s.bytes()) + static_cast<double>(s.kernels) * params_.launch_gap;
}

}  // namespace orrery
