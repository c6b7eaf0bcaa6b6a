// Pipeline schedules executed by the engine against their closed forms: the 1F1B bubble (p-1)/(m+p-1)
// (PipeDream-Flush; SC21 eq. 1), interleaving dividing it by vpp (SC21 Section 2.2.2), and the activation memory
// each schedule holds on the first stage, ZB-H1's bubble (p-1)(F+B-W) (Qi et al., arXiv:2401.10241, Section 3.1), and
// DualPipe's (p/2-1)(F&B+B-3W) with its 2x parameters and p+1 micro-batches in flight (arXiv:2412.19437 Table 2).
#include <catch2/catch.hpp>

#include <set>

#include "sim/instances.h"
#include "sim/report.h"
#include "test_support.h"

using namespace orrery;

namespace {

// Compute costs only GEMM FLOPs at 1 PFLOP/s; everything else (elementwise, attention, communication) is free,
// so every stage's forward and backward take the same time (the LM head of a 128-word vocabulary is negligible).
class GemmOnly final : public ComputeCostModel {
 public:
  std::string name() const override { return "gemm-only"; }
  Seconds gemm(const GemmShape& s) const override { return s.flops() / 1e15; }
  Seconds attention(const AttentionShape&) const override { return 0; }
  Seconds elementwise(const ElementwiseShape&) const override { return 0; }
  Seconds host_sync() const override { return 0; }
  Seconds host_op(const HostOpShape&) const override { return 0; }
};

class FreeNetwork final : public CollectiveCostModel {
 public:
  std::string name() const override { return "free"; }
  Seconds time(const CollectiveOp&) const override { return 0; }
};

struct Run {
  WorkloadGraph graph;
  Instantiation instances;
  Durations durations;
  RunResult result;
};

Run run(const Scenario& s) {
  Run r;
  r.graph = test::lowered(s);
  r.instances = make_instances(s.parallel, {}, Expansion::kAuto);
  GemmOnly compute;
  FreeNetwork network;
  r.durations = price_graph(r.graph, CostModels{compute, network});
  r.result = run_engine(r.graph, r.instances, r.durations);
  return r;
}

std::string pipeline(int pp, int vpp, int m, const char* schedule) {
  return std::string(R"({"model": {"preset": "gpt-sc21-1.7b", "num_hidden_layers": 8, "vocab_size": 128},
      "cluster": {"preset": "dgx-a100-80gb"}, "parallel": {"pp": )") +
         std::to_string(pp) + R"(, "vpp": )" + std::to_string(vpp) + R"(, "dp": 1, "schedule": ")" + schedule +
         R"("}, "training": {"seq_length": 1024, "micro_batch_size": 1, "global_batch_size": )" + std::to_string(m) + "}}";
}

// Seconds of one micro-batch's forward and backward GEMMs on stage `stage`.
std::pair<double, double> step_times(const Run& r, int stage) {
  const Program& p = r.graph.programs[static_cast<std::size_t>(stage)];
  double f = 0, b = 0;
  for (const Task& t : p.tasks) {
    if (t.microbatch != 0) continue;
    const double d = r.durations.op_seconds[static_cast<std::size_t>(stage)][static_cast<std::size_t>(t.op)];
    (t.phase == Phase::kForward ? f : b) += d;
  }
  return {f, b};
}

// Activation bytes micro-batch 0's forward pass leaves allocated on a stage.
Bytes forward_activations(const Program& p) {
  Bytes bytes = 0;
  for (const Task& t : p.tasks) {
    if (t.microbatch != 0 || t.phase != Phase::kForward) continue;
    if (t.start_kind == MemoryKind::kActivations) bytes += t.start_bytes;
    if (t.end_kind == MemoryKind::kActivations) bytes += t.end_bytes;
  }
  return bytes;
}

}  // namespace

TEST_CASE("1F1B with free communication has the bubble (p-1)/(m+p-1)", "[sim][schedule][engine]") {
  const int p = 4, m = 8;
  const Run r = run(test::scenario(pipeline(p, 1, m, "1f1b")));
  const auto [tf, tb] = step_times(r, 1);
  const double makespan = from_nanos(r.result.makespan);
  // Total = (m + p - 1)(tf + tb); the bubble is the part beyond m (tf + tb).
  CHECK(makespan == Approx((m + p - 1) * (tf + tb)).epsilon(0.003));
  const double bubble = (makespan - m * (tf + tb)) / makespan;
  CHECK(bubble == Approx((p - 1.0) / (m + p - 1.0)).epsilon(0.01));
}

TEST_CASE("interleaving divides the 1F1B bubble by the number of chunks", "[sim][schedule][engine]") {
  const int p = 4, v = 2, m = 8;
  const Run r = run(test::scenario(pipeline(p, v, m, "1f1b")));
  // Each chunk holds 1 layer: one (forward + backward) of the whole stage is the two chunks' work.
  auto [tf, tb] = step_times(r, 1);
  const double makespan = from_nanos(r.result.makespan);
  // SC21 Section 2.2.2: bubble time (p-1)(tf+tb)/v next to m (tf+tb) of work.
  CHECK(makespan == Approx(m * (tf + tb) + (p - 1) * (tf + tb) / v).epsilon(0.003));
}

TEST_CASE("ZB-H1's bubble is (p-1)(F+B-W), smaller than 1F1B's (p-1)(F+B+W)", "[sim][schedule][engine]") {
  const int p = 4, m = 8;
  const Run zb = run(test::scenario(pipeline(p, 1, m, "zb-h1")));
  const Run one = run(test::scenario(pipeline(p, 1, m, "1f1b")));
  // F, B (input gradients) and W (weight gradients) of one micro-batch on a middle stage.
  double f = 0, b = 0, w = 0;
  const Program& prog = zb.graph.programs[1];
  for (const Task& t : prog.tasks) {
    if (t.microbatch != 0) continue;
    const double d = zb.durations.op_seconds[1][static_cast<std::size_t>(t.op)];
    (t.phase == Phase::kForward ? f : t.phase == Phase::kBackwardWeight ? w : b) += d;
  }
  REQUIRE(w > 0);
  const double zb_makespan = from_nanos(zb.result.makespan), one_makespan = from_nanos(one.result.makespan);
  CHECK(one_makespan == Approx(m * (f + b + w) + (p - 1) * (f + b + w)).epsilon(0.003));
  CHECK(zb_makespan == Approx(m * (f + b + w) + (p - 1) * (f + b - w)).epsilon(0.003));
  CHECK(zb_makespan < one_makespan);
  // The same peak activation memory on stage 0 as 1F1B: p micro-batches in flight.
  const auto activations = [](const Run& r) {
    return r.result.instances[0].at_peak[static_cast<std::size_t>(MemoryKind::kActivations)];
  };
  CHECK(activations(zb) == activations(one));
}

TEST_CASE("DualPipe's bubble is (p/2-1)(F&B+B-3W), below ZB-H1's and 1F1B's", "[sim][schedule][engine]") {
  const int p = 4, m = 16;
  const Run dual = run(test::scenario(pipeline(p, 1, m, "dualpipe")));
  const Run zb = run(test::scenario(pipeline(p, 1, m, "zb-h1")));
  // F, B (input gradients) and W (weight gradients) of one micro-batch on stage 1 under 1F1B's split.
  double f = 0, b = 0, w = 0;
  for (const Task& t : zb.graph.programs[1].tasks) {
    if (t.microbatch != 0) continue;
    const double d = zb.durations.op_seconds[1][static_cast<std::size_t>(t.op)];
    (t.phase == Phase::kForward ? f : t.phase == Phase::kBackwardWeight ? w : b) += d;
  }
  REQUIRE(w > 0);
  // Every rank runs each of the m micro-batches once (half of them on each of its two chunks); without
  // communication an overlapped pair F&B takes F + B + W on the one GPU, and a whole backward B + W.
  const double pair = f + b + w, whole_backward = b + w;
  const double makespan = from_nanos(dual.result.makespan);
  CHECK(makespan == Approx(m * (f + b + w) + (p / 2 - 1) * (pair + whole_backward - 3 * w)).epsilon(0.003));
  CHECK(makespan < from_nanos(zb.result.makespan));
}

TEST_CASE("DualPipe holds two stages' parameters and p+1 micro-batches of activations", "[sim][schedule][memory]") {
  const int p = 4, m = 16;
  const Run dual = run(test::scenario(pipeline(p, 1, m, "dualpipe")));
  const Run one = run(test::scenario(pipeline(p, 1, m, "1f1b")));
  for (int s = 0; s < p; ++s) {
    INFO("stage " << s);
    const auto weights = [](const Run& r, int stage) {
      return r.graph.programs[static_cast<std::size_t>(stage)].static_memory[static_cast<std::size_t>(MemoryKind::kWeights)];
    };
    // Rank s holds model stage s and a copy of stage p-1-s. The end ranks hold the embedding and the head beside
    // it, which uses the (tied) embedding itself: 1F1B's last-stage copy of it, 128 x 2304 in bf16, is not there.
    const Bytes head_copy = (s == 0 || s == p - 1) ? 128 * 2304 * 2 : 0;
    CHECK(weights(dual, s) == weights(one, s) + weights(one, p - 1 - s) - head_copy);
  }
  // Activations one micro-batch's forward leaves allocated on a middle stage (the same layers either way).
  const Bytes per_microbatch = forward_activations(one.graph.programs[1]);
  REQUIRE(per_microbatch > 0);
  const Bytes peak = dual.result.instances[1].at_peak[static_cast<std::size_t>(MemoryKind::kActivations)];
  // p+1 forwards are in flight; within an overlapped pair the backward frees layer by layer as the forward
  // allocates, so the peak lies between p and p+1 micro-batches' activations.
  CHECK(peak > p * per_microbatch);
  CHECK(peak <= (p + 1) * per_microbatch);
}

TEST_CASE("GPipe keeps m micro-batches of activations on stage 0, 1F1B keeps p", "[sim][schedule][memory]") {
  const int p = 4, m = 8;
  for (const char* schedule : {"gpipe", "1f1b"}) {
    INFO(schedule);
    const Run r = run(test::scenario(pipeline(p, 1, m, schedule)));
    // Activations one micro-batch's forward pass leaves allocated on stage 0.
    const Bytes per_microbatch = forward_activations(r.graph.programs[0]);
    REQUIRE(per_microbatch > 0);
    const Bytes peak = r.result.instances[0].at_peak[static_cast<std::size_t>(MemoryKind::kActivations)];
    const Bytes expected = (std::string(schedule) == "gpipe" ? m : p) * per_microbatch;
    CHECK(peak == expected);
  }
}

TEST_CASE("blocking pipeline transfers run every schedule without deadlock and cost time", "[sim][schedule][engine]") {
  // Megatron batches a slot's sends with the next slot's receives and the host waits for them; with interleaving
  // a slot is a forward and the backward after it. Found deadlocking by review: every schedule must finish.
  for (int vpp : {1, 2}) {
    for (const char* schedule : {"1f1b", "gpipe", "zb-h1"}) {
      if (vpp > 1 && std::string(schedule) != "1f1b") continue;
      INFO("vpp " << vpp << " " << schedule);
      std::string text = pipeline(4, vpp, 8, schedule);
      text.replace(text.find("\"dp\": 1"), 7, "\"dp\": 1, \"overlap_p2p_comm\": false");
      // Without SM contention (which slows compute under overlapped transfers) blocking cannot be faster.
      CostParams params = default_cost_params();
      params.compute.overlap_slowdown = 0;
      PredictOptions options;
      options.params = &params;
      const Prediction b = predict(test::scenario(text), options);
      const Prediction o = predict(test::scenario(pipeline(4, vpp, 8, schedule)), options);
      CHECK(b.run.makespan >= o.run.makespan);
    }
  }
}

TEST_CASE("DualPipe sums each stage's two copies as soon as both are done, beside the other chunk's work",
          "[sim][schedule][engine]") {
  // Llama-3-8B, 4 stages, dp 4, distributed optimizer: rank 0 holds stage 0 (chunk 0) and stage 3 (chunk 1).
  const Scenario s = test::scenario(R"({"model": "llama3-8b", "cluster": {"preset": "dgx-h100", "num_gpus": 16},
      "parallel": {"pp": 4, "zero_stage": 1, "schedule": "dualpipe"},
      "training": {"seq_length": 4096, "micro_batch_size": 1, "global_batch_size": 64}})");
  const Prediction p = predict(s);
  const Program& rank0 = p.graph.programs[0];
  const InstanceRun& run = p.run.instances[0];
  REQUIRE(run.recorded);
  Nanoseconds last_compute = 0;
  std::vector<std::size_t> mirrors;
  for (std::size_t i = 0; i < rank0.tasks.size(); ++i) {
    const Task& t = rank0.tasks[i];
    if (is_compute(t) && t.phase != Phase::kOptimizer) last_compute = std::max(last_compute, run.timings[i].end);
    if (std::string(t.label) == "mirror_grad") mirrors.push_back(i);
  }
  REQUIRE(mirrors.size() == 2);
  // One per model stage, in the low and the high half, each of the chunk's own shard (dp 4 ranks).
  std::set<GroupKind> kinds;
  for (std::size_t i : mirrors) kinds.insert(group_of(rank0.tasks[i]));
  CHECK(kinds == std::set<GroupKind>{GroupKind::kPipelineMirrorLow, GroupKind::kPipelineMirrorHigh});
  Bytes owned = 0;
  for (std::size_t i : mirrors) owned += std::get<CollectiveOp>(rank0.ops[static_cast<std::size_t>(rank0.tasks[i].op)]).bytes;
  // Parameters = weight bytes / 2 (bf16); the rank owns a quarter of them, with fp32 gradients (4 bytes).
  const double weights = static_cast<double>(rank0.static_memory[static_cast<std::size_t>(MemoryKind::kWeights)]);
  CHECK(static_cast<double>(owned) == Approx(weights / 2 / 4 * 4).epsilon(1e-3));
  // Rank 0's far chunk (stage 3) finishes first: its copies are summed while stage 0 still computes.
  Nanoseconds first = run.timings[mirrors[0]].start;
  for (std::size_t i : mirrors) first = std::min(first, run.timings[i].start);
  CHECK(first < last_compute);
}

TEST_CASE("DualPipeV's bubble is (p-1)(F&B+B-3W) per chunk, with one copy of the parameters",
          "[sim][schedule][engine]") {
  const int p = 4, m = 16;
  // 8 layers over 2p = 8 virtual stages: one layer per chunk. Untied embeddings, so that rank 0's extra weights are
  // 1F1B's embedding and head.
  const auto untied = [](std::string text) {
    text.replace(text.find("\"vocab_size\": 128"), 17, "\"vocab_size\": 128, \"tie_word_embeddings\": false");
    return text;
  };
  const Run v = run(test::scenario(untied(pipeline(p, 1, m, "dualpipev"))));
  const Run one = run(test::scenario(untied(pipeline(p, 1, m, "1f1b"))));
  // F, B (input gradients) and W (weight gradients) of one chunk (one layer) for micro-batch 0, on rank 1's chunk 0.
  double f = 0, b = 0, w = 0;
  for (const Task& t : v.graph.programs[1].tasks) {
    if (t.microbatch != 0 || t.chunk != 0) continue;
    const double d = v.durations.op_seconds[1][static_cast<std::size_t>(t.op)];
    (t.phase == Phase::kForward ? f : t.phase == Phase::kBackwardWeight ? w : b) += d;
  }
  REQUIRE(w > 0);
  // Each rank runs every micro-batch through both chunks; without communication a pair F&B takes F + B + W.
  const double pair = f + b + w, whole_backward = b + w;
  const double makespan = from_nanos(v.result.makespan);
  CHECK(makespan == Approx(2 * m * (f + b + w) + (p - 1) * (pair + whole_backward - 3 * w)).epsilon(0.003));
  CHECK(makespan < from_nanos(one.result.makespan));
  // Rank s holds virtual stages s and 2p-1-s: one layer each, the same two layers' worth as 1F1B's stage s.
  for (int s = 0; s < p; ++s) {
    INFO("stage " << s);
    const auto weights = [](const Run& r, int stage) {
      return r.graph.programs[static_cast<std::size_t>(stage)].static_memory[static_cast<std::size_t>(MemoryKind::kWeights)];
    };
    const Bytes layers_only = weights(one, 1);  // a middle 1F1B stage: two layers, no embedding or head
    const Bytes extra = (s == 0) ? weights(one, 0) + weights(one, p - 1) - 2 * layers_only : 0;
    CHECK(weights(v, s) == layers_only + extra);
  }
}

TEST_CASE("DualPipeV with tied embeddings: the head on rank 0 uses the embedding itself, no copy, no all-reduce",
          "[sim][schedule][memory]") {
  const int p = 4, m = 8;
  const std::string tied = pipeline(p, 1, m, "dualpipev");  // gpt-sc21-1.7b ties its embeddings
  std::string untied = tied;
  untied.replace(untied.find("\"vocab_size\": 128"), 17, "\"vocab_size\": 128, \"tie_word_embeddings\": false");
  const Run t = run(test::scenario(tied));
  const Run u = run(test::scenario(untied));
  const auto weights = [](const Run& r, int stage) {
    return r.graph.programs[static_cast<std::size_t>(stage)].static_memory[static_cast<std::size_t>(MemoryKind::kWeights)];
  };
  // The untied head's 128 x 2304 matrix in bf16 is all rank 0 saves; the other ranks hold layers only.
  CHECK(weights(u, 0) - weights(t, 0) == 128 * 2304 * 2);
  for (int s = 1; s < p; ++s) CHECK(weights(t, s) == weights(u, s));
  // Megatron's first/last-stage embedding all-reduce has nothing to sum: both ends are on rank 0.
  for (const Program& prog : t.graph.programs) {
    for (const Task& task : prog.tasks) CHECK(std::string(task.label) != "embedding_grad");
  }
  CHECK(from_nanos(t.result.makespan) == Approx(from_nanos(u.result.makespan)).epsilon(1e-6));
}
