#include "tools/orrery/report_summary.h"

#include <fmt/format.h>

#include <array>
#include <cmath>
#include <functional>
#include <optional>

#include "tools/orrery/report_rows.h"

namespace orrery::cli::report {

using nlohmann::json;

namespace {

constexpr double kSecondsPerDay = 86400.0;
constexpr double kJoulesPerWattHour = 3600.0;
constexpr double kBytesPerGiB = 1073741824.0;  // 2^30

using Format = std::function<std::string(double)>;

std::string days(double s) { return fmt::format("{:.1f} days", s / kSecondsPerDay); }
std::string seconds(double s) { return fmt::format("{:.3f} s", s); }
std::string percent(double x) { return fmt::format("{:.1f}%", 100 * x); }
std::string dollars(double x) { return "$" + si(x, ""); }
std::string count(double x) { return si(x, ""); }
// 16384 -> "16,384".
std::string grouped(double x) {
  const std::string digits = fmt::format("{:.0f}", std::fabs(x));
  std::string out;
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return (x < 0 ? "-" : "") + out;
}
std::string gib(double bytes) { return fmt::format("{:.1f} GiB", bytes / kBytesPerGiB); }
std::string watt_hours(double joules) { return si(joules / kJoulesPerWattHour, "Wh"); }
std::string watts(double w) { return si(w, "W"); }

// Appends the row when the number at `key` is present and finite.
void add(std::vector<SummaryRow>& rows, const json& report, const std::string& label, const std::string& key,
         const Format& format) {
  if (const std::optional<double> x = number(report, key)) rows.push_back({label, format(*x), key});
}

void add_text(std::vector<SummaryRow>& rows, const json& report, const std::string& label, const std::string& key) {
  if (const std::optional<std::string> t = text(report, key)) rows.push_back({label, *t, key});
}

// "TP 8 · PP 16 · DP 128 · VPP 8 · ZeRO 1, micro-batch 1, global batch 2048, recompute none, bf16": the plan's
// keys that are present, in Megatron-LM's order.
std::string plan_text(const json& plan) {
  std::string sizes;
  const std::array<std::pair<const char*, const char*>, 7> parallel{
      {{"tp", "TP"}, {"pp", "PP"}, {"dp", "DP"}, {"cp", "CP"}, {"ep", "EP"}, {"vpp", "VPP"}, {"zero_stage", "ZeRO"}}};
  for (const auto& [key, name] : parallel) {
    if (const auto x = number(plan, key)) sizes += fmt::format("{}{} {}", sizes.empty() ? "" : " · ", name, *x);
  }
  std::string rest;
  if (const auto x = number(plan, "micro_batch_size")) rest += fmt::format(", micro-batch {}", *x);
  if (const auto x = number(plan, "global_batch_size")) rest += fmt::format(", global batch {}", *x);
  if (const auto t = text(plan, "recompute")) rest += ", recompute " + *t;
  if (const auto t = text(plan, "precision")) rest += ", " + *t;
  return sizes + rest;
}

}  // namespace

std::string si(double value, const std::string& unit) {
  const std::string space = unit.empty() ? "" : " ";
  if (value == 0 || !std::isfinite(value)) return fmt::format("{}{}{}", value, space, unit);
  static constexpr std::array<const char*, 9> prefixes{"m", "", "k", "M", "G", "T", "P", "E", ""};
  const double magnitude = std::fabs(value);
  if (magnitude < 1e-3 || magnitude >= 1e18) return fmt::format("{:.3g}{}{}", value, space, unit);
  int power = static_cast<int>(std::floor(std::log10(magnitude) / 3));  // -1 .. 5
  double scaled = value / std::pow(1000.0, power);
  if (std::fabs(std::stod(fmt::format("{:.3g}", scaled))) >= 1000 && power < 5) {  // 999.96 rounds to 1000
    ++power;
    scaled /= 1000;
  }
  const char* prefix = prefixes[static_cast<std::size_t>(power + 1)];
  const std::string sep = unit.empty() && *prefix == '\0' ? "" : " ";
  return fmt::format("{:.3g}{}{}{}", scaled, sep, prefix, unit);
}

std::vector<SummaryRow> plan_summary(const json& p) {
  std::vector<SummaryRow> rows;
  add_text(rows, p, "scenario", "scenario");
  add_text(rows, p, "model", "model");
  add_text(rows, p, "cluster", "cluster");
  add_text(rows, p, "GPU", "gpu");
  add(rows, p, "GPUs", "num_gpus", grouped);
  if (const json* plan = find(p, "plan"); plan && plan->is_object()) rows.push_back({"plan", plan_text(*plan), "plan"});
  add(rows, p, "tokens", "tokens", count);
  add(rows, p, "steps", "steps", grouped);
  add(rows, p, "iteration time", "iteration_time_s", seconds);
  add(rows, p, "tokens per second", "tokens_per_s", count);
  add(rows, p, "tokens per second per GPU", "tokens_per_s_per_gpu", count);
  add(rows, p, "MFU", "mfu", percent);
  add(rows, p, "time to train, no failures", "time_to_train_s", days);
  add(rows, p, "time to train, with failures", "effective_time_to_train_s", days);
  add(rows, p, "ETTR", "ettr", percent);
  add(rows, p, "failures expected", "goodput.failures_expected", [](double x) { return fmt::format("{:.0f}", x); });
  add(rows, p, "checkpoint interval", "goodput.checkpoint.interval_s",
      [](double s) { return fmt::format("{:.1f} min", s / 60); });
  add(rows, p, "with failures, Monte-Carlo p90", "goodput.monte_carlo.p90_s", days);
  add(rows, p, "GPU-hours", "gpu_hours", count);
  add(rows, p, "energy", "energy_J", watt_hours);
  add(rows, p, "average power (facility)", "energy.average_power_W", watts);
  add(rows, p, "energy per token", "energy.energy_per_token_J", [](double j) { return si(j, "J"); });
  add(rows, p, "cost, on-demand", "cost.on_demand_usd", dollars);
  add(rows, p, "cost, reserved", "cost.reserved_usd", dollars);
  add(rows, p, "cost, spot", "cost.spot_usd", dollars);
  return rows;
}

std::vector<SummaryRow> predict_summary(const json& p) {
  std::vector<SummaryRow> rows;
  add_text(rows, p, "scenario", "name");
  add(rows, p, "GPUs", "num_gpus", grouped);
  add(rows, p, "iteration time", "iteration_time_s", seconds);
  add(rows, p, "tokens per second", "tokens_per_s", count);
  add(rows, p, "tokens per second per GPU", "tokens_per_s_per_gpu", count);
  add(rows, p, "MFU", "mfu", percent);
  add(rows, p, "HFU", "hfu", percent);
  add(rows, p, "peak memory per GPU", "peak_memory_bytes", gib);
  add(rows, p, "GPU memory", "memory.capacity_bytes", gib);
  add(rows, p, "average power (facility)", "energy.average_power_W", watts);
  add(rows, p, "average GPU power", "energy.average_gpu_power_W", watts);
  add(rows, p, "energy per token", "energy.energy_per_token_J", [](double j) { return si(j, "J"); });
  return rows;
}

}  // namespace orrery::cli::report
