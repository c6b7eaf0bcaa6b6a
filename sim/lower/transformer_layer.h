#pragma once
// Lowering of one transformer layer (dense decoder, GPT- or Llama-style) into kernel tasks, forward, backward and
// recompute, with Megatron-LM's tensor parallelism (column/row-parallel linears, all-reduce or, with sequence
// parallelism, all-gather/reduce-scatter; Shoeybi et al. arXiv:1909.08053, Korthikanti et al. arXiv:2205.05198).
//
// Saved activations follow Korthikanti et al. Section 4.1: each op allocates what its backward needs when it runs
// forward, and the backward frees it; with dropout and unfused attention one layer saves s b h (34 + 5 a s / h)
// bytes without parallelism, and the Table 2 variants under TP, SP and recompute.

#include <vector>

#include "sim/lower/context.h"
#include "sim/lower/param_groups.h"

namespace orrery {

/// What a forward pass keeps for the backward: the layer input, the other modules' inputs, and the attention
/// core's internals (score-sized tensors, or flash's softmax statistics).
struct SavePolicy {
  bool layer_input = true;
  bool modules = true;
  bool attention_internals = true;
  bool norm_outputs = true;               // the input and pre-MLP norms' outputs (the next linears' inputs)
  bool expert_activation_outputs = true;  // the routed experts' activation outputs (the down projection's input)
  bool mlp_internals = true;              // a dense MLP's up outputs and down input (recompute module mlp)
  bool shared_expert_internals = true;    // the same of the shared experts (recompute module shared_experts)
  bool mla_up_outputs = true;             // MLA's up-projected, rotary q, k, v (recompute module mla_up_proj)
  bool moe_internals = true;              // everything of an MoE layer but its input (recompute module moe)
};

/// What a layer's forward keeps under the training spec's recompute policy: everything (none); with selective,
/// all but what training.recompute_modules drops (the attention core's internals by default), recomputed in the
/// backward; only the layer input (full, the whole layer recomputed).
SavePolicy save_policy(const TrainingSpec& training);
/// The same for a layer whose recompute is `policy` (a block-recomputed chunk's later layers run kNone).
SavePolicy save_policy(const TrainingSpec& training, Recompute policy);

class TransformerLayerLowering {
 public:
  TransformerLayerLowering(Emitter& emit, int layer);

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
  MaybeTask norm_fwd(const char* label, MaybeTask input, bool save);
  MaybeTask column_fwd(const char* label, MaybeTask input, std::int64_t out_features, bool save);
  MaybeTask row_fwd(const char* label, MaybeTask input, std::int64_t in_features, bool save);
  MaybeTask core_fwd(MaybeTask input, bool save_inputs, bool save_internals);
  MaybeTask residual_fwd(const char* label, MaybeTask input, bool save);
  // `rows` tokens of `width` (the per-rank intermediate size; gated MLPs read twice that). `save_input`: whether it
  // keeps its input (the up outputs) for the backward. With a clamped GLU (ModelSpec::swiglu_limit) the clamp runs
  // first; `save_clamped`: whether its copy is kept (not in a forward whose activation is recomputed later, as the
  // clamp then runs inside the checkpoint; yes in that recompute, whose input is already kept).
  MaybeTask activation_fwd(MaybeTask input, std::int64_t rows, std::int64_t width, bool save_input, bool save_clamped);
  // A dense (TP-sharded) MLP of `intermediate` width: the layer's own, or shared experts.
  // `save_input`: whether the up projection keeps its input (the pre-MLP norm's output) for the backward;
  // `save_internals`: whether the activation's input and the down projection's input are kept (false: the MLP is
  // recomputed from its input, Megatron-Core's recompute modules mlp and shared_experts).
  MaybeTask mlp_fwd(const char* up, const char* down, MaybeTask input, std::int64_t intermediate, bool save,
                    MaybeTask* up_task = nullptr, bool save_input = true, bool save_internals = true);
  // The MLP's forward again in the backward (Phase::kRecompute), keeping what its backward releases; `with_norm`:
  // the pre-MLP norm first (a dense layer's, fused into the up projection), keeping its output for the up projection.
  void recompute_mlp(const char* up, const char* down, MaybeTask grad, std::int64_t intermediate,
                     bool with_norm = false);
  MaybeTask mlp_bwd(const char* up, const char* down, MaybeTask grad, std::int64_t intermediate, MaybeTask* up_wgrad,
                    MaybeTask* down_wgrad);
  // The routed-expert MLP (sim/lower/moe_block.cpp): router, dispatch, grouped expert GEMMs, combine, shared
  // experts. `input` is the pre-MLP norm output (sequence-parallel shard); returns the block output.
  MaybeTask moe_fwd(MaybeTask input, const SavePolicy& save, std::vector<ParamUse>* params);
  // `recompute_activation`: the experts' activation outputs were dropped (recompute module moe_act) and run again
  // before the down projection's weight gradient.
  // `recompute_shared`: the shared experts' internals were dropped (recompute module shared_experts).
  MaybeTask moe_bwd(MaybeTask grad, std::vector<ParamUse>* params, bool recompute_activation = false,
                    bool recompute_shared = false);
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
  MaybeTask norm_bwd(const char* label, MaybeTask grad);
  MaybeTask column_bwd(const char* label, MaybeTask grad, std::int64_t out_features, MaybeTask* wgrad);
  MaybeTask row_bwd(const char* label, MaybeTask grad, std::int64_t in_features, MaybeTask* wgrad);
  MaybeTask core_bwd(MaybeTask grad);
  MaybeTask residual_bwd(const char* label, MaybeTask grad);
  MaybeTask activation_bwd(MaybeTask grad, std::int64_t rows, std::int64_t width);
  // The norm `label` run again in the backward (recompute module layernorm); keeps the next linear's input.
  MaybeTask recompute_norm(const char* label);

  // Sizes (bytes) of what each block saves.
  Bytes norm_saved() const;
  Bytes column_saved() const;
  Bytes row_saved(std::int64_t in_features) const;
  Bytes core_inputs_saved() const;
  Bytes core_internals_saved() const;
  Bytes residual_saved() const;
  Bytes activation_saved(std::int64_t rows, std::int64_t width) const;
  // The clamped copy of the up outputs that a clamped GLU's activation keeps besides them: rows x 2 width x the
  // activation bytes, as activation_saved (0 without a clamp or without a gated MLP).
  Bytes glu_clamp_saved(std::int64_t rows, std::int64_t width) const;
  Bytes mlp_saved(std::int64_t intermediate) const;
  // The activation input and the down projection input of a dense MLP of `intermediate` width (what recompute
  // modules mlp and shared_experts drop).
  Bytes mlp_internals_saved(std::int64_t intermediate) const;
  Bytes moe_saved() const;
  Bytes moe_checkpoint_saved() const;  // an MoE layer's input, what recompute module moe keeps
  Bytes moe_down_input_saved() const;  // the routed experts' activation outputs, the down projection's input
  Bytes moe_clamp_saved() const;       // the routed experts' clamped up outputs, received rows x 2 width x activation
                                       // bytes (GPT-OSS; 0 without a clamp)
  Bytes moe_router_input_saved() const;  // the pre-MLP norm output the router keeps (0 with shared experts)
  // Where the MoE combine's post-processing runs: the EP stream with the EP overlap, else the compute stream.
  Stream combine_post_stream() const;
  // The rotary embedding of q and k (`qk` bytes together), forward and backward: Transformer Engine's fused kernel,
  // or Megatron-Core's unfused PyTorch ops (TrainingSpec::apply_rope_fusion false).
  bool rope_fused() const;
  MaybeTask rope_fwd(Bytes qk);
  MaybeTask rope_bwd(Bytes qk, MaybeTask grad);
  Bytes mla_projection_saved() const;

  GemmShape linear(std::int64_t m, std::int64_t n, std::int64_t k) const;
  /// The flash attention of this rank's own tokens (q = kv = s / cp, TP-local heads).
  AttentionShape local_attention(bool backward) const;
  /// The id the next emitted task will get.
  TaskId builder_next() const { return emit_.builder().last() + 1; }
  void record(std::vector<ParamUse>* params, const char* name, MaybeTask task, bool forward) const;
  /// A weight-gradient GEMM (phase kBackwardWeight) that frees `release` bytes of saved input when done and, when
  /// `group` is given, finishes that parameter group's gradient.
  MaybeTask weight_grad(const char* label, const GemmShape& shape, Bytes release, const char* group,
                        std::vector<ParamUse>* params);

  Emitter& emit_;
  const LoweringContext& ctx_;
  int layer_;
  Recompute recompute_;
  std::vector<ParamGroup> groups_;
  std::int64_t qkv_features_ = 0;   // output features of the QKV projection (all heads)
  std::int64_t attn_features_ = 0;  // input features of the output projection
  bool moe_ = false;                // the MLP is routed experts
  bool mla_ = false;                // multi-head latent attention
  bool dropout_attention_ = false;
  bool dropout_hidden_ = false;
};

}  // namespace orrery
