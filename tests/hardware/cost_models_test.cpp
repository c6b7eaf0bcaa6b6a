// The default cost models against hand calculations.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "hardware/collective_cost.h"
#include "hardware/compute_cost.h"
#include "hardware/topology.h"

#include <cmath>
#include <string>

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
  p.launch_gap = 0.0;
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

TEST_CASE("a long GEMM on a power-limited GPU runs at the clock its board limit sustains", "[hardware][cost]") {
  // B200: 1580 MHz under dense GEMM load at its 1000 W limit (flashinfer PR #2899), against the 1856 MHz its
  // 2250 TFLOP/s BF16 peak is computed at: a GEMM of 148 x 4 whole tiles runs at 2250 x 0.8 x 1580 / 1856.
  const GpuSpec b200 = parse_gpu(nlohmann::json("b200"), "gpu");
  CHECK(b200.sustained_clock_fraction() == Approx(1580.0 / 1856.0));
  GemmShape g{148 * 128, 128 * 4, 8192, 1, DType::kBf16};
  CHECK(RooflineComputeModel(b200, simple_compute()).gemm(g) == Approx(g.flops() / (2250e12 * 0.8 * 1580.0 / 1856.0)));
  // H200 at a 500 W limit instead of 700 W: dynamic power (above the 78 W idle) goes as f^3, so the clock falls
  // from the measured 1765 MHz to 1765 ((500 - 78) / (700 - 78))^(1/3) = 1550.9 MHz.
  const GpuSpec h500 = parse_gpu(nlohmann::json::parse(R"({"preset": "h200-sxm", "tdp_W": 500})"), "gpu");
  const double clock = 1765.0 * std::cbrt((500.0 - 78.0) / (700.0 - 78.0));
  CHECK(clock == Approx(1550.9).epsilon(1e-4));
  CHECK(h500.sustained_clock_fraction() == Approx(clock / 1830.0));
  // At 1000 W the clock would rise past the 1830 MHz of the datasheet peak, which stays the ceiling.
  const GpuSpec h1000 = parse_gpu(nlohmann::json::parse(R"({"preset": "h200-sxm", "tdp_W": 1000})"), "gpu");
  CHECK(h1000.sustained_clock_fraction() == 1.0);
  // Below a quarter of the measured limit (nvidia-smi's floor on an H100 SXM is 200 of 700 W) a cap is refused.
  CHECK_THROWS_WITH(parse_gpu(nlohmann::json::parse(R"({"preset": "h200-sxm", "tdp_W": 150})"), "gpu"),
                    Catch::Contains("gpu.tdp_W (150)") && Catch::Contains("at least a quarter"));
  // Without a measurement (A100) the datasheet peak stands; an override of null removes one.
  CHECK(parse_gpu(nlohmann::json("a100-sxm4-80gb"), "gpu").sustained_clock_fraction() == 1.0);
  CHECK(parse_gpu(nlohmann::json::parse(R"({"preset": "b200", "sustained_gemm_clock": null})"), "gpu")
            .sustained_clock_fraction() == 1.0);
  // A measured clock above the GPU's maximum is refused with its field.
  CHECK_THROWS_WITH(parse_gpu(nlohmann::json::parse(R"({"preset": "b200", "sustained_gemm_clock": {"MHz": 2500}})"), "gpu"),
                    Catch::Contains("gpu.sustained_gemm_clock.MHz (2500)"));
}

TEST_CASE("attention with few heads per GPU leaves SMs idle: its waves, against the measured grid's", "[hardware][cost]") {
  // H100, 132 SMs. The measured rate is FlashAttention-3's grid: 16k tokens x 16 heads = 2048 tiles of 128 rows,
  // 15.5 waves, 2048 / (16 x 132) = 0.970 of the SMs busy. One 2048-token sequence with 2 heads per GPU (16 heads
  // at TP 8) is 2 x 16 = 32 tiles: one wave on 32 of 132 SMs, 0.242 busy, so 0.970 / 0.242 = 4.0x the time per FLOP.
  const GpuSpec h100 = parse_gpu(nlohmann::json("h100-sxm"), "gpu");
  RooflineComputeModel model(h100, simple_compute());
  AttentionShape full{.batch = 4, .heads = 16, .kv_heads = 16, .q_len = 4096, .kv_len = 4096, .head_dim_qk = 128,
                      .head_dim_v = 128};
  AttentionShape starved{.batch = 1, .heads = 2, .kv_heads = 2, .q_len = 2048, .kv_len = 2048, .head_dim_qk = 128,
                         .head_dim_v = 128};
  CHECK(model.attention_occupancy(full) == 1.0);
  const double reference = 2048.0 / (16 * 132), small = 32.0 / 132;
  CHECK(model.attention_occupancy(starved) == Approx(small / reference));
  const double per_flop_full = model.attention(full) / full.executed_flops();
  const double per_flop_starved = model.attention(starved) / starved.executed_flops();
  CHECK(per_flop_starved / per_flop_full == Approx(reference / small).epsilon(1e-6));
  CHECK(reference / small == Approx(4.0).epsilon(0.01));
  // The backward runs over key tiles: a 4096-query block against 128 keys (a CP step) has 1 key tile per head.
  AttentionShape keys{.batch = 1, .heads = 16, .kv_heads = 16, .q_len = 4096, .kv_len = 128, .head_dim_qk = 128,
                      .head_dim_v = 128, .causal = false, .backward = true};
  CHECK(model.attention_occupancy(keys) == Approx((16.0 / 132) / reference));
}

TEST_CASE("memory-bound kernels run at HBM bandwidth x efficiency", "[hardware][cost]") {
  const GpuSpec h100 = parse_gpu(nlohmann::json("h100-sxm"), "gpu");
  RooflineComputeModel model(h100, simple_compute());
  ElementwiseShape e{1'000'000'000, 1'000'000'000, 0};
  CHECK(model.elementwise(e) == Approx(2e9 / (3.35e12 * 0.9)));
}

TEST_CASE("narrow attention heads run at the rate FlashAttention-3 measured for cuDNN", "[hardware][cost]") {
  // H100 preset: head dim 64 at 0.67 of the head-dim-128 rate forward and 0.84 backward (arXiv:2407.08608 Figs. 5
  // and 6: 408/609 and 417/499 TFLOPS at 4k); 96 halfway between. Long sequences keep the kernels compute-bound.
  const GpuSpec h100 = parse_gpu(nlohmann::json("h100-sxm"), "gpu");
  ComputeParams p = simple_compute();
  RooflineComputeModel model(h100, p);
  const auto rate = [&](std::int64_t d, bool backward) {
    AttentionShape a{4, 32, 8, 8192, 8192, d, d, true, 0, false, backward};
    return a.executed_flops() / (model.attention(a) - p.launch_gap);
  };
  for (bool backward : {false, true}) {
    const double r64 = backward ? 0.84 : 0.67;
    INFO((backward ? "backward" : "forward"));
    CHECK(rate(64, backward) / rate(128, backward) == Approx(r64));
    CHECK(rate(96, backward) / rate(128, backward) == Approx((r64 + 1.0) / 2));
    CHECK(rate(32, backward) / rate(128, backward) == Approx(r64));
    CHECK(rate(256, backward) == Approx(rate(128, backward)));
  }
  // A GPU without the measurement (A100) prices every head dim at the same rate.
  RooflineComputeModel a100(parse_gpu(nlohmann::json("a100-sxm4-80gb"), "gpu"), p);
  AttentionShape narrow{4, 32, 8, 8192, 8192, 64, 64, true, 0, false, false};
  AttentionShape wide{4, 32, 8, 8192, 8192, 128, 128, true, 0, false, false};
  CHECK(narrow.executed_flops() / a100.attention(narrow) == Approx(wide.executed_flops() / a100.attention(wide)));
}

TEST_CASE("ring collectives follow the nccl-tests bus-bandwidth factors", "[hardware][cost]") {
  CHECK(bus_bandwidth_factor(CollectiveKind::kAllReduce, 8) == Approx(2.0 * 7 / 8));
  CHECK(bus_bandwidth_factor(CollectiveKind::kAllGather, 8) == Approx(7.0 / 8));
  CHECK(bus_bandwidth_factor(CollectiveKind::kReduceScatter, 4) == Approx(3.0 / 4));
  CHECK(bus_bandwidth_factor(CollectiveKind::kAllToAll, 16) == Approx(15.0 / 16));

  ClusterSpec c = parse_cluster(nlohmann::json::parse(R"({"preset": "dgx-a100-80gb", "num_gpus": 64})"), "cluster");
  NetworkParams net{.nvlink_efficiency = 0.8, .nvls_efficiency = 0.6, .nic_efficiency = 0.9, .pipeline_fill = 20e-6};
  NcclCollectiveModel model(c, net);
  std::vector<int> node;
  for (int i = 0; i < 8; ++i) node.push_back(i);
  // (A 20 us pipeline fill with no half size: the whole fill at every size.)
  // 1 GiB all-reduce on 8 A100s: NCCL's ring with the Simple protocol wins. Latency: fill 20 us + base 8.4 us +
  // 14 ring steps x 3.4 us (NCCL tuning.cc); bandwidth 300 GB/s per direction x 0.8; volume 2 (7/8) x 1 GiB.
  CollectiveOp ar{CollectiveKind::kAllReduce, 1 << 30, place_members(c, node)};
  const CollectivePlan plan = model.plan(ar);
  CHECK(std::string(plan.algorithm) == "ring");
  CHECK(std::string(plan.protocol) == "simple");
  const double latency = 20e-6 + 8.4e-6 + 14 * 3.4e-6;
  CHECK(plan.time == Approx(latency + 2.0 * 7 / 8 * (1 << 30) / (300e9 * 0.8)).epsilon(1e-9));
  // A small all-reduce takes the LL protocol: latency 20 + 6.6 + 14 x 0.6 us, on one of NCCL's 24 channels: its
  // share of 240 GB/s over 12 searched paths, halved by LL, 10 GB/s (tests/hardware/nccl_protocols_test.cpp).
  CollectiveOp small{CollectiveKind::kAllReduce, 4096, place_members(c, node)};
  CHECK(std::string(model.plan(small).protocol) == "ll");
  CHECK(model.time(small) == Approx(20e-6 + 6.6e-6 + 14 * 0.6e-6 + 2.0 * 7 / 8 * 4096 / 10e9));
  // Across 8 nodes with one rank per node the ring runs at one NIC (200 Gb/s x 0.9) and the tree, two crossings of
  // the network per byte beyond two nodes, at half of that; the ring wins for a large message.
  std::vector<int> across;
  for (int i = 0; i < 8; ++i) across.push_back(8 * i);
  CollectiveOp dp{CollectiveKind::kAllReduce, 1 << 30, place_members(c, across)};
  CHECK(model.plan(dp).bus_bandwidth == Approx(2.0 * 7 / 8 * (1 << 30) / model.time(dp)));
  CHECK(std::string(model.plan(dp).algorithm) == "ring");
  CHECK(model.plan(dp).bus_bandwidth < 25e9 * 0.9);
  CHECK(model.plan(dp).bus_bandwidth > 0.9 * 25e9 * 0.9);
  // A one-rank group costs nothing.
  CHECK(model.time(CollectiveOp{CollectiveKind::kAllReduce, 1 << 20, place_members(c, {3})}) == 0.0);
}

TEST_CASE("an all-to-all split 12 + 4 across nodes waits for the 4, who send 12/15 of their bytes across",
          "[hardware][cost]") {
  ClusterSpec c = parse_cluster(nlohmann::json::parse(R"({"preset": "dgx-h100", "num_gpus": 64})"), "cluster");
  NetworkParams net{.nvlink_efficiency = 0.8, .nvls_efficiency = 0.6, .nic_efficiency = 0.9, .pipeline_fill = 20e-6};
  NcclCollectiveModel model(c, net);
  GroupPlacement even;
  even.size = 16, even.ranks_per_domain = 8, even.fewest_per_domain = 8, even.domains = 2, even.ranks_per_node = 8;
  even.tier = Tier::kLeaf;
  GroupPlacement uneven = even;
  uneven.ranks_per_domain = 12, uneven.fewest_per_domain = 4, uneven.ranks_per_node = 12;
  const Bytes bytes = 1 << 28;
  const double t_even = model.time(CollectiveOp{CollectiveKind::kAllToAll, bytes, even});
  const double t_uneven = model.time(CollectiveOp{CollectiveKind::kAllToAll, bytes, uneven});
  CHECK(t_uneven > t_even);
  // Large messages are bandwidth-bound: the time ratio is the ratio of off-node shares, (16 - 4) / (16 - 8).
  CHECK(t_uneven / t_even == Approx(12.0 / 8.0).epsilon(0.02));
}

TEST_CASE("NVLS lifts intra-node all-reduce bandwidth on H100 above the ring", "[hardware][cost]") {
  ClusterSpec h = parse_cluster(nlohmann::json::parse(R"({"preset": "dgx-h100", "num_gpus": 8})"), "cluster");
  std::vector<int> node{0, 1, 2, 3, 4, 5, 6, 7};
  NcclCollectiveModel model(h, NetworkParams{.nvlink_efficiency = 0.8, .nvls_efficiency = 0.62, .nic_efficiency = 0.9, .pipeline_fill = 20e-6});
  const CollectivePlan plan = model.plan(CollectiveOp{CollectiveKind::kAllReduce, 8LL << 30, place_members(h, node)});
  CHECK(std::string(plan.algorithm) == "nvls");
  // Each byte into the switch and back once at 450 GB/s x 0.62: bus bandwidth -> 2 (7/8) x 279 GB/s.
  CHECK(plan.bus_bandwidth == Approx(2.0 * 7 / 8 * 450e9 * 0.62).epsilon(0.01));
}
