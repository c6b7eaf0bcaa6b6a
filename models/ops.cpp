#include "models/ops.h"

#include <algorithm>

namespace orrery {

int dtype_bytes(DType dtype) {
  switch (dtype) {
    case DType::kFp32:
    case DType::kTf32: return 4;
    case DType::kFp16:
    case DType::kBf16: return 2;
    case DType::kFp8: return 1;
  }
  return 4;
}

const char* to_string(DType dtype) {
  switch (dtype) {
    case DType::kFp32: return "fp32";
    case DType::kTf32: return "tf32";
    case DType::kFp16: return "fp16";
    case DType::kBf16: return "bf16";
    case DType::kFp8: return "fp8";
  }
  return "?";
}

Flops GemmShape::flops() const {
  return 2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k) * static_cast<double>(batch);
}

Bytes GemmShape::bytes() const {
  // FP8 GEMMs write BF16 outputs (Transformer Engine's default output type).
  const Bytes out = dtype == DType::kFp8 ? 2 : dtype_bytes(dtype);
  return ((m * k + k * n) * dtype_bytes(dtype) + m * n * out) * batch;
}

Flops AttentionShape::model_flops() const {
  // Each query against every key it may see: kv_len, or the window when one is shorter (models/model_flops.h,
  // attended_keys_per_query, full matrix); documents packed into the sequence attend within themselves.
  const std::int64_t keys = window > 0 ? std::min(window, kv_len) : kv_len;
  double forward = 2.0 * static_cast<double>(batch * heads) * static_cast<double>(q_len) * static_cast<double>(keys) *
                   static_cast<double>(head_dim_qk + head_dim_v) * packed_fraction;
  return backward ? 2.0 * forward : forward;
}

double AttentionShape::kept_fraction() const {
  // Query i (0-based, aligned to the end of the keys) sees keys [i + kv - q - window + 1, i + kv - q], clipped.
  const double q = static_cast<double>(q_len), kv = static_cast<double>(kv_len);
  if (half_block) return 0.5 * packed_fraction;
  if (!causal && window <= 0) return packed_fraction;
  double offset = kv - q;  // keys before the first query
  double kept = 0.0;
  if (window <= 0) {
    // sum_{i=0}^{q-1} (offset + i + 1)
    kept = q * offset + q * (q + 1.0) / 2.0;
  } else {
    const double w = static_cast<double>(window);
    // Each query sees min(offset + i + 1, w) keys.
    double full_from = std::max(0.0, w - offset - 1.0);  // first i with offset + i + 1 >= w
    double ramp = std::min(q, full_from);
    kept = ramp * offset + ramp * (ramp + 1.0) / 2.0 + (q - ramp) * w;
  }
  return std::clamp(kept / (q * kv), 0.0, 1.0) * packed_fraction;
}

Flops AttentionShape::executed_flops() const {
  double forward = 2.0 * static_cast<double>(batch * heads) * static_cast<double>(q_len) * static_cast<double>(kv_len) *
                   static_cast<double>(head_dim_qk + head_dim_v) * kept_fraction();
  return backward ? 2.5 * forward : forward;
}

Bytes AttentionShape::bytes() const {
  const Bytes e = dtype_bytes(dtype);
  Bytes q = batch * q_len * heads * head_dim_qk * e;
  Bytes k = batch * kv_len * kv_heads * head_dim_qk * e;
  Bytes v = batch * kv_len * kv_heads * head_dim_v * e;
  Bytes o = batch * q_len * heads * head_dim_v * e;
  Bytes forward = q + k + v + o;
  return backward ? 2 * forward + o : forward;  // + dO in, dQ dK dV out, O re-read
}

const char* profile_kind(ElementwiseKernel k) {
  switch (k) {
    case ElementwiseKernel::kGeneric: return "copy";
    case ElementwiseKernel::kVectorized: return "pytorch_vectorized";
    case ElementwiseKernel::kCast: return "pytorch_cast";
    case ElementwiseKernel::kCastCopy: return "pytorch_cast_copy";
    case ElementwiseKernel::kStrided: return "pytorch_strided";
    case ElementwiseKernel::kStridedHalf: return "pytorch_strided_half";
    case ElementwiseKernel::kStridedCast: return "pytorch_strided_cast";
    case ElementwiseKernel::kCat: return "pytorch_cat";
    case ElementwiseKernel::kLogSoftmax: return "pytorch_log_softmax";
    case ElementwiseKernel::kLogSoftmaxBackward: return "pytorch_log_softmax_backward";
    case ElementwiseKernel::kFusedAdamW: return "pytorch_adamw";
  }
  return "copy";
}

}  // namespace orrery
