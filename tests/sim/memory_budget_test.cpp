// The memory budget of a prediction (sim/memory_budget.h): refused up front on the estimate, stopped while running
// on the resident size, and an estimate of the task count that holds against the lowering's real count.
#include <catch2/catch.hpp>

#include "models/error.h"
#include "models/process_memory.h"
#include "sim/memory_budget.h"
#include "test_support.h"

using namespace orrery;

namespace {

// 64 ranks expanded: about 5,000 tasks each, so the engine passes its 65,536-event memory check several times.
const char* kExpandable = R"({"model": "llama3-8b", "cluster": {"preset": "dgx-h100", "num_gpus": 64},
    "parallel": {"tp": 4, "pp": 2, "dp": 8, "sequence_parallel": true, "zero_stage": 1},
    "training": {"seq_length": 4096, "micro_batch_size": 1, "global_batch_size": 64}})";

}  // namespace

TEST_CASE("the engine stops with an error naming --memory-budget once the process's resident memory passes it",
          "[sim][memory_budget]") {
  PredictOptions expanded;
  expanded.expansion = Expansion::kAllRanks;
  expanded.memory_budget = 0;
  const Prediction p = predict(test::scenario(kExpandable), expanded);
  REQUIRE(p.run.events > 65536);
  const std::int64_t resident = resident_bytes();
  REQUIRE(resident > 0);  // Linux: /proc/self/statm
  RunOptions run;
  run.memory_budget = resident / 2;
  CHECK_THROWS_WITH(run_engine(p.graph, p.instances, p.durations, run),
                    Catch::StartsWith("--memory-budget (") && Catch::Contains("was reached while simulating"));
  run.memory_budget = std::int64_t{1} << 50;  // far above: the same run as without a budget
  CHECK(run_engine(p.graph, p.instances, p.durations, run).makespan ==
        run_engine(p.graph, p.instances, p.durations, RunOptions{}).makespan);
}

TEST_CASE("a prediction estimated above its memory budget is refused before it lowers or simulates",
          "[sim][memory_budget]") {
  const Scenario s = test::scenario(kExpandable);
  PredictOptions options;
  options.memory_budget = 1;  // below even the graph's estimate
  CHECK_THROWS_WITH(predict(s, options), Catch::StartsWith("--memory-budget (9.31e-10 GiB) is below the") &&
                                             Catch::Contains("estimated for the workload graph (about"));
  // 24 MiB: the graph and two instances fit (16 MiB of base, 11,022 tasks at 96 + 3 + 56 bytes: 17.6 MiB); 64
  // ranks of about 5,500 tasks each, every one recorded, do not (37 MiB). The run has too few events for the
  // resident check, which would see the whole test process.
  options.memory_budget = 24 << 20;
  options.expansion = Expansion::kAllRanks;
  CHECK_THROWS_WITH(predict(s, options), Catch::Contains("estimated for --expand-ranks (64 ranks,"));
  options.expansion = Expansion::kAuto;
  CHECK(predict(s, options).run.makespan > 0);
}

TEST_CASE("the task estimate that bounds limits::kTasks is at least the lowering's count and at most 3x it",
          "[sim][memory_budget]") {
  // Dense with interleaving, MoE with expert parallelism, context parallelism: the three shapes of stage program.
  for (const char* text : {
           kExpandable,
           R"({"model": "llama3-70b", "cluster": {"preset": "dgx-h100", "num_gpus": 64},
               "parallel": {"tp": 8, "pp": 4, "vpp": 5, "sequence_parallel": true, "zero_stage": 1},
               "training": {"seq_length": 8192, "micro_batch_size": 1, "global_batch_size": 128}})",
           R"({"model": "mixtral-8x7b", "cluster": {"preset": "dgx-h100", "num_gpus": 64},
               "parallel": {"tp": 2, "pp": 4, "ep": 8, "sequence_parallel": true, "zero_stage": 1},
               "training": {"seq_length": 4096, "micro_batch_size": 1, "global_batch_size": 256}})",
           R"({"model": "llama3-8b", "cluster": {"preset": "dgx-h100", "num_gpus": 64},
               "parallel": {"tp": 4, "cp": 4, "pp": 2, "sequence_parallel": true, "zero_stage": 1},
               "training": {"seq_length": 65536, "micro_batch_size": 1, "global_batch_size": 16}})"}) {
    const Scenario s = test::scenario(text);
    double tasks = 0;
    for (const Program& program : test::lowered(s).programs) tasks += static_cast<double>(program.tasks.size());
    INFO(s.model.name << ": " << tasks << " tasks lowered, " << estimated_tasks(s) << " estimated");
    CHECK(tasks <= estimated_tasks(s));
    CHECK(estimated_tasks(s) <= 3 * tasks);
  }
}

TEST_CASE("the default memory budget is 16 GiB or three quarters of the machine's memory", "[sim][memory_budget]") {
  const std::int64_t physical = physical_memory_bytes();
  REQUIRE(physical > 0);
  CHECK(default_memory_budget() == std::min(std::int64_t{16} << 30, physical / 4 * 3));
}
