#pragma once
// Shared state of the lowering: the derived sizes every op needs (tokens per rank, padded vocabulary, element
// sizes), read from the Job (sim/job/job.h), the placement of each communication group, and an Emitter that appends tasks to one stage's
// program at a (micro-batch, chunk, layer, phase) position, in modes that scopes set for a block and restore.

#include <map>
#include <utility>

#include "hardware/topology.h"
#include "models/param_count.h"
#include "sim/job/job.h"
#include "sim/lower/maybe_task.h"
#include "sim/lower/param_group.h"
#include "sim/task_vocabulary.h"

namespace orrery {

/// What the lowering reads: the Job's facts (sim/job/job.h) under the names the lowering uses, and the placement of
/// each communication group. It refers to the Job, which must outlive it.
struct LoweringContext {
  explicit LoweringContext(const Job& job);

  const Job& job;
  const Scenario& scenario;
  const ModelSpec& model;
  const ParallelPlan& plan;
  const TrainingSpec& training;
  const ClusterSpec& cluster;
  const PipelineLayout& layout;
  const RankLayout& ranks;
  const int microbatches;

  const int tp;
  const std::int64_t batch;         // micro-batch size b
  const std::int64_t seq;           // sequence length a rank processes (s / cp)
  const std::int64_t tokens;        // b s / cp: rows of every GEMM (Job::rank_tokens)
  const std::int64_t tokens_sp;     // rows of norms and residuals: tokens / tp with sequence parallelism
  const std::int64_t padded_vocab;  // Megatron-padded vocabulary
  const DType act_dtype;
  const DType gemm_dtype;
  const Fp8Recipe fp8_recipe;       // with gemm_dtype kFp8: how FP8 tensors are scaled
  const Bytes act_bytes;            // bytes per activation element
  const Bytes param_bytes;          // bytes per model parameter (as gathered and computed with)
  /// Bytes per parameter of the copy that stays resident (sharded under ZeRO-3): param_bytes, except FSDP2's
  /// fp32 sharded parameters beside its bf16 gathered ones (sim/lower/fsdp2.h).
  const Bytes resident_param_bytes;
  const Bytes grad_bytes;           // bytes per gradient element in the reduction buffer
  const Bytes optimizer_bytes;      // bytes per parameter of optimizer state, before ZeRO sharding
  const ModelSpec& padded_model;    // the model with the padded vocabulary (what ranks really hold)
  /// Packed documents: per micro-batch of the critical DP rank, AttentionShape::packed_fraction (empty: 1).
  std::vector<double> packed_fraction;

  /// AttentionShape::packed_fraction of micro-batch `microbatch`.
  double packed_fraction_of(int microbatch) const {
    return microbatch >= 0 && static_cast<std::size_t>(microbatch) < packed_fraction.size()
               ? packed_fraction[static_cast<std::size_t>(microbatch)]
               : 1.0;
  }

  /// Placement of the `kind` group of the first rank of pipeline stage `stage` (cached).
  const GroupPlacement& placement(GroupKind kind, int stage) const;
  /// Elements of `tensor` held by one rank.
  std::int64_t local_elements(const ParamTensor& tensor) const;
  /// Elements of the (padded, vocabulary-parallel) word embedding one rank holds: padded_vocab / tp x hidden, the
  /// size of every copy of it (a tied LM head, the one multi-token prediction reads on the last stage).
  std::int64_t word_embedding_elements() const { return padded_vocab / tp * model.hidden_size; }
  /// Ranks that share (and so shard under ZeRO) the data-parallel gradients: dp x cp.
  int data_parallel_ranks() const { return job.data_parallel_ranks(); }
  /// Ranks that share the routed-expert gradients: the expert-data-parallel size tp x cp x dp / (ep x etp).
  int expert_data_parallel_ranks() const { return job.expert_data_parallel_ranks(); }

 private:
  GroupPlacement place_group(GroupKind kind, int stage) const;
  mutable std::map<std::pair<GroupKind, int>, GroupPlacement> placements_;
  // layer_param_groups() by (layer, chunk): a layer is lowered once per micro-batch and pass, and naming its groups
  // compares parameter names (14% of lowering when done each time).
  mutable std::map<std::pair<int, int>, std::vector<ParamGroup>> layer_groups_;
  friend std::vector<ParamGroup> layer_param_groups(const LoweringContext& ctx, int layer, int chunk);
};

/// A parameter group as the data-parallel reduction sees it: local elements, the task that finishes its gradient
/// in the last backward pass, and the task that first reads it in the first forward pass.
struct ParamUse {
  int chunk = 0;
  int layer = -1;          // -1 for embedding and head parameters
  const char* name = "";   // the module that owns the parameters
  std::int64_t elements = 0;
  // Emitted tasks (record_param_use records no skipped one); -1 in the field the use is not about.
  TaskId grad_ready = -1;
  TaskId first_use = -1;
};

/// Which tasks of a backward pass the emitter keeps. Zero-bubble schedules (ZB-H1) split the backward into an
/// input-gradient step and a later weight-gradient step by emitting the same backward code twice: once without the
/// tasks of phase kBackwardWeight, once with only them. A dropped task is a skipped MaybeTask: a dependent waits for
/// what it would have waited for, and its memory effects and parameter records belong to the pass that emits it.
enum class WeightGradMode { kInline, kSkip, kOnly };

/// The coordinates an emitter gives its tasks: micro-batch, model chunk and layer (-1: none, as for the optimizer
/// step, or a chunk's embedding and head) and phase.
struct Position {
  int microbatch = -1;
  int chunk = -1;
  int layer = -1;
  Phase phase = Phase::kForward;
};

/// Appends tasks to one stage's program at its current position. Each task function returns a MaybeTask and
/// takes its dependencies as MaybeTasks: an emitted one is an edge, a skipped one stands for what it waited for
/// (sim/lower/maybe_task.h), and a default one for nothing. A task the weight-gradient mode drops is skipped by
/// every function; collective() and expert_dispatch() also skip a one-rank group's. The functions throw
/// std::logic_error only where the builder does (ProgramBuilder::add), which a MaybeTask dependency cannot cause.
///
/// Its position and modes change only through the scopes below (PositionScope, PhaseScope, WeightGradScope,
/// OverlapScope, ComputeStreamScope): each sets one for a block and restores it when the block ends, by an
/// exception too, so no block leaves a mode behind for the code after it. It starts at Position{}, kInline, not
/// overlapped, on kCompute.
class Emitter {
 public:
  Emitter(const LoweringContext& ctx, ProgramBuilder& builder, int stage);

  const Position& position() const { return position_; }
  Phase phase() const { return position_.phase; }
  int microbatch() const { return position_.microbatch; }
  int chunk() const { return position_.chunk; }
  int layer() const { return position_.layer; }
  WeightGradMode weight_grad_mode() const { return weight_grad_mode_; }
  /// True while tasks go to the twin streams (overlapped_twin): a backward pass merged with a forward pass.
  bool overlapped() const { return overlapped_; }
  /// The stream compute tasks go to (kCompute unless a block runs its kernels on a communication stream, as
  /// Megatron-Core's EP-overlap combine node does).
  Stream compute_stream() const { return compute_stream_; }
  int stage() const { return stage_; }

  MaybeTask gemm(const char* label, GemmShape shape, std::initializer_list<MaybeTask> deps = {});
  MaybeTask attention(const char* label, AttentionShape shape, std::initializer_list<MaybeTask> deps = {});
  MaybeTask elementwise(const char* label, Bytes read, Bytes written, std::initializer_list<MaybeTask> deps = {});
  /// A memory-bound task run by a given kernel family (ElementwiseKernel, models/ops.h), which prices it.
  MaybeTask elementwise(const char* label, ElementwiseKernel kernel, Bytes read, Bytes written,
                        std::initializer_list<MaybeTask> deps = {});
  /// A memory-bound task of a given shape: its traffic shared by `shape.kernels` launches (a Python loop of small
  /// kernels), each paying the GPU's launch gap and the host's issue cost.
  MaybeTask elementwise(const char* label, const ElementwiseShape& shape, std::initializer_list<MaybeTask> deps = {});
  /// TaskKind::kCommCopy on the compute stream: `kernels` separate memory-bound launches that a collective
  /// library runs around its transfer and that together read `read` and write `written` bytes (e.g. the per-rank
  /// chunk copies of a list-based torch.distributed collective); each pays the GPU's launch gap, and its host issue
  /// costs HostIssueCosts::library (the library's C++ loop).
  MaybeTask comm_copies(const char* label, Bytes read, Bytes written, std::int64_t kernels,
                        std::initializer_list<MaybeTask> deps = {});
  /// The same on another stream (FSDP2's all-gather copy-in runs on its copy-in stream, sim/lower/fsdp2.h).
  MaybeTask comm_copies_on(Stream stream, const char* label, Bytes read, Bytes written, std::int64_t kernels,
                           std::initializer_list<MaybeTask> deps = {});
  MaybeTask optimizer(const char* label, Bytes read, Bytes written, std::initializer_list<MaybeTask> deps = {},
                      ElementwiseKernel kernel = ElementwiseKernel::kGeneric);
  /// The GPU waiting for the host after a device-to-host synchronisation that follows `deps`.
  MaybeTask host_sync(const char* label, std::initializer_list<MaybeTask> deps = {});
  /// The same on another stream: a copy on a side stream that the host waits for by its event, which holds the
  /// host but not the compute stream (Megatron-Core's token counts on cuda_dtoh_stream).
  MaybeTask host_sync_on(Stream stream, const char* label, std::initializer_list<MaybeTask> deps = {});
  /// A collective of `group` on `stream`; `bytes` as nccl-tests sizes it (collective_cost.h). Skipped (adds
  /// nothing) when the group has one rank.
  MaybeTask collective(const char* label, Stream stream, GroupKind group, CollectiveKind kind, Bytes bytes,
                       std::initializer_list<MaybeTask> deps = {});
  /// The flex dispatcher's dispatch or combine over the EP group on the EP stream: per rank, `nvlink` bytes
  /// forwarded inside NVLink domains and `network` bytes sent across them (CollectiveKind::kExpertDispatch).
  /// Skipped (adds nothing) when the EP group has one rank.
  MaybeTask expert_dispatch(const char* label, Bytes nvlink, Bytes network, std::initializer_list<MaybeTask> deps = {});
  /// A PCIe copy or host-side work on `stream` (kDeviceToHost or kHostToDevice).
  MaybeTask host_op(const char* label, Stream stream, HostOpShape shape, std::initializer_list<MaybeTask> deps = {});
  /// One side of a point-to-point transfer (the p2p group kinds pair it with the peer's other side).
  MaybeTask p2p(const char* label, Stream stream, GroupKind group, Bytes bytes,
                std::initializer_list<MaybeTask> deps = {});

  /// `bytes` of `kind` allocated when `task` starts / freed when it ends. Nothing for a skipped task: the
  /// weight-gradient mode's other pass emits it with its effects, and a one-rank collective moves no data.
  void allocate(const MaybeTask& task, MemoryKind kind, Bytes bytes) {
    if (task.emitted()) builder_.alloc_at_start(task.task(), kind, bytes);
  }
  void deallocate(const MaybeTask& task, MemoryKind kind, Bytes bytes) {
    if (task.emitted()) builder_.free_at_end(task.task(), kind, bytes);
  }
  /// Activations saved for the backward pass, and their release.
  void save(const MaybeTask& task, Bytes bytes) { allocate(task, MemoryKind::kActivations, bytes); }
  void release(const MaybeTask& task, Bytes bytes) { deallocate(task, MemoryKind::kActivations, bytes); }
  /// Task `after` (emitted) also waits for `before`. Throws std::logic_error if `after` is not a task of the
  /// program, or not later than what `before` stands for.
  void depend(TaskId after, const MaybeTask& before) {
    for (TaskId t : before.waits()) builder_.depend(after, t);
  }
  /// The same for a task that may have been skipped: a skipped `after` waits for `before` from now on, so its later
  /// dependents do (MaybeTask::also_wait_for).
  void depend(MaybeTask& after, const MaybeTask& before) {
    if (after.emitted()) {
      depend(after.task(), before);
    } else {
      after.also_wait_for(before);
    }
  }
  /// The last task on the compute stream the emitter currently writes to (none before the first).
  MaybeTask last_compute() const {
    return last_on(overlapped_ ? overlapped_twin(Stream::kCompute) : Stream::kCompute);
  }
  /// The last task on `stream` (none before the first).
  MaybeTask last_on(Stream stream) const {
    const TaskId t = builder_.last_on(stream);
    return t >= 0 ? MaybeTask(t) : MaybeTask();
  }
  const LoweringContext& ctx() const { return ctx_; }
  ProgramBuilder& builder() { return builder_; }

 private:
  Task base(TaskKind kind, const char* label, Stream stream) const;
  /// Adds `task` after what `deps` stand for.
  MaybeTask add(const Task& task, const Op& op, std::initializer_list<MaybeTask> deps);
  /// A skipped task that would have waited for `deps`.
  MaybeTask skip(std::initializer_list<MaybeTask> deps);
  /// Gathers what `deps` stand for into waits_, once each.
  void gather(std::initializer_list<MaybeTask> deps);
  /// The stream a task meant for `stream` goes to: its twin while overlapped.
  Stream stream_for(Stream stream) const {
    const Stream s = stream == Stream::kCompute ? compute_stream_ : stream;
    return overlapped_ ? overlapped_twin(s) : s;
  }
  /// True when the weight-gradient mode drops a task of the current phase.
  bool dropped() const {
    return (weight_grad_mode_ == WeightGradMode::kSkip && position_.phase == Phase::kBackwardWeight) ||
           (weight_grad_mode_ == WeightGradMode::kOnly && position_.phase != Phase::kBackwardWeight);
  }
  friend class PositionScope;
  friend class PhaseScope;
  friend class WeightGradScope;
  friend class OverlapScope;
  friend class ComputeStreamScope;

  const LoweringContext& ctx_;
  ProgramBuilder& builder_;
  int stage_;
  Position position_;
  WeightGradMode weight_grad_mode_ = WeightGradMode::kInline;
  bool overlapped_ = false;
  Stream compute_stream_ = Stream::kCompute;
  std::vector<TaskId> waits_;  // scratch of gather(), kept to spare an allocation per task
};

/// Holds one of an emitter's modes at a value for the life of the scope, and puts the previous value back when it
/// ends (by an exception too). Scopes nest: an inner one restores what the outer one set.
template <typename T>
class EmitterModeScope {
 public:
  EmitterModeScope(const EmitterModeScope&) = delete;
  EmitterModeScope& operator=(const EmitterModeScope&) = delete;

 protected:
  EmitterModeScope(T& mode, T value) : mode_(mode), saved_(mode) { mode_ = value; }
  ~EmitterModeScope() { mode_ = saved_; }

 private:
  T& mode_;
  T saved_;
};

/// Emits a block's tasks at `position` (a unit of a step, a receive, the optimizer step).
class PositionScope : EmitterModeScope<Position> {
 public:
  PositionScope(Emitter& emit, Position position) : EmitterModeScope(emit.position_, position) {}
};

/// Changes only the phase for a block (a weight gradient, a recompute), at the same micro-batch, chunk and layer.
class PhaseScope : EmitterModeScope<Phase> {
 public:
  PhaseScope(Emitter& emit, Phase phase) : EmitterModeScope(emit.position_.phase, phase) {}
};

/// Keeps or drops a block's weight-gradient tasks (a zero-bubble schedule's B and W steps, WeightGradMode).
class WeightGradScope : EmitterModeScope<WeightGradMode> {
 public:
  WeightGradScope(Emitter& emit, WeightGradMode mode) : EmitterModeScope(emit.weight_grad_mode_, mode) {}
};

/// Sends a block's tasks to the twin streams while `overlapped` (a backward merged with a forward pass).
class OverlapScope : EmitterModeScope<bool> {
 public:
  OverlapScope(Emitter& emit, bool overlapped) : EmitterModeScope(emit.overlapped_, overlapped) {}
};

/// Sends a block's compute tasks to `stream`.
class ComputeStreamScope : EmitterModeScope<Stream> {
 public:
  ComputeStreamScope(Emitter& emit, Stream stream) : EmitterModeScope(emit.compute_stream_, stream) {}
};

}  // namespace orrery
