// The workload file the reference executor reads: a one-GPU prediction's program exported task by task, read back
// unchanged; its memory effects and operations match the graph's; bad files are refused by line.
#include <catch2/catch.hpp>

#include <fstream>
#include <iterator>
#include <map>
#include <sstream>

#include "calibrate/bench/workload_file.h"
#include "calibrate/workload_export.h"
#include "test_support.h"

using namespace orrery;

TEST_CASE("a one-GPU program exports to the workload file and reads back", "[calibrate][workload]") {
  const Scenario s = load_scenario(test::source_dir() / "scenarios" / "measured" / "h200-llama-1b.json");
  const Prediction p = predict(s);
  const bench::WorkloadFile w = export_workload(p);
  const Program& prog = p.graph.programs[0];
  REQUIRE(w.tasks.size() == prog.tasks.size());
  std::istringstream in(bench::format_workload(w));
  const bench::WorkloadFile back = bench::parse_workload(in, "w");
  REQUIRE(back.tasks.size() == w.tasks.size());
  std::map<std::string, std::int64_t> net;
  double gemm_flops = 0, graph_flops = 0;
  int gemms = 0;
  for (std::size_t i = 0; i < back.tasks.size(); ++i) {
    const bench::WorkloadTask& t = back.tasks[i];
    CHECK(t.name == w.tasks[i].name);
    CHECK(t.deps == w.tasks[i].deps);
    net[t.start_kind] += t.start_bytes;
    net[t.end_kind] += t.end_bytes;
    if (t.op == "gemm") {
      ++gemms;
      gemm_flops += 2.0 * static_cast<double>(t.args[0]) * static_cast<double>(t.args[1]) *
                    static_cast<double>(t.args[2]) * static_cast<double>(t.args[3]);
    }
  }
  for (const Task& t : prog.tasks) {
    if (const auto* g = std::get_if<GemmShape>(&prog.ops[static_cast<std::size_t>(t.op)])) graph_flops += g->flops();
  }
  CHECK(gemm_flops == Approx(graph_flops));
  // Llama-3.2-1B eager: 7 linears per layer x 16 layers + the LM head, each a forward, a dgrad and a wgrad GEMM.
  CHECK(gemms == 3 * (7 * 16 + 1));
  for (const auto& [kind, bytes] : net) {
    INFO(kind);
    CHECK(bytes == 0);  // every allocation is freed within the step
  }
  CHECK(back.static_bytes == w.static_bytes);
  CHECK(w.static_bytes[0] == prog.static_memory[0]);
}

TEST_CASE("the committed workloads are what the lowering exports today", "[calibrate][workload]") {
  // tools/make-gpu-inputs.sh writes them for GPU sessions, whose machines cannot build orrery.
  for (const char* m : {"llama-0.5b", "llama-1b", "llama-3b"}) {
    INFO(m);
    const Scenario s = load_scenario(test::source_dir() / "scenarios" / "measured" / (std::string("h200-") + m + ".json"));
    const std::string fresh = bench::format_workload(export_workload(predict(s)));
    std::ifstream in(test::source_dir() / "scenarios" / "measured" / "workloads" / (std::string("h200-") + m + ".workload"));
    std::string committed((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    committed.erase(0, committed.find('\n') + 1);  // the comment line naming the command
    CHECK(committed == fresh);
  }
}

TEST_CASE("a plan over several GPUs is not exported, and bad workload files are refused by line",
          "[calibrate][workload]") {
  const Scenario s = test::scenario(R"({"model": "llama3-8b", "cluster": {"preset": "dgx-h100", "num_gpus": 8},
      "parallel": {"tp": 8}, "training": {"seq_length": 4096}})");
  CHECK_THROWS_WITH(export_workload(predict(s)), Catch::Contains("cluster.num_gpus (8) must be 1"));
  const auto error = [](const std::string& text) {
    std::istringstream in(text);
    try {
      bench::parse_workload(in, "w.txt");
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  CHECK(error("") == "w.txt:0: empty file (expected 'orrery-workload 1')");
  CHECK(error("orrery-workload 2\n") == "w.txt:1: expected the header 'orrery-workload 1'");
  const std::string head = "orrery-workload 1\n";
  CHECK(error(head + "task 0 compute forward 0 0 activations 0 activations 0 deps 1 0 sync | x\n") ==
        "w.txt:2: dependency 0 is not an earlier task");
  CHECK(error(head + "task 0 compute forward 0 0 activations 0 activations 0 deps 0 conv | x\n") ==
        "w.txt:2: unknown op 'conv' (gemm, attention, memory, sync or skip)");
  CHECK(error(head + "task 0 compute forward 0 0 heap 0 activations 0 deps 0 sync | x\n") == "w.txt:2: unknown memory kind");
  CHECK(error(head + "task 0 compute forward 0 0 activations 0 activations 0 deps 0 memory 5 | x\n") ==
        "w.txt:2: memory needs 2 non-negative integers");
}
