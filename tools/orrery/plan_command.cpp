// `orrery plan SCENARIO [--tokens N | --steps N] [--num-gpus LIST] [--clusters LIST] [--search] [--json]
// [--report FILE.html] [--csv FILE]`: capacity planning (issue 23). Each point of the sweep is one prediction of a
// step, carried to the whole run (sim/plan/plan_point.h) with the goodput model (sim/plan/goodput.h).
#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <limits>
#include <chrono>
#include <cmath>
#include <iostream>
#include <memory>

#include "models/error.h"
#include "models/json_fields.h"
#include "models/limits.h"
#include "models/output_file.h"
#include "sim/plan/goodput_parse.h"
#include "sim/plan/plan_sweep.h"
#include "tools/orrery/commands.h"
#include "tools/orrery/html_report.h"
#include "tools/orrery/plan_output.h"
#include "tools/orrery/scenario_flags.h"

namespace orrery::cli {

namespace {

struct PlanArgs {
  std::string scenario_file;
  ScenarioFlags flags;
  double tokens = 0, steps = 0;
  std::string clusters;
  bool search = false, json = false, quiet = false;
  std::string report_file, csv_file;
  std::optional<double> price_on_demand, price_reserved, price_spot, pue;
  std::uint64_t seed = 1;
  int monte_carlo_runs = 1000;
};

// The items of a comma-separated list, each trimmed of nothing (an empty item is kept, so that it is refused).
std::vector<std::string> split_list(const std::string& text) {
  std::vector<std::string> out;
  if (text.empty()) return out;
  std::size_t start = 0;
  for (std::size_t comma = text.find(','); ; comma = text.find(',', start)) {
    out.push_back(text.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

// GPU counts in increasing order (the scaling efficiencies are relative to the smallest). Errors: Error::invalid
// naming --num-gpus for an item that is not a whole number in range, or one given twice.
std::vector<int> parse_gpu_list(const std::string& text) {
  std::vector<int> out;
  for (const std::string& item : split_list(text)) {
    std::int64_t v = 0;
    const auto [end, ec] = std::from_chars(item.data(), item.data() + item.size(), v);
    require(ec == std::errc() && end == item.data() + item.size() && v >= 1 && v <= limits::kGpus, "--num-gpus",
            item.empty() ? "an empty item" : item, fmt::format("must be a whole number of GPUs from 1 to {}", limits::kGpus));
    require(std::find(out.begin(), out.end(), v) == out.end(), "--num-gpus", item, "is given twice");
    out.push_back(static_cast<int>(v));
  }
  std::sort(out.begin(), out.end());
  return out;
}

// The --clusters items. Errors: Error::invalid naming --clusters for an empty item or one given twice.
std::vector<std::string> parse_cluster_list(const std::string& text) {
  std::vector<std::string> out;
  for (const std::string& item : split_list(text)) {
    require(!item.empty() && item.find_first_of(" \t") == std::string::npos, "--clusters",
            item.empty() ? "an empty item" : "'" + item + "'", "must be cluster presets or files, comma-separated, without spaces");
    require(std::find(out.begin(), out.end(), item) == out.end(), "--clusters", item, "is given twice");
    out.push_back(item);
  }
  return out;
}

// A CLI11 check that a number is finite and above 0 (CLI11's own range check prints the whole double range).
const CLI::Validator& positive_number() {
  static const CLI::Validator check(
      [](std::string& text) {
        double v = 0;
        try {
          std::size_t used = 0;
          v = std::stod(text, &used);
          if (used != text.size()) v = -1;
        } catch (const std::exception&) {
          v = -1;
        }
        return std::isfinite(v) && v > 0 ? std::string() : "'" + text + "' must be a finite number above 0";
      },
      "NUMBER");
  return check;
}

// The scenario document with the flags and the command's own settings applied (the sweep's sizes and clusters are
// applied per point by plan_sweep).
nlohmann::json base_document(const PlanArgs& a) {
  nlohmann::json doc;
  if (!a.scenario_file.empty()) {
    doc = read_json_file(a.scenario_file, "scenario");
  } else {
    require(a.flags.names_model(), "scenario", "missing", "orrery plan needs a scenario file or --model");
    doc = nlohmann::json::object();
    doc["cluster"] = "dgx-h100";
  }
  a.flags.apply(doc);
  a.flags.note_ignored(std::cerr);
  if (doc.is_object() && !doc.contains("name") && !a.scenario_file.empty()) {
    doc["name"] = std::filesystem::path(a.scenario_file).stem().string();
  }
  if (a.price_on_demand || a.price_reserved || a.price_spot) {
    nlohmann::json& prices = doc["cost"]["price_per_gpu_hour_usd"];
    if (prices.is_object()) prices.erase("by_gpu");  // a price on the command line is every GPU's
    if (a.price_on_demand) prices["on_demand"] = *a.price_on_demand;
    if (a.price_reserved) prices["reserved"] = *a.price_reserved;
    if (a.price_spot) prices["spot"] = *a.price_spot;
  }
  if (a.pue) doc["energy"]["pue"] = *a.pue;
  return doc;
}

void run_plan(const PlanArgs& a) {
  if (!a.report_file.empty()) check_output_path("--report", a.report_file);
  if (!a.csv_file.empty()) check_output_path("--csv", a.csv_file);
  std::vector<PathOption> inputs{{"scenario", a.scenario_file}, {"--model", a.flags.model}};
  for (const std::string& c : split_list(a.clusters)) inputs.push_back({"--clusters", c});
  check_distinct_outputs({{"--report", a.report_file}, {"--csv", a.csv_file}}, inputs);
  SweepRequest request;
  request.run = {a.tokens, a.steps};
  require((a.tokens > 0) != (a.steps > 0), a.tokens > 0 ? "--steps" : "--tokens", "missing or both given",
          "give exactly one of --tokens N (a token budget) and --steps N");
  request.document = base_document(a);
  request.base_dir = a.scenario_file.empty() ? std::filesystem::current_path()
                                             : std::filesystem::path(a.scenario_file).parent_path();
  if (!a.flags.num_gpus_list.empty()) request.gpu_counts = parse_gpu_list(a.flags.num_gpus_list);
  for (const std::string& c : parse_cluster_list(a.clusters)) request.clusters.push_back(cluster_flag_value(c));
  request.search = a.search;
  request.seed = a.seed;
  request.monte_carlo_runs = a.monte_carlo_runs;
  const auto started = std::chrono::steady_clock::now();
  if (!a.quiet) {
    request.progress = [started](std::size_t done, std::size_t total, const std::string& what) {
      if (total <= 1) return;
      const double spent = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
      const double left = done > 0 ? spent / static_cast<double>(done) * static_cast<double>(total - done) : 0;
      std::cerr << fmt::format("orrery plan: [{}/{}] {} done, {:.1f} s so far, about {:.0f} s left\n", done, total,
                               what, spent, left);
    };
  }
  const PlanSweep sweep = plan_sweep(request);
  const nlohmann::json doc = plan_json(sweep);
  if (!a.csv_file.empty()) {
    OutputFile out(a.csv_file);
    out.write(sweep_csv(doc));
    out.commit();
  }
  if (!a.report_file.empty()) {
    OutputFile out(a.report_file);
    out.write(plan_report_html(doc));
    out.commit();
  }
  if (a.json) {
    std::cout << doc.dump(2) << "\n";
  } else {
    print_plan_summary(std::cout, doc);
  }
}

}  // namespace

void add_plan_command(CLI::App& app) {
  auto args = std::make_shared<PlanArgs>();
  CLI::App* cmd = app.add_subcommand(
      "plan", "capacity planning: time to train a token budget, GPU-hours, cost, energy and goodput under failures");
  cmd->add_option("scenario", args->scenario_file, "scenario JSON file")->check(non_empty_file());
  cmd->add_option("--tokens", args->tokens, "tokens to train (e.g. 15e12)")->check(positive_number());
  cmd->add_option("--steps", args->steps, "training steps to run (instead of --tokens)")->check(positive_number());
  cmd->add_option("--clusters", args->clusters,
                  "cluster presets or files to compare, comma-separated (e.g. dgx-a100-80gb,dgx-h100,dgx-b200)")
      ->check(non_empty());
  cmd->add_flag("--search", args->search, "use the search's best plan at each point instead of the scenario's plan");
  cmd->add_flag("--json", args->json, "print the plan as JSON");
  cmd->add_flag("--quiet", args->quiet, "no progress lines on stderr");
  cmd->add_option("--report", args->report_file, "write a self-contained HTML report with plots to FILE")
      ->check(non_empty_file());
  cmd->add_option("--csv", args->csv_file, "write the sweep's points as CSV to FILE")->check(non_empty_file());
  cmd->add_option("--price-on-demand", args->price_on_demand, "USD per GPU-hour on demand, every GPU's")->check(positive_number());
  cmd->add_option("--price-reserved", args->price_reserved, "USD per GPU-hour reserved, every GPU's")->check(positive_number());
  cmd->add_option("--price-spot", args->price_spot, "USD per GPU-hour on spot capacity, every GPU's")->check(positive_number());
  cmd->add_option("--pue", args->pue, "power usage effectiveness of the facility, 1 to 3 (default 1.10)")->check(positive_number());
  cmd->add_option("--monte-carlo-seed", args->seed, "seed of the Monte-Carlo run of failure arrivals (default 1)")
      ->check(whole_number(0, std::numeric_limits<std::int64_t>::max()));
  cmd->add_option("--monte-carlo-runs", args->monte_carlo_runs, "Monte-Carlo runs (default 1000; 0: none)")
      ->check(CLI::Range(0, 1'000'000));
  args->flags.num_gpus_is_list = true;
  args->flags.add_to(*cmd);
  cmd->callback([args] { run_plan(*args); });
}

}  // namespace orrery::cli
