#pragma once
// How one pipeline rank's schedule is wired (ARCHITECTURE.md "Lowering"): pipeline_steps() (sim/pipeline_schedule.h)
// says which pass runs when; this says which steps share a slot, the point-to-point receive each step needs and the
// send after it, the host's waits for transfers without overlap_p2p_comm, and how the passes of a merged slot (the
// EP overlap's, DualPipe's) are tied together. StageLowering (sim/lower/stage_program.cpp) emits each step's units
// between these.

#include <array>
#include <utility>
#include <vector>

#include "sim/lower/context.h"
#include "sim/lower/merged_issue_order.h"
#include "sim/pipeline_schedule.h"

namespace orrery {

/// The compute task the host issued last on `builder`, on either compute stream (none before the first).
MaybeTask last_issued_compute(const ProgramBuilder& builder);

class PipelineWiring {
 public:
  /// The wiring of pipeline rank `stage`, emitting through `emit` (which must outlive it).
  PipelineWiring(const LoweringContext& ctx, Emitter& emit, int stage);

  /// Steps [first, second) of `steps` that Megatron communicates between as one: one step each, except the
  /// steady state of the interleaved schedule, where a forward and the backward after it share one batched
  /// send/receive (schedules.py, forward_backward_pipelining_with_interleaving). Without a pipeline, EP overlap merges
  /// each backward with the next micro-batch's forward (Megatron-Core's combined 1F1B in
  /// forward_backward_no_pipelining). DualPipe's schedule names its overlapped pairs itself (ScheduleStep::paired).
  std::vector<std::pair<std::size_t, std::size_t>> slots(const std::vector<ScheduleStep>& steps) const;

  /// Emits the receive `step` needs and returns it (none for a weight step, the first chunk's forward and the last
  /// chunk's backward). With overlap_p2p_comm receives are posted as early as their stream allows; without it, when
  /// the host reaches the slot. At DualPipeV's turn the input is the other chunk's output on this rank, which the
  /// schedule has always run in an earlier slot.
  MaybeTask post_receive(const ScheduleStep& step);

  /// Emits the send of chunk `chunk`'s output (`activation`) or input gradient after `data`, for `microbatch`; at
  /// DualPipeV's turn the output stays on this rank for the other chunk.
  void send(int chunk, bool activation, MaybeTask data, int microbatch);

  /// Without overlap_p2p_comm the host blocks until the pending sends and `received` have completed (Megatron's
  /// batched blocking p2p ops): one wait task, at where the host last issued work.
  void wait_for_transfers(const std::vector<MaybeTask>& received);

  /// Emits a block at `at`, and books it as where the host last issued work (which wait_for_transfers uses).
  PositionScope enter(const Position& at);

  /// The tasks a merged slot's passes start after: the last task on each compute stream before it.
  std::array<MaybeTask, 2> slot_start() const;

  /// Ties merged pass [first, ...] to its slot: its first compute task waits for `slot_after` (one merged pair
  /// runs at a time), and under DualPipe for the slot's receives `received` too (its _commit_and_wait_comm; its
  /// sends are not waited for, a simplification: the reference also waits for the previous chunk's sends).
  void join_merged_pass(ProgramBuilder::TaskId first, const std::array<MaybeTask, 2>& slot_after,
                        const std::vector<MaybeTask>& received);

  /// Megatron-Core's host issues a merged forward-and-backward pair layer by layer, sub-module by sub-module:
  /// reorders slot [begin, end) of `steps` (tasks slot_first.. with `passes` in step order) so. DualPipe's pairs and
  /// slots that are not one forward and one backward keep task order.
  void interleave_merged_slot(const std::vector<ScheduleStep>& steps, std::size_t begin, std::size_t end,
                              ProgramBuilder::TaskId slot_first, const std::vector<PassTasks>& passes);

 private:
  struct Transfer {
    Stream stream;
    GroupKind group;
  };
  // Where a chunk's activations (or gradients) go or come from: activations flow to the next rank and gradients
  // back, except on DualPipe's reversed chunk, whose transfers have streams and groups of their own.
  Transfer transfer(int chunk, bool activation, bool send) const;
  // Megatron-DeepSpeed's pipeline engine with tp > 1: pipe_partitioned and grad_partitioned (true by default,
  // runtime/config.py @ edaa722) send each TP rank's 1/tp of the activation or gradient (PartitionedTensor over
  // the slice-parallel group, the TP group), and the receiver gathers it back.
  bool pipe_partitioned() const;
  Bytes p2p_bytes() const;
  // DualPipeV's hand-over at the turn, per micro-batch: [0] chunk 0's forward output, [1] chunk 1's input gradient.
  MaybeTask& turned(int microbatch, bool forward);
  bool is_last(int chunk) const { return ctx_.layout.holds_head(stage_, chunk); }

  const LoweringContext& ctx_;
  Emitter& emit_;
  int stage_;
  Bytes hidden_bytes_;  // one micro-batch's hidden state on this rank
  Position host_at_;  // where the host last issued work (a receive or a unit): its waits for transfers are booked there
  std::vector<MaybeTask> pending_sends_;  // blocking sends not yet waited for
  std::vector<std::array<MaybeTask, 2>> turned_;  // per micro-batch: DualPipeV's hand-overs at the turn (turned())
};

}  // namespace orrery
