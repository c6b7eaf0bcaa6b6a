// Hardware presets: every GPU and cluster the presets promise exists, parses, and every number in the preset files
// carries its source.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <fstream>

#include "hardware/cluster_spec.h"
#include "hardware/cost_params.h"
#include "test_support.h"

using namespace orrery;
using nlohmann::json;

namespace {

// Collects the paths of numbers or booleans that are not {"value": ..., "source": "..."} objects.
void unsourced(const json& node, const std::string& path, std::vector<std::string>& out) {
  if (node.is_object()) {
    if (node.contains("value")) {
      if (!node.contains("source") || !node["source"].is_string() || node["source"].get<std::string>().size() < 10) {
        out.push_back(path);
      }
      return;
    }
    for (auto it = node.begin(); it != node.end(); ++it) unsourced(*it, path + "." + it.key(), out);
  } else if (node.is_array()) {
    for (std::size_t i = 0; i < node.size(); ++i) unsourced(node[i], path + "[" + std::to_string(i) + "]", out);
  } else if (node.is_number() || node.is_boolean()) {
    out.push_back(path);
  }
}

}  // namespace

TEST_CASE("every number in the hardware preset files has a source", "[hardware][presets]") {
  for (const char* file : {"gpus.json", "clusters.json", "cost_model.json", "failures.json"}) {
    std::ifstream in(test::source_dir() / "hardware" / "presets" / file);
    std::vector<std::string> missing;
    unsourced(json::parse(in), file, missing);
    INFO(file);
    CHECK(missing.empty());
    for (const auto& m : missing) UNSCOPED_INFO(m);
  }
}

TEST_CASE("the GPU and cluster presets parse", "[hardware][presets]") {
  for (const char* gpu : {"v100-sxm2-32gb", "a100-sxm4-40gb", "a100-sxm4-80gb", "h100-sxm", "h800-sxm", "h200-sxm",
                          "b200", "gb200", "gb300", "mi300x"}) {
    INFO(gpu);
    const GpuSpec g = parse_gpu(json(gpu), "gpu");
    CHECK(g.peak_fp16 > 0);
    CHECK(g.hbm_bandwidth > 0);
    CHECK(g.nvlink_bandwidth > 0);
  }
  for (const char* cluster : {"dgx2-v100-32gb", "dgx-a100-40gb", "dgx-a100-80gb", "dgx-h100", "hgx-h800", "dgx-h200",
                              "dgx-b200", "gb200-nvl72", "gb300-nvl72", "mi300x-8"}) {
    INFO(cluster);
    CHECK_NOTHROW(parse_cluster(json(cluster), "cluster"));
  }
  // Datasheet values the validation sources use: A100 312 TFLOP/s fp16, H100 SXM 989 bf16 / 1979 fp8 (dense).
  CHECK(to_tflops(parse_gpu(json("a100-sxm4-80gb"), "gpu").peak_fp16) == Approx(312));
  CHECK(to_tflops(parse_gpu(json("h100-sxm"), "gpu").peak_bf16) == Approx(989.4).margin(0.5));
  CHECK(to_tflops(parse_gpu(json("h100-sxm"), "gpu").peak_fp8) == Approx(1978.9).margin(1));
  const ClusterSpec nvl72 = parse_cluster(json("gb200-nvl72"), "cluster");
  CHECK(nvl72.nvlink_domain_size == 72);
  CHECK(nvl72.gpus_per_node == 4);
}

TEST_CASE("cluster overrides and bad cluster input", "[hardware][presets][errors]") {
  const ClusterSpec c = parse_cluster(json::parse(R"({"preset": "dgx-h100", "num_gpus": 64, "nic_bandwidth_Gbit_s": 200})"), "cluster");
  CHECK(c.num_gpus == 64);
  CHECK(c.nic_bandwidth == Approx(25e9));
  CHECK_THROWS_WITH(parse_cluster(json::parse(R"({"preset": "dgx-h100", "nic_speed": 1})"), "cluster"),
                    Catch::Contains("cluster.nic_speed"));
  CHECK_THROWS_WITH(parse_cluster(json("dgx-h1000"), "cluster"), Catch::Contains("cluster (dgx-h1000)"));
  CHECK_THROWS_WITH(parse_cluster(json::parse(R"({"preset": "dgx-h100", "gpus_per_node": 0})"), "cluster"),
                    Catch::Contains("cluster.gpus_per_node (0)"));
  // Narrow-head attention ratios: at most 1, positive, known keys only.
  const auto gpu_error = [](const char* attention) {
    try {
      parse_gpu(json::parse(std::string(R"({"preset": "h100-sxm", "attention_peak_fraction": )") + attention + "}"), "gpu");
    } catch (const std::exception& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  CHECK_THAT(gpu_error(R"({"forward": 0.5, "head_dim_64": {"forward": 1.5}})"),
             Catch::Contains("gpu.attention_peak_fraction.head_dim_64.forward (1.5) must lie in [0.01, 1]"));
  // A share of the peak far below any measured kernel (bounds::kAttentionPeakFraction).
  CHECK_THAT(gpu_error(R"({"backward": 1e-300})"),
             Catch::Contains("gpu.attention_peak_fraction.backward (1e-300) must lie in [0.01, 1]"));
  CHECK_THAT(gpu_error(R"({"head_dim_64": {"forward": -0.5}})"), Catch::Contains("head_dim_64.forward"));
  CHECK_THAT(gpu_error(R"({"head_dim_64": {"fwd": 0.5}})"), Catch::Contains("head_dim_64.fwd"));
  CHECK(gpu_error(R"({"forward": 0.5, "head_dim_64": {"forward": 0.7, "backward": 0.9}})").empty());
}
