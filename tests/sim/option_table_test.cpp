// The option table (sim/option_table.h) against the parser and the model importer: each row's example parses, a
// fixed default is what the parser assumes (setting it changes no prediction), Megatron-LM's model-shape keys reach
// the model, and the parser's and the table's keys cannot drift apart. Block recompute against the two policies it
// lies between.
#include <catch2/catch.hpp>
#include <fmt/format.h>

#include <functional>
#include <map>

#include "models/json_fields.h"
#include "sim/option_table.h"
#include "test_support.h"

using namespace orrery;
using nlohmann::json;

namespace {

// Llama-3-8B cut to 2 layers on one DGX H100, so every row's example is small and valid.
json base_scenario() {
  return json::parse(R"({"model": {"preset": "llama3-8b", "num_hidden_layers": 2},
      "cluster": {"preset": "dgx-h100", "num_gpus": 8},
      "training": {"seq_length": 1024, "micro_batch_size": 1, "global_batch_size": 16}})");
}

json with_example(const OptionSpec& o) {
  json doc = base_scenario();
  doc.merge_patch(json::parse(o.example));
  return doc;
}

json& key_of(json& doc, const OptionSpec& o) { return doc[std::string(o.section)][std::string(o.key)]; }

std::string label(const OptionSpec& o) { return fmt::format("{}.{}", o.section, o.key); }

}  // namespace

TEST_CASE("every row of the option table has an example the parser accepts, and sets its key", "[sim][options]") {
  for (const OptionSpec& o : scenario_options()) {
    INFO(label(o));
    const json doc = with_example(o);
    REQUIRE(doc.contains(std::string(o.section)));
    CHECK(doc[std::string(o.section)].contains(std::string(o.key)));
    CHECK_NOTHROW(parse_scenario(doc, test::source_dir()));
    CHECK(!o.doc.empty());
    CHECK(!o.default_text.empty());
  }
}

TEST_CASE("a fixed default in the option table is the parser's: writing it out changes no prediction",
          "[sim][options]") {
  int checked = 0;
  for (const OptionSpec& o : scenario_options()) {
    if (o.default_json.empty()) continue;
    INFO(label(o) << " = " << o.default_json);
    json without = with_example(o);
    without[std::string(o.section)].erase(std::string(o.key));
    try {
      parse_scenario(without, test::source_dir());
    } catch (const Error&) {
      without = base_scenario();  // the example needs its key (3 layers on PP 2 need the embedding counted)
    }
    json with = without;
    key_of(with, o) = o.type == OptionType::kChoice ? json(std::string(o.default_json)) : json::parse(o.default_json);
    const Prediction a = predict(parse_scenario(without, test::source_dir()));
    const Prediction b = predict(parse_scenario(with, test::source_dir()));
    CHECK(a.report.iteration_time == b.report.iteration_time);
    CHECK(a.report.peak_memory == b.report.peak_memory);
    // A requested overlap switch is named in the warnings where it cannot act, a default one is not (README: "on
    // by default or requested"), so only the other rows' warnings must match.
    const std::string_view key = o.key;
    if (key != "overlap_grad_reduce" && key != "overlap_param_gather" && key != "tp_comm_overlap" &&
        key != "overlap_p2p_comm") {
      CHECK(a.report.warnings == b.report.warnings);
    }
    ++checked;
  }
  CHECK(checked >= 30);
}

TEST_CASE("Megatron-LM's model-shape keys reach the model the importer builds", "[sim][options]") {
  // The ModelSpec field each model row sets; a row without one here fails, so a new row gets its check.
  const std::map<std::string_view, std::function<std::int64_t(const ModelSpec&)>> field = {
      {"num_hidden_layers", [](const ModelSpec& m) { return m.num_layers; }},
      {"hidden_size", [](const ModelSpec& m) { return m.hidden_size; }},
      {"intermediate_size", [](const ModelSpec& m) { return m.intermediate_size; }},
      {"num_attention_heads", [](const ModelSpec& m) { return m.num_attention_heads; }},
      {"num_key_value_heads", [](const ModelSpec& m) { return m.num_kv_heads; }},
      {"head_dim", [](const ModelSpec& m) { return m.head_dim; }},
      {"max_position_embeddings", [](const ModelSpec& m) { return m.max_position_embeddings; }},
      {"vocab_size", [](const ModelSpec& m) { return m.vocab_size; }},
      {"num_local_experts", [](const ModelSpec& m) { return m.moe.num_experts; }},
      {"num_experts_per_tok", [](const ModelSpec& m) { return m.moe.experts_per_token; }},
      {"moe_intermediate_size", [](const ModelSpec& m) { return m.moe.expert_intermediate_size; }},
      {"mtp_num_layers", [](const ModelSpec& m) { return m.mtp_num_layers; }},
  };
  int rows = 0;
  for (const OptionSpec& o : scenario_options()) {
    if (o.section != "model") continue;
    INFO(label(o));
    ++rows;
    const auto it = field.find(o.key);
    REQUIRE(it != field.end());
    json doc = with_example(o);
    const std::int64_t given = key_of(doc, o).get<std::int64_t>();
    CHECK(it->second(parse_scenario(doc, test::source_dir()).model) == given);
  }
  CHECK(rows == static_cast<int>(field.size()));
}

TEST_CASE("an override in one spelling replaces the model's value in every spelling", "[models][options]") {
  // GPT-2 configs write n_layer, n_embd, n_head; Megatron's --num-layers writes num_hidden_layers.
  const Scenario s = test::scenario(R"({"model": {"preset": "gpt-sc21-1.7b", "num_hidden_layers": 4,
      "hidden_size": 1536, "num_attention_heads": 12}, "cluster": {"preset": "dgx-a100-80gb", "num_gpus": 8},
      "training": {"seq_length": 1024, "global_batch_size": 8}})");
  CHECK(s.model.num_layers == 4);
  CHECK(s.model.hidden_size == 1536);
  CHECK(s.model.num_attention_heads == 12);
}

TEST_CASE("the parser's keys and the option table's must match on both sides", "[sim][options]") {
  FieldReader parallel(json::object(), "parallel");
  std::set<std::string, std::less<>> keys;
  for (const OptionSpec& o : scenario_options()) {
    if (o.section != "parallel") continue;
    keys.emplace(o.key);
    if (!o.file_alias.empty()) keys.emplace(o.file_alias);
  }
  CHECK_NOTHROW(check_documented_keys("parallel", keys));
  auto extra = keys;
  extra.emplace("pipeline_model_parallel_layout");  // read by a parser, missing from the table
  CHECK_THROWS_WITH(check_documented_keys("parallel", extra), Catch::Contains("pipeline_model_parallel_layout") &&
                                                                  Catch::Contains("lacks"));
  auto fewer = keys;
  fewer.erase("cp_comm_type");  // in the table, not read
  CHECK_THROWS_WITH(check_documented_keys("parallel", fewer),
                    Catch::Contains("parallel.cp_comm_type") && Catch::Contains("does not read"));
}

TEST_CASE("each row's command-line names hold its Megatron-LM argument, and booleans their negation",
          "[sim][options]") {
  for (const OptionSpec& o : scenario_options()) {
    INFO(label(o) << ": " << cli_names(o));
    const std::string names = "," + cli_names(o) + ",";
    if (!o.megatron.empty()) {
      const bool negative = o.type == OptionType::kBoolean && o.megatron.starts_with("--no-");
      CHECK(names.find(fmt::format(",{}{},", negative ? "!" : "", o.megatron)) != std::string::npos);
    }
    if (o.type == OptionType::kBoolean) CHECK(names.find(",!--no-") != std::string::npos);
  }
  const OptionSpec* tp = find_option("parallel", "tensor_model_parallel_size");
  REQUIRE(tp);
  CHECK(tp->key == "tp");
  CHECK(cli_names(*tp) == "--tp,--tensor-model-parallel-size");
  CHECK(cli_names(*find_option("training", "apply_rope_fusion")) == "--rope-fusion,!--no-rope-fusion");
  CHECK(cli_names(*find_option("training", "moe_load_imbalance")) == "--moe-load-imbalance");
}

TEST_CASE("block recompute of no layer is no recompute, of every layer is uniform full recompute, and in between "
          "lies between", "[sim][options][recompute]") {
  // Llama-3-8B, 4 layers on PP 2 (two per chunk): block N recomputes the first N layers of each chunk.
  const auto run = [](const std::string& training) {
    return predict(test::scenario(fmt::format(
        R"({{"model": {{"preset": "llama3-8b", "num_hidden_layers": 4}}, "cluster": {{"preset": "dgx-h100", "num_gpus": 8}},
            "parallel": {{"tp": 2, "pp": 2, "sequence_parallel": true}},
            "training": {{"seq_length": 4096, "micro_batch_size": 1, "global_batch_size": 16, {}}}}})",
        training)));
  };
  const Prediction none = run(R"("recompute": "none")");
  const Prediction full = run(R"("recompute": "full")");
  const Prediction block0 = run(R"("recompute": "full", "recompute_method": "block", "recompute_num_layers": 0)");
  const Prediction block1 = run(R"("recompute": "full", "recompute_method": "block", "recompute_num_layers": 1)");
  const Prediction block2 = run(R"("recompute": "full", "recompute_method": "block", "recompute_num_layers": 2)");
  CHECK(block0.report.iteration_time == none.report.iteration_time);
  CHECK(block0.report.peak_memory == none.report.peak_memory);
  CHECK(block2.report.iteration_time == full.report.iteration_time);
  CHECK(block2.report.peak_memory == full.report.peak_memory);
  CHECK(block1.report.iteration_time > none.report.iteration_time);
  CHECK(block1.report.iteration_time < full.report.iteration_time);
  CHECK(block1.report.peak_memory < none.report.peak_memory);
  CHECK(block1.report.peak_memory > full.report.peak_memory);
  // The hardware FLOPs count one recomputed forward per recomputed layer: half the layers, half the extra.
  const double extra_full = full.report.hardware_flops - none.report.hardware_flops;
  const double extra_block1 = block1.report.hardware_flops - none.report.hardware_flops;
  CHECK(extra_block1 == Approx(extra_full / 2).epsilon(1e-9));
}

TEST_CASE("the recompute method is refused without full recompute, and uniform groups of several layers are not "
          "modelled", "[sim][options][recompute]") {
  const auto error = [](const std::string& training) {
    return test::scenario_error(fmt::format(R"({{"model": {{"preset": "llama3-8b", "num_hidden_layers": 2}},
        "cluster": {{"preset": "dgx-h100", "num_gpus": 8}}, "training": {{"global_batch_size": 8, {}}}}})",
                                            training));
  };
  CHECK_THAT(error(R"("recompute": "selective", "recompute_method": "block")"),
             Catch::Contains("training.recompute_method") && Catch::Contains("needs training.recompute \"full\""));
  CHECK_THAT(error(R"("recompute_num_layers": 2)"), Catch::Contains("training.recompute_num_layers"));
  CHECK_THAT(error(R"("recompute": "full", "recompute_num_layers": 2)"),
             Catch::StartsWith("not modelled yet") && Catch::Contains("recompute_num_layers"));
  CHECK_THAT(error(R"("recompute": "full", "recompute_method": "uniform", "recompute_num_layers": 0)"),
             Catch::Contains("must be at least 1"));
  CHECK(error(R"("recompute": "full", "recompute_method": "block", "recompute_num_layers": 7)").empty());
}
