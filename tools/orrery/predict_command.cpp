#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <iostream>
#include <memory>
#include <optional>

#include "models/error.h"
#include "models/json_fields.h"
#include "models/output_file.h"
#include "hardware/gpu_profile.h"
#include "hardware/gpu_power.h"
#include "sim/jitter/jitter_run.h"
#include "sim/plan/plan_point.h"
#include "sim/predict.h"
#include "sim/search/pool_balance.h"
#include "tools/orrery/html_report.h"
#include "tools/orrery/jitter_output.h"
#include "tools/orrery/plan_json.h"
#include "tools/orrery/commands.h"
#include "tools/orrery/outputs.h"
#include "tools/orrery/scenario_flags.h"
#include "tools/orrery/trace_options.h"
#include "tools/orrery/placement_output.h"

namespace orrery::cli {

namespace {

struct PredictArgs {
  std::string scenario_file;
  ScenarioFlags flags;
  bool json = false;
  bool expand_ranks = false;
  bool balance_pools = false;
  bool placement_compare = false;  // --placement-compare: sequential, random and optimized side by side
  double memory_budget_gib = 0;  // 0: default_memory_budget()
  std::string trace_file;
  std::string profile_file;
  std::string timeline_file;
  std::string report_file;
  TraceFlags trace;
};

// The JSON report with the step's energy (`energy`: one step's joules, sim/plan/plan_point.h with one step).
nlohmann::json report_with_energy(const Prediction& p) {
  nlohmann::json out = report_json(p);
  if (!p.run.stopped) out["energy"] = energy_json(plan_point(p, {.steps = 1}), gpu_power(p.job.cluster().gpu));
  return out;
}

// The scenario, its errors naming the file they were found in (and the flags, which may have caused them).
Scenario parse_predicted(const nlohmann::json& doc, const std::filesystem::path& base, const PredictArgs& a) {
  if (a.scenario_file.empty()) return parse_scenario(doc, base);
  try {
    return parse_scenario(doc, base);
  } catch (const Error& e) {
    throw e.in("scenario " + a.scenario_file + (a.flags.any() ? " with the command-line flags" : ""));
  }
}

void run_predict(const PredictArgs& a) {
  // Output paths first: a path that cannot be written fails the command before it simulates anything.
  if (!a.trace_file.empty()) check_output_path("--trace", a.trace_file);
  if (!a.timeline_file.empty()) check_output_path("--timeline", a.timeline_file);
  if (!a.report_file.empty()) check_output_path("--report", a.report_file);
  check_distinct_outputs({{"--trace", a.trace_file}, {"--timeline", a.timeline_file}, {"--report", a.report_file}},
                         {{"scenario", a.scenario_file}, {"--profile", a.profile_file}, {"--model", a.flags.model}});
  require(a.trace.first_given().empty() || !a.trace_file.empty(), a.trace.first_given(), "given without --trace",
          "selects what --trace FILE writes: give --trace FILE too");
  nlohmann::json doc;
  std::filesystem::path base = std::filesystem::current_path();
  if (!a.scenario_file.empty()) {
    doc = read_json_file(a.scenario_file, "scenario");
    base = std::filesystem::path(a.scenario_file).parent_path();
  } else if (a.flags.names_model()) {
    doc = nlohmann::json::object();
    doc["cluster"] = "dgx-h100";
  } else {
    doc = default_scenario();
    std::cerr << "orrery: no scenario given; predicting the built-in default (" << doc["name"].get<std::string>()
              << (a.flags.any() ? ", changed by the command-line flags" : "") << ")\n";
    if (a.flags.any()) doc["name"] = "default scenario changed by command-line flags";
  }
  a.flags.apply(doc);
  a.flags.note_ignored(std::cerr);
  if (doc.is_object() && !doc.contains("name") && !a.scenario_file.empty()) {
    doc["name"] = std::filesystem::path(a.scenario_file).stem().string();
  }
  const Scenario scenario = parse_predicted(doc, base, a);
  a.flags.check_model(scenario.model);
  const Job job = resolve(scenario);
  const TraceSelection selection = a.trace.selection(job);
  PredictOptions options;
  options.expansion = a.expand_ranks ? Expansion::kAllRanks : Expansion::kAuto;
  // At least one byte: a budget that rounds to 0 would read as none.
  if (a.memory_budget_gib > 0) {
    options.memory_budget = std::max<std::int64_t>(1, static_cast<std::int64_t>(a.memory_budget_gib * (1 << 30)));
  }
  const CostParams params = cost_params_with_profile(a.profile_file);
  options.params = &params;
  Prediction p;
  nlohmann::json balance_json;  // `pool_balance` in the JSON report, with --balance-pools
  if (a.balance_pools) {
    PoolBalance balanced = balance_pools(job.scenario(), options);
    std::cerr << fmt::format("orrery: balanced over the pools ({} plans predicted): pipeline_stage_pools [{}], "
                             "pipeline_layout [{}]\n",
                             balanced.evaluated, fmt::join(balanced.stage_pools, ", "), fmt::join(balanced.pipeline_layout, ", "));
    p = std::move(balanced.best);
    const PoolBounds bounds = pool_bounds(job.scenario(), p, options);
    balance_json = {{"plans_predicted", balanced.evaluated},
                    {"pipeline_stage_pools", balanced.stage_pools},
                    {"pipeline_layout", balanced.pipeline_layout},
                    {"alone_tokens_per_s", bounds.alone_tokens_per_s},
                    {"upper_bound_tokens_per_s", bounds.upper_bound_tokens_per_s},
                    {"fraction_of_upper_bound", bounds.fraction_of_upper_bound},
                    {"homogeneous_gpu", bounds.homogeneous_gpu},
                    {"homogeneous_mfu", bounds.homogeneous_mfu},
                    {"gap_to_homogeneous", bounds.gap_to_homogeneous}};
    std::cerr << fmt::format("orrery: {:.1f}% of the pools' upper bound ({:.0f} tokens/s, each pool alone summed); "
                             "MFU {:.1f}% against {:.1f}% on a homogeneous {} cluster of equal peak: a gap of {:.1f}%\n",
                             100 * bounds.fraction_of_upper_bound, bounds.upper_bound_tokens_per_s, 100 * p.report.mfu,
                             100 * bounds.homogeneous_mfu, bounds.homogeneous_gpu, 100 * bounds.gap_to_homogeneous);
  } else {
    p = predict(job, options);
  }
  // The jitter Monte-Carlo, when the scenario asks for one: the prediction's graph run once per iteration.
  std::optional<JitterSummary> jitter;
  if (job.scenario().jitter && !p.run.stopped) jitter = run_jitter(p, options);
  // Files first, each written whole (OutputFile): a write that fails fails the command before it reports.
  if (!a.trace_file.empty()) {
    OutputFile out(a.trace_file);
    const TraceSummary written = write_chrome_trace([&out](std::string_view chunk) { out.write(chunk); }, p, selection);
    out.commit();
    warn_about_trace(std::cerr, a.trace_file, written, selection, p);
  }
  if (!a.timeline_file.empty()) {
    OutputFile out(a.timeline_file);
    write_timeline([&out](std::string_view chunk) { out.write(chunk); }, p);
    out.commit();
  }
  if (!a.report_file.empty()) {
    OutputFile out(a.report_file);
    out.write(predict_report_html(report_with_energy(p)));
    out.commit();
  }
  std::vector<PlacementOutcome> compared;
  if (a.placement_compare) compared = compare_placements(job.scenario(), options);
  if (a.json) {
    nlohmann::json out = report_with_energy(p);
    if (!balance_json.is_null()) out["pool_balance"] = balance_json;
    if (a.placement_compare) {
      if (!out.contains("placement")) out["placement"] = placement_json(summarize_placement(p.scenario));
      out["placement"]["compare"] = placement_compare_json(compared);
    }
    if (jitter) out["jitter"] = jitter_json(*jitter);
    std::cout << out.dump(2) << "\n";
  } else {
    print_summary(std::cout, p);
    if (a.placement_compare) print_placement_compare(std::cout, compared);
    if (jitter) print_jitter_summary(std::cout, *jitter);
  }
}

}  // namespace

void add_predict_command(CLI::App& app) {
  auto args = std::make_shared<PredictArgs>();
  CLI::App* cmd = app.add_subcommand("predict", "predict iteration time, throughput, MFU and memory of a training run");
  // An empty path (a shell variable left unset) must not read as "no scenario": that predicts the default.
  static const CLI::Validator named_file(
      [](std::string& v) {
        return v.empty() ? std::string("must name a scenario file (\"\" is none; leave it out to predict the built-in default)")
                         : std::string();
      },
      "FILE");
  cmd->add_option("scenario", args->scenario_file, "scenario JSON file (default: a built-in Llama-3-70B example)")
      ->check(named_file);
  cmd->add_flag("--json", args->json, "print the report as JSON");
  cmd->add_flag("--expand-ranks", args->expand_ranks, "simulate every rank instead of one per pipeline stage");
  cmd->add_flag("--balance-pools", args->balance_pools,
                "with cluster.pools: search the stages' pool order and layers per stage (sim/search/pool_balance.h) "
                "and report the best");
  cmd->add_flag("--placement-compare", args->placement_compare,
                "also predict the scenario under the sequential, random (seeded) and optimized placements on its "
                "fabric (scenarios/README.md \"placement\"), side by side (JSON: placement.compare)");
  // Above 1 PiB the bytes would leave a 64-bit count; no machine has that much memory.
  static const CLI::Validator gib_range(
      [](std::string& v) {
        double x = 0;
        try {
          x = std::stod(v);
        } catch (const std::exception&) {
          return "must be a number of GiB, not '" + v + "'";
        }
        return std::isfinite(x) && x > 0 && x <= 1 << 20 ? std::string() : "(" + v + ") must be above 0 and at most 1048576 GiB";
      },
      "GIB");
  cmd->add_option("--memory-budget", args->memory_budget_gib,
                  fmt::format("memory the run may use, GiB (default {:.3g}: 16, or 3/4 of this machine's memory if "
                              "less); a run estimated above it is refused before it starts, one that reaches it stops",
                              static_cast<double>(default_memory_budget()) / (1 << 30)))
      ->check(gib_range);
  cmd->add_option("--trace", args->trace_file,
                  "write a Chrome-trace / Perfetto timeline to FILE (select what it holds with --trace-*)")
      ->check(non_empty_file());
  args->trace.add_to(*cmd);
  cmd->add_option("--timeline", args->timeline_file, "write the simulated timeline JSON to FILE")->check(non_empty_file());
  cmd->add_option("--report", args->report_file, "write a self-contained HTML page of the prediction, with plots, to FILE")
      ->check(non_empty_file());
  cmd->add_option("--profile", args->profile_file, "price GEMMs and copies from a measured GPU profile (calibrate/)")->check(non_empty_file());
  args->flags.add_to(*cmd);
  cmd->callback([args] { run_predict(*args); });
}

}  // namespace orrery::cli
