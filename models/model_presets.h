#pragma once
// Model presets compiled into the binary from models/presets/*.json. Each file holds a Hugging Face config.json
// under "config", its "source", and the parameter counts its authors published under "published".

#include <nlohmann/json_fwd.hpp>

#include <optional>
#include <string>
#include <vector>

#include "models/model_spec.h"

namespace orrery {

struct ModelPresetInfo {
  std::string name;          // preset key, e.g. "llama3-70b"
  std::string display_name;  // e.g. "Llama-3-70B"
  std::string source;        // where the config comes from
  std::optional<double> published_total_params;   // parameters, as published (not billions)
  std::optional<double> published_active_params;  // MoE only
  std::string published_source;
};

/// Every preset, sorted by name.
const std::vector<ModelPresetInfo>& model_presets();

/// The Hugging Face config of preset `name` (a JSON object). Errors: Error::invalid naming `field` when unknown,
/// with the list of preset names.
nlohmann::json model_preset_config(const std::string& name, const std::string& field);

}  // namespace orrery
