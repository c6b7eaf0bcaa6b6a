#pragma once
// Lowering of the word (and position) embedding on the first virtual stage, and of the final norm, LM head and
// vocabulary-parallel cross-entropy loss on the last (Megatron-LM VocabParallelEmbedding,
// vocab_parallel_cross_entropy).

#include <vector>

#include "sim/lower/context.h"

namespace orrery {

class EmbeddingHeadLowering {
 public:
  explicit EmbeddingHeadLowering(Emitter& emit);

  MaybeTask embedding_forward(MaybeTask after, std::vector<ParamUse>* params);
  MaybeTask embedding_backward(MaybeTask grad, std::vector<ParamUse>* params);
  /// Final norm, LM head and loss forward; returns the loss task. `final_norm` false: a multi-token prediction
  /// depth's pass through the shared head, whose input its own final norm has produced.
  MaybeTask head_forward(MaybeTask input, std::vector<ParamUse>* params, bool final_norm = true);
  /// Loss and LM head backward and final norm backward; returns the task producing the hidden-state gradient.
  MaybeTask head_backward(MaybeTask after, std::vector<ParamUse>* params, bool final_norm = true);

  /// Bytes the embedding saves for one micro-batch (dropout mask, embedding-norm input).
  Bytes embedding_saved() const;

 private:
  Emitter& emit_;
  const LoweringContext& ctx_;
  Bytes hidden_bytes_full_ = 0;  // b s h elements of activations
  Bytes hidden_bytes_sp_ = 0;    // the same, sharded by sequence parallelism
  Bytes logits_bytes_ = 0;       // b s V/tp in activation precision
  bool dropout_ = false;
};

}  // namespace orrery
