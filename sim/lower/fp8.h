#pragma once
// FP8 training as Megatron-Core runs it with Transformer Engine (TE) and delayed scaling: the four linears of each
// transformer layer (QKV, attention projection, MLP up/gate, MLP down) run FP8 GEMMs; norms, attention, the LM
// head and everything else stay in BF16 (Micikevicius et al., "FP8 Formats for Deep Learning", arXiv:2209.05433;
// TE's `fp8_autocast` and `DelayedScaling` recipe; Megatron-LM `--fp8-format hybrid`: E4M3 forward, E5M2 grads).
//
// What FP8 adds around the GEMMs, each priced from the bytes it moves:
// - casts: an FP8 GEMM on Hopper takes both operands in "TN" layout, so each BF16 operand is cast to FP8 and
//   transposed in one pass (TE's cast_transpose: read 2 bytes, write 1 + 1 bytes per element). The input of a
//   linear that follows a norm is cast inside the norm kernel (TE's LayerNormLinear), at no extra traffic;
//   the inputs of the attention projection and the MLP down projection, and every output gradient, are cast
//   by a kernel of their own.
// - weights: cast (and transposed) once per iteration, on the first micro-batch, and cached for the others
//   (TE's `is_first_microbatch`); the cache holds 2 bytes per linear weight element for the whole iteration.
// - amax bookkeeping: every FP8 tensor records its absolute maximum; at the end of each forward and backward of
//   an autocast region (one model chunk) the amaxes are all-reduced (MAX) over the amax group (all ranks of the
//   pipeline stage: TP x CP x DP) and the scales updated in one fused kernel. The all-reduce is blocking on the
//   compute stream.
// - memory: the linears save their FP8 input (1 byte per element) for the weight gradient instead of BF16.
//
// The recipe (training.fp8_recipe, Megatron-LM --fp8-recipe) changes the casts, the amax bookkeeping and the GEMM
// rate; Transformer Engine's quantizers as they move bytes:
// - delayed (DelayedScaling): as above; the scale comes from the amax history, so a cast is one pass.
// - tensorwise (Float8CurrentScaling): the scale comes from the tensor's own amax, so a cast reads the tensor
//   twice (an amax kernel, then the cast: read 4, write 2 per element); the norm before a linear computes the
//   amax in its kernel but writes BF16, which a cast then reads (TE's fused norm + amax path). No amax history,
//   so no end-of-region reduction. Check: Transformer Engine's GEMM profiling tutorial measures, on an H200 for
//   a 5B model's 12 GEMMs, 3.50 ms of current-scaling quantization per layer against 2.19 ms for delayed scaling
//   (docs/examples/gemm_profiling, "Worked Example: 5B Model on H200": autocast 20.285 and 18.978 ms against the
//   per-tensor kernels' 16.785 ms), a ratio of 1.60 where these byte counts give 1.5.
// - blockwise (Float8BlockScaling): one pass writing the row-wise and column-wise FP8 copies and an FP32 scale per
//   128 elements of each (read 2, write 2 + 1/16 per element; weights one per 128 x 128 block); the norm writes
//   BF16 and is quantized separately.
//   GEMMs run at GpuSpec::fp8_blockwise_gemm_fraction of the per-tensor rate.
// - mxfp8 (MXFP8BlockScaling): one pass with an E8M0 scale per 32 elements of each copy (write 2 + 1/16); the norm
//   quantizes in its own kernel (cuDNN's fused norm on Blackwell). GEMMs at GpuSpec::mxfp8_gemm_fraction.
// Not modelled: current scaling's TP all-reduce of the amax of a sequence-parallel input (one FP32 per linear).

#include "sim/lower/context.h"

namespace orrery {

/// Whether the linears of the transformer layers run FP8 GEMMs.
inline bool uses_fp8(const LoweringContext& ctx) { return ctx.gemm_dtype == DType::kFp8; }

/// Bytes per element of a linear layer's input as it is gathered (sequence parallelism) and saved for the weight
/// gradient: 1 with FP8, else the activation size.
inline Bytes linear_input_bytes(const LoweringContext& ctx) { return uses_fp8(ctx) ? 1 : ctx.act_bytes; }

/// Emits TE's quantization of `elements` BF16 values into FP8 and its transpose after `after`, as the recipe runs
/// it (delayed: one cast_transpose pass, read 2 bytes and write 1 + 1 per element; tensorwise: an amax pass
/// first; block recipes: plus their scales), and returns the last task.
TaskId emit_fp8_cast(Emitter& emit, const char* label, std::int64_t elements, TaskId after);

/// Emits what quantizing the output of the norm before a linear costs beyond the norm kernel itself, for
/// `elements` values after `after`: nothing for delayed scaling and MXFP8 (the norm writes FP8), a cast of the
/// BF16 output the norm wrote for tensorwise (whose amax the norm computed) and blockwise. Returns the last task.
TaskId emit_fp8_norm_output_cast(Emitter& emit, std::int64_t elements, TaskId after);

/// Emits the per-iteration cast of `elements` local weight elements (first micro-batch's forward only; returns
/// `after` otherwise or when the run is not FP8).
TaskId emit_fp8_weight_cast(Emitter& emit, const char* label, std::int64_t elements, TaskId after);

/// Emits the amax reduction and scale update that end one autocast region's forward or backward of a chunk with
/// `layers` FP8 transformer layers, after `after` (delayed scaling only: the other recipes keep no amax history).
/// Returns the scale update (or `after` when nothing is emitted).
TaskId emit_fp8_amax_update(Emitter& emit, int layers, bool backward, TaskId after);

/// Bytes of the FP8 weight cache on pipeline stage `stage`: 2 per local linear weight element (FP8 and transpose).
Bytes fp8_weight_cache_bytes(const LoweringContext& ctx, int stage);

}  // namespace orrery
