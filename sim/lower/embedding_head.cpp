#include "sim/lower/embedding_head.h"

#include "sim/lower/param_groups.h"

namespace orrery {

namespace {

void record(std::vector<ParamUse>* params, const Emitter& emit, const std::vector<ParamGroup>& groups,
            const char* name, MaybeTask task, bool forward) {
  record_param_use(params, emit, groups, name, -1, task, forward);
}

}  // namespace

EmbeddingHeadLowering::EmbeddingHeadLowering(Emitter& emit) : emit_(emit), ctx_(emit.ctx()) {
  const std::int64_t h = ctx_.model.hidden_size;
  hidden_bytes_full_ = ctx_.tokens * h * ctx_.act_bytes;
  hidden_bytes_sp_ = ctx_.tokens_sp * h * ctx_.act_bytes;
  logits_bytes_ = ctx_.tokens * (ctx_.padded_vocab / ctx_.tp) * ctx_.act_bytes;
  dropout_ = ctx_.model.hidden_dropout > 0.0;
}

Bytes EmbeddingHeadLowering::embedding_saved() const {
  Bytes saved = dropout_ ? ctx_.tokens_sp * ctx_.model.hidden_size : 0;
  if (ctx_.model.embedding_norm) saved += hidden_bytes_sp_;
  return saved;
}

MaybeTask EmbeddingHeadLowering::embedding_forward(MaybeTask after, std::vector<ParamUse>* params) {
  const auto groups = embedding_param_groups(ctx_, emit_.chunk());
  const bool learned = ctx_.model.position == PositionKind::kLearned;
  // Row gather from the local vocabulary shard (and the position rows), written as a full b s h tensor.
  MaybeTask t = emit_.elementwise("embedding", hidden_bytes_full_ * (learned ? 2 : 1), hidden_bytes_full_, {after});
  record(params, emit_, groups, "word_embedding", t, true);
  record(params, emit_, groups, "position_embedding", t, true);
  if (ctx_.tp > 1) {
    auto kind = ctx_.plan.sequence_parallel ? CollectiveKind::kReduceScatter : CollectiveKind::kAllReduce;
    t = emit_.collective("embedding", Stream::kTp, GroupKind::kTp, kind, hidden_bytes_full_, {t});
  }
  if (dropout_) {
    t = emit_.elementwise("embedding_dropout", hidden_bytes_sp_, hidden_bytes_sp_ + ctx_.tokens_sp * ctx_.model.hidden_size, {t});
    emit_.save(t, ctx_.tokens_sp * ctx_.model.hidden_size);
  }
  if (ctx_.model.embedding_norm) {
    t = emit_.elementwise("embedding_norm", hidden_bytes_sp_, hidden_bytes_sp_, {t});
    emit_.save(t, hidden_bytes_sp_);
    record(params, emit_, groups, "embedding_norm", t, true);
  }
  return t;
}

MaybeTask EmbeddingHeadLowering::embedding_backward(MaybeTask grad, std::vector<ParamUse>* params) {
  const auto groups = embedding_param_groups(ctx_, emit_.chunk());
  MaybeTask g = grad;
  if (ctx_.model.embedding_norm) {
    g = emit_.elementwise("embedding_norm", 2 * hidden_bytes_sp_, hidden_bytes_sp_, {g});
    emit_.release(g, hidden_bytes_sp_);
    record(params, emit_, groups, "embedding_norm", g, false);
  }
  if (dropout_) {
    const Bytes mask = ctx_.tokens_sp * ctx_.model.hidden_size;
    g = emit_.elementwise("embedding_dropout", hidden_bytes_sp_ + mask, hidden_bytes_sp_, {g});
    emit_.release(g, mask);
  }
  if (ctx_.plan.sequence_parallel && ctx_.tp > 1) {
    g = emit_.collective("embedding", Stream::kTp, GroupKind::kTp, CollectiveKind::kAllGather, hidden_bytes_full_, {g});
  }
  // Scatter-add of the gradient rows into the main-gradient table (read-modify-write of touched rows).
  const Bytes rows = ctx_.tokens * ctx_.model.hidden_size * ctx_.grad_bytes;
  MaybeTask w;
  {
    const PhaseScope weight(emit_, Phase::kBackwardWeight);
    w = emit_.elementwise("embedding", hidden_bytes_full_ + rows, rows, {g});
  }
  record(params, emit_, groups, "word_embedding", w, false);
  record(params, emit_, groups, "position_embedding", w, false);
  return w;
}

MaybeTask EmbeddingHeadLowering::head_forward(MaybeTask input, std::vector<ParamUse>* params, bool final_norm) {
  const auto groups = head_param_groups(ctx_, emit_.chunk());
  const std::int64_t T = ctx_.tokens, h = ctx_.model.hidden_size, v = ctx_.padded_vocab / ctx_.tp;
  MaybeTask n = input;
  if (final_norm) {
    n = emit_.elementwise("final_norm", hidden_bytes_sp_, hidden_bytes_sp_, {input});
    emit_.save(n, hidden_bytes_sp_);
    record(params, emit_, groups, "final_norm", n, true);
  }
  MaybeTask x = n;
  if (ctx_.plan.sequence_parallel && ctx_.tp > 1) {
    x = emit_.collective("lm_head", Stream::kTp, GroupKind::kTp, CollectiveKind::kAllGather, hidden_bytes_full_, {n});
  }
  // Megatron-Core's output layer is a plain linear, not a Transformer Engine one: BF16 even in FP8 runs.
  MaybeTask head = emit_.gemm("lm_head", GemmShape{T, v, h, 1, ctx_.act_dtype}, {x});
  emit_.save(head, hidden_bytes_sp_ + logits_bytes_);  // its input (sharded under SP) and the logits
  record(params, emit_, groups, "lm_head", head, true);
  // Vocabulary-parallel cross-entropy in fp32: max, exp and sum over the local shard with three small
  // all-reduces of b s fp32 values across TP; the fp32 softmax is kept for the backward.
  const Bytes softmax = T * v * 4;
  const Bytes row = T * 4;
  MaybeTask m = emit_.elementwise("cross_entropy", logits_bytes_, row, {head});
  m = emit_.collective("cross_entropy", Stream::kTp, GroupKind::kTp, CollectiveKind::kAllReduce, row, {m});
  MaybeTask e = emit_.elementwise("cross_entropy", logits_bytes_, softmax, {m});
  emit_.save(e, softmax);
  emit_.release(e, logits_bytes_);
  MaybeTask r = emit_.collective("cross_entropy", Stream::kTp, GroupKind::kTp, CollectiveKind::kAllReduce, row, {e});
  r = emit_.collective("cross_entropy", Stream::kTp, GroupKind::kTp, CollectiveKind::kAllReduce, row, {r});
  return emit_.elementwise("loss", row, row, {e, r});
}

MaybeTask EmbeddingHeadLowering::head_backward(MaybeTask after, std::vector<ParamUse>* params, bool final_norm) {
  const auto groups = head_param_groups(ctx_, emit_.chunk());
  const std::int64_t T = ctx_.tokens, h = ctx_.model.hidden_size, v = ctx_.padded_vocab / ctx_.tp;
  const Bytes softmax = T * v * 4;
  MaybeTask g = emit_.elementwise("cross_entropy", softmax, logits_bytes_, {after});
  emit_.save(g, logits_bytes_);  // gradient of the logits, alive until the head's weight gradient
  emit_.release(g, softmax);
  MaybeTask d = emit_.gemm("lm_head", GemmShape{T, h, v, 1, ctx_.act_dtype}, {g});
  const bool sp = ctx_.plan.sequence_parallel && ctx_.tp > 1;
  MaybeTask grad_input = d;
  if (ctx_.tp > 1) {
    auto kind = sp ? CollectiveKind::kReduceScatter : CollectiveKind::kAllReduce;
    grad_input = emit_.collective("lm_head", Stream::kTp, GroupKind::kTp, kind, hidden_bytes_full_, {d});
  }
  MaybeTask regather;
  if (sp) {
    regather = emit_.collective("lm_head", Stream::kTp, GroupKind::kTp, CollectiveKind::kAllGather, hidden_bytes_full_, {d});
    emit_.save(regather, hidden_bytes_full_);
  }
  MaybeTask w;
  {
    const PhaseScope weight(emit_, Phase::kBackwardWeight);
    w = emit_.gemm("lm_head", GemmShape{v, h, T, 1, ctx_.act_dtype}, {regather});
  }
  emit_.release(w, logits_bytes_ + hidden_bytes_sp_ + (sp ? hidden_bytes_full_ : 0));
  record(params, emit_, groups, "lm_head", w, false);
  if (!final_norm) return grad_input;
  MaybeTask n = emit_.elementwise("final_norm", 2 * hidden_bytes_sp_, hidden_bytes_sp_, {grad_input});
  emit_.release(n, hidden_bytes_sp_);
  record(params, emit_, groups, "final_norm", n, false);
  return n;
}

}  // namespace orrery
