// The host's issue order of Megatron-Core's merged forward-and-backward passes (sim/lower/merged_issue_order.h) and
// the engine's streams that run in it (sim/engine/engine.h): the order is read off model_chunk_schedule_plan.py's
// TransformerLayerSchedulePlan.run, and the times are worked out by hand.
#include <catch2/catch.hpp>

#include <map>
#include <string>

#include "sim/engine/engine.h"
#include "test_support.h"

using namespace orrery;

namespace {

Task task(TaskKind kind, const char* label, Stream stream) {
  Task t;
  t.kind = kind;
  t.stream = stream;
  t.label = label;
  return t;
}

Instantiation one_instance() {
  Instantiation inst;
  inst.instances = {{0, 0, 1, 1.0}};
  inst.group_kinds = kNumGroupKinds;
  inst.group_of.assign(kNumGroupKinds, -1);
  return inst;
}

// The merged pair of one layer, in task order (the lowering emits the forward first): F.attn (compute, 100 us),
// F's token-count sync (after F.attn, on the device-to-host stream, 0 us), F.dispatch (EP, 100 us), then B.combine
// (EP twin, 100 us) and B.mlp (compute twin, after B.combine, 100 us). Every task takes 1 us to issue.
WorkloadGraph pair(bool megatron_order) {
  ProgramBuilder b = program_builder(0);
  const auto f_attn = b.add(task(TaskKind::kGemm, "f_attn", Stream::kCompute), GemmShape{1, 1, 1, 1, DType::kBf16});
  const auto sync = b.add(task(TaskKind::kHostSync, "counts_item", Stream::kDeviceToHost), HostSyncShape{}, {f_attn});
  b.add(task(TaskKind::kGemm, "f_dispatch", Stream::kEp), GemmShape{2, 1, 1, 1, DType::kBf16}, {sync});
  const auto b_combine = b.add(task(TaskKind::kGemm, "b_combine", Stream::kEpB), GemmShape{3, 1, 1, 1, DType::kBf16});
  b.add(task(TaskKind::kGemm, "b_mlp", Stream::kComputeB), GemmShape{4, 1, 1, 1, DType::kBf16}, {b_combine});
  // Megatron-Core: B.combine, F.attn, B.mlp, F.dispatch (the sync sits in token_dispatch).
  if (megatron_order) b.issue_in_order(0, {3, 0, 4, 1, 2});
  WorkloadGraph g;
  declare_vocabulary(g);
  g.programs.push_back(b.finish());
  return g;
}

Durations pair_durations() { return Durations{{{100e-6, 0.0, 100e-6, 100e-6, 100e-6}}, {{1e-6, 1e-6, 1e-6, 1e-6, 1e-6}}}; }

}  // namespace

TEST_CASE("merged passes: Megatron-Core's issue order keeps the GPU busy through the forward's host sync",
          "[sim][host][overlap]") {
  // Megatron-Core's order: B.combine is issued at 1 us and runs 1-101 on the EP stream; F.attn, issued at 2, runs
  // 2-102; B.mlp, issued at 3, follows F.attn on the compute stream: 102-202. The sync (issued at 4) ends with
  // F.attn at 102 and the host issues F.dispatch at 103; the EP stream is free (B.combine ended at 101): 103-203.
  const RunResult r = run_engine(pair(true), one_instance(), pair_durations());
  const auto& t = r.instances[0].timings;
  CHECK(t[3].start == 1'000);
  CHECK(t[4].start == 102'000);
  CHECK(t[2].start == 103'000);
  CHECK(r.makespan == 203'000);
  // In task order the host waits at the sync (issued at 2) until F.attn ends at 101, then issues F.dispatch (102),
  // B.combine (103) and B.mlp (104): F.dispatch holds the EP stream 102-202, B.combine follows 202-302, B.mlp
  // 302-402. The forward's sync serialises the merged backward behind it.
  const RunResult serial = run_engine(pair(false), one_instance(), pair_durations());
  CHECK(serial.instances[0].timings[2].start == 102'000);
  CHECK(serial.makespan == 402'000);
}

TEST_CASE("merged passes: a stream runs its tasks in the host's issue order", "[sim][overlap]") {
  // Two compute kernels of the merged passes, issued backward first: the GPU runs them in that order although
  // the forward's was added first and both are ready at once (20 us and 10 us, issue costs of 1 us).
  ProgramBuilder b = program_builder(0);
  b.add(task(TaskKind::kGemm, "f", Stream::kCompute), GemmShape{1, 1, 1, 1, DType::kBf16});
  b.add(task(TaskKind::kGemm, "b", Stream::kComputeB), GemmShape{2, 1, 1, 1, DType::kBf16});
  b.issue_in_order(0, {1, 0});
  WorkloadGraph g;
  declare_vocabulary(g);
  g.programs.push_back(b.finish());
  const RunResult r = run_engine(g, one_instance(), Durations{{{20e-6, 10e-6}}, {{1e-6, 1e-6}}});
  // b issued at 1 runs 1-11; f issued at 2 waits for it: 11-31.
  CHECK(r.instances[0].timings[1].start == 1'000);
  CHECK(r.instances[0].timings[0].start == 11'000);
  CHECK(r.makespan == 31'000);
}

TEST_CASE("merged passes: an issue order against a dependency falls back to task order", "[sim][overlap]") {
  // b depends on f; an order that issues b first could hold a stream on a task that waits for a later one.
  ProgramBuilder b = program_builder(0);
  const auto f = b.add(task(TaskKind::kGemm, "f", Stream::kCompute), GemmShape{1, 1, 1, 1, DType::kBf16});
  b.add(task(TaskKind::kGemm, "b", Stream::kComputeB), GemmShape{2, 1, 1, 1, DType::kBf16}, {f});
  b.issue_in_order(0, {1, 0});
  const Program p = b.finish();
  CHECK(p.issue_order == std::vector<std::int32_t>{0, 1});
  ProgramBuilder bad = program_builder(0);
  bad.add(task(TaskKind::kGemm, "f", Stream::kCompute), GemmShape{1, 1, 1, 1, DType::kBf16});
  CHECK_THROWS_AS(bad.issue_in_order(0, {0, 0}), std::logic_error);
}

TEST_CASE("merged passes: the host issues each layer pair in Megatron-Core's sub-module order", "[sim][moe][overlap]") {
  // Mixtral-8x7B, two layers, EP 8 on 8 H100s, token-dropless with the alltoall dispatcher, 8 micro-batches and no
  // pipeline: each backward merges with the next micro-batch's forward. In the slot of backward mb 0 and forward
  // mb 1, forward layer 0 pairs with backward layer 1 (model_chunk_schedule_plan.py pairs layer i with n-1-i).
  const Scenario s = test::scenario(R"({"model": {"preset": "mixtral-8x7b", "num_hidden_layers": 2},
      "cluster": {"preset": "dgx-h100", "num_gpus": 8},
      "parallel": {"ep": 8, "zero_stage": 1, "overlap_moe_expert_parallel_comm": true},
      "training": {"seq_length": 4096, "micro_batch_size": 1, "global_batch_size": 64}})");
  const WorkloadGraph g = test::lowered(s);
  const Program& p = g.programs[0];
  REQUIRE(p.issue_order.size() == p.tasks.size());
  std::vector<std::int32_t> position(p.tasks.size());
  for (std::size_t k = 0; k < p.issue_order.size(); ++k) position[static_cast<std::size_t>(p.issue_order[k])] = static_cast<std::int32_t>(k);
  // The issue position of the first task of (micro-batch, layer, forward?, label, kind).
  const auto at = [&](int mb, int layer, bool forward, const std::string& label, TaskKind kind) {
    for (std::size_t i = 0; i < p.tasks.size(); ++i) {
      const Task& t = p.tasks[i];
      const bool fwd = t.phase == Phase::kForward;
      if (t.microbatch == mb && t.layer == layer && fwd == forward && label == t.label && t.kind == kind) {
        return position[i];
      }
    }
    FAIL("no task " << label << " of mb " << mb << " layer " << layer);
    return -1;
  };
  const int b_combine = at(0, 1, false, "moe_combine", TaskKind::kCollective);
  const int f_attention = at(1, 0, true, "attention", TaskKind::kAttention);
  const int b_experts = at(0, 1, false, "experts", TaskKind::kGemm);
  const int f_sync = at(1, 0, true, "moe_token_counts_item", TaskKind::kHostSync);
  const int f_dispatch = at(1, 0, true, "moe_dispatch", TaskKind::kCollective);
  const int b_dispatch = at(0, 1, false, "moe_dispatch", TaskKind::kCollective);
  const int f_experts = at(1, 0, true, "experts", TaskKind::kGemm);
  const int f_combine = at(1, 0, true, "moe_combine", TaskKind::kCollective);
  const int b_attention = at(0, 1, false, "attention", TaskKind::kAttention);
  CHECK(b_combine < f_attention);
  CHECK(f_attention < b_experts);
  CHECK(b_experts < f_sync);
  CHECK(f_sync < f_dispatch);
  CHECK(f_dispatch < b_dispatch);
  CHECK(b_dispatch < f_experts);
  CHECK(f_experts < f_combine);
  CHECK(f_combine < b_attention);
  // The combine's post-processing (unpermute) runs on the EP stream, as the combine node does.
  for (const Task& t : p.tasks) {
    if (t.layer == 0 && t.microbatch == 1 && t.phase == Phase::kForward && std::string(t.label) == "moe_unpermute") {
      CHECK(t.stream == Stream::kEp);
    }
  }
}

TEST_CASE("merged passes: every interleaved plan with the EP overlap runs to the end and beats the plain one",
          "[sim][moe][overlap]") {
  // Small pipelines across micro-batch counts, including all-warm-up (micro-batches == pp, where Megatron-Core's
  // schedule has no steady state and so merges nothing): the in-order streams must never deadlock, and merging
  // must not make the step slower than the passes run one after the other. Unmerged, the switch still runs the
  // combine's post-processing on the EP stream, which may cost a little (bounded here by 1%).
  for (const int pp : {2, 4}) {
    for (const int per_pipeline : {pp, 2 * pp, 3 * pp}) {
      for (const bool padded : {false, true}) {
        INFO("pp " << pp << ", " << per_pipeline << " micro-batches, " << (padded ? "padded" : "dropless"));
        const auto scenario = [&](bool overlap) {
          return test::scenario(R"({"model": {"preset": "mixtral-8x7b", "num_hidden_layers": )" +
                                std::to_string(2 * pp) + R"(}, "cluster": {"preset": "dgx-h100", "num_gpus": )" +
                                std::to_string(8 * pp) + R"(}, "parallel": {"pp": )" + std::to_string(pp) +
                                R"(, "vpp": 2, "ep": 8, "zero_stage": 1, "overlap_moe_expert_parallel_comm": )" +
                                (overlap ? "true" : "false") + R"(}, "training": {"seq_length": 2048,
              "global_batch_size": )" + std::to_string(8 * per_pipeline) +
                                (padded ? R"(, "moe_expert_capacity_factor": 1.0, "moe_pad_expert_input_to_capacity": true)" : "") +
                                "}}");
        };
        Prediction merged, plain;
        REQUIRE_NOTHROW(merged = predict(scenario(true)));
        REQUIRE_NOTHROW(plain = predict(scenario(false)));
        CHECK(merged.report.iteration_time <= plain.report.iteration_time * (per_pipeline == pp ? 1.01 : 1.0));
      }
    }
  }
}
