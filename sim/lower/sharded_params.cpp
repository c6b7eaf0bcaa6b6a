#include "sim/lower/sharded_params.h"

#include <algorithm>

#include "sim/lower/megatron_deepspeed.h"

namespace orrery {

namespace {

// DeepSpeed's stage3_param_persistence_threshold default (DeepSpeed configuration documentation, ZeRO options):
// parameters with at most this many elements are not partitioned.
constexpr std::int64_t kPersistenceThreshold = 100000;

}  // namespace

ShardedParamsLowering::ShardedParamsLowering(const LoweringContext& ctx, int stage)
    : ctx_(ctx),
      stage_(stage),
      active_((ctx.plan.zero_stage == 3 || ctx.training.framework == Framework::kFsdp2) &&
              (ctx.data_parallel_ranks() > 1 || ctx.expert_data_parallel_ranks() > 1)),
      per_parameter_(ctx.training.framework == Framework::kDeepSpeed03),
      fsdp2_(ctx.training.framework == Framework::kFsdp2),
      ds3_(ctx.training.framework == Framework::kMegatronDeepSpeed && ctx.plan.zero_stage == 3) {}

std::vector<ParamUnit> ShardedParamsLowering::units(int chunk) const {
  std::vector<ParamUnit> out;
  const PipelineLayout& layout = ctx_.layout;
  auto unit = [&](int layer, bool head, const std::vector<ParamGroup>& groups) {
    ParamUnit u{layer, head, 0, 0, {}};
    for (const ParamGroup& g : groups) {
      // DeepSpeed ZeRO-3 keeps parameters of at most stage3_param_persistence_threshold elements whole.
      if (ds3_ && g.elements <= kPersistenceThreshold) continue;
      u.elements += g.elements;
      if (g.expert) u.expert_elements += g.elements;
      // A module's weight is its one large tensor; its bias and norm parameters fall under the threshold.
      if (per_parameter_ && g.elements > kPersistenceThreshold) u.partitioned.push_back(g.elements);
    }
    return u;
  };
  if (layout.holds_embedding(stage_, chunk)) out.push_back(unit(-1, false, embedding_param_groups(ctx_, chunk)));
  const int first = layout.first_layer_of(stage_, chunk);
  for (int l = first; l < first + layout.layers_in(stage_, chunk); ++l) {
    out.push_back(unit(l, false, layer_param_groups(ctx_, l, chunk)));
  }
  if (layout.holds_head(stage_, chunk)) {
    const int mtp_first = ctx_.model.num_layers;
    for (int l = mtp_first; l < mtp_first + ctx_.model.mtp_num_layers; ++l) {
      out.push_back(unit(l, false, layer_param_groups(ctx_, l, chunk)));
    }
    const std::vector<ParamGroup> groups = head_param_groups(ctx_, chunk);
    ParamUnit head = unit(-1, true, groups);
    if (ctx_.model.mtp_num_layers > 0 && !per_parameter_) {
      // Multi-token prediction reads the word embedding before the head runs: the first depth's unit gathers it.
      // On a one-stage pipeline it is the embedding unit's, gathered again (its gradient reduced with its owner);
      // otherwise the copy on this rank belongs to the first depth (and with tied embeddings the head gathers it
      // again as its LM head).
      ParamUnit& first_depth = out[out.size() - static_cast<std::size_t>(ctx_.model.mtp_num_layers)];
      const std::int64_t word = ctx_.word_embedding_elements();
      first_depth.elements += word;
      if (layout.virtual_stages() == 1) {
        first_depth.external += word;
      } else if (ctx_.model.tie_word_embeddings) {
        head.external += word;
      } else {
        head.elements -= word;
      }
    }
    if (per_parameter_ && ctx_.model.tie_word_embeddings && group_elements(groups, "lm_head") == 0) {
      // Megatron-DeepSpeed registers the tied word embedding as an external parameter of the head's module, so
      // DeepSpeed gathers it again there (and holds it while the head runs).
      const std::int64_t word = ctx_.word_embedding_elements();
      head.elements += word;
      head.external = word;
    }
    out.push_back(head);
  }
  if (ds3_) ds3_mark_kept(out);
  return out;
}

std::int64_t ShardedParamsLowering::sharded_dense(const ParamUnit& u) const {
  if (per_parameter_) return u.elements;
  return ctx_.data_parallel_ranks() > 1 ? u.elements - u.expert_elements : 0;
}

std::int64_t ShardedParamsLowering::sharded_expert(const ParamUnit& u) const {
  return !per_parameter_ && ctx_.expert_data_parallel_ranks() > 1 ? u.expert_elements : 0;
}

Bytes ShardedParamsLowering::param_bytes(const ParamUnit& u) const {
  return (sharded_dense(u) + sharded_expert(u)) * ctx_.param_bytes;
}

Bytes ShardedParamsLowering::grad_bytes(const ParamUnit& u) const {
  if (per_parameter_) return u.elements * ctx_.param_bytes;
  // An external parameter's gradient is its owner's to reduce.
  const std::int64_t dense = sharded_dense(u) > 0 ? sharded_dense(u) - u.external : 0;
  return (dense + sharded_expert(u)) * ctx_.grad_bytes;
}

MaybeTask ShardedParamsLowering::issue_gather(Emitter& emit, const ParamUnit& unit) {
  if (fsdp2_) return fsdp2_issue_gather(emit, unit);
  // All-gather output: the unit's full (TP-local) parameters; the gathered copy lives until released. The host
  // issues it when it reaches the unit before (FSDP's one-unit prefetch and rate limit), so it waits for the
  // compute issued so far to have started... approximated by the last compute task issued so far having ended.
  // Expert weights come from the expert-data-parallel group first; both gathers share the DP stream, so the
  // dense one, issued second, ends after both. A part whose group has one rank is not sharded: nothing to gather.
  const Bytes expert = sharded_expert(unit) * ctx_.param_bytes;
  const Bytes dense = sharded_dense(unit) * ctx_.param_bytes;
  MaybeTask last;
  if (expert > 0) {
    last = emit.collective("param_gather", Stream::kDp, GroupKind::kExpertDp, CollectiveKind::kAllGather, expert,
                           {emit.last_compute()});
    emit.builder().alloc_at_start(last.task(), MemoryKind::kWeights, expert);
  }
  if (dense > 0) {
    last = emit.collective("param_gather", Stream::kDp, GroupKind::kDp, CollectiveKind::kAllGather, dense,
                           {emit.last_compute(), last});
    emit.builder().alloc_at_start(last.task(), MemoryKind::kWeights, dense);
  }
  return last;
}

MaybeTask ShardedParamsLowering::gather_per_parameter(Emitter& emit, const ParamUnit& unit, int passes) {
  const std::int64_t ranks = ctx_.data_parallel_ranks();
  // The gathered parameters are held from the first gather until release() frees them.
  MaybeTask last = emit.elementwise("param_gather_buffer", 0, 0);
  emit.allocate(last, MemoryKind::kWeights, param_bytes(unit));
  auto gather_one = [&](std::int64_t elements) {
    const Bytes bytes = elements * ctx_.param_bytes;
    // torch.zeros of the full parameter, then torch.cuda.synchronize(): nothing issued before overlaps.
    const MaybeTask zero = emit.comm_copies("param_gather_zero", 0, bytes, 1, {emit.last_compute()});
    const MaybeTask ag = emit.collective("param_gather", Stream::kDp, GroupKind::kDp, CollectiveKind::kAllGather, bytes,
                                         {zero});
    // ProcessGroupNCCL copies each rank's chunk from its flat buffer into the list's views: one launch per rank.
    last = emit.comm_copies("param_gather_copies", bytes, bytes, ranks, {ag, zero});
  };
  for (int pass = 0; pass < passes; ++pass) {
    for (std::int64_t elements : unit.partitioned) gather_one(elements);
    if (unit.external > 0) gather_one(unit.external);
  }
  return last;
}

void ShardedParamsLowering::reduce_per_parameter(Emitter& emit, const ParamUnit& unit, MaybeTask grads_done) {
  const std::int64_t ranks = ctx_.data_parallel_ranks();
  // DeepSpeed 0.3 reduces the fp16 gradients in their own type, not in an fp32 buffer.
  MaybeTask after = grads_done;
  for (std::int64_t elements : unit.partitioned) {
    const Bytes bytes = elements * ctx_.param_bytes;
    // ProcessGroupNCCL flattens the list of per-rank input views: one copy launch per rank.
    const MaybeTask flat = emit.comm_copies("grad_scatter_copies", bytes, bytes, ranks, {after});
    const MaybeTask rs = emit.collective("grad_reduce", Stream::kDpReduce, GroupKind::kDp,
                                         CollectiveKind::kReduceScatter,
                                         bytes, {flat});
    // handle.wait() before the gradient is partitioned: the compute stream waits for the reduce-scatter.
    after = emit.elementwise("grad_scatter_wait", 0, 0, {rs, flat});
  }
}

MaybeTask ShardedParamsLowering::gather(Emitter& emit, const std::vector<ParamUnit>& units, std::size_t i,
                                        bool backward) {
  if (!active_) return {};
  // The unit's full gradients accumulate until its reduce-scatter.
  // (FSDP2's unsharded gradients are bf16, its reduce dtype only from the reduce-scatter copy-in on.)
  if (backward) {
    const Bytes grads = fsdp2_ ? sharded_dense(units[i]) * ctx_.param_bytes : grad_bytes(units[i]);
    emit.allocate(emit.elementwise("grad_buffer", 0, 0), MemoryKind::kGradients, grads);
  }
  if (per_parameter_) {
    // The backward of a fully recomputed transformer layer gathers twice: for the recomputed forward, then for
    // the backward. The embedding and head sit outside Megatron's checkpointed layers.
    const int passes = backward && units[i].layer >= 0 && ctx_.training.recompute == Recompute::kFull ? 2 : 1;
    return gather_per_parameter(emit, units[i], passes);
  }
  auto key = [](const ParamUnit& u) { return std::make_pair(u.layer, u.head); };
  MaybeTask own;
  auto it = std::find_if(prefetched_.begin(), prefetched_.end(), [&](const auto& p) { return p.first == key(units[i]); });
  const bool was_prefetched = it != prefetched_.end();
  if (was_prefetched) {
    own = it->second;
    prefetched_.erase(it);
  } else if (!(backward && kept_after_forward(units[i]))) {
    own = ds3_ ? ds3_gather(emit, sharded_dense(units[i])) : issue_gather(emit, units[i]);
  }
  if (ds3_ && was_prefetched) {
    // DeepSpeed prefetched only the first stage3_prefetch_bucket_size elements; the rest is fetched now.
    auto part = std::find_if(prefetched_elements_.begin(), prefetched_elements_.end(),
                             [&](const auto& p) { return p.first == key(units[i]); });
    const std::int64_t rest = sharded_dense(units[i]) - part->second;
    prefetched_elements_.erase(part);
    if (rest > 0) tail_ = ds3_gather(emit, rest);
  }
  // FSDP2 copies the gathered parameters out before the unit runs, and the next gather's copy-in waits for that.
  if (fsdp2_ && own.emitted()) own = fsdp2_copy_out(emit, units[i], own);
  // (A unit kept unsharded since its forward needs no gather in the backward.)
  const bool has_next = backward ? i > 0 && !kept_after_forward(units[i - 1]) : i + 1 < units.size();
  if (has_next) {
    const ParamUnit& next = backward ? units[i - 1] : units[i + 1];
    if (ds3_) {
      const std::int64_t part = std::min(kDeepSpeedPrefetchElements, sharded_dense(next));
      prefetched_elements_.emplace_back(key(next), part);
      prefetched_.emplace_back(key(next), ds3_gather(emit, part));
    } else {
      prefetched_.emplace_back(key(next), issue_gather(emit, next));
    }
  }
  return own;
}

void ShardedParamsLowering::release(Emitter& emit, const ParamUnit& unit) {
  if (!active_ || kept_after_forward(unit)) return;
  release_params(emit, unit);
}

void ShardedParamsLowering::release_params(Emitter& emit, const ParamUnit& unit) {
  const MaybeTask marker = emit.elementwise("param_release", 0, 0);
  emit.builder().free_at_end(marker.task(), MemoryKind::kWeights, param_bytes(unit));
}

void ShardedParamsLowering::reduce(Emitter& emit, const ParamUnit& unit, MaybeTask grads_done) {
  if (!active_) return;
  if (fsdp2_) {
    fsdp2_reduce(emit, unit, grads_done);
    return;
  }
  if (ds3_) {
    ds3_reduce(emit, unit, grads_done);
    return;
  }
  release(emit, unit);
  PhaseScope scope(emit, Phase::kBackwardWeight);
  if (per_parameter_) {
    reduce_per_parameter(emit, unit, grads_done);
    emit.deallocate(emit.elementwise("grad_release", 0, 0), MemoryKind::kGradients, grad_bytes(unit));
    return;
  }
  // Expert gradients are reduce-scattered over the expert-data-parallel group, the rest over the data-parallel one.
  const Bytes expert = sharded_expert(unit) * ctx_.grad_bytes;
  const Bytes dense = grad_bytes(unit) - expert;
  if (expert > 0) {
    const MaybeTask ers = emit.collective("grad_reduce", Stream::kDpReduce, GroupKind::kExpertDp,
                                          CollectiveKind::kReduceScatter, expert, {grads_done});
    emit.deallocate(ers, MemoryKind::kGradients, expert);
  }
  if (dense > 0) {
    const MaybeTask rs = emit.collective("grad_reduce", Stream::kDpReduce, GroupKind::kDp,
                                         CollectiveKind::kReduceScatter,
                                         dense, {grads_done});
    emit.deallocate(rs, MemoryKind::kGradients, dense);
  }
}

}  // namespace orrery
