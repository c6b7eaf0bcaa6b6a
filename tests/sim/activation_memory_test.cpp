// Activation memory per layer against every row of Korthikanti et al., "Reducing Activation Recomputation in
// Large Transformer Models" (arXiv:2205.05198), Table 2, which assumes 16-bit activations, dropout and unfused
// attention. The bytes are what the lowered graph really allocates in one layer's forward pass.
#include <catch2/catch.hpp>

#include <map>

#include "test_support.h"

using namespace orrery;

namespace {

// Bytes the forward pass of layer 1 of micro-batch 0 keeps (allocations minus frees) in a 2-layer GPT-3-shaped
// model, pipeline stage 0.
double layer_bytes(int tp, bool sp, const char* recompute, const std::string& extra = "") {
  const std::string text = std::string(R"({"model": {"preset": "gpt3-175b", "num_hidden_layers": 2},
      "cluster": {"preset": "dgx-a100-80gb", "num_gpus": )") +
                           std::to_string(tp) + R"(}, "parallel": {"tp": )" + std::to_string(tp) +
                           R"(, "sequence_parallel": )" + (sp ? "true" : "false") +
                           R"(}, "training": {"seq_length": 2048, "micro_batch_size": 1, "global_batch_size": 1,
      "recompute": ")" + recompute + R"(", "attention_backend": "unfused")" + extra + "}}";
  const WorkloadGraph g = test::lowered(test::scenario(text));
  double bytes = 0;
  for (const Task& t : g.programs[0].tasks) {
    if (t.layer != 1 || t.microbatch != 0 || t.phase != Phase::kForward) continue;
    if (t.start_kind == MemoryKind::kActivations) bytes += static_cast<double>(t.start_bytes);
    if (t.end_kind == MemoryKind::kActivations) bytes += static_cast<double>(t.end_bytes);
  }
  return bytes;
}

// Bytes layer 1's forward keeps (allocations minus frees), every micro-batch, rank 0.
double forward_saved(const WorkloadGraph& g) {
  double bytes = 0;
  for (const Task& t : g.programs[0].tasks) {
    if (t.layer != 1 || t.phase != Phase::kForward) continue;
    if (t.start_kind == MemoryKind::kActivations) bytes += static_cast<double>(t.start_bytes);
    if (t.end_kind == MemoryKind::kActivations) bytes += static_cast<double>(t.end_bytes);
  }
  return bytes;
}

}  // namespace

TEST_CASE("activations per layer reproduce Korthikanti et al. Table 2", "[sim][memory]") {
  const double s = 2048, b = 1, h = 12288, a = 96, t = 8;
  const double sbh = s * b * h;
  // Row 1, no parallelism: sbh (34 + 5 a s / h).
  CHECK(layer_bytes(1, false, "none") == Approx(sbh * (34 + 5 * a * s / h)));
  // Row 2, tensor parallelism (baseline): sbh (10 + 24/t + 5 a s / (h t)).
  CHECK(layer_bytes(8, false, "none") == Approx(sbh * (10 + 24 / t + 5 * a * s / (h * t))));
  // Row 3, tensor + sequence parallelism: sbh (34/t + 5 a s / (h t)).
  CHECK(layer_bytes(8, true, "none") == Approx(sbh * (34 / t + 5 * a * s / (h * t))));
  // Row 4, tensor parallelism + selective recompute: sbh (10 + 24/t).
  CHECK(layer_bytes(8, false, "selective") == Approx(sbh * (10 + 24 / t)));
  // Row 5, tensor + sequence parallelism + selective recompute: sbh (34/t).
  CHECK(layer_bytes(8, true, "selective") == Approx(sbh * 34 / t));
  // Row 6, full activation recompute: 2 sbh.
  CHECK(layer_bytes(8, false, "full") == Approx(2 * sbh));
}

TEST_CASE("Megatron's recompute modules drop what they recompute", "[sim][memory][recompute]") {
  const double s = 2048, b = 1, h = 12288, t = 8;
  const double sbh = s * b * h;
  // core_attn is Megatron's default module: the same bytes as row 5.
  CHECK(layer_bytes(8, true, "selective", R"(, "recompute_modules": ["core_attn"])") == Approx(sbh * 34 / t));
  // layernorm also drops the two norm outputs the QKV and MLP-up linears keep (2 bytes each, sharded by SP).
  CHECK(layer_bytes(8, true, "selective", R"(, "recompute_modules": ["core_attn", "layernorm"])") ==
        Approx(sbh * (34 - 2 * 2) / t));
  // Without SP each norm output is whole on every TP rank: 2 sbh each (row 4's 10 + 24/t becomes 6 + 24/t).
  CHECK(layer_bytes(8, false, "selective", R"(, "recompute_modules": ["core_attn", "layernorm"])") ==
        Approx(sbh * (6 + 24 / t)));
}

TEST_CASE("moe_act recompute drops the experts' activation outputs and runs the activation again",
          "[sim][memory][recompute]") {
  // Mixtral-shaped (top-2 of 8 experts, expert width 14336), one EP rank: each token's 2 copies keep their
  // activation output, s k w bytes x 2 (bf16).
  auto graph = [](const char* modules) {
    return test::lowered(test::scenario(std::string(R"({"model": {"preset": "mixtral-8x7b", "num_hidden_layers": 2},
        "cluster": {"preset": "dgx-h100", "num_gpus": 1}, "training": {"seq_length": 2048, "micro_batch_size": 1,
        "global_batch_size": 1, "recompute": "selective", "recompute_modules": )") + modules + "}}"));
  };
  const auto saved = forward_saved;
  auto recomputed = [](const WorkloadGraph& g) {
    int n = 0;
    for (const Task& t : g.programs[0].tasks) n += t.layer == 1 && t.phase == Phase::kRecompute && std::string(t.label) == "mlp_activation";
    return n;
  };
  const WorkloadGraph base = graph(R"(["core_attn"])");
  const WorkloadGraph act = graph(R"(["core_attn", "moe_act"])");
  CHECK(saved(base) - saved(act) == Approx(2048.0 * 2 * 14336 * 2));
  // layernorm drops both norm outputs: the QKV input and, without shared experts, the router's input (s h x 2).
  CHECK(saved(base) - saved(graph(R"(["core_attn", "layernorm"])")) == Approx(2 * 2048.0 * 4096 * 2));
  CHECK(recomputed(base) == 0);
  CHECK(recomputed(act) == 1);

  // moe keeps only the layer's input (s h x 2): the router probabilities (s E x 4) and input (s h x 2), the experts'
  // inputs (s k h x 2), up outputs (s k 2w x 2) and down inputs (s k w x 2) and the permuted probabilities (s k x 4)
  // all go. The backward runs the router and both expert GEMMs again, and every allocation is freed.
  const WorkloadGraph whole = graph(R"(["core_attn", "moe"])");
  const double s = 2048, h = 4096, E = 8, k = 2, w = 14336;
  const double moe_saved = s * E * 4 + s * h * 2 + s * k * h * 2 + s * k * 2 * w * 2 + s * k * w * 2 + s * k * 4;
  CHECK(saved(base) - saved(whole) == Approx(moe_saved - s * h * 2));
  std::map<std::string, int> again;
  double net = 0;
  for (const Task& t : whole.programs[0].tasks) {
    if (t.layer == 1 && t.phase == Phase::kRecompute && t.kind == TaskKind::kGemm) ++again[t.label];
    if (t.start_kind == MemoryKind::kActivations) net += static_cast<double>(t.start_bytes);
    if (t.end_kind == MemoryKind::kActivations) net += static_cast<double>(t.end_bytes);
  }
  CHECK(again == std::map<std::string, int>{{"experts", 2}, {"router", 1}});
  CHECK(net == 0);
}

TEST_CASE("GPT-OSS's clamped GLU: Megatron-Core's clamp and cat, and the clamped copy it keeps",
          "[sim][memory][recompute][moe]") {
  // gpt-oss-20b (h 2880, 32 experts of width w 2880, top-4, swiglu_limit 7.0), one GPU, one sequence of 2048: the
  // experts receive s k rows. Megatron-Core's weighted_bias_quick_geglu_impl clamps each half of the up outputs
  // (s k 2w values) and concatenates them before its fused kernel: the forward reads and writes 2 x (s k 2w x 2)
  // bytes; each clamp's backward reads the gradient and its input and writes the gradient, 2 + 1 halves each.
  auto graph = [](const char* modules) {
    return test::lowered(test::scenario(std::string(R"({"model": {"preset": "gpt-oss-20b"},
        "cluster": {"preset": "dgx-h100", "num_gpus": 1}, "training": {"seq_length": 2048, "micro_batch_size": 1,
        "global_batch_size": 1, "recompute": "selective", "recompute_modules": )") + modules + "}}"));
  };
  const double s = 2048, k = 4, w = 2880;
  const double up = s * k * 2 * w * 2;  // the up outputs, bf16
  const WorkloadGraph base = graph(R"(["core_attn"])");
  std::map<Phase, std::vector<ElementwiseShape>> clamps;
  for (const Task& t : base.programs[0].tasks) {
    if (t.layer == 1 && std::string(t.label) == "glu_clamp") {
      clamps[t.phase].push_back(std::get<ElementwiseShape>(base.programs[0].ops[static_cast<std::size_t>(t.op)]));
    }
  }
  REQUIRE(clamps[Phase::kForward].size() == 1);
  CHECK(clamps[Phase::kForward][0].bytes_read == Approx(2 * up));
  CHECK(clamps[Phase::kForward][0].bytes_written == Approx(2 * up));
  REQUIRE(clamps[Phase::kBackwardInput].size() == 1);
  CHECK(clamps[Phase::kBackwardInput][0].bytes_read == Approx(2 * up));
  CHECK(clamps[Phase::kBackwardInput][0].bytes_written == Approx(up));

  // The clamp's inputs keep the up outputs alive and the fused kernel keeps the clamped copy: moe_act drops the
  // copy with the activation outputs (s k w x 2), and runs the clamp again inside the recompute.
  const WorkloadGraph act = graph(R"(["core_attn", "moe_act"])");
  CHECK(forward_saved(base) - forward_saved(act) == Approx(s * k * w * 2 + up));
  int again = 0;
  double net = 0;
  for (const Task& t : act.programs[0].tasks) {
    again += t.layer == 1 && t.phase == Phase::kRecompute && std::string(t.label) == "glu_clamp";
    if (t.start_kind == MemoryKind::kActivations) net += static_cast<double>(t.start_bytes);
    if (t.end_kind == MemoryKind::kActivations) net += static_cast<double>(t.end_bytes);
  }
  CHECK(again == 1);
  CHECK(net == 0);

  // Without the clamp (Mixtral) no such task; a clamp limit that is not positive is refused, as Megatron-Core does.
  const WorkloadGraph mixtral = test::lowered(test::scenario(R"({"model": {"preset": "mixtral-8x7b",
      "num_hidden_layers": 2}, "cluster": {"preset": "dgx-h100", "num_gpus": 1}, "training": {"seq_length": 2048,
      "micro_batch_size": 1, "global_batch_size": 1}})"));
  for (const Task& t : mixtral.programs[0].tasks) CHECK(std::string(t.label) != "glu_clamp");
  CHECK_THAT(test::scenario_error(R"({"model": {"preset": "gpt-oss-20b", "swiglu_limit": 0},
      "cluster": {"preset": "dgx-h100", "num_gpus": 8}})"),
             Catch::Contains("swiglu_limit") && Catch::Contains("greater than 0"));
  CHECK_THAT(test::scenario_error(R"({"model": {"preset": "llama3-8b", "swiglu_limit": 7.0},
      "cluster": {"preset": "dgx-h100", "num_gpus": 8}})"),
             Catch::Contains("swiglu_limit") && Catch::Contains("needs MoE layers"));
}

TEST_CASE("recompute_modules follows Megatron's rules", "[sim][recompute][errors]") {
  const std::string base = R"({"model": {"preset": "gpt-sc21-1.7b"}, "cluster": {"preset": "dgx-a100-80gb", "num_gpus": 8},
      "training": {"seq_length": 1024, )";
  CHECK_THAT(test::scenario_error(base + R"("recompute": "full", "recompute_modules": ["layernorm"]}})"),
             Catch::Contains("training.recompute_modules") && Catch::Contains("selective"));
  CHECK_THAT(test::scenario_error(base + R"("recompute": "selective", "recompute_modules": ["attention"]}})"),
             Catch::Contains("training.recompute_modules") && Catch::Contains("core_attn"));
  CHECK_THAT(test::scenario_error(base + R"("recompute": "selective", "recompute_modules": ["moe"]}})"),
             Catch::Contains("moe") && Catch::Contains("needs MoE layers"));
  CHECK_THAT(test::scenario_error(base + R"("recompute": "selective", "recompute_modules": ["shared_experts"]}})"),
             Catch::Contains("shared_experts") && Catch::Contains("needs MoE layers with shared experts"));
  CHECK_THAT(test::scenario_error(base + R"("recompute": "selective", "recompute_modules": ["mla_up_proj"]}})"),
             Catch::Contains("mla_up_proj") && Catch::Contains("needs multi-head latent attention"));
}

TEST_CASE("mlp recompute keeps only the MLP's input and runs up, activation and down again",
          "[sim][memory][recompute]") {
  const double s = 2048, b = 1, h = 12288, t = 8;
  const double sbh = s * b * h;
  // GPT-3's MLP keeps its input (2 sbh), its 4h-wide first-linear output for GeLU (8 sbh) and GeLU's output for
  // the second linear (8 sbh) (Korthikanti et al. Section 4.1). Recompute module mlp drops all three: with
  // Transformer Engine the pre-MLP norm is fused into the first linear, so the checkpoint keeps the norm's input,
  // which the layer keeps anyway. Sharded by TP (the input by SP).
  CHECK(layer_bytes(8, true, "selective", R"(, "recompute_modules": ["core_attn", "mlp"])") ==
        Approx(sbh * (34 - 18) / t));
  CHECK(layer_bytes(8, false, "selective", R"(, "recompute_modules": ["core_attn", "mlp"])") ==
        Approx(sbh * (8 + 8 / t)));
  // With layernorm as well the norm output is not dropped twice.
  CHECK(layer_bytes(8, true, "selective", R"(, "recompute_modules": ["core_attn", "mlp", "layernorm"])") ==
        Approx(sbh * (34 - 18 - 2) / t));
  // The backward of each layer runs the MLP's forward GEMMs again (each linear is split to overlap its
  // sequence-parallel collective, in the forward and in the recompute alike), and nothing else of the layer's.
  const WorkloadGraph g = test::lowered(test::scenario(R"({"model": {"preset": "gpt3-175b", "num_hidden_layers": 2},
      "cluster": {"preset": "dgx-a100-80gb", "num_gpus": 8}, "parallel": {"tp": 8, "sequence_parallel": true},
      "training": {"seq_length": 2048, "micro_batch_size": 1, "global_batch_size": 1, "recompute": "selective",
      "recompute_modules": ["core_attn", "mlp"]}})"));
  std::map<std::string, int> forward, again;
  for (const Task& task : g.programs[0].tasks) {
    if (task.layer != 1 || task.kind != TaskKind::kGemm) continue;
    if (task.phase == Phase::kForward) ++forward[task.label];
    if (task.phase == Phase::kRecompute) ++again[task.label];
  }
  CHECK(again["mlp_up"] == forward["mlp_up"]);
  CHECK(again["mlp_down"] == forward["mlp_down"]);
  CHECK(again["mlp_up"] > 0);
  CHECK(again.size() == 2);
}

TEST_CASE("shared_experts recompute drops the shared experts' internals, mlp the dense layers', mla_up_proj q k v",
          "[sim][memory][recompute]") {
  // DeepSeek-V3 cut to 4 layers: layers 0-2 dense (intermediate 18432), layer 3 MoE with one shared expert of
  // width 2048; one GPU, 1024 tokens, bf16. A gated MLP of width w keeps its up outputs (2 w) and the down input (w):
  // 3 w x 2 bytes per token.
  auto saved = [](const char* modules, int layer) {
    const WorkloadGraph g = test::lowered(test::scenario(std::string(R"({"model": {"preset": "deepseek-v3",
        "num_hidden_layers": 4}, "cluster": {"preset": "dgx-h100", "num_gpus": 1}, "training": {"seq_length": 1024,
        "micro_batch_size": 1, "global_batch_size": 1, "recompute": "selective", "recompute_modules": )") +
                                                         modules + "}}"));
    double bytes = 0;
    for (const Task& t : g.programs[0].tasks) {
      if (t.layer != layer || t.phase != Phase::kForward) continue;
      if (t.start_kind == MemoryKind::kActivations) bytes += static_cast<double>(t.start_bytes);
      if (t.end_kind == MemoryKind::kActivations) bytes += static_cast<double>(t.end_bytes);
    }
    return bytes;
  };
  const double T = 1024;
  CHECK(saved(R"(["core_attn"])", 3) - saved(R"(["core_attn", "shared_experts"])", 3) == Approx(T * 3 * 2048 * 2));
  CHECK(saved(R"(["core_attn"])", 0) == Approx(saved(R"(["core_attn", "shared_experts"])", 0)));
  // mlp on a dense layer: its up outputs and down input, and the fused norm's output (T h x 2).
  CHECK(saved(R"(["core_attn"])", 0) - saved(R"(["core_attn", "mlp"])", 0) == Approx(T * 3 * 18432 * 2 + T * 7168 * 2));
  CHECK(saved(R"(["core_attn"])", 3) == Approx(saved(R"(["core_attn", "mlp"])", 3)));  // MoE layers: module moe
  // mla_up_proj drops the attention core's inputs: q and k of 128 heads x (128 nope + 64 rope), v of 128 heads x
  // 128, bf16, on every layer; and, the q and kv norms being fused into the up projections, the up projections'
  // normed inputs (q_lora 1536 + kv_lora 512).
  const double qkv = T * 128 * (2 * 192 + 128) * 2 + T * (1536 + 512) * 2;
  CHECK(saved(R"(["core_attn"])", 0) - saved(R"(["core_attn", "mla_up_proj"])", 0) == Approx(qkv));
  CHECK(saved(R"(["core_attn"])", 3) - saved(R"(["core_attn", "mla_up_proj"])", 3) == Approx(qkv));
  // ... and the backward runs the two up projections again, and the shared experts' two GEMMs.
  const WorkloadGraph g = test::lowered(test::scenario(R"({"model": {"preset": "deepseek-v3", "num_hidden_layers": 4},
      "cluster": {"preset": "dgx-h100", "num_gpus": 1}, "training": {"seq_length": 1024, "micro_batch_size": 1,
      "global_batch_size": 1, "recompute": "selective", "recompute_modules": ["mla_up_proj", "shared_experts"]}})"));
  std::map<std::string, int> again;
  for (const Task& t : g.programs[0].tasks) {
    if (t.layer == 3 && t.phase == Phase::kRecompute && t.kind == TaskKind::kGemm) ++again[t.label];
  }
  CHECK(again == std::map<std::string, int>{{"kv_up", 1}, {"q_up", 1}, {"shared_expert_down", 1}, {"shared_expert_up", 1}});
}
