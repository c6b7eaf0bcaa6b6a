#!/usr/bin/env python3
"""Measures PyTorch's own eager CUDA kernels, for `orrery calibrate fit --pytorch` (the `training.framework:
"pytorch"` lowering, sim/lower/pytorch_step.cpp).

Why: an eager PyTorch step spends a third of its time in elementwise kernels, and PyTorch picks one of several
kernel paths for each (aten/src/ATen/native/cuda/CUDALoops.cuh, gpu_kernel_impl): a vectorized kernel when every
operand is contiguous and of one dtype; an unrolled kernel with per-element casts when the dtypes differ; and an
elementwise kernel with per-element offset arithmetic when an operand is broadcast or not contiguous. On an H200 the
last two move bytes at about half the rate of the first (H200 trace of a Llama-3.2-1B step, 2026-11-30), so one
copy bandwidth cannot price them all. Each case below runs the path a Llama step runs, at several sizes, and is
recorded with the bytes the lowering counts for it (every operand read once, the output written once):
    pytorch_vectorized     fp32 a + b, contiguous                                   12 B/element
    pytorch_cast           fp32 a + bf16 b -> fp32 (the residual add)               10 B/element
    pytorch_cast_copy      bf16 a.float() (autocast's casts back, the fp32 logits)  6 B/element
    pytorch_strided        fp32 x[T,h] * r[T,1] (a broadcast operand: RMSNorm)      8 B/element (+ r)
    pytorch_strided_half   bf16 q[b,s,H,d].transpose(1,2) + bf16 contiguous (RoPE's backward)  6 B/element
    pytorch_strided_cast   bf16 q[b,s,H,d].transpose(1,2) * fp32 cos[b,1,s,d] (RoPE)  6 B/element (+ cos)
    pytorch_cat            cat of the two strided halves of q (rotate_half)          4 B/element
    pytorch_log_softmax    log_softmax over 128256 fp32 logits per row               8 B/element
    pytorch_log_softmax_backward  its backward                                      12 B/element
    pytorch_adamw          torch.optim.AdamW(fused=True).step() over fp32 parameters  28 B/parameter
                           (parameter, gradient and both moments read; parameter and moments written)
Timing as tools/calibrate_attention.py: CUDA events around a batch of calls enqueued behind torch.cuda._sleep, after
warm-up, on pseudo-random inputs (never zeros). Writes "orrery-pytorch-kernels-raw" version 1:
    {"format", "version", "gpu", "torch", "cuda", "date", "warmup", "repetitions",
     "memory": [{"kind", "bytes", "elements", "times_s": [...], "kernels" (smallest size only): [names]}]}

    python3 tools/calibrate_pytorch_kernels.py --out pytorch.json
"""
import argparse
import datetime
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from calibrate_attention import kernel_names, time_calls  # noqa: E402  (the same event timing and names)

VOCAB = 128256  # Llama 3's vocabulary: the loss's row length


def cases(torch, n):
    """(kind, bytes counted, callable) for about n elements each."""
    gen = torch.Generator(device="cuda").manual_seed(n)

    def rand(*size, dtype=torch.float32):
        return (torch.rand(*size, device="cuda", generator=gen, dtype=torch.float32) * 2 - 1).to(dtype)

    f32, bf16 = torch.float32, torch.bfloat16
    out = []
    a, b = rand(n), rand(n)
    out.append(("pytorch_vectorized", 12 * n, lambda: a + b))
    b16 = rand(n, dtype=bf16)
    out.append(("pytorch_cast", 10 * n, lambda: a + b16))
    out.append(("pytorch_cast_copy", 6 * n, lambda: b16.float()))
    h = 2048
    x, r = rand(n // h, h), rand(n // h, 1)
    out.append(("pytorch_strided", 8 * n + 4 * (n // h), lambda: x * r))
    batch, heads, d = 4, 32, 64
    s = n // (batch * heads * d)
    q = rand(batch, s, heads, d, dtype=bf16).transpose(1, 2)
    cos = rand(batch, 1, s, d)
    out.append(("pytorch_strided_cast", 6 * n + 4 * batch * s * d, lambda: q * cos))
    q16 = rand(batch, heads, s, d, dtype=bf16)
    out.append(("pytorch_strided_half", 6 * n, lambda: q + q16))
    x1, x2 = q[..., : d // 2], q[..., d // 2:]
    out.append(("pytorch_cat", 4 * n, lambda: torch.cat((x2, x1), dim=-1)))
    rows = max(1, n // VOCAB)
    logits = rand(rows, VOCAB)
    ls = torch.log_softmax(logits, dim=-1)
    grad = rand(rows, VOCAB)
    e = rows * VOCAB
    out.append(("pytorch_log_softmax", 8 * e, lambda: torch.log_softmax(logits, dim=-1)))
    out.append(("pytorch_log_softmax_backward", 12 * e,
                lambda: torch.ops.aten._log_softmax_backward_data(grad, ls, -1, f32)))
    params = [torch.nn.Parameter(rand(n // 16)) for _ in range(16)]
    for p in params:
        p.grad = rand(n // 16)
    opt = torch.optim.AdamW(params, lr=1e-6, fused=True)
    opt.step()  # allocates the moments
    out.append(("pytorch_adamw", 28 * (n // 16) * 16, opt.step))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--repetitions", type=int, default=15)
    ap.add_argument("--sizes", default="22,24,26,27", help="log2 of the element counts (default 22,24,26,27)")
    a = ap.parse_args()
    if a.warmup < 0 or a.repetitions < 1:
        sys.exit("--warmup must be >= 0 and --repetitions >= 1")
    try:
        sizes = [1 << int(w) for w in a.sizes.split(",")]
    except ValueError:
        sys.exit(f"--sizes ({a.sizes}) must be comma-separated whole numbers")
    if any(n < (1 << 20) or n > (1 << 28) for n in sizes):
        sys.exit(f"--sizes ({a.sizes}) must lie in 20..28")
    import torch  # only needed on the GPU machine

    if not torch.cuda.is_available():
        sys.exit("calibrate_pytorch_kernels: no CUDA device visible to PyTorch")
    samples = []
    with torch.no_grad():
        for n in sizes:
            for kind, nbytes, fn in cases(torch, n):
                try:
                    times = time_calls(torch, fn, a.warmup, a.repetitions)
                except RuntimeError as e:  # out of memory on a smaller card: keep the other sizes
                    print(f"  {kind} {n}: skipped ({e})", file=sys.stderr)
                    continue
                median = sorted(times)[len(times) // 2]
                sample = dict(kind=kind, bytes=nbytes, elements=n, times_s=times)
                if n == sizes[0]:
                    sample["kernels"] = kernel_names(torch, fn)
                samples.append(sample)
                print(f"  {kind:30s} 2^{n.bit_length() - 1:<3d} {nbytes / 2**20:9.1f} MiB  median {median * 1e6:9.1f} us"
                      f"  {nbytes / median / 1e9:7.0f} GB/s", file=sys.stderr)
            torch.cuda.empty_cache()
    doc = dict(format="orrery-pytorch-kernels-raw", version=1, gpu=torch.cuda.get_device_name(0),
               torch=torch.__version__, cuda=torch.version.cuda,
               date=datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
               warmup=a.warmup, repetitions=a.repetitions, memory=samples)
    with open(a.out, "w") as f:
        json.dump(doc, f, indent=1)
    print(f"calibrate_pytorch_kernels: {len(samples)} samples -> {a.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
