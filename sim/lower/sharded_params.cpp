#include "sim/lower/sharded_params.h"

#include <algorithm>

namespace orrery {

ShardedParamsLowering::ShardedParamsLowering(const LoweringContext& ctx, int stage)
    : ctx_(ctx), stage_(stage), active_(ctx.plan.zero_stage == 3 && ctx.data_parallel_ranks() > 1) {}

std::vector<ParamUnit> ShardedParamsLowering::units(int chunk) const {
  std::vector<ParamUnit> out;
  const PipelineLayout& layout = ctx_.layout;
  auto sum = [](const std::vector<ParamGroup>& g) {
    std::int64_t n = 0;
    for (const ParamGroup& x : g) n += x.elements;
    return n;
  };
  if (layout.holds_embedding(stage_, chunk)) out.push_back({-1, false, sum(embedding_param_groups(ctx_, chunk))});
  const int first = layout.first_layer_of(stage_, chunk);
  for (int l = first; l < first + layout.layers_in(stage_, chunk); ++l) {
    out.push_back({l, false, sum(layer_param_groups(ctx_, l, chunk))});
  }
  if (layout.holds_head(stage_, chunk)) out.push_back({-1, true, sum(head_param_groups(ctx_, chunk))});
  return out;
}

Bytes ShardedParamsLowering::param_bytes(const ParamUnit& u) const { return u.elements * ctx_.param_bytes; }
Bytes ShardedParamsLowering::grad_bytes(const ParamUnit& u) const { return u.elements * ctx_.grad_bytes; }

TaskId ShardedParamsLowering::issue_gather(Emitter& emit, const ParamUnit& unit) {
  // All-gather output: the unit's full (TP-local) parameters; the gathered copy lives until released. The host
  // issues it when it reaches the unit before (FSDP's one-unit prefetch and rate limit), so it waits for the
  // compute issued so far to have started... approximated by the last compute task issued so far having ended.
  const TaskId ag = emit.collective("param_gather", Stream::kDp, GroupKind::kDp, CollectiveKind::kAllGather,
                                    param_bytes(unit), {emit.last_compute()});
  emit.builder().alloc_at_start(ag, MemoryKind::kWeights, param_bytes(unit));
  return ag;
}

TaskId ShardedParamsLowering::gather(Emitter& emit, const std::vector<ParamUnit>& units, std::size_t i, bool backward) {
  if (!active_) return -1;
  auto key = [](const ParamUnit& u) { return std::make_pair(u.layer, u.head); };
  TaskId own = -1;
  auto it = std::find_if(prefetched_.begin(), prefetched_.end(), [&](const auto& p) { return p.first == key(units[i]); });
  if (it != prefetched_.end()) {
    own = it->second;
    prefetched_.erase(it);
  } else {
    own = issue_gather(emit, units[i]);
  }
  const bool has_next = backward ? i > 0 : i + 1 < units.size();
  if (has_next) {
    const ParamUnit& next = backward ? units[i - 1] : units[i + 1];
    prefetched_.emplace_back(key(next), issue_gather(emit, next));
  }
  if (backward) {
    // The unit's full gradients accumulate until its reduce-scatter.
    const TaskId buffer = emit.elementwise("grad_buffer", 0, 0);
    emit.builder().alloc_at_start(buffer, MemoryKind::kGradients, grad_bytes(units[i]));
  }
  return own;
}

void ShardedParamsLowering::release(Emitter& emit, const ParamUnit& unit) {
  if (!active_) return;
  const TaskId marker = emit.elementwise("param_release", 0, 0);
  emit.builder().free_at_end(marker, MemoryKind::kWeights, param_bytes(unit));
}

void ShardedParamsLowering::reduce(Emitter& emit, const ParamUnit& unit, TaskId grads_done) {
  if (!active_) return;
  release(emit, unit);
  const Phase saved = emit.phase();
  emit.set_phase(Phase::kBackwardWeight);
  const TaskId rs = emit.collective("grad_reduce", Stream::kDpReduce, GroupKind::kDp, CollectiveKind::kReduceScatter,
                                    grad_bytes(unit), {grads_done});
  emit.builder().free_at_end(rs, MemoryKind::kGradients, grad_bytes(unit));
  emit.set_phase(saved);
}

}  // namespace orrery
