// Activation memory per layer against every row of Korthikanti et al., "Reducing Activation Recomputation in
// Large Transformer Models" (arXiv:2205.05198), Table 2, which assumes 16-bit activations, dropout and unfused
// attention. The bytes are what the lowered graph really allocates in one layer's forward pass.
#include <catch2/catch.hpp>

#include "test_support.h"

using namespace orrery;

namespace {

// Bytes the forward pass of layer 1 of micro-batch 0 keeps (allocations minus frees) in a 2-layer GPT-3-shaped
// model, pipeline stage 0.
double layer_bytes(int tp, bool sp, const char* recompute) {
  const std::string text = std::string(R"({"model": {"preset": "gpt3-175b", "num_hidden_layers": 2},
      "cluster": {"preset": "dgx-a100-80gb", "num_gpus": )") +
                           std::to_string(tp) + R"(}, "parallel": {"tp": )" + std::to_string(tp) +
                           R"(, "sequence_parallel": )" + (sp ? "true" : "false") +
                           R"(}, "training": {"seq_length": 2048, "micro_batch_size": 1, "global_batch_size": 1,
      "recompute": ")" + recompute + R"(", "attention_backend": "unfused"}})";
  const WorkloadGraph g = test::lowered(test::scenario(text));
  double bytes = 0;
  for (const Task& t : g.programs[0].tasks) {
    if (t.layer != 1 || t.microbatch != 0 || t.phase != Phase::kForward) continue;
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
