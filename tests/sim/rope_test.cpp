// The rotary embedding as Megatron-Core runs it: Transformer Engine's fused kernel, or, for YaRN rotary scaling
// (GPT-OSS), Megatron-Core's unfused PyTorch ops, which Megatron-Bridge falls back to (its
// validate_rope_fusion_compatibility). Bytes and launches are counted by hand from _apply_rotary_pos_emb_bshd.
#include <catch2/catch.hpp>

#include <map>
#include <string>

#include "test_support.h"

using namespace orrery;

namespace {

// The rope tasks of a one-layer model on 8 H100s (EP 8 for the MoE ones), one sequence of 4096, by phase.
std::map<Phase, std::vector<ElementwiseShape>> rope_tasks(const std::string& model, const std::string& training_extra = "",
                                                         std::vector<std::string>* warnings = nullptr) {
  const Scenario s = test::scenario(R"({"model": )" + model + R"(, "cluster": {"preset": "dgx-h100", "num_gpus": 8},
      "parallel": {"ep": 8}, "training": {"seq_length": 4096, "micro_batch_size": 1, "global_batch_size": 8)" +
                                    training_extra + "}}");
  if (warnings) *warnings = s.warnings;
  const WorkloadGraph g = test::lowered(s);
  std::map<Phase, std::vector<ElementwiseShape>> out;
  for (const Task& t : g.programs[0].tasks) {
    if (std::string(t.label) == "rope") {
      out[t.phase].push_back(std::get<ElementwiseShape>(g.programs[0].ops[static_cast<std::size_t>(t.op)]));
    }
  }
  return out;
}

const std::string kGptOss = R"({"preset": "gpt-oss-120b", "num_hidden_layers": 1, "layer_types": ["full_attention"]})";

}  // namespace

TEST_CASE("YaRN runs Megatron-Core's unfused RoPE: bytes and launches by hand", "[sim][rope]") {
  // gpt-oss-120b: q of 64 heads and k of 8, head dim 64, 4096 tokens in bf16: qk = 4096 x 72 x 64 x 2 bytes. Per
  // tensor forward: t cos (1, 1), negation (1/2, 1/2), concatenation (1, 1), * sin (1, 1), add (2, 1), concatenation
  // with the unrotated rest (1, 1), in units of the tensor's bytes: 6.5 read, 5.5 written; and per tensor cos and
  // sin of the fp32 frequencies F = 4096 x 64 x 4 bytes, each times mscale and cast: read 6 F, written 5 F. Six full
  // and six small launches per tensor. Backward per tensor: g sin, negation, concatenation, g cos, sum: 5.5 read,
  // 4.5 written, five launches.
  const double qk = 4096.0 * 72 * 64 * 2, F = 4096.0 * 64 * 4;
  auto rope = rope_tasks(kGptOss);
  REQUIRE(rope[Phase::kForward].size() == 1);
  CHECK(static_cast<double>(rope[Phase::kForward][0].bytes_read) == Approx(6.5 * qk + 12 * F));
  CHECK(static_cast<double>(rope[Phase::kForward][0].bytes_written) == Approx(5.5 * qk + 10 * F));
  CHECK(rope[Phase::kForward][0].kernels == 24);
  REQUIRE(rope[Phase::kBackwardInput].size() == 1);
  CHECK(static_cast<double>(rope[Phase::kBackwardInput][0].bytes_read) == Approx(5.5 * qk));
  CHECK(static_cast<double>(rope[Phase::kBackwardInput][0].bytes_written) == Approx(4.5 * qk));
  CHECK(rope[Phase::kBackwardInput][0].kernels == 10);
}

TEST_CASE("RoPE is fused unless YaRN turns it off, and asking for fusion with YaRN warns", "[sim][rope]") {
  // Without YaRN (the same model with its rope_scaling removed; Llama-3-8B): one fused kernel, reading and writing
  // q and k once.
  const double qk = 4096.0 * 72 * 64 * 2;
  auto plain = rope_tasks(R"({"preset": "gpt-oss-120b", "num_hidden_layers": 1, "layer_types": ["full_attention"],
      "rope_scaling": null})");
  REQUIRE(plain[Phase::kForward].size() == 1);
  CHECK(static_cast<double>(plain[Phase::kForward][0].bytes_read) == Approx(qk));
  CHECK(plain[Phase::kForward][0].kernels == 1);
  // Turned off by hand (Megatron-LM --no-rope-fusion): the unfused ops.
  auto off = rope_tasks(R"({"preset": "gpt-oss-120b", "num_hidden_layers": 1, "layer_types": ["full_attention"],
      "rope_scaling": null})", R"(, "apply_rope_fusion": false)");
  CHECK(off[Phase::kForward][0].kernels == 24);
  std::vector<std::string> warnings;
  auto asked = rope_tasks(kGptOss, R"(, "apply_rope_fusion": true)", &warnings);
  CHECK(asked[Phase::kForward][0].kernels == 24);
  CHECK(std::any_of(warnings.begin(), warnings.end(), [](const std::string& w) {
    return w.find("apply_rope_fusion") != std::string::npos && w.find("YaRN") != std::string::npos;
  }));
}

TEST_CASE("rope_scaling of type yarn is read under either key transformers writes", "[sim][rope][model]") {
  for (const char* key : {"rope_type", "type"}) {
    const Scenario s = test::scenario(std::string(R"({"model": {"preset": "llama3-8b", "num_hidden_layers": 1,
        "rope_scaling": {")") + key + R"(": "yarn", "factor": 4.0}}, "cluster": {"preset": "dgx-h100", "num_gpus": 8},
        "training": {"seq_length": 2048}})");
    CHECK(s.model.rope_yarn);
    CHECK(s.training.apply_rope_fusion == false);
  }
  const Scenario llama31 = test::scenario(R"({"model": "llama3.1-405b", "cluster": {"preset": "dgx-h100", "num_gpus": 64},
      "parallel": {"tp": 8, "pp": 2}, "training": {"seq_length": 2048}})");
  CHECK_FALSE(llama31.model.rope_yarn);  // its rope_type "llama3" keeps the fused kernel
}
