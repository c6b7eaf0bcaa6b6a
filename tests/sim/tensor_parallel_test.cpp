// Tensor parallelism's communication volume per layer against Korthikanti et al., "Reducing Activation
// Recomputation in Large Transformer Models" (arXiv:2205.05198), Section 4.2: without sequence parallelism a layer
// all-reduces its b x s x h activations twice forward (after attention's and the MLP's row-parallel GEMMs) and
// twice backward (the column-parallel GEMMs' input gradients).
#include <catch2/catch.hpp>

#include "test_support.h"

using namespace orrery;

TEST_CASE("without sequence parallelism a layer all-reduces b x s x h activations twice forward and twice backward",
          "[sim][tp]") {
  // Llama-3-8B's hidden size 4096, one layer, micro-batch 2 of 4096 tokens, BF16 (2 bytes), TP 4, no overlap.
  const Scenario s = test::scenario(R"({"model": {"preset": "llama3-8b", "num_hidden_layers": 1},
      "cluster": {"preset": "dgx-h100", "num_gpus": 4}, "parallel": {"tp": 4, "sequence_parallel": false},
      "training": {"seq_length": 4096, "micro_batch_size": 2, "global_batch_size": 2, "precision": "bf16"}})");
  const WorkloadGraph g = test::lowered(s);
  const Bytes activations = 2 * 4096 * 4096 * 2;
  int forward = 0, backward = 0;
  for (const Task& t : g.programs[0].tasks) {
    if (t.group != GroupKind::kTp || t.layer != 0) continue;
    const auto& c = std::get<CollectiveOp>(g.programs[0].ops[static_cast<std::size_t>(t.op)]);
    INFO(task_name(g.programs[0], t));
    CHECK(c.kind == CollectiveKind::kAllReduce);
    CHECK(c.bytes == activations);
    CHECK(c.placement.size == 4);
    (t.phase == Phase::kForward ? forward : backward) += 1;
  }
  CHECK(forward == 2);
  CHECK(backward == 2);
}
