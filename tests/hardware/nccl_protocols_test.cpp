// NCCL's protocol, algorithm and channel choice by message size (hardware/nccl_tuning.h): the numbers are NCCL
// v2.23.4-1's (src/graph/tuning.cc, src/enqueue.cc, src/graph/search.cc), recomputed here by hand.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <cmath>
#include <string>
#include <vector>

#include "calibrate/collective_fit.h"
#include "hardware/collective_cost.h"
#include "hardware/cost_params.h"
#include "hardware/nccl_tuning.h"
#include "hardware/topology.h"
#include "test_support.h"

using namespace orrery;

namespace {

ClusterSpec cluster(const char* preset, int gpus) {
  return parse_cluster(nlohmann::json{{"preset", preset}, {"num_gpus", gpus}}, "cluster");
}

GroupPlacement one_node(const ClusterSpec& c) { return place_members(c, {0, 1, 2, 3, 4, 5, 6, 7}); }

// No pipeline fill, no call cost: NCCL's own tuner terms alone. Rings at 300 GB/s x 0.8 = 240 GB/s on A100.
const NetworkParams kBare{.nvlink_efficiency = 0.8, .nvls_efficiency = 0.6, .nic_efficiency = 0.9};

}  // namespace

TEST_CASE("NCCL's channel count: the ring search, doubled twice, and fewer channels for small calls",
          "[hardware][cost][nccl]") {
  // search.cc @ v2.23.4-1: A100 12 links x 20 GB/s = 240 holds 6 channels at 40 GB/s; H100 18 x 20.6 = 370.8
  // holds 6 at 60 (sm90 speeds); both doubled by ncclTopoDupChannels and again by connect.cc: 24. B200 (v2.25.1-1,
  // 18 x 40 = 720): 12 at 60, doubled to the 16 a search may hold, then to 32.
  CHECK(nccl::channels(cluster("dgx-a100-80gb", 8).gpu) == 24);
  CHECK(nccl::channels(cluster("dgx-h100", 8).gpu) == 24);
  CHECK(nccl::channels(cluster("dgx-b200", 8).gpu) == 32);
  // enqueue.cc @ v2.23.4-1: a ring LL call drops channels while bytes < nc x 512 threads x 8 x ranks; Simple while
  // bytes < nc x 512 x 64; LL128 while bytes < nc x 640 x 8. With 8 ranks: 32 KiB a channel for LL and Simple.
  CHECK(nccl::channels_for(nccl::kLL, true, 8, 64 << 10, 24) == 2);
  CHECK(nccl::channels_for(nccl::kSimple, true, 8, 64 << 10, 24) == 2);
  CHECK(nccl::channels_for(nccl::kLL128, true, 8, 64 << 10, 24) == 12);  // 65536 / 5120 = 12.8
  CHECK(nccl::channels_for(nccl::kLL, true, 8, 4096, 24) == 1);
  CHECK(nccl::channels_for(nccl::kSimple, true, 8, 1 << 20, 24) == 24);
  // A tree's LL threshold is not scaled by the ranks: 4 KiB a channel.
  CHECK(nccl::channels_for(nccl::kLL, false, 16, 64 << 10, 24) == 16);
}

TEST_CASE("a 4 KiB all-reduce on 8 A100s runs ring LL on one channel at NCCL's LL latency", "[hardware][cost][nccl]") {
  const ClusterSpec c = cluster("dgx-a100-80gb", 8);
  const CollectivePlan plan = NcclCollectiveModel(c, kBare).plan(CollectiveOp{CollectiveKind::kAllReduce, 4096, one_node(c)});
  CHECK(std::string(plan.algorithm) == "ring");
  CHECK(std::string(plan.protocol) == "ll");
  // Latency: baseLat[Ring][LL] 6.6 us + 2 (8 - 1) steps x hwLat[NVLINK][Ring][LL] 0.6 us (tuning.cc @ v2.23.4-1).
  const double latency = 6.6e-6 + 14 * 0.6e-6;
  CHECK(plan.latency == Approx(latency).epsilon(1e-12));
  // Bandwidth: one channel of 24 (4096 < 32 KiB), its share of the ring's 240 GB/s over the 12 searched paths
  // (20 GB/s), LL's half of that: 10 GB/s, below llMaxBws[Ampere][1 node] = 87.7 GB/s. Volume 2 (7/8) x 4096.
  CHECK(plan.time == Approx(latency + 2.0 * 7 / 8 * 4096 / 10e9).epsilon(1e-9));
}

TEST_CASE("the protocol switch points on 8 A100s follow NCCL's tuning order LL, LL128, Simple",
          "[hardware][cost][nccl]") {
  const ClusterSpec c = cluster("dgx-a100-80gb", 8);
  const NcclCollectiveModel model(c, kBare);
  // On all channels (from 768 KiB): LL 15 us + V / min(87.7, 0.5 x 240) GB/s; LL128 14 + 14 x 1.9 = 40.6 us +
  // V / min(0.92 x 240, 12 x 20 perChMaxRingLL128Bws) = 220.8 GB/s; Simple 8.4 + 14 x 3.4 = 56 us + V / 240 GB/s,
  // V = 1.75 x bytes. LL = LL128 at 25.6 us / (1.75 (1/87.7 - 1/220.8) ns/B) = 2.13 MB; LL128 = Simple at
  // 15.4 us / (1.75 (1/220.8 - 1/240) ns/B) = 24.3 MB.
  const double ll_to_ll128 = 25.6e-6 / (1.75 * (1 / 87.7e9 - 1 / 220.8e9));
  const double ll128_to_simple = 15.4e-6 / (1.75 * (1 / 220.8e9 - 1 / 240e9));
  CHECK(ll_to_ll128 == Approx(2.13e6).epsilon(0.01));
  CHECK(ll128_to_simple == Approx(24.3e6).epsilon(0.01));
  std::vector<std::string> order;
  for (Bytes bytes = 1024; bytes <= (1LL << 30); bytes *= 2) {
    const CollectivePlan plan = model.plan(CollectiveOp{CollectiveKind::kAllReduce, bytes, one_node(c)});
    const double size = static_cast<double>(bytes);
    const std::string expected = size < ll_to_ll128 ? "ll" : size < ll128_to_simple ? "ll128" : "simple";
    INFO(bytes << " bytes: " << plan.protocol);
    CHECK(std::string(plan.protocol) == expected);
    if (order.empty() || order.back() != plan.protocol) order.emplace_back(plan.protocol);
  }
  CHECK(order == std::vector<std::string>{"ll", "ll128", "simple"});
}

TEST_CASE("a multi-node ring Simple all-reduce pays NCCL's 1.4x plateau latency", "[hardware][cost][nccl]") {
  // ncclTopoGetAlgoTime @ v2.23.4-1: across nodes, >= 64 B per channel and rank, cc >= 80: latency x 1.4. Four
  // A100 nodes, 32 ranks: 2 x 31 = 62 steps, 6 across the network. NVLink steps cost max(3.4, 3 x 1 us net
  // overhead), network steps hwLat[NET][Ring][Simple] 14 us + twice the fabric's latency (Simple's flush).
  const ClusterSpec c = cluster("dgx-a100-80gb", 32);
  std::vector<int> members;
  for (int r = 0; r < 32; ++r) members.push_back(r);
  const GroupPlacement p = place_members(c, members);
  const Seconds expected = 1.4 * (from_us(8.4 + 56 * 3.4 + 6 * 14.0) + 6 * 2.0 * p.network_latency);
  // At 8 GiB the ring (NIC-bound, 8 x 25 GB/s x 0.9 = 180 GB/s bus) beats the tree, which crosses the network
  // twice beyond two nodes (90 GB/s algorithm bandwidth, 174 GB/s as bus bandwidth).
  const CollectivePlan plan = NcclCollectiveModel(c, kBare).plan(CollectiveOp{CollectiveKind::kAllReduce, 8LL << 30, p});
  REQUIRE(std::string(plan.algorithm) == "ring");
  CHECK(std::string(plan.protocol) == "simple");
  CHECK(plan.latency == Approx(expected).epsilon(1e-9));
}

TEST_CASE("at 1 MB the predicted bus bandwidth is near the committed nccl-tests rows", "[hardware][cost][nccl][accuracy]") {
  // Defaults (hardware/presets/cost_model.json, fitted by `orrery fit collectives`), every log's 1 MB row.
  const auto samples = load_collective_samples(test::data_dir() / "nccl-tests-logs" / "manifest.json", 1 << 20, 1 << 20);
  const NetworkParams& params = default_cost_params().network;
  int checked = 0;
  for (const BusBandwidthSample& s : samples) {
    if (s.op.bytes != (1 << 20)) continue;
    const double error = 100.0 * (predicted_bus_bandwidth(s, params) / s.measured - 1.0);
    WARN(s.log << " at 1 MB: " << error << "%");
    // tests/data/nccl-tests-logs/02-superbench-a100-1x8-allreduce.txt, row "1048576 262144 float sum 74.78 14.02
    // 24.54": 24.54 GB/s bus bandwidth (one process driving 8 GPUs; the harness's launch cost is read off its
    // smallest row).
    if (s.log == "02-superbench-a100-1x8-allreduce.txt") {
      CHECK(s.measured == Approx(24.54e9));
      CHECK(std::fabs(error) <= 20.0);  // +14.7% with the defaults
      ++checked;
    }
  }
  CHECK(checked == 1);
}
