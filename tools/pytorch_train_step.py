#!/usr/bin/env python3
"""Runs real training steps of a Llama-style model with PyTorch on one GPU and records what Orrery predicts:
iteration time, peak memory, and a Kineto trace for `orrery compare --kineto`.

The recipe (what `training.framework: "pytorch"` in a scenario means, sim/lower/pytorch_layer.h):
  - model: transformers' LlamaForCausalLM built from the scenario's `model` block (Hugging Face config keys), random
    weights, no downloads, use_cache=False; attn_implementation "sdpa" (PyTorch's fused scaled-dot-product
    attention); eager mode
  - parameters and gradients in fp32; forward and loss under torch.autocast(device_type="cuda", dtype=bfloat16)
  - torch.optim.AdamW(fused=True); gradients set to None after each step
  - input: random token ids, micro_batch_size x seq_length, labels = inputs (HF shifts them); global_batch_size /
    micro_batch_size micro-batches per step, their losses scaled and gradients accumulated before the optimizer
Warm-up steps are run first (they allocate the optimizer states and warm the allocator and cuBLAS), then timed steps
between CUDA events; the peak memory is torch.cuda.max_memory_allocated over the timed steps; then a few more steps
under torch.profiler write the trace. Writes RESULT.json:
  {"scenario", "gpu", "torch", "transformers", "cuda", "recipe", "parameters", "step_times_s", "iteration_time_s"
   (median), "max_memory_allocated_bytes", "max_memory_reserved_bytes", "tokens_per_s", "trace"}

    python3 tools/pytorch_train_step.py scenarios/measured/h200-llama-1b.json --out OUT/llama-1b
"""
import argparse
import gzip
import json
import os
import shutil
import statistics
import sys


def annotate_layers(torch, model):
    """Marks each decoder layer's forward and backward in the trace as user annotations "orrery.layer<N>.forward"
    and "orrery.layer<N>.backward", so `orrery compare --kineto` can attribute kernels to layers. Returns a function
    that removes the hooks and closes any range left open (for a transformers version whose layers refuse full
    backward hooks: the step then runs unannotated rather than not at all)."""
    open_ranges = {}
    handles = []

    def enter(name):
        r = torch.profiler.record_function(name)
        r.__enter__()
        open_ranges[name] = r

    def leave(name):
        r = open_ranges.pop(name, None)
        if r is not None:
            r.__exit__(None, None, None)

    def remove():
        for h in handles:
            h.remove()
        handles.clear()
        for name in list(open_ranges):
            leave(name)

    try:
        for i, layer in enumerate(model.model.layers):
            fwd, bwd = f"orrery.layer{i}.forward", f"orrery.layer{i}.backward"
            handles.append(layer.register_forward_pre_hook(lambda m, args, n=fwd: enter(n)))
            handles.append(layer.register_forward_hook(lambda m, args, out, n=fwd: leave(n)))
            handles.append(layer.register_full_backward_pre_hook(lambda m, grad_out, n=bwd: enter(n)))
            handles.append(layer.register_full_backward_hook(lambda m, grad_in, grad_out, n=bwd: leave(n)))
    except (AttributeError, RuntimeError) as e:
        print(f"note: layer annotations not installed ({e})", file=sys.stderr)
        remove()
    return remove


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("scenario")
    ap.add_argument("--out", required=True, help="output prefix: PREFIX.json and PREFIX.trace.json.gz")
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--profiled-steps", type=int, default=2)
    ap.add_argument("--no-layer-annotations", action="store_true", help="leave the decoder layers unannotated")
    a = ap.parse_args()
    if a.warmup < 1 or a.steps < 1 or a.profiled_steps < 1:
        sys.exit("--warmup, --steps and --profiled-steps must be at least 1")
    scenario = json.load(open(a.scenario))
    model_cfg = dict(scenario["model"])
    training = scenario.get("training", {})
    seq = int(training["seq_length"])
    batch = int(training.get("micro_batch_size", 1))
    global_batch = int(training.get("global_batch_size", batch))
    if global_batch < batch or global_batch % batch:
        sys.exit(f"{a.scenario}: training.global_batch_size ({global_batch}) must be a multiple of micro_batch_size "
                 f"({batch}) on one GPU")
    accumulation = global_batch // batch  # micro-batches per step, their gradients accumulated
    if training.get("framework", "pytorch") != "pytorch":
        print(f"note: {a.scenario} says training.framework={training.get('framework')}; running the PyTorch recipe",
              file=sys.stderr)

    import torch
    import transformers

    model_cfg.pop("name", None)
    model_cfg["model_type"] = "llama"
    model_cfg["use_cache"] = False  # a training step needs no KV cache (the config default would build one)
    config = transformers.LlamaConfig(**{k: v for k, v in model_cfg.items() if k != "model_type"})
    try:
        config._attn_implementation = "sdpa"  # transformers' own default for Llama where SDPA exists
    except (AttributeError, ValueError) as e:
        print(f"note: could not select sdpa explicitly ({e}); using transformers' default", file=sys.stderr)
    torch.manual_seed(0)
    device = torch.device("cuda")
    with torch.device(device):  # initialise on the GPU: a 3B model's random init on the CPU takes tens of seconds
        model = transformers.LlamaForCausalLM(config).to(dtype=torch.float32)
    model.train()
    params = sum(p.numel() for p in model.parameters())
    remove_annotations = None if a.no_layer_annotations else annotate_layers(torch, model)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-5, fused=True)
    gen = torch.Generator(device=device).manual_seed(1)
    tokens = torch.randint(0, config.vocab_size, (batch, seq), device=device, generator=gen)

    def step():
        for _ in range(accumulation):
            with torch.autocast(device_type="cuda", dtype=torch.bfloat16):
                loss = model(input_ids=tokens, labels=tokens).loss / accumulation
            loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)

    try:
        step()
    except RuntimeError as e:
        if remove_annotations is None:
            raise
        print(f"note: the annotated step failed ({e}); running without layer annotations", file=sys.stderr)
        remove_annotations()
        optimizer.zero_grad(set_to_none=True)
        step()
    for _ in range(a.warmup - 1):
        step()
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    times = []
    for _ in range(a.steps):
        start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        step()
        stop.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(stop) * 1e-3)
    peak = torch.cuda.max_memory_allocated()
    reserved = torch.cuda.max_memory_reserved()

    trace_json = a.out + ".trace.json"
    from torch.profiler import ProfilerActivity, profile, schedule

    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA],
                 schedule=schedule(wait=0, warmup=1, active=a.profiled_steps),
                 on_trace_ready=lambda p: p.export_chrome_trace(trace_json)) as prof:
        for _ in range(1 + a.profiled_steps):
            step()
            prof.step()
    with open(trace_json, "rb") as src, gzip.open(trace_json + ".gz", "wb") as dst:
        shutil.copyfileobj(src, dst)
    os.remove(trace_json)

    median = statistics.median(times)
    result = dict(scenario=os.path.basename(a.scenario), gpu=torch.cuda.get_device_name(0), torch=torch.__version__,
                  transformers=transformers.__version__, cuda=torch.version.cuda,
                  recipe="fp32 parameters, torch.autocast bf16, AdamW(fused=True), SDPA attention, eager",
                  attn_implementation=getattr(model.config, "_attn_implementation", "unknown"),
                  parameters=params, micro_batch_size=batch, global_batch_size=global_batch, seq_length=seq,
                  warmup_steps=a.warmup,
                  step_times_s=times, iteration_time_s=median, max_memory_allocated_bytes=peak,
                  max_memory_reserved_bytes=reserved, tokens_per_s=global_batch * seq / median,
                  trace=os.path.basename(trace_json + ".gz"))
    with open(a.out + ".json", "w") as f:
        json.dump(result, f, indent=1)
    print(f"{result['scenario']}: {params / 1e9:.2f} B parameters, step {median * 1e3:.1f} ms, "
          f"peak {peak / 2**30:.2f} GiB allocated -> {a.out}.json", file=sys.stderr)


if __name__ == "__main__":
    main()
