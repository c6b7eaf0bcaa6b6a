#pragma once
// The workload graph (ARCHITECTURE.md "The workload graph and the engine"): one program per pipeline stage, each a DAG
// of kernel-level tasks of one representative rank of that stage. Edges are data dependencies and stream order
// and stay inside a program; tasks of different ranks meet only at rendezvous (collectives, and send/recv pairs),
// which the engine matches by group and issue order, as NCCL matches calls on a communicator. The graph is
// immutable after lowering (ARCHITECTURE.md rule 3); the engine keeps all run state.

#include <boost/graph/compressed_sparse_row_graph.hpp>

#include <array>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <variant>
#include <vector>

#include "hardware/collective_cost.h"
#include "models/ops.h"
#include "models/units.h"

namespace orrery {

/// kCommCopy: a memory-bound kernel a collective library runs on the compute path around its transfer (a
/// list-based torch.distributed collective's per-rank chunk copies, its zero-filled output); the report counts it
/// as that communication's time, not as compute.
enum class TaskKind : std::uint8_t {
  kGemm, kAttention, kElementwise, kOptimizer, kCollective, kSendRecv, kHostSync, kHostOp, kCommCopy
};
inline constexpr TaskKind kTaskKinds[] = {TaskKind::kGemm,       TaskKind::kAttention, TaskKind::kElementwise,
                                          TaskKind::kOptimizer,  TaskKind::kCollective, TaskKind::kSendRecv,
                                          TaskKind::kHostSync,   TaskKind::kHostOp,    TaskKind::kCommCopy};

enum class Phase : std::uint8_t { kForward, kBackwardInput, kBackwardWeight, kRecompute, kOptimizer };

/// Streams of one rank (ARCHITECTURE.md "The workload graph and the engine"): compute, and one per kind of
/// communication so that overlap is modelled. Point-to-point traffic has a stream per direction and peer, as Megatron's
/// batched isend/irecv lets each progress. The *B streams carry a backward pass that runs merged with a forward pass of
/// another micro-batch (Megatron-Core's overlap_moe_expert_parallel_comm). A stream and its twin form one lane that the
/// engine runs one task at a time, alternating between the passes when both have work (sim/engine/engine.h): the one
/// GPU, and the one communication stream Megatron-Core issues both passes' collectives on. So one pass's all-to-alls
/// hide behind the other's compute.
enum class Stream : std::uint8_t {
  kCompute,
  kTp,
  kCp,
  kEp,
  kDp,        // data-parallel parameter all-gathers
  kDpReduce,  // data-parallel gradient all-reduces / reduce-scatters
  kPpSendNext,
  kPpRecvPrev,
  kPpSendPrev,
  kPpRecvNext,
  // DualPipe's reverse direction (chunk 1): activations towards the previous rank, gradients towards the next.
  kPpReverseSendPrev,
  kPpReverseRecvNext,
  kPpReverseSendNext,
  kPpReverseRecvPrev,
  kDeviceToHost,  // copy engine towards the host, and the host work that follows it (CPU offload)
  kHostToDevice,  // copy engine towards the GPU
  // FP8 amax all-reduces: Megatron-Core's amax reduction group is a communicator of its own (parallel_state
  // _AMAX_REDUCTION_GROUP), so they do not queue behind the data-parallel gathers and reductions.
  kAmax,
  kComputeB,
  kTpB,
  kCpB,
  kEpB,
};
inline constexpr int kNumStreams = 21;

/// The streams that have a twin, in lane order; kTwinStreams[i]'s twin is Stream(kComputeB + i).
inline constexpr Stream kTwinStreams[] = {Stream::kCompute, Stream::kTp, Stream::kCp, Stream::kEp};
inline constexpr int kNumLanes = 4;
/// The stream a merged backward pass uses in place of `stream` (the streams without a twin map to themselves).
Stream overlapped_twin(Stream stream);
/// The lane of `stream`: its index in kTwinStreams, or that of the stream it is the twin of; -1 for the others.
int twin_lane(Stream stream);
/// True for the twin streams (kComputeB, kTpB, kCpB, kEpB).
inline bool is_twin(Stream stream) { return stream >= Stream::kComputeB; }

/// The communication group a rendezvous task belongs to. The p2p kinds pair a sender with its receiver: a
/// kPpForwardSend task of stage s and a kPpForwardRecv task of stage s+1 meet in the same group. The kPpReverse
/// kinds carry DualPipe's reverse direction, whose forward runs from stage s to s-1; they have kinds of their own so
/// that each direction's transfers pair in micro-batch order.
enum class GroupKind : std::uint8_t {
  kNone,
  kTp,
  kCp,
  kEp,             // expert parallelism: the ranks that exchange tokens for their experts
  kDp,             // data-parallel gradients and parameters (dp x cp ranks)
  kEmbedding,      // first and last pipeline stage, for tied embeddings
  kModelParallel,  // all tp x pp ranks of one model replica (gradient norm)
  kAmax,           // all tp x cp x dp ranks of one pipeline stage (FP8 amax reduction, Megatron's amax group)
  kExpertTp,       // expert tensor parallelism (ETP) inside an expert-parallel rank
  kExpertDp,       // ranks holding the same expert shard: their gradients are reduced together
  kCpA2a,          // hierarchical CP: the all-to-all group (consecutive CP ranks)
  kCpP2p,          // hierarchical CP: the ring across all-to-all groups
  // DualPipe: ranks s and pp-1-s, which hold copies of the same two model stages, summing the gradients of the
  // one in the first (Low) or second (High) half of the model: two kinds, so each pairs on its own.
  kPipelineMirrorLow,
  kPipelineMirrorHigh,
  // The point-to-point kinds come last, each send kind followed by its receive kind (instances.cpp pairs them).
  kPpForwardSend,
  kPpForwardRecv,
  kPpBackwardSend,
  kPpBackwardRecv,
  kPpReverseForwardSend,   // me -> prev
  kPpReverseForwardRecv,   // next -> me
  kPpReverseBackwardSend,  // me -> next
  kPpReverseBackwardRecv,  // prev -> me
};
inline constexpr int kNumGroupKinds = 22;
/// The point-to-point kinds (pipeline transfers), which pair one sender with one receiver.
inline bool is_pipeline_transfer(GroupKind g) { return g >= GroupKind::kPpForwardSend; }
/// The sending side of a point-to-point pair: the first of each send/receive pair of kinds.
inline bool is_pipeline_send(GroupKind g) {
  return is_pipeline_transfer(g) && (static_cast<int>(g) - static_cast<int>(GroupKind::kPpForwardSend)) % 2 == 0;
}

enum class MemoryKind : std::uint8_t { kWeights, kGradients, kOptimizer, kActivations, kOther };
inline constexpr int kNumMemoryKinds = 5;

/// Bytes a task allocates (positive) or frees (negative) at its start or its end.
struct MemoryEffect {
  MemoryKind kind = MemoryKind::kActivations;
  Bytes bytes = 0;
};

/// A task's operation. Programs keep each distinct Op once (micro-batches repeat the same shapes), so tasks
/// stay small and each Op is priced once.
using Op = std::variant<GemmShape, AttentionShape, ElementwiseShape, CollectiveOp, HostSyncShape, HostOpShape>;

/// Hash of an Op's fields, for interning.
std::size_t hash_op(const Op& op);

/// One task (48 bytes: programs hold millions of them for long pipelines).
struct Task {
  TaskKind kind = TaskKind::kElementwise;
  Phase phase = Phase::kForward;
  Stream stream = Stream::kCompute;
  GroupKind group = GroupKind::kNone;
  MemoryKind start_kind = MemoryKind::kActivations;
  MemoryKind end_kind = MemoryKind::kActivations;
  std::int16_t chunk = -1;       // virtual-stage index on this rank (interleaving), -1 for none
  std::int32_t layer = -1;       // global transformer layer, -1 for embedding, head, optimizer
  std::int32_t microbatch = -1;  // -1 for per-iteration work
  std::int32_t op = -1;          // index into Program::ops
  std::int32_t group_seq = -1;   // issue order among this program's tasks of the same group kind
  const char* label = "";        // short op name ("qkv", "attention", "grad_reduce"), a string literal
  Bytes start_bytes = 0;         // allocated (+) or freed (-) when the task starts
  Bytes end_bytes = 0;           // allocated (+) or freed (-) when the task ends

  MemoryEffect at_start() const { return {start_kind, start_bytes}; }
  MemoryEffect at_end() const { return {end_kind, end_bytes}; }
  bool is_rendezvous() const { return group != GroupKind::kNone; }
  bool is_compute() const { return stream == Stream::kCompute || stream == Stream::kComputeB; }
  /// Non-compute work that takes SMs from compute (NCCL kernels); PCIe copies run on copy engines and a host's
  /// wait for a side-stream copy takes none.
  bool contends_for_sms() const { return !is_compute() && kind != TaskKind::kHostOp && kind != TaskKind::kHostSync; }
};

/// Successor lists in compressed-sparse-row form, with 32-bit task ids (a program stays below 2^32 tasks).
using TaskGraph = boost::compressed_sparse_row_graph<boost::directedS, boost::no_property, boost::no_property,
                                                     boost::no_property, std::uint32_t, std::uint32_t>;

/// The rank program of one pipeline stage.
struct Program {
  int stage = 0;
  std::vector<Task> tasks;
  std::vector<Op> ops;                      // distinct operations; Task::op indexes here
  TaskGraph successors;                     // edge u -> v: v may start only after u ends
  std::vector<std::uint16_t> in_degree;     // per task
  std::array<Bytes, kNumMemoryKinds> static_memory{};  // resident from the start: weights, gradients, optimizer, other
  /// The tasks in the order the host issues them, where that differs from task order (Megatron-Core's merged
  /// forward-and-backward layers: model_chunk_schedule_plan.py interleaves their sub-modules); empty: task order.
  /// A permutation of 0..tasks.size()-1; the engine's host timeline walks it.
  std::vector<std::int32_t> issue_order;
};

struct WorkloadGraph {
  std::vector<Program> programs;  // index = pipeline stage
  std::size_t num_tasks() const;
};

/// A task's name in timelines and traces: "L3 q_proj gemm mb0" (layer, label, kind or collective, micro-batch).
std::string task_name(const Program& program, const Task& task);

const char* to_string(TaskKind kind);
const char* to_string(Phase phase);
const char* to_string(Stream stream);
const char* to_string(GroupKind kind);
const char* to_string(MemoryKind kind);

/// Builds one Program: adds tasks in issue order with their dependencies; the edge from the previous task on the
/// same stream is added automatically (CUDA streams are FIFO).
class ProgramBuilder {
 public:
  explicit ProgramBuilder(int stage);
  using TaskId = std::int32_t;

  /// Adds `task` doing `op` (interned) after `deps` (ids < 0 are ignored) and the previous task on its stream.
  TaskId add(Task task, const Op& op, std::initializer_list<TaskId> deps = {});
  void depend(TaskId after, TaskId before);  // `after` starts only when `before` has ended
  void alloc_at_start(TaskId task, MemoryKind kind, Bytes bytes);
  void free_at_end(TaskId task, MemoryKind kind, Bytes bytes);
  /// The last task added on `stream`, or -1.
  TaskId last_on(Stream stream) const { return last_on_stream_[static_cast<std::size_t>(stream)]; }
  TaskId last() const { return static_cast<TaskId>(tasks_.size()) - 1; }
  const Task& task(TaskId id) const { return tasks_[static_cast<std::size_t>(id)]; }
  const Op& op_of(TaskId id) const { return ops_[static_cast<std::size_t>(task(id).op)]; }
  void set_static_memory(MemoryKind kind, Bytes bytes) { static_memory_[static_cast<std::size_t>(kind)] = bytes; }
  void add_static_memory(MemoryKind kind, Bytes bytes) { static_memory_[static_cast<std::size_t>(kind)] += bytes; }

  /// The host issues tasks first..last() in `order` (a permutation of them) instead of task order. finish() keeps
  /// the order only if every dependency among those tasks points forward in it (a host that issued a task before
  /// one it waits for could deadlock a stream), else the range keeps task order. Later calls must start after the
  /// previous range. Throws std::logic_error if `order` is not such a permutation.
  void issue_in_order(TaskId first, const std::vector<TaskId>& order);

  /// Capacity hint for the number of tasks.
  void reserve(std::size_t tasks) { tasks_.reserve(tasks); }

  /// Freezes the program: CSR successor graph, in-degrees, rendezvous issue order. Every edge points from an
  /// earlier task to a later one (add() and depend() enforce it), so the program is acyclic by construction.
  Program finish();

 private:
  int stage_;
  std::vector<Task> tasks_;
  std::vector<Op> ops_;
  std::unordered_multimap<std::size_t, std::int32_t> op_index_;  // hash -> index into ops_
  std::vector<std::pair<std::uint32_t, std::uint32_t>> edges_;
  std::array<TaskId, kNumStreams> last_on_stream_;
  std::array<Bytes, kNumMemoryKinds> static_memory_{};
  std::vector<TaskId> issue_order_;  // the host's order of tasks 0..issue_order_.size()-1; empty: task order
  std::vector<std::pair<TaskId, TaskId>> reordered_;  // the ranges (first, last) issue_in_order() reordered

  void keep_forward_issue_order();
};

}  // namespace orrery
