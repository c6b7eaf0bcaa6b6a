#include "sim/workload_graph.h"

#include <boost/graph/topological_sort.hpp>

#include <algorithm>
#include <cassert>
#include <iterator>
#include <stdexcept>

namespace orrery {

std::size_t WorkloadGraph::num_tasks() const {
  std::size_t n = 0;
  for (const auto& p : programs) n += p.tasks.size();
  return n;
}

const char* to_string(TaskKind kind) {
  switch (kind) {
    case TaskKind::kGemm: return "gemm";
    case TaskKind::kAttention: return "attention";
    case TaskKind::kElementwise: return "elementwise";
    case TaskKind::kOptimizer: return "optimizer";
    case TaskKind::kCollective: return "collective";
    case TaskKind::kSendRecv: return "send_recv";
  }
  return "?";
}

const char* to_string(Phase phase) {
  switch (phase) {
    case Phase::kForward: return "forward";
    case Phase::kBackwardInput: return "backward_input";
    case Phase::kBackwardWeight: return "backward_weight";
    case Phase::kRecompute: return "recompute";
    case Phase::kOptimizer: return "optimizer";
  }
  return "?";
}

const char* to_string(Stream stream) {
  switch (stream) {
    case Stream::kCompute: return "compute";
    case Stream::kTp: return "tp";
    case Stream::kCp: return "cp";
    case Stream::kEp: return "ep";
    case Stream::kDp: return "dp";
    case Stream::kPpSendNext: return "pp_send_next";
    case Stream::kPpRecvPrev: return "pp_recv_prev";
    case Stream::kPpSendPrev: return "pp_send_prev";
    case Stream::kPpRecvNext: return "pp_recv_next";
  }
  return "?";
}

const char* to_string(GroupKind kind) {
  switch (kind) {
    case GroupKind::kNone: return "none";
    case GroupKind::kTp: return "tp";
    case GroupKind::kCp: return "cp";
    case GroupKind::kEp: return "ep";
    case GroupKind::kDp: return "dp";
    case GroupKind::kEmbedding: return "embedding";
    case GroupKind::kModelParallel: return "model_parallel";
    case GroupKind::kPpForwardSend: return "pp_forward_send";
    case GroupKind::kPpForwardRecv: return "pp_forward_recv";
    case GroupKind::kPpBackwardSend: return "pp_backward_send";
    case GroupKind::kPpBackwardRecv: return "pp_backward_recv";
  }
  return "?";
}

const char* to_string(MemoryKind kind) {
  switch (kind) {
    case MemoryKind::kWeights: return "weights";
    case MemoryKind::kGradients: return "gradients";
    case MemoryKind::kOptimizer: return "optimizer";
    case MemoryKind::kActivations: return "activations";
    case MemoryKind::kOther: return "other";
  }
  return "?";
}

ProgramBuilder::ProgramBuilder(int stage) : stage_(stage) { last_on_stream_.fill(-1); }

ProgramBuilder::TaskId ProgramBuilder::add(Task task, std::initializer_list<TaskId> deps) {
  const auto id = static_cast<TaskId>(tasks_.size());
  const auto stream = static_cast<std::size_t>(task.stream);
  if (last_on_stream_[stream] >= 0) edges_.emplace_back(last_on_stream_[stream], id);
  for (TaskId d : deps) {
    if (d >= 0 && d != last_on_stream_[stream]) edges_.emplace_back(d, id);
  }
  last_on_stream_[stream] = id;
  tasks_.push_back(task);
  return id;
}

void ProgramBuilder::depend(TaskId after, TaskId before) {
  assert(before < after);
  if (before >= 0) edges_.emplace_back(before, after);
}

void ProgramBuilder::alloc_at_start(TaskId id, MemoryKind kind, Bytes bytes) {
  if (bytes == 0) return;
  MemoryEffect& e = tasks_[static_cast<std::size_t>(id)].at_start;
  assert(e.bytes == 0 || e.kind == kind);
  e.kind = kind;
  e.bytes += bytes;
}

void ProgramBuilder::free_at_end(TaskId id, MemoryKind kind, Bytes bytes) {
  if (bytes == 0) return;
  MemoryEffect& e = tasks_[static_cast<std::size_t>(id)].at_end;
  assert(e.bytes == 0 || e.kind == kind);
  e.kind = kind;
  e.bytes -= bytes;
}

Program ProgramBuilder::finish() {
  Program p;
  p.stage = stage_;
  std::sort(edges_.begin(), edges_.end());
  edges_.erase(std::unique(edges_.begin(), edges_.end()), edges_.end());
  p.successors = TaskGraph(boost::edges_are_sorted, edges_.begin(), edges_.end(), tasks_.size());
  p.in_degree.assign(tasks_.size(), 0);
  for (const auto& [from, to] : edges_) {
    if (p.in_degree[to] == UINT16_MAX) throw std::logic_error("workload graph: task in-degree overflow");
    ++p.in_degree[to];
  }
  // A cycle would deadlock the engine; it can only come from a lowering bug.
  std::vector<std::size_t> order;
  boost::topological_sort(p.successors, std::back_inserter(order));
  std::array<std::int32_t, kNumGroupKinds> next_seq{};
  for (Task& t : tasks_) {
    if (t.is_rendezvous()) t.group_seq = next_seq[static_cast<std::size_t>(t.group)]++;
  }
  p.tasks = std::move(tasks_);
  p.static_memory = static_memory_;
  return p;
}

}  // namespace orrery
