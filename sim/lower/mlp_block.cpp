#include "sim/lower/mlp_block.h"

namespace orrery {

MlpBlock::MlpBlock(LayerOps& ops, MlpKind kind) : ops_(ops), emit_(ops.emit()), ctx_(ops.ctx()) {
  const ModelSpec& m = ctx_.model;
  if (kind == MlpKind::kDense) {
    up_ = up_group_ = "mlp_up";
    down_ = down_group_ = "mlp_down";
    fused_norm_ = "post_attention_norm";
    internals_ = &SavePolicy::mlp_internals;
    intermediate_ = m.intermediate_size;
  } else {
    up_ = "shared_expert_up";
    down_ = "shared_expert_down";
    up_group_ = "shared_experts";
    down_group_ = nullptr;
    fused_norm_ = nullptr;
    internals_ = &SavePolicy::shared_expert_internals;
    intermediate_ = static_cast<std::int64_t>(m.moe.num_shared_experts) * m.moe.shared_expert_intermediate_size;
  }
}

Bytes MlpBlock::internals_saved() const {
  const std::int64_t width = intermediate_ / ctx_.tp;
  return ops_.activation_saved(ctx_.tokens, width) + ops_.glu_clamp_saved(ctx_.tokens, width) +
         ops_.row_saved(intermediate_);
}

Bytes MlpBlock::saved_bytes(const SavePolicy& s) const {
  if (!s.modules) return 0;
  Bytes saved = ops_.column_saved() + internals_saved();
  if (!s.norm_outputs) saved -= ops_.column_saved();  // the norm output dropped: the up projection's input
  // A dense MLP's checkpoint: with Transformer Engine the pre-MLP norm is fused into the up projection, so the
  // checkpoint's input is the norm's input (kept anyway) and the norm output goes too.
  if (!(s.*internals_)) saved -= internals_saved() + (fused_norm_ && s.norm_outputs ? ops_.column_saved() : 0);
  return saved;
}

MaybeTask MlpBlock::run(MaybeTask input, bool save, bool save_input, bool save_internals, MaybeTask* up_task) {
  const std::int64_t up_features = (ctx_.model.gated_mlp ? 2 : 1) * intermediate_;
  MaybeTask u = ops_.column_fwd(up_, input, up_features, save && save_input);
  if (up_task) *up_task = u;
  const bool keep = save && save_internals;
  MaybeTask a = ops_.activation_fwd(u, ctx_.tokens, intermediate_ / ctx_.tp, keep, keep);
  return ops_.row_fwd(down_, a, intermediate_, save && save_internals);
}

MaybeTask MlpBlock::forward(MaybeTask input, const SavePolicy& save, std::vector<ParamUse>* params) {
  const bool internals = save.*internals_;
  MaybeTask up;
  const MaybeTask down = run(input, save.modules, save.norm_outputs && (internals || !fused_norm_), internals, &up);
  ops_.record(params, up_group_, up, true);
  if (down_group_) ops_.record(params, down_group_, down, true);
  return down;
}

void MlpBlock::recompute(MaybeTask grad) {
  // Megatron-Core checkpoints the MLP on its input (tensor_parallel.checkpoint / te_checkpoint of self.mlp): when
  // the backward reaches the MLP's output, its forward runs again from the saved input, sequence-parallel
  // all-gather and reduce-scatter included, and keeps what the MLP's backward then releases. A dense layer's
  // pre-MLP norm is fused into the up projection (TELayerNormColumnParallelLinear), so it runs again too.
  PhaseScope scope(emit_, Phase::kRecompute);
  MaybeTask input = grad;
  if (fused_norm_) input = ops_.recompute_norm(fused_norm_, grad);
  run(input, true, false, true, nullptr);
}

MaybeTask MlpBlock::backward(MaybeTask grad, const SavePolicy& kept, std::vector<ParamUse>* params) {
  if (!(kept.*internals_)) recompute(grad);
  const std::int64_t up_features = (ctx_.model.gated_mlp ? 2 : 1) * intermediate_;
  MaybeTask up_wgrad, down_wgrad;
  MaybeTask g = ops_.row_bwd(down_, grad, intermediate_, &down_wgrad);
  g = ops_.activation_bwd(g, ctx_.tokens, intermediate_ / ctx_.tp);
  g = ops_.column_bwd(up_, g, up_features, &up_wgrad);
  if (down_group_) ops_.record(params, down_group_, down_wgrad, false);
  ops_.record(params, up_group_, up_wgrad, false);
  return g;
}

}  // namespace orrery
