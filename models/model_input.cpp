#include "models/model_input.h"

#include <nlohmann/json.hpp>

#include <algorithm>

#include "models/error.h"
#include "models/hf_config.h"
#include "models/json_fields.h"
#include "models/model_presets.h"

namespace orrery {

using nlohmann::json;

namespace {

// The spellings hf_config.cpp accepts for one field (first_int / required_int), any family's.
constexpr std::initializer_list<const char*> kSpellings[] = {
    {"hidden_size", "n_embd", "d_model", "n_embed"},
    {"num_hidden_layers", "n_layer", "n_layers", "num_layers"},
    {"num_attention_heads", "n_head", "n_heads"},
    {"n_inner", "intermediate_size", "ffn_hidden_size"},
    {"n_positions", "max_position_embeddings", "max_seq_len"},
    {"num_local_experts", "num_experts", "n_routed_experts"},
    {"num_experts_per_tok", "experts_per_token", "moe_topk"},
    {"head_dim", "kv_channels"},
};

// An override in one spelling of a field replaces the base's value in every spelling: the importer reads the first
// spelling present, which could otherwise be the base's (GPT-2's n_layer against an override's num_hidden_layers).
void drop_other_spellings(json& base, const std::string& key, const json& overrides) {
  for (const auto& spellings : kSpellings) {
    if (std::find(spellings.begin(), spellings.end(), key) == spellings.end()) continue;
    for (const char* other : spellings) {
      if (other != key && !overrides.contains(other)) base.erase(other);
    }
  }
}

// Top-level keys of `overrides` replace those of `base`, except the selector keys themselves. A new layer count
// without its own layer_types carries the base's per-layer pattern over, cycled to the new count (GPT-OSS's
// alternating sliding and full attention; transformers' GptOssConfig builds the same alternation by default).
json apply_overrides(json base, const json& overrides, const std::string& path, std::vector<std::string>* warnings) {
  for (auto it = overrides.begin(); it != overrides.end(); ++it) {
    if (it.key() == "preset" || it.key() == "hf_config") continue;
    drop_other_spellings(base, it.key(), overrides);
    base[it.key()] = it.value();
  }
  const auto types = base.find("layer_types");
  const auto layers = base.find("num_hidden_layers");
  if (overrides.contains("num_hidden_layers") && !overrides.contains("layer_types") && types != base.end() &&
      types->is_array() && !types->empty() && layers != base.end() && layers->is_number_integer() &&
      layers->get<std::int64_t>() > 0 && layers->get<std::int64_t>() != static_cast<std::int64_t>(types->size())) {
    const json pattern = *types;
    json cycled = json::array();
    for (std::int64_t i = 0; i < layers->get<std::int64_t>(); ++i) cycled.push_back(pattern[static_cast<std::size_t>(i) % pattern.size()]);
    *types = std::move(cycled);
    if (warnings) {
      warnings->push_back(join_path(path, "layer_types") + " repeats the preset's per-layer pattern over the " +
                          std::to_string(layers->get<std::int64_t>()) + " layers of num_hidden_layers");
    }
  }
  return base;
}

}  // namespace

namespace {

// The user's own object may give the multi-token prediction depth count in both spellings only if they agree (a
// preset's num_nextn_predict_layers is overridden by mtp_num_layers instead).
void check_mtp_spellings(const json& given, const std::string& path) {
  if (given.contains("mtp_num_layers") && given.contains("num_nextn_predict_layers") &&
      given.at("mtp_num_layers") != given.at("num_nextn_predict_layers")) {
    throw Error::invalid(join_path(path, "mtp_num_layers"), describe_json(given.at("mtp_num_layers")),
                         "conflicts with num_nextn_predict_layers (" +
                             describe_json(given.at("num_nextn_predict_layers")) + "); give one of the two");
  }
}

// Parses base + overrides and reports the override keys the importer ignored.
ModelSpec with_overrides(json base, const json& overrides, const std::string& path, std::vector<std::string>* warnings) {
  check_mtp_spellings(overrides, path);
  std::vector<std::string> unread;
  ModelSpec m = parse_hf_config(apply_overrides(std::move(base), overrides, path, warnings), path, &unread);
  if (warnings) {
    for (const std::string& key : unread) {
      if (overrides.contains(key)) {
        warnings->push_back(join_path(path, key) + " is not a field the simulator reads for this model; it is ignored");
      }
    }
  }
  return m;
}

}  // namespace

ModelSpec parse_model_input(const json& value, const std::filesystem::path& base_dir, const std::string& path,
                            std::vector<std::string>* warnings) {
  if (value.is_string()) return parse_hf_config(model_preset_config(value.get<std::string>(), path), path);
  if (!value.is_object()) throw Error::invalid(path, describe_json(value), "must be a preset name or a JSON object");
  if (value.contains("preset") && value.contains("hf_config")) {
    throw Error::invalid(join_path(path, "preset"), describe_json(value.at("preset")), "cannot be combined with hf_config");
  }
  if (auto it = value.find("preset"); it != value.end()) {
    if (!it->is_string()) throw Error::invalid(join_path(path, "preset"), describe_json(*it), "must be a string");
    json config = model_preset_config(it->get<std::string>(), join_path(path, "preset"));
    return with_overrides(std::move(config), value, path, warnings);
  }
  if (auto it = value.find("hf_config"); it != value.end()) {
    if (!it->is_string()) throw Error::invalid(join_path(path, "hf_config"), describe_json(*it), "must be a file path");
    std::filesystem::path file = base_dir / it->get<std::string>();
    json config = read_json_file(file, join_path(path, "hf_config"));
    if (!config.is_object()) {
      throw Error::invalid(join_path(path, "hf_config"), file.string(), "must hold a JSON object (a config.json)");
    }
    if (!value.contains("name")) config["name"] = file.stem().string();
    return with_overrides(std::move(config), value, path, warnings);
  }
  check_mtp_spellings(value, path);
  return parse_hf_config(value, path);
}

}  // namespace orrery
