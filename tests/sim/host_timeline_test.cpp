// The host timeline (sim/engine/engine.h). A rank's host issues its tasks in order at a CPU cost each, and a kernel starts
// no earlier than it is issued. Expected times are worked out by hand from the issue costs and durations, and the
// per-layer launch count of PyTorch eager from a measured trace.
#include <catch2/catch.hpp>
#include <fmt/format.h>

#include "calibrate/kineto_trace.h"
#include "sim/durations.h"
#include "sim/engine/engine.h"
#include "test_support.h"

using namespace orrery;

namespace {

Task kernel(const char* label, Stream stream = Stream::kCompute) {
  Task t;
  t.kind = TaskKind::kGemm;
  t.stream = stream;
  t.label = label;
  return t;
}

GemmShape shape(std::int64_t id) { return GemmShape{id, 1, 1, 1, DType::kBf16}; }

Instantiation one_instance() {
  Instantiation inst;
  inst.instances = {{0, 0, 1, 1.0}};
  inst.group_kinds = kNumGroupKinds;
  inst.group_of.assign(kNumGroupKinds, -1);
  return inst;
}

}  // namespace

TEST_CASE("host timeline: kernels shorter than their issue cost run at the host's pace", "[sim][host]") {
  // Three 1 us kernels, each 10 us to issue: issued at 10, 20, 30 us, so they end at 11, 21, 31 us.
  ProgramBuilder b = program_builder(0);
  for (int i = 0; i < 3; ++i) b.add(kernel("k"), shape(i + 1));
  WorkloadGraph g;
  declare_vocabulary(g);
  g.programs.push_back(b.finish());
  Durations d{{{1e-6, 1e-6, 1e-6}}, {{10e-6, 10e-6, 10e-6}}};
  const RunResult r = run_engine(g, one_instance(), d);
  const auto& t = r.instances[0].timings;
  CHECK(t[0].start == 10'000);
  CHECK(t[1].start == 20'000);
  CHECK(t[2].end == 31'000);
  // Without the host timeline the GPU runs them back to back.
  const RunResult free_host = run_engine(g, one_instance(), Durations{{{1e-6, 1e-6, 1e-6}}, {}});
  CHECK(free_host.makespan == 3'000);
}

TEST_CASE("host timeline: a long kernel lets the host run ahead, a host sync stops it", "[sim][host]") {
  // k0 (100 us), a .item() sync (1 us), k1 (1 us), k2 (1 us); 5 us to issue each. k0 is issued at 5 and runs to 105;
  // the sync is issued at 10, runs 105-106 after k0 (stream order), and holds the host until 106: k1 is issued at
  // 111 and k2 at 116, so the step ends at 117. Without the sync's hold k1 would have been issued at 15 and run at 106.
  ProgramBuilder b = program_builder(0);
  b.add(kernel("k0"), shape(1));
  Task sync;
  sync.kind = TaskKind::kHostSync;
  sync.label = "item";
  b.add(sync, HostSyncShape{});
  b.add(kernel("k1"), shape(2));
  b.add(kernel("k2"), shape(3));
  WorkloadGraph g;
  declare_vocabulary(g);
  g.programs.push_back(b.finish());
  Durations d{{{100e-6, 1e-6, 1e-6, 1e-6}}, {{5e-6, 5e-6, 5e-6, 5e-6}}};
  const RunResult r = run_engine(g, one_instance(), d);
  const auto& t = r.instances[0].timings;
  CHECK(t[0].end == 105'000);
  CHECK(t[1].start == 105'000);
  CHECK(t[2].start == 111'000);
  CHECK(t[3].start == 116'000);
  CHECK(r.makespan == 117'000);
}

TEST_CASE("host timeline: a collective waits for the host of its last member", "[sim][host]") {
  // Two stages' programs meet at one TP all-reduce after one kernel. Stage 0's host issues each task in 1 us,
  // stage 1's in 40 us: stage 1 issues the all-reduce at 80 us, so both start it then, though stage 0 was ready at 2.
  WorkloadGraph g;
  declare_vocabulary(g);
  for (int stage = 0; stage < 2; ++stage) {
    ProgramBuilder b = program_builder(stage);
    const auto k = b.add(kernel("k"), shape(1));
    Task ar = kernel("all_reduce", Stream::kTp);
    ar.kind = TaskKind::kCollective;
    ar.group = GroupKind::kTp;
    b.add(ar, CollectiveOp{CollectiveKind::kAllReduce, 1 << 20, {}}, {k});
    g.programs.push_back(b.finish());
  }
  Instantiation inst;
  inst.instances = {{0, 0, 1, 1.0}, {1, 1, 1, 1.0}};
  inst.group_kinds = kNumGroupKinds;
  inst.group_of.assign(2 * kNumGroupKinds, -1);
  inst.group_of[static_cast<int>(GroupKind::kTp)] = 0;
  inst.group_of[kNumGroupKinds + static_cast<int>(GroupKind::kTp)] = 0;
  inst.group_size = {2};
  Durations d{{{1e-6, 10e-6}, {1e-6, 10e-6}}, {{1e-6, 1e-6}, {40e-6, 40e-6}}};
  const RunResult r = run_engine(g, inst, d);
  CHECK(r.instances[0].timings[1].start == 80'000);
  CHECK(r.instances[1].timings[1].start == 80'000);
  CHECK(r.makespan == 90'000);
}

namespace {

// A Llama-style model trained by PyTorch eager on one H200 (the recipe of tools/pytorch_train_step.py), micro-batch 1.
Scenario eager_llama(int hidden, int heads, int ffn, int seq) {
  return test::scenario(fmt::format(R"({{"model": {{"model_type": "llama", "num_hidden_layers": 4,
      "hidden_size": {0}, "num_attention_heads": {1}, "num_key_value_heads": {1}, "intermediate_size": {2},
      "vocab_size": 32000}}, "cluster": {{"preset": "dgx-h200", "num_gpus": 1}},
    "training": {{"seq_length": {3}, "micro_batch_size": 1, "global_batch_size": 1, "framework": "pytorch"}}}})",
                                    hidden, heads, ffn, seq));
}

struct LayerForward {
  std::int64_t launches = 0;
  Seconds gpu = 0;          // GPU time of its kernels, as priced
  Nanoseconds span = 0;     // from its first kernel's start to the next layer's first kernel's start
};

// Launches of a layer's backward (input and weight gradients).
std::int64_t backward_launches(const Program& prog, int layer) {
  std::int64_t n = 0;
  for (const Task& t : prog.tasks) {
    if (t.layer == layer && t.op >= 0 && (t.phase == Phase::kBackwardInput || t.phase == Phase::kBackwardWeight)) {
      n += host_launches(prog.ops[static_cast<std::size_t>(t.op)]);
    }
  }
  return n;
}

LayerForward layer_forward(const Prediction& p, int layer) {
  const Program& prog = p.graph.programs[0];
  const auto& timings = p.run.instances[0].timings;
  LayerForward out;
  Nanoseconds first = -1, next = -1;
  for (std::size_t i = 0; i < prog.tasks.size(); ++i) {
    const Task& t = prog.tasks[i];
    if (t.phase != Phase::kForward || t.op < 0) continue;
    const Op& op = prog.ops[static_cast<std::size_t>(t.op)];
    if (t.layer == layer) {
      out.launches += host_launches(op);
      out.gpu += p.durations.op_seconds[0][static_cast<std::size_t>(t.op)];
      if (first < 0 && host_launches(op) > 0) first = timings[i].start;
    } else if (t.layer == layer + 1 && next < 0 && host_launches(op) > 0) {
      next = timings[i].start;
    }
  }
  out.span = next - first;
  return out;
}

}  // namespace

TEST_CASE("host timeline: a PyTorch eager layer takes max(launches x CPU cost, GPU work)", "[sim][host][pytorch][slow]") {
  // The launches of one Hugging Face Llama decoder layer's forward, counted in a measured PyTorch 2.11 trace of
  // Llama-3.2-1B on an H200 (every layer's forward range holds the same number).
  const KinetoTrace trace = read_kineto_trace(
      (test::source_dir() / "scenarios/measured/h200-2026-11-30/llama-1b.trace.json.gz").string());
  int measured = 0, measured_backward = 0;
  for (const KinetoRange& r : trace.ranges) {
    if (r.what == KinetoRange::What::kForward) measured = r.launches;
    if (r.what == KinetoRange::What::kBackward) measured_backward = r.launches;
  }
  REQUIRE(measured == 48);
  REQUIRE(measured_backward == 89);
  const Seconds cpu = default_cost_params().compute.host.pytorch_forward;
  REQUIRE(cpu > 10e-6);

  // A tiny layer at micro-batch 1 (h 256, 512 tokens): a few us of GPU work per kernel, so the host sets the pace.
  const Prediction tiny = predict(eager_llama(256, 4, 1024, 512));
  const LayerForward small = layer_forward(tiny, 1);
  CHECK(small.launches == measured);
  CHECK(backward_launches(tiny.graph.programs[0], 1) == measured_backward);
  REQUIRE(small.gpu < 0.5 * measured * cpu);
  CHECK(static_cast<double>(small.span) * 1e-9 == Approx(measured * cpu).epsilon(1e-3));

  // A large layer (h 4096, 8192 tokens): the GPU is far behind, so the layer takes its GPU work.
  const Prediction large = predict(eager_llama(4096, 32, 14336, 8192));
  const LayerForward big = layer_forward(large, 1);
  REQUIRE(big.gpu > 3 * measured * cpu);
  CHECK(static_cast<double>(big.span) * 1e-9 == Approx(big.gpu).epsilon(0.01));
}

TEST_CASE("calibrate host: the PyTorch eager costs in cost_model.json are what the committed traces measure",
          "[calibrate][host][slow]") {
  std::vector<KinetoTrace> traces;
  for (const char* m : {"0.5b", "1b", "3b"}) {
    traces.push_back(read_kineto_trace(
        (test::source_dir() / fmt::format("scenarios/measured/h200-2026-11-30/llama-{}.trace.json.gz", m)).string()));
  }
  const HostIssueRates rates = host_issue_rates(traces);
  const HostIssueCosts& preset = default_cost_params().compute.host;
  CHECK(rates.forward_ranges > 100);
  CHECK(rates.backward_ranges > 10);
  CHECK(preset.pytorch_forward == Approx(rates.forward).margin(0.05e-6));
  CHECK(preset.pytorch_backward == Approx(rates.backward).margin(0.05e-6));
  CHECK(preset.pytorch_optimizer == Approx(rates.optimizer).margin(0.05e-6));
  CHECK(preset.library == Approx(rates.launch_call).margin(0.05e-6));
  // A range whose launch calls waited for the launch queue measures the GPU, not the host: leaving none out
  // (an infinite threshold) gives a slower backward, as the 1B and 3B steps' GPU-paced layers pull it up.
  CHECK(host_issue_rates(traces, 1.0).backward > 1.5 * rates.backward);
}
