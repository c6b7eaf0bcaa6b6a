#pragma once
// The routed experts' down-projection bias (GPT-OSS: add_bias_linear with MoE), as Megatron-Core's TEGroupedMLP
// applies it. Its down projection is a Transformer Engine GroupedLinear built with skip_bias_add=True, and the bias is
// added afterwards in Python, one expert at a time, scaled by each token copy's router probability
// (megatron/core/transformer/moe/experts.py, TEGroupedMLP._apply_bias, identical in core_v0.15.0 and core_v0.16.0):
//
//   torch.cat([t + b * p for t, b, p in zip(torch.split(out, tokens_per_expert), biases,
//                                           torch.split(permuted_probs, tokens_per_expert))])
//
// (The up projection's bias is added inside the grouped GEMM, skip_bias_add=False, and costs no extra pass.)

#include <cstdint>

#include "models/ops.h"

namespace orrery {

/// Forward traffic of the per-expert bias over `rows` token copies of `hidden` values of `act_bytes` each, on a rank
/// holding `local_experts` experts. Per expert, `b * p` broadcasts the bias over its rows (writes the rows; its
/// operands are a vector and a column), `t + (b p)` reads two row blocks and writes one; torch.cat then copies all
/// rows once more. With R = rows x hidden x act_bytes: read 3 R, written 3 R, in 2 local_experts + 1 kernels. (The
/// final `.to(dtype)` is a no-op: the probabilities are in the activations' dtype, Megatron-Core's router computing
/// them in its logits' dtype when moe_router_dtype is unset, as GPT-OSS leaves it.)
ElementwiseShape expert_bias_forward(std::int64_t rows, std::int64_t hidden, std::int64_t act_bytes,
                                     std::int64_t local_experts);

/// Backward traffic of the same under autograd, for the gradient g of the concatenated output: the cat's backward
/// takes views and the add's passes g on; per expert the product's backward computes the bias gradient
/// (g * p, then a sum over rows) and the probability gradient (g * b, then a sum over features), each reading and
/// writing a row block and reading it again to reduce it, and Megatron's DDP hook adds the bias gradient to its main
/// gradient; torch.split's backward concatenates the row blocks' gradients (reads and writes R), and the
/// probabilities' split one more small cat. Read 5 R, written 3 R, in 5 local_experts + 2 kernels.
ElementwiseShape expert_bias_backward(std::int64_t rows, std::int64_t hidden, std::int64_t act_bytes,
                                      std::int64_t local_experts);

}  // namespace orrery
