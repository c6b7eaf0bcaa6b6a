// Calibrated profiles: parsing the versioned format, and the profiled compute model against the committed test
// grid (tests/data/profiles/constructed-h100-grid.json; constructed, not measured, until a GPU session records one):
// at a measured shape the time is the measurement, between shapes it lies between the neighbours, outside the
// table the default model prices the op and predict's report says so.
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include "hardware/gpu_profile.h"
#include "hardware/profiled_compute.h"
#include "test_support.h"

using namespace orrery;

namespace {

GpuProfile grid() { return load_gpu_profile((test::data_dir() / "profiles" / "constructed-h100-grid.json").string()); }

// The grid's own rule, for checking measured points independently of the file reader.
double grid_time(double m, double n, double k) { return 2 * m * n * k / 700e12 + 8e-6; }

ProfiledComputeModel model() {
  const Scenario s = test::scenario(R"({"model": "llama3-8b", "cluster": {"preset": "dgx-h100", "num_gpus": 1}})");
  return ProfiledComputeModel(grid(), std::make_unique<RooflineComputeModel>(s.cluster.gpu, default_cost_params().compute));
}

}  // namespace

TEST_CASE("a measured GEMM shape costs its measurement", "[hardware][profile]") {
  const ProfiledComputeModel pm = model();
  for (auto [m, n, k] : {std::tuple{1024, 1024, 1024}, std::tuple{4096, 8192, 2048}, std::tuple{8192, 8192, 8192}}) {
    INFO(m << " x " << n << " x " << k);
    CHECK(pm.gemm(GemmShape{m, n, k, 1, DType::kBf16}) == Approx(grid_time(m, n, k)).epsilon(1e-6));
  }
  // A grouped GEMM is `batch` kernels of the measured shape.
  CHECK(pm.gemm(GemmShape{2048, 2048, 2048, 4, DType::kBf16, true}) == Approx(4 * grid_time(2048, 2048, 2048)).epsilon(1e-6));
  CHECK(pm.uncovered_gemms() == 0);
}

TEST_CASE("between measured shapes the time lies between the neighbours", "[hardware][profile]") {
  const ProfiledComputeModel pm = model();
  const double lo = grid_time(4096, 4096, 2048), hi = grid_time(4096, 4096, 4096);
  for (std::int64_t k : {2100, 3000, 4000}) {
    const double t = pm.gemm(GemmShape{4096, 4096, k, 1, DType::kBf16});
    CHECK(t > lo);
    CHECK(t < hi);
  }
  // Log-space: halfway in log k is the geometric mean of the neighbours.
  CHECK(pm.gemm(GemmShape{4096, 4096, 2896, 1, DType::kBf16}) == Approx(std::sqrt(lo * hi)).epsilon(1e-3));
  // Inside the cell on all three axes, still within the cell's corner times.
  const double t = pm.gemm(GemmShape{3000, 5000, 1500, 1, DType::kBf16});
  CHECK(t > grid_time(2048, 4096, 1024));
  CHECK(t < grid_time(4096, 8192, 2048));
  // Copies: between the 16 MiB and 256 MiB samples.
  const double c = pm.elementwise(ElementwiseShape{1 << 25, 1 << 25, 0});
  CHECK(c > (1 << 24) / 3.0e12 + 3e-6);
  CHECK(c < (1 << 28) / 3.0e12 + 3e-6);
}

TEST_CASE("outside the profile the default model prices the op and the report says so", "[hardware][profile]") {
  const ProfiledComputeModel pm = model();
  const Scenario s = test::scenario(R"({"model": "llama3-8b", "cluster": {"preset": "dgx-h100", "num_gpus": 1}})");
  const RooflineComputeModel roofline(s.cluster.gpu, default_cost_params().compute);
  const GemmShape big{16384, 4096, 4096, 1, DType::kBf16};  // m beyond the grid
  CHECK(pm.gemm(big) == roofline.gemm(big));
  const GemmShape fp8{4096, 4096, 4096, 1, DType::kFp8};  // no FP8 samples
  CHECK(pm.gemm(fp8) == roofline.gemm(fp8));
  CHECK(pm.uncovered_gemms() == 2);

  // A single-GPU step: measured where the shapes match, the default model (with a warning) elsewhere.
  CostParams params = default_cost_params();
  params.profile = std::make_shared<const GpuProfile>(grid());
  PredictOptions o;
  o.params = &params;
  const Scenario step = test::scenario(R"({"model": {"preset": "llama3-8b", "num_hidden_layers": 2},
      "cluster": {"preset": "dgx-h100", "num_gpus": 1}, "training": {"seq_length": 2048, "global_batch_size": 1}})");
  const Prediction p = predict(step, o);
  const Prediction plain = predict(step);
  int measured = 0;
  const Program& prog = p.graph.programs[0];
  for (std::size_t i = 0; i < prog.ops.size(); ++i) {
    const auto* g = std::get_if<GemmShape>(&prog.ops[i]);
    // The QKV projection (2048 x 6144 x 4096) is off the grid's n values but inside it: interpolated. The
    // attention output projection 2048 x 4096 x 4096 is a grid point: measured.
    if (g && g->m == 2048 && g->n == 4096 && g->k == 4096) {
      CHECK(p.durations.op_seconds[0][i] == Approx(grid_time(2048, 4096, 4096)).epsilon(1e-6));
      ++measured;
    }
  }
  CHECK(measured > 0);
  CHECK(p.report.iteration_time != plain.report.iteration_time);
  bool warned = false;
  for (const std::string& w : p.report.warnings) warned = warned || w.find("does not cover") != std::string::npos;
  CHECK(warned);  // the LM head (2048 x 128256 x 4096) is outside the grid
}

TEST_CASE("bad profiles are refused with the field named", "[hardware][profile][errors]") {
  const auto error = [](const char* text) {
    try {
      parse_gpu_profile(nlohmann::json::parse(text), "p.json");
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  CHECK_THAT(error(R"({"format": "x", "version": 1, "gpu": "g"})"), Catch::Contains("p.json.format"));
  CHECK_THAT(error(R"({"format": "orrery-gpu-profile", "version": 2, "gpu": "g"})"), Catch::Contains("p.json.version (2)"));
  CHECK_THAT(error(R"({"format": "orrery-gpu-profile", "version": 1, "gpu": "g",
                      "gemm": [{"m": 1, "n": 1, "k": 1, "dtype": "bf16", "seconds": -1}]})"),
             Catch::Contains("p.json.gemm[0].seconds"));
  CHECK_THAT(error(R"({"format": "orrery-gpu-profile", "version": 1, "gpu": "g",
                      "gemm": [{"m": 1, "n": 1, "k": 1, "dtype": "int4", "seconds": 1}]})"),
             Catch::Contains("int4"));
}

TEST_CASE("a profile written back reads the same", "[hardware][profile]") {
  GpuProfile p = grid();
  p.collectives.push_back({CollectiveKind::kAllGather, 16, 2, 1 << 26, 1.5e-3, "log.txt"});
  const GpuProfile back = parse_gpu_profile(gpu_profile_json(p), "written");
  CHECK(back.gpu == p.gpu);
  REQUIRE(back.gemm.size() == p.gemm.size());
  CHECK(back.gemm[5].seconds == p.gemm[5].seconds);
  CHECK(back.gemm[5].k == p.gemm[5].k);
  REQUIRE(back.memory.size() == p.memory.size());
  REQUIRE(back.collectives.size() == 1);
  CHECK(back.collectives[0].kind == CollectiveKind::kAllGather);
  CHECK(back.collectives[0].nodes == 2);
  CHECK(back.collectives[0].seconds == 1.5e-3);
}
