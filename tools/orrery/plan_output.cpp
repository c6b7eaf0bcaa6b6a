#include "tools/orrery/plan_output.h"

#include <fmt/format.h>

#include <cmath>

#include "hardware/gpu_power.h"
#include "tools/orrery/outputs.h"
#include "tools/orrery/plan_json.h"

namespace orrery::cli {

using nlohmann::json;

json goodput_json(const SweepPoint& p) {
  const GoodputExpectation& g = p.goodput;
  json categories = json::array();
  for (const CategoryGoodput& c : g.categories) {
    categories.push_back({{"name", c.name},
                          {"rate_per_gpu_hour", c.rate_per_gpu_hour},
                          {"expected_count", c.expected_count},
                          {"lost_s", c.lost_s}});
  }
  json curve = json::array();
  for (const IntervalPoint& i : p.vs_checkpoint_interval) curve.push_back({{"interval_s", i.interval_s}, {"ettr", i.ettr}});
  json out = {{"ettr", g.ettr},
              {"effective_time_to_train_s", g.effective_time_to_train_s},
              {"failures_expected", g.failures_expected},
              {"job_mtbf_s", std::isfinite(g.job_mtbf_s) ? json(g.job_mtbf_s) : json(nullptr)},
              {"checkpoint",
               {{"mode", checkpoint_mode_name(g.checkpoint.mode)},
                {"interval_s", g.checkpoint.interval_s},
                {"interval_rule", g.checkpoint.interval_rule},
                {"save_stall_s", g.checkpoint.save_stall_s},
                {"persist_s", g.checkpoint.persist_s},
                {"load_s", g.checkpoint.load_s}}},
              {"lost_s",
               {{"checkpoint_saves", g.lost.checkpoint_saves},
                {"lost_work", g.lost.lost_work},
                {"detection", g.lost.detection},
                {"recovery", g.lost.recovery},
                {"checkpoint_loads", g.lost.checkpoint_loads},
                {"startup", g.lost.startup}}},
              {"categories", categories},
              {"vs_checkpoint_interval", curve}};
  const Scenario& s = p.job.scenario();
  out["failures_preset"] = s.failures ? s.failures->preset : std::string("llama3-405b");
  if (p.monte_carlo) {
    const MonteCarloSummary& m = *p.monte_carlo;
    out["monte_carlo"] = {{"seed", m.seed},     {"runs", m.runs},         {"mean_s", m.mean_s},
                          {"p50_s", m.p50_s},   {"p90_s", m.p90_s},       {"p99_s", m.p99_s},
                          {"ettr_mean", m.ettr_mean}, {"ettr_p10", m.ettr_p10}};
  }
  return out;
}

json plan_json(const PlanSweep& sweep) {
  const SweepPoint& m = sweep.points[sweep.main];
  const Prediction& p = *sweep.main_prediction;
  const Job& job = m.job;
  const json report = report_json(p);
  json out;
  out["scenario"] = sweep.scenario_name;
  out["model"] = job.model().name;
  out["cluster"] = job.cluster().name;
  out["gpu"] = job.cluster().gpu.display_name;
  out["gpu_memory_bytes"] = job.cluster().gpu.hbm_capacity;
  out["tokens"] = m.point.tokens;
  out["steps"] = m.point.steps;
  out["tokens_per_step"] = m.point.tokens_per_step;
  out["num_gpus"] = m.point.num_gpus;
  out["plan"] = plan_layout_json(job);
  out["iteration_time_s"] = m.point.iteration_time;
  out["tokens_per_s"] = m.point.tokens_per_s;
  out["tokens_per_s_per_gpu"] = m.point.tokens_per_s_per_gpu;
  out["mfu"] = m.point.mfu;
  out["time_to_train_s"] = m.point.time_to_train;
  out["effective_time_to_train_s"] = m.goodput.effective_time_to_train_s;
  out["gpu_hours"] = m.point.gpu_hours;
  out["effective_gpu_hours"] = m.point.num_gpus * m.goodput.effective_time_to_train_s / 3600.0;
  out["energy_J"] = m.point.energy.facility_J;
  out["effective_energy_J"] = m.effective_energy_J;
  out["ettr"] = m.goodput.ettr;
  const Prices prices = job.scenario().cost.for_gpu(job.cluster().gpu.name);
  out["cost"] = cost_json(m.point, prices);
  // GPU-hours are paid while the job stands after a failure too: the prices times the effective GPU-hours.
  const auto with_failures = [&](const std::optional<double>& price) {
    return price ? json(*price * out["effective_gpu_hours"].get<double>()) : json(nullptr);
  };
  out["cost"]["with_failures"] = {{"on_demand_usd", with_failures(prices.on_demand)},
                                  {"reserved_usd", with_failures(prices.reserved)},
                                  {"spot_usd", with_failures(prices.spot)}};
  out["energy"] = energy_json(m.point, gpu_power(job.cluster().gpu));
  out["goodput"] = goodput_json(m);
  out["breakdown_s"] = report["breakdown_s"];
  out["memory"] = report["memory"];
  out["warnings"] = report["warnings"];
  json points = json::array();
  for (const SweepPoint& s : sweep.points) {
    json row = sweep_point_json(s.point, s.job);
    row["effective_time_to_train_s"] = s.goodput.effective_time_to_train_s;
    row["ettr"] = s.goodput.ettr;
    row["strong_scaling_efficiency"] = s.strong_scaling_efficiency;
    row["weak_scaling_efficiency"] = s.weak_scaling_efficiency ? json(*s.weak_scaling_efficiency) : json(nullptr);
    row["effective_energy_J"] = s.effective_energy_J;
    row["fits"] = s.fits;
    points.push_back(row);
  }
  out["sweep"] = points;
  json skipped = json::array();
  for (const SkippedPoint& k : sweep.skipped) {
    skipped.push_back({{"cluster", k.cluster}, {"num_gpus", k.num_gpus}, {"reason", k.reason}});
  }
  out["skipped"] = skipped;
  return out;
}

namespace {

constexpr const char* kCsvColumns[] = {"cluster", "gpu", "num_gpus", "iteration_time_s", "tokens_per_s",
                                       "tokens_per_s_per_gpu", "mfu", "strong_scaling_efficiency",
                                       "weak_scaling_efficiency", "time_to_train_s", "effective_time_to_train_s",
                                       "ettr", "gpu_hours", "cost_usd", "cost_per_token_usd", "energy_J",
                                       "effective_energy_J", "energy_per_token_J", "average_power_W"};

std::string csv_cell(const json& v) {
  if (v.is_null()) return "";
  if (v.is_string()) return "\"" + v.get<std::string>() + "\"";
  if (v.is_number_integer()) return std::to_string(v.get<std::int64_t>());
  return fmt::format("{:.6g}", v.get<double>());
}

std::string days(double seconds) { return fmt::format("{:.2f} days", seconds / 86400.0); }

std::string money(const json& v) { return v.is_null() ? std::string("-") : fmt::format("${:.3g}M", v.get<double>() / 1e6); }

}  // namespace

std::string sweep_csv(const json& plan) {
  std::string out;
  for (const char* c : kCsvColumns) out += std::string(out.empty() ? "" : ",") + c;
  out += "\n";
  for (const json& row : plan["sweep"]) {
    std::string line;
    for (const char* c : kCsvColumns) line += std::string(line.empty() ? "" : ",") + csv_cell(row.value(c, json()));
    out += line + "\n";
  }
  return out;
}

void print_plan_summary(std::ostream& out, const json& plan) {
  const json& g = plan["goodput"];
  const json& e = plan["energy"];
  const json& c = plan["cost"];
  out << fmt::format("{}: {} on {} x {}, {:.4g} tokens in {:.0f} steps of {:.4g} tokens\n",
                     plan["scenario"].get<std::string>(), plan["model"].get<std::string>(), plan["num_gpus"].get<int>(),
                     plan["gpu"].get<std::string>(), plan["tokens"].get<double>(), plan["steps"].get<double>(),
                     plan["tokens_per_step"].get<double>());
  out << fmt::format("  step                {:.3f} s, {:.0f} tokens/s/GPU, MFU {:.1f}%\n", plan["iteration_time_s"].get<double>(),
                     plan["tokens_per_s_per_gpu"].get<double>(), 100 * plan["mfu"].get<double>());
  out << fmt::format("  time to train       {} without failures, {} with them (ETTR {:.1f}%)\n",
                     days(plan["time_to_train_s"].get<double>()), days(plan["effective_time_to_train_s"].get<double>()),
                     100 * plan["ettr"].get<double>());
  out << fmt::format("  GPU-hours           {:.4g} ({:.4g} with failures)\n", plan["gpu_hours"].get<double>(),
                     plan["effective_gpu_hours"].get<double>());
  const json& cf = c["with_failures"];
  out << fmt::format("  cost                on demand {} ({} with failures), reserved {} ({}), spot {} ({}){}\n",
                     money(c["on_demand_usd"]), money(cf["on_demand_usd"]), money(c["reserved_usd"]),
                     money(cf["reserved_usd"]), money(c["spot_usd"]), money(cf["spot_usd"]),
                     c["on_demand_usd"].is_null() && c["reserved_usd"].is_null() && c["spot_usd"].is_null()
                         ? " (give --price-on-demand, --price-reserved or --price-spot, USD per GPU-hour)"
                         : "");
  out << fmt::format("  energy              {:.4g} MWh at the facility (PUE {:.2f}; {:.4g} MWh with failures), average {:.3g} MW; GPUs {:.0f} W each\n",
                     e["facility_J"].get<double>() / 3.6e9, e["pue"].get<double>(),
                     plan["effective_energy_J"].get<double>() / 3.6e9, e["average_power_W"].get<double>() / 1e6,
                     e["average_gpu_power_W"].get<double>());
  out << fmt::format("  failures            {:.0f} expected ({} rates), job MTBF {}, {} checkpoints every {:.0f} s\n",
                     g["failures_expected"].get<double>(), g["failures_preset"].get<std::string>(),
                     g["job_mtbf_s"].is_null() ? std::string("none") : fmt::format("{:.2f} h", g["job_mtbf_s"].get<double>() / 3600),
                     g["checkpoint"]["mode"].get<std::string>(), g["checkpoint"]["interval_s"].get<double>());
  if (g.contains("monte_carlo")) {
    const json& m = g["monte_carlo"];
    out << fmt::format("  Monte-Carlo         {} runs (seed {}): mean {}, p50 {}, p90 {}, p99 {}\n", m["runs"].get<int>(),
                       m["seed"].get<std::uint64_t>(), days(m["mean_s"].get<double>()), days(m["p50_s"].get<double>()),
                       days(m["p90_s"].get<double>()), days(m["p99_s"].get<double>()));
  }
  if (plan["sweep"].size() > 1) {
    out << "\n  cluster         GPUs   iter (s)  tok/s/GPU    MFU  strong   weak   days  eff. days   ETTR    MWh       cost\n";
    for (const json& r : plan["sweep"]) {
      const auto pct = [](const json& v) { return v.is_null() ? std::string("    -") : fmt::format("{:5.1f}%", 100 * v.get<double>()); };
      out << fmt::format("  {:<13} {:>6} {:>10.3f} {:>10.0f} {:>5.1f}% {} {} {:>6.1f} {:>10.1f} {:>5.1f}% {:>6.0f} {:>10}\n",
                         r["cluster"].get<std::string>(), r["num_gpus"].get<int>(), r["iteration_time_s"].get<double>(),
                         r["tokens_per_s_per_gpu"].get<double>(), 100 * r["mfu"].get<double>(),
                         pct(r["strong_scaling_efficiency"]), pct(r["weak_scaling_efficiency"]),
                         r["time_to_train_s"].get<double>() / 86400, r["effective_time_to_train_s"].get<double>() / 86400,
                         100 * r["ettr"].get<double>(), r["energy_J"].get<double>() / 3.6e9, money(r["cost_usd"]));
    }
  }
  for (const json& k : plan["skipped"]) {
    out << fmt::format("  skipped {} x {}: {}\n", k["cluster"].get<std::string>(), k["num_gpus"].get<int>(),
                       k["reason"].get<std::string>());
  }
}

}  // namespace orrery::cli
