// The flex (DeepEP / HybridEP) token dispatcher against independent answers: the expected fan-out of a token's top-k
// experts over ranks and NVLink domains against brute-force enumeration of every routing, the bytes it moves
// against hand counts, its cost against the two-level formula, and its lowering against the alltoall dispatcher's.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <functional>
#include <numeric>
#include <random>
#include <set>
#include <vector>

#include "hardware/collective_cost.h"
#include "sim/lower/moe_routing.h"
#include "test_support.h"

using namespace orrery;

namespace {

MoeSpec routing(int experts, int k, int groups = 0, int groups_per_token = 0) {
  MoeSpec m;
  m.num_experts = experts;
  m.experts_per_token = k;
  m.num_groups = groups;
  m.groups_per_token = groups_per_token;
  return m;
}

// Every k-subset of `pool`, in turn.
void subsets(const std::vector<int>& pool, int k, std::size_t from, std::vector<int>& pick,
             const std::function<void(const std::vector<int>&)>& visit) {
  if (static_cast<int>(pick.size()) == k) return visit(pick);
  for (std::size_t i = from; i < pool.size(); ++i) {
    pick.push_back(pool[i]);
    subsets(pool, k, i + 1, pick, visit);
    pick.pop_back();
  }
}

// The mean number of slices reached over every equally likely routing: all choices of groups, then all k-subsets
// of their experts (slices and groups are contiguous runs of experts).
double enumerate_reached(int experts, int k, int parts, int groups, int chosen) {
  const int per_group = experts / groups, per_part = experts / parts;
  std::vector<int> group_ids(static_cast<std::size_t>(groups));
  for (int g = 0; g < groups; ++g) group_ids[static_cast<std::size_t>(g)] = g;
  double total = 0;
  long count = 0;
  std::vector<int> chosen_groups;
  subsets(group_ids, chosen, 0, chosen_groups, [&](const std::vector<int>& gs) {
    std::vector<int> pool;
    for (int g : gs) {
      for (int e = g * per_group; e < (g + 1) * per_group; ++e) pool.push_back(e);
    }
    std::vector<int> pick;
    subsets(pool, k, 0, pick, [&](const std::vector<int>& es) {
      std::set<int> reached;
      for (int e : es) reached.insert(e / per_part);
      total += static_cast<double>(reached.size());
      ++count;
    });
  });
  return total / static_cast<double>(count);
}

// Qwen3-30B-A3B (128 experts, top-8, h 2048), one layer, EP 16 over two DGX H100 nodes.
Scenario qwen3(const std::string& parallel_extra) {
  return test::scenario(R"({"model": {"preset": "qwen3-30b-a3b", "num_hidden_layers": 1},
      "cluster": {"preset": "dgx-h100", "num_gpus": 16}, "parallel": {"ep": 16)" + parallel_extra + R"(},
      "training": {"seq_length": 4096, "micro_batch_size": 1, "global_batch_size": 16}})");
}

// P(none of 8 picks from 128 experts falls among m given ones) = C(128 - m, 8) / C(128, 8).
double miss8(int m) {
  double p = 1;
  for (int i = 0; i < 8; ++i) p *= (128.0 - m - i) / (128.0 - i);
  return p;
}

}  // namespace

TEST_CASE("a token's experts reach as many ranks and domains as enumerating every routing gives", "[sim][moe]") {
  // Uniform top-3 of 16 experts over 4 or 8 slices.
  CHECK(expected_parts_reached(routing(16, 3), 4) == Approx(enumerate_reached(16, 3, 4, 1, 1)));
  CHECK(expected_parts_reached(routing(16, 3), 8) == Approx(enumerate_reached(16, 3, 8, 1, 1)));
  // Group-limited with experts uniform in the chosen groups: 4 groups of 4, each token in its best 2; slices
  // holding two groups, one, or half of one.
  for (int parts : {2, 4, 8}) {
    INFO(parts << " slices");
    CHECK(uniform_parts_reached(routing(16, 3, 4, 2), parts) == Approx(enumerate_reached(16, 3, parts, 4, 2)));
  }
  // Slices and groups that cut across each other: 24 experts in 4 groups of 6, best 2 groups, top-3, 3 slices of 8.
  CHECK(uniform_parts_reached(routing(24, 3, 4, 2), 3) == Approx(enumerate_reached(24, 3, 3, 4, 2)));
  // Every expert picked: all slices reached.
  CHECK(expected_parts_reached(routing(8, 8), 8) == Approx(8.0));
}

namespace {

// A second, plain sampler of Megatron-Core's group-limited top-k (router.py group_limited_topk) with the standard
// library's normal distribution and full sorts: the mean slices reached over `tokens` routings.
double plain_router_sample(const MoeSpec& moe, int parts, int tokens, bool sigmoid) {
  std::mt19937 rng(7);
  std::normal_distribution<double> normal;
  const int per_group = moe.num_experts / moe.num_groups, best = moe.experts_per_token / moe.groups_per_token;
  double total = 0;
  for (int t = 0; t < tokens; ++t) {
    std::vector<double> score(static_cast<std::size_t>(moe.num_experts));
    for (double& s : score) s = sigmoid ? 1.0 / (1.0 + std::exp(-normal(rng))) : std::exp(normal(rng));
    std::vector<std::pair<double, int>> groups;
    for (int g = 0; g < moe.num_groups; ++g) {
      std::vector<double> mine(score.begin() + g * per_group, score.begin() + (g + 1) * per_group);
      std::sort(mine.rbegin(), mine.rend());
      groups.push_back({std::accumulate(mine.begin(), mine.begin() + best, 0.0), g});
    }
    std::sort(groups.rbegin(), groups.rend());
    std::vector<std::pair<double, int>> pool;
    for (int i = 0; i < moe.groups_per_token; ++i) {
      for (int e = groups[static_cast<std::size_t>(i)].second * per_group; e < (groups[static_cast<std::size_t>(i)].second + 1) * per_group; ++e) {
        pool.push_back({score[static_cast<std::size_t>(e)], e});
      }
    }
    std::sort(pool.rbegin(), pool.rend());
    std::set<int> reached;
    for (int i = 0; i < moe.experts_per_token; ++i) reached.insert(pool[static_cast<std::size_t>(i)].second / (moe.num_experts / parts));
    total += static_cast<double>(reached.size());
  }
  return total / tokens;
}

}  // namespace

TEST_CASE("group-limited fan-out follows Megatron-Core's router, which packs the top-k into its chosen groups",
          "[sim][moe][slow]") {
  // DeepSeek-V3 routing: 256 experts in 8 groups, the best 4 by the sum of their top-2 sigmoid scores, then top-8.
  MoeSpec v3 = routing(256, 8, 8, 4);
  v3.router_correction_bias = true;  // noaux_tc: sigmoid scores
  for (int parts : {8, 16, 64}) {
    INFO(parts << " slices");
    const double sampled = plain_router_sample(v3, parts, 20000, true);
    CHECK(expected_parts_reached(v3, parts) == Approx(sampled).epsilon(0.02));
  }
  // Over 8 nodes, one group each: nearly every chosen group gets an expert (3.6 if they were uniform within).
  CHECK(expected_parts_reached(v3, 8) > uniform_parts_reached(v3, 8) * 1.05);
  CHECK(expected_parts_reached(v3, 8) <= 4.0);
}

TEST_CASE("the flex dispatcher sends a token once per domain and rank it needs", "[sim][moe]") {
  const int tokens = 1000, bytes = 2;
  // Two experts on two ranks in two domains, top-1: half the tokens cross; nothing is forwarded inside a domain.
  GroupPlacement two;
  two.size = 2, two.ranks_per_domain = 1, two.domains = 2, two.tier = Tier::kLeaf;
  const FlexDispatchBytes a = flex_dispatch_bytes(routing(2, 1), two, tokens, bytes);
  CHECK(a.network == tokens * bytes / 2);
  CHECK(a.nvlink == 0);
  // EP 8 in one domain, 16 experts, top-2: a token reaches 8 (1 - C(14,2)/C(16,2)) = 8 x 29/120 ranks, 7/8 of them
  // over NVLink; the alltoall dispatcher would send both copies (2 x 7/8).
  GroupPlacement node;
  node.size = 8, node.ranks_per_domain = 8, node.domains = 1;
  const FlexDispatchBytes b = flex_dispatch_bytes(routing(16, 2), node, tokens, bytes);
  CHECK(static_cast<double>(b.nvlink) == Approx(tokens * bytes * 8.0 * 29 / 120 * 7 / 8).margin(1));
  CHECK(static_cast<double>(b.received) == Approx(tokens * bytes * 8.0 * 29 / 120).margin(1));
  CHECK(b.network == 0);
  // A busiest rank with 3x the average load gets 3 x 1.93 rank-copies per token; with 8x it would be 15.5, but a
  // rank receives each token at most once from each of the 8 senders.
  CHECK(static_cast<double>(flex_dispatch_bytes(routing(16, 2), node, tokens, bytes, 3.0).nvlink) ==
        Approx(tokens * bytes * 3 * 8.0 * 29 / 120 * 7 / 8).margin(1));
  CHECK(flex_dispatch_bytes(routing(16, 2), node, tokens, bytes, 8.0).nvlink == tokens * bytes * 8 * 7 / 8);
}

TEST_CASE("a flex dispatch takes the slower of its RDMA and NVLink parts", "[hardware][cost][moe]") {
  ClusterSpec c = parse_cluster(nlohmann::json::parse(R"({"preset": "dgx-h100", "num_gpus": 64})"), "cluster");
  NetworkParams net{.nvlink_efficiency = 0.8, .nvls_efficiency = 0.6, .nic_efficiency = 0.9, .pipeline_fill = 20e-6,
                    .expert_dispatch_nvlink_efficiency = 0.7, .expert_dispatch_nic_efficiency = 0.9};
  NcclCollectiveModel model(c, net);
  std::vector<int> members;
  for (int i = 0; i < 64; ++i) members.push_back(i);
  CollectiveOp op{CollectiveKind::kExpertDispatch, 100'000'000, place_members(c, members)};
  op.network_bytes = 200'000'000;
  // RDMA: 200 MB at the NIC per GPU x 0.9 bounds it; latency: call 20 us + Simple base 8.4 us + one network hop
  // 14 us + the fat tree's hop.
  const double rdma = 200e6 / (c.nic_bandwidth_per_gpu() * 0.9);
  REQUIRE(rdma > 100e6 / (c.gpu.nvlink_bandwidth * 0.7));
  const CollectivePlan plan = model.plan(op);
  CHECK(plan.time == Approx(rdma + 20e-6 + 8.4e-6 + 14e-6 + op.placement.network_latency).epsilon(1e-9));
  CHECK(std::string(plan.algorithm) == "two_level");
}

TEST_CASE("flex dispatch lowers to two-level transfers that move less than the alltoall dispatcher", "[sim][moe]") {
  const WorkloadGraph flex = test::lowered(qwen3(R"(, "moe_token_dispatcher_type": "flex")"));
  const WorkloadGraph a2a = test::lowered(qwen3(""));
  struct Moved {
    double nvlink = 0, network = 0, all_to_all = 0;
    int dispatches = 0, syncs = 0;
  };
  const auto moved = [](const WorkloadGraph& g) {
    Moved m;
    for (const Task& t : g.programs[0].tasks) {
      if (t.phase != Phase::kForward) continue;
      if (t.kind == TaskKind::kHostSync && std::string(t.label) == "moe_token_counts_item") ++m.syncs;
      if (t.group != GroupKind::kEp) continue;
      const auto& op = std::get<CollectiveOp>(g.programs[0].ops[static_cast<std::size_t>(t.op)]);
      if (op.kind == CollectiveKind::kExpertDispatch) {
        ++m.dispatches;
        m.nvlink += static_cast<double>(op.bytes);
        m.network += static_cast<double>(op.network_bytes);
      }
      if (op.kind == CollectiveKind::kAllToAll && op.bytes > 128 * 8) m.all_to_all += static_cast<double>(op.bytes);
    }
    return m;
  };
  const Moved f = moved(flex), a = moved(a2a);
  // Dispatch and combine, 4096 tokens of 2048 bf16 values each way; a token reaches 2 (1 - C(64,8)/C(128,8)) nodes
  // (one of them remote half the time) and 16 (1 - C(120,8)/C(128,8)) ranks (7/8 of them forwarded over NVLink).
  const double token = 2048 * 2, tokens = 4096;
  REQUIRE(f.dispatches == 2);
  CHECK(f.network == Approx(2 * tokens * 2 * (1 - miss8(64)) * 0.5 * token).epsilon(1e-6));
  CHECK(f.nvlink == Approx(2 * tokens * 16 * (1 - miss8(8)) * 7.0 / 8 * token).epsilon(1e-6));
  CHECK(f.all_to_all == 0);
  // The alltoall dispatcher sends all 8 copies of every token, each way.
  CHECK(a.all_to_all == Approx(2 * tokens * 8 * token));
  CHECK(f.network + f.nvlink < a.all_to_all);
  // Both read the token counts on the host once per layer and forward pass.
  CHECK(f.syncs == 1);
  CHECK(a.syncs == 1);
  // So the flex dispatcher's iteration is shorter; and its dispatch, on the EP stream, waits for the host to
  // have read the counts, as DeepEP's CPU waits for them before it launches the transfer.
  const Prediction pf = predict(qwen3(R"(, "moe_token_dispatcher_type": "flex")"));
  CHECK(pf.run.makespan < predict(qwen3("")).run.makespan);
  const Program& prog = pf.graph.programs[0];
  Nanoseconds sync_end = -1, dispatch_start = -1;
  for (std::size_t i = 0; i < prog.tasks.size(); ++i) {
    const Task& t = prog.tasks[i];
    if (t.phase != Phase::kForward || t.microbatch != 0) continue;
    if (std::string(t.label) == "moe_token_counts_item") sync_end = pf.run.instances[0].timings[i].end;
    if (std::string(t.label) == "moe_dispatch" && dispatch_start < 0) dispatch_start = pf.run.instances[0].timings[i].start;
  }
  REQUIRE(sync_end > 0);
  CHECK(dispatch_start >= sync_end);
}

TEST_CASE("flex dispatcher inputs are checked", "[sim][moe][errors]") {
  CHECK(qwen3(R"(, "moe_token_dispatcher_type": "flex", "moe_flex_dispatcher_backend": "hybridep")").parallel
            .moe_flex_dispatcher_backend == FlexBackend::kHybridEP);
  CHECK_THAT(test::scenario_error(R"({"model": "qwen3-30b-a3b", "cluster": {"preset": "dgx-h100", "num_gpus": 16},
      "parallel": {"ep": 16, "moe_flex_dispatcher_backend": "deepep"}})"),
             Catch::Contains("parallel.moe_flex_dispatcher_backend (deepep)") && Catch::Contains("flex"));
  CHECK_THAT(test::scenario_error(R"({"model": "qwen3-30b-a3b", "cluster": {"preset": "dgx-h100", "num_gpus": 16},
      "parallel": {"ep": 16, "moe_token_dispatcher_type": "flex", "moe_flex_dispatcher_backend": "nccl"}})"),
             Catch::Contains("parallel.moe_flex_dispatcher_backend (\"nccl\")") && Catch::Contains("deepep, hybridep"));
  CHECK_THAT(test::scenario_error(R"({"model": "qwen3-30b-a3b", "cluster": {"preset": "dgx-h100", "num_gpus": 16},
      "parallel": {"ep": 1, "moe_token_dispatcher_type": "flex"}})"),
             Catch::Contains("parallel.ep (1)") && Catch::Contains("flex"));
  CHECK_THAT(test::scenario_error(R"({"model": "qwen3-30b-a3b", "cluster": {"preset": "dgx-h100", "num_gpus": 16},
      "parallel": {"ep": 8, "etp": 2, "moe_token_dispatcher_type": "flex"}})"),
             Catch::StartsWith("not modelled yet:") && Catch::Contains("parallel.etp (2)"));
  CHECK_THAT(test::scenario_error(R"({"model": "qwen3-30b-a3b", "cluster": {"preset": "dgx-h100", "num_gpus": 16},
      "parallel": {"ep": 16, "moe_token_dispatcher_type": "flex"}, "training": {"moe_expert_capacity_factor": 1.0,
      "moe_pad_expert_input_to_capacity": true}})"),
             Catch::StartsWith("not modelled yet:") && Catch::Contains("moe_pad_expert_input_to_capacity"));
}
