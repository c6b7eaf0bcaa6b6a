// Scenario parsing: defaults, derived sizes, and errors that name the field, the value and the rule.
#include <catch2/catch.hpp>

#include "models/json_fields.h"
#include "sim/pipeline_layout.h"
#include "test_support.h"

using namespace orrery;
using test::scenario;
using test::scenario_error;

namespace {

// A valid base scenario: Llama-3-8B on 16 H100s.
std::string with(const std::string& parallel, const std::string& training = R"({"seq_length": 4096, "global_batch_size": 32})",
                 const std::string& extra = "") {
  return R"({"model": "llama3-8b", "cluster": {"preset": "dgx-h100", "num_gpus": 16}, "parallel": )" + parallel +
         R"(, "training": )" + training + extra + "}";
}

}  // namespace

TEST_CASE("defaults and derived sizes", "[sim][scenario]") {
  const Scenario s = scenario(with(R"({"tp": 2, "pp": 2})"));
  CHECK(s.parallel.dp == 4);  // derived from num_gpus
  CHECK(s.training.micro_batch_size == 1);
  CHECK(s.training.precision == Precision::kBf16);
  CHECK(s.training.recompute == Recompute::kNone);
  CHECK(s.training.attention_backend == AttentionBackend::kFlash);
  CHECK(s.parallel.overlap_grad_reduce);  // on, as the Megatron-Core recipes set them
  CHECK(s.parallel.tp_comm_overlap);
  CHECK(s.num_microbatches() == 8);
  // Megatron's long names are accepted for the plan sizes.
  CHECK(scenario(with(R"({"tensor_model_parallel_size": 4})")).parallel.tp == 4);
  // global batch defaults to micro-batch x dp; num_gpus may come from the plan.
  const Scenario t = scenario(R"({"model": "llama3-8b", "cluster": "dgx-h100", "parallel": {"tp": 8, "dp": 2},
                                  "training": {"seq_length": 2048, "micro_batch_size": 2}})");
  CHECK(t.cluster.num_gpus == 16);
  CHECK(t.training.global_batch_size == 4);
}

TEST_CASE("divisibility rules name field, value and rule", "[sim][scenario][errors]") {
  CHECK_THAT(scenario_error(with(R"({"tp": 3})")), Catch::Contains("cluster.num_gpus (16)") && Catch::Contains("tp x pp x cp"));
  CHECK_THAT(scenario_error(R"({"model": "gpt-sc21-1.7b", "cluster": {"preset": "dgx-a100-80gb", "num_gpus": 16},
                                "parallel": {"tp": 16}, "training": {"seq_length": 2048, "global_batch_size": 16}})"),
             Catch::Contains("model.num_attention_heads (24) must be divisible by tp (16)"));
  CHECK_THAT(scenario_error(with(R"({"tp": 16})")), Catch::Contains("model.num_key_value_heads (8)"));
  CHECK_THAT(scenario_error(with(R"({"tp": 2, "dp": 4})")),
             Catch::Contains("cluster.num_gpus (16) must equal tp x pp x dp x cp"));
  CHECK_THAT(scenario_error(with(R"({"tp": 2})", R"({"seq_length": 4096, "micro_batch_size": 3, "global_batch_size": 32})")),
             Catch::Contains("training.global_batch_size (32)") && Catch::Contains("micro_batch_size x dp"));
  CHECK_THAT(scenario_error(with(R"({"tp": 2, "sequence_parallel": true})", R"({"seq_length": 4095, "global_batch_size": 32})")),
             Catch::Contains("training.seq_length (4095)"));
  CHECK_THAT(scenario_error(with(R"({"pp": 2, "vpp": 4})", R"({"seq_length": 4096, "global_batch_size": 8})")),
             Catch::Contains("multiple of pp"));
  CHECK_THAT(scenario_error(with(R"({"vpp": 2})")), Catch::Contains("parallel.vpp (2)") && Catch::Contains("pp >= 2"));
}

TEST_CASE("unknown keys and bad values are rejected", "[sim][scenario][errors]") {
  CHECK_THAT(scenario_error(with(R"({"tp": 2, "tensor_parallel": 2})")), Catch::Contains("parallel.tensor_parallel"));
  CHECK_THAT(scenario_error(with(R"({})", R"({"seq_len": 4096})")), Catch::Contains("training.seq_len"));
  CHECK_THAT(scenario_error(with(R"({})", R"({"precision": "int4"})")),
             Catch::Contains("training.precision (\"int4\")") && Catch::Contains("bf16"));
  CHECK_THAT(scenario_error(with(R"({})", R"({"micro_batch_size": 0})")), Catch::Contains("training.micro_batch_size (0)"));
  CHECK_THAT(scenario_error(with(R"({})", R"({"seq_length": 1.5})")), Catch::Contains("training.seq_length"));
  CHECK_THAT(scenario_error(with(R"({})", R"({})", R"(, "paralel": {})")), Catch::Contains("paralel"));
  CHECK_THAT(scenario_error(with(R"({})", R"({})", R"(, "expect": {"iteration_time": 1})")), Catch::Contains("expect.iteration_time"));
  CHECK_THAT(scenario_error(with(R"({"tp": 2, "tensor_model_parallel_size": 2})")), Catch::Contains("duplicates tp"));
  CHECK_THAT(scenario_error(with(R"({})", R"({})", R"(, "stragglers": [{"rank": 16, "compute_slowdown": 1.1}])")),
             Catch::Contains("stragglers[0].rank (16)"));
  CHECK_THAT(scenario_error(with(R"({})", R"({})", R"(, "stragglers": [{"rank": 1, "compute_slowdown": -1}])")),
             Catch::Contains("stragglers[0].compute_slowdown"));
  CHECK_THAT(scenario_error(R"({"cluster": "dgx-h100"})"), Catch::Contains("model (missing)"));
  CHECK_THAT(scenario_error(R"([1, 2])"), Catch::Contains("must be a JSON object"));
}

TEST_CASE("features outside the model today say 'not modelled yet:'", "[sim][scenario][errors]") {
  // MLA without q_lora_rank (DeepSeek-V2-Lite's direct query projection) under mla_up_proj.
  CHECK_THAT(scenario_error(R"({"model": {"preset": "deepseek-v3", "num_hidden_layers": 2, "q_lora_rank": null},
                                 "cluster": {"preset": "dgx-h100", "num_gpus": 8}, "training": {"seq_length": 4096,
                                 "recompute": "selective", "recompute_modules": ["mla_up_proj"]}})"),
             Catch::StartsWith("not modelled yet:") && Catch::Contains("mla_up_proj"));
  CHECK_THAT(scenario_error(with(R"({"pp": 2, "schedule": "dualpipe", "zero_stage": 2})")),
             Catch::StartsWith("not modelled yet:") && Catch::Contains("dualpipe"));
  CHECK_THAT(scenario_error(with(R"({"pp": 2, "schedule": "dualpipe", "overlap_p2p_comm": false})")),
             Catch::StartsWith("not modelled yet:") && Catch::Contains("parallel.overlap_p2p_comm"));
  CHECK_THAT(scenario_error(with(R"({"pp": 2, "schedule": "zb-h1", "zero_stage": 2})")), Catch::StartsWith("not modelled yet:"));
  CHECK_THAT(scenario_error(with(R"({"pp": 2, "vpp": 2, "schedule": "zb-h1"})")), Catch::Contains("parallel.schedule (zb-h1)"));
  CHECK(scenario_error(R"({"model": "mixtral-8x7b", "cluster": {"preset": "dgx-h100", "num_gpus": 8},
                            "parallel": {"ep": 8, "zero_stage": 3}})") == "");  // Megatron-FSDP with experts
}

TEST_CASE("dualpipe and dualpipev need pp >= 2, no vpp and at least 2 x pp micro-batches, dualpipe even ones",
          "[sim][scenario][errors]") {
  for (const char* name : {"dualpipe", "dualpipev"}) {
    INFO(name);
    const std::string schedule = std::string(R"("schedule": ")") + name + "\"";
    CHECK(to_string(scenario(with("{\"pp\": 2, " + schedule + "}")).parallel.schedule) == std::string(name));
    CHECK_THAT(scenario_error(with("{\"pp\": 1, " + schedule + "}")), Catch::Contains("parallel.pp (1)"));
    CHECK_THAT(scenario_error(with("{\"pp\": 2, \"vpp\": 2, " + schedule + "}")),
               Catch::Contains(std::string("parallel.schedule (") + name + ")"));
    // pp 4 on 16 GPUs leaves dp 4: a global batch of 16 gives 4 micro-batches, fewer than 2 x pp.
    CHECK_THAT(scenario_error(with("{\"pp\": 4, " + schedule + "}", R"({"seq_length": 4096, "global_batch_size": 16})")),
               Catch::Contains("training.global_batch_size (16)") && Catch::Contains("at least 2 x pp (8)"));
    // Megatron's interleaving key has no meaning for their fixed two chunks.
    CHECK_THAT(scenario_error(with("{\"pp\": 2, \"num_layers_per_virtual_pipeline_stage\": 8, " + schedule + "}")),
               Catch::Contains("parallel.num_layers_per_virtual_pipeline_stage (8)") && Catch::Contains("1f1b"));
    CHECK_THAT(scenario_error(with("{\"pp\": 2, \"zero_stage\": 3, " + schedule + "}")),
               Catch::StartsWith("not modelled yet:") && Catch::Contains(name));
  }
  CHECK_THAT(scenario_error(with(R"({"pp": 1, "schedule": "dualpipe"})")), Catch::Contains("must be even"));
  CHECK_THAT(scenario_error(with(R"({"pp": 1, "schedule": "dualpipev"})")), Catch::Contains("must be at least 2"));
  // 20 micro-batches per pipeline: DualPipe splits them between its two directions, DualPipeV need not.
  const std::string odd_batch = R"({"seq_length": 4096, "global_batch_size": 40})";
  CHECK_THAT(scenario_error(with(R"({"pp": 2, "schedule": "dualpipe"})", odd_batch)),
             Catch::Contains("training.global_batch_size (40)") && Catch::Contains("even number"));
  CHECK(scenario_error(with(R"({"pp": 2, "schedule": "dualpipev"})", odd_batch)) == "");
}

TEST_CASE("dualpipev folds 2 x pp virtual stages and takes only splits that name them", "[sim][scenario][errors]") {
  const Scenario s = scenario(with(R"({"pp": 2, "schedule": "dualpipev"})"));
  // llama3-8b's 32 layers over 2 x pp = 4 virtual stages, rank 0 holding the first and the last.
  const PipelineLayout layout = make_pipeline_layout(s.model, s.parallel);
  CHECK(layout.layers == std::vector<int>{8, 8, 8, 8});
  CHECK(layout.virtual_stage(0, 1) == 3);
  CHECK(layout.virtual_stage(1, 1) == 2);
  CHECK(layout.holds_head(0, 1));
  CHECK(layout.turns_locally(1, 1, true));
  CHECK_FALSE(layout.turns_locally(0, 1, true));
  CHECK_THAT(scenario_error(with(R"({"pp": 2, "schedule": "dualpipev", "decoder_first_pipeline_num_layers": 6})")),
             Catch::Contains("parallel.decoder_first_pipeline_num_layers") && Catch::Contains("pipeline_layout"));
  CHECK_THAT(scenario_error(with(R"({"pp": 2, "schedule": "dualpipev", "decoder_last_pipeline_num_layers": 6})")),
             Catch::StartsWith("parallel.decoder_last_pipeline_num_layers (6)"));
  // 32 layers over 2 x 3 = 6 virtual stages (15 GPUs): the hint names only the split keys dualpipev takes.
  const std::string odd = scenario_error(R"({"model": "llama3-8b", "cluster": {"preset": "dgx-h100", "num_gpus": 15},
      "parallel": {"pp": 3, "schedule": "dualpipev"}, "training": {"seq_length": 4096, "global_batch_size": 30}})");
  CHECK_THAT(odd, Catch::Contains("2 x pp = 2 x 3 = 6 (dualpipev)") && Catch::Contains("pipeline_layout"));
  CHECK_THAT(odd, !Catch::Contains("decoder_first_pipeline_num_layers"));
  CHECK_THAT(scenario_error(with(R"({"pp": 2, "schedule": "dualpipev", "pipeline_layout": [16, 16]})")),
             Catch::Contains("parallel.pipeline_layout") && Catch::Contains("2 x pp = 2 x 2 = 4"));
  CHECK(scenario_error(with(R"({"pp": 2, "schedule": "dualpipev", "pipeline_layout": [7, 9, 9, 7]})")) == "");
}

TEST_CASE("sequence parallelism with tp 1 is dropped with a warning, as Megatron does", "[sim][scenario]") {
  const Scenario s = scenario(with(R"({"sequence_parallel": true})"));
  CHECK_FALSE(s.parallel.sequence_parallel);
  REQUIRE(s.warnings.size() == 1);
  CHECK_THAT(s.warnings[0], Catch::Contains("sequence_parallel"));
}

TEST_CASE("limits keep sizes inside the simulator's integers and clock", "[sim][scenario][errors]") {
  // Found by a fresh-eyes review: values past 2^31 once wrapped silently; huge batches exhausted memory.
  CHECK_THAT(scenario_error(with(R"({"tp": 4294967298})")), Catch::Contains("parallel.tp (4294967298) must be at most"));
  CHECK_THAT(scenario_error(with(R"({"tp": 18446744073709551615})")), Catch::Contains("parallel.tp (18446744073709551615)"));
  CHECK_THAT(scenario_error(with(R"({})", R"({"seq_length": 2147483648})")), Catch::Contains("training.seq_length (2147483648) must be at most"));
  CHECK_THAT(scenario_error(with(R"({})", R"({"seq_length": 2048, "global_batch_size": 4000000})")),
             Catch::Contains("tasks to simulate, above the limit"));
  CHECK_THAT(scenario_error(with(R"({})", R"({})", R"(, "stragglers": [{"rank": 1, "compute_slowdown": 1e300}])")),
             Catch::Contains("stragglers[0].compute_slowdown") && Catch::Contains("and 1000"));
  CHECK_THAT(scenario_error(R"({"model": {"preset": "llama3-8b", "num_hidden_layers": 4294967328}, "cluster": "dgx-h100"})"),
             Catch::Contains("model.num_hidden_layers (4294967328) must be at most"));
  CHECK_THAT(scenario_error(R"({"model": "llama3-8b", "cluster": {"preset": "dgx-h100", "num_gpus": {"value": 16, "foo": 1}}})"),
             Catch::Contains("cluster.num_gpus.foo"));
  CHECK_THAT(scenario_error(R"({"model": "llama3-8b", "cluster": {"preset": "dgx-h100",
                                "gpu": {"preset": "h100-sxm", "peak_tflops": {"bf16": 0}}}})"),
             Catch::Contains("cluster.gpu.peak_tflops.bf16 (0) must lie in [0.1, 150000] TFLOP/s"));
  CHECK_THAT(scenario_error(R"({"model": {"preset": "llama3-8b", "head_dim": 0}, "cluster": "dgx-h100"})"),
             Catch::Contains("model.head_dim (0) must be at least 1"));
  CHECK_THAT(scenario_error(R"({"model": "llama3-8b", "cluster": {"preset": "dgx-h100",
                                "network": [{"tier": "leaf", "nodes": 4, "oversubscription": 0.5}]}})"),
             Catch::Contains("oversubscription (0.5) must lie in [1, 1000]"));
  // A near-zero bandwidth is outside the physical bounds (models/physical_bounds.h); inside them, the slowest GPU
  // on the longest sequence still makes a task longer than the clock allows: refused, not wrapped around.
  CHECK_THAT(scenario_error(R"({"model": "llama3-8b", "cluster": {"preset": "dgx-h100", "nic_bandwidth_Gbit_s": 1e-12}})"),
             Catch::Contains("cluster.nic_bandwidth_Gbit_s (1e-12) must lie in [1, 8000] Gbit/s"));
  const Scenario slow = test::scenario(R"({"model": {"preset": "llama3-8b", "num_hidden_layers": 1}, "cluster": {
      "preset": "dgx-h100", "num_gpus": 8, "gpu": {"preset": "h100-sxm", "peak_tflops": {"bf16": 0.1}}},
      "parallel": {"tp": 8}, "training": {"seq_length": 16777216, "global_batch_size": 1}})");
  CHECK_THROWS_WITH(predict(slow), Catch::Contains("outside the simulated range"));
}

TEST_CASE("strict JSON: repeated keys, deep nesting and directories are input errors", "[sim][scenario][errors]") {
  CHECK_THROWS_WITH(parse_json_text(R"({"model": "llama3-8b", "model": "gpt3-175b"})", "scenario"),
                    Catch::Contains("(model) has a key given twice"));
  // Nesting beyond limits::kJsonDepth is refused by the parser (tests/models/input_hardening_test.cpp); below it, a
  // deep value is described cut short.
  const std::string deep = "{\"notes\": " + std::string(60, '[') + std::string(60, ']') + "}";
  CHECK_THROWS_WITH(parse_scenario(parse_json_text(deep, "scenario"), test::source_dir()), Catch::Contains("notes ([[[[...]]]])"));
  CHECK_THROWS_WITH(load_scenario(test::source_dir()), Catch::Contains("is not a regular file"));
  CHECK_THROWS_WITH(parse_json_text("{\"seq_length\": 1e400}", "scenario"), Catch::Contains("not valid JSON"));
}

TEST_CASE("override keys the model does not read are reported, not silently dropped", "[sim][scenario]") {
  const Scenario s = test::scenario(R"({"model": {"preset": "llama3-8b", "num_hiden_layers": 16},
      "cluster": {"preset": "dgx-h100", "num_gpus": 8}, "training": {"seq_length": 1024}})");
  CHECK(s.model.num_layers == 32);
  REQUIRE_FALSE(s.warnings.empty());
  CHECK_THAT(s.warnings.back(), Catch::Contains("model.num_hiden_layers is not a field"));
}

TEST_CASE("an overlap switch that cannot act is named in the warnings, default or requested", "[sim][scenario][warnings]") {
  const auto warnings = [](const std::string& parallel, int gpus = 8) {
    const Scenario s = test::scenario(R"({"model": {"preset": "llama3-8b", "num_hidden_layers": 2},
        "cluster": {"preset": "dgx-h100", "num_gpus": )" + std::to_string(gpus) + R"(}, "parallel": )" + parallel +
                                      R"(, "training": {"seq_length": 1024, "global_batch_size": 8}})");
    std::string all;
    for (const std::string& w : s.warnings) all += w + "\n";
    return all;
  };
  // Megatron-LM asserts tp_comm_overlap needs sequence parallelism; on by default, it would be dropped silently.
  CHECK_THAT(warnings(R"({"tp": 8})"), Catch::Contains("tp_comm_overlap (on by default) is inactive"));
  CHECK_THAT(warnings(R"({"tp": 8, "tp_comm_overlap": true})"), Catch::Contains("tp_comm_overlap (requested) is inactive"));
  CHECK_THAT(warnings(R"({"tp": 1, "tp_comm_overlap": true})"), Catch::Contains("nothing to overlap at tp 1"));
  CHECK_THAT(warnings(R"({"tp": 8, "tp_comm_overlap": false})"), !Catch::Contains("tp_comm_overlap"));
  CHECK_THAT(warnings(R"({"overlap_param_gather": true})"), Catch::Contains("overlap_param_gather (requested) is inactive"));
  CHECK_THAT(warnings(R"({"zero_stage": 1, "overlap_param_gather": true, "overlap_grad_reduce": false})"),
             Catch::Contains("Must use --overlap-param-gather with --overlap-grad-reduce"));
  CHECK_THAT(warnings(R"({"zero_stage": 3, "overlap_grad_reduce": false})"),
             Catch::Contains("overlap_grad_reduce false has no effect with zero_stage 3"));
  // Every switch able to act: no overlap warning.
  CHECK_THAT(warnings(R"({"tp": 8, "sequence_parallel": true, "zero_stage": 1})"), !Catch::Contains("overlap"));
  CHECK_THAT(warnings(R"({"tp": 1})"), !Catch::Contains("overlap"));
}
