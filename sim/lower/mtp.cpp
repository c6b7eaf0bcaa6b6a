#include "sim/lower/mtp.h"

#include "sim/lower/fp8.h"
#include "sim/lower/param_groups.h"

namespace orrery {

MtpLowering::MtpLowering(Emitter& emit, int depth)
    : emit_(emit),
      ctx_(emit.ctx()),
      layer_(emit.ctx().model.num_layers + depth),
      groups_(layer_param_groups(emit.ctx(), emit.ctx().model.num_layers + depth, emit.chunk())),
      head_groups_(head_param_groups(emit.ctx(), emit.chunk())),
      embedding_groups_(embedding_param_groups(emit.ctx(), emit.chunk())) {
  const std::int64_t h = ctx_.model.hidden_size;
  hidden_sp_ = ctx_.tokens_sp * h * ctx_.act_bytes;
  hidden_full_ = ctx_.tokens * h * ctx_.act_bytes;
  concat_sp_ = ctx_.tokens_sp * 2 * h * linear_input_bytes(ctx_);
}

const char* MtpLowering::embedding_group() const {
  if (ctx_.layout.virtual_stages() == 1) return "word_embedding";
  return ctx_.model.tie_word_embeddings ? "lm_head" : "word_embedding";
}

void MtpLowering::record(std::vector<ParamUse>* params, const char* name, int layer, MaybeTask task,
                         bool forward) const {
  if (layer >= 0) {
    record_param_use(params, emit_, groups_, name, layer, task, forward);
  } else if (ctx_.layout.head_beside_embedding()) {
    // DualPipe(V): the embedding (tied or not) is the other chunk's group on this rank; its own backward finishes
    // the gradient.
    return;
  } else {
    // The shared embedding: a group of the embedding's own list on a one-stage pipeline, else of the head chunk's.
    const bool own = ctx_.layout.virtual_stages() == 1;
    record_param_use(params, emit_, own ? embedding_groups_ : head_groups_, name, -1, task, forward);
  }
}

MaybeTask MtpLowering::forward(MaybeTask hidden, const SavePolicy& save, std::vector<ParamUse>* params) {
  const std::int64_t T = ctx_.tokens, h = ctx_.model.hidden_size;
  const bool sp = ctx_.plan.sequence_parallel && ctx_.tp > 1;
  // Embedding of the shifted tokens: a row gather from the local vocabulary shard, summed over TP.
  MaybeTask e = emit_.elementwise("mtp_embedding", hidden_full_, hidden_full_, {hidden});
  record(params, embedding_group(), -1, e, true);
  if (ctx_.tp > 1) {
    e = emit_.collective("mtp_embedding", Stream::kTp, GroupKind::kTp,
                         sp ? CollectiveKind::kReduceScatter : CollectiveKind::kAllReduce, hidden_full_, {e});
  }
  MaybeTask en = emit_.elementwise("mtp_enorm", hidden_sp_, hidden_sp_, {e});
  emit_.save(en, hidden_sp_);
  record(params, "mtp_enorm", layer_, en, true);
  MaybeTask hn = emit_.elementwise("mtp_hnorm", hidden_sp_, hidden_sp_, {hidden});
  record(params, "mtp_hnorm", layer_, hn, true);
  // torch.cat of the two normed halves, [b s/tp 2h]: eh_proj's input, kept for its weight gradient.
  MaybeTask x = emit_.elementwise("mtp_concat", 2 * hidden_sp_, 2 * hidden_sp_, {en, hn});
  x = emit_fp8_weight_cast(emit_, "fp8_weight_cast", group_elements(groups_, "mtp_eh_proj"), x);
  if (uses_fp8(ctx_)) x = emit_fp8_cast(emit_, "fp8_cast", ctx_.tokens_sp * 2 * h, x, AmaxScope::kTpGroup);
  emit_.save(x, concat_sp_);
  if (sp) {
    x = emit_.collective("mtp_eh_proj", Stream::kTp, GroupKind::kTp, CollectiveKind::kAllGather,
                         T * 2 * h * linear_input_bytes(ctx_), {x});
  }
  MaybeTask p = emit_.gemm("mtp_eh_proj", GemmShape{T, h / ctx_.tp, 2 * h, 1, ctx_.gemm_dtype}, {x});
  record(params, "mtp_eh_proj", layer_, p, true);
  // gather_from_tensor_model_parallel_region: every rank gets the whole h (then scatter_to_sequence_parallel_region
  // keeps its sequence shard, a view).
  if (ctx_.tp > 1) p = emit_.collective("mtp_eh_proj", Stream::kTp, GroupKind::kTp, CollectiveKind::kAllGather, hidden_full_, {p});
  MaybeTask y = TransformerLayerLowering(emit_, layer_).forward(p, save, params);
  MaybeTask out = emit_.elementwise("mtp_final_norm", hidden_sp_, hidden_sp_, {y});
  emit_.save(out, hidden_sp_);
  record(params, "mtp_final_norm", layer_, out, true);
  return out;
}

MaybeTask MtpLowering::backward(MaybeTask grad, std::vector<ParamUse>* params) {
  const std::int64_t T = ctx_.tokens, h = ctx_.model.hidden_size;
  const bool sp = ctx_.plan.sequence_parallel && ctx_.tp > 1;
  MaybeTask g = emit_.elementwise("mtp_final_norm", 2 * hidden_sp_, hidden_sp_, {grad});
  emit_.release(g, hidden_sp_);
  record(params, "mtp_final_norm", layer_, g, false);
  g = TransformerLayerLowering(emit_, layer_).backward(g, params);
  // The sequence split's backward all-gathers along the sequence; the hidden-dimension gather's backward is a split.
  if (sp) g = emit_.collective("mtp_eh_proj", Stream::kTp, GroupKind::kTp, CollectiveKind::kAllGather, hidden_full_, {g});
  if (uses_fp8(ctx_)) g = emit_fp8_cast(emit_, "fp8_cast", T * h / ctx_.tp, g);
  const Bytes concat_full = T * 2 * h * linear_input_bytes(ctx_);
  MaybeTask regather;
  if (sp) {
    regather = emit_.collective("mtp_eh_proj", Stream::kTp, GroupKind::kTp, CollectiveKind::kAllGather, concat_full, {g});
    emit_.save(regather, concat_full);
  }
  MaybeTask d = emit_.gemm("mtp_eh_proj", GemmShape{T, 2 * h, h / ctx_.tp, 1, ctx_.gemm_dtype}, {g});
  if (ctx_.tp > 1) {
    d = emit_.collective("mtp_eh_proj", Stream::kTp, GroupKind::kTp,
                         sp ? CollectiveKind::kReduceScatter : CollectiveKind::kAllReduce, 2 * hidden_full_, {d});
  }
  MaybeTask w;
  {
    PhaseScope scope(emit_, Phase::kBackwardWeight);
    w = emit_.gemm("mtp_eh_proj", GemmShape{h / ctx_.tp, 2 * h, T, 1, ctx_.gemm_dtype}, {regather});
  }
  emit_.release(w, concat_sp_ + (sp ? concat_full : 0));
  record(params, "mtp_eh_proj", layer_, w, false);
  // The concatenation's backward is two views; each half goes through its norm.
  MaybeTask ge = emit_.elementwise("mtp_enorm", 2 * hidden_sp_, hidden_sp_, {d});
  emit_.release(ge, hidden_sp_);
  record(params, "mtp_enorm", layer_, ge, false);
  MaybeTask gh = emit_.elementwise("mtp_hnorm", 2 * hidden_sp_, hidden_sp_, {d});
  record(params, "mtp_hnorm", layer_, gh, false);
  // The embedding's backward: gathered back under sequence parallelism, then scatter-added into the gradient table.
  if (sp) ge = emit_.collective("mtp_embedding", Stream::kTp, GroupKind::kTp, CollectiveKind::kAllGather, hidden_full_, {ge});
  const Bytes rows = T * h * ctx_.grad_bytes;
  {
    PhaseScope scope(emit_, Phase::kBackwardWeight);
    const MaybeTask scatter = emit_.elementwise("mtp_embedding", hidden_full_ + rows, rows, {ge});
    record(params, embedding_group(), -1, scatter, false);
  }
  return gh;
}

}  // namespace orrery
