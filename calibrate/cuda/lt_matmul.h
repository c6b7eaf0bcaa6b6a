#pragma once
// One cuBLASLt matmul, planned once and run many times: D[m x n] = A[m x k] B[k x n] in cuBLAS's column-major "TN"
// form (A stored k x m and transposed, B stored k x n), FP32 accumulation, alpha 1, beta 0, strided-batched when
// batch > 1, with cuBLASLt's first heuristic algorithm for the given workspace. Shared by the GEMM benchmark
// (gemm_bench.h) and the reference executor (executor.h).
//   bf16, fp16: inputs and output in that type.   tf32 (and fp32): FP32 data, CUBLAS_COMPUTE_32F_FAST_TF32.
//   fp8: E4M3 inputs, BF16 output, fast accumulation as Transformer Engine's forward GEMMs (compute capability 8.9+).

#include <cublasLt.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <memory>
#include <string>

#include "calibrate/cuda/device_buffer.h"

namespace orrery::bench {

class LtMatmul {
 public:
  /// The plan, or nullptr when cuBLASLt has no algorithm for the shape (FP8 needs k a multiple of 16, m of 8).
  /// Errors: std::runtime_error from any other cuBLASLt call.
  static std::unique_ptr<LtMatmul> plan(cublasLtHandle_t handle, std::int64_t m, std::int64_t n, std::int64_t k,
                                        std::int64_t batch, const std::string& dtype, std::size_t workspace_bytes);
  ~LtMatmul();
  LtMatmul(const LtMatmul&) = delete;
  LtMatmul& operator=(const LtMatmul&) = delete;

  /// Enqueues the matmul on `stream`; `workspace` holds at least the planned bytes. Errors: std::runtime_error.
  void run(cublasLtHandle_t handle, const void* a, const void* b, void* d, void* workspace, cudaStream_t stream) const;

  /// Element types of the inputs and the output for `dtype`.
  static ElementType input_type(const std::string& dtype);
  static ElementType output_type(const std::string& dtype);

 private:
  LtMatmul() = default;
  cublasLtMatmulDesc_t op_ = nullptr;
  cublasLtMatrixLayout_t a_ = nullptr, b_ = nullptr, d_ = nullptr;
  cublasLtMatmulAlgo_t algo_{};
  std::size_t workspace_bytes_ = 0;
};

}  // namespace orrery::bench
