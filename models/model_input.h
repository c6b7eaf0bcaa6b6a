#pragma once
// The `model` value of a scenario file (ARCHITECTURE.md "Scenario file"): a preset name; {"preset": NAME,
// ...overrides}; {"hf_config": "path/relative/to/scenario.json", ...overrides}; or an inline Hugging Face config
// object. An optional "name" labels the model in reports.

#include <nlohmann/json_fwd.hpp>

#include <filesystem>
#include <string>
#include <vector>

#include "models/model_spec.h"

namespace orrery {

/// Resolves and parses a scenario's model value. `base_dir` is the folder of the scenario file (for hf_config
/// paths); `path` is the field path for errors ("model").
/// Errors: Error::invalid for unknown presets, unreadable or malformed hf_config files, and everything
/// parse_hf_config rejects; Error::io when the hf_config file cannot be read.
/// `warnings`, when given, receives a line for each override key the model does not read (most likely a typo,
/// e.g. "num_hiden_layers"): an inline config may carry any HF key, but an override should change something.
ModelSpec parse_model_input(const nlohmann::json& value, const std::filesystem::path& base_dir, const std::string& path,
                            std::vector<std::string>* warnings = nullptr);

}  // namespace orrery
