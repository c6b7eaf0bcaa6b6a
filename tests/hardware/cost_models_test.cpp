// The default cost models against hand calculations.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "hardware/collective_cost.h"
#include "hardware/compute_cost.h"
#include "hardware/topology.h"

using namespace orrery;

namespace {

ComputeParams simple_compute() {
  ComputeParams p;
  p.gemm_peak_fraction = 0.8;
  p.gemm_tiles = {{128, 128, 1.0}};
  p.gemm_k_half = 0.0;
  p.attention_forward_peak_fraction = 0.5;
  p.attention_backward_peak_fraction = 0.4;
  p.hbm_efficiency = 0.9;
  p.kernel_overhead = 0.0;
  return p;
}

}  // namespace

TEST_CASE("a GEMM that fills whole waves runs at peak x efficiency", "[hardware][cost]") {
  const GpuSpec a100 = parse_gpu(nlohmann::json("a100-sxm4-80gb"), "gpu");
  RooflineComputeModel model(a100, simple_compute());
  // 108 SMs x 128x128 tiles: m = 108*128, n = 128*4 -> 432 CTAs = exactly 4 waves.
  GemmShape g{108 * 128, 128 * 4, 8192, 1, DType::kFp16};
  const double expected = g.flops() / (312e12 * 0.8);
  CHECK(model.gemm(g) == Approx(expected).epsilon(1e-9));
  // One extra row of tiles adds a whole wave: 5 waves of work for 4.04 waves of FLOPs.
  GemmShape g2{108 * 128 + 1, 128 * 4, 8192, 1, DType::kFp16};
  CHECK(model.gemm(g2) == Approx(expected * 5.0 / 4.0).epsilon(1e-9));
}

TEST_CASE("memory-bound kernels run at HBM bandwidth x efficiency", "[hardware][cost]") {
  const GpuSpec h100 = parse_gpu(nlohmann::json("h100-sxm"), "gpu");
  RooflineComputeModel model(h100, simple_compute());
  ElementwiseShape e{1'000'000'000, 1'000'000'000, 0};
  CHECK(model.elementwise(e) == Approx(2e9 / (3.35e12 * 0.9)));
}

TEST_CASE("ring collectives follow the nccl-tests bus-bandwidth factors", "[hardware][cost]") {
  CHECK(bus_bandwidth_factor(CollectiveKind::kAllReduce, 8) == Approx(2.0 * 7 / 8));
  CHECK(bus_bandwidth_factor(CollectiveKind::kAllGather, 8) == Approx(7.0 / 8));
  CHECK(bus_bandwidth_factor(CollectiveKind::kReduceScatter, 4) == Approx(3.0 / 4));
  CHECK(bus_bandwidth_factor(CollectiveKind::kAllToAll, 16) == Approx(15.0 / 16));

  ClusterSpec c = parse_cluster(nlohmann::json::parse(R"({"preset": "dgx-a100-80gb", "num_gpus": 64})"), "cluster");
  NetworkParams net{0.8, 0.9, 0.0};
  RingCollectiveModel model(c, net);
  std::vector<int> node;
  for (int i = 0; i < 8; ++i) node.push_back(i);
  CollectiveOp ar{CollectiveKind::kAllReduce, 1 << 30, place_members(c, node)};
  // 8 GPUs on NVLink (300 GB/s per direction x 0.8), 14 ring steps of NVLink latency.
  const double bandwidth = 2.0 * 7 / 8 * (1 << 30) / (300e9 * 0.8);
  CHECK(model.time(ar) == Approx(bandwidth + 14 * c.nvlink_latency).epsilon(1e-9));
  // Across 8 nodes with one rank per node the ring runs at one NIC (200 Gb/s x 0.9).
  std::vector<int> across;
  for (int i = 0; i < 8; ++i) across.push_back(8 * i);
  CollectiveOp dp{CollectiveKind::kAllReduce, 1 << 30, place_members(c, across)};
  CHECK(model.bus_bandwidth(dp) == Approx(25e9 * 0.9));
  // Across domains an all-reduce takes the tree's latency when it is lower than the ring's 14 network steps:
  // 2 (0 NVLink hops + log2(8) = 3 network hops).
  const double hop = c.nic_latency + dp.placement.network_latency;
  CHECK(model.time(dp) == Approx(2.0 * 3 * hop + 2.0 * 7 / 8 * (1 << 30) / (25e9 * 0.9)).epsilon(1e-9));
  // A one-rank group costs nothing.
  CHECK(model.time(CollectiveOp{CollectiveKind::kAllReduce, 1 << 20, place_members(c, {3})}) == 0.0);
}
