// The lowering driver: walks one pipeline rank's schedule, slot by slot as its wiring groups the steps
// (sim/lower/pipeline_wiring.h, which also emits the point-to-point receives, sends and waits), and emits per step
// the embedding, the layers of the chunk, and the head and loss; then the data-parallel epilogue.
#include <algorithm>
#include <array>
#include <map>
#include <optional>

#include "sim/lower/context.h"
#include "sim/lower/data_parallel.h"
#include "sim/lower/context_parallel.h"
#include "sim/lower/cpu_offload.h"
#include "sim/lower/embedding_head.h"
#include "sim/lower/fp8.h"
#include "sim/lower/mtp.h"
#include "sim/lower/pipeline_wiring.h"
#include "sim/lower/pytorch_step.h"
#include "sim/lower/sharded_params.h"
#include "sim/lower/transformer_layer.h"
#include "sim/lowering.h"
#include "sim/pipeline_schedule.h"

namespace orrery {

namespace {

// Upper estimate of the tasks one layer emits in one forward or backward step (with recompute), to size buffers.
constexpr int kTasksPerLayerStep = 48;

class StageLowering {
 public:
  StageLowering(const LoweringContext& ctx, int stage)
      : ctx_(ctx),
        stage_(stage),
        builder_(program_builder(stage)),
        emit_(ctx, builder_, stage),
        dp_(ctx, stage),
        sharded_(ctx, stage),
        wiring_(ctx, emit_, stage),
        loss_(static_cast<std::size_t>(ctx.microbatches)) {
    hidden_bytes_ = ctx.tokens_sp * ctx.model.hidden_size * ctx.act_bytes;
  }

  Program run(const MemoryParams& memory) {
    const auto steps = pipeline_steps(ctx_.plan.schedule, ctx_.plan.pp, ctx_.plan.vpp, stage_, ctx_.microbatches);
    dp_.emit_prologue(emit_, chunks_in_forward_order(steps));
    int most_layers = 0;
    for (int c = 0; c < ctx_.layout.vpp; ++c) most_layers = std::max(most_layers, ctx_.layout.layers_in(stage_, c));
    const int per_layer = kTasksPerLayerStep + cp_extra_tasks_per_layer(ctx_.plan);
    builder_.reserve(steps.size() * static_cast<std::size_t>(most_layers * per_layer + 32) + 256);
    // The first forward and the last backward of each chunk carry the data-parallel dependencies.
    // With split backwards (ZB-H1) the chunk's last B and last W both finish gradients.
    std::map<int, std::size_t> first_forward, last_backward, last_weight;
    for (std::size_t i = 0; i < steps.size(); ++i) {
      if (steps[i].kind == StepKind::kForward && !first_forward.contains(steps[i].chunk)) first_forward[steps[i].chunk] = i;
      if (steps[i].kind == StepKind::kBackward) last_backward[steps[i].chunk] = i;
      if (steps[i].kind == StepKind::kWeight) last_weight[steps[i].chunk] = i;
    }
    // Merged passes: Megatron-Core's EP overlap, or DualPipe's (and DualPipeV's) overlapped forward-and-backward
    // pairs.
    const bool merged = ctx_.plan.overlap_moe_expert_parallel_comm || is_dualpipe(ctx_.plan.schedule);
    for (const auto& [begin, end] : wiring_.slots(steps)) {
      // Receives of the whole slot are posted together, with the previous slot's sends; without
      // overlap_p2p_comm the host then waits for all of them (Megatron's batched blocking p2p ops).
      std::vector<MaybeTask> received;
      for (std::size_t i = begin; i < end; ++i) received.push_back(wiring_.post_receive(steps[i]));
      wiring_.wait_for_transfers(received);
      // Merged, the forward and backward of a slot run together (the backward on the twin streams); the next slot
      // starts when both have been issued and run, as Megatron-Core and DualPipe run one merged pair at a time.
      const std::array<MaybeTask, 2> slot_after = wiring_.slot_start();
      const TaskId slot_first = builder_.last() + 1;
      std::vector<PassTasks> passes;
      for (std::size_t i = begin; i < end; ++i) {
        const ScheduleStep& step = steps[i];
        const MaybeTask input = received[i - begin];
        const TaskId first = builder_.last() + 1;
        layer_spans_.clear();
        {
          const OverlapScope twin(emit_, merged && step.kind == StepKind::kBackward);
          switch (step.kind) {
            case StepKind::kForward:
              forward(step, input, first_forward[step.chunk] == i ? &first_uses_ : nullptr);
              break;
            case StepKind::kBackward:
              step_grads_.clear();
              backward(step, input, last_backward[step.chunk] == i ? &grad_ready_ : &step_grads_);
              break;
            case StepKind::kWeight:
              step_grads_.clear();
              weight_gradients(step, last_weight[step.chunk] == i ? &grad_ready_ : &step_grads_);
              break;
          }
        }
        passes.push_back({first, builder_.last(), layer_spans_});
        if (merged) wiring_.join_merged_pass(first, slot_after, received);
      }
      wiring_.interleave_merged_slot(steps, begin, end, slot_first, passes);
    }
    wiring_.wait_for_transfers({});
    dp_.emit_epilogue(emit_, first_uses_, grad_ready_, last_issued_compute(builder_), sharded_.reductions());
    dp_.set_static_memory(builder_, other_memory(memory));
    builder_.add_static_memory(MemoryKind::kWeights, fp8_weight_cache_bytes(ctx_, stage_));
    return builder_.finish();
  }

 private:
  // PyTorch eager layer bodies (sim/lower/pytorch_step.h): the pytorch framework, and fsdp2 in its FSDP mode.
  bool pytorch() const { return is_eager_pytorch(ctx_.training.framework); }
  bool is_last(int chunk) const { return ctx_.layout.holds_head(stage_, chunk); }

  // The loss of the step's micro-batch, which its backward through the head starts from.
  MaybeTask loss_of(const ScheduleStep& step) const { return loss_[static_cast<std::size_t>(step.microbatch)]; }

  // The chunks in the order of their first forward (DualPipe's second-half ranks start with chunk 1).
  std::vector<int> chunks_in_forward_order(const std::vector<ScheduleStep>& steps) const {
    std::vector<int> order;
    for (const ScheduleStep& s : steps) {
      if (s.kind == StepKind::kForward && std::find(order.begin(), order.end(), s.chunk) == order.end()) {
        order.push_back(s.chunk);
      }
    }
    return order;
  }

  // Emits one unit (embedding, layer or head) with ZeRO-3's parameter gather in front of it.
  template <typename Emit>
  MaybeTask run_unit(const std::vector<ParamUnit>& units, std::size_t i, bool backward, Emit&& emit_unit) {
    const MaybeTask gathered = sharded_.gather(emit_, units, i, backward);
    const TaskId first = builder_.last() + 1;
    const MaybeTask out = emit_unit();
    if (builder_.last() >= first) emit_.depend(first, gathered);
    // DeepSpeed ZeRO-3's parameters beyond its prefetch window arrive while the unit runs; it ends after them.
    const MaybeTask tail = sharded_.take_tail();
    if (builder_.last() >= first) emit_.depend(builder_.last(), tail);
    if (backward) {
      sharded_.reduce(emit_, units[i], emit_.last_compute());
    } else {
      sharded_.release(emit_, units[i]);
    }
    return out;
  }

  Bytes layer_saved_bytes(int layer) {
    const TransformerLayerLowering lowering(emit_, layer);
    return lowering.saved_bytes(lowering.save());
  }

  void forward(const ScheduleStep& step, MaybeTask input, std::vector<ParamUse>* params) {
    MaybeTask x = input;
    UnitPass pass = unit_pass(StepKind::kForward, {}, params);
    const auto units = sharded_.units(step.chunk);
    // This step's offload copies in order; those whose window has closed wait for the next unit's first task (the
    // last window, at the chunk's last decoder layer, binds only where a unit follows: the head, on the last chunk).
    const std::vector<int> windows = offload_windows(ctx_, units);
    std::vector<MaybeTask> copies;
    std::size_t waiting = 0;  // copies[waiting..] are not yet waited for
    int decoder_index = -1;
    for (std::size_t i = 0; i < units.size(); ++i) {
      const ParamUnit& u = units[i];
      const PositionScope at = wiring_.enter({step.microbatch, step.chunk, u.layer, Phase::kForward});
      const TaskId first = builder_.last() + 1;
      x = run_unit(units, i, false, [&] { return unit_body(pass, u, x); });
      if (u.layer >= 0 && builder_.last() >= first) layer_spans_.push_back({first, builder_.last()});
      if (offloaded(ctx_, units, i)) {
        // The layer's saved activations are copied to the host once it has run, and their GPU memory freed.
        const Bytes saved = layer_saved_bytes(u.layer);
        const MaybeTask copy = emit_.host_op("activation_offload", Stream::kDeviceToHost,
                                             {HostOpShape::Kind::kCopyToHost, saved}, {x});
        builder_.free_at_end(copy.task(), MemoryKind::kActivations, saved);
        offload_copy_[{step.microbatch, step.chunk, static_cast<int>(i)}] = copy;
        copies.push_back(copy);
      }
      if (builder_.last() >= first) {
        for (; waiting < copies.size() && windows[waiting] <= decoder_index; ++waiting) {
          emit_.depend(first, copies[waiting]);
        }
      }
      if (unit_kind(u, ctx_.model) == UnitKind::kDecoderLayer) ++decoder_index;
    }
    if (is_last(step.chunk)) loss_[static_cast<std::size_t>(step.microbatch)] = x;
    const PositionScope at = wiring_.enter({step.microbatch, step.chunk, -1, Phase::kForward});
    emit_fp8_amax_update(emit_, layers_in(units), false, emit_.last_compute());
    if (!is_last(step.chunk)) wiring_.send(step.chunk, true, x, step.microbatch);
  }

  void backward(const ScheduleStep& step, MaybeTask input, std::vector<ParamUse>* params) {
    MaybeTask g = input;
    UnitPass pass = unit_pass(StepKind::kBackward, loss_of(step), params);
    const auto units = sharded_.units(step.chunk);
    // Offloaded activations come back one layer ahead: layer i's copy is issued as layer i + 1's backward starts.
    std::vector<MaybeTask> reload(units.size());
    const auto fetch = [&](std::size_t i) {
      if (!offloaded(ctx_, units, i) || reload[i].emitted()) return;
      const PositionScope at = wiring_.enter({step.microbatch, step.chunk, units[i].layer, Phase::kBackwardInput});
      const Bytes saved = layer_saved_bytes(units[i].layer);
      // The copy back waits for the copy out: with few layers per chunk the backward can reach a layer whose
      // activations are still on their way to the host.
      const auto out = offload_copy_.find({step.microbatch, step.chunk, static_cast<int>(i)});
      const MaybeTask copied = out == offload_copy_.end() ? MaybeTask() : out->second;
      reload[i] = emit_.host_op("activation_reload", Stream::kHostToDevice, {HostOpShape::Kind::kCopyToDevice, saved},
                                {emit_.last_compute(), copied});
      emit_.allocate(reload[i], MemoryKind::kActivations, saved);
    };
    {
      // Zero-bubble steps leave the weight gradients to a later kWeight step.
      const WeightGradScope deferred(emit_, step.weight_deferred ? WeightGradMode::kSkip : emit_.weight_grad_mode());
      for (std::size_t i = units.size(); i-- > 0;) {
        const ParamUnit& u = units[i];
        fetch(i);
        if (i > 0) fetch(i - 1);
        const PositionScope at = wiring_.enter({step.microbatch, step.chunk, u.layer, Phase::kBackwardInput});
        const TaskId first = builder_.last() + 1;
        g = run_unit(units, i, true, [&] { return unit_body(pass, u, g); });
        if (builder_.last() >= first) emit_.depend(first, reload[i]);
        if (u.layer >= 0 && builder_.last() >= first) layer_spans_.push_back({first, builder_.last()});
      }
    }
    const PositionScope at = wiring_.enter({step.microbatch, step.chunk, -1, Phase::kBackwardInput});
    emit_fp8_amax_update(emit_, layers_in(units), true, emit_.last_compute());
    if (!ctx_.layout.holds_embedding(stage_, step.chunk)) wiring_.send(step.chunk, false, g, step.microbatch);
    if (params) dp_.after_backward_step(emit_, step.chunk, *params);
  }

  // The weight-gradient pass W of a zero-bubble schedule: the same backward code, keeping only its
  // kBackwardWeight tasks (their saved inputs are freed here, which is why W holds memory until it runs).
  // Its head starts from no loss task: B, which runs first, has waited for it.
  void weight_gradients(const ScheduleStep& step, std::vector<ParamUse>* params) {
    UnitPass pass = unit_pass(StepKind::kWeight, {}, params);
    const auto units = sharded_.units(step.chunk);
    const WeightGradScope only(emit_, WeightGradMode::kOnly);
    MaybeTask g;
    for (std::size_t i = units.size(); i-- > 0;) {
      const PositionScope at = wiring_.enter({step.microbatch, step.chunk, units[i].layer, Phase::kBackwardInput});
      g = unit_body(pass, units[i], g);
    }
  }

  // What one step carries from unit to unit of its chunk.
  struct UnitPass {
    StepKind kind;                  // kForward, kBackward (B, or the whole backward) or kWeight (a zero-bubble W)
    MaybeTask loss;                 // kBackward: the step's loss, which the head's backward starts from
    std::vector<ParamUse>* params;  // where the units record their parameters' uses (none: not recorded)
    EmbeddingHeadLowering edges;
    std::optional<PytorchStepLowering> eager;  // the eager frameworks' bodies, which replace Megatron-Core's
    std::vector<MaybeTask> mtp;     // per multi-token prediction depth: its output forward, its output's gradient back
  };

  UnitPass unit_pass(StepKind kind, MaybeTask loss, std::vector<ParamUse>* params) {
    UnitPass pass{kind, loss, params, EmbeddingHeadLowering(emit_), std::nullopt,
                  std::vector<MaybeTask>(static_cast<std::size_t>(ctx_.model.mtp_num_layers))};
    if (pytorch()) pass.eager.emplace(emit_);
    return pass;
  }

  // The one dispatch over unit kinds: emits unit `u`'s body in `pass` after `in` (the hidden state forward, its
  // gradient backward) and returns what the next unit reads. Every pass comes here, so a new kind is one more case
  // (-Wswitch names a kind left out). A W pass runs the backward bodies; the emitter keeps their weight gradients.
  MaybeTask unit_body(UnitPass& pass, const ParamUnit& u, MaybeTask in) {
    const bool forward = pass.kind == StepKind::kForward;
    PytorchStepLowering* eager = pass.eager ? &*pass.eager : nullptr;
    switch (unit_kind(u, ctx_.model)) {
      case UnitKind::kEmbedding:
        if (eager) return forward ? eager->embedding_forward(in) : eager->embedding_backward(in);
        return forward ? pass.edges.embedding_forward(in, pass.params) : pass.edges.embedding_backward(in, pass.params);
      case UnitKind::kDecoderLayer: {
        if (eager) return forward ? eager->layer_forward(in) : eager->layer_backward(in);
        TransformerLayerLowering layer(emit_, u.layer);
        return forward ? layer.forward(in, layer.save(), pass.params) : layer.backward(in, pass.params);
      }
      case UnitKind::kMtpDepth:  // Megatron-Core's alone: the scenario validator refuses it to other frameworks
        return forward ? mtp_forward(u.layer, in, pass.mtp, pass.params)
                       : mtp_backward(u.layer, in, pass.mtp, pass.params);
      case UnitKind::kHead:
        if (eager) return forward ? eager->head_forward(in) : eager->head_backward(pass.loss);
        return forward ? head_forward(pass.edges, in, pass.mtp, pass.params)
                       : head_backward(pass.edges, pass.loss, pass.mtp, pass.params);
    }
    return in;  // not reached: every kind returns above
  }

  // The head unit: the main final norm, LM head and loss, then each multi-token prediction depth's pass through
  // the shared head (Megatron-Core process_mtp_loss); the loss of the step is the last of them.
  MaybeTask head_forward(EmbeddingHeadLowering& edges, MaybeTask x, const std::vector<MaybeTask>& mtp_out,
                         std::vector<ParamUse>* params) {
    const MaybeTask main = edges.head_forward(x, params);
    MaybeTask loss = main;
    for (const MaybeTask& out : mtp_out) loss = edges.head_forward(out, params, false);
    if (!mtp_out.empty()) emit_.depend(loss, main);
    return loss;
  }

  // The head unit's backward: the main loss and head, then each depth's; `mtp_grad` receives the gradient of each
  // depth's output. Returns the gradient of the main hidden state from the main head.
  MaybeTask head_backward(EmbeddingHeadLowering& edges, MaybeTask loss, std::vector<MaybeTask>& mtp_grad,
                          std::vector<ParamUse>* params) {
    const MaybeTask g = edges.head_backward(loss, params);
    for (std::size_t d = mtp_grad.size(); d-- > 0;) mtp_grad[d] = edges.head_backward(loss, params, false);
    return g;
  }

  // A multi-token prediction depth's forward: it reads the previous depth's output (the main hidden state `x` for
  // depth 0) and leaves its own in `mtp_out`; the main hidden state passes on to the head unchanged.
  MaybeTask mtp_forward(int layer, MaybeTask x, std::vector<MaybeTask>& mtp_out, std::vector<ParamUse>* params) {
    const auto d = static_cast<std::size_t>(layer - ctx_.model.num_layers);
    mtp_out[d] = MtpLowering(emit_, static_cast<int>(d)).forward(d == 0 ? x : mtp_out[d - 1],
                                                                 save_policy(ctx_.training), params);
    return x;
  }

  // A multi-token prediction depth's backward from the gradient of its output (`mtp_grad[d]`). The gradient of
  // its input is summed by autograd (one add) into the previous depth's output gradient, or for depth 0 into the
  // main hidden state's `g`; deeper depths pass `g` on.
  MaybeTask mtp_backward(int layer, MaybeTask g, std::vector<MaybeTask>& mtp_grad, std::vector<ParamUse>* params) {
    const auto d = static_cast<std::size_t>(layer - ctx_.model.num_layers);
    const MaybeTask input_grad = MtpLowering(emit_, static_cast<int>(d)).backward(mtp_grad[d], params);
    MaybeTask& into = d == 0 ? g : mtp_grad[d - 1];
    into = emit_.elementwise("mtp_grad_sum", 2 * hidden_bytes_, hidden_bytes_, {into, input_grad});
    return g;
  }

  static int layers_in(const std::vector<ParamUnit>& units) {
    return static_cast<int>(std::count_if(units.begin(), units.end(), [](const ParamUnit& u) { return u.layer >= 0; }));
  }

  // Workspace, NCCL buffers for each communicator this rank belongs to, and the framework's fixed overhead.
  Bytes other_memory(const MemoryParams& memory) const {
    int communicators = 0;
    for (GroupKind kind : {GroupKind::kTp, GroupKind::kDp, GroupKind::kModelParallel}) {
      if (ctx_.placement(kind, stage_).size > 1) ++communicators;
    }
    if (ctx_.plan.pp > 1) communicators += 2;  // point-to-point with the previous and the next stage
    // PyTorch's max_memory_allocated, which the pytorch framework's figures are held against, counts the caching
    // allocator's tensors (cuBLAS workspaces included) but not the CUDA context.
    if (ctx_.training.framework == Framework::kPytorch) return memory.workspace;
    return memory.workspace + communicators * memory.nccl_buffer_per_communicator + memory.framework_overhead;
  }

  const LoweringContext& ctx_;
  int stage_;
  ProgramBuilder builder_;
  Emitter emit_;
  DataParallelLowering dp_;
  ShardedParamsLowering sharded_;
  PipelineWiring wiring_;
  Bytes hidden_bytes_ = 0;
  std::vector<LayerSpan> layer_spans_;  // the current step's layers, for a merged slot's issue order
  std::vector<MaybeTask> loss_;           // per micro-batch: the last task of its forward through the head
  std::map<std::array<int, 3>, MaybeTask> offload_copy_;  // (micro-batch, chunk, unit): its activations' copy to host
  std::vector<ParamUse> first_uses_;
  std::vector<ParamUse> grad_ready_;
  std::vector<ParamUse> step_grads_;  // gradients of a backward step that is not the chunk's last
};

}  // namespace

WorkloadGraph lower(const Job& job, const MemoryParams& memory) {
  const LoweringContext ctx(job);
  WorkloadGraph graph;
  declare_vocabulary(graph);
  for (int stage = 0; stage < job.plan().pp; ++stage) {
    StageLowering lowering(ctx, stage);
    graph.programs.push_back(lowering.run(memory));
  }
  return graph;
}

WorkloadGraph lower(const Scenario& scenario, const MemoryParams& memory) { return lower(resolve(scenario), memory); }

}  // namespace orrery
