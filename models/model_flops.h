#pragma once
// Model FLOPs of one training step, computed from the architecture (not from the lowered graph, so tests can hold
// the two against each other). Convention of DESIGN.md "Report": every GEMM including the LM head and the router,
// attention with the full score matrix (PaLM, arXiv:2204.02311 Appendix B; SC21 eq. 3), active experts only;
// forward + backward = 3x forward. Elementwise work is not counted.

#include <cstdint>

#include "models/model_spec.h"
#include "models/units.h"

namespace orrery {

enum class AttentionFlops {
  kFullMatrix,   // the whole s x s score matrix (SC21, PaLM, NeMo <= 24.07)
  kCausalHalved  // half of it (Megatron-Bridge 25.09+, DESIGN.md mfu_causal)
};

/// Training FLOPs (forward and backward) for one sequence of `seq_length` tokens. `lm_head_vocab` is the vocabulary
/// the LM head GEMM really has (Megatron pads it; see sim/vocab). Multi-token prediction depths count their layer,
/// projection and LM-head pass, as Megatron-LM's num_floating_point_operations does.
Flops training_flops_per_sequence(const ModelSpec& model, std::int64_t seq_length, std::int64_t lm_head_vocab,
                                  AttentionFlops attention);

/// Forward GEMM FLOPs of transformer layer `layer` per token (2 x the weights each token multiplies).
Flops layer_gemm_flops_per_token(const ModelSpec& model, int layer);

/// Hardware FLOPs per iteration of a GPT model with full recomputation, as SC21 (Narayanan et al.,
/// arXiv:2104.04473) eq. 3 counts them: 96 B s l h^2 (1 + s/(6h) + V/(16 l h)).
Flops sc21_flops_per_iteration(double batch, double seq, double layers, double hidden, double vocab);

/// Model FLOPs per iteration without recomputation, Korthikanti et al. (arXiv:2205.05198) Section 6:
/// 72 B s l h^2 (1 + s/(6h) + V/(12 l h)).
Flops korthikanti_model_flops_per_iteration(double batch, double seq, double layers, double hidden, double vocab);

}  // namespace orrery
