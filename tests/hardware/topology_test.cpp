// Placement of communication groups on the topology.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "hardware/topology.h"

using namespace orrery;

namespace {

std::vector<int> strided(int first, int stride, int n) {
  std::vector<int> v;
  for (int i = 0; i < n; ++i) v.push_back(first + i * stride);
  return v;
}

}  // namespace

TEST_CASE("groups inside a node stay on NVLink, and strided groups span nodes and tiers", "[hardware][topology]") {
  ClusterSpec c = parse_cluster(nlohmann::json::parse(R"({"preset": "dgx-h100", "num_gpus": 16384})"), "cluster");
  // TP 8 on one DGX.
  GroupPlacement tp = place_members(c, strided(0, 1, 8));
  CHECK(tp.tier == Tier::kNvlink);
  CHECK(tp.ranks_per_node == 8);
  // DP with stride 8 over 16 nodes: one member per node, inside one 32-node leaf group.
  GroupPlacement dp = place_members(c, strided(0, 8, 16));
  CHECK(dp.tier == Tier::kLeaf);
  CHECK(dp.ranks_per_node == 1);
  CHECK(dp.domains == 16);
  // DP with stride 2 (TP 2): four members per node.
  GroupPlacement dp2 = place_members(c, strided(0, 2, 16));
  CHECK(dp2.ranks_per_node == 4);
  CHECK(dp2.domains == 4);
  // Pipeline neighbours 1024 ranks apart leave the leaf group (32 nodes = 256 GPUs).
  GroupPlacement pp = place_members(c, {0, 1024});
  CHECK(pp.tier == Tier::kSpine);
}

TEST_CASE("NVL72 keeps 72 GPUs on one NVLink domain across 18 trays", "[hardware][topology]") {
  ClusterSpec c = parse_cluster(nlohmann::json::parse(R"({"preset": "gb200-nvl72", "num_gpus": 144})"), "cluster");
  GroupPlacement g = place_members(c, strided(0, 4, 18));  // one GPU per tray, 18 trays
  CHECK(g.tier == Tier::kNvlink);
  CHECK(g.ranks_per_node == 1);
  CHECK(place_members(c, {0, 72}).tier != Tier::kNvlink);
}

TEST_CASE("a group split unevenly across domains knows its fullest and its emptiest domain", "[hardware][topology]") {
  // 16 consecutive ranks on 12-GPU nodes: 12 on the first node, 4 on the second.
  ClusterSpec c = parse_cluster(nlohmann::json::parse(R"({"gpu": "h100-sxm", "num_gpus": 48, "gpus_per_node": 12,
      "nics_per_node": 12, "nic_bandwidth_Gbit_s": 400})"), "cluster");
  const GroupPlacement g = place_members(c, strided(0, 1, 16));
  CHECK(g.domains == 2);
  CHECK(g.ranks_per_domain == 12);
  CHECK(g.fewest_per_domain == 4);
}
