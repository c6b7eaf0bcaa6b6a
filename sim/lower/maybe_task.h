#pragma once
// What an Emitter call (sim/lower/context.h) produced: a task of the program, or none, and then what a dependent
// must wait for instead.

#include <algorithm>
#include <span>
#include <stdexcept>
#include <vector>

#include "sim/engine/workload_graph.h"

namespace orrery {

using TaskId = ProgramBuilder::TaskId;

/// The result of an emitter call that may add no task: the weight-gradient mode drops the tasks of the other half
/// of a split backward (WeightGradMode), and a collective of a one-rank group is no kernel at all. A task that was
/// not emitted keeps the emitted tasks it would have waited for, its own dependencies with skipped ones passed
/// through in turn, so a consumer that lists it waits for those instead and no ordering edge is lost: with
/// A -> S -> C and S skipped, C waits for A. (Only the dependencies listed: the edge from the previous task on S's
/// stream belongs to S's kernel, and with none on that stream there is nothing queued behind it.)
///
/// A default MaybeTask is no task and nothing to wait for: an absent input (the first stage's embedding receives
/// nothing; the weight-gradient pass starts from no gradient). It does not convert to a TaskId, so the builder, whose
/// dependencies must be real tasks (ProgramBuilder::add throws on any other), cannot be handed one by accident: code
/// that needs the task itself (its memory effects, a parameter's first use) asks emitted() and says what a skipped
/// one means there.
class MaybeTask {
 public:
  MaybeTask() = default;
  /// Task `id` of the program. Throws std::logic_error if `id` < 0 (not a task: MaybeTask() is none).
  explicit MaybeTask(TaskId id) : id_(id) {
    if (id < 0) throw std::logic_error("MaybeTask: negative task id; no task is MaybeTask()");
  }
  /// A task that was not emitted and would have waited for `after` (emitted tasks, possibly none).
  static MaybeTask skipped(std::vector<TaskId> after) {
    MaybeTask t;
    t.after_ = std::move(after);
    return t;
  }

  bool emitted() const { return id_ >= 0; }
  /// The emitted task. Throws std::logic_error if none was emitted.
  TaskId task() const {
    if (id_ < 0) throw std::logic_error("MaybeTask: no task was emitted");
    return id_;
  }
  /// What a dependent waits for: the task itself, or what the skipped task would have waited for (maybe nothing).
  std::span<const TaskId> waits() const { return id_ >= 0 ? std::span<const TaskId>(&id_, 1) : std::span(after_); }
  /// A skipped task also waits for `before` from now on (a dependency added after it was skipped, so its later
  /// consumers inherit it). Throws std::logic_error on an emitted task, whose edge belongs in the builder.
  void also_wait_for(const MaybeTask& before) {
    if (id_ >= 0) throw std::logic_error("MaybeTask: an emitted task's dependency goes to the builder");
    for (TaskId t : before.waits()) {
      if (std::find(after_.begin(), after_.end(), t) == after_.end()) after_.push_back(t);
    }
  }
  /// The latest task a dependent waits for (the task itself when emitted), or -1 when it waits for none.
  TaskId latest() const {
    TaskId last = -1;
    for (TaskId t : waits()) last = std::max(last, t);
    return last;
  }

 private:
  TaskId id_ = -1;
  std::vector<TaskId> after_;  // a skipped task's pass-through; empty when emitted
};

}  // namespace orrery
