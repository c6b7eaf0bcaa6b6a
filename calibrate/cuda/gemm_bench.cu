#include "calibrate/cuda/gemm_bench.h"

#include <memory>

#include "calibrate/cuda/device_buffer.h"
#include "calibrate/cuda/lt_matmul.h"

namespace orrery::bench {

GemmBench::GemmBench(cudaStream_t stream, std::size_t workspace_bytes)
    : stream_(stream), workspace_bytes_(workspace_bytes) {
  ORRERY_CUBLAS(cublasLtCreate(&handle_));
  ORRERY_CUDA(cudaMalloc(&workspace_, workspace_bytes_));
}

GemmBench::~GemmBench() {
  if (workspace_) cudaFree(workspace_);
  if (handle_) cublasLtDestroy(handle_);
}

std::size_t GemmBench::footprint(const PlanGemm& g) {
  const auto m = static_cast<std::size_t>(g.m), n = static_cast<std::size_t>(g.n), k = static_cast<std::size_t>(g.k);
  return (m * k + k * n) * element_bytes(LtMatmul::input_type(g.dtype)) +
         m * n * element_bytes(LtMatmul::output_type(g.dtype));
}

std::string GemmBench::unsupported(const PlanGemm& g, int cc_major, int cc_minor) const {
  if (g.dtype == "fp8" && cc_major * 10 + cc_minor < 89) return "FP8 GEMMs need compute capability 8.9 or later";
  if (g.dtype == "fp8" && (g.m % 16 || g.n % 16 || g.k % 16)) {
    return "cuBLASLt FP8 GEMMs need m, n and k divisible by 16";
  }
  return "";
}

std::vector<double> GemmBench::run(const PlanGemm& g, const TimingOptions& opt) {
  const ElementType in = LtMatmul::input_type(g.dtype), out = LtMatmul::output_type(g.dtype);
  DeviceBuffer a(static_cast<std::size_t>(g.m * g.k) * element_bytes(in));
  DeviceBuffer b(static_cast<std::size_t>(g.k * g.n) * element_bytes(in));
  DeviceBuffer d(static_cast<std::size_t>(g.m * g.n) * element_bytes(out));
  fill_random(a.get(), static_cast<std::size_t>(g.m * g.k), in, 1, stream_);
  fill_random(b.get(), static_cast<std::size_t>(g.k * g.n), in, 2, stream_);
  const std::unique_ptr<LtMatmul> mm = LtMatmul::plan(handle_, g.m, g.n, g.k, 1, g.dtype, workspace_bytes_);
  if (!mm) fail_call("cublasLtMatmulAlgoGetHeuristic", __FILE__, __LINE__, "no algorithm for this shape");
  return time_on_stream(stream_, opt,
                        [&](cudaStream_t s) { mm->run(handle_, a.get(), b.get(), d.get(), workspace_, s); });
}

}  // namespace orrery::bench
