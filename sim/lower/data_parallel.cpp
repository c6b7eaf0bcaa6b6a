#include "sim/lower/data_parallel.h"

#include <algorithm>
#include <cassert>
#include <cstring>
#include <map>
#include <tuple>

#include "sim/lower/megatron_deepspeed.h"

namespace orrery {

std::int64_t DataParallelLowering::bucket_size(int data_parallel_ranks) {
  return std::max<std::int64_t>(40'000'000, 1'000'000LL * data_parallel_ranks);
}

std::int64_t DataParallelLowering::bucket_elements(int data_parallel_ranks) const {
  return zero_stage_ == 2 ? kDeepSpeedReduceBucketSize : bucket_size(data_parallel_ranks);
}

DataParallelLowering::DataParallelLowering(const LoweringContext& ctx, int stage)
    : ctx_(ctx), stage_(stage), groups_(stage_param_groups(ctx, stage)) {
  zero_stage_ = ctx.plan.zero_stage;
  deepspeed_ = ctx.training.framework == Framework::kMegatronDeepSpeed;
  // Megatron-DeepSpeed in bf16 at ZeRO 0 with a pipeline runs DeepSpeed's BF16_Optimizer (engine.py
  // _do_optimizer_sanity_check @ edaa722): master weights and moments partitioned over DP, bf16 weights gathered.
  distributed_optimizer_ = zero_stage_ >= 1 || (ctx.training.framework == Framework::kMegatronDeepSpeed &&
                                                ctx.training.precision == Precision::kBf16 && ctx.plan.pp > 1);
  reduce_ = ctx.data_parallel_ranks() > 1 || ctx.expert_data_parallel_ranks() > 1;
  // FSDP2 keeps its parameters sharded between uses at either stage (sim/lower/fsdp2.h).
  params_sharded_ = zero_stage_ >= 3 || ctx.training.framework == Framework::kFsdp2;
  chunk_reductions_.resize(static_cast<std::size_t>(ctx.layout.vpp));
  for (const ParamGroup& g : groups_) {
    local_params_ += g.elements;
    if (g.expert) local_expert_params_ += g.elements;
  }
  if (deepspeed_) {
    build_deepspeed_buckets();
    return;
  }
  // Buckets per chunk, dense and expert apart, filled in backward (reverse) order; a bucket closes once it reaches
  // the bucket size of its group.
  for (int chunk = 0; chunk < ctx.layout.vpp; ++chunk) {
    for (bool expert : {false, true}) {
      const std::int64_t size = bucket_elements(ranks_of(expert));
      GradBucket open;
      open.chunk = chunk;
      open.expert = expert;
      for (std::size_t i = groups_.size(); i-- > 0;) {
        if (groups_[i].chunk != chunk || groups_[i].expert != expert) continue;
        open.groups.push_back(i);
        open.elements += groups_[i].elements;
        if (open.elements >= size) {
          buckets_.push_back(open);
          open.groups.clear();
          open.elements = 0;
        }
      }
      if (!open.groups.empty()) buckets_.push_back(open);
    }
  }
}

void DataParallelLowering::build_deepspeed_buckets() {
  // sim/lower/megatron_deepspeed.h: one chunk, dense parameters only. The hooks (ZeRO 2, or overlap_comm) see the
  // gradients in backward order; the boundary reductions walk the parameters in forward order.
  const bool hooks = zero_stage_ == 2 || ctx_.plan.overlap_grad_reduce;
  std::vector<std::size_t> order(groups_.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = hooks ? order.size() - 1 - i : i;
  std::vector<std::int64_t> elements;
  for (std::size_t g : order) elements.push_back(groups_[g].elements);
  const auto rule = zero_stage_ == 0 ? DeepSpeedBucketRule::kCloseAfterExceeding : DeepSpeedBucketRule::kFlushBeforeOverflow;
  for (const auto& members : deepspeed_buckets(elements, kDeepSpeedBucketElements, rule)) {
    GradBucket b;
    for (std::size_t k : members) {
      b.groups.push_back(order[k]);
      b.elements += elements[k];
    }
    buckets_.push_back(b);
  }
}

std::size_t DataParallelLowering::find_group(const ParamUse& use) const {
  for (std::size_t i = 0; i < groups_.size(); ++i) {
    const ParamGroup& g = groups_[i];
    if (g.chunk == use.chunk && g.layer == use.layer && std::strcmp(g.name, use.name) == 0) return i;
  }
  assert(false && "parameter use without a group");
  return 0;
}

void DataParallelLowering::emit_prologue(Emitter& emit, const std::vector<int>& chunk_order) {
  // ZeRO-3 gathers per unit as it runs; ZeRO-1 and 2 refresh the replicated parameters by bucket.
  if (!distributed_optimizer_ || params_sharded_ || !reduce_ || !ctx_.plan.overlap_param_gather) return;
  const PositionScope at(emit, {.phase = Phase::kForward});
  // Forward order: chunks as the schedule first runs them, and within a chunk the bucket of the first layers first.
  for (int chunk : chunk_order) {
    for (auto it = buckets_.rbegin(); it != buckets_.rend(); ++it) {
      if (it->chunk != chunk) continue;
      it->param_gather = emit.collective("param_gather", Stream::kDp, group_of(*it), CollectiveKind::kAllGather,
                                         it->elements * ctx_.param_bytes);
    }
  }
}

void DataParallelLowering::emit_bucket_reduction(Emitter& emit, const std::vector<ParamUse>& grad_ready,
                                                  const MaybeTask& fallback, std::vector<MaybeTask>& done,
                                                  int only_chunk, TaskId* first_gradient) {
  std::vector<TaskId> ready(groups_.size(), -1);
  for (const ParamUse& use : grad_ready) {
    if (only_chunk >= 0 && use.chunk != only_chunk) continue;
    // A group used twice (the LM head and embedding with multi-token prediction) is ready after its last use.
    TaskId& r = ready[find_group(use)];
    r = std::max(r, use.grad_ready);
  }
  // Issue buckets in the order their gradients complete: by the task that finishes each bucket.
  // (the task that finishes the bucket, or -1 for `fallback`; its position in the order; the bucket)
  std::vector<std::tuple<TaskId, TaskId, std::size_t>> order;
  for (std::size_t b = 0; b < buckets_.size(); ++b) {
    if (only_chunk >= 0 && buckets_[b].chunk != only_chunk) continue;
    TaskId last = -1;
    for (std::size_t g : buckets_[b].groups) {
      last = std::max(last, ready[g]);
      if (first_gradient && ready[g] >= 0 && (*first_gradient < 0 || ready[g] < *first_gradient)) {
        *first_gradient = ready[g];
      }
    }
    const TaskId own = ctx_.plan.overlap_grad_reduce ? last : -1;
    order.emplace_back(own, own >= 0 ? own : fallback.latest(), b);
  }
  std::stable_sort(order.begin(), order.end(), [](const auto& x, const auto& y) {
    return std::tie(std::get<1>(x), std::get<2>(x)) < std::tie(std::get<1>(y), std::get<2>(y));
  });
  const auto kind = distributed_optimizer_ ? CollectiveKind::kReduceScatter : CollectiveKind::kAllReduce;
  for (const auto& [own, position, b] : order) {
    const MaybeTask after = own >= 0 ? MaybeTask(own) : fallback;
    const Bytes bytes = buckets_[b].elements * ctx_.grad_bytes;
    if (deepspeed_) {
      // (Dense buckets only: reduce_ is also true for an expert-DP group of several ranks, here one of TP ranks.)
      if (ctx_.data_parallel_ranks() > 1) emit_deepspeed_reduction(emit, bytes, after, done);
      continue;
    }
    const MaybeTask t = emit.collective("grad_reduce", Stream::kDpReduce, group_of(buckets_[b]), kind, bytes, {after});
    done.push_back(t);  // skipped (a one-rank group): what waits for it waits for the gradients instead
    if (t.emitted()) chunk_reductions_[static_cast<std::size_t>(buckets_[b].chunk)].push_back(t);
  }
}

void DataParallelLowering::emit_deepspeed_reduction(Emitter& emit, Bytes bytes, const MaybeTask& after,
                                                    std::vector<MaybeTask>& done) {
  // ZeRO 1/2 (stage_1_and_2.py @ edaa722): the gradients are copied into the contiguous ipg bucket, which
  // average_tensor divides by the DP size and reduces to the owners; ZeRO 0 (engine.py allreduce_and_copy):
  // flatten, all-reduce, copy back. Without overlap_comm they run on the compute stream, which waits for each.
  const bool zero0 = zero_stage_ == 0;
  const MaybeTask copy = emit.elementwise(zero0 ? "grad_flatten" : "grad_bucket_copy", bytes, bytes, {after});
  const MaybeTask div = zero0 ? copy : emit.elementwise("grad_predivide", bytes, bytes);
  const MaybeTask t = emit.collective("grad_reduce", Stream::kDpReduce, GroupKind::kDp,
                                      zero0 ? CollectiveKind::kAllReduce : CollectiveKind::kReduceScatter, bytes, {div});
  if (!ctx_.plan.overlap_grad_reduce) {
    const MaybeTask wait = zero0 ? emit.elementwise("grad_unflatten", bytes, bytes, {t})
                              : emit.elementwise("grad_reduce_wait", 0, 0, {t});
    done.push_back(wait);
  }
  if (!first_deepspeed_reduction_.emitted()) first_deepspeed_reduction_ = copy;
  last_deepspeed_reduction_ = t;
  done.push_back(t);
}

void DataParallelLowering::emit_mirror_reduction(Emitter& emit, const std::vector<ParamUse>& grad_ready,
                                                  const MaybeTask& last_backward, std::vector<MaybeTask>& done) {
  // DualPipe: ranks s and pp-1-s hold copies of model stages s and pp-1-s, whose gradients must agree before the
  // step. Each stage's copies sum their shards (after the data-parallel reduction) as soon as both are ready, over
  // the pair, while the rank's other chunk may still be computing; the DualPipe repository's example sums them
  // the same way, over full gradients. The stage in the first half of the model pairs on one stream and group
  // kind, the other on another, since the two ranks finish them in opposite orders.
  const PipelineLayout& layout = ctx_.layout;
  for (int chunk = 0; chunk < layout.vpp; ++chunk) {
    std::int64_t dense = 0, expert = 0;
    for (const ParamGroup& g : groups_) {
      if (g.chunk == chunk) (g.expert ? expert : dense) += g.elements;
    }
    const std::int64_t owned = owned_elements(dense, expert);
    const bool low = layout.virtual_stage(stage_, chunk) < ctx_.plan.pp / 2;
    // Ready once the chunk's data-parallel reductions are done, or without them once its last gradient is.
    const std::vector<MaybeTask>& reduced = chunk_reductions_[static_cast<std::size_t>(chunk)];
    MaybeTask ready;
    if (reduced.empty()) {
      TaskId last = -1;
      for (const ParamUse& use : grad_ready) {
        if (use.chunk == chunk) last = std::max(last, use.grad_ready);
      }
      ready = last >= 0 ? MaybeTask(last) : last_backward;
    }
    MaybeTask mirror = emit.collective("mirror_grad", low ? Stream::kDpReduce : Stream::kDp,
                                          low ? GroupKind::kPipelineMirrorLow : GroupKind::kPipelineMirrorHigh,
                                          CollectiveKind::kAllReduce, owned * ctx_.grad_bytes, {ready});
    for (const MaybeTask& t : reduced) emit.depend(mirror, t);
    done.push_back(mirror);
  }
}

void DataParallelLowering::emit_gradient_reduction(Emitter& emit, const std::vector<ParamUse>& grad_ready,
                                                   const MaybeTask& last_backward, std::vector<MaybeTask>& done) {
  emit_bucket_reduction(emit, grad_ready, last_backward, done, -1);
}

void DataParallelLowering::after_backward_step(Emitter& emit, int chunk, const std::vector<ParamUse>& grads) {
  if (zero_stage_ != 2 || params_sharded_ || !reduce_) return;
  const PhaseScope weight(emit, Phase::kBackwardWeight);
  std::vector<MaybeTask> done;
  TaskId first = -1;
  emit_bucket_reduction(emit, grads, emit.last_compute(), done, chunk, &first);
  // DeepSpeed's stage 2 (runtime/zero/stage_1_and_2.py, backward()) allocates its contiguous-gradient buckets
  // (ipg_buffer: reduce_bucket_size elements each, two with overlap_comm) as each backward starts; every gradient
  // is copied into the bucket being filled as its hook fires, the bucket is reduced to its owners, and only the
  // owned shard is kept. So a backward holds the buckets, never a full-size gradient of the chunk. Not modelled:
  // a hook that waits for a bucket still being reduced (the two buffers bound the reductions in flight).
  const auto last = std::find_if(done.rbegin(), done.rend(), [](const MaybeTask& t) { return t.emitted(); });
  if (last != done.rend() && first >= 0) {
    const Bytes buffers = (ctx_.plan.overlap_grad_reduce ? 2 : 1) * kDeepSpeedReduceBucketSize * ctx_.grad_bytes;
    emit.builder().alloc_at_start(first, MemoryKind::kOther, buffers);
    emit.builder().free_at_end(last->task(), MemoryKind::kOther, buffers);
  }
  step_reductions_.insert(step_reductions_.end(), done.begin(), done.end());
}

std::int64_t DataParallelLowering::owned_elements(std::int64_t dense, std::int64_t expert) const {
  if (!distributed_optimizer_) return dense + expert;
  return dense / ranks_of(false) + expert / ranks_of(true);
}

std::int64_t DataParallelLowering::optimizer_elements() const {
  return owned_elements(local_params_ - local_expert_params_, local_expert_params_);
}

MaybeTask DataParallelLowering::emit_optimizer(Emitter& emit, const std::vector<MaybeTask>& after) {
  if (ctx_.training.framework == Framework::kPytorch) {
    // torch.optim.AdamW(fused=True): one multi-tensor pass reading parameter, gradient and both moments and writing
    // all but the gradient; then zero_grad(set_to_none=True) frees the gradients.
    const PositionScope at(emit, {.phase = Phase::kOptimizer});
    MaybeTask start = emit.optimizer("optimizer_wait", 0, 0);
    for (const MaybeTask& t : after) emit.depend(start, t);
    const Bytes kept = local_params_ * (ctx_.param_bytes + ctx_.optimizer_bytes);
    emit.optimizer("adamw", kept + local_params_ * ctx_.grad_bytes, kept, {}, ElementwiseKernel::kFusedAdamW);
    const MaybeTask zero_grad = emit.optimizer("zero_grad", 0, 0);
    emit.deallocate(zero_grad, MemoryKind::kGradients, local_params_ * ctx_.grad_bytes);
    return zero_grad;
  }
  if (ctx_.training.framework == Framework::kFsdp2) return emit_fsdp2_optimizer(emit, after);
  const std::int64_t n = optimizer_elements();
  const Bytes grads = n * ctx_.grad_bytes;
  const PositionScope at(emit, {.phase = Phase::kOptimizer});
  MaybeTask start = emit.optimizer("optimizer_wait", 0, 0);
  for (const MaybeTask& t : after) emit.depend(start, t);
  MaybeTask last = start;
  if (ctx_.training.precision == Precision::kFp16) {
    // Dynamic loss scaling: unscale and look for inf/nan, then agree across the model-parallel ranks.
    last = emit.optimizer("unscale_grads", grads, grads);
    const MaybeTask inf = emit.collective("found_inf", Stream::kDp, GroupKind::kModelParallel, CollectiveKind::kAllReduce, 4, {last});
    // The loss scaler reads found_inf on the host (.item()), draining the GPU queue.
    last = emit.host_sync("found_inf_item", {inf});
  }
  // Gradient clipping: the global norm needs one scalar all-reduce across the model-parallel ranks.
  last = emit.optimizer("grad_norm", grads, 4);
  MaybeTask norm = emit.collective("grad_norm", Stream::kDp, GroupKind::kModelParallel, CollectiveKind::kAllReduce, 4, {last});
  // Megatron reads the norm on the host (total_norm.item()) to compute the clipping factor.
  last = emit.host_sync("grad_norm_item", {norm});
  last = emit.optimizer("clip_grads", grads, grads, {last});
  const Bytes state = n * ctx_.optimizer_bytes;
  if (ctx_.training.optimizer_cpu_offload) {
    // Megatron's HybridDeviceOptimizer / ZeRO-Offload: the gradient shard goes to the host, Adam runs there (reading
    // the gradient, reading and writing master weight, m and v, writing the low-precision copy), and the updated
    // parameters come back.
    last = emit.host_op("offload_grads", Stream::kDeviceToHost, {HostOpShape::Kind::kCopyToHost, grads}, {last});
    last = emit.host_op("cpu_adam", Stream::kDeviceToHost,
                        {HostOpShape::Kind::kHostMemory, grads + 2 * state + n * ctx_.param_bytes}, {last});
    return emit.host_op("upload_params", Stream::kHostToDevice,
                        {HostOpShape::Kind::kCopyToDevice, n * ctx_.param_bytes}, {last});
  }
  // DeepSpeed's stage 2 steps on an fp32 copy of the owned gradient shard (single_partition_of_fp32_groups[i].grad),
  // alive beside the low-precision shard until the step ends: the "4_grads_32bit" of its estimator,
  // estimate_zero2_model_states_mem_needs, 2 + 18 / N bytes per parameter (DeepSpeed PR #5099).
  Bytes fp32_grads = 0;
  // So does Megatron-DeepSpeed's ZeRO 1, the same DeepSpeedZeroOptimizer (sim/lower/megatron_deepspeed.h).
  if ((zero_stage_ == 2 || (deepspeed_ && zero_stage_ == 1)) && ctx_.grad_bytes < 4) {
    fp32_grads = n * 4;
    last = emit.optimizer("grads_to_fp32", grads, fp32_grads, {last});
    emit.allocate(last, MemoryKind::kGradients, fp32_grads);
  }
  // Fused Adam (apex/TE multi_tensor_adam): read the fp32 master weight, m, v and the gradient; write weight, m, v.
  last = emit.optimizer("adam", state + (fp32_grads > 0 ? fp32_grads : grads), state);
  if (fp32_grads > 0) emit.deallocate(last, MemoryKind::kGradients, fp32_grads);
  if (ctx_.param_bytes < 4) last = emit.optimizer("param_copy", n * 4, n * ctx_.param_bytes);
  return last;
}

MaybeTask DataParallelLowering::emit_fsdp2_optimizer(Emitter& emit, const std::vector<MaybeTask>& after) {
  // torchtitan trainer.py train_step @ b5bcd76: clip_grad_norm_(foreach=True) (distributed/utils.py): a foreach norm
  // of the fp32 gradient shards, the DTensor norm's full_tensor() (a scalar all-reduce over the FSDP group), and
  // clip_grads_with_norm_'s foreach multiply; then AdamW(fused=True) (components/optimizer/optimizer.py,
  // implementation "fused") over the fp32 shard: reads parameter, gradient, m and v, writes three of them.
  const std::int64_t n = optimizer_elements();
  const Bytes grads = n * ctx_.grad_bytes;
  const PositionScope at(emit, {.phase = Phase::kOptimizer});
  MaybeTask start = emit.optimizer("optimizer_wait", 0, 0);
  for (const MaybeTask& t : after) emit.depend(start, t);
  MaybeTask last = emit.optimizer("grad_norm", grads, 4);
  last = emit.collective("grad_norm", Stream::kDp, GroupKind::kDp, CollectiveKind::kAllReduce, 4, {last});
  last = emit.optimizer("clip_grads", grads, grads, {last});
  const Bytes kept = n * (ctx_.resident_param_bytes + ctx_.optimizer_bytes);
  return emit.optimizer("adamw", kept + grads, kept, {last}, ElementwiseKernel::kFusedAdamW);
}

void DataParallelLowering::emit_epilogue(Emitter& emit, const std::vector<ParamUse>& first_uses,
                                         const std::vector<ParamUse>& grad_ready, const MaybeTask& last_backward,
                                         const std::vector<MaybeTask>& extra_done) {
  // The first forward use of each parameter waits for the all-gather of its bucket.
  std::map<std::size_t, MaybeTask> gather_of_group;
  for (const GradBucket& b : buckets_) {
    for (std::size_t g : b.groups) gather_of_group[g] = b.param_gather;
  }
  for (const ParamUse& use : first_uses) {
    emit.depend(use.first_use, gather_of_group[find_group(use)]);
  }
  std::vector<MaybeTask> done = step_reductions_;
  const PositionScope at(emit, {.phase = Phase::kBackwardWeight});
  if (reduce_ && zero_stage_ <= 1) emit_gradient_reduction(emit, grad_ready, last_backward, done);
  if (ctx_.layout.mirrored) emit_mirror_reduction(emit, grad_ready, last_backward, done);
  // Tied embeddings (or the embedding copy multi-token prediction reads) across pipeline stages: the first and last
  // stage all-reduce their copies' gradients (Megatron-Core finalize_model_grads, after the data-parallel reduction).
  // (DualPipe's first and last ranks hold both ends, whose copies the mirror reduction has already summed; DualPipeV's
  // first rank holds both ends, one copy.)
  const bool first_or_last = stage_ == 0 || stage_ == ctx_.plan.pp - 1;
  const bool shared_embedding = ctx_.model.tie_word_embeddings || ctx_.model.mtp_num_layers > 0;
  if (shared_embedding && ctx_.plan.pp > 1 && first_or_last && !ctx_.layout.head_beside_embedding()) {
    const Bytes bytes = ctx_.word_embedding_elements() * ctx_.grad_bytes;
    done.push_back(emit.collective("embedding_grad", Stream::kDp, GroupKind::kEmbedding, CollectiveKind::kAllReduce,
                                   bytes, {last_backward}));
  }
  // Sequence parallelism leaves each TP rank with partial norm-weight gradients; they are all-reduced over TP.
  if (ctx_.plan.sequence_parallel && ctx_.tp > 1) {
    std::int64_t norms = 0;
    for (const ParamGroup& g : groups_) {
      if (std::strstr(g.name, "norm")) norms += g.elements;
    }
    done.push_back(emit.collective("norm_grad", Stream::kTp, GroupKind::kTp, CollectiveKind::kAllReduce,
                                   norms * ctx_.grad_bytes, {last_backward}));
  }
  done.push_back(last_backward);
  done.insert(done.end(), extra_done.begin(), extra_done.end());
  // DeepSpeed's ipg bucket (reduce_bucket_size elements of the gradient dtype) lives while ZeRO 1 reduces at the
  // boundary (stage_1_and_2.py backward / reduce_gradients allocate it; ZeRO 2 is counted per backward step).
  if (deepspeed_ && zero_stage_ == 1 && first_deepspeed_reduction_.emitted() && last_deepspeed_reduction_.emitted()) {
    const Bytes buffer = kDeepSpeedBucketElements * ctx_.grad_bytes;
    emit.allocate(first_deepspeed_reduction_, MemoryKind::kOther, buffer);
    emit.deallocate(last_deepspeed_reduction_, MemoryKind::kOther, buffer);
  }
  MaybeTask step = emit_optimizer(emit, done);
  if (deepspeed_ && distributed_optimizer_ && reduce_ && zero_stage_ < 3) {
    // all_gather_dp_groups (runtime/utils.py @ edaa722): one all_gather_into_tensor of the flat 16-bit group.
    const PositionScope optimizer(emit, {.phase = Phase::kOptimizer});
    emit.collective("param_gather", Stream::kDp, GroupKind::kDp, CollectiveKind::kAllGather,
                    local_params_ * ctx_.param_bytes, {step});
    return;
  }
  if (distributed_optimizer_ && !params_sharded_ && reduce_ && !ctx_.plan.overlap_param_gather) {
    const PositionScope optimizer(emit, {.phase = Phase::kOptimizer});
    for (auto it = buckets_.rbegin(); it != buckets_.rend(); ++it) {
      emit.collective("param_gather", Stream::kDp, group_of(*it), CollectiveKind::kAllGather,
                      it->elements * ctx_.param_bytes, {step});
    }
  }
}

void DataParallelLowering::set_static_memory(ProgramBuilder& builder, Bytes other) const {
  // ZeRO (arXiv:1910.02054) Section 5: stage 1 shards the optimizer state, stage 2 also the gradients, stage 3
  // also the parameters, each over the data-parallel ranks.
  // Expert weights are sharded over the expert-data-parallel ranks instead.
  const std::int64_t owned = optimizer_elements();
  // With optimizer CPU offload the master weights and moments live in host memory.
  const Bytes optimizer = ctx_.training.optimizer_cpu_offload ? 0 : owned * ctx_.optimizer_bytes;
  // PyTorch allocates .grad in the backward and frees it at zero_grad(set_to_none): no static gradients.
  const Bytes grads = ctx_.training.framework == Framework::kPytorch ? 0
                                                                      : (zero_stage_ >= 2 ? owned : local_params_) * ctx_.grad_bytes;
  const Bytes weights = (params_sharded_ ? owned : local_params_) * ctx_.resident_param_bytes;
  builder.set_static_memory(MemoryKind::kWeights, weights);
  builder.set_static_memory(MemoryKind::kGradients, grads);
  builder.set_static_memory(MemoryKind::kOptimizer, optimizer);
  builder.set_static_memory(MemoryKind::kOther, other);
}

}  // namespace orrery
