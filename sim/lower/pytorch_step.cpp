#include "sim/lower/pytorch_step.h"

namespace orrery {

namespace {

constexpr Bytes kF32 = 4, kBf16 = 2;

}  // namespace

PytorchStepLowering::PytorchStepLowering(Emitter& emit) : emit_(emit), ctx_(emit.ctx()) {
  const ModelSpec& m = ctx_.model;
  T_ = ctx_.tokens;
  h_ = m.hidden_size;
  H_ = m.num_attention_heads;
  K_ = m.num_kv_heads;
  d_ = m.head_dim;
  f_ = m.intermediate_size;
  V_ = m.vocab_size;  // Hugging Face does not pad the vocabulary
  mp_ = ctx_.training.framework == Framework::kFsdp2;
  r_ = mp_ ? kBf16 : kF32;
}

Bytes PytorchStepLowering::saved_per_layer() const {
  const Bytes norms = 2 * (kF32 * T_ * h_ + kF32 * T_ + kF32 * T_ * h_);
  const Bytes casts = 5 * kBf16 * T_ * h_;
  const Bytes sdpa = kBf16 * T_ * (H_ + 2 * K_) * d_ + kBf16 * T_ * H_ * d_ + kF32 * ctx_.batch * H_ * ctx_.seq;
  const Bytes mlp = 4 * kBf16 * T_ * f_;
  return norms + casts + sdpa + mlp;
}

// ---- building blocks ----


AttentionShape PytorchStepLowering::attention(bool backward) const {
  AttentionShape a;
  a.batch = ctx_.batch;
  a.heads = H_;
  a.kv_heads = K_;
  a.q_len = a.kv_len = ctx_.seq;
  a.head_dim_qk = a.head_dim_v = d_;
  a.causal = true;
  a.backward = backward;
  a.dtype = DType::kBf16;
  return a;
}

MaybeTask PytorchStepLowering::rmsnorm_fwd(MaybeTask input, bool save_input) {
  // LlamaRMSNorm: x.to(fp32); var = x.pow(2).mean(-1); x * rsqrt(var + eps); weight * that.
  const Bytes x = kF32 * T_ * h_, row = kF32 * T_, xb = kBf16 * T_ * h_;
  // FSDP mode: x.to(float32) first, and the weight multiply keeps the bf16 normalised x.
  if (mp_) input = emit_.elementwise("rmsnorm_to_float", ElementwiseKernel::kVectorized, xb, x, {input});
  MaybeTask t = emit_.elementwise("rmsnorm_pow", ElementwiseKernel::kVectorized, x, x, {input});
  emit_.save(t, (save_input ? x : 0) + x);  // the input (kept by pow and mul); the transient square
  t = emit_.elementwise("rmsnorm_mean", x, row);
  emit_.release(t, x);  // the square
  t = emit_.elementwise("rmsnorm_add_eps", ElementwiseKernel::kVectorized, row, row);
  t = emit_.elementwise("rmsnorm_rsqrt", ElementwiseKernel::kVectorized, row, row);
  emit_.save(t, row);
  t = emit_.elementwise("rmsnorm_mul", ElementwiseKernel::kStrided, x + row, x);  // x * rsqrt: a broadcast row
  if (!mp_) {
    emit_.save(t, x);  // the normalised x, kept by the weight multiply
    return emit_.elementwise("rmsnorm_weight", ElementwiseKernel::kStrided, x, x);  // a broadcast weight
  }
  t = emit_.elementwise("rmsnorm_to_bf16", ElementwiseKernel::kVectorized, x, xb);  // .to(input_dtype)
  emit_.save(t, xb);  // kept by the weight multiply
  t = emit_.elementwise("rmsnorm_weight", ElementwiseKernel::kStrided, xb, xb);
  emit_.save(t, xb);  // the output, which the linears after it keep (no autocast copies)
  return t;
}

MaybeTask PytorchStepLowering::rmsnorm_bwd(MaybeTask grad, bool saved_input) {
  // Autograd's kernels for weight * (x * rsqrt(mean(x^2) + eps)), each a separate launch.
  const Bytes x = kF32 * T_ * h_, row = kF32 * T_;
  const Bytes xw = mp_ ? kBf16 * T_ * h_ : x;  // the weight multiply's tensors (bf16 in FSDP mode)
  {
    const PhaseScope weight(emit_, Phase::kBackwardWeight);
    emit_.elementwise("rmsnorm_weight", ElementwiseKernel::kVectorized, 2 * xw, xw, {grad});  // dy * normalised
    const MaybeTask w = emit_.elementwise("rmsnorm_weight", xw, r_ * h_);   // summed over tokens -> weight .grad
    if (!mp_ && emit_.microbatch() <= 0) emit_.allocate(w, MemoryKind::kGradients, kF32 * h_);
  }
  MaybeTask t = emit_.elementwise("rmsnorm_weight", ElementwiseKernel::kStrided, xw, xw, {grad});  // dy * weight (broadcast)
  if (mp_) {
    emit_.release(t, xw);  // the norm's output (its linears have run their backward)
    t = emit_.elementwise("rmsnorm_to_bf16", ElementwiseKernel::kVectorized, xw, x);  // the cast's backward
  }
  t = emit_.elementwise("rmsnorm_mul", ElementwiseKernel::kStrided, x + row, x);  // d(normalised) * rsqrt, a broadcast row
  t = emit_.elementwise("rmsnorm_mul", ElementwiseKernel::kVectorized, 2 * x, x);  // d(normalised) * x
  t = emit_.elementwise("rmsnorm_sum", x, row);                          // summed per row -> d rsqrt
  for (int k = 0; k < 3; ++k) t = emit_.elementwise("rmsnorm_rsqrt", ElementwiseKernel::kVectorized, 2 * row, row);  // rsqrt' and the chain
  t = emit_.elementwise("rmsnorm_mean", ElementwiseKernel::kStrided, row, x);  // expand d var / h (a broadcast)
  t = emit_.elementwise("rmsnorm_pow", ElementwiseKernel::kVectorized, x, x);  // pow(x, 1)
  t = emit_.elementwise("rmsnorm_pow", ElementwiseKernel::kVectorized, x, x);  // times 2
  t = emit_.elementwise("rmsnorm_pow", ElementwiseKernel::kVectorized, 2 * x, x);  // times the incoming gradient
  t = emit_.elementwise("rmsnorm_add", ElementwiseKernel::kVectorized, 2 * x, x);  // both paths into dx
  if (mp_) t = emit_.elementwise("rmsnorm_to_float", ElementwiseKernel::kVectorized, x, xw);  // to the input's bf16
  emit_.release(t, xw + row + (saved_input ? x : 0));
  return t;
}

MaybeTask PytorchStepLowering::linear_fwd(const char* label, MaybeTask input, std::int64_t n, std::int64_t k, bool cast_input) {
  MaybeTask x = input;
  // In FSDP mode the input and the gathered weight are bf16 already.
  if (mp_) return emit_.gemm(label, GemmShape{T_, n, k, 1, DType::kBf16}, {x});
  if (cast_input) {
    x = emit_.elementwise("autocast_input", ElementwiseKernel::kVectorized, kF32 * T_ * k, kBf16 * T_ * k, {x});
    emit_.save(x, kBf16 * T_ * k);
  }
  // autocast's weight cache: the bf16 copy lives until this linear's backward has used it.
  const MaybeTask w = emit_.elementwise("autocast_weight", ElementwiseKernel::kVectorized, kF32 * n * k, kBf16 * n * k);
  emit_.allocate(w, MemoryKind::kWeights, kBf16 * n * k);
  return emit_.gemm(label, GemmShape{T_, n, k, 1, DType::kBf16}, {x, w});
}

MaybeTask PytorchStepLowering::linear_bwd(const char* label, MaybeTask grad, std::int64_t n, std::int64_t k,
                                          bool cast_input,
                                          bool release_input) {
  const MaybeTask dgrad = emit_.gemm(label, GemmShape{T_, k, n, 1, DType::kBf16}, {grad});
  if (mp_) {
    // The bf16 weight gradient is FSDP's unsharded gradient; a cast input was the norm's output (freed there).
    PhaseScope scope(emit_, Phase::kBackwardWeight);
    const MaybeTask wgrad = emit_.gemm(label, GemmShape{n, k, T_, 1, DType::kBf16});
    if (release_input && !cast_input) emit_.release(wgrad, kBf16 * T_ * k);
    return dgrad;
  }
  emit_.deallocate(dgrad, MemoryKind::kWeights, kBf16 * n * k);  // the cached bf16 weight
  {
    const PhaseScope weight(emit_, Phase::kBackwardWeight);
    const MaybeTask wgrad = emit_.gemm(label, GemmShape{n, k, T_, 1, DType::kBf16});
    if (release_input) emit_.release(wgrad, kBf16 * T_ * k);  // the saved (cast) input
    emit_.allocate(wgrad, MemoryKind::kGradients, kBf16 * n * k);  // the bf16 weight gradient
    // The autocast weight copy's backward widens the bf16 weight gradient to a new fp32 tensor (a copy); the first
    // micro-batch's becomes .grad, later ones are added into .grad in place (AccumulateGrad) and freed.
    const bool first = emit_.microbatch() <= 0;
    MaybeTask acc = emit_.elementwise("grad_accumulate", ElementwiseKernel::kCastCopy, kBf16 * n * k, kF32 * n * k);
    emit_.allocate(acc, MemoryKind::kGradients, kF32 * n * k);
    emit_.deallocate(acc, MemoryKind::kGradients, kBf16 * n * k);
    if (!first) {
      acc = emit_.elementwise("grad_accumulate", ElementwiseKernel::kVectorized, 2 * kF32 * n * k, kF32 * n * k);
      emit_.deallocate(acc, MemoryKind::kGradients, kF32 * n * k);
    }
  }
  if (!cast_input) return dgrad;
  return emit_.elementwise("autocast_input", ElementwiseKernel::kCastCopy, kBf16 * T_ * k, kF32 * T_ * k, {dgrad});  // the cast's backward
}

MaybeTask PytorchStepLowering::rope(MaybeTask input, std::int64_t e) {
  // q * cos + rotate_half(q) * sin with fp32 cos/sin: bf16 in, fp32 out. Eager kernels run in stream order, so
  // only the first needs its input as a dependency.
  // In FSDP mode cos and sin take the bf16 hidden states' dtype (HF LlamaRotaryEmbedding): all bf16.
  const ElementwiseKernel mul = mp_ ? ElementwiseKernel::kStrided : ElementwiseKernel::kStridedCast;
  emit_.elementwise("rope_mul", mul, kBf16 * e, r_ * e, {input});
  emit_.elementwise("rope_neg", ElementwiseKernel::kStridedHalf, kBf16 * e / 2, kBf16 * e / 2);
  emit_.elementwise("rope_cat", ElementwiseKernel::kCat, kBf16 * e, kBf16 * e);
  emit_.elementwise("rope_mul", mul, kBf16 * e, r_ * e);
  return emit_.elementwise("rope_add", ElementwiseKernel::kStrided, 2 * r_ * e, r_ * e);
}

MaybeTask PytorchStepLowering::rope_bwd(MaybeTask grad, std::int64_t e) {
  // Backward of q * cos + rotate_half(q) * sin with an fp32 gradient and a bf16 q: each mixed-dtype product's
  // gradient is an fp32 multiply then a cast to bf16; rotate_half's cat and slices scatter into zero-filled
  // tensors; neg; and the two bf16 paths are summed.
  emit_.elementwise("rope_mul", ElementwiseKernel::kStrided, r_ * e, r_ * e, {grad});
  if (!mp_) emit_.elementwise("rope_cast", ElementwiseKernel::kVectorized, kF32 * e, kBf16 * e);
  emit_.elementwise("rope_mul", ElementwiseKernel::kStrided, r_ * e, r_ * e);
  if (!mp_) emit_.elementwise("rope_cast", ElementwiseKernel::kVectorized, kF32 * e, kBf16 * e);
  emit_.elementwise("rope_neg", ElementwiseKernel::kStridedHalf, kBf16 * e / 2, kBf16 * e / 2);
  for (int half = 0; half < 2; ++half) {
    emit_.elementwise("rope_slice_zero", ElementwiseKernel::kVectorized, 0, kBf16 * e);
    emit_.elementwise("rope_slice_copy", ElementwiseKernel::kStridedHalf, kBf16 * e / 2, kBf16 * e / 2);
  }
  emit_.elementwise("rope_add", ElementwiseKernel::kVectorized, 2 * kBf16 * e, kBf16 * e);
  return emit_.elementwise("rope_add", ElementwiseKernel::kStridedHalf, 2 * kBf16 * e, kBf16 * e);  // q-strided + contiguous
}

MaybeTask PytorchStepLowering::residual_add(MaybeTask branch) {
  // fp32 residual + bf16 branch under autocast; both bf16 in FSDP mode.
  if (mp_) return emit_.elementwise("residual_add", ElementwiseKernel::kVectorized, 2 * kBf16 * T_ * h_, kBf16 * T_ * h_, {branch});
  return emit_.elementwise("residual_add", ElementwiseKernel::kCast, kF32 * T_ * h_ + kBf16 * T_ * h_, kF32 * T_ * h_, {branch});
}

MaybeTask PytorchStepLowering::residual_grad_cast(MaybeTask grad) {
  // The bf16 branch of an autocast residual add receives the fp32 gradient cast to bf16; nothing in FSDP mode.
  if (mp_) return grad;
  return emit_.elementwise("residual_add", ElementwiseKernel::kVectorized, kF32 * T_ * h_, kBf16 * T_ * h_, {grad});
}

// ---- the layer ----

MaybeTask PytorchStepLowering::layer_forward(MaybeTask input) {
  const std::int64_t q = H_ * d_, kv = K_ * d_;
  MaybeTask x = rmsnorm_fwd(input, true);
  const MaybeTask qp = linear_fwd("q_proj", x, q, h_, true);
  const MaybeTask kp = linear_fwd("k_proj", x, kv, h_, true);
  const MaybeTask vp = linear_fwd("v_proj", x, kv, h_, true);
  MaybeTask qr = rope(qp, T_ * q), kr = rope(kp, T_ * kv);
  // SDPA under autocast casts the fp32 q and k back to bf16.
  if (!mp_) {
    qr = emit_.elementwise("autocast_input", ElementwiseKernel::kVectorized, kF32 * T_ * q, kBf16 * T_ * q, {qr});
    kr = emit_.elementwise("autocast_input", ElementwiseKernel::kVectorized, kF32 * T_ * kv, kBf16 * T_ * kv, {kr});
  }
  const AttentionShape a = attention(false);
  // The flash kernel's output is already [b, s, H, d]: transpose(1, 2).reshape copies nothing, and o_proj keeps
  // the same storage SDPA keeps.
  MaybeTask o = emit_.attention("attention", a, {qr, kr, vp});
  emit_.save(o, kBf16 * T_ * (q + 2 * kv) + kBf16 * T_ * q + kF32 * ctx_.batch * H_ * ctx_.seq);
  o = linear_fwd("o_proj", o, h_, q, false);
  MaybeTask r = residual_add(o);
  x = rmsnorm_fwd(r, true);
  const MaybeTask gate = linear_fwd("gate_proj", x, f_, h_, true);
  const MaybeTask up = linear_fwd("up_proj", x, f_, h_, true);
  MaybeTask s = emit_.elementwise("silu", ElementwiseKernel::kVectorized, kBf16 * T_ * f_, kBf16 * T_ * f_, {gate});
  emit_.save(s, 2 * kBf16 * T_ * f_);  // SiLU's input (the gate output) and its output
  MaybeTask prod = emit_.elementwise("mul", ElementwiseKernel::kVectorized, 2 * kBf16 * T_ * f_, kBf16 * T_ * f_, {s,
                                     up});
  emit_.save(prod, 2 * kBf16 * T_ * f_);  // the up output (kept by the product) and the product (down's input)
  const MaybeTask down = linear_fwd("down_proj", prod, h_, f_, false);
  return residual_add(down);
}

MaybeTask PytorchStepLowering::layer_backward(MaybeTask grad) {
  const std::int64_t q = H_ * d_, kv = K_ * d_;
  // Residual add: the bf16 branch receives the fp32 gradient cast to bf16.
  MaybeTask g = residual_grad_cast(grad);
  g = linear_bwd("down_proj", g, h_, f_, false);
  MaybeTask ds = emit_.elementwise("mul", ElementwiseKernel::kVectorized, 2 * kBf16 * T_ * f_, kBf16 * T_ * f_, {g});  // d silu = d prod * up
  MaybeTask du = emit_.elementwise("mul", ElementwiseKernel::kVectorized, 2 * kBf16 * T_ * f_, kBf16 * T_ * f_, {g});  // d up = d prod * silu
  emit_.release(du, kBf16 * T_ * f_);  // the up output
  ds = emit_.elementwise("silu", ElementwiseKernel::kVectorized, 2 * kBf16 * T_ * f_, kBf16 * T_ * f_, {ds});
  emit_.release(ds, 2 * kBf16 * T_ * f_);  // SiLU's input and output
  const MaybeTask gg = linear_bwd("gate_proj", ds, f_, h_, true);
  const MaybeTask gu = linear_bwd("up_proj", du, f_, h_, true);
  g = emit_.elementwise("grad_add", ElementwiseKernel::kVectorized, 2 * r_ * T_ * h_, r_ * T_ * h_, {gg, gu});
  g = rmsnorm_bwd(g, true);
  g = emit_.elementwise("residual_grad_add", ElementwiseKernel::kVectorized, 2 * r_ * T_ * h_, r_ * T_ * h_, {g, grad});
  const MaybeTask r = g;
  g = residual_grad_cast(g);
  g = linear_bwd("o_proj", g, h_, q, false, false);
  const AttentionShape a = attention(true);
  g = emit_.attention("attention", a, {g});
  emit_.release(g, kBf16 * T_ * (q + 2 * kv) + kBf16 * T_ * q + kF32 * ctx_.batch * H_ * ctx_.seq);
  if (K_ < H_) {
    // GQA: the flash backward writes dK and dV for every query head, then sums each group.
    emit_.save(g, 2 * kBf16 * T_ * q);
    const MaybeTask sum = emit_.elementwise("attention_gqa_grad_sum", 2 * kBf16 * T_ * q, 2 * kBf16 * T_ * kv);
    emit_.release(sum, 2 * kBf16 * T_ * q);
    g = sum;
  }
  MaybeTask gq = g, gk = g;
  if (!mp_) {
    gq = emit_.elementwise("autocast_input", ElementwiseKernel::kCastCopy, kBf16 * T_ * q, kF32 * T_ * q, {g});
    gk = emit_.elementwise("autocast_input", ElementwiseKernel::kCastCopy, kBf16 * T_ * kv, kF32 * T_ * kv, {g});
  }
  gq = rope_bwd(gq, T_ * q);
  gk = rope_bwd(gk, T_ * kv);
  const MaybeTask a1 = linear_bwd("q_proj", gq, q, h_, true);
  const MaybeTask a2 = linear_bwd("k_proj", gk, kv, h_, true);
  const MaybeTask a3 = linear_bwd("v_proj", g, kv, h_, true);
  g = emit_.elementwise("grad_add", ElementwiseKernel::kVectorized, 2 * r_ * T_ * h_, r_ * T_ * h_, {a1, a2});
  g = emit_.elementwise("grad_add", ElementwiseKernel::kVectorized, 2 * r_ * T_ * h_, r_ * T_ * h_, {g, a3});
  g = rmsnorm_bwd(g, true);
  return emit_.elementwise("residual_grad_add", ElementwiseKernel::kVectorized, 2 * r_ * T_ * h_, r_ * T_ * h_, {g, r});
}

// ---- embedding, head and loss ----

MaybeTask PytorchStepLowering::embedding_forward(MaybeTask after) {
  return emit_.elementwise("embedding", r_ * T_ * h_ + 8 * T_, r_ * T_ * h_, {after});  // fp32 rows (bf16 in FSDP mode)
}

MaybeTask PytorchStepLowering::embedding_backward(MaybeTask grad) {
  // embedding_dense_backward: a zeroed fp32 table and a scatter-add of the token rows, accumulated into .grad
  // (tied to lm_head's, so the gradient memory exists already when the head ran first).
  const PhaseScope weight(emit_, Phase::kBackwardWeight);
  MaybeTask t = emit_.elementwise("embedding", ElementwiseKernel::kVectorized, 0, r_ * V_ * h_, {grad});
  const bool separate = !ctx_.model.tie_word_embeddings && emit_.microbatch() <= 0;
  if (separate && !mp_) emit_.allocate(t, MemoryKind::kGradients, kF32 * V_ * h_);
  t = emit_.elementwise("embedding", r_ * T_ * h_ + 8 * T_, r_ * T_ * h_);
  // FSDP mode: the table's bf16 gradient goes to the reduce-scatter as it is.
  if (!mp_) t = emit_.elementwise("grad_accumulate", ElementwiseKernel::kVectorized, 2 * kF32 * V_ * h_, kF32 * V_ * h_);
  return t;
}

MaybeTask PytorchStepLowering::head_forward(MaybeTask input) {
  MaybeTask x = rmsnorm_fwd(input, true);
  const Bytes logits16 = kBf16 * T_ * V_, logits32 = kF32 * T_ * V_;
  MaybeTask l = linear_fwd("lm_head", x, V_, h_, true);
  emit_.save(l, logits16);  // the bf16 logits, held by the model output until the loss is computed
  MaybeTask up = emit_.elementwise("logits_float", ElementwiseKernel::kCastCopy, logits16, logits32, {l});
  emit_.save(up, logits32);
  MaybeTask ls = emit_.elementwise("log_softmax", ElementwiseKernel::kLogSoftmax, logits32, logits32, {up});
  emit_.save(ls, logits32);  // log-softmax output, kept for the backward
  MaybeTask nll = emit_.elementwise("nll_loss", kF32 * T_ + 8 * T_, kF32, {ls});
  emit_.release(nll, logits16 + logits32);  // the bf16 and fp32 logits
  return nll;
}

MaybeTask PytorchStepLowering::head_backward(MaybeTask after) {
  const Bytes logits16 = kBf16 * T_ * V_, logits32 = kF32 * T_ * V_;
  MaybeTask g = emit_.elementwise("nll_loss", ElementwiseKernel::kVectorized, 8 * T_, logits32, {after});  // scatter -1/N into a zeroed fp32 matrix
  emit_.save(g, logits32);
  g = emit_.elementwise("log_softmax", ElementwiseKernel::kLogSoftmaxBackward, 2 * logits32, logits32, {g});
  emit_.save(g, logits32);
  emit_.release(g, 2 * logits32);  // the saved log-softmax and the NLL gradient
  g = emit_.elementwise("logits_float", ElementwiseKernel::kVectorized, logits32, logits16, {g});
  emit_.save(g, logits16);
  emit_.release(g, logits32);
  MaybeTask d = linear_bwd("lm_head", g, V_, h_, true);
  emit_.release(d, logits16);
  return rmsnorm_bwd(d, true);
}

}  // namespace orrery
