#pragma once
// Reading the goodput model's scenario sections (issue 23, `orrery plan`): `failures` and `checkpoint`, strictly
// (unknown keys, wrong types and out-of-range values are errors naming the field, the value and the rule). The keys
// and their defaults are documented in scenarios/README.md ("failures and checkpoint (orrery plan)").

#include <nlohmann/json_fwd.hpp>

#include <string>
#include <vector>

#include "sim/plan/goodput.h"

namespace orrery {

/// The failure presets' names, in file order (hardware/presets/failures.json, list "failures").
std::vector<std::string> failure_preset_names();

/// The preset named `name`. Errors: Error::invalid naming `field` with the known names when there is none.
FailureModel failure_preset(const std::string& name, const std::string& field);

/// `failures`: a preset name (a string), or an object with optional keys "preset" (default "llama3-405b"),
/// "categories" (a list of {"name", "rate_per_gpu_hour", "detection_s"} replacing the preset's), "rate_scale"
/// (multiplies every rate, default 1), "detection_s" (replaces every category's detection time), "recovery"
/// ("requeue", "reschedule", "warm_standby", "hot_update"; default the preset's), "recovery_s" (default
/// default_recovery_s of the strategy) and "startup" ({"reference_s", "reference_gpus", "exponent"}, each defaulting
/// to StartupModel's). A null or absent section is the default preset. `path` names the section in errors.
FailureModel parse_failures(const nlohmann::json& section, const std::string& path);

/// `checkpoint`: an object with optional keys "mode" ("blocking", "async", "in_memory", "every_step"; default
/// "async"), "interval_s" (default: the optimum, see choose_checkpoint; refused with every_step), and the bandwidths
/// of CheckpointSpec by the same names ("storage_write_GB_s_per_node", "storage_read_GB_s_per_node",
/// "storage_GB_s_total", "device_to_host_GB_s", "peer_network_GB_s_per_node"); the GPUs per node are the cluster's (orrery plan sets them).
CheckpointSpec parse_checkpoint(const nlohmann::json& section, const std::string& path);

}  // namespace orrery
