#include "calibrate/cuda/gemm_bench.h"

#include <memory>

#include "calibrate/cuda/device_buffer.h"

namespace orrery::bench {

namespace {

struct Types {
  cudaDataType_t a, b, d;
  cublasComputeType_t compute;
  ElementType in, out;
};

Types types_of(const std::string& dtype) {
  if (dtype == "bf16") return {CUDA_R_16BF, CUDA_R_16BF, CUDA_R_16BF, CUBLAS_COMPUTE_32F, ElementType::kBf16, ElementType::kBf16};
  if (dtype == "fp16") return {CUDA_R_16F, CUDA_R_16F, CUDA_R_16F, CUBLAS_COMPUTE_32F, ElementType::kF16, ElementType::kF16};
  if (dtype == "tf32") {
    return {CUDA_R_32F, CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F_FAST_TF32, ElementType::kF32, ElementType::kF32};
  }
  return {CUDA_R_8F_E4M3, CUDA_R_8F_E4M3, CUDA_R_16BF, CUBLAS_COMPUTE_32F, ElementType::kFp8E4M3, ElementType::kBf16};
}

// Owners for the cuBLASLt descriptors, so an exception mid-way leaks nothing.
struct DescDeleter {
  void operator()(cublasLtMatmulDescOpaque_t* p) const { cublasLtMatmulDescDestroy(p); }
  void operator()(cublasLtMatrixLayoutOpaque_t* p) const { cublasLtMatrixLayoutDestroy(p); }
  void operator()(cublasLtMatmulPreferenceOpaque_t* p) const { cublasLtMatmulPreferenceDestroy(p); }
};

std::unique_ptr<cublasLtMatrixLayoutOpaque_t, DescDeleter> layout(cudaDataType_t t, std::int64_t rows,
                                                                  std::int64_t cols) {
  cublasLtMatrixLayout_t l = nullptr;
  ORRERY_CUBLAS(cublasLtMatrixLayoutCreate(&l, t, static_cast<std::uint64_t>(rows), static_cast<std::uint64_t>(cols),
                                           rows));
  return std::unique_ptr<cublasLtMatrixLayoutOpaque_t, DescDeleter>(l);
}

}  // namespace

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
  const Types t = types_of(g.dtype);
  const auto m = static_cast<std::size_t>(g.m), n = static_cast<std::size_t>(g.n), k = static_cast<std::size_t>(g.k);
  return (m * k + k * n) * element_bytes(t.in) + m * n * element_bytes(t.out);
}

std::string GemmBench::unsupported(const PlanGemm& g, int cc_major, int cc_minor) const {
  if (g.dtype == "fp8" && cc_major * 10 + cc_minor < 89) return "FP8 GEMMs need compute capability 8.9 or later";
  if (g.dtype == "fp8" && (g.m % 16 || g.n % 16 || g.k % 16)) {
    return "cuBLASLt FP8 GEMMs need m, n and k divisible by 16";
  }
  return "";
}

std::vector<double> GemmBench::run(const PlanGemm& g, const TimingOptions& opt) {
  const Types t = types_of(g.dtype);
  DeviceBuffer a(static_cast<std::size_t>(g.m * g.k) * element_bytes(t.in));
  DeviceBuffer b(static_cast<std::size_t>(g.k * g.n) * element_bytes(t.in));
  DeviceBuffer d(static_cast<std::size_t>(g.m * g.n) * element_bytes(t.out));
  fill_random(a.get(), static_cast<std::size_t>(g.m * g.k), t.in, 1, stream_);
  fill_random(b.get(), static_cast<std::size_t>(g.k * g.n), t.in, 2, stream_);

  cublasLtMatmulDesc_t raw_op = nullptr;
  ORRERY_CUBLAS(cublasLtMatmulDescCreate(&raw_op, t.compute, CUDA_R_32F));
  std::unique_ptr<cublasLtMatmulDescOpaque_t, DescDeleter> op(raw_op);
  const cublasOperation_t trans_a = CUBLAS_OP_T, trans_b = CUBLAS_OP_N;
  ORRERY_CUBLAS(cublasLtMatmulDescSetAttribute(op.get(), CUBLASLT_MATMUL_DESC_TRANSA, &trans_a, sizeof trans_a));
  ORRERY_CUBLAS(cublasLtMatmulDescSetAttribute(op.get(), CUBLASLT_MATMUL_DESC_TRANSB, &trans_b, sizeof trans_b));
  if (g.dtype == "fp8") {
    // Transformer Engine's forward FP8 GEMMs accumulate in the tensor cores' fast mode.
    const std::int8_t fast_accumulate = 1;
    ORRERY_CUBLAS(cublasLtMatmulDescSetAttribute(op.get(), CUBLASLT_MATMUL_DESC_FAST_ACCUM, &fast_accumulate,
                                                 sizeof fast_accumulate));
  }
  auto a_layout = layout(t.a, g.k, g.m);
  auto b_layout = layout(t.b, g.k, g.n);
  auto d_layout = layout(t.d, g.m, g.n);

  cublasLtMatmulPreference_t raw_pref = nullptr;
  ORRERY_CUBLAS(cublasLtMatmulPreferenceCreate(&raw_pref));
  std::unique_ptr<cublasLtMatmulPreferenceOpaque_t, DescDeleter> pref(raw_pref);
  ORRERY_CUBLAS(cublasLtMatmulPreferenceSetAttribute(pref.get(), CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                     &workspace_bytes_, sizeof workspace_bytes_));
  cublasLtMatmulHeuristicResult_t heuristic{};
  int found = 0;
  ORRERY_CUBLAS(cublasLtMatmulAlgoGetHeuristic(handle_, op.get(), a_layout.get(), b_layout.get(), d_layout.get(),
                                               d_layout.get(), pref.get(), 1, &heuristic, &found));
  if (found < 1) fail_call("cublasLtMatmulAlgoGetHeuristic", __FILE__, __LINE__, "no algorithm for this shape");

  const float alpha = 1.0f, beta = 0.0f;
  return time_on_stream(stream_, opt, [&](cudaStream_t s) {
    ORRERY_CUBLAS(cublasLtMatmul(handle_, op.get(), &alpha, a.get(), a_layout.get(), b.get(), b_layout.get(), &beta,
                                 d.get(), d_layout.get(), d.get(), d_layout.get(), &heuristic.algo, workspace_,
                                 workspace_bytes_, s));
  });
}

}  // namespace orrery::bench
