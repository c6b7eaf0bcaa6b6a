// CPU offload against hand counts: the optimizer step of ZeRO-Offload / Megatron's --optimizer-cpu-offload moves
// the gradient shard over PCIe (H100: PCIe Gen5 x16, 64 GB/s per direction, at the 0.8 copy efficiency), runs Adam
// in host memory (DGX H100: 2 x 8 channels of DDR5-4800 = 614.4 GB/s per node, an eighth per GPU, at 0.7), and
// copies the parameters back; activation offload copies exactly what each offloaded layer saved.
#include <catch2/catch.hpp>

#include <map>
#include <string>

#include "test_support.h"

using namespace orrery;

namespace {

std::string llama(const std::string& training_extra, int zero = 1) {
  return R"({"model": {"preset": "llama3-8b", "num_hidden_layers": 4}, "cluster": {"preset": "dgx-h100", "num_gpus": 8},
      "parallel": {"zero_stage": )" + std::to_string(zero) +
         R"(}, "training": {"seq_length": 4096, "global_batch_size": 16)" + training_extra + "}}";
}

struct HostOps {
  std::map<std::string, double> bytes, seconds;
};

HostOps host_ops(const Prediction& p, Phase phase, int microbatch) {
  HostOps out;
  const Program& prog = p.graph.programs[0];
  for (const Task& t : prog.tasks) {
    if (t.kind != TaskKind::kHostOp || t.phase != phase || t.microbatch != microbatch) continue;
    const auto& op = std::get<HostOpShape>(prog.ops[static_cast<std::size_t>(t.op)]);
    out.bytes[t.label] += static_cast<double>(op.bytes);
    out.seconds[t.label] += p.durations.op_seconds[0][static_cast<std::size_t>(t.op)];
  }
  return out;
}

}  // namespace

TEST_CASE("optimizer CPU offload: PCIe copies and a host-memory-bound Adam step", "[sim][offload]") {
  const Prediction p = predict(test::scenario(llama(R"(, "optimizer_cpu_offload": true)")));
  const Prediction gpu = predict(test::scenario(llama("")));
  const auto& m = p.graph.programs[0].static_memory;
  CHECK(m[static_cast<std::size_t>(MemoryKind::kOptimizer)] == 0);
  CHECK(gpu.graph.programs[0].static_memory[static_cast<std::size_t>(MemoryKind::kOptimizer)] > 0);
  // The rank's shard: its bf16 weights / 2 bytes / dp 8 parameters.
  const double n = static_cast<double>(m[static_cast<std::size_t>(MemoryKind::kWeights)]) / 2 / 8;
  const HostOps ops = host_ops(p, Phase::kOptimizer, -1);
  CHECK(ops.bytes.at("offload_grads") == Approx(4 * n));        // fp32 gradients
  CHECK(ops.bytes.at("upload_params") == Approx(2 * n));        // bf16 parameters
  CHECK(ops.bytes.at("cpu_adam") == Approx((4 + 2 * 12 + 2) * n));  // grad in; master, m, v in and out; bf16 out
  const double pcie = 64e9 * 0.8, host = 614.4e9 / 8 * 0.7;
  CHECK(ops.seconds.at("offload_grads") == Approx(4 * n / pcie));
  CHECK(ops.seconds.at("cpu_adam") == Approx(30 * n / host));
  CHECK(ops.seconds.at("upload_params") == Approx(2 * n / pcie));
  // The three run one after the other in the optimizer step, which the breakdown shows.
  CHECK(p.report.breakdown.optimizer >= 6 * n / pcie + 30 * n / host);
  CHECK(p.report.iteration_time > gpu.report.iteration_time);
}

TEST_CASE("activation offload copies what each offloaded layer saved, and lowers the peak", "[sim][offload]") {
  const Prediction p = predict(test::scenario(llama(R"(, "cpu_offloading_num_layers": 3)")));
  const Prediction kept = predict(test::scenario(llama("")));
  // Bytes layers 0-2 allocate in their forward pass of micro-batch 0 (their saved activations).
  double saved = 0;
  for (const Task& t : p.graph.programs[0].tasks) {
    if (t.microbatch == 0 && t.phase == Phase::kForward && t.layer >= 0 && t.layer < 3 &&
        t.kind != TaskKind::kHostOp && t.start_kind == MemoryKind::kActivations) {
      saved += static_cast<double>(t.start_bytes);
    }
  }
  REQUIRE(saved > 0);
  CHECK(host_ops(p, Phase::kForward, 0).bytes.at("activation_offload") == Approx(saved));
  CHECK(host_ops(p, Phase::kBackwardInput, 0).bytes.at("activation_reload") == Approx(saved));
  const auto activations = [](const Prediction& x) {
    return x.run.instances[0].at_peak[static_cast<std::size_t>(MemoryKind::kActivations)];
  };
  CHECK(activations(p) < activations(kept));
  CHECK(p.run.makespan >= kept.run.makespan);  // copies can only delay compute
}

TEST_CASE("an offloaded layer's activations come back only after they reached the host", "[sim][offload]") {
  // One layer per chunk offloaded with a short backward behind it: each micro-batch's reload of layer 0 must have
  // its own offload copy as a predecessor (a reload that starts while the copy out still runs would bring back
  // memory that is still held, and the peak would rise with offload).
  const Prediction p = predict(test::scenario(llama(R"(, "cpu_offloading_num_layers": 1)")));
  const Program& prog = p.graph.programs[0];
  std::map<int, std::uint32_t> offload, reload;
  for (std::uint32_t i = 0; i < prog.tasks.size(); ++i) {
    const std::string label = prog.tasks[i].label;
    if (label == "activation_offload") offload[prog.tasks[i].microbatch] = i;
    if (label == "activation_reload") reload[prog.tasks[i].microbatch] = i;
  }
  REQUIRE(offload.size() == 2);  // global batch 16 over dp 8: two micro-batches
  REQUIRE(reload.size() == offload.size());
  for (const auto& [mb, copy] : offload) {
    bool found = false;
    auto [begin, end] = boost::out_edges(copy, prog.successors);
    for (auto e = begin; e != end; ++e) found = found || boost::target(*e, prog.successors) == reload.at(mb);
    CHECK(found);
  }
  const Prediction kept = predict(test::scenario(llama("")));
  CHECK(p.run.instances[0].peak < kept.run.instances[0].peak);
}

TEST_CASE("each more offloaded layer lowers the peak by its saved activations", "[sim][offload]") {
  // Transformer Engine's windows make the forward wait for late copies instead of piling them up, so with 8 layers
  // on one GPU each of k = 1..6 offloaded layers takes exactly one layer's saved activations off the peak, and
  // every extra copy can only add time.
  const auto run = [](int k) {
    return predict(test::scenario(R"({"model": {"preset": "llama3-8b", "num_hidden_layers": 8},
        "cluster": {"preset": "dgx-h100", "num_gpus": 1}, "training": {"seq_length": 4096, "global_batch_size": 4,
        "cpu_offloading_num_layers": )" + std::to_string(k) + "}}"));
  };
  Prediction previous = run(1);
  const double layer = host_ops(previous, Phase::kForward, 0).bytes.at("activation_offload");
  for (int k = 2; k <= 6; ++k) {
    Prediction p = run(k);
    INFO("k = " << k);
    CHECK(static_cast<double>(previous.run.instances[0].peak - p.run.instances[0].peak) == Approx(layer));
    CHECK(p.run.makespan >= previous.run.makespan);
    previous = std::move(p);
  }
}

TEST_CASE("offload inputs are checked", "[sim][offload][errors]") {
  CHECK_THAT(test::scenario_error(llama(R"(, "optimizer_cpu_offload": true)", 0)),
             Catch::Contains("training.optimizer_cpu_offload") && Catch::Contains("zero_stage"));
  CHECK_THAT(test::scenario_error(llama(R"(, "cpu_offloading_num_layers": 4)")),
             Catch::Contains("training.cpu_offloading_num_layers (4)"));
  CHECK_THAT(test::scenario_error(R"({"model": "llama3-8b", "cluster": {"gpu": "h100-sxm", "gpus_per_node": 8,
      "num_gpus": 8, "nics_per_node": 8, "nic_bandwidth_Gbit_s": 400}, "parallel": {"zero_stage": 1},
      "training": {"seq_length": 4096, "optimizer_cpu_offload": true}})"),
             Catch::Contains("cluster.host_memory_bandwidth_GB_s"));
}
