#pragma once
// GEMM through cuBLASLt (lt_matmul.h: TN, the layout cuBLASLt requires for FP8 and the one Megatron's forward GEMMs
// reduce to; FP32 accumulation) with a 32 MiB workspace (Transformer Engine's default on Hopper), on pseudo-random
// operands. Backward GEMMs run as NN and NT in Megatron; one layout stands for all three here (a known
// approximation).

#include <cublasLt.h>

#include <cstdint>
#include <string>
#include <vector>

#include "calibrate/bench/bench_plan.h"
#include "calibrate/cuda/event_timer.h"

namespace orrery::bench {

class GemmBench {
 public:
  explicit GemmBench(cudaStream_t stream, std::size_t workspace_bytes = std::size_t{32} << 20);
  ~GemmBench();
  GemmBench(const GemmBench&) = delete;
  GemmBench& operator=(const GemmBench&) = delete;

  /// Bytes of device memory the shape needs (A, B and D).
  static std::size_t footprint(const PlanGemm& g);
  /// Why this GPU cannot run the shape's dtype ("" when it can).
  std::string unsupported(const PlanGemm& g, int cc_major, int cc_minor) const;
  /// Seconds per call, one per repetition. Errors: std::runtime_error from cuBLASLt or CUDA, or when no algorithm
  /// is found for the shape.
  std::vector<double> run(const PlanGemm& g, const TimingOptions& opt);
  std::size_t workspace_bytes() const { return workspace_bytes_; }

 private:
  cudaStream_t stream_;
  cublasLtHandle_t handle_ = nullptr;
  void* workspace_ = nullptr;
  std::size_t workspace_bytes_;
};

}  // namespace orrery::bench
