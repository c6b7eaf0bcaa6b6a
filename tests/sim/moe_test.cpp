// Mixture-of-experts lowering against hand counts: the all-to-all bytes top-k routing moves (each of the T_loc tokens
// a rank routes is sent k times, h values of 2 bytes each: Megatron-Core's alltoall token dispatcher), the grouped
// GEMM of the E / ep local experts, expert weights sharded by EP x ETP rather than TP, and the expert-data-parallel
// group of tp cp dp / (ep etp) ranks (Megatron-Core parallel_state, expert grid).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <map>
#include <tuple>

#include "sim/rank_layout.h"
#include "test_support.h"

using namespace orrery;

namespace {

// Mixtral-8x7B (h 4096, 8 experts of width 14336, top-2, 32 heads, 8 KV heads), one layer, one sequence of 4096.
Scenario mixtral(int gpus, int tp, int ep, int etp, const std::string& training_extra = "") {
  return test::scenario(R"({"model": {"preset": "mixtral-8x7b", "num_hidden_layers": 1},
      "cluster": {"preset": "dgx-h100", "num_gpus": )" + std::to_string(gpus) +
                        R"(}, "parallel": {"tp": )" + std::to_string(tp) + R"(, "ep": )" + std::to_string(ep) +
                        R"(, "etp": )" + std::to_string(etp) + R"(, "sequence_parallel": )" + (tp > 1 ? "true" : "false") +
                        R"(}, "training": {"seq_length": 4096, "micro_batch_size": 1, "global_batch_size": )" +
                        std::to_string(gpus / tp) + training_extra + "}}");
}

// Bytes of the forward all-to-alls over the EP group named `label`, on rank 0.
double ep_all_to_all(const WorkloadGraph& g, const std::string& label, Phase phase) {
  double bytes = 0;
  const Program& p = g.programs[0];
  for (const Task& t : p.tasks) {
    if (t.group != GroupKind::kEp || t.phase != phase) continue;
    const auto& c = std::get<CollectiveOp>(p.ops[static_cast<std::size_t>(t.op)]);
    if (c.kind == CollectiveKind::kAllToAll && std::string(t.label).find(label) != std::string::npos) bytes += static_cast<double>(c.bytes);
  }
  return bytes;
}

std::vector<GemmShape> expert_gemms(const WorkloadGraph& g, Phase phase) {
  std::vector<GemmShape> out;
  const Program& p = g.programs[0];
  for (const Task& t : p.tasks) {
    const auto* s = std::get_if<GemmShape>(&p.ops[static_cast<std::size_t>(t.op)]);
    if (s && t.phase == phase && std::string(t.label).find("experts") != std::string::npos) out.push_back(*s);
  }
  return out;
}

}  // namespace

TEST_CASE("top-k dispatch and combine each move T_loc k h 2 bytes per rank", "[sim][moe]") {
  const double h = 4096, k = 2;
  SECTION("tp 1: a rank routes its whole sequence") {
    const WorkloadGraph g = test::lowered(mixtral(8, 1, 8, 1));
    CHECK(ep_all_to_all(g, "moe_dispatch", Phase::kForward) == Approx(4096 * k * h * 2));
    CHECK(ep_all_to_all(g, "moe_combine", Phase::kForward) == Approx(4096 * k * h * 2));
    // The backward pass moves the gradients the same way, in reverse.
    CHECK(ep_all_to_all(g, "moe_dispatch", Phase::kBackwardInput) == Approx(4096 * k * h * 2));
    CHECK(ep_all_to_all(g, "moe_combine", Phase::kBackwardInput) == Approx(4096 * k * h * 2));
    // Before the tokens, the per-expert counts (8 experts, int64).
    CHECK(ep_all_to_all(g, "moe_token_counts", Phase::kForward) == Approx(8 * 8));
  }
  SECTION("tp 2 with sequence parallelism: its sequence shard") {
    const WorkloadGraph g = test::lowered(mixtral(8, 2, 4, 1));
    CHECK(ep_all_to_all(g, "moe_dispatch", Phase::kForward) == Approx(2048 * k * h * 2));
  }
  SECTION("drop-and-pad: splits fixed at the capacity, so no count exchange and no host sync") {
    const WorkloadGraph g = test::lowered(mixtral(8, 1, 8, 1, R"(, "moe_expert_capacity_factor": 1.25,
        "moe_pad_expert_input_to_capacity": true)"));
    CHECK(ep_all_to_all(g, "moe_token_counts", Phase::kForward) == 0);
    CHECK(ep_all_to_all(g, "moe_dispatch", Phase::kForward) == Approx(1.25 * 4096 * k * h * 2));
    const auto& tasks = g.programs[0].tasks;
    CHECK(std::none_of(tasks.begin(), tasks.end(), [](const Task& t) {
      return t.kind == TaskKind::kHostSync && std::string(t.label) == "moe_token_counts_item";
    }));
  }
  SECTION("dropless: one host sync per MoE layer's forward") {
    const WorkloadGraph g = test::lowered(mixtral(8, 1, 8, 1));
    const auto& tasks = g.programs[0].tasks;
    CHECK(std::count_if(tasks.begin(), tasks.end(), [](const Task& t) {
      return t.kind == TaskKind::kHostSync && std::string(t.label) == "moe_token_counts_item";
    }) == 1);
  }
  SECTION("a skewed load: the busiest rank waits for 1.5x the balanced share") {
    const WorkloadGraph g = test::lowered(mixtral(8, 1, 8, 1, R"(, "moe_load_imbalance": 1.5)"));
    CHECK(ep_all_to_all(g, "moe_dispatch", Phase::kForward) == Approx(1.5 * 4096 * k * h * 2));
  }
}

TEST_CASE("local experts run as one grouped GEMM over the tokens they receive", "[sim][moe]") {
  // ep 4: 2 local experts. Balanced top-2 routing of the group's 4 x 4096 tokens gives each of the 8 experts
  // 4 x 4096 x 2 / 8 = 4096 rows.
  const std::vector<GemmShape> fwd = expert_gemms(test::lowered(mixtral(4, 1, 4, 1)), Phase::kForward);
  REQUIRE(fwd.size() == 2);
  CHECK(fwd[0] == GemmShape{4096, 2 * 14336, 4096, 2, DType::kBf16, true});  // gate and up
  CHECK(fwd[1] == GemmShape{4096, 4096, 14336, 2, DType::kBf16, true});      // down
  // tp 2, etp 2: each rank routes a 2048-token shard, the expert-TP pair gathers both (still 4096 rows per expert:
  // 4 EP groups' worth of 2 x 2048 tokens, top-2, over 8 experts) and halves the width.
  const std::vector<GemmShape> etp = expert_gemms(test::lowered(mixtral(8, 2, 4, 2)), Phase::kForward);
  REQUIRE(etp.size() == 2);
  CHECK(etp[0] == GemmShape{4096, 14336, 4096, 2, DType::kBf16, true});
  // Forward FLOPs of the experts: balanced, a rank does the work of as many token copies as it sends,
  // 2 x 4096 x k x 3 h ffn.
  const auto flops = [](const std::vector<GemmShape>& v) {
    double f = 0;
    for (const GemmShape& s : v) f += s.flops();
    return f;
  };
  CHECK(flops(fwd) == Approx(2.0 * 4096 * 2 * 3 * 4096 * 14336));
}

TEST_CASE("biased experts add the down projection's bias per expert, as Megatron-Core's TEGroupedMLP does",
          "[sim][moe]") {
  // gpt-oss-120b (h 2880, 128 experts, top-4, biased linears), one layer, ep 8 on 8 GPUs, one sequence of 4096: a
  // rank's 16 local experts receive 4096 x 4 = 16384 token copies, R = 16384 x 2880 x 2 bytes of down outputs.
  // TEGroupedMLP._apply_bias (megatron/core/transformer/moe/experts.py, core_v0.15.0) runs, per expert, b * p
  // (writes its rows) and t + b p (reads two row blocks, writes one), then one torch.cat of all rows (reads and
  // writes R): read 3 R, written 3 R, 2 x 16 + 1 launches. Its autograd backward, per expert: g p and g b (each
  // reads and writes a block) and their sums to the bias's and the probabilities' shapes (each reads a block), the
  // bias gradient's accumulation into main_grad; then split's cat of the blocks' gradients (reads and writes R) and
  // a small one of the probabilities': read 5 R, written 3 R, 5 x 16 + 2 launches.
  const double R = 16384.0 * 2880 * 2;
  const WorkloadGraph g = test::lowered(test::scenario(R"({"model": {"preset": "gpt-oss-120b",
      "num_hidden_layers": 1, "layer_types": ["full_attention"]}, "cluster": {"preset": "dgx-h100", "num_gpus": 8},
      "parallel": {"ep": 8},
      "training": {"seq_length": 4096, "micro_batch_size": 1, "global_batch_size": 8}})"));
  std::map<Phase, std::vector<ElementwiseShape>> bias;
  for (const Task& t : g.programs[0].tasks) {
    if (std::string(t.label) == "expert_bias") {
      bias[t.phase].push_back(std::get<ElementwiseShape>(g.programs[0].ops[static_cast<std::size_t>(t.op)]));
    }
  }
  REQUIRE(bias[Phase::kForward].size() == 1);
  CHECK(static_cast<double>(bias[Phase::kForward][0].bytes_read) == Approx(3 * R));
  CHECK(static_cast<double>(bias[Phase::kForward][0].bytes_written) == Approx(3 * R));
  CHECK(bias[Phase::kForward][0].kernels == 33);
  REQUIRE(bias[Phase::kBackwardInput].size() == 1);
  CHECK(static_cast<double>(bias[Phase::kBackwardInput][0].bytes_read) == Approx(5 * R));
  CHECK(static_cast<double>(bias[Phase::kBackwardInput][0].bytes_written) == Approx(3 * R));
  CHECK(bias[Phase::kBackwardInput][0].kernels == 82);
  // Unbiased experts (Mixtral) have no such task.
  const WorkloadGraph plain = test::lowered(mixtral(8, 1, 8, 1));
  const auto& tasks = plain.programs[0].tasks;
  CHECK(std::none_of(tasks.begin(), tasks.end(), [](const Task& t) { return std::string(t.label) == "expert_bias"; }));
}

TEST_CASE("expert weights are sharded by EP x ETP, the rest by TP", "[sim][moe][memory]") {
  const double h = 4096, ffn = 14336, kv = 1024;
  for (auto [tp, ep, etp] : {std::tuple{1, 8, 1}, std::tuple{2, 4, 1}, std::tuple{2, 2, 2}, std::tuple{4, 2, 1}}) {
    INFO("tp " << tp << " ep " << ep << " etp " << etp);
    const WorkloadGraph g = test::lowered(mixtral(8, tp, ep, etp));
    // Megatron pads the vocabulary to a multiple of 128 tp.
    const double vocab = std::ceil(32000.0 / (128 * tp)) * 128 * tp;
    const double dense = (2 * vocab * h + h * (h + 2 * kv) + h * h) / tp + 3 * h + h * 8;  // + norms, router
    const double experts = 8.0 / ep * 3 * h * ffn / etp;
    CHECK(static_cast<double>(g.programs[0].static_memory[0]) == Approx(2 * (dense + experts)));
  }
}

TEST_CASE("the expert-data-parallel group holds tp cp dp / (ep etp) ranks", "[sim][moe]") {
  const Scenario s = mixtral(16, 2, 4, 1);  // dp 8
  const RankLayout layout(s.parallel);
  for (int rank : {0, 5, 11}) {
    INFO("rank " << rank);
    const std::vector<int> edp = layout.group_members(GroupKind::kExpertDp, rank);
    const std::vector<int> ep = layout.group_members(GroupKind::kEp, rank);
    CHECK(edp.size() == 2 * 8 / 4);
    CHECK(ep.size() == 4);
    // The two groups meet only in the rank itself: together they span tp x dp / etp ranks.
    int shared = 0;
    for (int r : edp) shared += static_cast<int>(std::count(ep.begin(), ep.end(), r));
    CHECK(shared == 1);
  }
}

TEST_CASE("MoE refusals name the field and the rule", "[sim][moe][errors]") {
  CHECK_THAT(test::scenario_error(R"({"model": {"preset": "mixtral-8x7b", "num_hidden_layers": 1},
      "cluster": {"preset": "dgx-h100", "num_gpus": 8}, "parallel": {"ep": 3}})"),
             Catch::Contains("parallel.ep (3)"));
  CHECK_THAT(test::scenario_error(R"({"model": "llama3-8b", "cluster": {"preset": "dgx-h100", "num_gpus": 8},
      "parallel": {"ep": 2}})"),
             Catch::Contains("parallel.ep (2)"));
  CHECK_THAT(test::scenario_error(R"({"model": {"preset": "mixtral-8x7b", "num_hidden_layers": 1},
      "cluster": {"preset": "dgx-h100", "num_gpus": 8}, "parallel": {"ep": 8}, "training": {"moe_load_imbalance": 0.5}})"),
             Catch::Contains("training.moe_load_imbalance (0.5)"));
}
