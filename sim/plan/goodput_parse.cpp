#include "sim/plan/goodput_parse.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "hardware/hardware_presets.h"
#include "models/error.h"
#include "models/json_fields.h"

namespace orrery {

namespace {

using nlohmann::json;

constexpr const char* kDefaultPreset = "llama3-405b";
// Ranges: a rate above one failure per GPU-hour would stop any multi-GPU job; a week of detection or recovery is
// beyond any published incident.
constexpr bounds::Range kRatePerGpuHour{0.0, 1.0, "per GPU-hour", "one failure per GPU-hour stops any multi-GPU job"};
constexpr bounds::Range kDowntimeS{0.0, 604'800.0, "s", "a week, beyond any published detection or recovery"};
constexpr bounds::Range kBandwidthGBs{0.001, 100'000.0, "GB/s", "between 1 MB/s and 100 TB/s"};

RecoveryStrategy parse_recovery(const std::string& text, const std::string& field) {
  for (RecoveryStrategy s : {RecoveryStrategy::kRequeue, RecoveryStrategy::kReschedule, RecoveryStrategy::kWarmStandby,
                             RecoveryStrategy::kHotUpdate})
    if (text == recovery_name(s)) return s;
  throw Error::invalid(field, text, "must be one of requeue, reschedule, warm_standby, hot_update");
}

CheckpointMode parse_mode(const std::string& text, const std::string& field) {
  for (CheckpointMode m :
       {CheckpointMode::kBlocking, CheckpointMode::kAsync, CheckpointMode::kInMemory, CheckpointMode::kEveryStep})
    if (text == checkpoint_mode_name(m)) return m;
  throw Error::invalid(field, text, "must be one of blocking, async, in_memory, every_step");
}

FailureCategory parse_category(const json& object, const std::string& path) {
  require(object.is_object(), path, describe_json(object), "must be an object");
  FieldReader r(object, path);
  FailureCategory c;
  c.name = r.require_string("name");
  c.rate_per_gpu_hour = r.require_double("rate_per_gpu_hour", kRatePerGpuHour);
  c.detection_s = r.require_double("detection_s", kDowntimeS);
  r.reject_unknown();
  return c;
}

std::vector<FailureCategory> parse_categories(const json& list, const std::string& path) {
  require(list.is_array() && !list.empty(), path, describe_json(list), "must be a non-empty list of categories");
  std::vector<FailureCategory> out;
  for (std::size_t i = 0; i < list.size(); ++i) out.push_back(parse_category(list[i], fmt::format("{}[{}]", path, i)));
  return out;
}

StartupModel parse_startup(const json& object, const std::string& path) {
  require(object.is_object(), path, describe_json(object), "must be an object");
  FieldReader r(object, path);
  StartupModel s;
  s.reference_s = r.double_or("reference_s", s.reference_s, kDowntimeS);
  s.reference_gpus = r.double_or("reference_gpus", s.reference_gpus, true);
  s.exponent = r.double_or("exponent", s.exponent, bounds::Range{0.0, 4.0, "", "at most quartic in the GPU count"});
  r.reject_unknown();
  require(s.reference_s > 0, path + ".reference_s", fmt::format("{}", s.reference_s), "must be above 0");
  return s;
}

}  // namespace

std::vector<std::string> failure_preset_names() {
  std::vector<std::string> names;
  for (const json& p : hardware_presets("failures")) names.push_back(p.at("name").get<std::string>());
  return names;
}

FailureModel failure_preset(const std::string& name, const std::string& field) {
  for (const json& p : hardware_presets("failures")) {
    if (p.at("name").get<std::string>() != name) continue;
    const std::string path = "failures preset " + name;
    FieldReader r(p, path);
    r.allow("name");
    r.allow("source");
    FailureModel model;
    model.preset = name;
    model.recovery = parse_recovery(r.require_string("recovery"), path + ".recovery");
    model.recovery_s = default_recovery_s(model.recovery);
    model.categories = parse_categories(*r.raw("categories"), path + ".categories");
    r.reject_unknown();
    return model;
  }
  throw Error::invalid(field, name, fmt::format("is not a failures preset; known: {}", fmt::join(failure_preset_names(), ", ")));
}

FailureModel parse_failures(const json& section, const std::string& path) {
  if (section.is_null()) return failure_preset(kDefaultPreset, path);
  if (section.is_string()) return failure_preset(section.get<std::string>(), path);
  require(section.is_object(), path, describe_json(section), "must be a preset name or an object");
  FieldReader r(section, path);
  const std::string preset = r.optional_string("preset").value_or(kDefaultPreset);
  FailureModel model = failure_preset(preset, r.field("preset"));
  if (const json* list = r.raw("categories")) {
    model.categories = parse_categories(*list, r.field("categories"));
    model.preset.clear();
  }
  const double scale = r.double_or("rate_scale", 1.0, bounds::Range{0.0, 1e6, "", "a million times the preset"});
  if (auto detection = r.optional_double("detection_s", kDowntimeS))
    for (FailureCategory& c : model.categories) c.detection_s = *detection;
  for (FailureCategory& c : model.categories) c.rate_per_gpu_hour *= scale;
  if (auto recovery = r.optional_string("recovery")) {
    model.recovery = parse_recovery(*recovery, r.field("recovery"));
    model.recovery_s = default_recovery_s(model.recovery);
  }
  model.recovery_s = r.double_or("recovery_s", model.recovery_s, kDowntimeS);
  if (const json* startup = r.raw("startup")) model.startup = parse_startup(*startup, r.field("startup"));
  r.reject_unknown();
  return model;
}

CheckpointSpec parse_checkpoint(const json& section, const std::string& path) {
  CheckpointSpec spec;
  if (section.is_null()) return spec;
  require(section.is_object(), path, describe_json(section), "must be an object");
  FieldReader r(section, path);
  if (auto mode = r.optional_string("mode")) spec.mode = parse_mode(*mode, r.field("mode"));
  spec.interval_s = r.optional_double("interval_s", true);
  require(!(spec.interval_s && spec.mode == CheckpointMode::kEveryStep), r.field("interval_s"),
          fmt::format("{}", spec.interval_s.value_or(0)), "cannot be given with mode every_step (the interval is one step)");
  spec.storage_write_GB_s_per_node = r.double_or("storage_write_GB_s_per_node", spec.storage_write_GB_s_per_node, kBandwidthGBs);
  spec.storage_read_GB_s_per_node = r.double_or("storage_read_GB_s_per_node", spec.storage_read_GB_s_per_node, kBandwidthGBs);
  spec.storage_GB_s_total = r.double_or("storage_GB_s_total", spec.storage_GB_s_total, kBandwidthGBs);
  spec.device_to_host_GB_s = r.double_or("device_to_host_GB_s", spec.device_to_host_GB_s, kBandwidthGBs);
  spec.peer_network_GB_s_per_node = r.double_or("peer_network_GB_s_per_node", spec.peer_network_GB_s_per_node, kBandwidthGBs);
  r.reject_unknown();
  return spec;
}

}  // namespace orrery
