// Memory benchmark of one prediction (sim/memory_budget.h): for each case, a child process runs the prediction
// with no budget and reports its peak resident memory (getrusage ru_maxrss) beside the counts the estimate is made
// of and the estimate itself. The estimate must stay above every measured peak, and not far above: the constants
// in sim/memory_budget.cpp come from these rows. Not a test: it measures.
//   orrery-bench-memory [CASES.json]
// CASES.json: a list of scenario documents (default: the cases below). Prints one row per case and exits 1 when an
// estimate is below its measured peak.

#include <fmt/format.h>
#include <sys/resource.h>

#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "models/error.h"
#include "sim/memory_budget.h"
#include "sim/predict.h"
#include "tools/bench/in_child.h"

namespace {

using namespace orrery;
using nlohmann::json;

// Cases that move the counts apart: many tasks on few ranks, few tasks on many ranks (--expand-ranks), recorded
// timings within and beyond RunOptions::record_budget, a MoE job and a dense one.
json default_cases() {
  auto scenario = [](const char* model, int gpus, int tp, int pp, int gbs, bool expand, int layers = 0) {
    json s = {{"name", fmt::format("{} {} GPUs TP{} PP{} GBS {}{}", model, gpus, tp, pp, gbs, expand ? " expanded" : "")},
              {"model", model},
              {"cluster", {{"preset", "dgx-h100"}, {"num_gpus", gpus}}},
              {"parallel", {{"tp", tp}, {"pp", pp}, {"sequence_parallel", tp > 1}, {"zero_stage", 1}}},
              {"training", {{"seq_length", 4096}, {"micro_batch_size", 1}, {"global_batch_size", gbs}}},
              {"expand_ranks", expand}};
    if (layers > 0) s["model"] = {{"preset", model}, {"num_hidden_layers", layers}};
    return s;
  };
  return json::array({
      scenario("llama3-8b", 8, 1, 1, 8, false),
      scenario("llama3-70b", 64, 8, 4, 4096, false),
      scenario("llama3-70b", 64, 8, 8, 16384, false),
      scenario("llama3-8b", 1024, 8, 2, 256, true),
      scenario("llama3-8b", 4096, 8, 2, 512, true),
      scenario("llama3-8b", 16384, 8, 2, 2048, true),
      scenario("llama3-8b", 65536, 8, 4, 8192, true, 8),
      scenario("llama3.1-405b", 16384, 8, 2, 2048, true),
      scenario("mixtral-8x7b", 4096, 2, 2, 2048, true),
      scenario("llama3-8b", 1024, 1, 1, 16384, true),
      scenario("llama3-8b", 262144, 8, 2, 16384, true, 2),
  });
}

struct Row {
  double tasks = 0, instances = 0, task_instances = 0, estimate = 0, peak = 0;
};

// Runs in the child: the prediction, then the counts, as one line.
std::string measure(const json& doc) {
  json scenario = doc;
  const bool expand = scenario.value("expand_ranks", false);
  scenario.erase("expand_ranks");
  PredictOptions options;
  options.expansion = expand ? Expansion::kAllRanks : Expansion::kAuto;
  options.memory_budget = 0;
  const Prediction p = predict(parse_scenario(scenario, "."), options);
  Row row;
  for (const Program& program : p.graph.programs) row.tasks += static_cast<double>(program.tasks.size());
  for (const Instance& in : p.instances.instances) {
    row.task_instances += static_cast<double>(p.graph.programs[static_cast<std::size_t>(in.program)].tasks.size());
  }
  row.instances = static_cast<double>(p.instances.instances.size());
  const double recorded = row.task_instances <= static_cast<double>(options.run.record_budget) ? row.task_instances : row.tasks;
  row.estimate = estimated_graph_bytes(row.tasks) +
                 estimated_engine_bytes(row.task_instances, row.instances, recorded, paced_streams(p.graph));
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  row.peak = static_cast<double>(usage.ru_maxrss) * 1024.0;
  const std::string line = fmt::format("{} {} {} {} {}\n", row.tasks, row.instances, row.task_instances, row.estimate, row.peak);
  return line;
}

}  // namespace

int main(int argc, char** argv) {
  json cases = default_cases();
  if (argc > 1) cases = json::parse(std::ifstream(argv[1]));
  fmt::print("{:<44} {:>11} {:>9} {:>14} {:>10} {:>10} {:>6}\n", "case", "tasks", "instances", "task instances",
             "peak MiB", "est. MiB", "est/peak");
  int below = 0;
  for (const json& c : cases) {
    const std::string text = bench::in_child(c.value("name", "?"), [&] { return measure(c); });
    Row r;
    if (text.empty() || std::sscanf(text.c_str(), "%lf %lf %lf %lf %lf", &r.tasks, &r.instances, &r.task_instances, &r.estimate, &r.peak) != 5) {
      fmt::print("{:<44} failed\n", c.value("name", "?"));
      continue;
    }
    below += r.estimate < r.peak;
    fmt::print("{:<44} {:>11.0f} {:>9.0f} {:>14.0f} {:>10.0f} {:>10.0f} {:>6.2f}\n", c.value("name", "?"), r.tasks,
               r.instances, r.task_instances, r.peak / 1048576, r.estimate / 1048576, r.estimate / r.peak);
  }
  return below > 0 ? 1 : 0;
}
