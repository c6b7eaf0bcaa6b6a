#pragma once
// Lowering of one multi-token prediction (MTP) depth as Megatron-Core runs it (MultiTokenPredictionLayer; DeepSeek-V3
// report arXiv:2412.19437 Section 2.2, Eq. 21-23), on the rank of the last virtual stage:
//   forward:  embedding of the tokens shifted by the depth (the shared word embedding, vocabulary-parallel), RMSNorm
//             of it and of the incoming hidden state (the main model's output, or the previous depth's), their
//             concatenation [b s 2h], the column-parallel projection eh_proj 2h -> h (its output gathered over TP,
//             then split again along the sequence under sequence parallelism), one transformer layer of the last
//             decoder layer's kind (layer index num_layers + depth), and the depth's final norm;
//   backward: the mirror image; the gradient of the incoming hidden state joins the main (or previous depth's)
//             gradient, and the embedding gradient is scattered into the shared table.
// The depth's pass through the shared LM head and loss is EmbeddingHeadLowering's, without its final norm.
//
// Memory: the embedding norm's input, the projection's input (FP8 under FP8) and the final norm's input, on top of
// the layer's own saves. The hidden-state norm's input is the tensor the main head (or the previous depth's head)
// already keeps, so it costs nothing extra. Full recompute applies to the inner layer only (Megatron-Core's
// uniform method also reruns the norms and eh_proj, about 2h^2 per token: left out).

#include <vector>

#include "sim/lower/context.h"
#include "sim/lower/transformer_layer.h"

namespace orrery {

class MtpLowering {
 public:
  /// `depth`: 0-based, below model.mtp_num_layers.
  MtpLowering(Emitter& emit, int depth);

  /// Emits the forward pass from `hidden` (the task producing the incoming hidden state) and returns the task that
  /// produces the depth's normed output, the LM head's input.
  MaybeTask forward(MaybeTask hidden, const SavePolicy& save, std::vector<ParamUse>* params);

  /// Emits the backward pass from `grad` (the gradient of the depth's output) and returns the task producing the
  /// gradient of the incoming hidden state. With weight-gradient-only emission (ZB-H1's W step) `grad` is none.
  MaybeTask backward(MaybeTask grad, std::vector<ParamUse>* params);

 private:
  // The parameter group the shifted-token embedding reads: the word embedding itself on a one-stage pipeline, else
  // the copy Megatron keeps on the MTP rank (the LM head's when embeddings are tied).
  const char* embedding_group() const;
  void record(std::vector<ParamUse>* params, const char* name, int layer, MaybeTask task, bool forward) const;

  Emitter& emit_;
  const LoweringContext& ctx_;
  int layer_;
  std::vector<ParamGroup> groups_;       // the depth's layer groups (norms, eh_proj, the transformer layer)
  std::vector<ParamGroup> head_groups_;  // the head chunk's groups (the embedding copy)
  std::vector<ParamGroup> embedding_groups_;
  Bytes hidden_sp_ = 0;    // b s h / tp (sequence-parallel shard) in activation precision
  Bytes hidden_full_ = 0;  // b s h in activation precision
  Bytes concat_sp_ = 0;    // b s 2h / tp as eh_proj keeps it (FP8 under FP8)
};

}  // namespace orrery
