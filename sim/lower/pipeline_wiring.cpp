#include "sim/lower/pipeline_wiring.h"

#include <algorithm>

namespace orrery {

MaybeTask last_issued_compute(const ProgramBuilder& builder) {
  const ProgramBuilder::TaskId last = std::max(builder.last_on(Stream::kCompute), builder.last_on(Stream::kComputeB));
  return last >= 0 ? MaybeTask(last) : MaybeTask();
}

PipelineWiring::PipelineWiring(const LoweringContext& ctx, Emitter& emit, int stage)
    : ctx_(ctx),
      emit_(emit),
      stage_(stage),
      hidden_bytes_(ctx.tokens_sp * ctx.model.hidden_size * ctx.act_bytes),
      turned_(static_cast<std::size_t>(ctx.microbatches)) {}

std::vector<std::pair<std::size_t, std::size_t>> PipelineWiring::slots(const std::vector<ScheduleStep>& steps) const {
  std::vector<std::pair<std::size_t, std::size_t>> out;
  const bool merge_without_pipeline = ctx_.plan.overlap_moe_expert_parallel_comm && ctx_.plan.pp == 1;
  // Only the steady state pairs a forward with the backward after it: with all-warm-up (micro-batches equal to
  // pp) the last forward and the first backward are separate steps of Megatron-Core's schedule.
  const bool interleaved = ctx_.plan.vpp > 1 && ctx_.plan.schedule == Schedule::k1F1B;
  const std::size_t steady =
      interleaved
          ? static_cast<std::size_t>(interleaved_warmup_forwards(ctx_.plan.pp, ctx_.plan.vpp, stage_, ctx_.microbatches))
          : 0;
  for (std::size_t i = 0; i < steps.size();) {
    const bool next = i + 1 < steps.size();
    const bool pair = steps[i].paired ||
                      (ctx_.plan.vpp > 1 && next && steps[i].kind == StepKind::kForward &&
                       steps[i + 1].kind == StepKind::kBackward && i >= steady) ||
                      (merge_without_pipeline && next && steps[i].kind == StepKind::kBackward &&
                       steps[i + 1].kind == StepKind::kForward);
    out.emplace_back(i, i + (pair ? 2 : 1));
    i += pair ? 2 : 1;
  }
  return out;
}

MaybeTask PipelineWiring::post_receive(const ScheduleStep& step) {
  const bool forward = step.kind == StepKind::kForward;
  if (step.kind == StepKind::kWeight) return {};
  if (forward ? ctx_.layout.holds_embedding(stage_, step.chunk) : is_last(step.chunk)) return {};
  if (ctx_.layout.turns_locally(stage_, step.chunk, forward)) return turned(step.microbatch, forward);
  const PositionScope at = enter({step.microbatch, step.chunk, -1, forward ? Phase::kForward : Phase::kBackwardInput});
  const MaybeTask host = ctx_.plan.overlap_p2p_comm ? MaybeTask() : last_issued_compute(emit_.builder());
  const Transfer in = transfer(step.chunk, forward, false);
  const MaybeTask received = emit_.p2p(forward ? "activation" : "gradient", in.stream, in.group, p2p_bytes(), {host});
  if (!pipe_partitioned() || !received.emitted()) return received;
  // PartitionedTensor.full() (runtime/pipe/engine.py @ edaa722): an all-gather over the TP group, blocking.
  return emit_.collective("pipe_partition_gather", Stream::kTp, GroupKind::kTp, CollectiveKind::kAllGather,
                          hidden_bytes_, {received});
}

void PipelineWiring::send(int chunk, bool activation, MaybeTask data, int microbatch) {
  if (ctx_.layout.turns_locally(stage_, 1 - chunk, activation)) {
    turned(microbatch, activation) = data;
    return;
  }
  // Posted by the host after the step's compute, with the next slot's receives.
  const MaybeTask host = ctx_.plan.overlap_p2p_comm ? MaybeTask() : last_issued_compute(emit_.builder());
  const Transfer out = transfer(chunk, activation, true);
  const MaybeTask sent = emit_.p2p(activation ? "activation" : "gradient", out.stream, out.group, p2p_bytes(), {data, host});
  if (!ctx_.plan.overlap_p2p_comm) pending_sends_.push_back(sent);
}

void PipelineWiring::wait_for_transfers(const std::vector<MaybeTask>& received) {
  if (ctx_.plan.overlap_p2p_comm) return;
  std::vector<MaybeTask> all = pending_sends_;
  for (const MaybeTask& r : received) {
    if (!r.waits().empty()) all.push_back(r);  // a step without a receive has nothing to wait for
  }
  pending_sends_.clear();
  if (all.empty()) return;
  const PositionScope at(emit_, host_at_);
  MaybeTask wait = emit_.elementwise("p2p_wait", 0, 0);
  for (const MaybeTask& t : all) emit_.depend(wait, t);
}

PositionScope PipelineWiring::enter(const Position& at) {
  host_at_ = at;
  return PositionScope(emit_, at);
}

std::array<MaybeTask, 2> PipelineWiring::slot_start() const {
  return {emit_.last_on(Stream::kCompute), emit_.last_on(Stream::kComputeB)};
}

void PipelineWiring::join_merged_pass(ProgramBuilder::TaskId first, const std::array<MaybeTask, 2>& slot_after,
                                      const std::vector<MaybeTask>& received) {
  ProgramBuilder::TaskId head = -1;
  for (ProgramBuilder::TaskId t = first; t <= emit_.builder().last(); ++t) {
    if (is_compute(emit_.builder().task(t))) {
      head = t;
      break;
    }
  }
  for (const MaybeTask& before : slot_after) emit_.depend(head, before);
  if (is_dualpipe(ctx_.plan.schedule)) {
    for (const MaybeTask& r : received) emit_.depend(head, r);
  }
}

void PipelineWiring::interleave_merged_slot(const std::vector<ScheduleStep>& steps, std::size_t begin,
                                            std::size_t end, ProgramBuilder::TaskId slot_first,
                                            const std::vector<PassTasks>& passes) {
  if (!ctx_.plan.overlap_moe_expert_parallel_comm || is_dualpipe(ctx_.plan.schedule) || end - begin != 2) return;
  const StepKind a = steps[begin].kind, b = steps[begin + 1].kind;
  if (a == b || a == StepKind::kWeight || b == StepKind::kWeight) return;
  const bool forward_first = a == StepKind::kForward;
  const std::vector<ProgramBuilder::TaskId> order =
      merged_issue_order(emit_.builder(), slot_first, passes[forward_first ? 0 : 1], passes[forward_first ? 1 : 0]);
  if (!order.empty()) emit_.builder().issue_in_order(slot_first, order);
}

PipelineWiring::Transfer PipelineWiring::transfer(int chunk, bool activation, bool send) const {
  // Indexed [reversed chunk][activation][send].
  static constexpr Transfer kTransfers[2][2][2] = {
      {{{Stream::kPpRecvNext, GroupKind::kPpBackwardRecv}, {Stream::kPpSendPrev, GroupKind::kPpBackwardSend}},
       {{Stream::kPpRecvPrev, GroupKind::kPpForwardRecv}, {Stream::kPpSendNext, GroupKind::kPpForwardSend}}},
      {{{Stream::kPpReverseRecvPrev, GroupKind::kPpReverseBackwardRecv},
        {Stream::kPpReverseSendNext, GroupKind::kPpReverseBackwardSend}},
       {{Stream::kPpReverseRecvNext, GroupKind::kPpReverseForwardRecv},
        {Stream::kPpReverseSendPrev, GroupKind::kPpReverseForwardSend}}}};
  return kTransfers[ctx_.layout.reversed(chunk) ? 1 : 0][activation ? 1 : 0][send ? 1 : 0];
}

bool PipelineWiring::pipe_partitioned() const {
  return ctx_.training.framework == Framework::kMegatronDeepSpeed && ctx_.tp > 1;
}

Bytes PipelineWiring::p2p_bytes() const { return pipe_partitioned() ? hidden_bytes_ / ctx_.tp : hidden_bytes_; }

MaybeTask& PipelineWiring::turned(int microbatch, bool forward) {
  return turned_[static_cast<std::size_t>(microbatch)][forward ? 0 : 1];
}

}  // namespace orrery
