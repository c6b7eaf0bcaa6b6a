// DeepSeek-V3 (arXiv:2412.19437, Table and Section 4.2 hyper-parameters: h 7168, 128 heads, q_lora 1536,
// kv_lora 512, nope 128, rope 64, v 128, 256 routed experts of width 2048 with top-8, one shared expert, the first
// 3 layers dense with width 18432) lowered: its forward GEMM FLOPs per token against a hand count of each
// projection, and MLA's tensor-parallel split (down projections replicated, up projections by heads).
#include <catch2/catch.hpp>

#include "models/model_flops.h"
#include "models/param_count.h"
#include "test_support.h"

using namespace orrery;

namespace {

Scenario deepseek(int gpus, int tp, int ep) {
  return test::scenario(R"({"model": {"preset": "deepseek-v3", "num_hidden_layers": 4},
      "cluster": {"preset": "dgx-h100", "num_gpus": )" + std::to_string(gpus) +
                        R"(}, "parallel": {"tp": )" + std::to_string(tp) + R"(, "ep": )" + std::to_string(ep) +
                        R"(, "etp": 1, "sequence_parallel": )" + (tp > 1 ? "true" : "false") +
                        R"(}, "training": {"seq_length": 4096, "micro_batch_size": 1, "global_batch_size": )" +
                        std::to_string(gpus / tp) + "}}");
}

// Forward GEMM FLOPs of transformer layer `layer` on rank 0.
double forward_gemm_flops(const WorkloadGraph& g, int layer) {
  double f = 0;
  const Program& p = g.programs[0];
  for (const Task& t : p.tasks) {
    if (t.layer != layer || t.phase != Phase::kForward) continue;
    if (const auto* s = std::get_if<GemmShape>(&p.ops[static_cast<std::size_t>(t.op)])) f += s->flops();
  }
  return f;
}

std::vector<GemmShape> gemms(const WorkloadGraph& g, int layer, const std::string& label) {
  std::vector<GemmShape> out;
  const Program& p = g.programs[0];
  for (const Task& t : p.tasks) {
    const auto* s = std::get_if<GemmShape>(&p.ops[static_cast<std::size_t>(t.op)]);
    if (s && t.layer == layer && t.phase == Phase::kForward && label == t.label) out.push_back(*s);
  }
  return out;
}

// Hand count, weights per token of each projection (elements).
constexpr double kQDown = 7168.0 * 1536, kQUp = 1536.0 * 128 * (128 + 64), kKvDown = 7168.0 * (512 + 64),
                 kKvUp = 512.0 * 128 * (128 + 128), kOut = 128.0 * 128 * 7168;
constexpr double kAttention = kQDown + kQUp + kKvDown + kKvUp + kOut;
constexpr double kRouter = 7168.0 * 256, kExperts = (8 + 1) * 3.0 * 7168 * 2048, kDense = 3.0 * 7168 * 18432;

}  // namespace

TEST_CASE("DeepSeek-V3 forward GEMM FLOPs per token match a hand count of its projections", "[sim][mla][moe]") {
  const Scenario s = deepseek(8, 1, 8);
  const WorkloadGraph g = test::lowered(s);
  const double tokens = 4096;
  // Layers 0-2 are dense (first_k_dense_replace 3), layer 3 routes to 8 of 256 experts plus the shared one.
  CHECK(forward_gemm_flops(g, 0) / tokens == Approx(2 * (kAttention + kDense)));
  CHECK(forward_gemm_flops(g, 3) / tokens == Approx(2 * (kAttention + kRouter + kExperts)));
  // The model FLOP counter agrees with the lowering (balanced routing: a rank processes its own tokens' copies).
  CHECK(layer_gemm_flops_per_token(s.model, 3) == Approx(2 * (kAttention + kRouter + kExperts)));
  // The whole model: 671 B parameters, 37 B activated per token (the paper's abstract; the multi-token-prediction
  // module is not part of the main model). Our count includes both embedding tables in the active figure.
  const Scenario full = test::scenario(R"({"model": "deepseek-v3", "cluster": "dgx-h100"})");
  const ParamCount n = count_parameters(full.model);
  CHECK(static_cast<double>(n.total) == Approx(671e9).epsilon(0.005));
  CHECK(static_cast<double>(n.active) == Approx(37e9).epsilon(0.02));
}

TEST_CASE("MLA keeps down projections whole and splits up projections by heads under TP", "[sim][mla]") {
  const WorkloadGraph g = test::lowered(deepseek(8, 2, 4));
  // Sequence parallelism: the down projections run on the rank's 2048-token shard with all output features.
  const std::vector<GemmShape> down = gemms(g, 0, "qkv_down");
  REQUIRE(down.size() == 1);
  CHECK(down[0].m == 2048);
  CHECK(down[0].n == 1536 + 512 + 64);
  // The up projections see all 4096 tokens (after the all-gather of the compressed tensor), half of the heads.
  const std::vector<GemmShape> q_up = gemms(g, 0, "q_up");
  REQUIRE(q_up.size() == 1);
  CHECK(q_up[0] == GemmShape{4096, 64 * 192, 1536, 1, DType::kBf16});
  const std::vector<GemmShape> kv_up = gemms(g, 0, "kv_up");
  REQUIRE(kv_up.size() == 1);
  CHECK(kv_up[0] == GemmShape{4096, 64 * 256, 512, 1, DType::kBf16});
  // The compressed all-gather moves 4096 x (1536 + 512 + 64) bf16 values, far less than the hidden state.
  double gathered = 0;
  const Program& p = g.programs[0];
  for (const Task& t : p.tasks) {
    if (t.layer == 0 && t.phase == Phase::kForward && std::string(t.label) == "qkv_down" && t.group == GroupKind::kTp) {
      gathered += static_cast<double>(std::get<CollectiveOp>(p.ops[static_cast<std::size_t>(t.op)]).bytes);
    }
  }
  CHECK(gathered == Approx(4096.0 * (1536 + 512 + 64) * 2));
}
