// Multi-token prediction (DeepSeek-V3 report arXiv:2412.19437 Section 2.2; Megatron-Core MultiTokenPredictionLayer):
// its parameters, FLOPs, lowering and memory against hand counts from DeepSeek-V3's published shapes (h 7168,
// 128 heads, q_lora 1536, kv_lora 512, nope 128, rope 64, v 128, 256 experts of width 2048 with top-8, one shared
// expert; one MTP depth, num_nextn_predict_layers 1).
#include <catch2/catch.hpp>

#include <functional>
#include <map>

#include "models/model_flops.h"
#include "models/model_input.h"
#include "models/param_count.h"
#include "test_support.h"

using namespace orrery;

namespace {

constexpr double kH = 7168, kVocab = 129280;
// Weights of one DeepSeek-V3 MoE layer, by tensor (elements).
constexpr double kQDown = kH * 1536, kQUp = 1536.0 * 128 * 192, kKvDown = kH * 576, kKvUp = 512.0 * 128 * 256,
                 kOut = 128.0 * 128 * kH;
constexpr double kNorms = 2 * kH + 1536 + 512;  // input, post-attention, q_down and kv_down norms
constexpr double kRouter = kH * 256 + 256;      // logits weight and the correction bias
constexpr double kExpert = 3 * kH * 2048;       // gate, up and down of one expert (routed or shared)
constexpr double kEhProj = 2 * kH * kH;         // eh_proj, 2h -> h
constexpr double kMtpNorms = 3 * kH;            // enorm, hnorm, final norm

// DeepSeek-V3 cut to 4 layers (3 dense, then 1 MoE) on two pipeline stages of 8 GPUs each.
Scenario deepseek(const std::string& model_extra, const std::string& parallel_extra = "") {
  return test::scenario(R"({"model": {"preset": "deepseek-v3", "num_hidden_layers": 4)" + model_extra + R"(},
      "cluster": {"preset": "dgx-h100", "num_gpus": 16},
      "parallel": {"tp": 1, "pp": 2, "ep": 8, "etp": 1)" + parallel_extra + R"(},
      "training": {"seq_length": 4096, "micro_batch_size": 1, "global_batch_size": 16, "precision": "bf16"}})");
}

std::vector<const Task*> tasks(const WorkloadGraph& g, int stage, int microbatch, Phase phase, const std::string& label) {
  std::vector<const Task*> out;
  for (const Task& t : g.programs[static_cast<std::size_t>(stage)].tasks) {
    if (t.microbatch == microbatch && t.phase == phase && label == t.label) out.push_back(&t);
  }
  return out;
}

const GemmShape& gemm_of(const WorkloadGraph& g, int stage, const Task& t) {
  return std::get<GemmShape>(g.programs[static_cast<std::size_t>(stage)].ops[static_cast<std::size_t>(t.op)]);
}

}  // namespace

TEST_CASE("DeepSeek-V3's MTP depth holds a MoE layer, eh_proj and three norms (hand count)", "[sim][mtp]") {
  const ModelSpec m = parse_model_input("deepseek-v3", test::source_dir(), "model");
  REQUIRE(m.mtp_num_layers == 1);  // num_nextn_predict_layers of the published config.json
  const double layer = kQDown + kQUp + kKvDown + kKvUp + kOut + kNorms + kRouter + 256 * kExpert + kExpert;
  const ParamCount c = count_parameters(m);
  CHECK(static_cast<double>(c.mtp) == layer + kEhProj + kMtpNorms);  // 11.61 B; the shared embedding and head excluded
  // Published totals count the main model only: 671 B (DeepSeek-V3 report Section 4.2).
  CHECK(static_cast<double>(c.total) / 1e9 == Approx(671.0).epsilon(0.001));
  // Megatron's name turns it off.
  const ModelSpec off = parse_model_input(nlohmann::json::parse(R"({"preset": "deepseek-v3", "mtp_num_layers": 0})"),
                                          test::source_dir(), "model");
  CHECK(off.mtp_num_layers == 0);
  CHECK(count_parameters(off).mtp == 0);
}

TEST_CASE("each MTP depth adds its layer, eh_proj and a second LM-head pass to the model FLOPs", "[sim][mtp][flops]") {
  // Megatron-LM's num_floating_point_operations: per token and depth, 3 x 2 x (layer weights + 2h^2 + hV) plus the
  // layer's attention core (score and value products, 2 s a (d_qk + d_v) per token with the full matrix).
  const ModelSpec with = deepseek("").model;
  const ModelSpec without = deepseek(R"(, "mtp_num_layers": 0)").model;
  const double s = 4096;
  const double layer_gemm = kQDown + kQUp + kKvDown + kKvUp + kOut + kH * 256 + 8 * kExpert + kExpert;
  const double per_token = 2 * (layer_gemm + kEhProj + kH * kVocab) + 2 * s * 128 * (192 + 128);
  const double delta = training_flops_per_sequence(with, 4096, 129280, AttentionFlops::kFullMatrix) -
                       training_flops_per_sequence(without, 4096, 129280, AttentionFlops::kFullMatrix);
  CHECK(delta == Approx(3 * s * per_token).epsilon(1e-12));
}

TEST_CASE("the MTP depth runs on the last stage: shifted embedding, eh_proj, a MoE layer and a second head pass",
          "[sim][mtp]") {
  const Scenario s = deepseek("");
  const WorkloadGraph g = test::lowered(s);
  const int last = 1;
  const double T = 4096;
  // eh_proj: [T, 2h] x [2h, h] forward, its input gradient and its weight gradient.
  const auto proj = tasks(g, last, 0, Phase::kForward, "mtp_eh_proj");
  REQUIRE(proj.size() == 1);
  CHECK(proj[0]->layer == 4);  // num_hidden_layers + depth 0
  CHECK(gemm_of(g, last, *proj[0]).flops() == Approx(2 * T * kEhProj));
  // The LM head runs twice per micro-batch, main and MTP, both [T, h] x [h, V] (vocabulary padded to 129280).
  const auto head = tasks(g, last, 0, Phase::kForward, "lm_head");
  REQUIRE(head.size() == 2);
  for (const Task* t : head) CHECK(gemm_of(g, last, *t).flops() == Approx(2 * T * kH * kVocab));
  // The MTP layer's forward GEMMs: MLA, router and 8 routed + 1 shared expert per token (balanced routing), as a
  // decoder MoE layer; the first stage has none of it.
  double layer_flops = 0;
  for (const Task& t : g.programs[last].tasks) {
    const auto* shape = std::get_if<GemmShape>(&g.programs[last].ops[static_cast<std::size_t>(t.op)]);
    if (shape && t.layer == 4 && t.microbatch == 0 && t.phase == Phase::kForward && std::string(t.label) != "mtp_eh_proj") {
      layer_flops += shape->flops();
    }
  }
  CHECK(layer_flops / T == Approx(2 * (kQDown + kQUp + kKvDown + kKvUp + kOut + kH * 256 + 9 * kExpert)));
  CHECK(tasks(g, 0, 0, Phase::kForward, "mtp_eh_proj").empty());
  // The shifted tokens' embedding on the MTP rank is a copy of the first stage's: both all-reduce its gradient.
  for (int stage : {0, 1}) {
    int reduced = 0;
    for (const Task& t : g.programs[static_cast<std::size_t>(stage)].tasks) reduced += std::string(t.label) == "embedding_grad";
    CHECK(reduced == 1);
  }
  // Every activation allocated is freed within the iteration.
  double net = 0;
  for (const Task& t : g.programs[last].tasks) {
    if (t.start_kind == MemoryKind::kActivations) net += static_cast<double>(t.start_bytes);
    if (t.end_kind == MemoryKind::kActivations) net += static_cast<double>(t.end_bytes);
  }
  CHECK(net == 0);
}

TEST_CASE("the MTP rank holds the depth's weights and the embedding copy", "[sim][mtp][memory]") {
  const WorkloadGraph with = test::lowered(deepseek(""));
  const WorkloadGraph without = test::lowered(deepseek(R"(, "mtp_num_layers": 0)"));
  const auto weights = [](const WorkloadGraph& g, int stage) {
    return static_cast<double>(g.programs[static_cast<std::size_t>(stage)].static_memory[static_cast<std::size_t>(MemoryKind::kWeights)]);
  };
  // TP 1, EP 8: 32 of the 256 routed experts; everything else whole; bf16 weights.
  const double local = kQDown + kQUp + kKvDown + kKvUp + kOut + kNorms + kRouter + 32 * kExpert + kExpert + kEhProj +
                       kMtpNorms + kH * kVocab;
  CHECK(weights(with, 1) - weights(without, 1) == Approx(2 * local));
  CHECK(weights(with, 0) == weights(without, 0));
}

TEST_CASE("MTP lowers under ZB-H1 and selective recompute, and is refused outside Megatron", "[sim][mtp][errors]") {
  // Split backwards: the depth's weight gradients move to the W step like the decoder layers'.
  const WorkloadGraph zb = test::lowered(deepseek("", R"(, "schedule": "zb-h1")"));
  const auto weight = tasks(zb, 1, 0, Phase::kBackwardWeight, "mtp_eh_proj");
  REQUIRE(weight.size() == 1);
  const auto lm_head_w = tasks(zb, 1, 0, Phase::kBackwardWeight, "lm_head");
  CHECK(lm_head_w.size() == 2);
  // Selective recompute applies to the depth's layer as to the decoder's: mla_up_proj runs its up projections again.
  const Scenario selective = test::scenario(R"({"model": {"preset": "deepseek-v3", "num_hidden_layers": 4},
      "cluster": {"preset": "dgx-h100", "num_gpus": 16}, "parallel": {"tp": 1, "pp": 2, "ep": 8, "etp": 1},
      "training": {"seq_length": 4096, "micro_batch_size": 1, "global_batch_size": 16, "precision": "bf16",
                   "recompute": "selective", "recompute_modules": ["mla_up_proj"]}})");
  const WorkloadGraph sel = test::lowered(selective);
  int again = 0;
  for (const Task* t : tasks(sel, 1, 0, Phase::kRecompute, "q_up")) again += t->layer == 4;
  CHECK(again == 1);
  // Both spellings in one object must agree.
  CHECK_THAT(test::scenario_error(R"({"model": {"preset": "llama3-8b", "mtp_num_layers": 1, "num_nextn_predict_layers": 2},
      "cluster": {"preset": "dgx-h100", "num_gpus": 8}, "training": {"seq_length": 1024}})"),
             Catch::Contains("model.mtp_num_layers (1)") && Catch::Contains("conflicts with num_nextn_predict_layers"));
  // Activation offload covers decoder layers only, never the depth on a stage without decoder layers.
  const WorkloadGraph offloaded = test::lowered(test::scenario(R"({"model": {"preset": "deepseek-v3", "num_hidden_layers": 4},
      "cluster": {"preset": "dgx-h100", "num_gpus": 16}, "parallel": {"tp": 1, "pp": 2, "ep": 8, "etp": 1, "pipeline_layout": [4, 0]},
      "training": {"seq_length": 4096, "micro_batch_size": 1, "global_batch_size": 16, "precision": "bf16",
                   "cpu_offloading_num_layers": 1}})"));
  int depth_offloads = 0, layer_offloads = 0;
  for (const Program& p : offloaded.programs) {
    for (const Task& t : p.tasks) {
      if (std::string(t.label) != "activation_offload") continue;
      (t.layer == 4 ? depth_offloads : layer_offloads) += 1;
    }
  }
  CHECK(depth_offloads == 0);
  CHECK(layer_offloads > 0);
  CHECK_THAT(test::scenario_error(R"({"model": "deepseek-v3", "cluster": {"preset": "dgx-h100", "num_gpus": 8},
      "training": {"seq_length": 4096, "framework": "pytorch"}})"),
             Catch::Contains("model.mtp_num_layers") && Catch::Contains("pytorch"));
}

TEST_CASE("Megatron-Bridge's published DeepSeek-V3 FLOPs per token include the MTP depth", "[sim][mtp][flops]") {
  // Megatron-Bridge 25.09, DGX-H100, DeepSeek-V3 at sequence 4096: 338 model TFLOP/s/GPU at 1,297 tokens/s/GPU
  // (scenarios/validation/mbridge-25.09-dgx-h100-deepseek_v3-dropless-1024gpu.json), 260.6 GFLOP per token with
  // the causal-halved attention count. Three printed digits: within 0.2%. Without the depth the count is 4% lower.
  const double published = 338e12 / 1297;
  const ModelSpec with = parse_model_input("deepseek-v3", test::source_dir(), "model");
  const ModelSpec without =
      parse_model_input(nlohmann::json::parse(R"({"preset": "deepseek-v3", "mtp_num_layers": 0})"), test::source_dir(), "model");
  const auto per_token = [](const ModelSpec& m) {
    return training_flops_per_sequence(m, 4096, 129280, AttentionFlops::kCausalHalved) / 4096;
  };
  CHECK(per_token(with) == Approx(published).epsilon(0.002));
  CHECK(per_token(without) < 0.97 * published);
}

TEST_CASE("ZeRO-3 gathers the embedding for the MTP depth before it runs, and memory balances",
          "[sim][mtp][zero]") {
  for (const char* pp : {"1", "2"}) {
    INFO("pp " << pp);
    const WorkloadGraph g = test::lowered(test::scenario(std::string(R"({"model": {"preset": "deepseek-v3", "num_hidden_layers": 4},
        "cluster": {"preset": "dgx-h100", "num_gpus": 16}, "parallel": {"tp": 1, "pp": )") + pp + R"(, "ep": 8, "zero_stage": 3},
        "training": {"seq_length": 4096, "micro_batch_size": 1, "global_batch_size": 16, "precision": "bf16"}})"));
    const Program& last = g.programs.back();
    // The first micro-batch's forward: the shifted-token embedding (the depth unit's first task) waits for the
    // unit's gather, issued ahead of it (FSDP's prefetch): its dense part, after its expert part on the same stream.
    std::size_t embedding = 0;
    for (std::size_t i = 0; i < last.tasks.size() && embedding == 0; ++i) {
      const Task& t = last.tasks[i];
      if (t.microbatch == 0 && t.phase == Phase::kForward && std::string(t.label) == "mtp_embedding") embedding = i;
    }
    REQUIRE(embedding > 0);
    // Bytes of the param_gather tasks of `group` with an edge into `task` (and, for the dense part, of the expert
    // part it waits for).
    std::function<double(std::size_t, GroupKind)> gathers_into = [&](std::size_t task, GroupKind group) {
      double bytes = 0;
      for (std::size_t u = 0; u < task; ++u) {
        const Task& t = last.tasks[u];
        const auto* c = std::get_if<CollectiveOp>(&last.ops[static_cast<std::size_t>(t.op)]);
        if (!c || t.group != group || std::string(t.label) != "param_gather") continue;
        auto [begin, end] = boost::out_edges(static_cast<std::uint32_t>(u), last.successors);
        for (auto e = begin; e != end; ++e) {
          if (boost::target(*e, last.successors) != task) continue;
          bytes += static_cast<double>(c->bytes);
          if (group == GroupKind::kDp) bytes += gathers_into(u, GroupKind::kExpertDp);
        }
      }
      return bytes;
    };
    const double gathered = gathers_into(embedding, GroupKind::kDp);
    // The depth's dense weights and the word embedding, bf16; with pp 1 the expert-DP group has 16 / 8 = 2 ranks,
    // so the rank's 32 experts are gathered too (with pp 2 it has one rank and they stay whole).
    const double dense = kQDown + kQUp + kKvDown + kKvUp + kOut + kNorms + kRouter + kExpert + kEhProj + kMtpNorms;
    const double experts = std::string(pp) == "1" ? 32 * kExpert : 0;
    CHECK(gathered == Approx(2 * (dense + kH * kVocab + experts)));
    double weights = 0, grads = 0;
    for (const Task& t : last.tasks) {
      for (const auto& [kind, bytes] : {std::pair{t.start_kind, t.start_bytes}, std::pair{t.end_kind, t.end_bytes}}) {
        if (kind == MemoryKind::kWeights) weights += static_cast<double>(bytes);
        if (kind == MemoryKind::kGradients) grads += static_cast<double>(bytes);
      }
    }
    CHECK(weights == 0);
    CHECK(grads == 0);
  }
}
