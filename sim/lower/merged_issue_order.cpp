#include "sim/lower/merged_issue_order.h"

#include <algorithm>
#include <array>
#include <string_view>

namespace orrery {

namespace {

using TaskId = ProgramBuilder::TaskId;

// A layer's tasks split into the four sub-modules of Megatron-Core's fine-grained schedule, in the pass's order:
// forward [attention, dispatch, mlp, combine], backward [combine, mlp, dispatch, attention].
using Parts = std::array<std::vector<TaskId>, 4>;

bool labelled(const ProgramBuilder& b, TaskId t, std::string_view label) {
  const Task& task = b.task(t);
  return task.phase != Phase::kRecompute && label == task.label;
}

// The first task in first..last labelled `label` (recomputed tasks aside), or last + 1.
TaskId find_from(const ProgramBuilder& b, TaskId first, TaskId last, std::string_view label) {
  for (TaskId t = first; t <= last; ++t) {
    if (labelled(b, t, label)) return t;
  }
  return last + 1;
}

void append(std::vector<TaskId>& out, TaskId first, TaskId last) {
  for (TaskId t = first; t <= last; ++t) out.push_back(t);
}

// A layer without an expert dispatch (dense) goes whole into one part: the forward's attention (first), the
// backward's attention (last).
Parts whole_layer(std::size_t part, TaskId first, TaskId last) {
  Parts parts;
  append(parts[part], first, last);
  return parts;
}

Parts forward_parts(const ProgramBuilder& b, TaskId first, TaskId last) {
  const TaskId dispatch = find_from(b, first, last, "moe_dispatch");
  if (dispatch > last) return whole_layer(0, first, last);
  Parts parts;
  // The token-count sync moves from the dispatch preprocess to the dispatch (token_dispatcher.py syncs at
  // "before_ep_alltoall"; its device-to-host copy was queued at "before_permutation_1").
  for (TaskId t = first; t < dispatch; ++t) {
    (b.task(t).kind == TaskKind::kHostSync ? parts[1] : parts[0]).push_back(t);
  }
  TaskId t = dispatch;
  for (; t <= last && labelled(b, t, "moe_dispatch"); ++t) parts[1].push_back(t);
  const TaskId combine = find_from(b, t, last, "moe_combine");
  append(parts[2], t, combine - 1);
  append(parts[3], combine, last);
  return parts;
}

Parts backward_parts(const ProgramBuilder& b, TaskId first, TaskId last) {
  const TaskId dispatch = find_from(b, first, last, "moe_dispatch");
  if (dispatch > last) return whole_layer(3, first, last);
  Parts parts;
  TaskId combine_end = first - 1;  // the combine's backward ends with its last communication
  for (TaskId t = first; t < dispatch; ++t) {
    if (labelled(b, t, "moe_combine")) combine_end = t;
  }
  const TaskId router = find_from(b, dispatch, last, "router_topk");
  append(parts[0], first, combine_end);
  append(parts[1], combine_end + 1, dispatch - 1);
  append(parts[2], dispatch, router - 1);
  append(parts[3], router, last);
  return parts;
}

// Each layer's range extended to the next layer's start (what lies between two layers, offload copies for
// instance, goes with the earlier one); the last ends at its own last task.
std::vector<LayerSpan> extended(const std::vector<LayerSpan>& layers) {
  std::vector<LayerSpan> out = layers;
  for (std::size_t i = 0; i + 1 < out.size(); ++i) out[i].last = out[i + 1].first - 1;
  return out;
}

bool well_formed(const PassTasks& pass) {
  TaskId at = pass.first;
  for (const LayerSpan& l : pass.layers) {
    if (l.first < at || l.last < l.first || l.last > pass.last) return false;
    at = l.last + 1;
  }
  return true;
}

}  // namespace

std::vector<TaskId> merged_issue_order(const ProgramBuilder& builder, TaskId first, const PassTasks& forward,
                                       const PassTasks& backward) {
  const PassTasks& lower = forward.first < backward.first ? forward : backward;
  const PassTasks& upper = forward.first < backward.first ? backward : forward;
  if (lower.first < first || upper.first != lower.last + 1 || upper.last != builder.last() || !well_formed(forward) ||
      !well_formed(backward) || forward.layers.empty() || backward.layers.empty()) {
    return {};
  }
  const std::vector<LayerSpan> f = extended(forward.layers), b = extended(backward.layers);
  std::vector<TaskId> order;
  order.reserve(static_cast<std::size_t>(builder.last() - first + 1));
  append(order, first, lower.first - 1);
  append(order, forward.first, f.front().first - 1);
  append(order, backward.first, b.front().first - 1);
  const std::size_t pairs = std::min(f.size(), b.size());
  for (std::size_t i = 0; i < pairs; ++i) {
    const Parts fw = forward_parts(builder, f[i].first, f[i].last);
    const Parts bw = backward_parts(builder, b[i].first, b[i].last);
    for (const std::vector<TaskId>* part : {&bw[0], &fw[0], &bw[1], &fw[1], &bw[2], &fw[2], &fw[3], &bw[3]}) {
      order.insert(order.end(), part->begin(), part->end());
    }
  }
  for (std::size_t i = pairs; i < b.size(); ++i) append(order, b[i].first, b[i].last);
  for (std::size_t i = pairs; i < f.size(); ++i) append(order, f[i].first, f[i].last);
  append(order, f.back().last + 1, forward.last);
  append(order, b.back().last + 1, backward.last);
  return order;
}

}  // namespace orrery
