#pragma once
// The workload graph (ARCHITECTURE.md "The workload graph and the engine"): one program per pipeline stage, each a DAG
// of kernel-level tasks of one representative rank of that stage. Edges are data dependencies and stream order
// and stay inside a program; tasks of different ranks meet only at rendezvous (collectives, and send/recv pairs),
// which the engine matches by group and issue order, as NCCL matches calls on a communicator. The graph is
// immutable after lowering (ARCHITECTURE.md rule 3); the engine keeps all run state.

#include <boost/graph/compressed_sparse_row_graph.hpp>

#include <array>
#include <cstdint>
#include <span>
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

/// A stream of a rank as the graph declares it (WorkloadGraph::streams; Task::stream indexes the table). Tasks on
/// one stream run in issue order, one at a time (CUDA streams are FIFO: ProgramBuilder adds the edges). Streams that
/// share a lane run one task at a time across them, as one executor: the lowering's merged passes put a backward pass
/// on side 1 of the compute lane while a forward pass runs on side 0 (sim/engine/engine.h says how a lane picks).
struct StreamInfo {
  std::string name;         // in traces and timelines: "compute", "tp", "pp_send_next"
  std::int8_t lane = -1;    // the lane it shares with other streams; -1: it is its own executor
  std::uint8_t side = 0;    // its side of the lane (0 or 1)
  bool compute = false;     // runs on the GPU's SMs: an Instance's compute_slowdown stretches its tasks
};

/// A family of rendezvous groups as the graph declares it (WorkloadGraph::group_kinds; Task::group indexes it, 0
/// means no rendezvous). Instantiation numbers the concrete groups of each kind.
struct GroupKindInfo {
  std::string name;           // "tp", "pp_forward_send"
  std::string category;       // the report's category of its communication: "tp", "cp", "ep", "pp" or "dp"
  bool spans_stages = false;  // its members sit on different pipeline stages (waiting for them is bubble)
  std::int8_t pair = -1;      // a point-to-point kind: the kind of the other end (a send's receive), else -1
  bool sends = false;         // a point-to-point kind: the sending end
};

/// One kind of resource demand (WorkloadGraph::demands; bit k of Program::demands[t] is demands[k]): the resource
/// model that serves it, by name (sim/engine/resource_model.h lists them), and the task's role in it.
struct DemandInfo {
  std::string model;  // "sm_contention", "port_fair_share"
  std::string role;   // the model's own role names: "compute", "contender"; "send", "receive"
};
inline constexpr int kMaxDemands = 8;  // bits of one task's demand mask

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
  std::uint8_t stream = 0;       // index into WorkloadGraph::streams
  std::uint8_t group = 0;        // index into WorkloadGraph::group_kinds; 0: no rendezvous
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
  bool is_rendezvous() const { return group != 0; }
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
  /// The tasks in the order the host issues them, where that differs from task order (the lowering's merged
  /// forward-and-backward layers: model_chunk_schedule_plan.py interleaves their sub-modules); empty: task order.
  /// A permutation of 0..tasks.size()-1; the engine's host timeline walks it.
  std::vector<std::int32_t> issue_order;
  /// Per task, the resources it demands: bit k set means WorkloadGraph::demands[k] (empty: none at all).
  std::vector<std::uint8_t> demands;
};

/// The programs and the tables their tasks index. The engine checks every index against the tables before it runs
/// (std::logic_error names the first that is out of range).
struct WorkloadGraph {
  std::vector<Program> programs;  // index = pipeline stage
  std::vector<StreamInfo> streams;
  std::vector<GroupKindInfo> group_kinds;  // [0] stands for "no rendezvous"
  std::vector<DemandInfo> demands;
  std::size_t num_tasks() const;
};

/// A task's name in timelines and traces: "L3 q_proj gemm mb0" (layer, label, kind or collective, micro-batch).
std::string task_name(const Program& program, const Task& task);

const char* to_string(TaskKind kind);
const char* to_string(Phase phase);
const char* to_string(MemoryKind kind);

/// Declares the resources a task demands, from the task and its operation (the bits of Program::demands).
using DemandRule = std::uint8_t (*)(const Task& task, const Op& op);

/// Builds one Program: adds tasks in issue order with their dependencies; the edge from the previous task on the
/// same stream is added automatically (CUDA streams are FIFO).
class ProgramBuilder {
 public:
  /// `rule` gives each added task its resource demands (nullptr: none).
  explicit ProgramBuilder(int stage, DemandRule rule = nullptr);
  using TaskId = std::int32_t;

  /// Adds `task` doing `op` (interned) after `deps` and the previous task on its stream. Every dependency must be
  /// a task already added to this program: a negative or later id is a lowering bug that would otherwise drop an
  /// edge silently, so add() throws std::logic_error naming the task's label and the id (and adds nothing).
  TaskId add(Task task, const Op& op, std::span<const TaskId> deps);
  TaskId add(Task task, const Op& op, std::initializer_list<TaskId> deps = {}) {
    return add(task, op, std::span<const TaskId>(deps.begin(), deps.size()));
  }
  /// `after` starts only when `before` has ended. Throws std::logic_error, naming `after`'s label and both ids,
  /// unless `after` is an added task and `before` an earlier one (a later one would make a cycle).
  void depend(TaskId after, TaskId before);
  /// `bytes` of `kind` allocated when `task` starts / freed when it ends. Throws std::logic_error if `task` is not
  /// an added task.
  void alloc_at_start(TaskId task, MemoryKind kind, Bytes bytes);
  void free_at_end(TaskId task, MemoryKind kind, Bytes bytes);
  /// The last task added on `stream`, or -1.
  TaskId last_on(std::uint8_t stream) const { return last_on_stream_[stream]; }
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
  std::array<TaskId, 256> last_on_stream_;  // by Task::stream
  DemandRule rule_ = nullptr;
  std::vector<std::uint8_t> demands_;
  std::array<Bytes, kNumMemoryKinds> static_memory_{};
  std::vector<TaskId> issue_order_;  // the host's order of tasks 0..issue_order_.size()-1; empty: task order
  std::vector<std::pair<TaskId, TaskId>> reordered_;  // the ranges (first, last) issue_in_order() reordered

  void keep_forward_issue_order();
  /// Throws std::logic_error unless `id` is one of the tasks added so far; `what` names the use.
  void check_task(TaskId id, const char* what) const;
};

}  // namespace orrery
