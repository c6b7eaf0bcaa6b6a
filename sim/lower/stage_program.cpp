// The lowering driver: walks one pipeline rank's schedule and emits, per step, the point-to-point receive, the
// embedding, the layers of the chunk, the head and loss, and the send; then the data-parallel epilogue.
#include <algorithm>
#include <map>

#include "sim/lower/context.h"
#include "sim/lower/data_parallel.h"
#include "sim/lower/embedding_head.h"
#include "sim/lower/transformer_layer.h"
#include "sim/lowering.h"
#include "sim/pipeline_schedule.h"

namespace orrery {

namespace {

// Upper estimate of the tasks one layer emits in one forward or backward step (with recompute), to size buffers.
constexpr int kTasksPerLayerStep = 48;

SavePolicy forward_policy(Recompute r) {
  switch (r) {
    case Recompute::kNone: return {true, true, true};
    case Recompute::kSelective: return {true, true, false};
    case Recompute::kFull: return {true, false, false};
  }
  return {};
}

class StageLowering {
 public:
  StageLowering(const LoweringContext& ctx, int stage)
      : ctx_(ctx), stage_(stage), builder_(stage), emit_(ctx, builder_, stage), dp_(ctx, stage) {
    hidden_bytes_ = ctx.tokens_sp * ctx.model.hidden_size * ctx.act_bytes;
  }

  Program run(const MemoryParams& memory) {
    dp_.emit_prologue(emit_);
    const auto steps = pipeline_steps(ctx_.plan.schedule, ctx_.plan.pp, ctx_.plan.vpp, stage_, ctx_.microbatches);
    int most_layers = 0;
    for (int c = 0; c < ctx_.layout.vpp; ++c) most_layers = std::max(most_layers, ctx_.layout.layers_in(stage_, c));
    builder_.reserve(steps.size() * static_cast<std::size_t>(most_layers * kTasksPerLayerStep + 32) + 256);
    // The first forward and the last backward of each chunk carry the data-parallel dependencies.
    std::map<int, std::size_t> first_forward, last_backward;
    for (std::size_t i = 0; i < steps.size(); ++i) {
      if (steps[i].kind == StepKind::kForward && !first_forward.contains(steps[i].chunk)) first_forward[steps[i].chunk] = i;
      if (steps[i].kind == StepKind::kBackward) last_backward[steps[i].chunk] = i;
    }
    for (std::size_t i = 0; i < steps.size(); ++i) {
      const ScheduleStep& step = steps[i];
      if (step.kind == StepKind::kForward) {
        forward(step, first_forward[step.chunk] == i ? &first_uses_ : nullptr);
      } else {
        backward(step, last_backward[step.chunk] == i ? &grad_ready_ : nullptr);
      }
    }
    flush_send();
    dp_.emit_epilogue(emit_, first_uses_, grad_ready_, builder_.last_on(Stream::kCompute));
    dp_.set_static_memory(builder_, other_memory(memory));
    return builder_.finish();
  }

 private:
  int virtual_stage(int chunk) const { return ctx_.layout.virtual_stage(stage_, chunk); }
  bool is_last(int chunk) const { return virtual_stage(chunk) == ctx_.layout.virtual_stages() - 1; }


  // With overlap_p2p_comm, receives are posted as early as their stream allows and sends never block compute.
  // Without it, as Megatron's blocking p2p_communication, a step's send and the next step's receive are posted
  // together when the host reaches them, and the host waits for both before issuing more compute (posting them
  // separately would deadlock neighbouring stages).
  TaskId receive(const char* label, Stream stream, GroupKind group) {
    if (ctx_.plan.overlap_p2p_comm) return emit_.p2p(label, stream, group, hidden_bytes_);
    const TaskId host = pending_send_ >= 0 ? send_host_point_ : builder_.last_on(Stream::kCompute);
    TaskId recv = emit_.p2p(label, stream, group, hidden_bytes_, {host});
    emit_.elementwise("p2p_wait", 0, 0, {recv, pending_send_});
    pending_send_ = -1;
    return recv;
  }

  void send(const char* label, Stream stream, GroupKind group, TaskId data) {
    flush_send();
    TaskId sent = emit_.p2p(label, stream, group, hidden_bytes_, {data});
    if (ctx_.plan.overlap_p2p_comm) return;
    pending_send_ = sent;
    send_host_point_ = builder_.last_on(Stream::kCompute);
  }

  // A blocking send whose next step receives nothing is waited for on its own.
  void flush_send() {
    if (pending_send_ < 0) return;
    emit_.elementwise("p2p_wait", 0, 0, {pending_send_});
    pending_send_ = -1;
  }

  void forward(const ScheduleStep& step, std::vector<ParamUse>* params) {
    emit_.at(step.microbatch, step.chunk, -1, Phase::kForward);
    TaskId x = -1;
    if (virtual_stage(step.chunk) > 0) x = receive("activation", Stream::kPpRecvPrev, GroupKind::kPpForwardRecv);
    flush_send();
    EmbeddingHeadLowering edges(emit_);
    if (ctx_.layout.holds_embedding(stage_, step.chunk)) x = edges.embedding_forward(x, params);
    const int first = ctx_.layout.first_layer_of(stage_, step.chunk);
    for (int l = first; l < first + ctx_.layout.layers_in(stage_, step.chunk); ++l) {
      emit_.at(step.microbatch, step.chunk, l, Phase::kForward);
      TransformerLayerLowering layer(emit_, l);
      x = layer.forward(x, forward_policy(ctx_.training.recompute), params);
    }
    emit_.at(step.microbatch, step.chunk, -1, Phase::kForward);
    if (is_last(step.chunk)) {
      edges.head_forward(x, params);
    } else {
      send("activation", Stream::kPpSendNext, GroupKind::kPpForwardSend, x);
    }
  }

  void backward(const ScheduleStep& step, std::vector<ParamUse>* params) {
    emit_.at(step.microbatch, step.chunk, -1, Phase::kBackwardInput);
    TaskId g = -1;
    EmbeddingHeadLowering edges(emit_);
    if (is_last(step.chunk)) {
      g = edges.head_backward(builder_.last_on(Stream::kCompute), params);
    } else {
      g = receive("gradient", Stream::kPpRecvNext, GroupKind::kPpBackwardRecv);
    }
    flush_send();
    const int first = ctx_.layout.first_layer_of(stage_, step.chunk);
    for (int l = first + ctx_.layout.layers_in(stage_, step.chunk) - 1; l >= first; --l) {
      emit_.at(step.microbatch, step.chunk, l, Phase::kBackwardInput);
      TransformerLayerLowering layer(emit_, l);
      g = layer.backward(g, params);
    }
    emit_.at(step.microbatch, step.chunk, -1, Phase::kBackwardInput);
    if (ctx_.layout.holds_embedding(stage_, step.chunk)) {
      edges.embedding_backward(g, params);
    } else {
      send("gradient", Stream::kPpSendPrev, GroupKind::kPpBackwardSend, g);
    }
  }

  // Workspace, NCCL buffers for each communicator this rank belongs to, and the framework's fixed overhead.
  Bytes other_memory(const MemoryParams& memory) const {
    int communicators = 0;
    for (GroupKind kind : {GroupKind::kTp, GroupKind::kDp, GroupKind::kModelParallel}) {
      if (ctx_.placement(kind, stage_).size > 1) ++communicators;
    }
    if (ctx_.plan.pp > 1) communicators += 2;  // point-to-point with the previous and the next stage
    return memory.workspace + communicators * memory.nccl_buffer_per_communicator + memory.framework_overhead;
  }

  const LoweringContext& ctx_;
  int stage_;
  ProgramBuilder builder_;
  Emitter emit_;
  DataParallelLowering dp_;
  Bytes hidden_bytes_ = 0;
  TaskId pending_send_ = -1;    // a blocking send not yet waited for
  TaskId send_host_point_ = -1;  // the compute task the host had issued when it posted that send
  std::vector<ParamUse> first_uses_;
  std::vector<ParamUse> grad_ready_;
};

}  // namespace

WorkloadGraph lower(const Scenario& scenario, const MemoryParams& memory) {
  LoweringContext ctx(scenario);
  WorkloadGraph graph;
  for (int stage = 0; stage < scenario.parallel.pp; ++stage) {
    StageLowering lowering(ctx, stage);
    graph.programs.push_back(lowering.run(memory));
  }
  return graph;
}

}  // namespace orrery
