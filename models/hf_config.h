#pragma once
// Import of Hugging Face config.json files into ModelSpec. Every key such files carry is accepted; keys that do not
// affect performance are ignored; a missing field that performance needs is an error naming it. Families and their
// field spellings follow the transformers library's configuration classes (GPT2Config, LlamaConfig, MixtralConfig,
// Qwen2Config, Qwen3MoeConfig, DeepseekV3Config, GptOssConfig, NemotronConfig, MptConfig, BloomConfig).

#include <nlohmann/json_fwd.hpp>

#include <string>
#include <vector>

#include "models/model_spec.h"

namespace orrery {

/// Parses one config.json object. `path` is the field path for errors (e.g. "model").
/// Errors: Error::invalid for a missing required field, a wrong type, an unknown model_type or an inconsistent
/// shape (e.g. heads not divisible by key/value heads).
/// `unread`, when given, receives the keys the importer did not use (to flag likely typos in overrides).
ModelSpec parse_hf_config(const nlohmann::json& config, const std::string& path,
                          std::vector<std::string>* unread = nullptr);

/// The model_type values parse_hf_config understands.
const std::vector<std::string>& supported_model_types();

/// Checks the cross-field rules of a ModelSpec (positive sizes, heads divisible by kv heads, top-k <= experts...).
void validate_model(const ModelSpec& model, const std::string& path);

}  // namespace orrery
