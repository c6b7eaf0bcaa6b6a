#include "sim/search/plan_bounds.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include <map>
#include <utility>

#include "models/model_flops.h"
#include "models/param_count.h"
#include "sim/durations.h"
#include "sim/engine/engine.h"
#include "sim/lower/context.h"
#include "sim/lower/embedding_head.h"
#include "sim/lower/transformer_layer.h"
#include "sim/pipeline_layout.h"
#include "sim/pipeline_schedule.h"
#include "sim/task_vocabulary.h"
#include "sim/predict.h"

namespace orrery {

namespace {

// Parameter elements one rank of the plan holds of `tensors` before ZeRO: the TP-sharded ones over tp, the experts
// over ep x etp; replicated tensors (norms) are left out, as a lower bound may.
struct ShardedElements {
  double dense = 0, expert = 0;
};
void add_sharded(ShardedElements& out, const std::vector<ParamTensor>& tensors, const ParallelPlan& p) {
  for (const ParamTensor& t : tensors) {
    if (t.sharding == ParamSharding::kExpert) {
      out.expert += static_cast<double>(t.elements) / (p.ep * p.etp);
    } else if (t.sharding == ParamSharding::kTensorParallel) {
      out.dense += static_cast<double>(t.elements) / p.tp;
    }
  }
}

// Forward GEMM FLOPs per token of layers [first, first + count).
double layers_flops(const ModelSpec& m, int first, int count) {
  double f = 0;
  for (int l = first; l < first + count; ++l) f += layer_gemm_flops_per_token(m, l);
  return f;
}

// One micro-batch of one layer on the compute stream.
struct LayerCost {
  Seconds forward = 0, backward = 0, backward_input = 0;
  Bytes saved = 0;  // activations its forward leaves allocated
};


// Seconds from the first compute task's start to the last one's end, of the forward tasks and of the others, when
// `program` runs alone on one rank: every rendezvous a group of one, no resource model, no host timeline, so each
// task takes its base duration and waits only for its own predecessors. The compute stream runs its tasks in
// order, so in the full run a unit's compute tasks cannot span less: its communication's waits (an expert
// all-to-all, a ring step, a TP all-reduce the next GEMM reads) only grow there, and no other unit's compute falls
// between two of its own where the lowering emits a unit's pass contiguously (PlanBounds' conditions).
std::pair<Seconds, Seconds> compute_windows(const Program& program, const CostModels& models) {
  WorkloadGraph g;
  declare_vocabulary(g);
  g.programs.push_back(program);
  const Durations d = price_graph(g, models);
  Instantiation solo;
  solo.instances = {{0, 0, 1, 1.0}};
  solo.group_kinds = static_cast<int>(g.group_kinds.size());
  for (int k = 0; k < solo.group_kinds; ++k) {
    solo.group_of.push_back(k);
    solo.group_size.push_back(1);
  }
  const RunResult r = run_engine(g, solo, d);
  Nanoseconds first[2] = {INT64_MAX, INT64_MAX}, last[2] = {0, 0};
  for (std::size_t t = 0; t < program.tasks.size(); ++t) {
    const Task& task = program.tasks[t];
    if (!is_compute(task)) continue;
    const int side = task.phase == Phase::kForward ? 0 : 1;
    first[side] = std::min(first[side], r.instances[0].timings[t].start);
    last[side] = std::max(last[side], r.instances[0].timings[t].end);
  }
  const auto span = [&](int side) { return last[side] > first[side] ? static_cast<double>(last[side] - first[side]) * 1e-9 : 0.0; };
  return {span(0), span(1)};
}

// Prices the compute-stream tasks of a scratch program that `emit_unit` fills for one micro-batch; with `windows`,
// a pass's cost is at least its compute window (compute_windows).
template <class F>
LayerCost probe(const LoweringContext& ctx, const CostModels& models, int layer, int microbatch, bool windows,
                F&& emit_unit) {
  ProgramBuilder builder = program_builder(0);
  Emitter emit(ctx, builder, 0);
  {
    const PositionScope at(emit, {microbatch, 0, layer, Phase::kForward});
    emit_unit(emit);
  }
  const Program p = builder.finish();
  LayerCost c;
  for (const Task& t : p.tasks) {
    if (t.phase == Phase::kForward) {
      c.saved += (t.start_kind == MemoryKind::kActivations ? t.start_bytes : 0) +
                 (t.end_kind == MemoryKind::kActivations ? t.end_bytes : 0);
    }
    if (!is_compute(t)) continue;
    // Block recompute runs a layer again only in the chunk's first recompute_num_layers layers, and the probe's one
    // layer stands for all: leave its recompute out so that the cost stays below every layer's.
    if (t.phase == Phase::kRecompute && ctx.training.recompute_method == RecomputeMethod::kBlock) continue;
    const Seconds d = op_duration(p.ops[static_cast<std::size_t>(t.op)], models);
    if (t.phase == Phase::kForward) {
      c.forward += d;
    } else {
      c.backward += d;
      if (t.phase != Phase::kBackwardWeight) c.backward_input += d;
    }
  }
  if (windows) {
    const auto [forward, backward] = compute_windows(p, models);
    c.forward = std::max(c.forward, forward);
    c.backward = std::max(c.backward, backward);
  }
  return c;
}

LayerCost probe_layer(const LoweringContext& ctx, const CostModels& models, int layer, int microbatch, bool windows) {
  return probe(ctx, models, layer, microbatch, windows, [&](Emitter& emit) {
    TransformerLayerLowering lowering(emit, layer);
    const MaybeTask out = lowering.forward({}, save_policy(ctx.training));
    const PhaseScope backward(emit, Phase::kBackwardInput);
    lowering.backward(out);
  });
}

// Final norm, LM head and loss, forward and backward: on the last stage every micro-batch.
LayerCost probe_head(const LoweringContext& ctx, const CostModels& models, int microbatch) {
  return probe(ctx, models, -1, microbatch, false, [&](Emitter& emit) {
    EmbeddingHeadLowering head(emit);
    const MaybeTask loss = head.head_forward({}, nullptr);
    const PhaseScope backward(emit, Phase::kBackwardInput);
    head.head_backward(loss, nullptr);
  });
}

}  // namespace

PlanBounds plan_bounds(const Job& job, const CostParams& params) {
  const Scenario& s = job.scenario();
  const ParallelPlan& p = s.parallel;
  LoweringContext ctx(job);
  const DefaultCostModels models(s.cluster, params);
  // Probed as micro-batch 1: not the first, whose forward also casts FP8 weights once per iteration; with packed
  // documents, at the least attention work any micro-batch has, so the bound holds for every one.
  double least = 1.0;
  for (double f : ctx.packed_fraction) least = std::min(least, f);
  ctx.packed_fraction.assign(2, least);
  const int probe_mb = 1;
  // Where the lowering emits each layer's forward and its backward as one contiguous run of compute tasks, a
  // layer's compute window (compute_windows) bounds it: Megatron's 1F1B, interleaved or not, and GPipe, without
  // the schedules and switches that interleave two passes or move weight gradients away (ZB-H1, DualPipe(V), the
  // expert-parallel overlap, delayed weight gradients) and without block recompute (its probe layer stands for
  // layers that do not recompute).
  const bool windows = (p.schedule == Schedule::k1F1B || p.schedule == Schedule::kGPipe) &&
                       !p.overlap_moe_expert_parallel_comm && !p.delay_wgrad_compute &&
                       s.training.framework == Framework::kMegatron &&
                       !(s.training.recompute == Recompute::kFull && s.training.recompute_method == RecomputeMethod::kBlock);
  std::map<std::pair<bool, std::int64_t>, LayerCost> probes;  // by (MoE layer, attention window)
  const auto cost = [&](int layer) -> const LayerCost& {
    const auto key = std::make_pair(s.model.layer_is_moe(layer), s.model.layer_window(layer));
    auto it = probes.find(key);
    if (it == probes.end()) it = probes.emplace(key, probe_layer(ctx, models.models(), layer, probe_mb, windows)).first;
    return it->second;
  };
  const PipelineLayout& layout = ctx.layout;
  const double m = ctx.microbatches;
  // DualPipe runs half the micro-batches through each of a rank's two chunks.
  const double per_chunk = layout.mirrored ? m / 2 : m;
  // The rank that runs the LM head: the last, or DualPipeV's first (its chunk 1 ends the V).
  const int head_stage = layout.v_shape ? 0 : p.pp - 1;
  double busiest = 0, last_stage = 0, last_stage_weight = 0, lightest_fwd = std::numeric_limits<double>::infinity();
  double lightest_bwd = lightest_fwd;
  std::vector<Bytes> chunk_saved(static_cast<std::size_t>(layout.vpp), 0);  // stage 0, per micro-batch
  for (int stage = 0; stage < p.pp; ++stage) {
    double work = 0;
    for (int chunk = 0; chunk < layout.vpp; ++chunk) {
      double fwd = 0, bwd_in = 0;
      const int first = layout.first_layer_of(stage, chunk);
      for (int l = first; l < first + layout.layers_in(stage, chunk); ++l) {
        const LayerCost& c = cost(l);
        work += per_chunk * (c.forward + c.backward);
        fwd += c.forward;
        bwd_in += c.backward_input;
        if (stage == 0) chunk_saved[static_cast<std::size_t>(chunk)] += c.saved;
        if (stage == p.pp - 1) last_stage_weight += c.backward - c.backward_input;
      }
      lightest_fwd = std::min(lightest_fwd, fwd);
      lightest_bwd = std::min(lightest_bwd, bwd_in);
    }
    busiest = std::max(busiest, work);
    if (stage == head_stage) last_stage = work;
  }
  // The head's stage also runs the LM head and loss for every micro-batch (DualPipe: for each direction's half).
  const LayerCost head = probe_head(ctx, models.models(), probe_mb);
  last_stage += per_chunk * (head.forward + head.backward);
  busiest = std::max(busiest, last_stage);
  // ZB-H1's last stage keeps p - 1 weight-gradient passes (layers and head) for after its last B, while that
  // gradient crosses the other stages: they leave the critical path.
  const double deferred = p.schedule == Schedule::kZbH1
                              ? (p.pp - 1) * (last_stage_weight + head.backward - head.backward_input)
                              : 0;
  PlanBounds b;
  // DualPipe fills one direction's pipeline with the other direction's work, DualPipeV the way down's with the way
  // back's: only the work bounds them.
  b.time = is_dualpipe(p.schedule) ? busiest
                           : std::max(busiest, (p.pp - 1) * (lightest_fwd + lightest_bwd) + last_stage - deferred);
  // The analytical bound assumes the default GEMM model; a measured profile may be faster than it.
  if (!params.profile) b.time = std::max(b.time, iteration_time_lower_bound(job, params));
  // Stage 0's forwards before its first backward all hold their activations (none are freed before it).
  Bytes activations = 0, before_last = 0;
  int last_chunk = 0;
  if (s.training.cpu_offloading_num_layers == 0) {
    for (const ScheduleStep& step : pipeline_steps(p.schedule, p.pp, p.vpp, 0, ctx.microbatches)) {
      if (step.kind != StepKind::kForward) break;
      before_last = activations;
      activations += chunk_saved[static_cast<std::size_t>(step.chunk)];
      last_chunk = step.chunk;
    }
  }
  b.activations = activations;
  const bool layer_units = s.training.framework == Framework::kMegatron || s.training.framework == Framework::kFsdp2;
  if (p.zero_stage >= 3 && layer_units && s.training.cpu_offloading_num_layers == 0) {
    // ZeRO-3 (Megatron-FSDP, FSDP2: one unit per layer) gathers a layer's parameters before its forward: while the
    // last forward before the first backward computes a layer, the earlier forwards' activations and that layer's
    // gathered parameters (beyond the rank's own shard) are all live. The smallest layer of that chunk bounds it.
    double gathered = std::numeric_limits<double>::infinity();
    const int first = layout.first_layer_of(0, last_chunk);
    const double d = job.data_parallel_ranks(), e = job.expert_data_parallel_ranks();
    for (int l = first; l < first + layout.layers_in(0, last_chunk); ++l) {
      ShardedElements layer;
      add_sharded(layer, layer_param_tensors(s.model, l), p);
      gathered = std::min(gathered, static_cast<double>(job.state_bytes().param) *
                                        (layer.dense * (1 - 1 / d) + layer.expert * (1 - 1 / e)));
    }
    if (std::isfinite(gathered)) b.activations = std::max(b.activations, before_last + static_cast<Bytes>(gathered));
  }
  return b;
}

namespace {

// Bytes of weights, gradients and optimizer state of `stage`'s transformer layers (and, with `embedding`, of the
// word embedding stage 0 holds, at the model's unpadded vocabulary), at the job's bytes per element.
double stage_state_lower_bound(const Job& job, int stage, bool embedding) {
  const Scenario& s = job.scenario();
  const ParallelPlan& p = s.parallel;
  const PipelineLayout& layout = job.layout();
  ShardedElements held;
  const auto add = [&](const std::vector<ParamTensor>& tensors) { add_sharded(held, tensors, p); };
  for (int chunk = 0; chunk < layout.vpp; ++chunk) {
    const int first = layout.first_layer_of(stage, chunk);
    for (int l = first; l < first + layout.layers_in(stage, chunk); ++l) add(layer_param_tensors(s.model, l));
  }
  if (embedding) add(embedding_param_tensors(s.model, 0));
  const double d = job.data_parallel_ranks(), e = job.expert_data_parallel_ranks();
  // The job's own bytes per element (Megatron-LM's distributed-optimizer table, sim/job/job.h state_bytes).
  const StateBytes& bytes = job.state_bytes();
  const double dense = held.dense, expert = held.expert;
  const auto b = [](Bytes v) { return static_cast<double>(v); };
  const double weights =
      b(bytes.resident_param) * (dense / (p.zero_stage >= 3 ? d : 1) + expert / (p.zero_stage >= 3 ? e : 1));
  const double grads = b(bytes.grad) * (dense / (p.zero_stage >= 2 ? d : 1) + expert / (p.zero_stage >= 2 ? e : 1));
  const double optimizer =
      b(bytes.optimizer) * (dense / (p.zero_stage >= 1 ? d : 1) + expert / (p.zero_stage >= 1 ? e : 1));
  return weights + grads + (s.training.optimizer_cpu_offload ? 0 : optimizer);
}

}  // namespace

Bytes static_memory_lower_bound(const Job& job) {
  double lightest = std::numeric_limits<double>::infinity();
  for (int stage = 0; stage < job.plan().pp; ++stage) lightest = std::min(lightest, stage_state_lower_bound(job, stage, false));
  return static_cast<Bytes>(lightest);
}

Bytes first_stage_state_lower_bound(const Job& job) {
  return static_cast<Bytes>(stage_state_lower_bound(job, 0, true));
}

Seconds iteration_time_lower_bound(const Job& job, const CostParams& params) {
  const Scenario& s = job.scenario();
  const ParallelPlan& p = s.parallel;
  const TrainingSpec& t = s.training;
  const GpuSpec& gpu = s.cluster.gpu;
  // The fastest GEMM the model prices: some GEMMs stay in BF16 under FP8, so take the faster of the two rates.
  double rate = gpu.peak_for(t.precision == Precision::kFp32 ? DType::kFp32 : t.precision == Precision::kFp16
                                                                               ? DType::kFp16
                                                                               : DType::kBf16) *
                params.compute.gemm_peak_fraction;
  if (t.precision == Precision::kFp8) rate = std::max(rate, gpu.peak_fp8 * params.compute.gemm_fp8_peak_fraction);
  // Forward, backward (2x), and with full recompute of every layer a second forward (block recompute, of some
  // layers only, keeps the bound at 3: a bound must not exceed the time).
  const double passes = t.recompute == Recompute::kFull && t.recompute_method == RecomputeMethod::kUniform ? 4.0 : 3.0;

  const double total = passes * layers_flops(s.model, 0, s.model.num_layers) * job.tokens_per_iteration();
  const Seconds average = total / s.cluster.num_gpus / rate;

  // Per micro-batch and GPU: the tokens of one micro-batch, split over TP and CP.
  const double mb_tokens = static_cast<double>(job.microbatch_tokens()) / (p.tp * p.cp);
  const PipelineLayout& layout = job.layout();
  double lightest_stage = std::numeric_limits<double>::infinity(), lightest_chunk = lightest_stage;
  for (int stage = 0; stage < p.pp; ++stage) {
    double stage_flops = 0;
    for (int chunk = 0; chunk < layout.vpp; ++chunk) {
      const double f = layers_flops(s.model, layout.first_layer_of(stage, chunk), layout.layers_in(stage, chunk));
      stage_flops += f;
      lightest_chunk = std::min(lightest_chunk, f);
    }
    lightest_stage = std::min(lightest_stage, stage_flops);
  }
  const double forward_stage = lightest_stage * mb_tokens / rate;   // one micro-batch through the lightest stage
  const double forward_chunk = lightest_chunk * mb_tokens / rate;   // ... through the lightest virtual stage
  // DualPipe: each chunk runs half the micro-batches, and the other direction's work fills the pipeline; DualPipeV:
  // all of them through both chunks.
  const double m = layout.mirrored ? job.microbatches() / 2.0 : job.microbatches();
  if (is_dualpipe(p.schedule)) return std::max(average, m * passes * forward_stage);
  if (p.schedule == Schedule::kZbH1) {
    // The last stage runs all but p - 1 of its weight-gradient passes (one forward's GEMM FLOPs each) before its
    // last input-gradient pass.
    const int last = p.pp - 1;
    const double forward_last =
        layers_flops(s.model, layout.first_layer_of(last, 0), layout.layers_in(last, 0)) * mb_tokens / rate;
    const double before_last_b = std::max(0.0, m * passes - (p.pp - 1)) * forward_last;
    return std::max(average, (p.pp - 1) * 2 * forward_chunk + before_last_b);
  }
  const Seconds pipeline = (p.pp - 1) * 2 * forward_chunk + m * passes * forward_stage;
  return std::max(average, pipeline);
}

}  // namespace orrery
