#include "calibrate/cuda/lt_matmul.h"

#include "calibrate/cuda/check.h"

namespace orrery::bench {

namespace {

cudaDataType_t cuda_type(ElementType t) {
  switch (t) {
    case ElementType::kF32: return CUDA_R_32F;
    case ElementType::kF16: return CUDA_R_16F;
    case ElementType::kBf16: return CUDA_R_16BF;
    case ElementType::kFp8E4M3: return CUDA_R_8F_E4M3;
  }
  return CUDA_R_16BF;
}

}  // namespace

ElementType LtMatmul::input_type(const std::string& dtype) {
  if (dtype == "fp8") return ElementType::kFp8E4M3;
  if (dtype == "tf32" || dtype == "fp32") return ElementType::kF32;
  return dtype == "fp16" ? ElementType::kF16 : ElementType::kBf16;
}

ElementType LtMatmul::output_type(const std::string& dtype) {
  return dtype == "fp8" ? ElementType::kBf16 : input_type(dtype);
}

std::unique_ptr<LtMatmul> LtMatmul::plan(cublasLtHandle_t handle, std::int64_t m, std::int64_t n, std::int64_t k,
                                         std::int64_t batch, const std::string& dtype, std::size_t workspace_bytes) {
  std::unique_ptr<LtMatmul> p(new LtMatmul());
  p->workspace_bytes_ = workspace_bytes;
  const bool tf32 = input_type(dtype) == ElementType::kF32;
  ORRERY_CUBLAS(cublasLtMatmulDescCreate(&p->op_, tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F, CUDA_R_32F));
  const cublasOperation_t trans_a = CUBLAS_OP_T, trans_b = CUBLAS_OP_N;
  ORRERY_CUBLAS(cublasLtMatmulDescSetAttribute(p->op_, CUBLASLT_MATMUL_DESC_TRANSA, &trans_a, sizeof trans_a));
  ORRERY_CUBLAS(cublasLtMatmulDescSetAttribute(p->op_, CUBLASLT_MATMUL_DESC_TRANSB, &trans_b, sizeof trans_b));
  if (dtype == "fp8") {
    const std::int8_t fast_accumulate = 1;
    ORRERY_CUBLAS(cublasLtMatmulDescSetAttribute(p->op_, CUBLASLT_MATMUL_DESC_FAST_ACCUM, &fast_accumulate,
                                                 sizeof fast_accumulate));
  }
  const auto layout = [&](cublasLtMatrixLayout_t* l, ElementType t, std::int64_t rows, std::int64_t cols) {
    ORRERY_CUBLAS(cublasLtMatrixLayoutCreate(l, cuda_type(t), static_cast<std::uint64_t>(rows),
                                             static_cast<std::uint64_t>(cols), rows));
    if (batch > 1) {
      const int count = static_cast<int>(batch);
      const std::int64_t stride = rows * cols;
      ORRERY_CUBLAS(cublasLtMatrixLayoutSetAttribute(*l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof count));
      ORRERY_CUBLAS(
          cublasLtMatrixLayoutSetAttribute(*l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride, sizeof stride));
    }
  };
  layout(&p->a_, input_type(dtype), k, m);
  layout(&p->b_, input_type(dtype), k, n);
  layout(&p->d_, output_type(dtype), m, n);
  cublasLtMatmulPreference_t pref = nullptr;
  ORRERY_CUBLAS(cublasLtMatmulPreferenceCreate(&pref));
  const cublasStatus_t set = cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                                  &workspace_bytes, sizeof workspace_bytes);
  cublasLtMatmulHeuristicResult_t heuristic{};
  int found = 0;
  const cublasStatus_t status =
      set != CUBLAS_STATUS_SUCCESS ? set
                                   : cublasLtMatmulAlgoGetHeuristic(handle, p->op_, p->a_, p->b_, p->d_, p->d_, pref, 1,
                                                                    &heuristic, &found);
  cublasLtMatmulPreferenceDestroy(pref);
  if (status == CUBLAS_STATUS_NOT_SUPPORTED || (status == CUBLAS_STATUS_SUCCESS && found < 1)) return nullptr;
  ORRERY_CUBLAS(status);
  p->algo_ = heuristic.algo;
  return p;
}

LtMatmul::~LtMatmul() {
  for (cublasLtMatrixLayout_t l : {a_, b_, d_}) {
    if (l) cublasLtMatrixLayoutDestroy(l);
  }
  if (op_) cublasLtMatmulDescDestroy(op_);
}

void LtMatmul::run(cublasLtHandle_t handle, const void* a, const void* b, void* d, void* workspace,
                   cudaStream_t stream) const {
  const float alpha = 1.0f, beta = 0.0f;
  ORRERY_CUBLAS(cublasLtMatmul(handle, op_, &alpha, a, a_, b, b_, &beta, d, d_, d, d_, &algo_, workspace,
                               workspace_bytes_, stream));
}

}  // namespace orrery::bench
