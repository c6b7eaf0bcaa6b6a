#pragma once
// Model FLOPs of one training step, computed from the architecture (not from the lowered graph, so tests can hold
// the two against each other). Convention of ARCHITECTURE.md "Report": every GEMM including the LM head and the router,
// attention with the full score matrix (PaLM, arXiv:2204.02311 Appendix B; SC21 eq. 3), active experts only;
// forward + backward = 3x forward. Elementwise work is not counted.

#include <cstdint>

#include "models/model_spec.h"
#include "models/units.h"

namespace orrery {

enum class AttentionFlops {
  kFullMatrix,   // the whole s x s score matrix (SC21, PaLM, NeMo <= 24.07)
  kCausalHalved  // half of it (Megatron-Bridge 25.09+, the report's mfu_causal)
};

/// What a count takes of the attention mask besides the causal convention.
struct AttentionSpan {
  /// Sliding-window layers: each query sees at most `sliding_window` keys (false: counted as full attention, as a
  /// FLOP counter that ignores windows does).
  bool windows = true;
  /// Packed documents (sim/packing.h): the attention term scales by the batch's q x k pairs within documents over
  /// those of one document per sequence (PackedBatch::packed_over_full; 1 unpacked). The same ratio serves the
  /// full-matrix count, whose pairs per piece (l^2 against s^2) differ from the causal ones by under 1/l.
  double packed = 1.0;
};

/// Keys one query attends on average in a layer with window `window` (0: none) over `seq` tokens, in convention
/// `attention`: the full matrix counts min(window, seq) keys per query (s without a window, the PaLM/SC21 square);
/// causal-halved counts the keys the causal mask keeps: s/2 without a window, and with one
/// (w (w + 1) / 2 + (s - w) w) / s, the first w queries seeing 1..w keys and the rest w.
double attended_keys_per_query(std::int64_t seq, std::int64_t window, AttentionFlops attention);

/// Training FLOPs (forward and backward) for one sequence of `seq_length` tokens. `lm_head_vocab` is the vocabulary
/// the LM head GEMM really has (Megatron pads it; see sim/vocab). Multi-token prediction depths count their layer,
/// projection and LM-head pass, as Megatron-LM's num_floating_point_operations does. Attention is counted over what
/// each layer attends (`span`: its sliding window, packed documents).
Flops training_flops_per_sequence(const ModelSpec& model, std::int64_t seq_length, std::int64_t lm_head_vocab,
                                  AttentionFlops attention, AttentionSpan span = {});

/// Forward GEMM FLOPs of transformer layer `layer` per token (2 x the weights each token multiplies).
Flops layer_gemm_flops_per_token(const ModelSpec& model, int layer);

/// Hardware FLOPs per iteration of a GPT model with full recomputation, as SC21 (Narayanan et al.,
/// arXiv:2104.04473) eq. 3 counts them: 96 B s l h^2 (1 + s/(6h) + V/(16 l h)).
Flops sc21_flops_per_iteration(double batch, double seq, double layers, double hidden, double vocab);

/// Model FLOPs per iteration without recomputation, Korthikanti et al. (arXiv:2205.05198) Section 6:
/// 72 B s l h^2 (1 + s/(6h) + V/(12 l h)).
Flops korthikanti_model_flops_per_iteration(double batch, double seq, double layers, double hidden, double vocab);

}  // namespace orrery
