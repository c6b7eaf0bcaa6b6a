// `orrery fit`: the documented global fits of the cost-model parameters (ARCHITECTURE.md "Cost models": every parameter
// is physical, with its source, or fitted once, globally). `--write` stores the fitted values in the cost-model preset
// with a note saying how they were fitted; a fitted value changes only by re-running this command.
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <map>
#include <memory>

#include "calibrate/collective_fit.h"
#include "calibrate/fit_record.h"
#include "models/error.h"
#include "models/output_file.h"
#include "tools/orrery/commands.h"
#include "tools/orrery/fit_records.h"

namespace orrery::cli {

namespace {

struct FitArgs {
  std::string manifest = "tests/data/nccl-tests-logs/manifest.json";
  std::string min_bytes = "64M";
  std::string min_bytes_single_node = "1K";
  std::vector<std::string> paths;
  std::vector<std::string> exclude_prefixes;
  std::vector<std::string> skip;
  std::string write;
  bool leave_one_out = false;
  bool leave_one_generation_out = false;
};

// Bus-bandwidth errors by size band over every row of >= 1K of every log (fitted or not), under the preset's
// values (before) and the fitted ones (after).
void print_band_errors(const std::string& manifest, const NetworkParams& before, const NetworkParams& after) {
  const auto rows = load_collective_samples(manifest, kKiB, kKiB);
  const auto b = band_errors(rows, before);
  const auto f = band_errors(rows, after);
  fmt::print("bus-bandwidth error by size band, every row >= 1K (100 x (predicted / measured - 1)):\n"
             "  {:<11} {:<7} {:>4}  {:>24}  {:>24}\n", "group", "band", "rows",
             "preset: mean|e| mean worst", "fitted: mean|e| mean worst");
  for (std::size_t i = 0; i < b.size(); ++i) {
    if (b[i].rows == 0) {
      fmt::print("  {:<11} {:<7} {:>4}  {:>24}  {:>24}\n", b[i].multi_node ? "multi-node" : "single-node",
                 b[i].band, 0, "-", "-");
      continue;
    }
    fmt::print("  {:<11} {:<7} {:>4}  {:>7.1f}% {:>+7.1f}% {:>+7.1f}%  {:>7.1f}% {:>+7.1f}% {:>+7.1f}%\n",
               b[i].multi_node ? "multi-node" : "single-node", b[i].band, b[i].rows, b[i].mean_abs_percent,
               b[i].mean_percent, b[i].worst_percent, f[i].mean_abs_percent, f[i].mean_percent, f[i].worst_percent);
  }
}

void fit_collectives(const FitArgs& a) {
  if (!a.write.empty()) check_output_path("--write", a.write);
  const auto samples = load_collective_samples(a.manifest, parse_bytes(a.min_bytes, "--min-bytes"),
                                               parse_bytes(a.min_bytes_single_node, "--min-bytes-single-node"));
  const NetworkParams start = default_cost_params().network;
  const NetworkParams fitted = fit_network_params(samples, start);
  fmt::print("fitted on {} nccl-tests rows of >= {} ({} inside one node) from {}\n", samples.size(), a.min_bytes,
             a.min_bytes_single_node, a.manifest);
  const double fill_half_mib = static_cast<double>(fitted.pipeline_fill_half) / static_cast<double>(kMiB);
  fmt::print("  nvlink_efficiency {:.4f}\n  nvls_efficiency   {:.4f}\n  nic_efficiency    {:.4f}\n"
             "  pipeline_fill_us  {:.2f}\n  pipeline_fill_half_MiB {:.4f}\n  network_call_latency_us {:.2f}\n",
             fitted.nvlink_efficiency, fitted.nvls_efficiency, fitted.nic_efficiency, to_us(fitted.pipeline_fill),
             fill_half_mib, to_us(fitted.network_call_latency));
  std::map<std::string, double> worst;
  for (const BusBandwidthSample& s : samples) {
    const double e = 100.0 * (predicted_bus_bandwidth(s, fitted) / s.measured - 1.0);
    if (std::fabs(e) > std::fabs(worst[s.log])) worst[s.log] = e;
  }
  for (const auto& [log, e] : worst) fmt::print("  worst error {:+6.1f}%  {}\n", e, log);
  print_band_errors(a.manifest, start, fitted);
  if (!a.write.empty()) {
    const std::string note = fmt::format("fitted by `orrery fit collectives` (least squares on log bus bandwidth) "
                                         "to {} rows of >= {} ({} inside one node) of the nccl-tests logs in {}",
                                         samples.size(), a.min_bytes, a.min_bytes_single_node, a.manifest);
    write_fitted_values(a.write, "network",
                        {{"nvlink_efficiency", fitted.nvlink_efficiency}, {"nvls_efficiency", fitted.nvls_efficiency},
                         {"nic_efficiency", fitted.nic_efficiency}, {"pipeline_fill_us", to_us(fitted.pipeline_fill)},
                         {"pipeline_fill_half_MiB", fill_half_mib},
                         {"network_call_latency_us", to_us(fitted.network_call_latency)}},
                        note, "orrery fit collectives --manifest " + a.manifest + " --min-bytes " + a.min_bytes +
                                  " --min-bytes-single-node " + a.min_bytes_single_node);
    fmt::print("wrote {}\n", a.write);
  }
}

}  // namespace

void add_fit_command(CLI::App& app, int& exit_code) {
  auto args = std::make_shared<FitArgs>();
  CLI::App* fit = app.add_subcommand("fit", "fit cost-model parameters globally to measurements");
  fit->require_subcommand(1);
  CLI::App* coll = fit->add_subcommand("collectives", "fit network efficiencies to nccl-tests logs");
  coll->add_option("--manifest", args->manifest, "manifest of nccl-tests logs (tests/data/nccl-tests-logs)");
  coll->add_option("--min-bytes", args->min_bytes, "smallest message size fitted across nodes (default 64M)");
  coll->add_option("--min-bytes-single-node", args->min_bytes_single_node,
                   "smallest message size fitted inside one node (default 1K)");
  coll->add_option("--write", args->write, "write the fitted values into this cost-model preset file");
  coll->callback([args] { fit_collectives(*args); });
  CLI::App* rec = fit->add_subcommand("records", "fit compute efficiencies to published training runs");
  rec->add_option("paths", args->paths, "scenario files or folders with `expect`")->required();
  rec->add_option("--exclude-prefix", args->exclude_prefixes, "leave these source prefixes out of the fit");
  rec->add_option("--skip", args->skip, "leave out records whose name contains this text");
  rec->add_option("--write", args->write, "write the fitted values into this cost-model preset file");
  rec->add_flag("--leave-one-out", args->leave_one_out,
                "refit without each source prefix in turn and score the left-out records (no --write)");
  rec->add_flag("--leave-one-generation-out", args->leave_one_generation_out,
                "refit without each GPU generation (Ampere, Hopper, ...) in turn and score it (no --write)");
  rec->callback([args, &exit_code] {
    if (args->leave_one_out && args->leave_one_generation_out) {
      throw Error::invalid("--leave-one-generation-out", "given", "cannot be combined with --leave-one-out");
    }
    exit_code = args->leave_one_out              ? leave_one_source_out(args->paths, args->skip)
                : args->leave_one_generation_out ? leave_one_generation_out(args->paths, args->skip)
                                                 : fit_records(args->paths, args->exclude_prefixes, args->skip, args->write);
  });
}

}  // namespace orrery::cli
