#pragma once
// Data-parallel gradient reduction, the optimizer step and the distributed optimizer's parameter all-gather for
// one pipeline stage. ZeRO stages 0 and 1 as Megatron-Core's DistributedDataParallel and DistributedOptimizer run
// them; stage 2 (DeepSpeed) reduce-scatters the buckets after every micro-batch's backward, keeping only the
// gradient shard; stage 3 reduces per unit (sim/lower/sharded_params.h). For stages 0 and 1:
// - gradients go into buckets of at least max(40M, 1M x DP) parameters, filled in backward order per model chunk
//   (megatron/core/distributed/distributed_data_parallel.py, default bucket_size);
// - a bucket is all-reduced (ZeRO 0) or reduce-scattered (ZeRO 1) on the data-parallel stream as soon as its last
//   gradient is ready in the last micro-batch (overlap_grad_reduce), or after the backward pass otherwise;
// - after the optimizer step, ZeRO 1 all-gathers the updated parameters; with overlap_param_gather the gathers of
//   the next iteration run during the first micro-batch's forward pass, which waits for each bucket it uses;
// - routed-expert weights live in buckets of their own, reduced (and their optimizer state sharded) over the
//   expert-data-parallel group instead (Megatron-Core's expert_parallel_buffers);
// - with DualPipe, the two copies of each model stage (on stages s and pp-1-s) sum their gradient shards.

#include <vector>

#include "sim/lower/context.h"
#include "sim/lower/param_groups.h"

namespace orrery {

struct GradBucket {
  int chunk = 0;
  bool expert = false;              // routed-expert weights, reduced over the expert-DP group
  std::int64_t elements = 0;
  std::vector<std::size_t> groups;  // indexes into the stage's groups
  MaybeTask param_gather;           // the all-gather that refreshes it (ZeRO 1), if emitted
};

class DataParallelLowering {
 public:
  DataParallelLowering(const LoweringContext& ctx, int stage);

  /// Before the schedule: the overlapped parameter all-gathers of the distributed optimizer, chunk by chunk in
  /// `chunk_order` (the order the schedule first runs them forward).
  void emit_prologue(Emitter& emit, const std::vector<int>& chunk_order);
  /// After a backward step of `chunk` whose weight gradients finished at `grads`: ZeRO-2 reduce-scatters the
  /// chunk's buckets now (every micro-batch); other stages do nothing here.
  /// Each bucket's full-size gradients are held from its first gradient to the end of its reduce-scatter.
  void after_backward_step(Emitter& emit, int chunk, const std::vector<ParamUse>& grads);
  /// After the schedule: gradient reduction, embedding and norm synchronisation, optimizer step, and the
  /// non-overlapped parameter all-gathers. `first_uses` and `grad_ready` come from the lowering of the first
  /// forward and last backward pass of each chunk; `last_backward` is the last compute task of the schedule.
  /// `extra_done`: further tasks the optimizer waits for (FSDP2's per-unit reduce-scatters).
  void emit_epilogue(Emitter& emit, const std::vector<ParamUse>& first_uses, const std::vector<ParamUse>& grad_ready,
                     const MaybeTask& last_backward, const std::vector<MaybeTask>& extra_done = {});
  /// Static memory of the stage (weights, gradients, optimizer state), written into the builder.
  void set_static_memory(ProgramBuilder& builder, Bytes other) const;

  const std::vector<GradBucket>& buckets() const { return buckets_; }
  std::int64_t local_parameters() const { return local_params_; }
  /// Minimum bucket size in parameters: max(40M, 1M x data-parallel ranks).
  static std::int64_t bucket_size(int data_parallel_ranks);
  /// DeepSpeed's default reduce_bucket_size in elements (DeepSpeedZeroOptimizer, runtime/zero/stage_1_and_2.py),
  /// the gradient bucket of ZeRO-2.
  static constexpr std::int64_t kDeepSpeedReduceBucketSize = 500'000'000;

 private:
  std::size_t find_group(const ParamUse& use) const;
  /// Elements a bucket closes at: DeepSpeed's reduce_bucket_size for ZeRO-2, else bucket_size.
  std::int64_t bucket_elements(int data_parallel_ranks) const;
  void emit_gradient_reduction(Emitter& emit, const std::vector<ParamUse>& grad_ready, const MaybeTask& last_backward,
                               std::vector<MaybeTask>& done);
  MaybeTask emit_optimizer(Emitter& emit, const std::vector<MaybeTask>& after);
  /// training.framework fsdp2: gradient clipping and fused AdamW over the rank's fp32 shard (sim/lower/fsdp2.h).
  MaybeTask emit_fsdp2_optimizer(Emitter& emit, const std::vector<MaybeTask>& after);
  /// training.framework megatron-deepspeed: DeepSpeed's buckets over all the stage's parameters
  /// (sim/lower/megatron_deepspeed.h).
  void build_deepspeed_buckets();
  /// One DeepSpeed bucket's reduction of `bytes` after `after`: its copies, the collective, and without
  /// overlap_comm the compute stream's wait for it; appends what the step must wait for to `done`.
  void emit_deepspeed_reduction(Emitter& emit, Bytes bytes, const MaybeTask& after, std::vector<MaybeTask>& done);
  /// Of `dense` and `expert` parameters, those whose gradients and optimizer state this rank owns: its shard
  /// (over the data-parallel and expert-data-parallel ranks) with the distributed optimizer, else all.
  std::int64_t owned_elements(std::int64_t dense, std::int64_t expert) const;
  /// owned_elements of all the stage's parameters.
  std::int64_t optimizer_elements() const;
  /// DualPipe: per chunk, one all-reduce with the mirror rank (pp-1-s) of the chunk's owned gradient shard, after
  /// the chunk's data-parallel reductions (or its last gradient); appends them to `done`.
  void emit_mirror_reduction(Emitter& emit, const std::vector<ParamUse>& grad_ready, const MaybeTask& last_backward,
                             std::vector<MaybeTask>& done);
  /// Reduces the buckets (of chunk `only_chunk`, or all when < 0) in the order their gradients complete, appending
  /// the reductions to `done`; when `first_gradient` is given, sets it to the earliest task producing one of their
  /// gradients (left as is when none does).
  void emit_bucket_reduction(Emitter& emit, const std::vector<ParamUse>& grad_ready, const MaybeTask& fallback,
                             std::vector<MaybeTask>& done, int only_chunk, TaskId* first_gradient = nullptr);

  const LoweringContext& ctx_;
  int stage_;
  std::vector<ParamGroup> groups_;
  GroupKind group_of(const GradBucket& b) const { return b.expert ? GroupKind::kExpertDp : GroupKind::kDp; }
  int ranks_of(bool expert) const { return expert ? ctx_.expert_data_parallel_ranks() : ctx_.data_parallel_ranks(); }

  std::vector<GradBucket> buckets_;
  std::int64_t local_params_ = 0;
  std::int64_t local_expert_params_ = 0;  // part of local_params_
  int zero_stage_ = 0;
  bool distributed_optimizer_ = false;  // optimizer state sharded (ZeRO >= 1)
  bool reduce_ = false;  // more than one data-parallel rank
  bool params_sharded_ = false;  // ZeRO-3, or FSDP2 at stage 2 or 3: parameters gathered per unit
  bool deepspeed_ = false;  // training.framework megatron-deepspeed
  MaybeTask first_deepspeed_reduction_, last_deepspeed_reduction_;  // ZeRO 1's ipg bucket lifetime
  std::vector<MaybeTask> step_reductions_;  // ZeRO-2 reduce-scatters issued after backward steps
  std::vector<std::vector<MaybeTask>> chunk_reductions_;  // per chunk: its buckets' data-parallel reductions
};

}  // namespace orrery
