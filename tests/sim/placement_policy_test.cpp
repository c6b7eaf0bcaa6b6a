// The scenario's `placement` section: explicit maps, the scheduler policies, uplinks shared by concurrent groups
// (sim/link_sharing.h) and Arnold's optimiser (sim/placement.h).
#include <catch2/catch.hpp>

#include "hardware/collective_cost.h"
#include "sim/group_placement.h"
#include "sim/link_sharing.h"
#include "sim/placement.h"
#include "test_support.h"

using namespace orrery;

namespace {

// 8 H800 nodes (8 x 400 Gb/s NICs each): leaves of 2 nodes, minipods of 4 nodes, a spine behind 4:1 minipod uplinks.
std::string small_fabric(const std::string& placement) {
  return R"({"model": {"preset": "llama3-8b", "num_hidden_layers": 2},
      "cluster": {"preset": "hgx-h800", "num_gpus": 64, "network": [
        {"tier": "leaf", "nodes": 2, "oversubscription": 1},
        {"tier": "minipod", "nodes": 4, "oversubscription": 1},
        {"tier": "spine", "nodes": 0, "oversubscription": 4}]},
      "parallel": {"tp": 8, "dp": 8}, "training": {"seq_length": 2048, "global_batch_size": 16})" +
         (placement.empty() ? std::string() : ", \"placement\": " + placement) + "}";
}

}  // namespace

TEST_CASE("A DP all-reduce across two minipods behind a 4:1 uplink takes the share the links allow",
          "[sim][placement]") {
  const CostParams& params = default_cost_params();
  // Sequential: each of the 8 DP rings (one per TP rank) leaves each minipod once, at one GPU's NIC rate, 50 GB/s:
  // 8 x 50 = 400 GB/s against 4 nodes x 400 GB/s / 4 = 400 GB/s of uplink: the full rate (factor 1).
  const Scenario seq = test::scenario(small_fabric(R"({"policy": "sequential"})"));
  const GroupPlacement p1 = costliest_group_placement(seq.cluster, RankLayout(seq.parallel), GroupKind::kDp, 0);
  CHECK(p1.domains == 8);
  CHECK(p1.oversubscription == Approx(1.0));
  // Interleaved over the minipods (nodes 0,4,1,5,...): every hop of every ring crosses, 4 exits a minipod per
  // ring: 8 x 4 x 50 = 1,600 GB/s on 400 GB/s: each ring gets a quarter, 1/oversubscription.
  const Scenario mixed = test::scenario(small_fabric(R"({"rank_to_node": [0, 4, 1, 5, 2, 6, 3, 7]})"));
  const GroupPlacement p4 = costliest_group_placement(mixed.cluster, RankLayout(mixed.parallel), GroupKind::kDp, 0);
  CHECK(p4.oversubscription == Approx(4.0));
  // Ring all-reduce of 1 GiB over n = 8: 2 (n - 1) / n x bytes / (NIC per GPU x nic_efficiency / share) + latency.
  const NcclCollectiveModel model(mixed.cluster, params.network);
  const double bytes = 1 << 30;
  const CollectivePlan plan = model.plan({CollectiveKind::kAllReduce, static_cast<Bytes>(bytes), p4});
  const double nic = 50e9 * params.network.nic_efficiency / 4.0;  // 400 Gb/s = 50 GB/s per GPU, a quarter of it
  const double hand = 2.0 * 7.0 / 8.0 * bytes / nic + plan.latency;
  CHECK(std::string(plan.algorithm) == "ring");
  CHECK(plan.time == Approx(hand).epsilon(0.01));
  // The same group at the full rate is 4 times faster in its bandwidth term.
  const CollectivePlan full = model.plan({CollectiveKind::kAllReduce, static_cast<Bytes>(bytes), p1});
  CHECK((plan.time - plan.latency) / (full.time - full.latency) == Approx(4.0).epsilon(0.01));
}

TEST_CASE("An explicit map equal to the sequential order predicts what the sequential policy does", "[sim][placement]") {
  const Prediction seq = predict(test::scenario(small_fabric(R"({"policy": "sequential"})")));
  const Prediction by_node = predict(test::scenario(small_fabric(R"({"rank_to_node": [0, 1, 2, 3, 4, 5, 6, 7]})")));
  std::string per_rank = "[";
  for (int r = 0; r < 64; ++r) per_rank += std::to_string(r / 8) + (r < 63 ? "," : "]");
  const Prediction by_rank = predict(test::scenario(small_fabric(R"({"rank_to_node": )" + per_rank + "}")));
  CHECK(by_node.report.iteration_time == seq.report.iteration_time);
  CHECK(by_rank.report.iteration_time == seq.report.iteration_time);
}

TEST_CASE("Without a placement section a non-oversubscribed fabric predicts as with policy sequential",
          "[sim][placement]") {
  const std::string base = R"({"model": {"preset": "llama3-8b", "num_hidden_layers": 4},
      "cluster": {"preset": "dgx-h100", "num_gpus": 64}, "parallel": {"tp": 4, "pp": 2},
      "training": {"seq_length": 2048, "global_batch_size": 64})";
  const Prediction absent = predict(test::scenario(base + "}"));
  const Prediction sequential = predict(test::scenario(base + R"(, "placement": {"policy": "sequential"}})"));
  CHECK(absent.report.iteration_time == sequential.report.iteration_time);
}

TEST_CASE("Arnold's optimiser reduces the largest spread on a 9,600-GPU fabric and the step gets faster",
          "[sim][placement]") {
  // scenarios/placement/arnold-9600xh800.json: 1,200 of 2,048 nodes, minipods of 128 nodes, 4:1 to the spine.
  Scenario s = load_scenario(test::source_dir() / "scenarios/placement/arnold-9600xh800.json");
  const Prediction random = predict(s);
  s.placement->policy = PlacementPolicy::kOptimized;
  const Prediction optimized = predict(s);
  const PlacementSummary r = summarize_placement(random.scenario), o = summarize_placement(optimized.scenario);
  // DP 150 x PP 8 nodes into 128-node minipods: the best aligned tile is 32 DP x 4 stages, ceil(150/32) = 5 and
  // ceil(8/4) = 2 minipods (weighted sum 7, against 16 + 8 for a scatter over all 16 minipods).
  CHECK(o.kinds[0].blocks == 5);
  CHECK(o.kinds[1].blocks == 2);
  CHECK(r.kinds[0].blocks + r.kinds[1].blocks > o.kinds[0].blocks + o.kinds[1].blocks);
  CHECK(o.kinds[0].link_factor == Approx(1.0));
  CHECK(optimized.report.iteration_time < random.report.iteration_time);
  // What the links explain: ZeRO 1 reduce-scatters the fp32 gradients and all-gathers the bf16 weights of a rank,
  // (n - 1) / n of (gradient + weight bytes) each way through the NIC (50 GB/s per GPU x nic_efficiency), slowed by
  // the DP uplink share; the last reductions are exposed at the end of the step, so the step shrinks by about the
  // difference of that time under the two shares (PP sends add a few milliseconds).
  const StageMemory& m = random.report.per_stage[0];
  const double n = 150, bytes = (n - 1) / n * static_cast<double>(m.gradients + m.weights);
  const double nic = 50e9 * default_cost_params().network.nic_efficiency;
  const double hand = bytes * (r.kinds[0].link_factor - o.kinds[0].link_factor) / nic;
  CHECK(r.kinds[0].link_factor == Approx(2.5).epsilon(0.05));
  CHECK(random.report.iteration_time - optimized.report.iteration_time == Approx(hand).epsilon(0.05));
}

TEST_CASE("Bad placements are refused naming the field", "[sim][placement]") {
  CHECK_THAT(test::scenario_error(small_fabric(R"({"rank_to_node": [0, 1, 2, 3, 4, 5, 6, 8]})")),
             Catch::Contains("placement.rank_to_node[7]"));
  CHECK_THAT(test::scenario_error(small_fabric(R"({"rank_to_node": [0, 1, 2, 3, 4, 5, 6, 6]})")),
             Catch::Contains("placement.rank_to_node[7]"));
  CHECK_THAT(test::scenario_error(small_fabric(R"({"policy": "closest"})")), Catch::Contains("placement.policy"));
  CHECK_THAT(test::scenario_error(small_fabric(R"({"policy": "random", "fabric_nodes": 4})")),
             Catch::Contains("placement.fabric_nodes"));
  CHECK_THAT(test::scenario_error(small_fabric(R"({"policy": "random", "sede": 3})")), Catch::Contains("sede"));
}
