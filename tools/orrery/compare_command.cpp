// `orrery compare SCENARIO.json` with one measurement:
//   --kineto TRACE.json[.gz]: a real training step's PyTorch profiler trace against the prediction, by kernel class:
//     GPU time per step of GEMMs, attention, communication and other kernels, and the step time. Measured figures
//     are medians over the traced steps after `--skip-steps` warm-up steps; predicted figures are the simulated
//     rank's busy time per class (pipeline stage 0) and the iteration time.
//   --measured TIMELINE.json: a measured timeline in the simulator's own format (the reference executor's) lined up
//     task by task with the prediction's (calibrate/timeline_compare.h): per op kind and per layer, iteration time,
//     peak memory, and the largest misses.
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <iostream>
#include <memory>

#include "calibrate/bench/raw_profile_writer.h"
#include "calibrate/kineto_trace.h"
#include "calibrate/timeline_compare.h"
#include "models/json_fields.h"
#include "tools/orrery/outputs.h"
#include "hardware/gpu_profile.h"
#include "models/error.h"
#include "models/utf8.h"
#include "sim/predict.h"
#include "tools/orrery/commands.h"

namespace orrery::cli {

namespace {

struct CompareArgs {
  std::string kineto, measured, scenario, profile;
  int skip_steps = 1, misses = 10;
};

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

void run_timeline_compare(const CompareArgs& a) {
  const Timeline measured = parse_timeline(read_json_file(a.measured, "--measured"), a.measured);
  const Scenario scenario = load_scenario(a.scenario);
  const CostParams params = cost_params_with_profile(a.profile);
  PredictOptions options;
  options.params = &params;
  const Prediction p = predict(scenario, options);
  std::string text;  // the same text `predict --timeline` writes, read back
  write_timeline([&text](std::string_view chunk) { text.append(chunk); }, p);
  Timeline predicted = parse_timeline(nlohmann::json::parse(text), "prediction");
  predicted.peak_memory = p.report.peak_memory;
  const TimelineComparison c = compare_timelines(predicted, measured, a.misses);
  require(c.matched > 0, "--measured", a.measured,
          "shares no task (rank, name, phase) with the prediction: is it a timeline of this scenario?");
  if (c.matched < 0.9 * static_cast<double>(predicted.tasks.size())) {
    std::cerr << fmt::format("warning: only {} of the prediction's {} tasks are in the measured timeline; it may be "
                             "of another scenario or plan\n", c.matched, predicted.tasks.size());
  }
  std::cout << fmt::format("measured   {} ({}): {} tasks\npredicted  {} ({}): {} tasks\n", a.measured, measured.source,
                           measured.tasks.size(), a.scenario, scenario.name, predicted.tasks.size());
  std::cout << fmt::format("matched {} tasks; {} only predicted, {} only measured\n\n", c.matched, c.only_predicted,
                           c.only_measured);
  const auto row = [](const std::string& what, const TimePair& t) {
    return fmt::format("{:<28} {:>12.6f} {:>12.6f} {:>9}\n", what, t.predicted, t.measured,
                       t.measured > 0 ? fmt::format("{:+.1f}%", 100 * t.error()) : "");
  };
  std::cout << fmt::format("{:<28} {:>12} {:>12} {:>9}\n", "", "predicted s", "measured s", "error");
  std::cout << row("iteration time", c.iteration);
  if (c.measured_peak > 0) {
    std::cout << fmt::format("{:<28} {:>12.3f} {:>12.3f} {:>9}\n", "peak memory (GiB)", static_cast<double>(c.predicted_peak) / 1073741824.0,
                             static_cast<double>(c.measured_peak) / 1073741824.0,
                             fmt::format("{:+.1f}%", 100.0 * (static_cast<double>(c.predicted_peak) - static_cast<double>(c.measured_peak)) /
                                                         static_cast<double>(c.measured_peak)));
  }
  std::cout << "\nby op kind (summed task time)\n";
  for (const auto& [kind, t] : c.by_kind) std::cout << row("  " + kind, t);
  std::cout << "\nby layer (summed task time; -1: embedding, head, optimizer)\n";
  for (const auto& [layer, t] : c.by_layer) std::cout << row(fmt::format("  layer {}", layer), t);
  std::cout << fmt::format("\n{} largest misses\n", c.largest_misses.size());
  for (const TaskMiss& m : c.largest_misses) std::cout << row("  " + m.name + " " + m.phase, m.time);
}

void run_compare(const CompareArgs& a) {
  require(a.kineto.empty() != a.measured.empty(), "--kineto/--measured", a.kineto.empty() ? "neither" : "both",
          "give exactly one measurement: a PyTorch profiler trace or a measured timeline");
  require(a.misses >= 1 && a.misses <= 100000, "--misses", std::to_string(a.misses), "must be in 1..100000");
  if (!a.measured.empty()) return run_timeline_compare(a);
  const KinetoTrace trace = read_kineto_trace(a.kineto);
  require(!trace.steps.empty(), "--kineto", a.kineto, "has no ProfilerStep#N annotations (profile with a schedule)");
  require(a.skip_steps >= 0 && a.skip_steps < static_cast<int>(trace.steps.size()), "--skip-steps",
          std::to_string(a.skip_steps), fmt::format("must leave at least one of the trace's {} steps", trace.steps.size()));
  std::vector<double> step_time, copies;
  std::vector<double> by_class[4];
  for (int s = a.skip_steps; s < static_cast<int>(trace.steps.size()); ++s) {
    step_time.push_back(trace.steps[static_cast<std::size_t>(s)].duration);
    const StepKernelTime k = step_kernel_time(trace, s);
    // Device copies and fills are memory-bound work the lowering prices with the elementwise ops: "other".
    for (int c = 0; c < 4; ++c) by_class[c].push_back(k.by_class[c] + (c == 3 ? k.copies : 0));
    copies.push_back(k.copies);
  }

  const Scenario scenario = load_scenario(a.scenario);
  if (!trace.device_name.empty() && !same_gpu_model(trace.device_name, scenario.cluster.gpu)) {
    std::cerr << fmt::format("warning: the trace was recorded on {}, the scenario's GPU is {}\n", printable_utf8(trace.device_name, false),
                             scenario.cluster.gpu.display_name);
  }
  if (trace.world_size > 0 && trace.world_size != scenario.cluster.num_gpus) {
    std::cerr << fmt::format("warning: the trace's job had {} ranks, the scenario {} GPUs\n", trace.world_size,
                             scenario.cluster.num_gpus);
  }
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
  const double measured_step = bench::median(step_time);
  std::cout << fmt::format("{:<34} {:>12.6f} {:>12.6f} {:>9}\n", "step time (ProfilerStep)", measured_step,
                           p.report.iteration_time, error_pct(p.report.iteration_time, measured_step));
  // Indexed by KernelClass.
  const char* labels[4] = {"GEMM kernels", "attention kernels", "communication kernels", "other kernels and copies"};
  for (int c = 0; c < 4; ++c) {
    const double m = bench::median(by_class[c]);
    std::cout << fmt::format("{:<34} {:>12.6f} {:>12.6f} {:>9}\n", labels[c], m, predicted[c], error_pct(predicted[c], m));
  }
  if (bench::median(copies) > 0) {
    std::cout << fmt::format("{:<34} {:>12.6f}\n", "  of which memcpy/memset", bench::median(copies));
  }
  // Per decoder layer, when the trace carries tools/pytorch_train_step.py's layer annotations.
  std::map<int, std::vector<std::pair<double, double>>> layer_steps;  // layer -> per step (forward, backward)
  for (const auto* list : {&trace.kernels, &trace.copies}) {
    for (const KinetoKernel& k : *list) {
      if (k.layer < 0 || k.step < a.skip_steps) continue;
      auto& steps = layer_steps[k.layer];
      steps.resize(trace.steps.size() - static_cast<std::size_t>(a.skip_steps));
      auto& slot = steps[static_cast<std::size_t>(k.step - a.skip_steps)];
      (k.backward ? slot.second : slot.first) += k.duration;
    }
  }
  if (!layer_steps.empty()) {
    std::map<int, std::pair<double, double>> predicted_layer;
    for (const Task& t : program.tasks) {
      if (t.layer < 0 || !is_compute(t)) continue;
      const double d = p.durations.op_seconds.front()[static_cast<std::size_t>(t.op)];
      (t.phase == Phase::kForward ? predicted_layer[t.layer].first : predicted_layer[t.layer].second) += d;
    }
    std::cout << fmt::format("\n{:<34} {:>12} {:>12} {:>9}\n", "per layer (GPU kernel time)", "measured s", "predicted s",
                             "error");
    for (const auto& [layer, steps] : layer_steps) {
      std::vector<double> fwd, bwd;
      for (const auto& [f, b] : steps) {
        fwd.push_back(f);
        bwd.push_back(b);
      }
      const auto [pf, pb] = predicted_layer[layer];
      std::cout << fmt::format("{:<34} {:>12.6f} {:>12.6f} {:>9}\n", fmt::format("layer {} forward", layer), bench::median(fwd),
                               pf, error_pct(pf, bench::median(fwd)));
      std::cout << fmt::format("{:<34} {:>12.6f} {:>12.6f} {:>9}\n", fmt::format("layer {} backward", layer),
                               bench::median(bwd), pb, error_pct(pb, bench::median(bwd)));
    }
  }
  std::cout << "\nGPU time per class sums the kernels (and, in \"other\", the device copies and fills) launched in each\n"
               "step's window, median over the steps kept; predicted figures are the busy time of the simulated rank of\n"
               "pipeline stage 0. For task-by-task alignment use --measured with a timeline from the reference executor.\n";
}

}  // namespace

void add_compare_command(CLI::App& app) {
  auto a = std::make_shared<CompareArgs>();
  CLI::App* cmd = app.add_subcommand("compare", "compare a measured training step with the prediction");
  cmd->add_option("scenario", a->scenario, "scenario of the measured run")->required();
  cmd->add_option("--kineto", a->kineto, "PyTorch profiler (Kineto) trace, .json or .json.gz")->check(non_empty_file());
  cmd->add_option("--measured", a->measured, "measured timeline in the simulator's format (orrery-execute --out)")
      ->check(non_empty_file());
  cmd->add_option("--misses", a->misses, "how many of the largest per-task misses to list (default 10)");
  cmd->add_option("--skip-steps", a->skip_steps, "profiler steps to skip as warm-up (default 1)");
  cmd->add_option("--profile", a->profile, "price ops from a measured GPU profile (calibrate/) where it covers them")->check(non_empty_file());
  cmd->callback([a] { run_compare(*a); });
}

}  // namespace orrery::cli
