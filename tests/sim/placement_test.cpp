// Groups priced where the scheduler puts their members: the costliest group of a kind prices the stage's
// collectives of that kind, and NVL72 jobs come in Slurm segments that keep groups inside one rack.
#include <catch2/catch.hpp>

#include <numeric>
#include <variant>

#include "hardware/topology.h"
#include "sim/group_placement.h"
#include "test_support.h"

using namespace orrery;

namespace {

std::vector<int> consecutive(int first, int count) {
  std::vector<int> v(static_cast<std::size_t>(count));
  std::iota(v.begin(), v.end(), first);
  return v;
}

// The placements of the TP collectives the lowering emitted for stage 0.
std::vector<GroupPlacement> tp_collective_placements(const WorkloadGraph& g) {
  std::vector<GroupPlacement> out;
  for (const Task& t : g.programs[0].tasks) {
    if (t.group != GroupKind::kTp) continue;
    if (const auto* c = std::get_if<CollectiveOp>(&g.programs[0].ops[static_cast<std::size_t>(t.op)])) {
      out.push_back(c->placement);
    }
  }
  return out;
}

}  // namespace

TEST_CASE("TP 6 on 8-GPU nodes is priced at the 4 + 2 split of its straddling groups, not as NVLink",
          "[sim][placement]") {
  // 24 H100s, TP 6 x DP 4: TP groups 0-5 (node 0), 6-11 (ranks 6, 7 on node 0 and 8-11 on node 1), 12-17 (12-15
  // on node 1, 16-17 on node 2), 18-23 (node 2). The two straddling groups wait on the network.
  const Scenario s = test::scenario(R"({"model": {"model_type": "llama", "num_hidden_layers": 2, "hidden_size": 6144,
      "num_attention_heads": 48, "num_key_value_heads": 6, "intermediate_size": 18432, "vocab_size": 32004},
      "cluster": {"preset": "dgx-h100", "num_gpus": 24}, "parallel": {"tp": 6, "sequence_parallel": true},
      "training": {"seq_length": 3072, "global_batch_size": 8}})");
  const GroupPlacement split = place_members(s.cluster, consecutive(6, 6));
  CHECK(split.domains == 2);
  CHECK(split.ranks_per_domain == 4);
  CHECK(split.fewest_per_domain == 2);
  CHECK(split.tier == Tier::kLeaf);
  CHECK(costliest_group_placement(s.cluster, RankLayout(s.parallel), GroupKind::kTp, 0) == split);
  const std::vector<GroupPlacement> used = tp_collective_placements(test::lowered(s));
  REQUIRE(!used.empty());
  for (const GroupPlacement& p : used) CHECK(p == split);
  // The report says so, and names the cure.
  std::string warnings;
  for (const std::string& w : s.warnings) warnings += w;
  CHECK_THAT(warnings, Catch::Contains("TP groups of 6 ranks fit in one NVLink domain of 8 GPUs, but one straddles 2"));
  CHECK_THAT(warnings, Catch::Contains("divides the domain"));
  // TP 4 fits every group inside a node: no warning, NVLink.
  const Scenario tp4 = test::scenario(R"({"model": {"preset": "llama3-8b", "num_hidden_layers": 2},
      "cluster": {"preset": "dgx-h100", "num_gpus": 24}, "parallel": {"tp": 4, "sequence_parallel": true},
      "training": {"seq_length": 2048, "global_batch_size": 12}})");
  CHECK(costliest_group_placement(tp4.cluster, RankLayout(tp4.parallel), GroupKind::kTp, 0).tier == Tier::kNvlink);
}

TEST_CASE("an EP-32 group of a 256-GPU job on NVL72 racks allocated in 64-GPU segments stays in one rack",
          "[sim][placement]") {
  // 256 GB200s are 64 four-GPU trays. In 16-tray (64-GPU) segments each segment gets a rack of its own (72 GPUs,
  // 8 left idle): ranks 64-95, the second EP group, sit on rack 1 at trays 0-7. Filled in order instead, rack 0
  // takes ranks 0-71 and the same group straddles racks 0 and 1 (8 ranks on rack 0, 24 on rack 1).
  const auto job = [](const std::string& segment) {
    return test::scenario(R"({"model": {"preset": "qwen3-30b-a3b", "num_hidden_layers": 2},
        "cluster": {"preset": "gb200-nvl72", "num_gpus": 256)" + segment + R"(},
        "parallel": {"ep": 32}, "training": {"seq_length": 4096, "global_batch_size": 256}})");
  };
  const Scenario segmented = job(R"(, "segment_nodes": 16)");
  CHECK(physical_gpu(segmented.cluster, 64) == 72);   // rack 1, tray 0
  CHECK(physical_gpu(segmented.cluster, 255) == 72 * 3 + 63);
  const GroupPlacement ep = place_members(segmented.cluster, consecutive(64, 32));
  CHECK(ep.domains == 1);
  CHECK(ep.tier == Tier::kNvlink);
  CHECK(costliest_group_placement(segmented.cluster, RankLayout(segmented.parallel), GroupKind::kEp, 0).domains == 1);
  // NVIDIA's launchers choose 16 for 64 nodes (the largest divisor up to 18): the default is the same.
  CHECK(job("").cluster.segment_nodes == 16);
  // In rank order the group straddles two racks, is priced so, and the report says so.
  const Scenario in_order = job(R"(, "segment_nodes": 0)");
  const GroupPlacement straddling = place_members(in_order.cluster, consecutive(64, 32));
  CHECK(straddling.domains == 2);
  CHECK(straddling.fewest_per_domain == 8);
  CHECK(costliest_group_placement(in_order.cluster, RankLayout(in_order.parallel), GroupKind::kEp, 0) == straddling);
  std::string warnings;
  for (const std::string& w : in_order.warnings) warnings += w;
  CHECK_THAT(warnings, Catch::Contains("EP groups of 32 ranks") && Catch::Contains("cluster.segment_nodes"));
}

TEST_CASE("a segment larger than a rack or not dividing the job's nodes is refused with its field",
          "[sim][placement][errors]") {
  const auto error = [](int gpus, int segment) {
    return test::scenario_error(R"({"model": "llama3-8b", "cluster": {"preset": "gb200-nvl72", "num_gpus": )" +
                                std::to_string(gpus) + R"(, "segment_nodes": )" + std::to_string(segment) + "}}");
  };
  CHECK_THAT(error(256, 32), Catch::Contains("cluster.segment_nodes (32)") &&
                                 Catch::Contains("at most the nodes of one NVLink domain (18"));
  CHECK_THAT(error(256, 12), Catch::Contains("cluster.segment_nodes (12)") && Catch::Contains("divide the job's nodes (64)"));
  CHECK(error(256, 8).empty());
  CHECK_THAT(error(256, -1), Catch::Contains("cluster.segment_nodes"));
}

TEST_CASE("a group strided wider than a domain by the rank order is not reported as straddling by surprise",
          "[sim][placement]") {
  // TP 4 x CP 4 on 16 H100s: each CP group is ranks r, r + 4, r + 8, r + 12, spread over 16 ranks, so it cannot sit
  // on one 8-GPU node whatever the scheduler does; no warning (it is priced across nodes all the same).
  const Scenario s = test::scenario(R"({"model": "llama3-8b", "cluster": {"preset": "dgx-h100", "num_gpus": 16},
      "parallel": {"tp": 4, "cp": 4, "sequence_parallel": true}, "training": {"seq_length": 8192, "global_batch_size": 4}})");
  for (const std::string& w : s.warnings) CHECK_THAT(w, !Catch::Contains("straddles"));
  const GroupPlacement cp = costliest_group_placement(s.cluster, RankLayout(s.parallel), GroupKind::kCp, 0);
  CHECK(cp.span == 13);
  CHECK(cp.domains == 2);
}

TEST_CASE("the costliest placement, placing each pattern of groups once, is what placing every group gives",
          "[sim][placement]") {
  // A second method: every group of the kind at the stage placed with place_members, the costliest kept, as
  // costliest_group_placement did before it placed groups a period apart once. Clusters with leaf tiers, nodes
  // that do not fill a domain, NVL72 segments and strided plans (TP 6, CP, EP with expert TP), over every kind.
  const auto exhaustive = [](const ClusterSpec& c, const RankLayout& ranks, GroupKind kind, int stage) {
    GroupPlacement worst;
    const int per_stage = ranks.num_ranks() / ranks.pp();
    for (int i = 0; i < per_stage; ++i) {
      const std::vector<int> members = ranks.group_members(kind, stage * per_stage + i);
      if (members.empty()) continue;
      const GroupPlacement p = place_members(c, members);
      if (worst.size <= 1 || costlier(p, worst)) worst = p;
    }
    return worst;
  };
  const std::string moe = R"("model": {"preset": "qwen3-30b-a3b", "num_hidden_layers": 8})";
  const std::string dense = R"("model": {"model_type": "llama", "num_hidden_layers": 8, "hidden_size": 6144,
      "num_attention_heads": 48, "num_key_value_heads": 12, "intermediate_size": 18432, "vocab_size": 32004})";
  const std::vector<std::string> jobs = {
      dense + R"(, "cluster": {"preset": "dgx-h100", "num_gpus": 1536}, "parallel": {"tp": 4, "pp": 4})",
      dense + R"(, "cluster": {"preset": "dgx-h100", "num_gpus": 576}, "parallel": {"tp": 6, "pp": 2, "cp": 2})",
      // TP 6 groups cross tray, rack (segment) and scalable-unit boundaries at different ranks.
      dense + R"(, "cluster": {"preset": "gb200-nvl72", "num_gpus": 1152, "segment_nodes": 16},
         "parallel": {"tp": 6, "pp": 2})",
      moe + R"(, "cluster": {"preset": "gb200-nvl72", "num_gpus": 1024, "segment_nodes": 16},
         "parallel": {"tp": 2, "pp": 2, "ep": 32, "etp": 1, "sequence_parallel": true})",
      moe + R"(, "cluster": {"preset": "gb200-nvl72", "num_gpus": 1024, "segment_nodes": 0},
         "parallel": {"tp": 4, "pp": 4, "ep": 8, "etp": 2, "sequence_parallel": true})",
      moe + R"(, "cluster": {"preset": "gb200-nvl72", "num_gpus": 864, "segment_nodes": 18},
         "parallel": {"tp": 4, "pp": 2, "cp": 3, "ep": 4, "sequence_parallel": true})",
  };
  for (const std::string& job : jobs) {
    CAPTURE(job);
    const Scenario s = test::scenario("{" + job + R"(, "training": {"seq_length": 6144, "micro_batch_size": 1}})");
    const RankLayout ranks(s.parallel);
    for (int k = 1; k < kNumGroupKinds; ++k) {
      const auto kind = static_cast<GroupKind>(k);
      CAPTURE(k);
      for (int stage = 0; stage < ranks.pp(); ++stage) {
        CHECK(costliest_group_placement(s.cluster, ranks, kind, stage) == exhaustive(s.cluster, ranks, kind, stage));
      }
    }
  }
}
