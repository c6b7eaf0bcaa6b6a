// The routed-expert MLP of a transformer layer, as Megatron-Core's MoELayer runs it (megatron/core/transformer/moe:
// TopKRouter, the alltoall and allgather token dispatchers, GroupedMLP / TEGroupedMLP, SharedExpertMLP):
//
//   router GEMM (h -> E logits) and top-k -> permute the k copies of each token into expert order ->
//   dispatch (all-to-all over the EP group; all-gather over the expert-TP group when ETP > 1) -> sort by local
//   expert -> grouped GEMMs of the E / EP local experts (up/gate, activation, down) -> the reverse path ->
//   combine (all-to-all) -> unpermute, weighting the k copies by their router probabilities.
//
// Tokens: each rank routes its sequence-parallel shard, T_loc = b s / (cp tp) tokens, sending T_loc k copies. With
// balanced routing each rank's experts receive as many; `moe_effective_load` scales that for the busiest rank,
// which every all-to-all waits for (so the representative rank is the busiest one). The alltoall dispatcher
// exchanges the per-expert token counts first and reads them on the host to size its buffers
// (`tokens_per_expert.cpu()`): a host synchronisation per MoE layer and forward pass, except with drop-and-pad
// (`moe_pad_expert_input_to_capacity`), whose splits are static. Shared experts are a dense,
// TP-sharded MLP on the same tokens (SharedExpertMLP), run before the routed experts.
//
// The flex dispatcher (MoEFlexTokenDispatcher with DeepEP or HybridEP) sends each token once per destination rank,
// not once per expert, across domains once per destination domain with NVLink forwarding inside
// (sim/lower/moe_routing.h); the receiving rank expands the token into its expert copies and the combine kernel
// sums them on the way back. Its layout step exchanges the counts and the host reads them (DeepEP's dispatch waits
// on the CPU for the received-token counts to size its outputs), once per layer and forward pass.
//
// The router probabilities weight each copy inside the expert activation (Megatron-Core applies `permuted_probs` in
// the fused weighted SwiGLU of TEGroupedMLP), so the unpermute is a plain sum and the probabilities' gradient comes
// from the activation's backward. Saved for the backward pass: the router's fp32 scores, the permuted fp32
// probabilities, the expert inputs and activations (FP8 inputs in one byte).
#include "sim/lower/moe_block.h"

#include <cmath>

#include "sim/lower/expert_bias.h"
#include "sim/lower/fp8.h"
#include "sim/lower/moe_routing.h"

namespace orrery {

namespace {

// Sizes of one MoE block on one rank.
struct MoeSizes {
  std::int64_t tokens = 0;        // T_loc: tokens this rank routes
  std::int64_t copies = 0;        // T_loc k: token copies it sends
  std::int64_t received = 0;      // token copies its experts process (after the ETP gather)
  std::int64_t local_experts = 0;
  std::int64_t rows = 0;          // per local expert, rounded up: the grouped GEMM's m
  std::int64_t width = 0;         // per-rank expert intermediate size (ETP-sharded)
  std::int64_t up = 0;            // per-rank output features of the up (and gate) projection
  std::int64_t shared = 0;        // total width of the shared experts (0: none)
};

MoeSizes moe_sizes(const LoweringContext& ctx) {
  const MoeSpec& e = ctx.model.moe;
  const ParallelPlan& p = ctx.plan;
  MoeSizes z;
  z.tokens = ctx.tokens_sp;
  z.copies = z.tokens * e.experts_per_token;
  const double load = ctx.training.moe_effective_load();
  z.received = static_cast<std::int64_t>(std::llround(static_cast<double>(z.copies) * load)) * p.etp;
  z.local_experts = e.num_experts / p.ep;
  z.rows = (z.received + z.local_experts - 1) / z.local_experts;
  z.width = e.expert_intermediate_size / p.etp;
  z.up = (ctx.model.gated_mlp ? 2 : 1) * z.width;
  z.shared = static_cast<std::int64_t>(e.num_shared_experts) * e.shared_expert_intermediate_size;
  return z;
}

// Per-rank bytes of one flex dispatch or combine of the block's tokens for the busiest rank (flex dispatcher only).
FlexDispatchBytes flex_bytes(const LoweringContext& ctx, int stage, const MoeSizes& z) {
  if (ctx.plan.moe_token_dispatcher_type != MoeDispatcher::kFlex) return {};
  return flex_dispatch_bytes(ctx.model.moe, ctx.placement(GroupKind::kEp, stage), z.tokens,
                             ctx.model.hidden_size * ctx.act_bytes, ctx.training.moe_effective_load());
}

}  // namespace

MoeBlock::MoeBlock(LayerOps& ops) : ops_(ops), emit_(ops.emit()), ctx_(ops.ctx()) {
  if (moe_sizes(ctx_).shared > 0) shared_.emplace(ops, MlpKind::kSharedExperts);
}

Bytes MoeBlock::routed_saved() const {
  const MoeSizes z = moe_sizes(ctx_);
  const ModelSpec& m = ctx_.model;
  const Bytes in = linear_input_bytes(ctx_);
  Bytes saved = z.tokens * m.moe.num_experts * 4;                          // router probabilities (fp32)
  saved += router_input_saved();                                           // the router GEMM's input
  saved += z.received * m.hidden_size * in;                                // expert inputs
  saved += ops_.activation_saved(z.received, z.width);                     // up/gate outputs
  saved += ops_.glu_clamp_saved(z.received, z.width);                      // their clamped copy (GPT-OSS)
  saved += z.received * z.width * in;                                      // down-projection inputs
  saved += z.received * 4;                                                 // permuted probabilities (fp32)
  return saved;
}

Bytes MoeBlock::saved_bytes(const SavePolicy& s) const {
  if (!s.modules) return 0;
  // The checkpoint keeps the pre-MLP norm output, unless the layernorm module drops it (recomputed instead).
  if (!s.moe_internals) return s.norm_outputs ? checkpoint_saved() : 0;
  Bytes saved = routed_saved();
  // Expert activations dropped: the down projections' inputs and the clamped copies.
  if (!s.expert_activation_outputs) saved -= down_input_saved() + clamp_saved();
  if (shared_) {
    saved += shared_->saved_bytes(s);
  } else if (!s.norm_outputs) {
    saved -= router_input_saved();  // the norm output dropped: the router's input
  }
  return saved;
}

Bytes MoeBlock::checkpoint_saved() const {
  return ctx_.tokens_sp * ctx_.model.hidden_size * ctx_.act_bytes;  // the pre-MLP norm output, sequence-parallel shard
}

Bytes MoeBlock::down_input_saved() const {
  const MoeSizes z = moe_sizes(ctx_);
  return z.received * z.width * linear_input_bytes(ctx_);
}

Bytes MoeBlock::clamp_saved() const {
  const MoeSizes z = moe_sizes(ctx_);
  return ops_.glu_clamp_saved(z.received, z.width);
}

Bytes MoeBlock::router_input_saved() const {
  // The pre-MLP norm output, kept for the router's weight gradient; with shared experts their up projection keeps
  // the same tensor (counted there).
  const MoeSizes z = moe_sizes(ctx_);
  return z.shared > 0 ? 0 : z.tokens * ctx_.model.hidden_size * ctx_.act_bytes;
}

// The labels "moe_dispatch", "moe_combine" and "router_topk" also mark the boundaries of Megatron-Core's schedule
// nodes (attention, dispatch, MLP, combine) for a merged pair's issue order (sim/lower/merged_issue_order.h).
MaybeTask MoeBlock::run(MaybeTask input, const SavePolicy& policy, std::vector<ParamUse>* params) {
  const bool save = policy.modules;
  const MoeSizes z = moe_sizes(ctx_);
  const ModelSpec& m = ctx_.model;
  const ParallelPlan& p = ctx_.plan;
  const std::int64_t h = m.hidden_size, E = m.moe.num_experts, k = m.moe.experts_per_token;
  const Bytes act = ctx_.act_bytes;
  const bool gather_dispatch = p.moe_token_dispatcher_type == MoeDispatcher::kAllGather;
  const bool flex = p.moe_token_dispatcher_type == MoeDispatcher::kFlex;
  const FlexDispatchBytes fb = flex_bytes(ctx_, emit_.stage(), z);

  MaybeTask shared;
  if (shared_) {
    const MaybeTask cast =
        emit_fp8_weight_cast(emit_, "fp8_weight_cast", group_elements(ops_.groups(), "shared_experts"), input);
    shared = shared_->forward(cast, policy, params);
  }
  const MaybeTask router = emit_.gemm("router", GemmShape{z.tokens, E, h, 1, ctx_.act_dtype}, {input});
  ops_.record(params, "router", router, true);
  if (save && policy.norm_outputs) emit_.save(router, router_input_saved());
  MaybeTask x = emit_.elementwise("router_topk", z.tokens * E * 4, z.tokens * k * (4 + 8));
  if (save) emit_.save(x, z.tokens * E * 4);
  const Bytes sent = static_cast<Bytes>(std::llround(static_cast<double>(z.copies * h * act) *
                                                     ctx_.training.moe_effective_load()));
  // Drop-and-pad fixes every split at the capacity, so Megatron-Core's alltoall dispatcher skips both the count
  // exchange and the device-to-host sync (token_dispatcher.py: cuda_sync_point stays "no_sync").
  MaybeTask counted;  // the host's read of the counts, which the flex dispatch (on the EP stream) waits for
  if (!gather_dispatch && p.ep > 1 && !ctx_.training.moe_pad_expert_input_to_capacity) {
    // The alltoall dispatcher gathers the counts on the current (compute) stream in its preprocess
    // (gather_from_sequence_parallel_region); DeepEP and HybridEP exchange them inside the dispatch, on its stream.
    const MaybeTask counts = emit_.collective("moe_token_counts", flex ? Stream::kEp : Stream::kCompute, GroupKind::kEp,
                                              CollectiveKind::kAllToAll, E * 8, {x});
    // The counts go to the host on a side stream (token_dispatcher.py: cuda_dtoh_stream, non_blocking) and the
    // host waits for that copy's event (d2h_event.synchronize()), not for the compute stream.
    counted = emit_.host_sync_on(Stream::kDeviceToHost, "moe_token_counts_item", {counts});
  }
  if (flex) {
    x = emit_.expert_dispatch("moe_dispatch", fb.nvlink, fb.network, {x, counted});
    // The received tokens, one per (token, rank), expanded into this rank's expert copies.
    x = emit_.elementwise("moe_permute", fb.received, z.received * h * act, {x});
  } else if (gather_dispatch) {
    // Every rank gathers all tokens of the EP group and picks those routed to its experts.
    x = emit_.collective("moe_dispatch", Stream::kEp, GroupKind::kEp, CollectiveKind::kAllGather,
                         z.tokens * h * act * p.ep, {x});
    x = emit_.elementwise("moe_permute", z.tokens * p.ep * h * act, z.received / p.etp * h * act, {x});
  } else {
    x = emit_.elementwise("moe_permute", z.tokens * h * act + z.copies * 8, z.copies * h * act, {x});
    x = emit_.collective("moe_dispatch", Stream::kEp, GroupKind::kEp, CollectiveKind::kAllToAll, sent, {x});
  }
  if (p.etp > 1) {
    x = emit_.collective("moe_dispatch", Stream::kEp, GroupKind::kExpertTp, CollectiveKind::kAllGather,
                         z.received * h * act, {x});
  }
  if (!flex) x = emit_.elementwise("moe_sort_chunks", z.received * h * act, z.received * h * act, {x});
  if (save) emit_.save(x, z.received * 4);  // the permuted probabilities, travelling with their tokens
  x = emit_fp8_weight_cast(emit_, "fp8_weight_cast", group_elements(ops_.groups(), "experts"), x);
  if (uses_fp8(ctx_)) x = emit_fp8_cast(emit_, "fp8_cast", z.received * h, x);
  const MaybeTask up = emit_.gemm("experts", GemmShape{z.rows, z.up, h, z.local_experts, ctx_.gemm_dtype, true}, {x});
  ops_.record(params, "experts", up, true);
  if (save) emit_.save(up, z.received * h * linear_input_bytes(ctx_));
  x = ops_.activation_fwd(up, z.received, z.width, save, save && policy.expert_activation_outputs);
  if (uses_fp8(ctx_)) x = emit_fp8_cast(emit_, "fp8_cast", z.received * z.width, x);
  const MaybeTask down = emit_.gemm("experts", GemmShape{z.rows, h, z.width, z.local_experts, ctx_.gemm_dtype, true},
                                    {x});
  if (save && policy.expert_activation_outputs) emit_.save(down, down_input_saved());
  x = down;
  // Biased experts (GPT-OSS): the down projection's bias, added per expert in Python (sim/lower/expert_bias.h).
  if (m.mlp_bias) x = emit_.elementwise("expert_bias", expert_bias_forward(z.received, h, act, z.local_experts), {x});
  if (p.etp > 1) {
    x = emit_.collective("moe_combine", Stream::kEp, GroupKind::kExpertTp, CollectiveKind::kReduceScatter,
                         z.received * h * act, {x});
  }
  // With the EP overlap, Megatron-Core's combine node runs its post-processing on the communication stream
  // (fine_grained_callables.py: the moe_combine node is built on comm_stream), so the other pass's compute does
  // not queue behind it.
  const Stream post = combine_post_stream();
  if (flex) {
    // Each token's copies on this rank are summed (weighted by the router) before the combine sends them home,
    // where the combine kernel adds the ranks' partial sums: the output needs no unpermute.
    x = emit_.elementwise("moe_unpermute", z.received * h * act, fb.received, {x});
    x = emit_.expert_dispatch("moe_combine", fb.nvlink, fb.network, {x});
    ComputeStreamScope on(emit_, post);
    if (shared.emitted()) x = emit_.elementwise("moe_add_shared", 2 * z.tokens * h * act, z.tokens * h * act, {x, shared});
    return x;
  }
  if (gather_dispatch) {
    x = emit_.elementwise("moe_unpermute", z.received / p.etp * h * act, z.tokens * p.ep * h * act, {x});
    x = emit_.collective("moe_combine", Stream::kEp, GroupKind::kEp, CollectiveKind::kReduceScatter,
                         z.tokens * h * act * p.ep, {x});
  } else {
    x = emit_.elementwise("moe_sort_chunks", z.received / p.etp * h * act, z.received / p.etp * h * act, {x});
    x = emit_.collective("moe_combine", Stream::kEp, GroupKind::kEp, CollectiveKind::kAllToAll, sent, {x});
  }
  ComputeStreamScope on(emit_, post);
  x = emit_.elementwise("moe_unpermute", z.copies * h * act, z.tokens * h * act, {x});
  if (shared.emitted()) x = emit_.elementwise("moe_add_shared", 2 * z.tokens * h * act, z.tokens * h * act, {x, shared});
  return x;
}

Stream MoeBlock::combine_post_stream() const {
  return ctx_.plan.overlap_moe_expert_parallel_comm ? Stream::kEp : Stream::kCompute;
}

MaybeTask MoeBlock::forward(MaybeTask input, const SavePolicy& save, std::vector<ParamUse>* params) {
  if (!save.modules || save.moe_internals) return run(input, save, params);
  // Recompute module moe: the layer runs keeping nothing; its input is the checkpoint's.
  SavePolicy none = save;
  none.modules = false;
  const MaybeTask out = run(input, none, params);
  if (save.norm_outputs) emit_.save(input, checkpoint_saved());
  return out;
}

MaybeTask MoeBlock::backward(MaybeTask grad, const SavePolicy& kept, std::vector<ParamUse>* params) {
  if (!kept.moe_internals) {
    // Megatron-Core checkpoints the MoE layer on its input (recompute module moe): router, dispatch, experts and
    // combine run again when the backward reaches the layer's output, the nested modules (moe_act,
    // shared_experts) applying again inside. The recompute's router and shared-expert inputs are the kept input
    // itself (views in Megatron), so the kept copy is handed over to them when the recompute ends.
    PhaseScope scope(emit_, Phase::kRecompute);
    const MaybeTask last = run(grad, kept, nullptr);
    if (kept.norm_outputs) emit_.release(last, checkpoint_saved());
  }
  const MoeSizes z = moe_sizes(ctx_);
  const ModelSpec& m = ctx_.model;
  const ParallelPlan& p = ctx_.plan;
  const std::int64_t h = m.hidden_size, E = m.moe.num_experts;
  const Bytes act = ctx_.act_bytes;
  const bool gather_dispatch = p.moe_token_dispatcher_type == MoeDispatcher::kAllGather;
  const bool flex = p.moe_token_dispatcher_type == MoeDispatcher::kFlex;
  const FlexDispatchBytes fb = flex_bytes(ctx_, emit_.stage(), z);
  const Bytes sent = static_cast<Bytes>(std::llround(static_cast<double>(z.copies * h * act) *
                                                     ctx_.training.moe_effective_load()));

  MaybeTask shared;
  if (shared_) shared = shared_->backward(grad, kept, params);
  MaybeTask x = grad;
  if (flex) {
    // The combine's backward is a dispatch of the output gradients; the receiver expands them to its copies.
    x = emit_.expert_dispatch("moe_combine", fb.nvlink, fb.network, {x});
    x = emit_.elementwise("moe_unpermute", fb.received, z.received * h * act, {x});
  } else {
    // Unpermute backward: the gradient of each token goes to its k copies (in the combine node's backward, on
    // the communication stream with the EP overlap).
    {
      ComputeStreamScope on(emit_, combine_post_stream());
      x = emit_.elementwise("moe_unpermute", z.tokens * h * act, z.copies * h * act, {grad});
    }
    if (gather_dispatch) {
      x = emit_.collective("moe_combine", Stream::kEp, GroupKind::kEp, CollectiveKind::kAllGather,
                           z.tokens * h * act * p.ep, {x});
    } else {
      x = emit_.collective("moe_combine", Stream::kEp, GroupKind::kEp, CollectiveKind::kAllToAll, sent, {x});
      x = emit_.elementwise("moe_sort_chunks", z.received / p.etp * h * act, z.received / p.etp * h * act, {x});
    }
  }
  if (p.etp > 1) {
    x = emit_.collective("moe_combine", Stream::kEp, GroupKind::kExpertTp, CollectiveKind::kAllGather,
                         z.received * h * act, {x});
  }
  // The bias's backward comes first: autograd reaches the down projection's output (where the moe_act recompute
  // is hooked) through it.
  if (m.mlp_bias) x = emit_.elementwise("expert_bias", expert_bias_backward(z.received, h, act, z.local_experts), {x});
  if (uses_fp8(ctx_)) x = emit_fp8_cast(emit_, "fp8_cast", z.received * h, x);
  if (!kept.expert_activation_outputs) {
    // Megatron's moe_act recompute, hooked on the down projection's output gradient: the activation runs again
    // from its saved input before the down projection's backward, which needs it for the weight gradient.
    PhaseScope scope(emit_, Phase::kRecompute);
    const MaybeTask again = ops_.activation_fwd(x, z.received, z.width, false, true);
    emit_.save(again, down_input_saved());
  }
  // The two weight gradients of the grouped expert GEMMs (down, then up), inline after each input gradient, or with
  // delay_wgrad_compute once the dispatch's backward all-to-all has been issued (Megatron-Core's backward_dw).
  const bool delay = p.delay_wgrad_compute;
  const auto down_wgrad = [&] {
    ops_.weight_grad("experts", GemmShape{z.width, h, z.rows, z.local_experts, ctx_.gemm_dtype, true},
                     down_input_saved(), nullptr, params);
  };
  const auto up_wgrad = [&] {
    ops_.weight_grad("experts", GemmShape{z.up, h, z.rows, z.local_experts, ctx_.gemm_dtype, true},
                     z.received * h * linear_input_bytes(ctx_), "experts", params);
  };
  x = emit_.gemm("experts", GemmShape{z.rows, z.width, h, z.local_experts, ctx_.gemm_dtype, true}, {x});
  if (!delay) down_wgrad();
  x = ops_.activation_bwd(x, z.received, z.width);  // also the probabilities' gradient, from the saved up outputs
  emit_.release(x, z.received * 4);
  if (uses_fp8(ctx_)) x = emit_fp8_cast(emit_, "fp8_cast", z.received * z.up, x);
  x = emit_.gemm("experts", GemmShape{z.rows, h, z.up, z.local_experts, ctx_.gemm_dtype, true}, {x});
  if (!delay) up_wgrad();
  if (p.etp > 1) {
    x = emit_.collective("moe_dispatch", Stream::kEp, GroupKind::kExpertTp, CollectiveKind::kReduceScatter,
                         z.received * h * act, {x});
  }
  if (flex) {
    // The copies' gradients are summed per token on this rank, and the dispatch's backward (a combine) adds the
    // ranks' sums at the token's home.
    x = emit_.elementwise("moe_permute", z.received * h * act, fb.received, {x});
    x = emit_.expert_dispatch("moe_dispatch", fb.nvlink, fb.network, {x});
  } else if (gather_dispatch) {
    x = emit_.elementwise("moe_permute", z.received / p.etp * h * act, z.tokens * p.ep * h * act, {x});
    x = emit_.collective("moe_dispatch", Stream::kEp, GroupKind::kEp, CollectiveKind::kReduceScatter,
                         z.tokens * h * act * p.ep, {x});
  } else {
    x = emit_.elementwise("moe_sort_chunks", z.received / p.etp * h * act, z.received / p.etp * h * act, {x});
    x = emit_.collective("moe_dispatch", Stream::kEp, GroupKind::kEp, CollectiveKind::kAllToAll, sent, {x});
  }
  // Delayed, the weight gradients take the compute stream while the dispatch's backward communication runs.
  if (delay) {
    down_wgrad();
    up_wgrad();
  }
  if (!flex && !gather_dispatch) x = emit_.elementwise("moe_permute", z.copies * h * act, z.tokens * h * act, {x});
  // Router backward: softmax/top-k gradient, then the router's input and weight gradients.
  MaybeTask r = emit_.elementwise("router_topk", z.tokens * E * 4 + z.copies * 4, z.tokens * E * 4, {x});
  emit_.release(r, z.tokens * E * 4);
  r = emit_.gemm("router", GemmShape{z.tokens, h, E, 1, ctx_.act_dtype}, {r});
  ops_.weight_grad("router", GemmShape{E, h, z.tokens, 1, ctx_.act_dtype}, router_input_saved(), "router", params);
  const Bytes x_bytes = z.tokens * h * act;
  return emit_.elementwise("moe_grad_sum", (shared.emitted() ? 3 : 2) * x_bytes, x_bytes, {x, r, shared});
}

}  // namespace orrery
