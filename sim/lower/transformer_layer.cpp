#include "sim/lower/transformer_layer.h"

namespace orrery {

namespace {

// Megatron-Core's TransformerBlock checkpoints layers by their index within the chunk (recompute_method "block":
// the chunk's first recompute_num_layers layers). Multi-token prediction depths keep the spec's policy.
Recompute layer_recompute(const LoweringContext& ctx, int stage, int chunk, int layer) {
  const TrainingSpec& t = ctx.training;
  if (t.recompute != Recompute::kFull || layer >= ctx.model.num_layers) return t.recompute;
  return t.recomputes_layer(layer - ctx.layout.first_layer_of(stage, chunk)) ? Recompute::kFull : Recompute::kNone;
}

// The layer's attention block: multi-head latent attention, else dense (GQA) self-attention.
std::variant<AttentionBlock, MlaBlock> attention_of(LayerOps& ops) {
  using Block = std::variant<AttentionBlock, MlaBlock>;
  if (ops.ctx().model.is_mla()) return Block(std::in_place_type<MlaBlock>, ops);
  return Block(std::in_place_type<AttentionBlock>, ops);
}

// The layer's MLP block: routed experts on an MoE layer, else a dense MLP.
std::variant<MlpBlock, MoeBlock> mlp_of(LayerOps& ops) {
  using Block = std::variant<MlpBlock, MoeBlock>;
  if (ops.ctx().model.layer_is_moe(ops.layer())) return Block(std::in_place_type<MoeBlock>, ops);
  return Block(std::in_place_type<MlpBlock>, ops, MlpKind::kDense);
}

}  // namespace

TransformerLayerLowering::TransformerLayerLowering(Emitter& emit, int layer)
    : recompute_(layer_recompute(emit.ctx(), emit.stage(), emit.chunk(), layer)),
      ops_(emit, layer),
      attention_(attention_of(ops_)),
      mlp_(mlp_of(ops_)) {}

Bytes TransformerLayerLowering::saved_bytes(const SavePolicy& s) const {
  Bytes total = s.layer_input ? ops_.norm_saved() : 0;
  // The attention residual's dropout mask, the pre-MLP norm's input and the MLP residual's mask.
  if (s.modules) total += ops_.residual_saved() + ops_.norm_saved() + ops_.residual_saved();
  total += std::visit([&](const auto& block) { return block.saved_bytes(s); }, attention_);
  total += std::visit([&](const auto& block) { return block.saved_bytes(s); }, mlp_);
  return total;
}

MaybeTask TransformerLayerLowering::forward(MaybeTask input, const SavePolicy& save, std::vector<ParamUse>* params) {
  MaybeTask x = ops_.norm_fwd("input_norm", input, save.layer_input);
  ops_.record(params, "input_norm", x, true);
  const MaybeTask o = std::visit([&](auto& block) { return block.forward(x, save, params); }, attention_);
  MaybeTask r = ops_.residual_fwd("attention_residual", o, save.modules);
  MaybeTask y = ops_.norm_fwd("post_attention_norm", r, save.modules);
  ops_.record(params, "post_attention_norm", y, true);
  const MaybeTask dn = std::visit([&](auto& block) { return block.forward(y, save, params); }, mlp_);
  // The MLP's residual add is the combine node's last kernel (mlp_bda), on its stream.
  const MoeBlock* moe = std::get_if<MoeBlock>(&mlp_);
  ComputeStreamScope on(ops_.emit(), moe ? moe->combine_post_stream() : Stream::kCompute);
  return ops_.residual_fwd("mlp_residual", dn, save.modules);
}

MaybeTask TransformerLayerLowering::backward(MaybeTask grad_output, std::vector<ParamUse>* params) {
  if (recompute_ == Recompute::kFull) {
    // Megatron's uniform full recompute with one layer per checkpoint: the whole layer forward runs again from
    // its saved input when the backward pass reaches it.
    PhaseScope scope(ops_.emit(), Phase::kRecompute);
    forward(grad_output, SavePolicy{false, true, true});
  }
  // What the backward finds kept: under selective recompute what the forward saved (each block runs again what
  // its recompute modules dropped), else everything (the full recompute's forward keeps it all).
  const SavePolicy kept = recompute_ == Recompute::kSelective ? save() : SavePolicy{};
  MaybeTask g = ops_.residual_bwd("mlp_residual", grad_output);
  // A dense MLP's recompute runs the pre-MLP norm again, fused into its up projection (MlpBlock).
  const bool dense_mlp_again = std::holds_alternative<MlpBlock>(mlp_) && !kept.mlp_internals;
  if (!kept.norm_outputs && !dense_mlp_again) ops_.recompute_norm("post_attention_norm");
  g = std::visit([&](auto& block) { return block.backward(g, kept, params); }, mlp_);
  g = ops_.norm_bwd("post_attention_norm", g);
  ops_.record(params, "post_attention_norm", g, false);
  g = ops_.residual_bwd("attention_residual", g);
  // Megatron hooks the input norm's recompute on the attention output's gradient: it runs as the attention
  // backward starts, and its output lives through the core's backward until the QKV weight gradient. (MLA's
  // down projections keep the norm's output whatever the policy.)
  if (!kept.norm_outputs && std::holds_alternative<AttentionBlock>(attention_)) ops_.recompute_norm("input_norm");
  g = std::visit([&](auto& block) { return block.backward(g, kept, params); }, attention_);
  g = ops_.norm_bwd("input_norm", g);
  ops_.record(params, "input_norm", g, false);
  return g;
}

}  // namespace orrery
