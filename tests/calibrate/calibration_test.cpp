// The CPU side of GPU calibration: the plan file orrery-calibrate reads, the raw file it writes, the fit that turns
// raw repetitions into a profile (medians, least-squares rates), the calibration plan drawn from sim/'s lowering,
// attention tables in the profiled model, and a profile named by the cluster.
#include <catch2/catch.hpp>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "calibrate/bench/bench_plan.h"
#include "calibrate/bench/raw_profile_writer.h"
#include "calibrate/calibration_plan.h"
#include "calibrate/raw_profile.h"
#include "hardware/profiled_compute.h"
#include "sim/predict.h"
#include "test_support.h"

using namespace orrery;

namespace {

std::string plan_error(const std::string& text) {
  std::istringstream in(text);
  try {
    bench::parse_bench_plan(in, "p.plan");
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "";
}

// A raw file as orrery-calibrate writes it, with times from a known law so the fit can be checked by hand:
// GEMMs t = 5 us + 2mnk / 700 TFLOP/s, copies t = 2 us + bytes / 4 TB/s; each benchmark's repetitions are the law's
// value three times, one 10% faster and one 3x slower outlier (median = the law's value).
bench::RawProfile recorded() {
  bench::RawProfile r;
  r.gpu = "NVIDIA H200";
  r.compute_capability = "9.0";
  r.sm_count = 132;
  r.driver = "13.0";
  r.cuda_runtime = "13.0";
  r.cublaslt = "130100";
  r.nccl = "2.28.3";
  r.date = "2026-11-30T12:00:00Z";
  r.host = "test \"host\"\n";
  r.warmup = 5;
  r.repetitions = 5;
  const auto reps = [](double t) { return std::vector<double>{t, 0.9 * t, t, 3 * t, t}; };
  for (std::int64_t m : {1024, 4096, 16384}) {
    for (std::int64_t nk : {2048, 8192}) {
      const double t = 5e-6 + 2.0 * static_cast<double>(m * nk) * static_cast<double>(nk) / 700e12;
      r.gemm.push_back({bench::PlanGemm{m, nk, nk, "bf16"}, "TN", 32 << 20, reps(t)});
    }
  }
  for (std::int64_t bytes = std::int64_t{1} << 20; bytes <= (std::int64_t{1} << 32); bytes *= 16) {
    r.memory.push_back({bench::PlanMemory{"copy", bytes}, reps(2e-6 + static_cast<double>(bytes) / 4e12)});
  }
  r.launch_kernel_s = {2e-6, 2.2e-6, 1.9e-6};
  r.launch_host_s = {3e-6, 3e-6, 4e-6};
  r.collectives.push_back({bench::PlanCollective{"all_reduce", 1 << 20}, 1, 1, reps(8e-6)});
  return r;
}

GpuProfile fit(const bench::RawProfile& raw, const nlohmann::json* attention = nullptr) {
  return fit_raw_profile(nlohmann::json::parse(bench::raw_profile_json(raw)), "raw.json", attention, "att.json");
}

std::string fit_error(const std::string& raw_text) {
  try {
    fit_raw_profile(nlohmann::json::parse(raw_text), "raw.json", nullptr, "");
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

nlohmann::json attention_raw() {
  // Per (batch x heads), a 4096-token causal call takes 10 us forward and 25 us backward; 8192 tokens 4x that
  // (quadratic in the sequence length).
  nlohmann::json samples = nlohmann::json::array();
  for (auto [seq, unit] : {std::pair{4096, 10e-6}, std::pair{8192, 40e-6}}) {
    const int batch = 32768 / seq;
    const double f = unit * batch * 32, b = 2.5 * f;
    samples.push_back({{"batch", batch}, {"heads", 32}, {"kv_heads", 8}, {"seq", seq}, {"head_dim", 128},
                       {"causal", true}, {"dtype", "bf16"}, {"forward_s", {f, f, 2 * f}}, {"backward_s", {b, b}}});
  }
  return {{"format", "orrery-attention-raw"}, {"version", 1}, {"gpu", "NVIDIA H200"}, {"samples", samples}};
}

}  // namespace

TEST_CASE("the calibration plan file reads back what it wrote and names bad entries", "[calibrate][plan]") {
  bench::BenchPlan p;
  p.gemm = {{4096, 3072, 2048, "bf16"}, {8192, 8192, 8192, "fp8"}};
  p.memory = {{"copy", 1 << 20}, {"reduction", 1 << 30}};
  p.collectives = {{"all_gather", 1024}};
  p.attention = {{4, 32, 8, 4096, 128, true, "bf16"}};
  p.launch = true;
  std::istringstream in("# a comment\n\n" + bench::format_bench_plan(p));
  const bench::BenchPlan back = bench::parse_bench_plan(in, "p.plan");
  CHECK(back.gemm == p.gemm);
  CHECK(back.memory == p.memory);
  CHECK(back.collectives == p.collectives);
  CHECK(back.attention == p.attention);
  CHECK(back.launch);

  CHECK(plan_error("gemm 1 2 x bf16\n") == "p.plan:1: K 'x' must be a whole number in 1..2^40");
  CHECK(plan_error("\ngemm 1 2 3 fp64\n") == "p.plan:2: dtype 'fp64' must be bf16, fp16, tf32 or fp8");
  CHECK(plan_error("memory copy 0\n") == "p.plan:1: bytes '0' must be a whole number in 1..2^40");
  CHECK(plan_error("collective broadcast 8\n").find("collective 'broadcast' must be") != std::string::npos);
  CHECK(plan_error("attention 1 32 6 4096 128 causal bf16\n") == "p.plan:1: KVH 6 must divide H 32");
  CHECK(plan_error("gemm 1 2 3 bf16 extra\n") == "p.plan:1: unexpected 'extra' at the end of the line");
  CHECK(plan_error("conv 1\n").find("unknown entry 'conv'") != std::string::npos);
}

TEST_CASE("the calibration plan holds the GEMM shapes sim/ lowers, and the committed plan is current",
          "[calibrate][plan]") {
  const Scenario s = load_scenario(test::source_dir() / "scenarios" / "measured" / "h200-llama-1b.json");
  CalibrationPlanOptions no_grid;
  no_grid.grid = false;
  const bench::BenchPlan plan = calibration_plan({s}, no_grid);
  // Llama-3.2-1B in eager PyTorch, micro-batch 4 x 4096 tokens: q_proj is 16384 tokens x 32 heads x 64 x hidden
  // 2048, k_proj 8 heads x 64; gate_proj 16384 x 8192 x 2048; the LM head 16384 x 128256 x 2048.
  const auto has = [&](bench::PlanGemm g) { return std::find(plan.gemm.begin(), plan.gemm.end(), g) != plan.gemm.end(); };
  CHECK(has({16384, 2048, 2048, "bf16"}));
  CHECK(has({16384, 512, 2048, "bf16"}));
  CHECK(has({16384, 8192, 2048, "bf16"}));
  CHECK(has({16384, 128256, 2048, "bf16"}));
  // Every non-batched GEMM the lowering prices is in the plan.
  for (const Program& prog : test::lowered(s).programs) {
    for (const Op& op : prog.ops) {
      if (const auto* g = std::get_if<GemmShape>(&op); g && g->batch == 1) {
        CHECK(has({g->m, g->n, g->k, to_string(g->dtype)}));
      }
    }
  }
  REQUIRE(plan.attention.size() == 1);
  CHECK(plan.attention[0] == bench::PlanAttention{4, 32, 8, 4096, 64, true, "bf16"});

  // The committed default plan is what tools/make-gpu-inputs.sh writes from its scenarios today.
  std::vector<Scenario> scenarios;
  for (const char* f : {"measured/h200-llama-0.5b.json", "measured/h200-llama-1b.json", "measured/h200-llama-3b.json",
                        "examples/llama3-70b-64xh100.json", "validation/nemo2407-h100-fp8-llama3-8b-8gpu.json"}) {
    scenarios.push_back(load_scenario(test::source_dir() / "scenarios" / f));
  }
  const bench::BenchPlan current = calibration_plan(scenarios);
  std::ifstream committed_file(test::source_dir() / "calibrate" / "plans" / "default.plan");
  const bench::BenchPlan committed = bench::parse_bench_plan(committed_file, "default.plan");
  CHECK(committed.gemm == current.gemm);
  CHECK(committed.attention == current.attention);
  CHECK(committed.memory == current.memory);
  CHECK(committed.collectives == current.collectives);
  CHECK(current.gemm.size() > 6 * 6 * 6 * 4);  // the grid in four dtypes, plus the scenarios' own shapes
}

TEST_CASE("orrery calibrate fit takes medians and fits rates by least squares", "[calibrate][fit]") {
  const GpuProfile p = fit(recorded());
  CHECK(p.gpu == "NVIDIA H200");
  CHECK(p.source.find("test \"host\"") != std::string::npos);  // the writer escaped it; the reader got it back
  REQUIRE(p.gemm.size() == 6);
  // The median of {t, 0.9t, t, 3t, t} is t: the outliers do not move it.
  CHECK(p.gemm[0].seconds == Approx(5e-6 + 2.0 * 1024 * 2048 * 2048 / 700e12).epsilon(1e-7));
  REQUIRE(p.memory.size() == 4);  // 1 MiB, 16 MiB, 256 MiB, 4 GiB
  CHECK(p.memory.back().seconds == Approx(2e-6 + 4294967296.0 / 4e12).epsilon(1e-7));
  CHECK(p.launch_kernel == Approx(2e-6));
  CHECK(p.launch_host == Approx(3e-6));
  REQUIRE(p.collectives.size() == 1);
  CHECK(p.collectives[0].ranks == 1);
  CHECK(p.collectives[0].seconds == Approx(8e-6));
  // The law the times were built from comes back: 700 TFLOP/s with 5 us, 4 TB/s with 2 us.
  REQUIRE(p.fitted.size() == 2);
  CHECK(p.fitted[0].what == "gemm bf16");
  CHECK(p.fitted[0].rate == Approx(700e12).epsilon(1e-6));
  CHECK(p.fitted[0].overhead == Approx(5e-6).epsilon(1e-3));
  CHECK(p.fitted[0].samples == 4);  // 1024 and 4096 x 2048 x 2048 (8.6, 34 GFLOP) are below the 100 GFLOP threshold
  CHECK(p.fitted[1].what == "memory copy");
  CHECK(p.fitted[1].rate == Approx(4e12).epsilon(1e-6));
  CHECK(p.fitted[1].samples == 2);  // 256 MiB and 4 GiB; 1 and 16 MiB are below 64 MiB (L2-resident)
  // The profile survives its own JSON round trip.
  const GpuProfile again = parse_gpu_profile(gpu_profile_json(p), "again");
  CHECK(again.fitted.size() == 2);
  CHECK(again.gemm.size() == 6);
  CHECK(again.launch_kernel == Approx(p.launch_kernel));
}

TEST_CASE("a rate fit through the origin when the overhead would be negative", "[calibrate][fit]") {
  // The free fit of these points has slope 1.0286e-12 s/FLOP and intercept -0.1 s: refit through the origin,
  // c = sum(w t) / sum(w^2) = 20.9e12 / 21e24.
  const FittedRate r = fit_rate("gemm fp8", {{1e12, 0.9}, {2e12, 2.0}, {4e12, 4.0}});
  CHECK(r.overhead == 0);
  CHECK(r.rate == Approx(21e24 / 20.9e12).epsilon(1e-9));
  CHECK_THROWS_WITH(fit_rate("gemm bf16", {}), Catch::Contains("needs at least one throughput-bound sample"));
}

TEST_CASE("bad raw files are refused with the field named", "[calibrate][fit]") {
  bench::RawProfile r = recorded();
  r.gemm[0].seconds[2] = std::numeric_limits<double>::quiet_NaN();  // written as null
  const std::string text = bench::raw_profile_json(r);
  CHECK(fit_error(text) == "raw.json.gemm[0].times_s[2] (null) must be a positive, finite number of seconds");
  nlohmann::json doc = nlohmann::json::parse(bench::raw_profile_json(recorded()));
  doc["format"] = "orrery-gpu-profile";
  CHECK(fit_error(doc.dump()).find("raw.json.format (orrery-gpu-profile) must be \"orrery-gpu-raw\"") == 0);
  doc = nlohmann::json::parse(bench::raw_profile_json(recorded()));
  doc["gemm"][1]["times_s"] = nlohmann::json::array();
  CHECK(fit_error(doc.dump()).find("raw.json.gemm[1].times_s") == 0);
  doc = nlohmann::json::parse(bench::raw_profile_json(recorded()));
  doc["memory"][0]["kind"] = "stream";
  CHECK(fit_error(doc.dump()).find("raw.json.memory[0].kind (stream) must be copy, elementwise or reduction") == 0);
}

TEST_CASE("measured attention prices attention: exact at a measured shape, between neighbours, default outside",
          "[calibrate][profile][attention]") {
  const nlohmann::json att = attention_raw();
  const GpuProfile p = fit(recorded(), &att);
  REQUIRE(p.attention.size() == 4);
  CHECK(p.attention[0].seconds == Approx(10e-6 * 8 * 32));  // median of {f, f, 2f}
  const Scenario s = test::scenario(R"({"model": "llama3-8b", "cluster": {"preset": "dgx-h200", "num_gpus": 1}})");
  const ProfiledComputeModel pm(p, std::make_unique<RooflineComputeModel>(s.cluster.gpu, default_cost_params().compute));
  AttentionShape a;
  a.batch = 8;
  a.heads = 32;
  a.kv_heads = 8;
  a.q_len = a.kv_len = 4096;
  a.head_dim_qk = a.head_dim_v = 128;
  CHECK(pm.attention(a) == Approx(10e-6 * 8 * 32));  // the measurement
  a.backward = true;
  CHECK(pm.attention(a) == Approx(25e-6 * 8 * 32));
  a.backward = false;
  // Twice the sequences: twice the time (per batch x heads scaling).
  a.batch = 16;
  CHECK(pm.attention(a) == Approx(10e-6 * 16 * 32));
  // Between 4096 and 8192 tokens: between the neighbours' per-unit times; the geometric mean halfway in log.
  a.batch = 1;
  a.q_len = a.kv_len = 5793;  // ~ 4096 * sqrt(2)
  const double t = pm.attention(a);
  CHECK(t > 10e-6 * 32);
  CHECK(t < 40e-6 * 32);
  CHECK(t == Approx(20e-6 * 32).epsilon(1e-3));
  CHECK(pm.uncovered_attention() == 0);
  // Outside the measured lengths, another head size, or a sliding window: the default model.
  a.q_len = a.kv_len = 16384;
  const RooflineComputeModel roofline(s.cluster.gpu, default_cost_params().compute);
  CHECK(pm.attention(a) == Approx(roofline.attention(a)));
  a.q_len = a.kv_len = 4096;
  a.head_dim_qk = a.head_dim_v = 64;
  CHECK(pm.attention(a) == Approx(roofline.attention(a)));
  CHECK(pm.uncovered_attention() == 2);
}

TEST_CASE("a cluster may name its profile, which predict uses unless --profile is given", "[calibrate][profile]") {
  const std::string base = R"({"model": "llama3-8b", "parallel": {"tp": 1},
    "training": {"seq_length": 4096, "micro_batch_size": 1, "global_batch_size": 8},
    "cluster": {"preset": "dgx-h100", "num_gpus": 8)";
  const Scenario plain = test::scenario(base + "}}");
  const Scenario profiled =
      test::scenario(base + R"(, "profile": "tests/data/profiles/constructed-h100-grid.json"}})");
  REQUIRE(profiled.cluster.profile);
  CHECK(profiled.cluster.profile->gpu == "NVIDIA H100 SXM5 80GB");
  const Prediction a = predict(plain), b = predict(profiled);
  CHECK(a.report.iteration_time != Approx(b.report.iteration_time).epsilon(1e-4));
  // The same file given as `--profile` (cost parameters) prices the same step the same way.
  const CostParams params = cost_params_with_profile((test::data_dir() / "profiles" / "constructed-h100-grid.json").string());
  PredictOptions options;
  options.params = &params;
  CHECK(predict(plain, options).report.iteration_time == b.report.iteration_time);
  bool warned = false;
  for (const std::string& w : b.report.warnings) warned = warned || w.find("does not cover") != std::string::npos;
  CHECK(warned);  // the grid stops at 8192, and the LM head's n = 128256 is outside it
  const std::string err = test::scenario_error(base + R"(, "profile": "no-such-gpu"}})");
  CHECK(err.find("cluster.profile (no-such-gpu) must name a built-in GPU profile") == 0);
}

TEST_CASE("shapes measured off the grid do not punch holes in it, and large copies keep their bandwidth",
          "[calibrate][profile]") {
  // The constructed grid (m, n, k in 1024..8192, t = 2mnk / 700 TFLOP/s + 8 us) plus one off-grid shape, as a plan
  // with a scenario's own shapes measures it.
  GpuProfile p = load_gpu_profile((test::data_dir() / "profiles" / "constructed-h100-grid.json").string());
  const auto law = [](double m, double n, double k) { return 2 * m * n * k / 700e12 + 8e-6; };
  p.gemm.push_back({8192, 3072, 2048, DType::kBf16, law(8192, 3072, 2048)});
  const Scenario s = test::scenario(R"({"model": "llama3-8b", "cluster": {"preset": "dgx-h100", "num_gpus": 1}})");
  const ProfiledComputeModel pm(p, std::make_unique<RooflineComputeModel>(s.cluster.gpu, default_cost_params().compute));
  for (auto [m, n, k] : {std::tuple{8192, 2500, 2048}, std::tuple{6000, 3500, 3000}, std::tuple{4096, 3072, 4096}}) {
    INFO(m << " x " << n << " x " << k);
    const double t = pm.gemm(GemmShape{m, n, k, 1, DType::kBf16});
    // Inside the grid cell of powers of two around it (interpolated, not the default model's figure).
    const auto lo = [](std::int64_t x) { std::int64_t v = 1024; while (v * 2 <= x) v *= 2; return static_cast<double>(v); };
    const auto hi = [](std::int64_t x) { std::int64_t v = 1024; while (v < x) v *= 2; return static_cast<double>(v); };
    CHECK(t >= law(lo(m), lo(n), lo(k)));
    CHECK(t <= law(hi(m), hi(n), hi(k)));
  }
  CHECK(pm.uncovered_gemms() == 0);
  // Beyond the largest copy sample (4 GiB at 3.0 TB/s + 3 us): its bandwidth holds; 16 GiB costs 4 times as much.
  const double big = pm.elementwise(ElementwiseShape{Bytes{1} << 33, Bytes{1} << 33, 0});
  CHECK(big == Approx(4 * ((Bytes{1} << 32) / 3.0e12 + 3e-6)).epsilon(1e-6));
  CHECK(pm.uncovered_memory() == 0);
}

TEST_CASE("a profile from CUDA's device name matches its GPU preset", "[calibrate][profile]") {
  const Scenario h200 = test::scenario(R"({"model": "llama3-8b", "cluster": {"preset": "dgx-h200", "num_gpus": 1}})");
  const Scenario a100 = test::scenario(R"({"model": "llama3-8b", "cluster": {"preset": "dgx-a100-80gb", "num_gpus": 8}})");
  CHECK(same_gpu_model("NVIDIA H200", h200.cluster.gpu));
  CHECK(same_gpu_model("NVIDIA A100-SXM4-80GB", a100.cluster.gpu));
  CHECK_FALSE(same_gpu_model("NVIDIA H200", a100.cluster.gpu));
  CHECK_FALSE(same_gpu_model("NVIDIA H100 80GB HBM3", h200.cluster.gpu));
}

namespace {

// tools/calibrate_pytorch_kernels.py's output for two families: pytorch_cast at 2.5 TB/s + 4 us and pytorch_strided
// at 1.25 TB/s, at 16 MiB, 256 MiB and 1 GiB (median of {t, 2t, t}).
nlohmann::json pytorch_kernels() {
  nlohmann::json samples = nlohmann::json::array();
  for (const auto& [kind, rate, overhead] : {std::tuple{"pytorch_cast", 2.5e12, 4e-6}, std::tuple{"pytorch_strided", 1.25e12, 0.0}}) {
    for (Bytes b : {Bytes{16} << 20, Bytes{256} << 20, Bytes{1} << 30}) {
      const double t = overhead + static_cast<double>(b) / rate;
      samples.push_back({{"kind", kind}, {"bytes", b}, {"elements", b / 10}, {"times_s", {t, 2 * t, t}},
                         {"kernels", {"void at::native::unrolled_elementwise_kernel<...>"}}});
    }
  }
  return {{"format", "orrery-pytorch-kernels-raw"}, {"version", 1}, {"gpu", "NVIDIA H200"}, {"torch", "2.11.0"},
          {"cuda", "13.0"}, {"date", "2026-11-30T21:33:01Z"}, {"warmup", 3}, {"repetitions", 3}, {"memory", samples}};
}

}  // namespace

TEST_CASE("orrery calibrate fit --pytorch adds PyTorch's kernel families with their own rates", "[calibrate][fit]") {
  GpuProfile p = fit(recorded());
  const std::size_t copies = p.memory.size();
  add_pytorch_kernels(pytorch_kernels(), "pytorch.json", p);
  REQUIRE(p.memory.size() == copies + 6);
  CHECK(p.memory[copies].kind == "pytorch_cast");
  CHECK(p.memory[copies].seconds == Approx(4e-6 + (16 << 20) / 2.5e12).epsilon(1e-9));  // the median
  // One fitted line per family over its samples of 64 MiB or more: the law the times were built from.
  REQUIRE(p.fitted.size() == 4);
  CHECK(p.fitted[2].what == "memory pytorch_cast");
  CHECK(p.fitted[2].rate == Approx(2.5e12).epsilon(1e-6));
  CHECK(p.fitted[2].overhead == Approx(4e-6).epsilon(1e-3));
  CHECK(p.fitted[2].samples == 2);
  CHECK(p.fitted[3].what == "memory pytorch_strided");
  CHECK(p.fitted[3].rate == Approx(1.25e12).epsilon(1e-6));
  const GpuProfile again = parse_gpu_profile(gpu_profile_json(p), "again");
  CHECK(again.memory.size() == p.memory.size());

  const auto error = [&](const nlohmann::json& doc) {
    GpuProfile q = fit(recorded());
    try {
      add_pytorch_kernels(doc, "pytorch.json", q);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  nlohmann::json bad = pytorch_kernels();
  bad["memory"][0]["kind"] = "copy";
  CHECK(error(bad).find("pytorch.json.memory[0].kind (copy) must be a PyTorch kernel family") == 0);
  bad = pytorch_kernels();
  bad["memory"][1]["bytes"] = bad["memory"][0]["bytes"];
  CHECK(error(bad).find("a repeated size") != std::string::npos);
  bad = pytorch_kernels();
  bad.erase("memory");
  CHECK(error(bad).find("pytorch.json.memory (missing) must list the kernel families' samples") == 0);
  bad = pytorch_kernels();
  bad["gpu"] = "NVIDIA A100-SXM4-80GB";
  CHECK(error(bad).find("pytorch.json.gpu (NVIDIA A100-SXM4-80GB) must be the GPU the raw measurements ran on") == 0);
  bad = pytorch_kernels();
  for (auto& m : bad["memory"]) {
    if (m["kind"] == "pytorch_strided" && m["bytes"].get<Bytes>() > (Bytes{16} << 20)) m["kind"] = "pytorch_cat";
  }
  CHECK(error(bad).find("pytorch.json: memory pytorch_strided (no sample of 64 MiB or more)") == 0);
  bad = pytorch_kernels();
  bad["format"] = "orrery-attention-raw";
  CHECK(error(bad).find("pytorch.json.format (orrery-attention-raw) must be \"orrery-pytorch-kernels-raw\"") == 0);
}

TEST_CASE("a PyTorch kernel family is priced by its own samples, scaled copy samples below them, copy where absent",
          "[calibrate][profile]") {
  GpuProfile p;
  p.gpu = "NVIDIA H200";
  // Copy samples: 3 us + bytes / 4 TB/s from 64 KiB to 4 GiB.
  const auto copy = [](Bytes b) { return 3e-6 + static_cast<double>(b) / 4e12; };
  for (Bytes b = Bytes{1} << 16; b <= Bytes{1} << 32; b <<= 4) p.memory.push_back({"copy", b, copy(b)});
  // pytorch_cast at exactly 2 TB/s, 16 MiB and 1 GiB.
  for (Bytes b : {Bytes{16} << 20, Bytes{1} << 30}) p.memory.push_back({"pytorch_cast", b, static_cast<double>(b) / 2e12});
  const Scenario s = test::scenario(R"({"model": "llama3-8b", "cluster": {"preset": "dgx-h100", "num_gpus": 1}})");
  const ProfiledComputeModel pm(p, std::make_unique<RooflineComputeModel>(s.cluster.gpu, default_cost_params().compute));
  const auto shape = [](Bytes read, Bytes written, ElementwiseKernel k) { return ElementwiseShape{read, written, 0, 1, k}; };
  // Within the family's range: log-log between its samples, which both lie on 2 TB/s, so exactly 2 TB/s.
  const Bytes mid = Bytes{128} << 20;
  CHECK(pm.elementwise(shape(mid / 2, mid / 2, ElementwiseKernel::kCast)) == Approx(mid / 2e12).epsilon(1e-9));
  // Above it: the largest sample's bandwidth.
  const Bytes big = Bytes{4} << 30;
  CHECK(pm.elementwise(shape(big, 0, ElementwiseKernel::kCast)) == Approx(big / 2e12).epsilon(1e-9));
  // Below it: the copy samples' time, scaled by the family's slowdown against the copy at its smallest size (16 MiB).
  const double slowdown = (Bytes{16} << 20) / 2e12 / copy(Bytes{16} << 20);
  CHECK(pm.elementwise(shape(Bytes{1} << 20, 0, ElementwiseKernel::kCast)) ==
        Approx(copy(Bytes{1} << 20) * slowdown).epsilon(1e-9));
  // A family the profile did not measure, and generic kernels: the copy samples (exact at a measured copy size).
  CHECK(pm.elementwise(shape(Bytes{1} << 24, 0, ElementwiseKernel::kStrided)) == Approx(copy(Bytes{1} << 24)).epsilon(1e-9));
  CHECK(pm.elementwise(shape(Bytes{1} << 24, 0, ElementwiseKernel::kGeneric)) == Approx(copy(Bytes{1} << 24)).epsilon(1e-9));
  CHECK(pm.uncovered_memory() == 0);
}

TEST_CASE("a measured profile priced under a lower power cap slows its GEMMs and attention by the clock ratio",
          "[calibrate][profile][power]") {
  // The H200 profile was measured at the 700 W cap (1765 MHz). Capped at 500 W the H200 holds 1550.9 MHz
  // (hardware/gpu_spec.h, sustained_clock_fraction), so every measured GEMM takes 1765 / 1550.9 as long.
  const auto model = [](const std::string& gpu) {
    const Scenario s = test::scenario(R"({"model": "llama3-8b", "cluster": {"preset": "dgx-h200", "num_gpus": 1,
        "gpu": )" + gpu + "}}");
    return DefaultCostModels(s.cluster, default_cost_params());
  };
  const DefaultCostModels stock = model(R"("h200-sxm")");
  const DefaultCostModels capped = model(R"({"preset": "h200-sxm", "tdp_W": 500})");
  const auto profile = builtin_gpu_profile("h200");  // owns the sample below
  const GemmSample& g = profile->gemm.front();
  const GemmShape shape{g.m, g.n, g.k, 1, g.dtype};
  CHECK(stock.compute->gemm(shape) == Approx(g.seconds));
  const double clock = 1765.0 * std::cbrt((500.0 - 78.0) / (700.0 - 78.0));
  CHECK(capped.compute->gemm(shape) == Approx(g.seconds * 1765.0 / clock));
}
