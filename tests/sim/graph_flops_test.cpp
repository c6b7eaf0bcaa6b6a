// FLOPs counted from the lowered graph, held against closed forms computed independently.
#include <catch2/catch.hpp>

#include "models/model_flops.h"
#include "sim/lower/context.h"
#include "sim/report.h"
#include "test_support.h"

using namespace orrery;

TEST_CASE("graph FLOPs with full recompute equal the SC21 formula 96 B s l h^2 (1 + s/6h + V/16lh)", "[sim][flops]") {
  // GPT-3.6B of SC21 Table 1 (vocabulary 51200 is already a multiple of 128 x tp).
  const Scenario s = test::scenario(R"({"model": "gpt-sc21-3.6b", "cluster": {"preset": "dgx-a100-80gb", "num_gpus": 16},
      "parallel": {"tp": 2, "pp": 2, "dp": 4}, "training": {"seq_length": 2048, "micro_batch_size": 2,
      "global_batch_size": 32, "recompute": "full", "attention_backend": "unfused"}})");
  const WorkloadGraph g = test::lowered(s);
  const double expected = sc21_flops_per_iteration(32, 2048, 30, 3072, 51200);
  CHECK(graph_flops_per_iteration(g, s.parallel) == Approx(expected).epsilon(1e-12));
}

TEST_CASE("graph FLOPs without recompute equal the architecture's model FLOPs (GQA, SwiGLU, flash)", "[sim][flops]") {
  const Scenario s = test::scenario(R"({"model": "llama3-8b", "cluster": {"preset": "dgx-h100", "num_gpus": 16},
      "parallel": {"tp": 4, "pp": 2, "vpp": 2, "sequence_parallel": true}, "training": {"seq_length": 4096,
      "micro_batch_size": 1, "global_batch_size": 16}})");
  const WorkloadGraph g = test::lowered(s);
  // The LM head multiplies by Megatron's padded vocabulary (128256 -> 128512 at tp 4).
  const double expected = 16 * training_flops_per_sequence(s.model, 4096, 128512, AttentionFlops::kFullMatrix);
  CHECK(graph_flops_per_iteration(g, s.parallel) == Approx(expected).epsilon(1e-12));
}

TEST_CASE("Megatron pads the vocabulary to a multiple of 128 x tp", "[sim][vocab]") {
  CHECK(padded_vocab_size(128256, 8) == 129024);
  CHECK(padded_vocab_size(128256, 1) == 128256);
  CHECK(padded_vocab_size(50257, 1) == 50304);
  CHECK(padded_vocab_size(50257, 8) == 51200);
  CHECK(padded_vocab_size(51200, 8) == 51200);
}
