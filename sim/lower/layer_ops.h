#pragma once
// The ops a transformer layer's blocks are made of (sim/lower/attention_core.h, attention_block.h, mla_block.h,
// mlp_block.h, moe_block.h), forward and backward, with Megatron-LM's tensor parallelism: norms, column- and
// row-parallel linears (all-reduce or, with sequence parallelism, all-gather/reduce-scatter; Shoeybi et al.
// arXiv:1909.08053, Korthikanti et al. arXiv:2205.05198), residual adds with their dropout, the MLP activation,
// weight-gradient GEMMs.
//
// Saved activations follow Korthikanti et al. Section 4.1: each op allocates what its backward needs when it runs
// forward (when asked to save), and its backward frees it; the *_saved functions give those sizes.

#include <vector>

#include "sim/lower/context.h"
#include "sim/lower/param_groups.h"

namespace orrery {

/// One layer's ops on one emitter, with what they need of the layer: its index, its parameter groups (for the FP8
/// weight casts and the parameter-use records) and its dropout. Each forward op returns the task producing its
/// output; `save`: keep what its backward needs. Each backward op returns the task producing its input gradient;
/// `wgrad` receives the task that finishes the weight gradient. Sizes are bytes of one rank.
class LayerOps {
 public:
  /// Layer `layer` at the emitter's chunk (whose parameter groups it takes).
  LayerOps(Emitter& emit, int layer);

  Emitter& emit() const { return emit_; }
  const LoweringContext& ctx() const { return ctx_; }
  int layer() const { return layer_; }
  const std::vector<ParamGroup>& groups() const { return groups_; }
  bool dropout_attention() const { return dropout_attention_; }
  bool dropout_hidden() const { return dropout_hidden_; }

  /// A GEMM of this layer: m x n outputs, inner dimension k, in the GEMM dtype.
  GemmShape linear(std::int64_t m, std::int64_t n, std::int64_t k) const;
  /// Records the use of parameter group `name` by `task` (record_param_use): its first read (forward) or the end of
  /// its gradient.
  void record(std::vector<ParamUse>* params, const char* name, MaybeTask task, bool forward) const;
  /// A weight-gradient GEMM (phase kBackwardWeight) that frees `release` bytes of saved input when done and, when
  /// `group` is given, finishes that parameter group's gradient.
  MaybeTask weight_grad(const char* label, const GemmShape& shape, Bytes release, const char* group,
                        std::vector<ParamUse>* params);

  // Forward.
  MaybeTask norm_fwd(const char* label, MaybeTask input, bool save);
  /// Column-parallel linear h -> out_features / tp (its input all-gathered first with sequence parallelism).
  MaybeTask column_fwd(const char* label, MaybeTask input, std::int64_t out_features, bool save);
  /// Row-parallel linear in_features / tp -> h (its output all-reduced, or reduce-scattered with sequence
  /// parallelism).
  MaybeTask row_fwd(const char* label, MaybeTask input, std::int64_t in_features, bool save);
  MaybeTask residual_fwd(const char* label, MaybeTask input, bool save);
  /// `rows` tokens of `width` (the per-rank intermediate size; gated MLPs read twice that). `save_input`: whether it
  /// keeps its input (the up outputs) for the backward. With a clamped GLU (ModelSpec::swiglu_limit) the clamp runs
  /// first; `save_clamped`: whether its copy is kept (not in a forward whose activation is recomputed later, as the
  /// clamp then runs inside the checkpoint; yes in that recompute, whose input is already kept).
  MaybeTask activation_fwd(MaybeTask input, std::int64_t rows, std::int64_t width, bool save_input, bool save_clamped);

  // Backward.
  MaybeTask norm_bwd(const char* label, MaybeTask grad);
  MaybeTask column_bwd(const char* label, MaybeTask grad, std::int64_t out_features, MaybeTask* wgrad);
  MaybeTask row_bwd(const char* label, MaybeTask grad, std::int64_t in_features, MaybeTask* wgrad);
  MaybeTask residual_bwd(const char* label, MaybeTask grad);
  MaybeTask activation_bwd(MaybeTask grad, std::int64_t rows, std::int64_t width);
  /// The norm `label` run again (Phase::kRecompute) after `after` (recompute module layernorm, or inside an MLP's
  /// checkpoint that the norm is fused into); keeps the next linear's input.
  MaybeTask recompute_norm(const char* label, MaybeTask after = {});

  // Sizes (bytes) of what each op saves.
  Bytes norm_saved() const;
  Bytes column_saved() const;
  Bytes row_saved(std::int64_t in_features) const;
  Bytes residual_saved() const;
  Bytes activation_saved(std::int64_t rows, std::int64_t width) const;
  /// The clamped copy of the up outputs that a clamped GLU's activation keeps besides them: rows x 2 width x the
  /// activation bytes, as activation_saved (0 without a clamp or without a gated MLP).
  Bytes glu_clamp_saved(std::int64_t rows, std::int64_t width) const;

 private:
  Emitter& emit_;
  const LoweringContext& ctx_;
  int layer_;
  std::vector<ParamGroup> groups_;
  bool dropout_attention_ = false;
  bool dropout_hidden_ = false;
};

}  // namespace orrery
