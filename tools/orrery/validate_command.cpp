// `orrery validate PATH...`: predicts every scenario that has `expect` and compares, record by record, then
// summarises the iteration-time error (MAPE overall and per source prefix, worst record).
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>
#include <thread>

#include "hardware/gpu_profile.h"
#include "models/error.h"
#include "models/json_fields.h"
#include "models/utf8.h"
#include "sim/validation.h"
#include "tools/orrery/commands.h"
#include "tools/orrery/outputs.h"
#include "tools/orrery/validate_inputs.h"

namespace orrery::cli {

namespace {

namespace fs = std::filesystem;

struct ValidateArgs {
  std::vector<std::string> paths;
  bool json = false;
  std::optional<double> max_mape;
  std::optional<double> max_error;
  std::string explain;        // a record's name: its full prediction
  bool explain_all = false;   // --explain without a name: every record's error by part
  std::vector<std::string> skip;
  int jobs = 0;
  std::string profile;
};

// A record's name or file as text output shows it: names are file names, which may hold control characters (an
// ESC a terminal would act on) or bytes that are not UTF-8. The JSON output escapes them itself.
std::string shown(const std::string& name) { return printable_utf8(name, false); }

struct Outcome {
  RecordResult result;
  std::optional<Prediction> prediction;  // kept only for --explain
  bool is_record = false;  // an expect block, or a file given by name
};

Outcome evaluate(const ValidateInput& input, bool keep_prediction, const PredictOptions& options) {
  const fs::path& file = input.path;
  Outcome o;
  o.result.file = file.string();
  o.result.name = file.stem().string();
  o.result.prefix = source_prefix(o.result.name);
  try {
    // Only documents with an `expect` block are records; others in a folder (scenarios without published figures,
    // the measurement files kept beside the measured scenarios) are passed over without being parsed as scenarios.
    // A file given by name is meant as a record: without one it is a broken input, as an unreadable one is.
    const nlohmann::json doc = read_json_file(file, "scenario");
    const bool block = doc.is_object() && doc.contains("expect");
    if (!block && !input.named) return o;
    o.is_record = true;
    require(block, "scenario " + file.string(), "",
            "has no expect block: a record needs the published figures it is compared with");
    Scenario s = load_scenario(doc, file);
    require(!s.expect.empty(), "scenario " + file.string(), "",
            "has an empty expect block: a record needs the published figures it is compared with");
    Prediction p = predict(s, options);
    o.result = compare_with_expectations(p, file.string());
    if (keep_prediction) o.prediction = std::move(p);
  } catch (const Error& e) {
    o.is_record = true;
    o.result.error = e.what();
    o.result.not_modelled = e.kind() == ErrorKind::kNotModelled;
  }
  return o;
}

std::vector<Outcome> evaluate_all(const std::vector<ValidateInput>& files, int jobs, const std::string& explain,
                                  const PredictOptions& options) {
  std::vector<Outcome> out(files.size());
  std::atomic<std::size_t> next{0};
  auto worker = [&] {
    for (std::size_t i = next++; i < files.size(); i = next++) {
      out[i] = evaluate(files[i], files[i].path.stem().string() == explain, options);
    }
  };
  const int n = std::max(1, std::min(jobs > 0 ? jobs : static_cast<int>(std::thread::hardware_concurrency()),
                                      static_cast<int>(files.size())));
  std::vector<std::thread> pool;
  for (int t = 0; t < n; ++t) pool.emplace_back(worker);
  for (auto& t : pool) t.join();
  return out;
}

void print_table(const std::vector<RecordResult>& results) {
  fmt::print("{:<48} {:<22} {:>12} {:>12} {:>8}\n", "record", "figure", "predicted", "published", "error");
  for (const RecordResult& r : results) {
    if (!r.simulated) {
      fmt::print("{:<48} {}\n", shown(r.name), r.error.substr(0, 110));
      continue;
    }
    bool first = true;
    for (const FigureComparison& c : r.figures) {
      fmt::print("{:<48} {:<22} {:>12.4g} {:>12.4g} {:>+7.1f}%\n", first ? shown(r.name) : "", c.figure, c.predicted,
                 c.published, c.error_pct);
      first = false;
    }
  }
}

// Each record's predicted step by part, and the part its error most probably lies in (attribute_error).
void print_explanations(const std::vector<RecordResult>& results) {
  std::size_t width = 6;  // the name column fits the longest record name
  for (const RecordResult& r : results) width = std::max(width, shown(r.name).size());
  fmt::print("{:<{}} {:>7}  {:>8} {:>8} {:>8} {:>8}  {}\n", "record", width, "error", "compute", "host", "comm", "bubble",
             "dominant part (its share of the error)");
  for (const RecordResult& r : results) {
    if (!r.attribution || !r.iteration_error_pct) continue;
    const ErrorAttribution& a = *r.attribution;
    Seconds total = 0;
    for (Seconds s : a.seconds) total += s;
    const auto pct = [&](int p) { return total > 0 ? 100.0 * a.seconds[static_cast<std::size_t>(p)] / total : 0.0; };
    const double share = a.error != 0 ? 100.0 * a.allotted[static_cast<std::size_t>(a.dominant)] / a.error : 100.0;
    fmt::print("{:<{}} {:>+6.1f}%  {:>7.1f}% {:>7.1f}% {:>7.1f}% {:>7.1f}%  {} ({:.0f}%, {:+.3g} s)\n", shown(r.name), width,
               *r.iteration_error_pct, pct(0), pct(1), pct(2), pct(3), to_string(a.dominant), share,
               a.allotted[static_cast<std::size_t>(a.dominant)]);
  }
  fmt::print("\nparts are shares of the critical stage's predicted step; each part's error is taken as independent with "
             "a relative standard deviation of compute {:.0f}%, host {:.0f}%, communication {:.0f}%, bubble {:.0f}% "
             "(sim/validation.cpp), and the error is split in proportion to the variances\n",
             100 * kPartUncertainty[0], 100 * kPartUncertainty[1], 100 * kPartUncertainty[2], 100 * kPartUncertainty[3]);
}

void print_summary_block(const ValidationSummary& s) {
  fmt::print("\niteration time: MAPE {:.1f}% over {} record{}", s.mape, s.records, s.records == 1 ? "" : "s");
  if (!s.worst.empty()) fmt::print("; worst {} ({:+.1f}%)", shown(s.worst), s.worst_error_pct);
  fmt::print("; {} not simulated\n", s.failed);
  for (const auto& [prefix, entry] : s.by_prefix) {
    fmt::print("  {:<20} MAPE {:5.1f}%  ({} record{})\n", shown(prefix), entry.first, entry.second, entry.second == 1 ? "" : "s");
  }
}

nlohmann::json to_json(const std::vector<RecordResult>& results, const ValidationSummary& s) {
  nlohmann::json records = nlohmann::json::array();
  for (const RecordResult& r : results) {
    nlohmann::json rec = {{"name", r.name}, {"file", r.file}, {"prefix", r.prefix}, {"simulated", r.simulated}};
    if (!r.simulated) {
      rec["error"] = r.error;
      rec["not_modelled"] = r.not_modelled;
    }
    nlohmann::json figures = nlohmann::json::object();
    for (const FigureComparison& c : r.figures) {
      figures[c.figure] = {{"predicted", c.predicted}, {"published", c.published}, {"error_pct", c.error_pct}};
    }
    rec["figures"] = figures;
    if (r.attribution) {
      nlohmann::json parts = nlohmann::json::object();
      for (int q = 0; q < kNumErrorParts; ++q) {
        parts[to_string(static_cast<ErrorPart>(q))] = {{"seconds", r.attribution->seconds[static_cast<std::size_t>(q)]},
                                                       {"error_s", r.attribution->allotted[static_cast<std::size_t>(q)]}};
      }
      rec["error_parts"] = parts;
      rec["dominant_error_part"] = to_string(r.attribution->dominant);
    }
    records.push_back(rec);
  }
  nlohmann::json prefixes = nlohmann::json::object();
  for (const auto& [prefix, entry] : s.by_prefix) prefixes[prefix] = {{"mape_pct", entry.first}, {"records", entry.second}};
  return {{"records", records},
          {"summary",
           {{"records", s.records}, {"not_simulated", s.failed}, {"iteration_time_mape_pct", s.mape},
            {"worst", s.worst}, {"worst_error_pct", s.worst_error_pct}, {"by_prefix", prefixes}}}};
}

int run_validate(const ValidateArgs& a) {
  auto files = validate_inputs(a.paths, std::cerr);
  std::erase_if(files, [&](const ValidateInput& f) {
    return std::any_of(a.skip.begin(), a.skip.end(),
                       [&](const std::string& k) { return f.path.stem().string().find(k) != std::string::npos; });
  });
  if (!a.explain.empty()) {
    // Simulate only the named record when a file carries its name (records are named after their files).
    std::vector<ValidateInput> named;
    std::copy_if(files.begin(), files.end(), std::back_inserter(named),
                 [&](const ValidateInput& f) { return f.path.stem().string() == a.explain; });
    if (!named.empty()) files = named;
  }
  const CostParams params = cost_params_with_profile(a.profile);
  PredictOptions options;
  options.params = &params;
  std::vector<Outcome> outcomes = evaluate_all(files, a.jobs, a.explain, options);
  std::vector<RecordResult> results;
  const Outcome* explained = nullptr;
  for (const Outcome& o : outcomes) {
    if (!o.is_record) continue;  // a file in a folder without an expect block
    results.push_back(o.result);
    if (!a.explain.empty() && o.result.name == a.explain) explained = &o;
  }
  const ValidationSummary summary = summarize(results);
  if (!a.explain.empty()) {
    if (!explained) throw Error::invalid("--explain", a.explain, "is not a record among the given scenarios");
    if (!explained->prediction) throw Error::invalid("--explain", a.explain, explained->result.error);
    if (a.json) {
      // The record's comparison and error split, with its full prediction as `orrery predict --json` prints it.
      nlohmann::json out = to_json({explained->result}, summarize({explained->result}));
      out["prediction"] = report_json(*explained->prediction);
      std::cout << out.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
      return 0;
    }
    print_summary(std::cout, *explained->prediction);
    fmt::print("\n");
    print_table({explained->result});
    fmt::print("\n");
    print_explanations({explained->result});
    return 0;
  }
  if (a.json) {
    // Record names are file names, which need not be UTF-8: such bytes print as U+FFFD rather than fail the dump.
    std::cout << to_json(results, summary).dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
  } else if (a.explain_all) {
    print_explanations(results);
    print_summary_block(summary);
  } else {
    print_table(results);
    print_summary_block(summary);
  }
  int status = 0;
  if (results.empty() && !a.max_mape && !a.max_error) {
    fmt::print(stderr, "validate: no scenario among the given paths has an expect block: nothing was compared\n");
  }
  if (a.max_mape || a.max_error) {
    // A gate over nothing, or over records that broke, passes nothing: only "not modelled yet" may be skipped.
    if (summary.records == 0) {
      fmt::print(stderr, "validate: no record was scored, so the gate cannot pass\n");
      status = 1;
    }
    for (const RecordResult& r : results) {
      if (r.simulated || r.not_modelled) continue;
      fmt::print(stderr, "validate: {} failed: {}\n", shown(r.name), r.error);
      status = 1;
    }
  }
  if (a.max_mape && summary.mape > *a.max_mape) {
    fmt::print(stderr, "validate: MAPE {:.1f}% exceeds --max-mape {:.1f}%\n", summary.mape, *a.max_mape);
    status = 1;
  }
  if (a.max_error && std::fabs(summary.worst_error_pct) > *a.max_error) {
    fmt::print(stderr, "validate: {} misses by {:+.1f}%, beyond --max-error {:.1f}%\n", shown(summary.worst),
               summary.worst_error_pct, *a.max_error);
    status = 1;
  }
  // Every record broke (unreadable, invalid or failing to simulate): the summary above is of nothing, and a script
  // must not read it as a result. Records that are only "not modelled yet" are valid input, passed over.
  const auto broken = std::find_if(results.begin(), results.end(),
                                   [](const RecordResult& r) { return !r.simulated && !r.not_modelled; });
  const bool any_simulated =
      std::any_of(results.begin(), results.end(), [](const RecordResult& r) { return r.simulated; });
  if (!any_simulated && broken != results.end()) {
    fmt::print(stderr, "error: validate: none of the {} record{} could be read and simulated (the first: {}: {})\n",
               results.size(), results.size() == 1 ? "" : "s", shown(broken->name), broken->error);
    return 2;
  }
  return status;
}

}  // namespace

void add_validate_command(CLI::App& app, int& exit_code) {
  auto args = std::make_shared<ValidateArgs>();
  CLI::App* cmd = app.add_subcommand("validate", "compare predictions with the published runs in scenario files");
  cmd->add_option("paths", args->paths, "scenario files or folders (searched recursively)");
  cmd->add_flag("--json", args->json, "print records and summary as JSON");
  // A gate of NaN passed everything (CLI::Range lets NaN through); a negative one failed everything.
  const CLI::Validator percent(
      [](std::string& text) {
        const double v = std::strtod(text.c_str(), nullptr);
        return std::isfinite(v) && v >= 0 ? std::string() : std::string("must be a finite, non-negative percentage");
      },
      "PERCENT");
  cmd->add_option("--max-mape", args->max_mape, "exit 1 when the iteration-time MAPE (%) exceeds this")->check(percent);
  cmd->add_option("--max-error", args->max_error, "exit 1 when any record misses by more than this (%)")->check(percent);
  CLI::Option* explain = cmd->add_option("--explain", args->explain,
                                         "without a value: each record's error by part (compute, host, communication, "
                                         "bubble) and the dominant one; with a record's name: its full prediction too")
                             ->expected(0, 1);
  cmd->add_option("-j,--jobs", args->jobs, "parallel simulations (default: all cores)")->check(CLI::Range(1, 1024));
  cmd->add_option("--skip", args->skip, "leave out records whose name contains this text")
      ->check(CLI::Validator([](std::string& text) { return text.empty() ? std::string("is empty (it would skip every record)") : std::string(); }, "TEXT"));
  cmd->add_option("--profile", args->profile, "price ops from a measured GPU profile (calibrate/) where it covers them")->check(non_empty_file());
  cmd->callback([args, explain, &exit_code] {
    // `validate --explain PATH...`: --explain takes an optional record name, so a path right after it lands there.
    std::error_code ec;
    if (!args->explain.empty() && fs::exists(fs::symlink_status(args->explain, ec))) {
      args->paths.insert(args->paths.begin(), args->explain);
      args->explain.clear();
    }
    if (args->paths.empty()) throw CLI::RequiredError("paths");
    args->explain_all = explain->count() > 0 && args->explain.empty();
    exit_code = run_validate(*args);
  });
}

}  // namespace orrery::cli
