#pragma once
// GPU and cluster presets compiled into the binary from hardware/presets/{gpus,clusters}.json.

#include <nlohmann/json_fwd.hpp>

#include <string>
#include <vector>

namespace orrery {

/// The preset object named `name` from the list `list` ("gpus" or "clusters").
/// Errors: Error::invalid naming `field` with the list of known names when there is no such preset.
const nlohmann::json& hardware_preset(const std::string& list, const std::string& name, const std::string& field);

/// All preset objects of `list`, in file order.
const std::vector<nlohmann::json>& hardware_presets(const std::string& list);

}  // namespace orrery
