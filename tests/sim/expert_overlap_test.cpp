// Megatron-Core's expert-parallel overlap (overlap_moe_expert_parallel_comm): each backward pass runs merged with
// another micro-batch's forward, so one pass's all-to-alls hide behind the other's compute. With m micro-batches
// and no pipeline, every pass is merged except the first forward and the last backward, so about 2 of the 2m
// passes keep their all-to-all exposure: roughly 1/m of it remains.
#include <catch2/catch.hpp>

#include <algorithm>

#include "test_support.h"

using namespace orrery;

namespace {

// Mixtral-8x7B, two layers, `gpus` H100s with `ep`, 8 micro-batches per data-parallel rank of 8.
std::string mixtral(bool overlap, int ep = 8, int gpus = 8, const std::string& parallel_extra = "", int layers = 2) {
  return R"({"model": {"preset": "mixtral-8x7b", "num_hidden_layers": )" + std::to_string(layers) +
         R"(}, "cluster": {"preset": "dgx-h100", "num_gpus": )" + std::to_string(gpus) +
         R"(}, "parallel": {"ep": )" + std::to_string(ep) + R"(, "zero_stage": 1, "overlap_moe_expert_parallel_comm": )" +
         (overlap ? "true" : "false") + parallel_extra +
         R"(}, "training": {"seq_length": 4096, "micro_batch_size": 1, "global_batch_size": 64}})";
}

}  // namespace

TEST_CASE("EP overlap hides the all-to-alls of all but the first forward and the last backward", "[sim][moe][overlap]") {
  const Prediction plain = predict(test::scenario(mixtral(false)));
  const Prediction merged = predict(test::scenario(mixtral(true)));
  const double exposed_plain = plain.report.breakdown.exposed_ep_comm;
  const double exposed_merged = merged.report.breakdown.exposed_ep_comm;
  REQUIRE(exposed_plain > 0);
  // 1/8 of the passes stay unmerged; in the merged ones the streams run in Megatron-Core's issue order, where a
  // pass's dispatch waits for its own attention and the next pair's combine for the backward's attention, so
  // somewhat more than 1/8 remains (0.34 of it), but far less than all.
  CHECK(exposed_merged < 0.35 * exposed_plain);
  CHECK(exposed_merged > 0.1 * exposed_plain);
  CHECK(merged.report.iteration_time < plain.report.iteration_time);
  // The GPU still runs one kernel at a time: merging cannot beat the compute alone.
  CHECK(merged.report.iteration_time >= plain.report.breakdown.compute);
}

TEST_CASE("EP overlap in the interleaved pipeline merges the steady state's forward-backward pairs", "[sim][moe][overlap]") {
  // pp 2, vpp 2, 8 micro-batches: of each rank's 16 backwards, 12 (stage 0) and 14 (stage 1) run merged; the
  // warm-up forwards and cool-down backwards keep their all-to-alls exposed, and pipeline waits cut into the rest.
  // TP 2 spreads each EP group over two nodes, so its all-to-alls cross the network, which the merged passes'
  // pipeline transfers then share: the overlap must still win. (With EP inside one node the all-to-alls are cheap
  // and the extra concurrent pipeline transfers can cost about what the overlap saves.)
  const std::string plan = R"(, "tp": 2, "sequence_parallel": true, "pp": 2, "vpp": 2)";
  const Prediction plain = predict(test::scenario(mixtral(false, 8, 32, plan, 4)));
  const Prediction merged = predict(test::scenario(mixtral(true, 8, 32, plan, 4)));
  // About a fifth of the exposure goes (0.82 of it remains with the fitted per-call cost of network collectives,
  // which the merged passes' all-to-alls on their shared stream still pay one after another).
  CHECK(merged.report.breakdown.exposed_ep_comm < 0.9 * plain.report.breakdown.exposed_ep_comm);
  CHECK(merged.report.iteration_time < plain.report.iteration_time);
}

TEST_CASE("EP overlap follows Megatron-Core's conditions", "[sim][moe][overlap][errors]") {
  CHECK_THAT(test::scenario_error(R"({"model": "llama3-8b", "cluster": {"preset": "dgx-h100", "num_gpus": 8},
      "parallel": {"overlap_moe_expert_parallel_comm": true}, "training": {"seq_length": 1024}})"),
             Catch::Contains("parallel.overlap_moe_expert_parallel_comm") && Catch::Contains("mixture-of-experts"));
  CHECK_THAT(test::scenario_error(mixtral(true, 1)), Catch::Contains("needs ep > 1"));
  CHECK_THAT(test::scenario_error(mixtral(true, 8, 16, R"(, "pp": 2)")), Catch::Contains("needs vpp > 1"));
  CHECK(test::scenario_error(mixtral(true, 8, 16, R"(, "pp": 2, "vpp": 2)", 4)).empty());
  CHECK_THAT(test::scenario_error(mixtral(true, 8, 8, R"(, "moe_token_dispatcher_type": "allgather")")),
             Catch::Contains("alltoall"));
}

TEST_CASE("delay_wgrad_compute issues the experts' weight gradients after the dispatch's backward all-to-all",
          "[sim][moe][overlap]") {
  // Megatron-Core's combined 1F1B with delay_wgrad_compute: the grouped GEMMs' input gradients go to the dispatch's
  // backward all-to-all first, and backward_dw runs the two weight gradients while it travels.
  const auto order = [](const WorkloadGraph& g) {
    // Task indexes in layer 1's first backward: the dispatch all-to-all and the experts' weight gradients.
    std::size_t a2a = 0;
    std::vector<std::size_t> wgrads;
    const auto& tasks = g.programs[0].tasks;
    for (std::size_t i = 0; i < tasks.size(); ++i) {
      const Task& t = tasks[i];
      if (t.layer != 1 || t.microbatch != 0) continue;
      if (t.kind == TaskKind::kCollective && std::string(t.label) == "moe_dispatch" && t.phase == Phase::kBackwardInput) a2a = i;
      if (std::string(t.label) == "experts" && t.phase == Phase::kBackwardWeight) wgrads.push_back(i);
    }
    return std::make_pair(a2a, wgrads);
  };
  const auto [a2a_inline, inline_wgrads] = order(test::lowered(test::scenario(mixtral(true))));
  const auto [a2a_delayed, delayed_wgrads] =
      order(test::lowered(test::scenario(mixtral(true, 8, 8, R"(, "delay_wgrad_compute": true)"))));
  REQUIRE(inline_wgrads.size() == 2);
  REQUIRE(delayed_wgrads.size() == 2);
  for (std::size_t w : inline_wgrads) CHECK(w < a2a_inline);
  for (std::size_t w : delayed_wgrads) CHECK(w > a2a_delayed);
  // The all-to-all no longer waits for them: the step is faster, but not faster than its compute.
  const Prediction plain = predict(test::scenario(mixtral(true)));
  const Prediction delayed = predict(test::scenario(mixtral(true, 8, 8, R"(, "delay_wgrad_compute": true)")));
  CHECK(delayed.report.iteration_time < plain.report.iteration_time);
  CHECK(delayed.report.iteration_time >= delayed.report.breakdown.compute);
  CHECK_THAT(test::scenario_error(mixtral(false, 8, 8, R"(, "delay_wgrad_compute": true)")),
             Catch::Contains("parallel.delay_wgrad_compute") && Catch::Contains("overlap_moe_expert_parallel_comm"));
}
