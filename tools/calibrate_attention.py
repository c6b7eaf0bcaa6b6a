#!/usr/bin/env python3
"""Measures fused attention on a GPU with PyTorch, for `orrery calibrate fit --attention`.

Why PyTorch and not cuDNN from C++: cuDNN reaches its fused flash-attention engines only through an operation graph
of a dozen backend descriptors (matmul, scale, causal mask, softmax statistics, dropout, ...) that the header-only
cudnn-frontend library builds; neither the CUDA toolkit nor Debian ships that library, the backend's own SDPA
descriptor (cuDNN 9) takes its causal mask only as an undocumented block-mask tensor, and none of it can be checked
on a machine without a GPU. PyTorch's scaled_dot_product_attention dispatches to fused kernels of the same family
(FlashAttention-2, cuDNN's fused attention, memory-efficient attention; the math fallback is disabled here), so it
measures a fused kernel close to what a training step runs, though not necessarily the one Transformer Engine picks.
Grouped-query K/V are passed as they are with enable_gqa=True (PyTorch 2.5+), as transformers' SDPA attention does
in the measured PyTorch steps: cuDNN then runs its native GQA kernels, whose backward adds a per-group reduction of
dK and dV (fmha_reduce_head in the H200 traces). With an older PyTorch they are expanded to all query heads outside
the timed region. Q, K, V and dO are stored [batch, seq, heads, head_dim] ("layout": "bshd"), as a training step
passes them. Each sample records which GQA path ran ("gqa": "native" or "expanded") and the kernels one forward and
backward call launched.

Reads the `attention` lines of a calibration plan (calibrate/bench/bench_plan.h):
    attention B H KVH S D causal|full DTYPE
and times, for each, the forward call (with autograd on, so it saves what training saves) and the backward call
separately with CUDA events after warm-up, on pseudo-random inputs (never zeros). Each repetition holds the stream
with torch.cuda._sleep while the host enqueues a batch of calls, so the host's dispatch time is not timed. Writes "orrery-attention-raw" version 1:
    {"format": "orrery-attention-raw", "version": 1, "gpu", "torch", "cuda", "cudnn", "date", "warmup",
     "repetitions", "samples": [{"batch", "heads", "kv_heads", "seq", "head_dim", "causal", "dtype",
                                 "forward_s": [...], "backward_s": [...], "gqa", "layout", "kernels": [names]}]}

    python3 tools/calibrate_attention.py --plan calibrate/plans/default.plan --out attention.json
"""
import argparse
import datetime
import json
import sys


def parse_plan(path):
    shapes = []
    with open(path) as f:
        for number, line in enumerate(f, 1):
            words = line.split("#", 1)[0].split()
            if not words or words[0] != "attention":
                continue
            if len(words) != 8 or words[6] not in ("causal", "full") or words[7] not in ("bf16", "fp16"):
                sys.exit(f"{path}:{number}: expected 'attention B H KVH S D causal|full bf16|fp16'")
            try:
                b, h, kvh, s, d = (int(w) for w in words[1:6])
            except ValueError:
                sys.exit(f"{path}:{number}: B H KVH S D must be whole numbers")
            if min(b, h, kvh, s, d) < 1 or h % kvh:
                sys.exit(f"{path}:{number}: sizes must be positive and KVH must divide H")
            shapes.append(dict(batch=b, heads=h, kv_heads=kvh, seq=s, head_dim=d, causal=words[6] == "causal",
                               dtype=words[7]))
    return shapes


def time_calls(torch, fn, warmup, repetitions, target_s=2e-3, max_batch=32, hold=None):
    """Median-ready per-call times of fn: CUDA events around a batch of calls, repeated. Before each batch the
    stream is held while the host enqueues it, so host dispatch is not timed: by `hold()` (enqueued work of about
    1.5 ms) when given, else by torch.cuda._sleep, a spin kernel."""
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(max(warmup, 1)):
        fn()
    stop.record()
    torch.cuda.synchronize()
    per_call = max(start.elapsed_time(stop) * 1e-3 / max(warmup, 1), 1e-7)
    batch = max(1, min(max_batch, int(target_s / per_call + 0.999)))
    out = []
    for _ in range(repetitions):
        if hold:
            for _ in range(1 + batch // 8):
                hold()
        else:
            torch.cuda._sleep(int(2e6 + batch * 2e5))  # ~1 ms + 0.1 ms per call at ~2 GHz: covers the host's dispatch
        start.record()
        for _ in range(batch):
            fn()
        stop.record()
        torch.cuda.synchronize()
        out.append(start.elapsed_time(stop) * 1e-3 / batch)
    return out


def power_hold(torch):
    """A bf16 8192^3 matrix product (about 1.4 ms on an H200): holds the stream as a training step's neighbouring
    GEMMs do, at full power, rather than behind an idle spin kernel. The H200 of 2026-11-30 ran its steps
    power-capped (clock-limit reason SW power cap, about 630 W, 1765 MHz on average while capped, against 1980);
    this hold put the calibration in the capped state too (clocks-attention.csv) yet moved the attention times by
    under 1%, so the slower attention inside a step is not reproduced by it (scenarios/measured/h200-2026-11-30)."""
    a = torch.rand(8192, 8192, device="cuda", dtype=torch.bfloat16) - 0.5
    b = torch.rand(8192, 8192, device="cuda", dtype=torch.bfloat16) - 0.5
    return lambda: torch.matmul(a, b)


def measure(torch, shape, warmup, repetitions, rotate=1, hold=None):
    F = torch.nn.functional
    dtype = torch.bfloat16 if shape["dtype"] == "bf16" else torch.float16
    b, h, kvh, s, d = (shape[k] for k in ("batch", "heads", "kv_heads", "seq", "head_dim"))
    gen = torch.Generator(device="cuda").manual_seed(1234)

    def rand(*size):
        return (torch.rand(*size, device="cuda", generator=gen, dtype=torch.float32) * 2 - 1).to(dtype)

    from torch.nn.attention import SDPBackend, sdpa_kernel

    fused = [SDPBackend.CUDNN_ATTENTION, SDPBackend.FLASH_ATTENTION, SDPBackend.EFFICIENT_ATTENTION]
    native = True
    with sdpa_kernel(fused):
        try:
            probe = rand(1, 1, h, d).transpose(1, 2), rand(1, 1, kvh, d).transpose(1, 2)
            F.scaled_dot_product_attention(probe[0], probe[1], probe[1], enable_gqa=h != kvh)
        except (TypeError, RuntimeError):  # no enable_gqa (PyTorch < 2.5), or no fused kernel takes it
            native = False

    def make_set():
        # Stored [batch, seq, heads, head_dim] and viewed as [batch, heads, seq, head_dim], as a training step hands
        # them to SDPA (transformers transposes its projections' [b, s, h, d] output; Megatron's [s, b, h, d] is
        # strided too). Without native GQA, K and V are expanded to every query head.
        kv_heads = kvh if native else h
        leaves = (rand(b, s, h, d).requires_grad_(), rand(b, s, kv_heads, d).requires_grad_(),
                  rand(b, s, kv_heads, d).requires_grad_())
        return dict(leaves=leaves, views=tuple(x.transpose(1, 2) for x in leaves), grad=rand(b, s, h, d).transpose(1, 2))

    # Several input sets used in turn, so that a call does not find the previous call's K and V in L2 (a training
    # step's attention reads them cold from HBM).
    sets = [make_set() for _ in range(rotate)]
    turn = [0]

    def next_set():
        turn[0] = (turn[0] + 1) % len(sets)
        return sets[turn[0]]

    def attend(x):
        q, k, v = x["views"]
        return F.scaled_dot_product_attention(q, k, v, is_causal=shape["causal"], enable_gqa=native and h != kvh)

    with sdpa_kernel(fused):
        forward_s = time_calls(torch, lambda: attend(next_set()), warmup, repetitions, hold=hold)
        for x in sets:
            x["out"] = attend(x)

        def backward():
            x = next_set()
            torch.autograd.grad(x["out"], x["leaves"], x["grad"], retain_graph=True)

        backward_s = time_calls(torch, backward, warmup, repetitions, hold=hold)
        x = sets[0]
        kernels = kernel_names(torch, lambda: torch.autograd.grad(attend(x), x["leaves"], x["grad"]))
    return dict(shape, forward_s=forward_s, backward_s=backward_s, gqa="native" if native else "expanded",
                layout="bshd", rotate=rotate, hold="gemm" if hold else "sleep", kernels=kernels)


def kernel_names(torch, fn):
    """The CUDA kernels one call launches, or [] where the profiler says nothing."""
    try:
        from torch.profiler import ProfilerActivity, profile

        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            fn()
            torch.cuda.synchronize()
        cuda = torch.autograd.DeviceType.CUDA
        return sorted({e.key[:160] for e in prof.key_averages() if getattr(e, "device_type", None) == cuda})
    except Exception as e:  # the names document the run; their absence must not lose the timings
        print(f"  note: no kernel names ({e})", file=sys.stderr)
        return []


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--plan", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--repetitions", type=int, default=20)
    ap.add_argument("--rotate", type=int, default=4, help="input sets used in turn (default 4; 1 keeps K/V in L2)")
    ap.add_argument("--hold", choices=("gemm", "sleep"), default="gemm",
                    help="what holds the stream before each timed batch: a full-power GEMM (default; the clocks of a "
                         "training step) or an idle spin kernel (boost clocks)")
    a = ap.parse_args()
    if a.warmup < 0 or a.repetitions < 1 or a.rotate < 1:
        sys.exit("--warmup must be >= 0, --repetitions and --rotate >= 1")
    shapes = parse_plan(a.plan)
    import torch  # only needed on the GPU machine

    if not torch.cuda.is_available():
        sys.exit("calibrate_attention: no CUDA device visible to PyTorch")
    hold = power_hold(torch) if a.hold == "gemm" else None
    samples = []
    for shape in shapes:
        try:
            sample = measure(torch, shape, a.warmup, a.repetitions, a.rotate, hold)
        except RuntimeError as e:  # no fused kernel for this shape (or out of memory): keep the others
            print(f"  attention {shape}: skipped ({e})", file=sys.stderr)
            torch.cuda.empty_cache()
            continue
        samples.append(sample)
        fwd = sorted(sample["forward_s"])[len(sample["forward_s"]) // 2]
        bwd = sorted(sample["backward_s"])[len(sample["backward_s"]) // 2]
        print(f"  attention {shape}: forward {fwd * 1e6:.1f} us, backward {bwd * 1e6:.1f} us", file=sys.stderr)
        torch.cuda.empty_cache()
    doc = dict(format="orrery-attention-raw", version=1, gpu=torch.cuda.get_device_name(0), torch=torch.__version__,
               cuda=torch.version.cuda, cudnn=str(torch.backends.cudnn.version()),
               date=datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
               warmup=a.warmup, repetitions=a.repetitions, rotate=a.rotate, hold=a.hold, backend="torch.nn.functional.scaled_dot_product_attention (cuDNN, flash or efficient; math disabled)",
               samples=samples)
    with open(a.out, "w") as f:
        json.dump(doc, f, indent=1)
    print(f"calibrate_attention: {len(samples)} shapes -> {a.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
