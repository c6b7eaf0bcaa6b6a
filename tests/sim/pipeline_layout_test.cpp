// Layer assignment to pipeline stages, including Megatron's uneven splits.
#include <catch2/catch.hpp>

#include "sim/pipeline_layout.h"
#include "test_support.h"

using namespace orrery;

namespace {

std::string llama405(const std::string& parallel, int gpus = 2048) {
  return R"({"model": "llama3.1-405b", "cluster": {"preset": "dgx-h100", "num_gpus": )" + std::to_string(gpus) +
         R"(}, "parallel": )" + parallel + R"(, "training": {"seq_length": 8192, "global_batch_size": 2048}})";
}

}  // namespace

TEST_CASE("Llama-3.1-405B's 126 layers on 16 stages need an uneven split", "[sim][layout]") {
  // 126 is not divisible by 16: Megatron's rule is an error naming the split keys.
  const std::string error = test::scenario_error(llama405(R"({"tp": 8, "pp": 16})"));
  CHECK_THAT(error, Catch::Contains("num_hidden_layers (126)") && Catch::Contains("decoder_first_pipeline_num_layers") &&
                        Catch::Contains("pipeline_layout"));
  // 7 on the first and last stage, 8 on the 14 others.
  const Scenario s = test::scenario(
      llama405(R"({"tp": 8, "pp": 16, "decoder_first_pipeline_num_layers": 7, "decoder_last_pipeline_num_layers": 7})"));
  const PipelineLayout l = make_pipeline_layout(s.model, s.parallel);
  CHECK(l.layers_on_stage(0) == 7);
  CHECK(l.layers_on_stage(15) == 7);
  for (int st = 1; st < 15; ++st) CHECK(l.layers_on_stage(st) == 8);
  CHECK(l.first_layer_of(15, 0) == 119);
}

TEST_CASE("the embedding and the loss can count as layers", "[sim][layout]") {
  // (126 + 2) / (8 stages x 8 chunks) = 2 slots per virtual stage; the first and last hold one layer.
  const Scenario s = test::scenario(llama405(
      R"({"tp": 8, "pp": 8, "vpp": 8, "account_for_embedding_in_pipeline_split": true,
          "account_for_loss_in_pipeline_split": true})", 1024));
  const PipelineLayout l = make_pipeline_layout(s.model, s.parallel);
  CHECK(l.layers_in(0, 0) == 1);
  CHECK(l.layers_in(7, 7) == 1);
  CHECK(l.layers_in(3, 4) == 2);
  int total = 0;
  for (int n : l.layers) total += n;
  CHECK(total == 126);
}

TEST_CASE("an explicit pipeline_layout is used as given and checked", "[sim][layout]") {
  const Scenario s = test::scenario(llama405(R"({"tp": 8, "pp": 4, "pipeline_layout": [30, 32, 32, 32]})", 512));
  const PipelineLayout l = make_pipeline_layout(s.model, s.parallel);
  CHECK(l.layers == std::vector<int>{30, 32, 32, 32});
  CHECK_THAT(test::scenario_error(llama405(R"({"tp": 8, "pp": 4, "pipeline_layout": [30, 32, 32]})", 512)),
             Catch::Contains("one entry per virtual stage"));
  CHECK_THAT(test::scenario_error(llama405(R"({"tp": 8, "pp": 4, "pipeline_layout": [30, 32, 32, 30]})", 512)),
             Catch::Contains("must add up to num_hidden_layers (126)"));
  CHECK_THAT(test::scenario_error(llama405(R"({"tp": 8, "pp": 4, "pipeline_layout": [30, 32, 32, 32],
                                                "decoder_first_pipeline_num_layers": 30})", 512)),
             Catch::Contains("cannot be combined"));
  CHECK_THAT(test::scenario_error(llama405(R"({"tp": 8, "pp": 4, "decoder_first_pipeline_num_layers": 31})", 512)),
             Catch::Contains("must divide evenly"));
  // The error names the key given: the last-stage count once was reported as decoder_first_pipeline_num_layers.
  CHECK(test::scenario_error(llama405(R"({"tp": 8, "pp": 4, "decoder_last_pipeline_num_layers": 31})", 512)) ==
        "parallel.decoder_last_pipeline_num_layers (31) leaves 95 of num_hidden_layers (126) for 3 other stage(s), "
        "which must divide evenly");
  CHECK(test::scenario_error(llama405(R"({"tp": 8, "pp": 4, "decoder_first_pipeline_num_layers": 30,
                                          "decoder_last_pipeline_num_layers": 31})", 512)) ==
        "parallel.decoder_first_pipeline_num_layers and decoder_last_pipeline_num_layers (30, 31: 61 layers on the "
        "first and last stages) leaves 65 of num_hidden_layers (126) for 2 other stage(s), which must divide evenly");
  CHECK_THAT(test::scenario_error(llama405(
                 R"({"tp": 8, "pp": 16, "vpp": 2, "decoder_first_pipeline_num_layers": 7, "decoder_last_pipeline_num_layers": 7})")),
             Catch::Contains("parallel.vpp (2) must divide the 7 layers"));
}
