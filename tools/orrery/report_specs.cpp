#include "tools/orrery/report_specs.h"

#include <set>
#include <string>

namespace orrery::cli::report {

using nlohmann::json;

namespace {

constexpr double kSecondsPerDay = 86400.0;
constexpr double kBytesPerGiB = 1073741824.0;  // 2^30

// Legends go below the plot, with room for a GPU's full name, so every plot is as wide as its neighbour.
json base(const json& rows) {
  return {{"$schema", "https://vega.github.io/schema/vega-lite/v6.json"},
          {"width", 540},
          {"height", 280},
          {"data", {{"values", rows}}},
          {"config", {{"legend", {{"orient", "bottom"}, {"labelLimit", 320}, {"columns", 2}}}}}};
}

json field(const char* name, const char* type, const char* title) {
  return {{"field", name}, {"type", type}, {"title", title}};
}

// The GPU axis of the sweep figures: log scale, a tick at each GPU count of the sweep and none between.
json gpus_axis(const json& rows) {
  std::set<double> counts;
  for (const json& row : rows) counts.insert(row.at("num_gpus").get<double>());
  json x = field("num_gpus", "quantitative", "GPUs");
  x["scale"] = {{"type", "log"}, {"base", 2}};
  x["axis"] = {{"format", ",d"}, {"values", counts}};
  return x;
}

json gpu_colour() { return field("gpu", "nominal", "GPU"); }

json line_with_points() { return {{"type", "line"}, {"point", true}}; }

// Folds `keys` into rows {series_key: label, value_key: number}, each key's label by `labels`, and drops the
// rows whose key the source row lacked.
json fold(const json& keys, const char* series_field, const char* value_field, const std::string& label_expression) {
  return json::array({{{"fold", keys}, {"as", json::array({"key", value_field})}},
                      {{"filter", std::string("isValid(datum.") + value_field + ")"}},
                      {{"calculate", label_expression}, {"as", series_field}}});
}

}  // namespace

json time_to_train_spec(const json& rows) {
  json spec = base(rows);
  spec["transform"] = fold(json::array({"time_to_train_s", "effective_time_to_train_s"}), "series", "seconds",
                           "datum.key == 'time_to_train_s' ? 'without failures' : 'with failures (expected)'");
  spec["transform"].push_back({{"calculate", "datum.seconds / " + std::to_string(kSecondsPerDay)}, {"as", "days"}});
  spec["mark"] = line_with_points();
  json y = field("days", "quantitative", "days to train");
  y["axis"] = {{"format", ",.0f"}};
  json dash = field("series", "nominal", "");
  dash["sort"] = json::array({"without failures", "with failures (expected)"});
  spec["encoding"] = {{"x", gpus_axis(rows)}, {"y", y}, {"color", gpu_colour()}, {"strokeDash", dash},
                      {"tooltip", json::array({field("gpu", "nominal", "GPU"), field("num_gpus", "quantitative", "GPUs"),
                                               field("series", "nominal", "time"),
                                               {{"field", "days"}, {"type", "quantitative"}, {"format", ",.1f"}}})}};
  return spec;
}

json cost_spec(const json& rows) {
  json spec = base(rows);
  spec["mark"] = line_with_points();
  json y = field("cost_usd", "quantitative", "cost (US dollars)");
  y["axis"] = {{"format", "$.3~s"}};
  json tip = field("cost_usd", "quantitative", "cost");
  tip["format"] = "$,.0f";
  spec["encoding"] = {{"x", gpus_axis(rows)}, {"y", y}, {"color", gpu_colour()},
                      {"tooltip", json::array({field("gpu", "nominal", "GPU"),
                                               field("num_gpus", "quantitative", "GPUs"), tip})}};
  return spec;
}

json scaling_spec(const json& rows) {
  json spec = base(rows);
  spec["transform"] = fold(json::array({"strong_scaling_efficiency", "weak_scaling_efficiency"}), "scaling",
                           "efficiency", "datum.key == 'strong_scaling_efficiency' ? 'strong' : 'weak'");
  spec["mark"] = line_with_points();
  json y = field("efficiency", "quantitative", "scaling efficiency");
  y["axis"] = {{"format", ".0%"}};
  json tip = field("efficiency", "quantitative", "efficiency");
  tip["format"] = ".1%";
  spec["encoding"] = {{"x", gpus_axis(rows)}, {"y", y}, {"color", gpu_colour()},
                      {"strokeDash", field("scaling", "nominal", "scaling")},
                      {"tooltip", json::array({field("gpu", "nominal", "GPU"), field("num_gpus", "quantitative", "GPUs"),
                                               field("scaling", "nominal", "scaling"), tip})}};
  return spec;
}

json ettr_vs_gpus_spec(const json& rows) {
  json spec = base(rows);
  spec["mark"] = line_with_points();
  json y = field("ettr", "quantitative", "ETTR");
  y["axis"] = {{"format", ".0%"}};
  y["scale"] = {{"zero", false}};
  json tip = field("ettr", "quantitative", "ETTR");
  tip["format"] = ".2%";
  spec["encoding"] = {{"x", gpus_axis(rows)}, {"y", y}, {"color", gpu_colour()},
                      {"tooltip", json::array({field("gpu", "nominal", "GPU"),
                                               field("num_gpus", "quantitative", "GPUs"), tip})}};
  return spec;
}

json ettr_vs_interval_spec(const json& rows, std::optional<double> chosen_s) {
  json spec = base(rows);
  spec.erase("data");
  json x = field("minutes", "quantitative", "checkpoint interval (minutes)");
  x["scale"] = {{"type", "log"}};
  json y = field("ettr", "quantitative", "ETTR");
  y["axis"] = {{"format", ".1%"}};
  y["scale"] = {{"zero", false}};
  json tip = field("ettr", "quantitative", "ETTR");
  tip["format"] = ".2%";
  json curve = {{"data", {{"values", rows}}},
                {"transform", json::array({{{"calculate", "datum.interval_s / 60"}, {"as", "minutes"}}})},
                {"mark", line_with_points()},
                {"encoding", {{"x", x}, {"y", y},
                              {"tooltip", json::array({field("interval_s", "quantitative", "interval (s)"), tip})}}}};
  spec["layer"] = json::array({curve});
  if (chosen_s && *chosen_s > 0) {
    json at = field("minutes", "quantitative", "");
    spec["layer"].push_back(
        {{"data", {{"values", json::array({{{"minutes", *chosen_s / 60}}})}}},
         {"mark", {{"type", "rule"}, {"strokeDash", json::array({6, 4})}, {"color", "#555"}}},
         {"encoding", {{"x", at}, {"tooltip", field("minutes", "quantitative", "plan's interval (minutes)")}}}});
  }
  return spec;
}

json breakdown_spec(const json& rows) {
  json spec = base(rows);
  spec["height"] = {{"step", 24}};
  spec["transform"] = json::array({{{"joinaggregate", json::array({{{"op", "sum"}, {"field", "seconds"}, {"as", "total"}}})}},
                                   {{"calculate", "datum.total > 0 ? datum.seconds / datum.total : 0"}, {"as", "share"}}});
  spec["mark"] = {{"type", "bar"}, {"tooltip", true}};
  json y = field("category", "nominal", "");
  y["sort"] = nullptr;
  json share = field("share", "quantitative", "share of the step");
  share["format"] = ".1%";
  json seconds = field("seconds", "quantitative", "seconds");
  seconds["format"] = ",.3f";
  spec["encoding"] = {{"y", y}, {"x", field("seconds", "quantitative", "seconds per step")},
                      {"color", {{"field", "category"}, {"type", "nominal"}, {"legend", nullptr}, {"sort", nullptr}}},
                      {"tooltip", json::array({field("category", "nominal", "part"), seconds, share})}};
  return spec;
}

json memory_spec(const json& rows, std::optional<double> capacity_bytes) {
  json spec = base(rows);
  spec.erase("data");
  const json parts = json::array({"weights", "gradients", "optimizer", "activations", "other"});
  json bars = {{"data", {{"values", rows}}}};
  bars["transform"] = json::array({{{"fold", parts}, {"as", json::array({"part", "bytes"})}},
                                   {{"filter", "isValid(datum.bytes)"}},
                                   {{"calculate", "datum.bytes / " + std::to_string(kBytesPerGiB)}, {"as", "GiB"}},
                                   {{"calculate", "indexof(" + parts.dump() + ", datum.part)"}, {"as", "rank"}}});
  bars["mark"] = "bar";
  json colour = field("part", "nominal", "held by");
  colour["sort"] = parts;
  colour["scale"] = {{"domain", parts}};
  json gib = field("GiB", "quantitative", "GiB");
  gib["format"] = ",.2f";
  bars["encoding"] = {{"x", field("stage", "ordinal", "pipeline stage")},
                      {"y", field("GiB", "quantitative", "GiB per GPU")},
                      {"color", colour},
                      {"order", {{"field", "rank"}, {"type", "quantitative"}}},  // weights at the bottom
                      {"tooltip", json::array({field("stage", "ordinal", "stage"), field("part", "nominal", "held by"), gib})}};
  spec["layer"] = json::array({bars});
  if (capacity_bytes && *capacity_bytes > 0) {
    spec["layer"].push_back(
        {{"data", {{"values", json::array({{{"GiB", *capacity_bytes / kBytesPerGiB}}})}}},
         {"mark", {{"type", "rule"}, {"strokeDash", json::array({6, 4})}, {"color", "#c00"}, {"size", 2}}},
         {"encoding", {{"y", field("GiB", "quantitative", "")},
                       {"tooltip", field("GiB", "quantitative", "GPU memory (GiB)")}}}});
  }
  return spec;
}

json power_per_stage_spec(const json& rows) {
  json spec = base(rows);
  spec["mark"] = "bar";
  json power = field("average_gpu_power_W", "quantitative", "average power (W)");
  power["format"] = ",.0f";
  json tips = json::array({field("stage", "ordinal", "stage"), power});
  for (const char* state : {"compute_s", "memory_s", "communication_s", "idle_s"}) {
    tips.push_back({{"field", state}, {"type", "quantitative"}, {"format", ",.3f"}});
  }
  spec["encoding"] = {{"x", field("stage", "ordinal", "pipeline stage")},
                      {"y", field("average_gpu_power_W", "quantitative", "average GPU power (W)")},
                      {"tooltip", tips}};
  return spec;
}

json power_by_state_spec(const json& rows) {
  json spec = base(rows);
  spec["mark"] = "bar";
  json x = field("state", "nominal", "GPU state");
  x["sort"] = nullptr;
  x["axis"] = {{"labelAngle", 0}};
  spec["encoding"] = {{"x", x}, {"y", field("power_W", "quantitative", "power per GPU (W)")},
                      {"color", {{"field", "state"}, {"type", "nominal"}, {"legend", nullptr}, {"sort", nullptr}}},
                      {"tooltip", json::array({field("state", "nominal", "state"),
                                               field("power_W", "quantitative", "W")})}};
  return spec;
}

}  // namespace orrery::cli::report
