// Symmetry (ARCHITECTURE.md "Symmetry"): one representative rank per stage and every rank expanded must agree on a
// homogeneous job; a straggler delays its data-parallel group by exactly what the hand calculation gives.
#include <catch2/catch.hpp>

#include "test_support.h"

using namespace orrery;

TEST_CASE("a homogeneous 64-GPU job gives the same iteration time with and without --expand-ranks", "[sim][symmetry]") {
  const Scenario s = test::scenario(R"({"model": "llama3-8b", "cluster": {"preset": "dgx-h100", "num_gpus": 64},
      "parallel": {"tp": 4, "pp": 2, "vpp": 2, "dp": 8, "sequence_parallel": true, "zero_stage": 1},
      "training": {"seq_length": 4096, "micro_batch_size": 1, "global_batch_size": 64}})");
  PredictOptions representative;
  PredictOptions expanded;
  expanded.expansion = Expansion::kAllRanks;
  const Prediction a = predict(s, representative);
  const Prediction b = predict(s, expanded);
  CHECK(a.instances.instances.size() == 2);
  CHECK(b.instances.instances.size() == 64);
  CHECK(a.run.makespan == b.run.makespan);
  CHECK(a.report.peak_memory == b.report.peak_memory);
  CHECK(a.report.breakdown.compute == b.report.breakdown.compute);
}

TEST_CASE("a straggler 10% slower delays its data-parallel group and the iteration as a hand calculation gives",
          "[sim][symmetry][stragglers]") {
  // Pure data parallelism, gradients reduced after the backward pass: every rank's compute stream runs its
  // forward and backward tasks back to back, then the all-reduces run one after another, then the optimizer.
  const Scenario s = test::scenario(R"({"model": {"preset": "llama3-8b", "num_hidden_layers": 4},
      "cluster": {"preset": "dgx-h100", "num_gpus": 4}, "parallel": {"dp": 4, "overlap_grad_reduce": false},
      "training": {"seq_length": 2048, "micro_batch_size": 1, "global_batch_size": 8},
      "stragglers": [{"rank": 2, "compute_slowdown": 1.1}]})");
  const Prediction p = test::predict_without_host(s);  // the hand calculation is of the GPUs' work
  REQUIRE(p.instances.instances.size() == 2);  // the straggler, and the three ranks that behave alike
  const Program& prog = p.graph.programs[0];
  const auto& seconds = p.durations.op_seconds[0];
  Nanoseconds slow_compute = 0, reduce = 0, slow_optimizer = 0, fast_optimizer = 0;
  for (const Task& t : prog.tasks) {
    const double d = seconds[static_cast<std::size_t>(t.op)];
    if (is_compute(t) && t.phase != Phase::kOptimizer) slow_compute += to_nanos(d * 1.1);
    if (is_compute(t) && t.phase == Phase::kOptimizer) {
      slow_optimizer += to_nanos(d * 1.1);
      fast_optimizer += to_nanos(d);
    }
    if (t.group == GroupKind::kDp) reduce += to_nanos(d);
  }
  // Iteration = 1.1 x compute + the all-reduces + 1.1 x the optimizer (the straggler finishes last).
  CHECK(p.run.makespan == slow_compute + reduce + slow_optimizer);
  // The other ranks reach their first all-reduce early but it starts only when the straggler arrives.
  std::size_t fast = p.instances.instances[0].compute_slowdown == 1.0 ? 0 : 1;
  const auto& timings = p.run.instances[fast].timings;
  for (std::size_t i = 0; i < prog.tasks.size(); ++i) {
    if (prog.tasks[i].group != GroupKind::kDp) continue;
    CHECK(timings[i].ready < slow_compute);
    CHECK(timings[i].start == slow_compute);
    break;
  }
  CHECK(p.run.instances[fast].end == slow_compute + reduce + fast_optimizer);
}

TEST_CASE("straggler classes of a MoE plan agree with every rank expanded", "[sim][symmetry][stragglers][moe]") {
  // Expert groups fold the tp x cp x dp ranks of a stage another way (etp, ep, edp), so straggler classes follow
  // those axes too; where no class split keeps every group consistent, all ranks are simulated.
  const auto mixtral = [](const char* plan, bool expand) {
    PredictOptions options;
    if (expand) options.expansion = Expansion::kAllRanks;
    return predict(test::scenario(std::string(R"({"model": {"preset": "mixtral-8x7b", "num_hidden_layers": 4},
        "cluster": {"preset": "dgx-h100", "num_gpus": 32}, "parallel": {"pp": 2, "vpp": 2, "zero_stage": 1, )") +
                                  plan + R"(}, "training": {"seq_length": 4096, "micro_batch_size": 1,
        "global_batch_size": 64}, "stragglers": [{"rank": 5, "compute_slowdown": 1.1}]})"), options);
  };
  for (const char* plan : {R"("tp": 2, "sequence_parallel": true, "ep": 8)", R"("cp": 2, "ep": 8)",
                           R"("tp": 2, "sequence_parallel": true, "cp": 2, "ep": 4, "etp": 2)"}) {
    INFO(plan);
    const Prediction classes = mixtral(plan, false), all = mixtral(plan, true);
    CHECK(classes.run.makespan == all.run.makespan);
    CHECK(classes.report.peak_memory == all.report.peak_memory);
  }
  // With tp 2 and ep 8 the classes hold: 8 instances stand for the 32 ranks.
  CHECK(mixtral(R"("tp": 2, "sequence_parallel": true, "ep": 8)", false).instances.instances.size() == 8);
}

TEST_CASE("DualPipe's and DualPipeV's reverse transfers (and DualPipe's mirror all-reduce) pair the same with every "
          "rank expanded",
          "[sim][symmetry][schedule]") {
  // A MoE model over both directions: four pipeline stages, each rank's two chunks, experts over dp.
  for (const char* schedule : {"dualpipe", "dualpipev"}) {
    INFO(schedule);
    const Scenario s = test::scenario(std::string(R"({"model": {"preset": "mixtral-8x7b", "num_hidden_layers": 8},
        "cluster": {"preset": "dgx-h100", "num_gpus": 32}, "parallel": {"tp": 2, "sequence_parallel": true, "pp": 4,
        "ep": 4, "zero_stage": 1, "schedule": ")") + schedule + R"("}, "training": {"seq_length": 4096,
        "micro_batch_size": 1, "global_batch_size": 32}, "stragglers": [{"rank": 9, "compute_slowdown": 1.1}]})");
    PredictOptions expanded;
    expanded.expansion = Expansion::kAllRanks;
    const Prediction a = predict(s, {});
    const Prediction b = predict(s, expanded);
    CHECK(a.instances.instances.size() < b.instances.instances.size());
    CHECK(a.run.makespan == b.run.makespan);
    CHECK(a.report.peak_memory == b.report.peak_memory);
  }
}
