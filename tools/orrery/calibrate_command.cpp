// `orrery calibrate`: the CPU side of calibration.
//   plan SCENARIO... --out PLAN        what orrery-calibrate and tools/calibrate_attention.py measure
//   fit RAW.json [--attention A.json] [--pytorch P.json] --out PROFILE   raw measurements -> the profile
//   import-nccl-tests LOG... --out PROFILE            collective tables from real nccl-tests logs
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <iostream>
#include <memory>
#include <sstream>

#include "calibrate/kineto_trace.h"
#include "calibrate/calibration_plan.h"
#include "calibrate/nccl_import.h"
#include "calibrate/raw_profile.h"
#include "calibrate/workload_export.h"
#include "models/json_fields.h"
#include "models/error.h"
#include "models/utf8.h"
#include "models/output_file.h"
#include "tools/orrery/commands.h"

namespace orrery::cli {

namespace {

struct ImportArgs {
  std::vector<std::string> logs;
  std::string out, base, gpu;
  int ranks = 0, nodes = 0;
};

// Each output is checked before the work: writable, and not one of the files read (--profile may be, to extend it).
std::vector<PathOption> named_inputs(const char* option, const std::vector<std::string>& paths) {
  std::vector<PathOption> out;
  for (const std::string& p : paths) out.push_back({option, p});
  return out;
}

void run_import(const ImportArgs& a) {
  check_output_path("--out", a.out);
  check_distinct_outputs({{"--out", a.out}}, named_inputs("logs", a.logs));
  GpuProfile profile;
  if (!a.base.empty()) {
    profile = load_gpu_profile(a.base);
  } else {
    require(!a.gpu.empty(), "--gpu", "missing", "names the GPU of a new profile (or give --profile to extend one)");
    profile.gpu = a.gpu;
    profile.source = "nccl-tests logs imported by orrery calibrate import-nccl-tests";
  }
  for (const std::string& f : a.logs) {
    const NcclTestsLog log = read_nccl_tests_log(f);
    const auto samples = collective_samples(log, a.ranks, a.nodes);
    merge_collectives(profile, samples);
    std::cout << fmt::format("{}: {} on {} ranks, {} node(s): {} sizes\n", f, to_string(*log.kind),
                             samples.empty() ? 0 : samples.front().ranks, samples.empty() ? 0 : samples.front().nodes,
                             samples.size());
  }
  write_file_whole(a.out, gpu_profile_json(profile).dump(1) + "\n");
  std::cout << fmt::format("wrote {} ({} collective samples)\n", a.out, profile.collectives.size());
}

struct PlanArgs {
  std::vector<std::string> scenarios;
  std::string out;
  bool no_grid = false;
};

void run_plan(const PlanArgs& a) {
  check_output_path("--out", a.out);
  check_distinct_outputs({{"--out", a.out}}, named_inputs("scenarios", a.scenarios));
  std::vector<Scenario> scenarios;
  for (const std::string& f : a.scenarios) scenarios.push_back(load_scenario(f));  // its errors name the file
  CalibrationPlanOptions options;
  options.grid = !a.no_grid;
  require(!a.scenarios.empty() || options.grid, "--no-grid", "with no scenarios",
          "leaves nothing to measure: give scenario files, or drop --no-grid for the grids alone");
  if (a.scenarios.empty()) std::cout << "no scenarios given: the plan holds the grids alone\n";
  std::vector<std::string> notes;
  const bench::BenchPlan plan = calibration_plan(scenarios, options, &notes);
  for (const std::string& n : notes) std::cout << "note: " << n << "\n";
  std::ostringstream out;
  out << "# orrery calibration plan: orrery calibrate plan" << (a.no_grid ? " --no-grid" : "");
  for (const std::string& f : a.scenarios) out << " " << f;
  out << "\n" << bench::format_bench_plan(plan);
  write_file_whole(a.out, out.str());
  std::cout << fmt::format("wrote {}: {} GEMMs, {} memory kernels, {} collectives, {} attention shapes\n", a.out,
                           plan.gemm.size(), plan.memory.size(), plan.collectives.size(), plan.attention.size());
}

struct FitArgs {
  std::string raw, attention, pytorch, out;
};

void run_fit(const FitArgs& a) {
  check_output_path("--out", a.out);
  check_distinct_outputs({{"--out", a.out}}, {{"RAW", a.raw}, {"--attention", a.attention}, {"--pytorch", a.pytorch}});
  const nlohmann::json raw = read_json_file(a.raw, "RAW");
  nlohmann::json attention;
  if (!a.attention.empty()) attention = read_json_file(a.attention, "--attention");
  GpuProfile p = fit_raw_profile(raw, a.raw, a.attention.empty() ? nullptr : &attention, a.attention);
  if (!a.pytorch.empty()) add_pytorch_kernels(read_json_file(a.pytorch, "--pytorch"), a.pytorch, p);
  write_file_whole(a.out, gpu_profile_json(p).dump(1) + "\n");
  std::cout << fmt::format("{}: {} GEMM shapes, {} memory kernels, {} attention calls, {} collectives\n", p.gpu,
                           p.gemm.size(), p.memory.size(), p.attention.size(), p.collectives.size());
  std::size_t width = 20;  // the longest name: "memory pytorch_log_softmax_backward"
  for (const FittedRate& r : p.fitted) width = std::max(width, r.what.size());
  for (const FittedRate& r : p.fitted) {
    const bool gemm = r.what.rfind("gemm", 0) == 0;
    std::cout << fmt::format("  {:<{}} {:>10.1f} {}  overhead {:6.2f} us  ({} samples)\n", r.what, width,
                             gemm ? r.rate / 1e12 : r.rate / 1e9, gemm ? "TFLOP/s" : "GB/s   ", r.overhead * 1e6,
                             r.samples);
  }
  if (p.launch_kernel > 0 || p.launch_host > 0) {
    std::cout << fmt::format("  {:<{}} {:>10.2f} us GPU, {:.2f} us host\n", "launch", width, p.launch_kernel * 1e6,
                             p.launch_host * 1e6);
  }
  std::cout << fmt::format("wrote {}\n", a.out);
}

struct HostArgs {
  std::vector<std::string> traces;
  double blocked_call_us = 50;
};

// The CPU time per launch of PyTorch eager's phases, as cost_model.json's pytorch_*_host_issue_us take them.
void run_host(const HostArgs& a) {
  require(a.blocked_call_us > 0 && std::isfinite(a.blocked_call_us), "--blocked-call-us",
          fmt::format("{:g}", a.blocked_call_us), "must be a positive number of microseconds");
  std::vector<KinetoTrace> traces;
  for (const std::string& f : a.traces) traces.push_back(read_kineto_trace(f));
  const HostIssueRates r = host_issue_rates(traces, a.blocked_call_us * 1e-6);
  require(r.forward_ranges + r.backward_ranges + r.optimizer_ranges > 0, "traces",
          fmt::format("{} file(s)", traces.size()),
          fmt::format("need orrery.layer<N>.forward/backward or Optimizer.step annotations with kernel launches, and "
                      "at least one such range whose launch calls all took at most --blocked-call-us ({:g} us)",
                      a.blocked_call_us));
  std::cout << fmt::format("host time per launch, median over ranges without a launch call above {:g} us:\n",
                           a.blocked_call_us);
  const auto line = [](const char* what, Seconds rate, int ranges) {
    if (ranges == 0) return fmt::format("  {:<10} no unblocked range\n", what);
    return fmt::format("  {:<10} {:6.1f} us  ({} ranges)\n", what, rate * 1e6, ranges);
  };
  std::cout << line("forward", r.forward, r.forward_ranges) << line("backward", r.backward, r.backward_ranges)
            << line("optimizer", r.optimizer, r.optimizer_ranges);
  std::cout << fmt::format("  {:<10} {:6.1f} us  (median launch call of those ranges: a launch from C++ with no "
                           "Python around it)\n", "library", r.launch_call * 1e6);
}

struct ExportArgs {
  std::string scenario, out;
};

void run_export(const ExportArgs& a) {
  check_output_path("--out", a.out);
  check_distinct_outputs({{"--out", a.out}}, {{"scenario", a.scenario}});
  const Scenario scenario = load_scenario(a.scenario);
  const Prediction p = predict(scenario);
  const bench::WorkloadFile w = export_workload(p);
  for (const std::string& warning : p.report.warnings) std::cerr << "warning: " << printable_utf8(warning, false) << "\n";
  std::ostringstream out;
  out << "# " << scenario.name << ": orrery calibrate export-workload " << a.scenario << "\n" << bench::format_workload(w);
  write_file_whole(a.out, out.str());
  std::cout << fmt::format("wrote {}: {} tasks (predicted iteration {:.6f} s, peak {:.3f} GiB)\n", a.out, w.tasks.size(),
                           p.report.iteration_time, static_cast<double>(p.report.peak_memory) / 1073741824.0);
}

}  // namespace

void add_calibrate_command(CLI::App& app) {
  CLI::App* cmd = app.add_subcommand("calibrate", "turn measurements into profiles the cost models use");
  cmd->require_subcommand(1);
  auto a = std::make_shared<ImportArgs>();
  CLI::App* imp = cmd->add_subcommand("import-nccl-tests", "read nccl-tests logs into a profile's collective tables");
  imp->add_option("logs", a->logs, "nccl-tests output files (all_reduce_perf and friends)")->required();
  imp->add_option("--out", a->out, "profile JSON to write")->required();
  imp->add_option("--profile", a->base, "an existing profile to extend")->check(non_empty_file());
  imp->add_option("--gpu", a->gpu, "GPU name of a new profile (e.g. \"NVIDIA H100 SXM5 80GB\")");
  imp->add_option("--ranks", a->ranks, "ranks of the runs, when the logs do not say");
  imp->add_option("--nodes", a->nodes, "nodes of the runs, when the logs do not say");
  imp->callback([a] { run_import(*a); });

  auto p = std::make_shared<PlanArgs>();
  CLI::App* plan = cmd->add_subcommand("plan", "write what orrery-calibrate measures: the scenarios' shapes and grids");
  plan->add_option("scenarios", p->scenarios, "scenario files whose lowered GEMM and attention shapes to measure");
  plan->add_option("--out", p->out, "plan file to write")->required();
  plan->add_flag("--no-grid", p->no_grid, "only the scenarios' own shapes, no log-spaced grids");
  plan->callback([p] { run_plan(*p); });

  auto f = std::make_shared<FitArgs>();
  CLI::App* fit = cmd->add_subcommand("fit", "turn orrery-calibrate's raw measurements into a profile");
  fit->add_option("raw", f->raw, "raw measurements (orrery-calibrate --out)")->required();
  fit->add_option("--attention", f->attention, "attention measurements (tools/calibrate_attention.py --out)")->check(non_empty_file());
  fit->add_option("--pytorch", f->pytorch, "PyTorch kernel-family measurements (tools/calibrate_pytorch_kernels.py --out)")
      ->check(non_empty_file());
  fit->add_option("--out", f->out, "profile JSON to write")->required();
  fit->callback([f] { run_fit(*f); });

  auto h = std::make_shared<HostArgs>();
  CLI::App* host = cmd->add_subcommand("host", "measure the host's CPU time per kernel launch from Kineto traces");
  host->add_option("traces", h->traces, "Kineto traces with orrery.layer annotations (tools/pytorch_train_step.py)")
      ->required()
      ->check(CLI::ExistingFile);
  host->add_option("--blocked-call-us", h->blocked_call_us,
                   "a launch call longer than this waited for CUDA's launch queue: its range is left out (default 50)");
  host->callback([h] { run_host(*h); });

  auto e = std::make_shared<ExportArgs>();
  CLI::App* exp = cmd->add_subcommand("export-workload", "write a one-GPU scenario's program for orrery-execute");
  exp->add_option("scenario", e->scenario, "scenario file (one GPU)")->required();
  exp->add_option("--out", e->out, "workload file to write")->required();
  exp->callback([e] { run_export(*e); });
}

}  // namespace orrery::cli
