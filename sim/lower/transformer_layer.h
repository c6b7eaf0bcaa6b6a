#pragma once
// Lowering of one transformer layer (dense decoder, GPT- or Llama-style) into kernel tasks, forward, backward and
// recompute, with Megatron-LM's tensor parallelism (column/row-parallel linears, all-reduce or, with sequence
// parallelism, all-gather/reduce-scatter; Shoeybi et al. arXiv:1909.08053, Korthikanti et al. arXiv:2205.05198).
//
// Saved activations follow Korthikanti et al. Section 4.1: each op allocates what its backward needs when it runs
// forward, and the backward frees it; with dropout and unfused attention one layer saves s b h (34 + 5 a s / h)
// bytes without parallelism, and the Table 2 variants under TP, SP and recompute.

#include <variant>
#include <vector>

#include "sim/lower/context.h"
#include "sim/lower/layer_ops.h"
#include "sim/lower/mlp_block.h"
#include "sim/lower/moe_block.h"
#include "sim/lower/save_policy.h"

namespace orrery {

class TransformerLayerLowering {
 public:
  TransformerLayerLowering(Emitter& emit, int layer);
  // Its blocks refer to its ops: not copied.
  TransformerLayerLowering(const TransformerLayerLowering&) = delete;
  TransformerLayerLowering& operator=(const TransformerLayerLowering&) = delete;

  /// Emits the forward pass (phase kForward, or kRecompute for full recompute) after task `input`; returns the
  /// task that produces the layer output. `params`, when given, receives the first use of each parameter group.
  MaybeTask forward(MaybeTask input, const SavePolicy& save, std::vector<ParamUse>* params = nullptr);

  /// Emits the backward pass after `grad_output` (with the recompute the training spec asks for) and returns the
  /// task producing the input gradient. `params`, when given, receives the gradient-ready task of each group.
  MaybeTask backward(MaybeTask grad_output, std::vector<ParamUse>* params = nullptr);

  /// Bytes one forward pass of this layer saves under `save` (for tests and reports).
  Bytes saved_bytes(const SavePolicy& save) const;

  /// This layer's recompute: the training spec's, except that with full recompute by Megatron-Core's "block"
  /// method only the first recompute_num_layers layers of each model chunk recompute (the rest run kNone).
  Recompute recompute() const { return recompute_; }
  /// What this layer's forward keeps under its recompute (save_policy of recompute()).
  SavePolicy save() const { return save_policy(ctx_.training, recompute_); }

 private:
  // Forward building blocks; each returns the task producing its output.
  MaybeTask core_fwd(MaybeTask input, bool save_inputs, bool save_internals);
  // Multi-head latent attention's projections (sim/lower/mla_block.cpp): from the normed input to rotary-applied
  // per-head q and k (and v), and back.
  // `keep_up_inputs`: whether the up projections keep their (normed) inputs; not under mla_up_proj, whose
  // checkpoint keeps the pre-norm compressed tensors (the norms are fused into the up projections with TE).
  MaybeTask mla_fwd(MaybeTask input, bool save, std::vector<ParamUse>* params, bool keep_up_inputs = true);
  // Recompute module mla_up_proj: the up projections and rotary run again when the backward reaches the attention
  // core's output, and the core's inputs (q, k, v) are kept again until its backward.
  MaybeTask recompute_mla_up(MaybeTask grad);
  MaybeTask mla_bwd(MaybeTask grad, std::vector<ParamUse>* params);
  // Backward building blocks; `wgrad` receives the task that finishes the weight gradient.
  MaybeTask core_bwd(MaybeTask grad);

  // Sizes (bytes) of what each block saves.
  Bytes core_inputs_saved() const;
  Bytes core_internals_saved() const;
  // The rotary embedding of q and k (`qk` bytes together), forward and backward: Transformer Engine's fused kernel,
  // or Megatron-Core's unfused PyTorch ops (TrainingSpec::apply_rope_fusion false).
  bool rope_fused() const;
  MaybeTask rope_fwd(Bytes qk);
  MaybeTask rope_bwd(Bytes qk, MaybeTask grad);
  Bytes mla_projection_saved() const;

  /// The flash attention of this rank's own tokens (q = kv = s / cp, TP-local heads).
  AttentionShape local_attention(bool backward) const;
  /// The id the next emitted task will get.
  TaskId builder_next() const { return emit_.builder().last() + 1; }

  Emitter& emit_;
  const LoweringContext& ctx_;
  int layer_;
  Recompute recompute_;
  LayerOps ops_;
  std::variant<MlpBlock, MoeBlock> mlp_;
  std::int64_t qkv_features_ = 0;   // output features of the QKV projection (all heads)
  std::int64_t attn_features_ = 0;  // input features of the output projection
  bool mla_ = false;                // multi-head latent attention
};

}  // namespace orrery
