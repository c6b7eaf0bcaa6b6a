#include "sim/engine/workload_graph.h"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cassert>
#include <iterator>
#include <stdexcept>

namespace orrery {

std::size_t WorkloadGraph::num_tasks() const {
  std::size_t n = 0;
  for (const auto& p : programs) n += p.tasks.size();
  return n;
}

std::string task_name(const Program& program, const Task& t) {
  std::string kind;
  if (const auto* c = std::get_if<CollectiveOp>(&program.ops[static_cast<std::size_t>(t.op)])) {
    kind = to_string(c->kind);
  } else {
    kind = to_string(t.kind);
  }
  std::string name = t.layer >= 0 ? fmt::format("L{} {} {}", t.layer, t.label, kind) : fmt::format("{} {}", t.label, kind);
  if (t.microbatch >= 0) name += fmt::format(" mb{}", t.microbatch);
  return name;
}

const char* to_string(TaskKind kind) {
  switch (kind) {
    case TaskKind::kGemm: return "gemm";
    case TaskKind::kAttention: return "attention";
    case TaskKind::kElementwise: return "elementwise";
    case TaskKind::kOptimizer: return "optimizer";
    case TaskKind::kCollective: return "collective";
    case TaskKind::kSendRecv: return "send_recv";
    case TaskKind::kHostSync: return "host_sync";
    case TaskKind::kHostOp: return "host_op";
    case TaskKind::kCommCopy: return "comm_copy";
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

ProgramBuilder::ProgramBuilder(int stage, DemandRule rule) : stage_(stage), rule_(rule) { last_on_stream_.fill(-1); }

namespace {

void mix(std::size_t& seed, std::int64_t value) {
  seed ^= std::hash<std::int64_t>{}(value) + 0x9e3779b97f4a7c15ULL + (seed << 6) + (seed >> 2);
}

}  // namespace

std::size_t hash_op(const Op& op) {
  std::size_t h = op.index();
  if (const auto* g = std::get_if<GemmShape>(&op)) {
    for (std::int64_t v : {g->m, g->n, g->k, g->batch, std::int64_t(g->dtype), std::int64_t(g->fp8_scaling)}) mix(h, v);
  } else if (const auto* a = std::get_if<AttentionShape>(&op)) {
    for (std::int64_t v : {a->batch, a->heads, a->kv_heads, a->q_len, a->kv_len, a->head_dim_qk, a->head_dim_v,
                           std::int64_t(a->causal), a->window, std::int64_t(a->half_block), std::int64_t(a->backward),
                           std::int64_t(a->dtype)}) {
      mix(h, v);
    }
    mix(h, std::bit_cast<std::int64_t>(a->packed_fraction));
  } else if (const auto* e = std::get_if<ElementwiseShape>(&op)) {
    mix(h, e->bytes_read);
    mix(h, e->bytes_written);
    mix(h, e->kernels);
  } else if (std::holds_alternative<HostSyncShape>(op)) {
    mix(h, 7);
  } else if (const auto* o = std::get_if<HostOpShape>(&op)) {
    mix(h, std::int64_t(o->kind));
    mix(h, o->bytes);
  } else if (const auto* c = std::get_if<CollectiveOp>(&op)) {
    for (std::int64_t v : {std::int64_t(c->kind), c->bytes, std::int64_t(c->placement.size),
                           std::int64_t(c->placement.domains), std::int64_t(c->placement.tier)}) {
      mix(h, v);
    }
  }
  return h;
}

void ProgramBuilder::check_task(TaskId id, const char* what) const {
  if (id < 0 || id > last()) {
    throw std::logic_error(fmt::format("workload graph: {} task {}, which is not a task of this program (it has {})",
                                       what, id, tasks_.size()));
  }
}

ProgramBuilder::TaskId ProgramBuilder::add(Task task, const Op& op, std::span<const TaskId> deps) {
  const auto id = static_cast<TaskId>(tasks_.size());
  // Checked before anything changes, so a refused task leaves the builder as it was.
  for (TaskId d : deps) {
    if (d < 0 || d >= id) {
      throw std::logic_error(fmt::format("workload graph: task '{}' (id {}) depends on id {}, which is not an earlier "
                                         "task of this program",
                                         task.label, id, d));
    }
  }
  const std::size_t h = hash_op(op);
  task.op = -1;
  for (auto [it, end] = op_index_.equal_range(h); it != end; ++it) {
    if (ops_[static_cast<std::size_t>(it->second)] == op) task.op = it->second;
  }
  if (task.op < 0) {
    task.op = static_cast<std::int32_t>(ops_.size());
    ops_.push_back(op);
    op_index_.emplace(h, task.op);
  }
  const auto stream = static_cast<std::size_t>(task.stream);
  if (last_on_stream_[stream] >= 0) edges_.emplace_back(last_on_stream_[stream], id);
  for (TaskId d : deps) {
    if (d != last_on_stream_[stream]) edges_.emplace_back(d, id);
  }
  if (tasks_.size() >= UINT32_MAX) throw std::logic_error("workload graph: too many tasks in one program");
  last_on_stream_[stream] = id;
  if (rule_) demands_.push_back(rule_(task, op));
  tasks_.push_back(task);
  return id;
}

void ProgramBuilder::depend(TaskId after, TaskId before) {
  check_task(after, "a dependency added to");
  // A dependency on a later task would make a cycle: the engine would deadlock. Only a lowering bug does that, as
  // does a negative id (a task that was never added, whose edge would be lost).
  if (before < 0 || before >= after) {
    throw std::logic_error(fmt::format("workload graph: task '{}' (id {}) depends on id {}, which is not an earlier "
                                       "task of this program",
                                       tasks_[static_cast<std::size_t>(after)].label, after, before));
  }
  edges_.emplace_back(before, after);
}

void ProgramBuilder::alloc_at_start(TaskId id, MemoryKind kind, Bytes bytes) {
  check_task(id, "memory allocated at the start of");
  if (bytes == 0) return;
  Task& t = tasks_[static_cast<std::size_t>(id)];
  assert(t.start_bytes == 0 || t.start_kind == kind);
  t.start_kind = kind;
  t.start_bytes += bytes;
}

void ProgramBuilder::free_at_end(TaskId id, MemoryKind kind, Bytes bytes) {
  check_task(id, "memory freed at the end of");
  if (bytes == 0) return;
  Task& t = tasks_[static_cast<std::size_t>(id)];
  assert(t.end_bytes == 0 || t.end_kind == kind);
  t.end_kind = kind;
  t.end_bytes -= bytes;
}

void ProgramBuilder::issue_in_order(TaskId first, const std::vector<TaskId>& order) {
  const auto begin = static_cast<std::size_t>(first);
  if (first < 0 || first > last() + 1 || begin < issue_order_.size() || order.size() != tasks_.size() - begin) {
    throw std::logic_error("workload graph: issue order must cover the tasks from `first` to the last, once");
  }
  std::vector<char> seen(order.size(), 0);
  for (TaskId t : order) {
    if (t < first || t > last() || seen[static_cast<std::size_t>(t - first)]) {
      throw std::logic_error("workload graph: issue order is not a permutation of its range");
    }
    seen[static_cast<std::size_t>(t - first)] = 1;
  }
  for (TaskId t = static_cast<TaskId>(issue_order_.size()); t < first; ++t) issue_order_.push_back(t);
  issue_order_.insert(issue_order_.end(), order.begin(), order.end());
  reordered_.emplace_back(first, last());
}

// Reverts each reordered range in which a dependency points backward in the issue order to task order.
void ProgramBuilder::keep_forward_issue_order() {
  std::vector<std::int32_t> position(issue_order_.size());
  for (std::size_t k = 0; k < issue_order_.size(); ++k) position[static_cast<std::size_t>(issue_order_[k])] = static_cast<std::int32_t>(k);
  const auto range_of = [&](std::uint32_t t) {
    const auto it = std::upper_bound(reordered_.begin(), reordered_.end(), static_cast<TaskId>(t),
                                     [](TaskId v, const std::pair<TaskId, TaskId>& r) { return v < r.first; });
    return it == reordered_.begin() || static_cast<TaskId>(t) > std::prev(it)->second ? reordered_.end() : std::prev(it);
  };
  std::vector<char> backward(reordered_.size(), 0);
  for (const auto& [from, to] : edges_) {
    if (to >= position.size() || position[from] < position[to]) continue;
    const auto r = range_of(to);
    if (r != reordered_.end()) {
      backward[static_cast<std::size_t>(r - reordered_.begin())] = 1;
    }
  }
  for (std::size_t k = 0; k < reordered_.size(); ++k) {
    if (!backward[k]) continue;
    for (TaskId t = reordered_[k].first; t <= reordered_[k].second; ++t) issue_order_[static_cast<std::size_t>(t)] = t;
  }
}

Program ProgramBuilder::finish() {
  Program p;
  if (!issue_order_.empty()) {
    for (auto t = static_cast<TaskId>(issue_order_.size()); t <= last(); ++t) issue_order_.push_back(t);
    keep_forward_issue_order();
    p.issue_order = std::move(issue_order_);
  }
  p.stage = stage_;
  // Edges arrive grouped by their target in increasing order, so a stable sort by source keeps both sorted. A
  // counting sort by source is that stable sort in linear time (it was 9% of a search's CPU as std::stable_sort).
  {
    std::vector<std::uint32_t> first(tasks_.size() + 1, 0);
    for (const auto& e : edges_) ++first[e.first + 1];
    for (std::size_t t = 1; t < first.size(); ++t) first[t] += first[t - 1];
    std::vector<std::pair<std::uint32_t, std::uint32_t>> sorted(edges_.size());
    for (const auto& e : edges_) sorted[first[e.first]++] = e;
    edges_ = std::move(sorted);
  }
  edges_.erase(std::unique(edges_.begin(), edges_.end()), edges_.end());
  p.successors = TaskGraph(boost::edges_are_sorted, edges_.begin(), edges_.end(), static_cast<std::uint32_t>(tasks_.size()));
  p.in_degree.assign(tasks_.size(), 0);
  for (const auto& [from, to] : edges_) {
    if (p.in_degree[to] == UINT16_MAX) throw std::logic_error("workload graph: task in-degree overflow");
    ++p.in_degree[to];
  }
  std::array<std::int32_t, 256> next_seq{};  // by Task::group
  for (Task& t : tasks_) {
    if (t.is_rendezvous()) t.group_seq = next_seq[static_cast<std::size_t>(t.group)]++;
  }
  p.tasks = std::move(tasks_);
  p.ops = std::move(ops_);
  if (std::any_of(demands_.begin(), demands_.end(), [](std::uint8_t d) { return d != 0; })) p.demands = std::move(demands_);
  p.static_memory = static_memory_;
  return p;
}

}  // namespace orrery
