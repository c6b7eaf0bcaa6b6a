// The Kineto trace reader on real PyTorch profiler traces: two from HolisticTraceAnalysis (tests/data/kineto) and
// the H200 Llama steps of scenarios/measured/h200-2026-11-30 (tools/pytorch_train_step.py).
// Expected figures were computed independently with Python's json and gzip modules (kernels attributed to the
// ProfilerStep whose CPU window holds their correlated launch call).
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <numeric>

#include "calibrate/kineto_trace.h"
#include "models/error.h"
#include "test_support.h"

using namespace orrery;

namespace {

KinetoTrace trace(const char* name) { return read_kineto_trace((test::data_dir() / "kineto" / name).string()); }

Seconds total(const KinetoTrace& t, int step, bool nccl_only) {
  Seconds s = 0;
  for (const KinetoKernel& k : t.kernels) {
    if (k.step == step && (!nccl_only || k.kind == KernelClass::kCommunication)) s += k.duration;
  }
  return s;
}

}  // namespace

TEST_CASE("a real A100 two-rank trace: steps, kernels, NCCL arguments", "[calibrate][kineto][slow]") {
  const KinetoTrace t = trace("a100-2rank-nccl.json.gz");
  REQUIRE(t.steps.size() == 3);
  CHECK(t.steps[0].name == "ProfilerStep#4");
  CHECK(t.steps[0].duration == Approx(222442.191e-6));
  CHECK(t.steps[2].duration == Approx(224936.243e-6));
  REQUIRE(t.kernels.size() == 2700);
  const Seconds all = std::accumulate(t.kernels.begin(), t.kernels.end(), 0.0,
                                      [](Seconds s, const KinetoKernel& k) { return s + k.duration; });
  CHECK(all == Approx(162532.34e-6));
  for (int s = 0; s < 3; ++s) CHECK(step_kernel_time(t, s).kernels == 900);
  CHECK(total(t, 0, false) == Approx(50495.427e-6));
  CHECK(total(t, 2, true) == Approx(22587.443e-6));  // the 7 NCCL kernels of the last step
  int allreduce = 0;
  const KinetoKernel* first = nullptr;
  for (const KinetoKernel& k : t.kernels) {
    if (k.name.find("AllReduce") == std::string::npos) continue;
    ++allreduce;
    if (!first) first = &k;
  }
  CHECK(allreduce == 15);
  REQUIRE(first);
  CHECK(first->kind == KernelClass::kCommunication);
  CHECK(first->collective == "allreduce");
  CHECK(first->in_elements == 6637568);
  CHECK(first->group_size == 2);
  CHECK(first->dtype == "Float");
  CHECK(first->stream == 40);
  const Seconds copies = std::accumulate(t.copies.begin(), t.copies.end(), 0.0,
                                         [](Seconds s, const KinetoKernel& c) { return s + c.duration; });
  CHECK(copies == Approx(2653.498e-6));
}

TEST_CASE("a real V100 trace: kernels attributed to the step that launched them", "[calibrate][kineto][slow]") {
  const KinetoTrace t = trace("v100-2rank-rank1.json.gz");
  REQUIRE(t.steps.size() == 6);
  CHECK(t.kernels.size() == 9876);
  CHECK(step_kernel_time(t, 0).kernels == 2101);
  for (int s = 1; s < 6; ++s) CHECK(step_kernel_time(t, s).kernels == 1555);
  CHECK(total(t, 1, false) == Approx(124354e-6));
  CHECK(total(t, 3, true) == Approx(38578e-6));
  CHECK(t.kernels.front().device == 1);
}

TEST_CASE("kernel names are classified as cuBLAS, CUTLASS, flash-attention and NCCL name them", "[calibrate][kineto]") {
  CHECK(classify_kernel("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x256x64_warpgroupsize2x1x1") ==
        KernelClass::kGemm);
  CHECK(classify_kernel("volta_fp16_s884gemm_fp16_128x128_ldg8_f2f_nn") == KernelClass::kGemm);
  CHECK(classify_kernel("void cutlass::Kernel2<cutlass_80_tensorop_bf16_s16816gemm_relu_bf16_64x64_64x4_tn_align8>") ==
        KernelClass::kGemm);
  CHECK(classify_kernel("void pytorch_flash::flash_fwd_kernel<Flash_fwd_kernel_traits<128, 128, 64, 4>>") ==
        KernelClass::kAttention);
  CHECK(classify_kernel("cudnn_generated_fort_native_sdpa_sm90_flash_fprop_wgmma_f16_knob_3") == KernelClass::kAttention);
  CHECK(classify_kernel("ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgsStorage<4096ul>)") ==
        KernelClass::kCommunication);
  CHECK(classify_kernel("void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>>") ==
        KernelClass::kOther);
  // cuBLAS 13 on Hopper, and the helpers of cuDNN's fused SDPA backward (the H200 traces).
  CHECK(classify_kernel("nvjet_sm90_tst_128x256_64x4_2x1_v_bz_coopA_NTN") == KernelClass::kGemm);
  CHECK(classify_kernel("void cublasLt::splitKreduce_kernel<32, 16, int, float, __nv_bfloat16>") == KernelClass::kGemm);
  CHECK(classify_kernel("void cudnn::fusion::compute_dot_do_o_specialized<true, 64>(void const*)") ==
        KernelClass::kAttention);
  CHECK(classify_kernel("void cudnn::fusion::convert_dq_to_16bits<true>(void const*, void*)") == KernelClass::kAttention);
}

TEST_CASE("a real H200 Llama-3.2-1B training step: nvjet GEMMs, cuDNN attention, layers", "[calibrate][kineto][slow]") {
  // Recorded by tools/pytorch_train_step.py on an H200 (PyTorch 2.11.0+cu130, 2026-11-30). Expected figures from an
  // independent Python reading of the same file (launch-correlated step attribution, the same name rules).
  const KinetoTrace t = read_kineto_trace(
      (test::source_dir() / "scenarios" / "measured" / "h200-2026-11-30" / "llama-1b.trace.json.gz").string());
  REQUIRE(t.steps.size() == 2);
  CHECK(t.steps[1].name == "ProfilerStep#2");
  CHECK(t.steps[1].duration == Approx(365249.451e-6));
  CHECK(t.kernels.size() == 5735);
  const StepKernelTime s = step_kernel_time(t, 1);
  CHECK(s.kernels == 2436);
  CHECK(s.by_class[static_cast<int>(KernelClass::kGemm)] == Approx(157690.761e-6));
  CHECK(s.by_class[static_cast<int>(KernelClass::kAttention)] == Approx(44200.461e-6));
  CHECK(s.by_class[static_cast<int>(KernelClass::kOther)] == Approx(156641.706e-6));
  CHECK(s.by_class[static_cast<int>(KernelClass::kCommunication)] == 0);
  CHECK(s.copies == Approx(2494.518e-6));  // 352 memsets and device copies launched in the step
  Seconds layer5 = 0;
  int layer5_kernels = 0;
  for (const KinetoKernel& k : t.kernels) {
    if (k.step == 1 && k.layer == 5 && !k.backward) {
      layer5 += k.duration;
      ++layer5_kernels;
    }
  }
  CHECK(layer5_kernels == 48);
  CHECK(layer5 == Approx(5619.167e-6));
}

TEST_CASE("a file that is not a Kineto trace is refused by name", "[calibrate][kineto]") {
  CHECK_THROWS_WITH(read_kineto_trace((test::source_dir() / "scenarios" / "measured" / "h200-llama-1b.json").string()),
                    Catch::Contains("traceEvents") && Catch::Contains("must be the list of trace events"));
  CHECK_THROWS_AS(read_kineto_trace((test::data_dir() / "kineto" / "missing.json").string()), Error);
}

TEST_CASE("kernels launched inside a layer annotation belong to that layer", "[calibrate][kineto]") {
  // A trace in the shape tools/pytorch_train_step.py records: one step; layer 0's forward on the main thread (tid 1),
  // its backward on the autograd thread (tid 2); three kernels launched in, and one outside, the layer ranges.
  nlohmann::json events = nlohmann::json::array();
  const auto x = [&](const char* cat, const char* name, int tid, double ts, double dur, nlohmann::json args) {
    events.push_back({{"ph", "X"}, {"cat", cat}, {"name", name}, {"pid", 7}, {"tid", tid}, {"ts", ts}, {"dur", dur},
                      {"args", args}});
  };
  x("user_annotation", "ProfilerStep#3", 1, 0, 1000, nlohmann::json::object());
  x("user_annotation", "orrery.layer0.forward", 1, 10, 100, nlohmann::json::object());
  x("user_annotation", "orrery.layer0.backward", 2, 500, 200, nlohmann::json::object());
  x("cuda_runtime", "cudaLaunchKernel", 1, 20, 5, {{"correlation", 1}});
  x("cuda_runtime", "cudaLaunchKernel", 2, 510, 5, {{"correlation", 2}});
  x("cuda_runtime", "cudaLaunchKernel", 1, 520, 5, {{"correlation", 3}});  // tid 1: outside layer 0's forward
  x("kernel", "sm90_xmma_gemm_bf16", 0, 30, 40, {{"correlation", 1}, {"device", 0}, {"stream", 7}});
  x("kernel", "sm90_xmma_gemm_bf16", 0, 520, 60, {{"correlation", 2}, {"device", 0}, {"stream", 7}});
  x("kernel", "vectorized_elementwise_kernel", 0, 600, 5, {{"correlation", 3}, {"device", 0}, {"stream", 7}});
  const std::filesystem::path file = std::filesystem::temp_directory_path() / "orrery_layer_trace.json";
  std::ofstream(file) << nlohmann::json{{"traceEvents", events}}.dump();
  const KinetoTrace t = read_kineto_trace(file.string());
  REQUIRE(t.kernels.size() == 3);
  CHECK(t.kernels[0].layer == 0);
  CHECK_FALSE(t.kernels[0].backward);
  CHECK(t.kernels[1].layer == 0);
  CHECK(t.kernels[1].backward);
  CHECK(t.kernels[2].layer == -1);
  for (const KinetoKernel& k : t.kernels) CHECK(k.step == 0);
  std::filesystem::remove(file);
}
