#include "sim/lower/context.h"

#include <algorithm>
#include <cassert>

#include "hardware/pool_link.h"
#include "sim/group_placement.h"

namespace orrery {

LoweringContext::LoweringContext(const Job& j)
    : job(j),
      scenario(j.scenario()),
      model(j.model()),
      plan(j.plan()),
      training(j.training()),
      cluster(j.cluster()),
      layout(j.layout()),
      ranks(j.ranks()),
      microbatches(j.microbatches()),
      tp(j.plan().tp),
      batch(j.training().micro_batch_size),
      seq(j.training().seq_length / j.plan().cp),
      tokens(j.rank_tokens()),
      tokens_sp(j.plan().sequence_parallel ? j.rank_tokens() / j.plan().tp : j.rank_tokens()),
      padded_vocab(j.padded_vocab()),
      act_dtype(j.activation_dtype()),
      gemm_dtype(j.gemm_dtype()),
      fp8_recipe(j.training().fp8_recipe),
      act_bytes(j.activation_bytes()),
      param_bytes(j.state_bytes().param),
      resident_param_bytes(j.state_bytes().resident_param),
      grad_bytes(j.state_bytes().grad),
      optimizer_bytes(j.state_bytes().optimizer),
      padded_model(j.padded_model()) {
  if (j.packing()) packed_fraction = j.packing()->microbatch_fraction;
}

GroupPlacement LoweringContext::place_group(GroupKind kind, int stage) const {
  const PoolAssignment& pools = job.pools();
  // The stage's costliest group of the kind prices all of them (sim/group_placement.h).
  if (pools.stage_pool.empty()) return costliest_group_placement(cluster, ranks, kind, stage);
  // On a mixed cluster a stage's groups lie on its pool; a send or receive whose other end is on another pool
  // crosses between pools (hardware/pool_link.h).
  if (is_pipeline_transfer(kind)) {
    const std::vector<int> pair = ranks.group_members(kind, stage * job.ranks_per_stage());
    for (int member : pair) {
      const int peer = ranks.coord(member).pp;
      if (pools.stage_pool[static_cast<std::size_t>(peer)] != pools.stage_pool[static_cast<std::size_t>(stage)]) {
        return cross_pool_placement(job.stage_cluster(stage), job.stage_cluster(peer));
      }
    }
  }
  return costliest_group_placement(job.stage_cluster(stage), ranks, kind, stage, pools.stage_base);
}

const GroupPlacement& LoweringContext::placement(GroupKind kind, int stage) const {
  auto key = std::make_pair(kind, stage);
  auto it = placements_.find(key);
  if (it != placements_.end()) return it->second;
  return placements_.emplace(key, place_group(kind, stage)).first->second;
}

std::int64_t LoweringContext::local_elements(const ParamTensor& t) const {
  switch (t.sharding) {
    case ParamSharding::kReplicated: return t.elements;
    case ParamSharding::kTensorParallel: return t.elements / tp;
    case ParamSharding::kExpert: return t.elements / (plan.ep * plan.etp);
  }
  return t.elements;
}

Emitter::Emitter(const LoweringContext& ctx, ProgramBuilder& builder, int stage)
    : ctx_(ctx), builder_(builder), stage_(stage) {}

void Emitter::gather(std::initializer_list<MaybeTask> deps) {
  waits_.clear();
  for (const MaybeTask& d : deps) {
    for (TaskId t : d.waits()) {
      if (std::find(waits_.begin(), waits_.end(), t) == waits_.end()) waits_.push_back(t);
    }
  }
}

MaybeTask Emitter::add(const Task& task, const Op& op, std::initializer_list<MaybeTask> deps) {
  gather(deps);
  return MaybeTask(builder_.add(task, op, waits_));
}

MaybeTask Emitter::skip(std::initializer_list<MaybeTask> deps) {
  gather(deps);
  return MaybeTask::skipped(waits_);
}

Task Emitter::base(TaskKind kind, const char* label, Stream stream) const {
  Task t;
  t.kind = kind;
  t.phase = position_.phase;
  t.stream = stream_for(stream);
  t.chunk = static_cast<std::int16_t>(position_.chunk);
  t.layer = position_.layer;
  t.microbatch = position_.microbatch;
  t.label = label;
  return t;
}

MaybeTask Emitter::gemm(const char* label, GemmShape shape, std::initializer_list<MaybeTask> deps) {
  if (dropped()) return skip(deps);
  if (shape.dtype == DType::kFp8) shape.fp8_scaling = fp8_scaling(ctx().fp8_recipe);
  return add(base(TaskKind::kGemm, label, Stream::kCompute), shape, deps);
}

MaybeTask Emitter::attention(const char* label, AttentionShape shape, std::initializer_list<MaybeTask> deps) {
  if (dropped()) return skip(deps);
  return add(base(TaskKind::kAttention, label, Stream::kCompute), shape, deps);
}

MaybeTask Emitter::elementwise(const char* label, Bytes read, Bytes written, std::initializer_list<MaybeTask> deps) {
  return elementwise(label, ElementwiseKernel::kGeneric, read, written, deps);
}

MaybeTask Emitter::elementwise(const char* label, ElementwiseKernel kernel, Bytes read, Bytes written,
                               std::initializer_list<MaybeTask> deps) {
  if (dropped()) return skip(deps);
  return add(base(TaskKind::kElementwise, label, Stream::kCompute),
                      ElementwiseShape{read, written, 0.0, 1, kernel}, deps);
}

MaybeTask Emitter::elementwise(const char* label, const ElementwiseShape& shape,
                               std::initializer_list<MaybeTask> deps) {
  if (dropped()) return skip(deps);
  return add(base(TaskKind::kElementwise, label, Stream::kCompute), shape, deps);
}

MaybeTask Emitter::comm_copies(const char* label, Bytes read, Bytes written, std::int64_t kernels,
                               std::initializer_list<MaybeTask> deps) {
  return comm_copies_on(Stream::kCompute, label, read, written, kernels, deps);
}

MaybeTask Emitter::comm_copies_on(Stream stream, const char* label, Bytes read, Bytes written, std::int64_t kernels,
                                  std::initializer_list<MaybeTask> deps) {
  if (dropped()) return skip(deps);
  return add(base(TaskKind::kCommCopy, label, stream), ElementwiseShape{read, written, 0.0, kernels}, deps);
}

MaybeTask Emitter::optimizer(const char* label, Bytes read, Bytes written, std::initializer_list<MaybeTask> deps,
                             ElementwiseKernel kernel) {
  if (dropped()) return skip(deps);
  return add(base(TaskKind::kOptimizer, label, Stream::kCompute),
                      ElementwiseShape{read, written, 0.0, 1, kernel}, deps);
}

MaybeTask Emitter::host_sync(const char* label, std::initializer_list<MaybeTask> deps) {
  return host_sync_on(Stream::kCompute, label, deps);
}

MaybeTask Emitter::host_sync_on(Stream stream, const char* label, std::initializer_list<MaybeTask> deps) {
  if (dropped()) return skip(deps);
  return add(base(TaskKind::kHostSync, label, stream), HostSyncShape{}, deps);
}

MaybeTask Emitter::collective(const char* label, Stream stream, GroupKind group, CollectiveKind kind, Bytes bytes,
                              std::initializer_list<MaybeTask> deps) {
  if (dropped()) return skip(deps);
  const GroupPlacement& where = ctx_.placement(group, stage_);
  if (where.size <= 1) return skip(deps);
  Task t = base(TaskKind::kCollective, label, stream);
  t.group = group;
  return add(t, CollectiveOp{kind, bytes, where}, deps);
}

MaybeTask Emitter::expert_dispatch(const char* label, Bytes nvlink, Bytes network,
                                   std::initializer_list<MaybeTask> deps) {
  if (dropped()) return skip(deps);
  const GroupPlacement& where = ctx_.placement(GroupKind::kEp, stage_);
  if (where.size <= 1) return skip(deps);
  Task t = base(TaskKind::kCollective, label, Stream::kEp);
  t.group = GroupKind::kEp;
  CollectiveOp op{CollectiveKind::kExpertDispatch, nvlink, where};
  op.network_bytes = network;
  return add(t, op, deps);
}

MaybeTask Emitter::host_op(const char* label, Stream stream, HostOpShape shape, std::initializer_list<MaybeTask> deps) {
  if (dropped()) return skip(deps);
  return add(base(TaskKind::kHostOp, label, stream), shape, deps);
}

MaybeTask Emitter::p2p(const char* label, Stream stream, GroupKind group, Bytes bytes, std::initializer_list<MaybeTask> deps) {
  if (dropped()) return skip(deps);
  Task t = base(TaskKind::kSendRecv, label, stream);
  t.group = group;
  return add(t, CollectiveOp{CollectiveKind::kSendRecv, bytes, ctx_.placement(group, stage_)}, deps);
}

}  // namespace orrery
