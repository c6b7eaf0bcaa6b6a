// The resolved plan (sim/job/job.h): each derived fact has one owner, the Job, and its value is the hand-computed
// one; resolving leaves its input alone and is idempotent; a base and a plan resolve to the same Job as the
// scenario that names both.
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include "sim/job/job.h"
#include "test_support.h"

using namespace orrery;

namespace {

// scenarios/examples/llama3-70b-64xh100.json, spelled out so the hand computations below can read it: Llama-3-70B
// (80 layers, vocabulary 128,256, 64 heads, 8 KV heads) on 64 H100s, TP 8, PP 4, VPP 5, DP 2, BF16, distributed
// optimizer (ZeRO 1), sequence 8192, micro-batch 1, global batch 128.
const char* const kLlama70b = R"({
  "model": "llama3-70b",
  "cluster": {"preset": "dgx-h100", "num_gpus": 64},
  "parallel": {"tp": 8, "pp": 4, "vpp": 5, "dp": 2, "sequence_parallel": true, "zero_stage": 1},
  "training": {"seq_length": 8192, "micro_batch_size": 1, "global_batch_size": 128, "precision": "bf16"}
})";

Scenario unresolved(const std::string& text) { return read_scenario(nlohmann::json::parse(text), test::source_dir()); }

}  // namespace

TEST_CASE("each derived fact of the Job has one owner", "[sim][job]") {
  const Job job = resolve(test::scenario(kLlama70b));
  REQUIRE(job.model().num_layers == 80);
  REQUIRE(job.model().vocab_size == 128256);  // Llama 3's tokenizer
  // Sizes: dp = 64 / (tp 8 x pp 4 x cp 1) = 2; micro-batches = global batch / (micro-batch x dp) = 128 / (1 x 2).
  CHECK(job.num_gpus() == 64);
  CHECK(job.dp() == 2);
  CHECK(job.microbatches() == 64);
  CHECK(job.ranks_per_stage() == 8 * 1 * 2);            // tp x cp x dp
  CHECK(job.data_parallel_ranks() == 2);                // dp x cp
  CHECK(job.expert_data_parallel_ranks() == 8 * 1 * 2);  // tp x cp x dp / (ep 1 x etp 1)
  // Tokens: one micro-batch 1 x 8192; a rank's GEMM rows the same (cp 1); the iteration 128 x 8192.
  CHECK(job.microbatch_tokens() == 8192);
  CHECK(job.rank_tokens() == 8192);
  CHECK(job.tokens_per_iteration() == 128.0 * 8192);
  // Pipeline layout: 80 layers over pp x vpp = 20 virtual stages, 4 each, virtual stage v = chunk x pp + stage
  // (Megatron's interleaving): stage 1's chunk 2 is virtual stage 9, layers 36-39.
  const PipelineLayout& layout = job.layout();
  CHECK(layout.pp == 4);
  CHECK(layout.vpp == 5);
  CHECK(layout.layers == std::vector<int>(20, 4));
  CHECK(layout.layers_in(1, 2) == 4);
  CHECK(layout.first_layer_of(1, 2) == 36);
  CHECK(layout.holds_head(3, 4));
  // Rank layout, Megatron's order tp-cp-dp-pp: rank = tp + 8 (cp + 1 (dp + 2 pp)); (tp 3, dp 1, pp 2) is
  // 3 + 8 x (1 + 2 x 2) = 43.
  const RankLayout& ranks = job.ranks();
  CHECK(ranks.num_ranks() == 64);
  CHECK(ranks.rank(RankCoord{3, 0, 1, 2}) == 43);
  CHECK(ranks.coord(43) == RankCoord{3, 0, 1, 2});
  // Padded vocabulary, Megatron-LM's _vocab_size_with_padding: the next multiple of 128 x tp = 1024 above
  // 128,256 is 126 x 1024 = 129,024; the padded model holds it.
  CHECK(job.padded_vocab() == 129024);
  CHECK(job.padded_model().vocab_size == 129024);
  CHECK(job.padded_model().hidden_size == job.model().hidden_size);
  // Bytes, Megatron-LM's distributed-optimizer table (docs/source/api-guide/dist_optimizer.md): bf16 parameters,
  // fp32 gradients (grad_reduce_in_fp32), fp32 master weights and Adam moments: 2 + 4 + 12.
  CHECK(job.state_bytes() == StateBytes{2, 2, 4, 12});
  CHECK(job.activation_dtype() == DType::kBf16);
  CHECK(job.activation_bytes() == 2);
  CHECK(job.gemm_dtype() == DType::kBf16);
  CHECK_FALSE(job.packing());
  CHECK(job.warnings().empty());
}

TEST_CASE("state bytes per parameter follow each framework's table", "[sim][job]") {
  TrainingSpec t;
  // Megatron-LM's table: fp16 2 + 2 + 16, fp32 4 + 4 + 8; bf16 with 16-bit gradient reduction 2 + 2 + 16.
  t.precision = Precision::kFp16;
  CHECK(state_bytes(t, 1) == StateBytes{2, 2, 2, 16});
  t.precision = Precision::kFp32;
  CHECK(state_bytes(t, 1) == StateBytes{4, 4, 4, 8});
  t.precision = Precision::kBf16;
  t.grad_reduce_in_fp32 = false;
  CHECK(state_bytes(t, 1) == StateBytes{2, 2, 2, 16});
  // ZeRO-2/3 (arXiv:1910.02054 Section 3.1): 2 + 2 + 12.
  t.grad_reduce_in_fp32 = true;
  CHECK(state_bytes(t, 3) == StateBytes{2, 2, 2, 12});
  // torchtitan's FSDP2: bf16 gathered, fp32 shards, fp32 gradients, fp32 AdamW moments.
  t.framework = Framework::kFsdp2;
  CHECK(state_bytes(t, 3) == StateBytes{2, 4, 4, 8});
}

TEST_CASE("resolving leaves the scenario alone and is idempotent", "[sim][job]") {
  // dp and the global batch left to derive, sequence parallelism asked for at tp 1: the validator derives and
  // turns off on its own copy.
  const Scenario input = unresolved(R"({"model": "llama3-8b", "cluster": {"preset": "dgx-h100", "num_gpus": 16},
      "parallel": {"tp": 1, "pp": 2, "sequence_parallel": true}, "training": {"seq_length": 4096}})");
  const Job job = resolve(input);
  CHECK(input.parallel.dp == 0);
  CHECK(input.parallel.sequence_parallel);
  CHECK(input.training.global_batch_size == 0);
  CHECK(input.warnings.empty());
  CHECK(job.dp() == 8);                               // 16 / (tp 1 x pp 2)
  CHECK(job.training().global_batch_size == 1 * 8);   // micro-batch x dp
  CHECK(job.microbatches() == 1);
  CHECK_FALSE(job.plan().sequence_parallel);
  REQUIRE(job.warnings().size() == 1);
  CHECK(job.warnings()[0].find("sequence_parallel has no effect with tp 1") != std::string::npos);
  // Resolving the resolved scenario again finds the same facts and repeats no warning.
  const Job again = resolve(job.scenario());
  CHECK(again.warnings() == job.warnings());
  CHECK(again.dp() == job.dp());
  CHECK(again.layout().layers == job.layout().layers);
}

TEST_CASE("a base and a plan resolve to the Job of the scenario that names both", "[sim][job]") {
  const Job whole = resolve(test::scenario(kLlama70b));
  // The base has no plan at all: a default ParallelPlan (tp 1, dp derived) that would not fit the model's memory,
  // never validated as a plan.
  const JobBase base = resolve_base(unresolved(R"({"model": "llama3-70b", "cluster": "dgx-h100",
      "training": {"seq_length": 8192, "global_batch_size": 128}})"));
  PlanChoice plan;
  plan.parallel = parse_parallel(nlohmann::json::parse(kLlama70b)["parallel"]);
  plan.num_gpus = 64;
  plan.micro_batch_size = 1;
  plan.precision = Precision::kBf16;
  const Job job = resolve(base, plan);
  CHECK(job.dp() == whole.dp());
  CHECK(job.microbatches() == whole.microbatches());
  CHECK(job.layout().layers == whole.layout().layers);
  CHECK(job.ranks().rank(RankCoord{3, 0, 1, 2}) == whole.ranks().rank(RankCoord{3, 0, 1, 2}));
  CHECK(job.padded_vocab() == whole.padded_vocab());
  CHECK(job.state_bytes() == whole.state_bytes());
  CHECK(job.tokens_per_iteration() == whole.tokens_per_iteration());
  // An invalid plan is refused by the plan's rules, with the field, the value and the rule: tp 3 over 48 GPUs
  // (dp 16) does not divide the 64 heads.
  plan.parallel.tp = 3;
  plan.parallel.pp = 1;
  plan.parallel.vpp = 1;
  plan.parallel.dp = 0;
  plan.num_gpus = 48;
  CHECK_THROWS_WITH(resolve(base, plan), Catch::Contains("model.num_attention_heads") && Catch::Contains("tp (3)"));
}

TEST_CASE("the base is checked by the rules that need no plan", "[sim][job]") {
  // fp16 gradients are already 16-bit: a plan-free rule, refused on the base as on a whole scenario.
  const Scenario fp16 = unresolved(R"({"model": "llama3-8b", "cluster": "dgx-h100",
      "training": {"seq_length": 4096, "global_batch_size": 8, "precision": "fp16", "grad_reduce_in_fp32": false}})");
  CHECK_THROWS_WITH(resolve_base(fp16), Catch::Contains("training.grad_reduce_in_fp32") &&
                                            Catch::Contains("applies to bf16 and fp8 only"));
  // A plan the base carries but does not validate: tp 3 does not divide 32 heads; the base resolves, the Job not.
  const Scenario tp3 = unresolved(R"({"model": "llama3-8b", "cluster": "dgx-h100", "parallel": {"tp": 3},
      "training": {"seq_length": 4096, "global_batch_size": 8}})");
  CHECK_NOTHROW(resolve_base(tp3));
  CHECK_THROWS_WITH(resolve(tp3), Catch::Contains("model.num_attention_heads"));
}
