#include "sim/report.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>

#include "models/model_flops.h"

namespace orrery {

Seconds Breakdown::total() const {
  return compute + exposed_tp_comm + exposed_cp_comm + exposed_ep_comm + exposed_pp_comm + exposed_dp_comm + bubble +
         optimizer + other + host;
}

namespace {

// Activity classes in priority order: the first active one names each instant. Waiting for another pipeline
// stage outranks a data-parallel transfer that merely runs meanwhile (the stage is idle because of the pipeline).
// Host transfers of activation offload, when they hold compute up, count as "other" (no contract key of their own).
enum Activity : int {
  kCompute, kOptimizerCompute, kTp, kCp, kEp, kPp, kPipelineWait, kOffload, kDp, kOptimizerComm, kHost, kCount
};

// The activity of a group kind's communication, from the category the graph declares for it (anything else, and
// tasks of no group, count as data-parallel-side traffic).
int category_activity(const std::string& category) {
  if (category == "tp") return kTp;
  if (category == "cp") return kCp;
  if (category == "ep") return kEp;
  if (category == "pp") return kPp;
  return kDp;
}

int comm_activity(const Task& t, const std::vector<int>& activity_of_kind) {
  if (t.phase == Phase::kOptimizer) return kOptimizerComm;
  if (t.kind == TaskKind::kHostOp) return kOffload;
  return activity_of_kind[t.group];
}

double op_flops(const Op& op) {
  if (const auto* g = std::get_if<GemmShape>(&op)) return g->flops();
  if (const auto* a = std::get_if<AttentionShape>(&op)) return a->model_flops();
  return 0.0;
}

}  // namespace

Breakdown breakdown_of(const WorkloadGraph& graph, const Program& program, const InstanceRun& run, Nanoseconds until) {
  std::vector<int> activity_of_kind;
  for (const GroupKindInfo& k : graph.group_kinds) activity_of_kind.push_back(category_activity(k.category));
  struct Edge {
    Nanoseconds time;
    int activity;
    int delta;
  };
  std::vector<Edge> edges;
  auto add = [&](Nanoseconds from, Nanoseconds to, int activity) {
    if (to <= from) return;
    edges.push_back({from, activity, +1});
    edges.push_back({to, activity, -1});
  };
  for (std::size_t i = 0; i < program.tasks.size(); ++i) {
    const Task& t = program.tasks[i];
    const TaskTiming& tm = run.timings[i];
    if (t.kind == TaskKind::kCommCopy) {
      add(tm.start, tm.end, kDp);  // a data-parallel collective's copies (sim/lower/sharded_params.h)
    } else if (graph.streams[t.stream].compute) {
      add(tm.start, tm.end, t.phase == Phase::kOptimizer ? kOptimizerCompute : kCompute);
    } else if (const GroupKindInfo& kind = graph.group_kinds[t.group]; kind.spans_stages) {
      // Waiting for another stage is pipeline bubble; a send waiting for its receiver occupies only its own stream.
      if (!(kind.pair >= 0 && kind.sends)) add(tm.ready, tm.start, kPipelineWait);
      add(tm.start, tm.end, comm_activity(t, activity_of_kind));
    } else {
      add(tm.ready, tm.end, comm_activity(t, activity_of_kind));  // includes waiting for slower members at the rendezvous
    }
  }
  // Waiting for the host: from the end of the compute task before to the issue of a compute task issued later.
  std::vector<std::size_t> compute;
  for (std::size_t i = 0; i < program.tasks.size(); ++i) {
    if (graph.streams[program.tasks[i].stream].compute) compute.push_back(i);
  }
  std::sort(compute.begin(), compute.end(), [&](std::size_t a, std::size_t c) { return run.timings[a].start < run.timings[c].start; });
  Nanoseconds previous_end = 0;
  for (std::size_t i : compute) {
    const TaskTiming& tm = run.timings[i];
    add(previous_end, std::min(tm.issued, tm.start), kHost);
    previous_end = std::max(previous_end, tm.end);
  }
  std::sort(edges.begin(), edges.end(), [](const Edge& a, const Edge& b) { return a.time < b.time; });
  std::array<int, kCount> active{};
  std::array<Nanoseconds, kCount + 1> spent{};  // last slot: idle
  Nanoseconds now = 0;
  std::size_t e = 0;
  while (now < until) {
    while (e < edges.size() && edges[e].time <= now) {
      active[static_cast<std::size_t>(edges[e].activity)] += edges[e].delta;
      ++e;
    }
    const Nanoseconds next = e < edges.size() ? std::min(edges[e].time, until) : until;
    int which = kCount;
    for (int a = 0; a < kCount; ++a) {
      if (active[static_cast<std::size_t>(a)] > 0) {
        which = a;
        break;
      }
    }
    spent[static_cast<std::size_t>(which)] += next - now;
    now = next;
  }
  Breakdown b;
  b.compute = from_nanos(spent[kCompute]);
  b.optimizer = from_nanos(spent[kOptimizerCompute] + spent[kOptimizerComm]);
  b.exposed_tp_comm = from_nanos(spent[kTp]);
  b.exposed_cp_comm = from_nanos(spent[kCp]);
  b.exposed_ep_comm = from_nanos(spent[kEp]);
  b.exposed_pp_comm = from_nanos(spent[kPp]);
  b.exposed_dp_comm = from_nanos(spent[kDp]);
  b.bubble = from_nanos(spent[kPipelineWait]);
  b.other = from_nanos(spent[kCount] + spent[kOffload]);
  b.host = from_nanos(spent[kHost]);
  return b;
}


namespace {

// The dense peak at the job's GEMM precision, per GPU: the mean over the job's ranks, each on its stage's GPU.
FlopsPerSecond mean_peak_flops(const Job& job) {
  if (job.pools().stage_pool.empty()) return job.cluster().gpu.peak_for(job.gemm_dtype());
  double sum = 0;
  for (int stage = 0; stage < job.plan().pp; ++stage) sum += job.stage_cluster(stage).gpu.peak_for(job.gemm_dtype());
  return sum / job.plan().pp;  // every stage holds ranks_per_stage ranks
}

// FLOPs of one rank of each program per iteration (GEMMs and attention, recompute included).
std::vector<double> program_flops(const WorkloadGraph& graph) {
  std::vector<double> out;
  for (const Program& p : graph.programs) {
    std::vector<double> per_op;
    for (const Op& op : p.ops) per_op.push_back(op_flops(op));
    double flops = 0;
    for (const Task& t : p.tasks) flops += per_op[static_cast<std::size_t>(t.op)];
    out.push_back(flops);
  }
  return out;
}

std::vector<PoolReport> pool_reports(const Job& job, const WorkloadGraph& graph, const Report& r) {
  std::vector<PoolReport> out;
  const PoolAssignment& a = job.pools();
  if (a.stage_pool.empty()) return out;
  const std::vector<double> flops = program_flops(graph);
  double total = 0;
  for (double f : flops) total += f;
  for (std::size_t i = 0; i < a.pools.size(); ++i) {
    const ClusterSpec& given = job.cluster().pools[i];
    PoolReport p;
    p.name = given.name;
    p.gpu = given.gpu.name;
    p.nic_type = to_string(given.nic_transport);
    p.num_gpus = given.num_gpus;
    p.gpus_used = a.pools[i].num_gpus;
    p.peak_flops_per_gpu = given.gpu.peak_for(job.gemm_dtype());
    p.memory_capacity = given.gpu.hbm_capacity;
    double share = 0;
    for (std::size_t stage = 0; stage < a.stage_pool.size(); ++stage) {
      if (a.stage_pool[stage] != static_cast<int>(i)) continue;
      p.stages.push_back(static_cast<int>(stage));
      p.peak_memory = std::max(p.peak_memory, r.per_stage[stage].peak);
      share += flops[stage];
    }
    // The pool's share of the model FLOPs, by its share of the graph's FLOPs (its stages' layers, head, embedding).
    if (p.gpus_used > 0 && total > 0) {
      p.mfu = r.model_flops * (share / total) / (r.iteration_time * p.gpus_used * p.peak_flops_per_gpu);
    }
    out.push_back(p);
  }
  return out;
}

}  // namespace

double graph_flops_per_iteration(const WorkloadGraph& graph, const ParallelPlan& plan) {
  double flops = 0.0;
  for (double per_rank : program_flops(graph)) flops += per_rank;
  return flops * plan.tp * plan.dp * plan.cp;
}

Report analyze(const Job& job, const WorkloadGraph& graph, const Instantiation& instances, const RunResult& run) {
  const Scenario& s = job.scenario();
  Report r;
  r.name = s.name;
  r.num_gpus = job.num_gpus();
  r.microbatches = job.microbatches();
  r.packing = job.packing();
  r.iteration_time = from_nanos(run.makespan);
  const double gpus = static_cast<double>(r.num_gpus);
  r.tokens_per_s = job.tokens_per_iteration() / r.iteration_time;
  r.tokens_per_s_per_gpu = r.tokens_per_s / gpus;
  const std::int64_t vocab = job.padded_vocab();
  const double batch = static_cast<double>(s.training.global_batch_size);
  // Attention over what each layer attends: its sliding window, and with packed documents the pairs within them.
  AttentionSpan span;
  if (r.packing) span.packed = r.packing->packed_over_full;
  r.model_flops =
      batch * training_flops_per_sequence(s.model, s.training.seq_length, vocab, AttentionFlops::kFullMatrix, span);
  const double causal_flops =
      batch * training_flops_per_sequence(s.model, s.training.seq_length, vocab, AttentionFlops::kCausalHalved, span);
  r.hardware_flops = graph_flops_per_iteration(graph, s.parallel);
  r.peak_flops_per_gpu = mean_peak_flops(job);
  const double denominator = r.iteration_time * gpus * r.peak_flops_per_gpu;
  r.model_tflops_per_gpu = to_tflops(r.model_flops / (r.iteration_time * gpus));
  r.hardware_tflops_per_gpu = to_tflops(r.hardware_flops / (r.iteration_time * gpus));
  r.mfu = r.model_flops / denominator;
  r.mfu_causal = causal_flops / denominator;
  r.hfu = r.hardware_flops / denominator;
  if (r.mfu > 1.0 || r.hfu > 1.0) {
    // Only the full-matrix convention can do this: it counts the whole causal square, about twice the q x k pairs
    // the kernels compute, so a run that attention dominates can show more than the peak.
    r.warnings.push_back(fmt::format(
        "MFU {:.1f}% and HFU {:.1f}% count the full causal attention matrix (the report contract), about twice "
        "what the kernels compute; causal-halved MFU (mfu_causal) is {:.1f}%",
        100.0 * r.mfu, 100.0 * r.hfu, 100.0 * r.mfu_causal));
  }

  // Memory: per stage, the instance with the largest peak.
  r.memory_capacity = s.cluster.gpu.hbm_capacity;
  r.per_stage.resize(graph.programs.size());
  for (std::size_t stage = 0; stage < r.per_stage.size(); ++stage) {
    r.per_stage[stage].capacity = job.stage_cluster(static_cast<int>(stage)).gpu.hbm_capacity;
    if (stage == 0 || r.per_stage[stage].capacity < r.memory_capacity) r.memory_capacity = r.per_stage[stage].capacity;
  }
  for (std::size_t i = 0; i < instances.instances.size(); ++i) {
    const int stage = instances.instances[i].program;
    const InstanceRun& ir = run.instances[i];
    StageMemory& m = r.per_stage[static_cast<std::size_t>(stage)];
    m.stage = stage;
    if (ir.peak > m.peak) {
      m.peak = ir.peak;
      m.weights = ir.at_peak[static_cast<std::size_t>(MemoryKind::kWeights)];
      m.gradients = ir.at_peak[static_cast<std::size_t>(MemoryKind::kGradients)];
      m.optimizer = ir.at_peak[static_cast<std::size_t>(MemoryKind::kOptimizer)];
      m.activations = ir.at_peak[static_cast<std::size_t>(MemoryKind::kActivations)];
      m.other = ir.at_peak[static_cast<std::size_t>(MemoryKind::kOther)];
    }
    r.peak_memory = std::max(r.peak_memory, ir.peak);
  }
  for (const StageMemory& m : r.per_stage) {
    if (m.peak > m.capacity) {
      r.warnings.push_back(fmt::format("does not fit: pipeline stage {} needs {:.1f} GiB of the GPU's {:.1f} GiB",
                                       m.stage, to_GiB(m.peak), to_GiB(m.capacity)));
    }
  }
  r.pools = pool_reports(job, graph, r);
  // Breakdown on the critical rank: the recorded instance that ends last (the lowest such index on ties).
  std::size_t critical = 0;
  Nanoseconds latest = -1;
  for (std::size_t i = 0; i < run.instances.size(); ++i) {
    if (run.instances[i].recorded && run.instances[i].end > latest) {
      latest = run.instances[i].end;
      critical = i;
    }
  }
  const Instance& ci = instances.instances[critical];
  r.critical_stage = ci.program;
  r.critical_rank = ci.representative_rank;
  r.breakdown = breakdown_of(graph, graph.programs[static_cast<std::size_t>(ci.program)], run.instances[critical], run.makespan);
  for (const std::string& w : job.warnings()) r.warnings.push_back(w);
  return r;
}

}  // namespace orrery
