#pragma once
// The discrete-event engine (ARCHITECTURE.md "The workload graph and the engine"). It knows tasks, streams, durations,
// rendezvous groups and memory effects, nothing of transformers (ARCHITECTURE.md rule 1). Time is integer nanoseconds
// and events are ordered by (time, sequence number), so runs are deterministic (ARCHITECTURE.md rule 5). The graph is
// read-only; all run state lives here (ARCHITECTURE.md rule 3).
//
// Semantics: a task becomes ready when every predecessor in its program (data and stream order) has ended. A
// task of a rendezvous group starts when every member instance of its group has made its task of the same group
// kind and issue order ready (NCCL's matching of calls on a communicator), so one slow member delays the whole
// group; others start when ready and their lane is free. Streams the graph puts on one lane (StreamInfo::lane, on
// side 0 and side 1: the lowering's backward pass merged with a forward) run one task at a time, as the one GPU or
// the one communication stream they stand for. A task that finds its lane busy waits; a complete rendezvous group waits
// while any member's lane is busy, reserving nothing, so later tasks may overtake it. When a lane frees, it takes
// the other side's earliest issued waiting task, else the same side's, and only then a waiting group, so the merged
// passes alternate (the lowering's overlapped forward and backward pairs). In a program with its own issue order
// (Program::issue_order: the lowering's merged passes) a lane is one CUDA stream instead: its tasks run strictly in issue order, each after
// the one issued before it on the lane. Unlike a CUDA stream, a lane stays free while a group
// assembles (slightly optimistic; no issue-order deadlock can arise). A task allocates its at_start bytes when it
// starts and applies its at_end bytes when it ends.
//
// The host timeline (with Durations::issue_seconds): each instance's host thread issues its program's tasks in
// issue order (Program::issue_order, else task order: the order the framework's Python calls them), spending each task's issue_seconds, from time 0
// (or the instance's Instance::start_delay); a
// task becomes ready only once its predecessors have ended *and* it has been issued, so a rank whose host is
// slower than its GPU leaves the GPU idle, and a rendezvous waits for its last member's host. A kHostSync task
// (a `.item()`), or a kHostOp of CPU work (HostOpShape::kHostMemory, the CPU optimizer step), blocks its host: the
// tasks after it in issue order are issued from its end on. Otherwise the host runs ahead without limit (CUDA's launch queue of
// about a thousand entries is not modelled: only a host that falls behind changes the timeline).
//
// Per-instance factors (Instance): compute_slowdown stretches its tasks on compute streams, network_slowdown its
// tasks that demand the network port, and start_delay holds back its host (or, with no host timeline, its first
// tasks); a rendezvous starts when its last member arrives and lasts as long as its slowest member's duration.

#include <array>
#include <cstdint>
#include <vector>

#include "sim/engine/instantiation.h"
#include "sim/engine/resource_model.h"
#include "sim/engine/workload_graph.h"

namespace orrery {

/// Base duration (seconds) of every distinct operation of every program ([program][op], Task::op indexes it),
/// before per-instance slowdowns.
struct Durations {
  std::vector<std::vector<Seconds>> op_seconds;
  /// CPU seconds each task's host spends issuing it ([program][task]); empty: no host timeline (every task is
  /// issued at time 0).
  std::vector<std::vector<Seconds>> issue_seconds;
};

struct TaskTiming {
  Nanoseconds ready = 0;  // all predecessors done and issued (for rendezvous: this member arrived)
  Nanoseconds issued = 0; // when its host issued it (0 without a host timeline)
  Nanoseconds start = 0;
  Nanoseconds end = 0;
};

struct MemorySample {
  Nanoseconds time = 0;
  Bytes live = 0;
};

struct InstanceRun {
  Nanoseconds end = 0;  // when its last task ended
  Bytes peak = 0;       // largest live bytes
  std::array<Bytes, kNumMemoryKinds> at_peak{};  // composition at the first instant of the peak
  bool recorded = false;
  std::vector<TaskTiming> timings;      // per task, when recorded
  std::vector<MemorySample> memory;     // live bytes after each change, when recorded
};

struct RunResult {
  std::vector<InstanceRun> instances;
  Nanoseconds makespan = 0;
  std::int64_t events = 0;
  bool stopped = false;  // an observer ended the run early (RunObserver::stop_requested)
};

/// Watches a run while it goes (ARCHITECTURE.md "Observers"): the engine calls it when a task starts and ends and
/// when an instance's live memory changes, and after each event asks whether to stop. Its calls add no event and
/// change no timing; a run without observers pays one untaken branch per call site. Times are the engine's
/// nanoseconds, `instance` and `task` index Instantiation::instances and the instance's program's tasks.
class RunObserver {
 public:
  virtual ~RunObserver() = default;
  virtual void task_started(std::int32_t /*instance*/, std::int32_t /*task*/, Nanoseconds /*at*/) {}
  virtual void task_ended(std::int32_t /*instance*/, std::int32_t /*task*/, Nanoseconds /*at*/) {}
  /// `live`: the instance's live bytes after the change (the peak is their largest).
  virtual void memory_changed(std::int32_t /*instance*/, Nanoseconds /*at*/, Bytes /*live*/) {}
  /// True ends the run after the current event; RunResult::stopped is then set and its figures are the partial
  /// run's (makespan: the latest task end so far).
  virtual bool stop_requested() const { return false; }
};

/// Stops a run at the first task end later than `after` nanoseconds (0: never) or the first time an instance holds
/// more than `memory_above` live bytes (0: never): the search's cut-off for a plan that can no longer rank, since
/// the iteration time is at least every task end and the peak at least every live total.
class RunCutoff final : public RunObserver {
 public:
  RunCutoff(Nanoseconds after, Bytes memory_above) : after_(after), memory_above_(memory_above) {}
  void task_ended(std::int32_t, std::int32_t, Nanoseconds at) override {
    if (after_ > 0 && at > after_) time_passed_ = true;
  }
  void memory_changed(std::int32_t, Nanoseconds, Bytes live) override {
    if (memory_above_ > 0 && live > memory_above_) memory_passed_ = true;
  }
  bool stop_requested() const override { return time_passed_ || memory_passed_; }
  bool time_passed() const { return time_passed_; }
  bool memory_passed() const { return memory_passed_; }

 private:
  Nanoseconds after_;
  Bytes memory_above_;
  bool time_passed_ = false, memory_passed_ = false;
};

struct RunOptions {
  /// Keep per-task timings and memory samples of every instance when instances x tasks stays below this;
  /// above it, only the first instance of each stage and those with a slowdown are recorded.
  std::int64_t record_budget = 20'000'000;
  /// False: no instance keeps per-task timings or memory samples, whatever the budget (a run read only for its
  /// makespan, ends and peaks, as the jitter Monte-Carlo's many runs are).
  bool record_timings = true;
  /// The resource models to run (sim/engine/resource_model.h), in the order their factors multiply; the graph's
  /// demands on models not listed here are ignored (every task sees the whole resource). Each model at most once.
  /// A rendezvous whose members are all paced (network transfers under port_fair_share) ends, on every member, when
  /// its last member has done its work.
  std::vector<ResourceSetting> resources;
  /// Bytes of resident memory the process may reach while the engine runs (sim/memory_budget.h); above it the run
  /// stops with Error::invalid naming --memory-budget. 0: no budget.
  std::int64_t memory_budget = 0;
  /// Observers called while the run goes, in this order; not owned (they must outlive the run).
  std::vector<RunObserver*> observers;
};

/// Runs the graph, calling `options.observers` as it goes. Errors: Error::invalid when RunOptions::memory_budget is reached; std::invalid_argument for an
/// unknown or repeated resource model; std::logic_error for a task whose stream, group kind or demand is not in the
/// graph's tables, an instantiation with another number of group kinds, or tasks that never become ready (a
/// deadlock, i.e. a lowering bug).
RunResult run_engine(const WorkloadGraph& graph, const Instantiation& instances, const Durations& durations,
                     const RunOptions& options = {});

}  // namespace orrery
