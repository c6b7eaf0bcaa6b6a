#pragma once
// `training.framework: "pytorch"`: a training step as plain PyTorch eager runs a Hugging Face Llama-style model
// (transformers' LlamaForCausalLM) under the recipe of tools/pytorch_train_step.py: fp32 parameters and gradients,
// torch.autocast(bfloat16), scaled_dot_product_attention (fused flash kernel), AdamW(fused=True), one GPU.
//
// What differs from Megatron's lowering, op by op (the kernels PyTorch eager launches):
//   - every elementwise op is its own kernel: RMSNorm in fp32 as HF writes it (pow, mean, add, rsqrt, mul, weight
//     mul), RoPE (mul, neg, cat, mul, add, promoted to fp32 by the fp32 cos/sin), SiLU and the gate product,
//     residual adds in fp32 (the residual stream stays fp32: embeddings are fp32 and autocast leaves adds alone);
//   - autocast casts each linear's fp32 input to bf16 (one cast per linear, even for q, k and v sharing an input)
//     and each weight once per forward (its cache), and keeps the bf16 weight for the backward;
//   - weight gradients come out of the GEMM in bf16 and are cast and accumulated into the fp32 `.grad`;
//   - the loss upcasts the bf16 logits to fp32 and runs log-softmax and NLL in fp32 (HF ForCausalLMLoss);
//   - AdamW(fused=True) reads parameter, gradient and both moments (16 bytes) and writes three (12 bytes) per
//     parameter; zero_grad(set_to_none) frees the gradients, so they exist only from the backward to the step.
// Saved activations are the tensors autograd keeps for those ops (see saved_per_layer()). The model is built with
// use_cache=False (a training step needs no KV cache; with the config default transformers would build one).
// Under FSDP2 (training.framework "fsdp2") the same modules run in FSDP mode: see mp_ below and sim/lower/fsdp2.h.

#include <cstdint>

#include "sim/lower/context.h"

namespace orrery {

class PytorchStepLowering {
 public:
  /// Emits into `emit`'s program at its current (micro-batch, layer, phase); tokens T = micro-batch x sequence.
  explicit PytorchStepLowering(Emitter& emit);

  // Each emits one unit's tasks with their memory effects (bytes) after `input`/`grad`/`after` and returns the task
  // whose end makes the unit's output (fp32 hidden states, or their gradient) ready.
  MaybeTask embedding_forward(MaybeTask after);   // fp32 row gather
  MaybeTask embedding_backward(MaybeTask grad);   // zeroed fp32 table, scatter-add, accumulation into .grad
  MaybeTask layer_forward(MaybeTask input);       // one decoder layer, saving saved_per_layer() bytes
  MaybeTask layer_backward(MaybeTask grad);       // its backward, releasing them; weight gradients into fp32 .grad
  MaybeTask head_forward(MaybeTask input);        // final norm, LM head, fp32 logits, log-softmax and NLL
  MaybeTask head_backward(MaybeTask after);       // their backward down to the final norm's input gradient

  /// Bytes autograd keeps from one layer's forward until its backward, T = b s tokens:
  ///   two RMSNorms: input 4Th, 1/rms 4T, normalised 4Th each;  casts of the five linears' fp32 inputs 2Th each;
  ///   SDPA: bf16 q, k, v, output 2T(H + 2K)d + 2THd, log-sum-exp 4bHs (o_proj keeps the same output storage);
  ///   MLP: gate output, SiLU output, up output and their product 2Tf each.
  Bytes saved_per_layer() const;

 private:
  /// The causal self-attention of one layer in bf16 (SDPA's fused kernel), forward or backward.
  AttentionShape attention(bool backward) const;
  MaybeTask rmsnorm_fwd(MaybeTask input, bool save_input);
  MaybeTask rmsnorm_bwd(MaybeTask grad, bool saved_input);
  /// An autocast linear: optional fp32->bf16 cast of the input (saved), the weight cast (kept until the backward),
  /// the bf16 GEMM [tokens x n x k].
  MaybeTask linear_fwd(const char* label, MaybeTask input, std::int64_t n, std::int64_t k, bool cast_input);
  /// dgrad and wgrad of that linear, the gradient accumulated into the fp32 .grad, saved input and weight released.
  /// `release_input` false when the saved input belongs to another op (o_proj shares SDPA's output).
  MaybeTask linear_bwd(const char* label, MaybeTask grad, std::int64_t n, std::int64_t k, bool cast_input,
                       bool release_input = true);
  MaybeTask rope(MaybeTask input, std::int64_t elements);
  /// The residual add after a branch, and the gradient's way into the branch.
  MaybeTask residual_add(MaybeTask branch);
  MaybeTask residual_grad_cast(MaybeTask grad);
  MaybeTask rope_bwd(MaybeTask grad, std::int64_t elements);

  Emitter& emit_;
  const LoweringContext& ctx_;
  std::int64_t T_ = 0, h_ = 0, H_ = 0, K_ = 0, d_ = 0, f_ = 0, V_ = 0;
  /// FSDP mode (training.framework fsdp2, sim/lower/fsdp2.h): MixedPrecisionPolicy's bf16 parameters instead of
  /// autocast, so no weight or input casts, bf16 hidden states and residuals, RMSNorm upcasting inside; weight
  /// gradients stay the bf16 unsharded gradients FSDP reduces (their memory is counted there).
  bool mp_ = false;
  Bytes r_ = 4;  // bytes per element of the hidden states and residual stream: fp32 under autocast, bf16 in FSDP mode
};

}  // namespace orrery
