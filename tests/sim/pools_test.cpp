// Mixed clusters (cluster.pools, sim/pool_assignment.h, hardware/pool_link.h): one pool is the homogeneous cluster
// exactly; a stage on a slower GPU holds the 1F1B pipeline as the hand formula gives; a send between pools without a
// common RDMA transport runs at the TCP rate; bad pool input names its field.
#include <catch2/catch.hpp>

#include <algorithm>
#include <string>

#include "hardware/pool_link.h"
#include "sim/search/pool_balance.h"
#include "sim/task_vocabulary.h"
#include "test_support.h"

using namespace orrery;

namespace {

const char* kPlan = R"("parallel": {"tp": 4, "pp": 2, "vpp": 2, "dp": 8, "sequence_parallel": true, "zero_stage": 1},
    "training": {"seq_length": 4096, "micro_batch_size": 1, "global_batch_size": 64})";

std::string with_cluster(const std::string& cluster) {
  return std::string(R"({"model": "llama3-8b", "cluster": )") + cluster + ", " + kPlan + "}";
}

}  // namespace

TEST_CASE("a mixed cluster of one pool predicts exactly what the homogeneous cluster does", "[sim][pools]") {
  // Invariant: a pool is a cluster description; with one pool every stage is priced and placed on it, as on the
  // cluster itself, so every figure is the same to the nanosecond and byte.
  const Prediction plain = predict(test::scenario(with_cluster(R"({"preset": "dgx-h100", "num_gpus": 64})")));
  const Prediction pooled =
      predict(test::scenario(with_cluster(R"({"pools": [{"name": "only", "preset": "dgx-h100", "num_gpus": 64}]})")));
  CHECK(pooled.run.makespan == plain.run.makespan);
  CHECK(pooled.report.peak_memory == plain.report.peak_memory);
  CHECK(pooled.report.mfu == plain.report.mfu);
  CHECK(pooled.report.breakdown.compute == plain.report.breakdown.compute);
  CHECK(pooled.report.breakdown.exposed_dp_comm == plain.report.breakdown.exposed_dp_comm);
  REQUIRE(pooled.report.pools.size() == 1);
  CHECK(pooled.report.pools[0].gpus_used == 64);
  CHECK(pooled.report.pools[0].stages == std::vector<int>{0, 1});
  // Its own MFU is the job's: it holds all the GPUs and all the FLOPs.
  CHECK(pooled.report.pools[0].mfu == Approx(plain.report.mfu).epsilon(1e-12));
}

TEST_CASE("a mixed cluster gives the same step with one rank per stage and with every rank expanded", "[sim][pools][symmetry]") {
  // Invariant (ARCHITECTURE.md "Symmetry"): each stage is homogeneous on its pool, so its ranks behave alike.
  const Scenario s = test::scenario(with_cluster(
      R"({"pools": [{"name": "h100", "preset": "dgx-h100", "num_gpus": 32}, {"name": "a100", "preset": "dgx-a100-80gb", "num_gpus": 32}]})"));
  PredictOptions expanded;
  expanded.expansion = Expansion::kAllRanks;
  const Prediction a = predict(s);
  const Prediction b = predict(s, expanded);
  CHECK(b.instances.instances.size() == 64);
  CHECK(a.run.makespan == b.run.makespan);
  CHECK(a.report.peak_memory == b.report.peak_memory);
}

TEST_CASE("a stage on a GPU half as fast holds the 1F1B pipeline by the hand formula", "[sim][pools]") {
  // Two stages, one GPU each, no tensor or data parallelism; stage 1 runs on an H100 whose tensor, vector and memory
  // rates are all halved. With the slow stage last, 1F1B keeps it busy from its first forward to its last backward:
  // T = f0 + m (f1 + b1) + b0 + two sends (the first activation and the last gradient on the critical path), then
  // the optimizer step: stage 0's gradient norm, the norm's all-reduce across stages (Megatron's clip_grad_norm), and
  // the rest of the slow stage's step (clipping, Adam, the parameter copy). f_i and b_i are stage i's compute per
  // micro-batch, summed here from each stage's priced tasks; the formula composes them independently of the engine.
  const std::string half_gpu = R"({"preset": "h100-sxm", "peak_tflops": {"fp32": 33.45, "tf32": 247.35, "fp16": 494.7,
      "bf16": 494.7, "fp8": 989.4}, "hbm_bandwidth_TB_s": 1.675})";
  const Scenario s = test::scenario(R"({"model": {"preset": "llama3-8b", "num_hidden_layers": 4},
      "cluster": {"pools": [{"name": "fast", "preset": "dgx-h100", "num_gpus": 1},
                            {"name": "half", "preset": "dgx-h100", "num_gpus": 1, "gpu": )" + half_gpu + R"(}]},
      "parallel": {"pp": 2, "pipeline_layout": [2, 2]},
      "training": {"seq_length": 4096, "micro_batch_size": 1, "global_batch_size": 8}})");
  const Prediction p = test::predict_without_host(s);
  const int m = 8;
  double f[2] = {0, 0}, b[2] = {0, 0}, norm[2] = {-1, -1}, step[2] = {0, 0}, send = 0, norm_reduce = 0;
  for (int stage = 0; stage < 2; ++stage) {
    const Program& prog = p.graph.programs[static_cast<std::size_t>(stage)];
    const auto& seconds = p.durations.op_seconds[static_cast<std::size_t>(stage)];
    for (const Task& t : prog.tasks) {
      const double d = seconds[static_cast<std::size_t>(t.op)];
      if (is_compute(t) && t.microbatch == 0) (t.phase == Phase::kForward ? f : b)[stage] += d;
      if (is_compute(t) && t.phase == Phase::kOptimizer) {
        // The step's first compute task is the local gradient norm; the rest waits for the norm's all-reduce.
        if (norm[stage] < 0 && d > 0) {
          norm[stage] = d;
        } else {
          step[stage] += d;
        }
      }
      if (!is_compute(t) && t.phase == Phase::kOptimizer && t.op >= 0) norm_reduce = std::max(norm_reduce, d);
      if (stage == 0 && t.group == GroupKind::kPpForwardSend && t.microbatch == 0) send = d;
    }
  }
  // The slow stage is the bottleneck, by about the factor of two its GPU gives.
  REQUIRE(f[1] + b[1] > 1.8 * (f[0] + b[0]));
  const double formula = f[0] + m * (f[1] + b[1]) + b[0] + 2 * send + norm[0] + norm_reduce + step[1];
  CHECK(from_nanos(p.run.makespan) == Approx(formula).epsilon(0.01));
  // Not the homogeneous pipeline's (m + pp - 1) (f + b) of either GPU.
  CHECK(from_nanos(p.run.makespan) > 1.3 * (m + 1) * (f[0] + b[0]));
  CHECK(p.report.pools[1].mfu > p.report.pools[0].mfu);  // the busy stage uses more of its GPU's peak
}

TEST_CASE("a send between pools without a common RDMA transport runs at the TCP rate", "[hardware][pools]") {
  // An InfiniBand pool and a RoCE pool share no RDMA path (hardware/pool_link.h): NCCL's socket transport moves
  // the bytes at tcp_efficiency of the slower side's line rate. 400 Gb/s per GPU on both sides = 50 GB/s.
  const ClusterSpec ib = parse_cluster(nlohmann::json::parse(R"({"preset": "dgx-h100", "nic_type": "infiniband"})"), "c");
  const ClusterSpec roce = parse_cluster(nlohmann::json::parse(R"({"preset": "dgx-h100", "nic_type": "roce"})"), "c");
  const ClusterSpec slow_ib =
      parse_cluster(nlohmann::json::parse(R"({"preset": "dgx-h100", "nic_bandwidth_Gbit_s": 100})"), "c");
  const NetworkParams& net = default_cost_params().network;
  const NcclCollectiveModel model(ib, net);
  const Bytes bytes = Bytes{1} << 30;
  const auto time = [&](const ClusterSpec& a, const ClusterSpec& b) {
    return model.time(CollectiveOp{CollectiveKind::kSendRecv, bytes, cross_pool_placement(a, b)});
  };
  const auto latency = [&](const ClusterSpec& a, const ClusterSpec& b) {
    return model.time(CollectiveOp{CollectiveKind::kSendRecv, 0, cross_pool_placement(a, b)});
  };
  const double line = 400e9 / 8;  // bytes/s per GPU: one 400 Gb/s NIC per GPU
  CHECK(pool_link(ib, roce).rdma == false);
  CHECK(pool_link(ib, ib).rdma == true);
  CHECK(time(ib, roce) - latency(ib, roce) == Approx(bytes / (line * net.tcp_efficiency)).epsilon(0.01));
  CHECK(time(roce, ib) == time(ib, roce));  // symmetric
  CHECK(time(ib, ib) - latency(ib, ib) == Approx(bytes / (line * net.nic_efficiency)).epsilon(0.01));
  // The slower side's NIC sets the rate: a 100 Gb/s pool against a 400 Gb/s one.
  CHECK(time(ib, slow_ib) - latency(ib, slow_ib) == Approx(bytes / (100e9 / 8 * net.nic_efficiency)).epsilon(0.01));
  // Across GPU vendors the bytes are staged through host memory: the host link (64 GB/s per direction on both)
  // is faster than the NIC here, so the NIC rate stands, over TCP when the transports differ.
  const ClusterSpec amd = parse_cluster(nlohmann::json::parse(R"({"preset": "mi300x-8", "nic_type": "roce"})"), "c");
  CHECK(pool_link(ib, amd).host_staged);
  CHECK(pool_link(ib, amd).bandwidth_per_gpu == Approx(line));
}

TEST_CASE("a pipeline between an InfiniBand pool and a RoCE pool pays the TCP rate on its sends", "[sim][pools]") {
  // End to end: the same job with the second pool's NICs RoCE instead of InfiniBand exposes more pipeline time.
  const auto job = [](const char* nic) {
    return test::predict_without_host(test::scenario(std::string(R"({"model": "llama3-8b",
        "cluster": {"pools": [{"name": "a", "preset": "dgx-h100", "num_gpus": 8},
                              {"name": "b", "preset": "dgx-h100", "num_gpus": 8, "nic_type": ")") + nic + R"("}]},
        "parallel": {"tp": 8, "pp": 2, "sequence_parallel": true, "overlap_p2p_comm": false},
        "training": {"seq_length": 8192, "micro_batch_size": 1, "global_batch_size": 16}})"));
  };
  const Prediction rdma = job("infiniband");
  const Prediction tcp = job("roce");
  CHECK(tcp.report.pools[1].nic_type == std::string("roce"));
  CHECK(tcp.run.makespan > rdma.run.makespan);
}

TEST_CASE("pool input errors name the field, the value and the rule", "[sim][pools][errors]") {
  const std::string two = R"({"pools": [{"name": "h100", "preset": "dgx-h100", "num_gpus": 24},
                                        {"name": "a100", "preset": "dgx-a100-80gb", "num_gpus": 40}]})";
  // tp 4 x dp 8 = 32 ranks a stage: pool h100 (24) cannot hold stage 0.
  CHECK_THAT(test::scenario_error(with_cluster(two)),
             Catch::Contains("parallel.pipeline_stage_pools") && Catch::Contains("straddle"));
  CHECK_THAT(test::scenario_error(with_cluster(
                 R"({"pools": [{"name": "x", "preset": "dgx-h100", "num_gpus": 64}, {"name": "x", "preset": "dgx-h100", "num_gpus": 8}]})")),
             Catch::Contains("cluster.pools[1].name") && Catch::Contains("unique"));
  CHECK_THAT(test::scenario_error(with_cluster(R"({"pools": [{"name": "x", "preset": "dgx-h100"}]})")),
             Catch::Contains("cluster.pools[0].num_gpus") && Catch::Contains("required"));
  CHECK_THAT(test::scenario_error(with_cluster(R"({"preset": "dgx-h100", "pools": [{"name": "x", "preset": "dgx-h100", "num_gpus": 64}]})")),
             Catch::Contains("cluster.preset") && Catch::Contains("each pool"));
  CHECK_THAT(test::scenario_error(with_cluster(R"({"pools": []})")), Catch::Contains("cluster.pools"));
  CHECK_THAT(test::scenario_error(with_cluster(R"({"preset": "dgx-h100", "num_gpus": 64, "nic_type": "myrinet"})")),
             Catch::Contains("cluster.nic_type") && Catch::Contains("infiniband, roce, ethernet"));
  // An explicit assignment: wrong length, out of range, over a pool's capacity, and without pools.
  const auto with_stages = [&](const std::string& cluster, const std::string& stages) {
    return std::string(R"({"model": "llama3-8b", "cluster": )") + cluster +
           R"(, "parallel": {"tp": 4, "pp": 2, "dp": 8, "pipeline_stage_pools": )" + stages +
           R"(}, "training": {"seq_length": 4096, "global_batch_size": 64}})";
  };
  const std::string fits = R"({"pools": [{"name": "h100", "preset": "dgx-h100", "num_gpus": 32},
                                         {"name": "a100", "preset": "dgx-a100-80gb", "num_gpus": 32}]})";
  CHECK_THAT(test::scenario_error(with_stages(fits, "[0]")), Catch::Contains("one pool per pipeline stage"));
  CHECK_THAT(test::scenario_error(with_stages(fits, "[0, 2]")), Catch::Contains("must index cluster.pools"));
  CHECK_THAT(test::scenario_error(with_stages(fits, "[1, 1]")),
             Catch::Contains("cluster.pools[1].num_gpus") && Catch::Contains("too small"));
  CHECK_THAT(test::scenario_error(with_stages(R"({"preset": "dgx-h100"})", "[0, 0]")), Catch::Contains("needs a mixed cluster"));
  CHECK(test::scenario_error(with_stages(fits, "[1, 0]")).empty());
}

TEST_CASE("balancing a pipeline over a fast and a slow pool reaches most of the pools' upper bound", "[sim][pools][search]") {
  // In shape (not tuned), as HETHUB (arXiv:2405.16256) and HexiScale (arXiv:2409.01143) report for good plans on
  // mixed clusters: a large fraction of the sum of what each pool does alone, and a small gap to a homogeneous
  // cluster of equal peak. Bars: the fraction at least 0.85 and the gap within 10% either way; the balanced plan
  // beats the even split the scenario would get without balancing. 16 H100 and 16 A100, Llama-3-8B, TP 8, PP 4.
  const Scenario s = test::scenario(R"({"model": "llama3-8b",
      "cluster": {"pools": [{"name": "h100", "preset": "dgx-h100", "num_gpus": 16},
                            {"name": "a100", "preset": "dgx-a100-80gb", "num_gpus": 16}]},
      "parallel": {"tp": 8, "pp": 4, "sequence_parallel": true},
      "training": {"seq_length": 8192, "micro_batch_size": 1, "global_batch_size": 32}})");
  const Prediction even = predict(s);
  const PoolBalance balanced = balance_pools(s);
  CHECK(balanced.best.report.iteration_time < 0.9 * even.report.iteration_time);
  // The fast pool's stages hold more layers than the slow pool's.
  int fast_layers = 0, slow_layers = 0;
  for (std::size_t i = 0; i < balanced.stage_pools.size(); ++i) {
    (balanced.stage_pools[i] == 0 ? fast_layers : slow_layers) += balanced.pipeline_layout[i];
  }
  CHECK(fast_layers > 2 * slow_layers);
  const PoolBounds bounds = pool_bounds(s, balanced.best);
  CHECK(bounds.fraction_of_upper_bound >= 0.85);
  CHECK(bounds.fraction_of_upper_bound <= 1.0);
  CHECK(std::abs(bounds.gap_to_homogeneous) <= 0.10);
  CHECK(bounds.homogeneous_gpu == "h100-sxm");
}

TEST_CASE("a node without NVLink runs its collectives over PCIe", "[hardware][pools][pcie]") {
  // An 8 x L40S box (nvlink_bandwidth_GB_s 0, PCIe Gen4 x16: 32 GB/s per direction, hardware/presets/gpus.json):
  // a large all-reduce over the node's 8 GPUs moves 2 (n - 1) / n of its bytes through each GPU's PCIe link at
  // the ring's efficiency: time - latency = bytes x 2 x 7/8 / (32 GB/s x nvlink_efficiency).
  const ClusterSpec box = parse_cluster(nlohmann::json::parse(R"({"name": "l40s-box", "gpu": "l40s", "gpus_per_node": 8,
      "nics_per_node": 1, "nic_bandwidth_Gbit_s": 100, "nic_type": "ethernet"})"), "cluster");
  CHECK(box.gpu.nvlink_bandwidth == 0);
  CHECK(box.gpu.intra_node_bandwidth() == Approx(32e9));
  const NetworkParams& net = default_cost_params().network;
  const NcclCollectiveModel model(box, net);
  std::vector<int> members{0, 1, 2, 3, 4, 5, 6, 7};
  const GroupPlacement node = place_members(box, members);
  const Bytes bytes = Bytes{1} << 30;
  const double t = model.time(CollectiveOp{CollectiveKind::kAllReduce, bytes, node});
  CHECK(t == Approx(static_cast<double>(bytes) * 2 * 7 / 8 / (32e9 * net.nvlink_efficiency)).epsilon(0.03));
  // Without NVLink nothing reaches past the node, and there is no NVLink SHARP.
  CHECK_THAT(test::scenario_error(R"({"model": "llama3-8b", "cluster": {"gpu": "l40s", "gpus_per_node": 8,
      "nvlink_domain_size": 16, "nics_per_node": 1, "nic_bandwidth_Gbit_s": 100}, "parallel": {"tp": 8}})"),
             Catch::Contains("cluster.nvlink_domain_size") && Catch::Contains("without NVLink"));
  CHECK_THAT(test::scenario_error(R"({"model": "llama3-8b", "cluster": {"gpu": "l40s", "gpus_per_node": 8, "nvls": true,
      "nics_per_node": 1, "nic_bandwidth_Gbit_s": 100}, "parallel": {"tp": 8}})"),
             Catch::Contains("cluster.nvls"));
}
