#!/usr/bin/env python3
"""Times LLM decode steps on one GPU, as an inference engine runs them (for the rollout model of RL post-training):
one new token for each of `batch` sequences whose keys and values for `context` earlier tokens sit in a KV cache.

The step is Llama-3.1-8B's (Hugging Face config: 32 layers, hidden 4096, 32 query and 8 key/value heads of 128,
SwiGLU intermediate 14336, vocabulary 128256) in BF16 with random weights: per layer RMSNorm, the fused QKV GEMM,
attention of the one new query over the cache (torch's scaled_dot_product_attention with GQA), the output
projection, RMSNorm, the fused gate/up GEMM, SiLU x up, the down GEMM; then the final norm and the LM head. Rotary
embedding and the cache write are left out (elementwise, a few KB per sequence). Each step is captured once in a
CUDA graph and replayed, as vLLM and SGLang run decode, so the time is the GPU's, without Python's launch cost.

Writes OUT: {"gpu", "torch", "model", "points": [{"batch", "context", "step_s", "weight_bytes", "kv_bytes",
"bytes_per_s"}]} where step_s is the median of the replays and bytes_per_s = (weights + KV read) / step_s.

    python3 tools/measure_decode.py --out decode.json
"""
import argparse
import json
import statistics


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--replays", type=int, default=20)
    args = ap.parse_args()
    import torch
    import torch.nn.functional as F

    torch.manual_seed(0)
    dev = "cuda"
    dt = torch.bfloat16
    layers, hidden, heads, kv_heads, head_dim, inter, vocab = 32, 4096, 32, 8, 128, 14336, 128256

    def w(*shape):
        return (torch.randn(*shape, device=dev, dtype=dt) * 0.02)

    weights = [dict(qkv=w((heads + 2 * kv_heads) * head_dim, hidden), o=w(hidden, heads * head_dim),
                    gate_up=w(2 * inter, hidden), down=w(hidden, inter),
                    n1=torch.ones(hidden, device=dev, dtype=dt), n2=torch.ones(hidden, device=dev, dtype=dt))
               for _ in range(layers)]
    head = w(vocab, hidden)
    norm = torch.ones(hidden, device=dev, dtype=dt)
    weight_bytes = sum(t.numel() * t.element_size() for lw in weights for t in lw.values())
    weight_bytes += head.numel() * head.element_size() + norm.numel() * norm.element_size()

    def rms(x, g):
        return x * torch.rsqrt(x.float().pow(2).mean(-1, keepdim=True) + 1e-5).to(x.dtype) * g

    points = []
    for context in (1024, 4096):
        for batch in (1, 8, 32, 128):
            kv_bytes = 2 * layers * batch * kv_heads * context * head_dim * 2
            if kv_bytes > 60e9:
                continue
            caches = [(w(batch, kv_heads, context, head_dim), w(batch, kv_heads, context, head_dim))
                      for _ in range(layers)]
            x0 = w(batch, hidden)

            def step():
                x = x0
                for lw, (k, v) in zip(weights, caches):
                    h = rms(x, lw["n1"]) @ lw["qkv"].t()
                    q = h[:, :heads * head_dim].view(batch, heads, 1, head_dim)
                    a = F.scaled_dot_product_attention(q, k, v, enable_gqa=True)
                    x = x + a.reshape(batch, heads * head_dim) @ lw["o"].t()
                    g, u = (rms(x, lw["n2"]) @ lw["gate_up"].t()).chunk(2, dim=-1)
                    x = x + (F.silu(g) * u) @ lw["down"].t()
                return rms(x, norm) @ head.t()

            s = torch.cuda.Stream()
            s.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(s):
                for _ in range(3):
                    step()
            torch.cuda.current_stream().wait_stream(s)
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph):
                step()
            for _ in range(3):
                graph.replay()
            times = []
            for _ in range(args.replays):
                start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                start.record()
                graph.replay()
                end.record()
                end.synchronize()
                times.append(start.elapsed_time(end) * 1e-3)
            t = statistics.median(times)
            points.append({"batch": batch, "context": context, "step_s": t, "weight_bytes": weight_bytes,
                           "kv_bytes": kv_bytes, "bytes_per_s": (weight_bytes + kv_bytes) / t})
            print(json.dumps(points[-1]), flush=True)
            del graph, caches
            torch.cuda.empty_cache()
    out = {"gpu": torch.cuda.get_device_name(), "torch": torch.__version__,
           "model": "llama3.1-8b shapes, bf16, random weights, CUDA graph per step", "points": points}
    with open(args.out, "w") as f:
        json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
