// `orrery compare --kineto TRACE.json[.gz] SCENARIO.json`: a real training step's PyTorch profiler trace against
// the prediction for the same scenario, by kernel class: GPU time per step of GEMMs, attention, other kernels
// (elementwise, norms, optimizer) and communication, and the step time. Measured figures are medians over the
// traced steps after `--skip-steps` warm-up steps; predicted figures are the simulated rank's busy time per class
// (pipeline stage 0) and the iteration time.
#include <fmt/format.h>

#include <algorithm>
#include <iostream>
#include <memory>

#include "calibrate/kineto_trace.h"
#include "hardware/gpu_profile.h"
#include "models/error.h"
#include "sim/predict.h"
#include "tools/orrery/commands.h"

namespace orrery::cli {

namespace {

struct CompareArgs {
  std::string kineto, scenario, profile;
  int skip_steps = 1;
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t h = v.size() / 2;
  return v.empty() ? 0 : v.size() % 2 ? v[h] : 0.5 * (v[h - 1] + v[h]);
}

int class_of(const Task& t) {
  if (t.is_rendezvous() || t.kind == TaskKind::kSendRecv) return static_cast<int>(KernelClass::kCommunication);
  if (t.kind == TaskKind::kGemm) return static_cast<int>(KernelClass::kGemm);
  if (t.kind == TaskKind::kAttention) return static_cast<int>(KernelClass::kAttention);
  return static_cast<int>(KernelClass::kOther);
}

std::string error_pct(double predicted, double measured) {
  if (measured <= 0) return predicted > 0 ? "n/a" : "";
  return fmt::format("{:+.1f}%", 100.0 * (predicted - measured) / measured);
}

void run_compare(const CompareArgs& a) {
  require(!a.kineto.empty(), "--kineto", "missing", "names the PyTorch profiler trace to compare with");
  const KinetoTrace trace = read_kineto_trace(a.kineto);
  require(!trace.steps.empty(), "--kineto", a.kineto, "has no ProfilerStep#N annotations (profile with a schedule)");
  require(a.skip_steps >= 0 && a.skip_steps < static_cast<int>(trace.steps.size()), "--skip-steps",
          std::to_string(a.skip_steps), fmt::format("must leave at least one of the trace's {} steps", trace.steps.size()));
  std::vector<double> step_time;
  std::vector<double> by_class[4];
  for (int s = a.skip_steps; s < static_cast<int>(trace.steps.size()); ++s) {
    step_time.push_back(trace.steps[static_cast<std::size_t>(s)].duration);
    const StepKernelTime k = step_kernel_time(trace, s);
    for (int c = 0; c < 4; ++c) by_class[c].push_back(k.by_class[c]);
  }

  const Scenario scenario = load_scenario(a.scenario);
  const CostParams params = cost_params_with_profile(a.profile);
  PredictOptions options;
  options.params = &params;
  const Prediction p = predict(scenario, options);
  double predicted[4] = {0, 0, 0, 0};
  const Program& program = p.graph.programs.front();
  for (const Task& t : program.tasks) {
    predicted[class_of(t)] += p.durations.op_seconds.front()[static_cast<std::size_t>(t.op)];
  }

  std::cout << fmt::format("measured   {}: {} steps, {} skipped as warm-up, {} kernels\n", a.kineto, trace.steps.size(),
                           a.skip_steps, trace.kernels.size());
  std::cout << fmt::format("predicted  {} ({})\n\n", a.scenario, scenario.name);
  std::cout << fmt::format("{:<34} {:>12} {:>12} {:>9}\n", "per step", "measured s", "predicted s", "error");
  const double measured_step = median(step_time);
  std::cout << fmt::format("{:<34} {:>12.6f} {:>12.6f} {:>9}\n", "step time (ProfilerStep)", measured_step,
                           p.report.iteration_time, error_pct(p.report.iteration_time, measured_step));
  // Indexed by KernelClass.
  const char* labels[4] = {"GEMM kernels", "attention kernels", "communication kernels", "other kernels"};
  for (int c = 0; c < 4; ++c) {
    const double m = median(by_class[c]);
    std::cout << fmt::format("{:<34} {:>12.6f} {:>12.6f} {:>9}\n", labels[c], m, predicted[c], error_pct(predicted[c], m));
  }
  if (trace.memcpy_time > 0) {
    std::cout << fmt::format("{:<34} {:>12.6f} {:>12} (all steps; not modelled)\n", "memcpy/memset",
                             trace.memcpy_time, "");
  }
  std::cout << "\nGPU time per class sums kernels launched in each step's window; predicted figures are the busy time\n"
               "of the simulated rank of pipeline stage 0. Per-layer alignment and the ten largest misses need a trace\n"
               "of the same model (issue 7's tools/ script), not yet recorded.\n";
}

}  // namespace

void add_compare_command(CLI::App& app) {
  auto a = std::make_shared<CompareArgs>();
  CLI::App* cmd = app.add_subcommand("compare", "compare a measured training step with the prediction");
  cmd->add_option("scenario", a->scenario, "scenario of the measured run")->required();
  cmd->add_option("--kineto", a->kineto, "PyTorch profiler (Kineto) trace, .json or .json.gz")->required();
  cmd->add_option("--skip-steps", a->skip_steps, "profiler steps to skip as warm-up (default 1)");
  cmd->add_option("--profile", a->profile, "price ops from a measured GPU profile (calibrate/) where it covers them");
  cmd->callback([a] { run_compare(*a); });
}

}  // namespace orrery::cli
