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
//
// Sequence parallelism: a tensor split over the TP ranks along the sequence and gathered before a GEMM (the input of
// a column-parallel linear, the output gradient of a row-parallel one) is quantized on each rank and gathered in FP8
// (TE's TransformerEngineBaseModule.grad_output_preprocess, "FP8 case with gather: unfused bgrad, cast, transpose
// for efficient gather": cast_to_fp8 of the shard, gather_along_first_dim, fp8_transpose; later releases gather
// through the quantizer, _all_gather_fp8). All ranks must then share one scale: delayed
// scaling's comes from the amax history, which the amax group reduces; current scaling's comes from the shard's own
// amax, so TE all-reduces (MAX) that one FP32 over the TP group before the cast (with_amax_reduction on the input
// quantizer of a column-parallel and the output-gradient quantizer of a row-parallel linear under sequence
// parallelism, Linear._customize_quantizers_float8_current_scaling). The gathered FP8 copy is transposed for the
// weight gradient afterwards (a per-tensor scale survives the transpose). The block recipes keep what they did:
// their column-wise scales cannot be made from the row-wise copy, so the output gradient is gathered in BF16 and
// quantized whole.

#include "sim/lower/context.h"

namespace orrery {

/// Whether the linears of the transformer layers run FP8 GEMMs.
inline bool uses_fp8(const LoweringContext& ctx) { return ctx.gemm_dtype == DType::kFp8; }

/// Bytes per element of a linear layer's input as it is gathered (sequence parallelism) and saved for the weight
/// gradient: 1 with FP8, else the activation size.
inline Bytes linear_input_bytes(const LoweringContext& ctx) { return uses_fp8(ctx) ? 1 : ctx.act_bytes; }

/// Whose amax sets a current-scaling (tensorwise) scale: the rank's own tensor, or the TP group's, for a
/// sequence-parallel shard gathered in FP8 (see above). kTpGroup adds the all-reduce only under tensorwise scaling
/// with sequence parallelism and TP > 1.
enum class AmaxScope { kRank, kTpGroup };

/// Whether a sequence-parallel output gradient is quantized per rank and gathered in FP8 (per-tensor recipes:
/// delayed and tensorwise) rather than gathered in BF16 and quantized whole (the block recipes).
bool fp8_gathers_quantized_grads(const LoweringContext& ctx);

/// Emits TE's quantization of `elements` BF16 values into FP8 and its transpose after `after`, as the recipe runs
/// it (delayed: one cast_transpose pass, read 2 bytes and write 1 + 1 per element; tensorwise: an amax pass
/// first, and its all-reduce over the TP group for AmaxScope::kTpGroup; block recipes: plus their scales), and
/// returns the last task.
MaybeTask emit_fp8_cast(Emitter& emit, const char* label, std::int64_t elements, MaybeTask after,
                        AmaxScope scope = AmaxScope::kRank);

/// Emits the quantization of a rank's `elements`-value sequence-parallel shard of an output gradient into the
/// row-wise FP8 copy that is then gathered (fp8_gathers_quantized_grads): read 2 bytes, write 1 per element, after
/// tensorwise's amax pass and its TP all-reduce. Returns the last task.
MaybeTask emit_fp8_shard_cast(Emitter& emit, std::int64_t elements, MaybeTask after);

/// Emits the FP8 transpose of `elements` gathered FP8 values for the weight gradient (read 1, write 1 per element:
/// TE's fp8_transpose). Returns the task.
MaybeTask emit_fp8_transpose(Emitter& emit, std::int64_t elements, MaybeTask after);

/// Emits what quantizing the output of the norm before a linear costs beyond the norm kernel itself, for
/// `elements` values after `after`: nothing for delayed scaling and MXFP8 (the norm writes FP8), a cast of the
/// BF16 output the norm wrote for tensorwise (whose amax the norm computed, all-reduced over the TP group first for
/// AmaxScope::kTpGroup) and blockwise. Returns the last task.
MaybeTask emit_fp8_norm_output_cast(Emitter& emit, std::int64_t elements, MaybeTask after, AmaxScope scope);

/// Emits the per-iteration cast of `elements` local weight elements (first micro-batch's forward only; returns
/// `after` otherwise or when the run is not FP8).
MaybeTask emit_fp8_weight_cast(Emitter& emit, const char* label, std::int64_t elements, MaybeTask after);

/// Emits the amax reduction and scale update that end one autocast region's forward or backward of a chunk with
/// `layers` FP8 transformer layers, after `after` (delayed scaling only: the other recipes keep no amax history).
/// Returns the scale update (or `after` when nothing is emitted).
MaybeTask emit_fp8_amax_update(Emitter& emit, int layers, bool backward, MaybeTask after);

/// Bytes of the FP8 weight cache on pipeline stage `stage`: 2 per local linear weight element (FP8 and transpose).
Bytes fp8_weight_cache_bytes(const LoweringContext& ctx, int stage);

}  // namespace orrery
