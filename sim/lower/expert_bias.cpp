#include "sim/lower/expert_bias.h"

namespace orrery {

ElementwiseShape expert_bias_forward(std::int64_t rows, std::int64_t hidden, std::int64_t act_bytes,
                                     std::int64_t local_experts) {
  // Source: Megatron-Core TEGroupedMLP._apply_bias (megatron/core/transformer/moe/experts.py, core_v0.15.0).
  const Bytes r = rows * hidden * act_bytes;
  ElementwiseShape s;
  s.bytes_read = 3 * r;     // t + (b p): 2 R; cat: R
  s.bytes_written = 3 * r;  // b p: R; t + (b p): R; cat: R
  s.kernels = 2 * local_experts + 1;
  return s;
}

ElementwiseShape expert_bias_backward(std::int64_t rows, std::int64_t hidden, std::int64_t act_bytes,
                                      std::int64_t local_experts) {
  // Source: the autograd formulas of mul (grad * other, summed to the operand's shape) and split (cat of the
  // gradients), PyTorch tools/autograd/derivatives.yaml, applied to TEGroupedMLP._apply_bias.
  const Bytes r = rows * hidden * act_bytes;
  ElementwiseShape s;
  s.bytes_read = 5 * r;     // g p and g b: 2 R; their two reductions: 2 R; split's cat: R
  s.bytes_written = 3 * r;  // g p and g b: 2 R; split's cat: R
  s.kernels = 5 * local_experts + 2;
  return s;
}

}  // namespace orrery
