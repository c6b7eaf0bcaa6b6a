// Speed benchmark of one prediction's stages (issue 22's targets): lowering, pricing, instantiation and the event
// engine, each timed on its own, for the cases below or for scenario files. Each case runs in a forked child so that
// its peak resident memory (getrusage ru_maxrss) is its own. Not a test: it measures and prints.
//   orrery-bench-engine [--repeat N] [SCENARIO.json[:expand] ...]
// A file argument with the suffix ":expand" simulates every rank (--expand-ranks). Default cases: Llama-3.1-405B on
// 16,384 H100s (scenarios/examples/llama3.1-405b-16k-h100.json) one rank per stage and every rank, and the same plan
// at DP 512 on 65,536 H100s, every rank. Columns: tasks of the graph; lowering in ns per task (the best of --repeat
// lowerings, default 5); pricing, instantiation and engine in seconds; engine events and millions of events per
// second; the child's user CPU seconds and peak resident MiB.

#include <fmt/format.h>
#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "models/json_fields.h"
#include "models/text_file.h"
#include "sim/durations.h"
#include "sim/instances.h"
#include "sim/job/job.h"
#include "sim/lowering.h"
#include "sim/predict.h"
#include "tools/bench/in_child.h"

namespace {

using namespace orrery;
using nlohmann::json;
using Clock = std::chrono::steady_clock;

struct Case {
  std::string name;
  json scenario;
  bool expand = false;
};

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

std::vector<Case> default_cases() {
  const std::string file = std::string(ORRERY_SOURCE_DIR) + "/scenarios/examples/llama3.1-405b-16k-h100.json";
  const json base = parse_json_text(read_text_file(file, "scenario"), file);
  json wide = base;
  wide["name"] = "llama3.1-405b-65536xh100";
  wide["cluster"]["num_gpus"] = 65536;
  wide["parallel"]["dp"] = 512;
  wide["training"]["global_batch_size"] = 8192;
  return {{"405B 16,384 GPUs, one rank per stage", base, false},
          {"405B 16,384 GPUs, every rank", base, true},
          {"405B 65,536 GPUs, every rank", wide, true}};
}

struct Row {
  double tasks = 0, lower_ns = 0, price_s = 0, instances_s = 0, engine_s = 0, events = 0, user_s = 0, peak = 0;
};

// Runs in the child: each stage timed, the figures as one line.
std::string measure(const Case& c, int repeat) {
  const Job job = resolve(parse_scenario(c.scenario, "."));
  const Scenario& scenario = job.scenario();
  const CostParams& params = default_cost_params();
  Row row;
  WorkloadGraph graph;
  double best = 1e30;
  for (int k = 0; k < repeat; ++k) {
    const auto start = Clock::now();
    graph = lower(job, params.memory);
    best = std::min(best, seconds_since(start));
  }
  row.tasks = static_cast<double>(graph.num_tasks());
  row.lower_ns = best / row.tasks * 1e9;
  auto start = Clock::now();
  DefaultCostModels models(scenario.cluster, params);
  const Durations durations =
      price_graph(graph, models.models(), host_issue_costs(params.compute.host, scenario.training.framework));
  row.price_s = seconds_since(start);
  start = Clock::now();
  const Instantiation instances = make_instances(scenario.parallel, job.ranks(), scenario.stragglers,
                                                 c.expand ? Expansion::kAllRanks : Expansion::kAuto);
  row.instances_s = seconds_since(start);
  start = Clock::now();
  const RunResult run = run_engine(graph, instances, durations, engine_options(params));
  row.engine_s = seconds_since(start);
  row.events = static_cast<double>(run.events);
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  row.user_s = static_cast<double>(usage.ru_utime.tv_sec) + static_cast<double>(usage.ru_utime.tv_usec) * 1e-6;
  row.peak = static_cast<double>(usage.ru_maxrss) * 1024.0;
  const std::string line = fmt::format("{} {} {} {} {} {} {} {}\n", row.tasks, row.lower_ns, row.price_s, row.instances_s,
                                       row.engine_s, row.events, row.user_s, row.peak);
  return line;
}

}  // namespace

int main(int argc, char** argv) {
  int repeat = 5;
  std::vector<Case> cases;
  try {
    for (int a = 1; a < argc; ++a) {
      std::string arg = argv[a];
      if (arg == "--repeat" && a + 1 < argc) {
        repeat = std::max(1, std::atoi(argv[++a]));
        continue;
      }
      Case c;
      const std::string suffix = ":expand";
      if (arg.size() > suffix.size() && arg.compare(arg.size() - suffix.size(), suffix.size(), suffix) == 0) {
        c.expand = true;
        arg.resize(arg.size() - suffix.size());
      }
      c.name = arg + (c.expand ? ", every rank" : "");
      c.scenario = parse_json_text(read_text_file(arg, "scenario"), arg);
      cases.push_back(std::move(c));
    }
    if (cases.empty()) cases = default_cases();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "orrery-bench-engine: %s\n", e.what());
    return 2;
  }
  fmt::print("{:<40} {:>9} {:>10} {:>8} {:>10} {:>8} {:>11} {:>9} {:>8} {:>9}\n", "case", "tasks", "lower ns/t",
             "price s", "instances", "engine s", "events", "M ev/s", "user s", "peak MiB");
  int failed = 0;
  for (const Case& c : cases) {
    const std::string text = bench::in_child(c.name, [&] { return measure(c, repeat); });
    Row r;
    if (text.empty() || std::sscanf(text.c_str(), "%lf %lf %lf %lf %lf %lf %lf %lf", &r.tasks, &r.lower_ns, &r.price_s, &r.instances_s,
                              &r.engine_s, &r.events, &r.user_s, &r.peak) != 8) {
      fmt::print("{:<40} failed\n", c.name);
      ++failed;
      continue;
    }
    fmt::print("{:<40} {:>9.0f} {:>10.0f} {:>8.3f} {:>10.3f} {:>8.2f} {:>11.0f} {:>9.1f} {:>8.2f} {:>9.0f}\n", c.name, r.tasks,
               r.lower_ns, r.price_s, r.instances_s, r.engine_s, r.events, r.events / r.engine_s / 1e6, r.user_s,
               r.peak / 1048576);
  }
  return failed > 0 ? 1 : 0;
}
