#pragma once
// The op vocabulary: kernel-level operations with their shapes, FLOPs and bytes (ARCHITECTURE.md "The workload graph
// and the engine"). The lowering in sim/ emits these; the cost models in hardware/ price them. Sizes are element
// counts; FLOPs count a multiply-add as 2.

#include <cstdint>

#include "models/units.h"

namespace orrery {

enum class DType : std::uint8_t { kFp32, kTf32, kFp16, kBf16, kFp8 };

/// How an FP8 GEMM's operands carry their scales (Transformer Engine recipes): one scale per tensor (delayed or
/// current scaling), one FP32 scale per 128 elements of activations and gradients and per 128 x 128 block of
/// weights (Float8BlockScaling, DeepSeek-V3's scheme), or one E8M0 scale per 32 elements (MXFP8BlockScaling).
/// Block-scaled GEMMs apply the scales inside the main loop and run below the per-tensor rate
/// (GpuSpec::fp8_blockwise_gemm_fraction, mxfp8_gemm_fraction). Meaningless for other dtypes.
enum class Fp8Scaling : std::uint8_t { kTensor, kBlock128, kMx32 };

/// Bytes per element (TF32 is stored as FP32).
int dtype_bytes(DType dtype);
const char* to_string(DType dtype);

/// C[m,n] = A[m,k] B[k,n], `batch` independent times (batched GEMM for unfused attention).
struct GemmShape {
  std::int64_t m = 0, n = 0, k = 0, batch = 1;
  DType dtype = DType::kBf16;
  /// false: one strided-batched kernel over `batch` (attention scores). true: `batch` separate GEMM kernels, one
  /// per local expert, as Transformer Engine's GroupedLinear issues them (a loop of cuBLASLt calls), so each pays
  /// its own launch and its own last partial wave.
  bool grouped = false;
  Fp8Scaling fp8_scaling = Fp8Scaling::kTensor;  // with dtype kFp8: how the operands are scaled

  Flops flops() const;   // 2 m n k batch
  Bytes bytes() const;   // A and B read, C written once each: (mk + kn + mn) batch elements (C in BF16 for FP8)
  bool operator==(const GemmShape&) const = default;
};

/// A fused (flash) attention kernel over `batch` sequences: softmax(Q K^T) V with `heads` query heads sharing
/// `kv_heads` key/value heads. Source for the FLOPs: FlashAttention-2 (Dao, arXiv:2307.08691) Section 4: the
/// forward is 2 matmuls (4 q kv d FLOPs per head when dqk = dv = d), the backward 5 (2.5x the forward) because it
/// recomputes the scores.
struct AttentionShape {
  std::int64_t batch = 0, heads = 0, kv_heads = 0, q_len = 0, kv_len = 0;
  std::int64_t head_dim_qk = 0, head_dim_v = 0;
  bool causal = true;
  std::int64_t window = 0;  // sliding window in tokens; 0 = none
  // A block of context-parallel ring attention whose load-balanced causal mask leaves exactly half of the q x kv pairs
  // (Megatron-Core/Transformer Engine split the sequence into 2 cp chunks; see sim/lower/context_parallel.h).
  bool half_block = false;
  bool backward = false;
  DType dtype = DType::kBf16;
  /// Packed documents (sim/packing.h): the kept pairs scale by this, the pairs within documents over those of one
  /// causal document per sequence; 1 without packing.
  double packed_fraction = 1.0;

  /// Model FLOPs with the full score matrix (PaLM / SC21 convention) of what each query may see: forward
  /// 2 b h q k (dqk + dv) x packed_fraction with k = min(window, kv) (kv without a window), backward 2x. So a
  /// window or packed documents shrink the count as they shrink the work; causal attention keeps the whole square.
  Flops model_flops() const;
  /// Fraction of the q x kv score matrix the mask keeps: (s+1)/(2s) for causal self-attention, less with a window,
  /// 1/2 for a half block; times packed_fraction.
  double kept_fraction() const;
  /// FLOPs the kernel performs: the kept part of the matrix, the backward at 2.5x the forward.
  Flops executed_flops() const;
  /// HBM traffic: Q, K, V read and O written (forward); plus dO read and dQ, dK, dV written (backward).
  Bytes bytes() const;
  bool operator==(const AttentionShape&) const = default;
};

/// Which kernel runs a memory-bound task, and so which measured rate prices it (hardware/profiled_compute.cpp).
/// kGeneric: a plain copy's bandwidth (a fused Megatron/TE kernel, our own copy benchmark). The others are the paths
/// PyTorch's eager CUDA kernels take (aten/src/ATen/native/cuda/CUDALoops.cuh, gpu_kernel_impl), which move bytes at
/// very different rates (H200, tools/calibrate_pytorch_kernels.py, scenarios/measured/h200-2026-11-30: 4.39 TB/s
/// vectorized, 2.87 casting, 2.72 strided, 1.29 strided with casts, 1.00 cat):
///   kVectorized    every operand contiguous and of one dtype (vectorized_elementwise_kernel; also fp32 -> bf16)
///   kCast          contiguous operands of mixed dtypes, e.g. fp32 + bf16 (unrolled_elementwise_kernel, casting
///                  per element)
///   kCastCopy      a contiguous widening copy, bf16 -> fp32 (direct_copy_kernel_cuda, unrolled): slower per byte
///                  than kCast on the H200
///   kStrided       a broadcast or non-contiguous operand of one 4-byte dtype (elementwise_kernel<128, 2> with
///                  offset arithmetic)
///   kStridedHalf   the same with 2-byte elements (elementwise_kernel<128, 4>): closer to bound by elements than
///                  by bytes, about 70% of kStrided's rate per byte (1.93 against 2.72 TB/s)
///   kStridedCast   broadcast or non-contiguous with mixed dtypes (elementwise_kernel with casts: RoPE's q * cos)
///   kCat           torch.cat of non-contiguous pieces (CatArrayBatchedCopy)
///   kLogSoftmax, kLogSoftmaxBackward  cunn_SoftMaxForward / cunn_SoftMaxBackward over long rows (several passes)
///   kFusedAdamW    torch.optim.AdamW(fused=True)'s multi_tensor_apply kernels
enum class ElementwiseKernel : std::uint8_t {
  kGeneric,
  kVectorized,
  kCast,
  kCastCopy,
  kStrided,
  kStridedHalf,
  kStridedCast,
  kCat,
  kLogSoftmax,
  kLogSoftmaxBackward,
  kFusedAdamW,
};

/// The measured-profile sample kind that prices `k` ("copy" for kGeneric, "pytorch_vectorized", ...: the kinds
/// tools/calibrate_pytorch_kernels.py writes).
const char* profile_kind(ElementwiseKernel k);

/// A memory-bound kernel (norm, activation, residual, softmax, optimizer update): its HBM traffic and FLOPs.
/// `kernels` > 1 stands for that many launches sharing the traffic evenly (e.g. the per-chunk copies of a
/// list-based torch.distributed collective); each launch pays the GPU's launch gap. `kernel` says which kernel
/// family runs it; its bytes count every operand read once and the output written once, whatever the kernel's
/// own passes (the family's measured rate covers those).
struct ElementwiseShape {
  Bytes bytes_read = 0;
  Bytes bytes_written = 0;
  Flops flops = 0;
  std::int64_t kernels = 1;
  ElementwiseKernel kernel = ElementwiseKernel::kGeneric;
  Bytes bytes() const { return bytes_read + bytes_written; }
  bool operator==(const ElementwiseShape&) const = default;
};

/// Work between the GPU and its host (sim/lower offload): a PCIe copy through a copy engine, or host-DRAM-bound
/// CPU work (the CPU Adam step of ZeRO-Offload / Megatron's optimizer CPU offload). Priced by the compute cost
/// model from the GPU's PCIe bandwidth and its share of the node's host memory bandwidth.
struct HostOpShape {
  enum class Kind : std::uint8_t { kCopyToHost, kCopyToDevice, kHostMemory };
  Kind kind = Kind::kCopyToHost;
  Bytes bytes = 0;  // bytes copied, or host DRAM traffic of the CPU work
  bool operator==(const HostOpShape&) const = default;
};

/// A device-to-host synchronisation (a `.item()` such as the gradient norm's): a few bytes copied to the host, whose
/// thread waits for them before it issues anything more (sim/engine/engine.h's host timeline), so the GPU then idles
/// until the host has issued the next kernel. The copy is priced by the compute cost model.
struct HostSyncShape {
  bool operator==(const HostSyncShape&) const = default;
};

}  // namespace orrery
