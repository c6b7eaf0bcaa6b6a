#!/usr/bin/env python3
"""End-to-end checks of the `orrery` command line: the built-in default, predictions from flags alone, Megatron
flag spellings, trace and timeline files, `list`, and exit status 2 with a named field for bad input.
Usage: cli_test.py ORRERY SOURCE_DIR"""
import json
import os, re, subprocess, sys, tempfile

problems = []


def run(orrery, *args):
    return subprocess.run([orrery, *args], capture_output=True, text=True)


def expect(condition, what):
    if not condition:
        problems.append(what)


def main():
    orrery, source = sys.argv[1], sys.argv[2]
    tmp = tempfile.mkdtemp()

    r = run(orrery, "predict")
    expect(r.returncode == 0 and "built-in default" in r.stderr and "iteration time" in r.stdout,
           f"predict without a scenario: exit {r.returncode}, stderr {r.stderr[:200]}")
    # The README's copy of this summary is compared line for line by the readme_commands test.

    r = run(orrery, "fit", "records", os.path.join(source, "scenarios", "validation"), "--leave-one-out",
            "--leave-one-generation-out")
    expect(r.returncode == 2 and "--leave-one-generation-out" in r.stderr,
           f"fit records with both leave-one-out flags: exit {r.returncode}, {r.stderr[:200]}")

    r = run(orrery, "predict", "--model", "llama3-70b", "--cluster", "dgx-h100", "--num-gpus", "64", "--tp", "8", "--json")
    expect(r.returncode == 0, f"predict from flags: exit {r.returncode}: {r.stderr[:200]}")
    if r.returncode == 0:
        rep = json.loads(r.stdout)
        expect(rep["plan"]["tp"] == 8 and rep["plan"]["dp"] == 8 and rep["num_gpus"] == 64,
               f"predict from flags: plan {rep['plan']}")

    base = ["predict", "--model", "llama3-8b", "--num-gpus", "16", "--seq-length", "4096", "--global-batch-size", "32",
            "--json"]
    short = run(orrery, *base, "--tp", "2", "--pp", "2", "--sequence-parallel", "--use-distributed-optimizer")
    long = run(orrery, *base, "--tensor-model-parallel-size", "2", "--pipeline-model-parallel-size", "2",
               "--sequence-parallel", "--zero-stage", "1")
    expect(short.returncode == 0 and short.stdout == long.stdout,
           f"Megatron flag spellings give a different report: {short.stderr[:200]} {long.stderr[:200]}")
    # A Megatron-LM launch line pasted after --model (pretrain_gpt.py's arguments as Megatron-Bridge's Llama-3-8B
    # recipe passes them, cut to 8 layers): the same report as the scenario file that writes its settings, and the
    # arguments that change nothing named on stderr.
    megatron_line = ("--num-layers 8 --hidden-size 4096 --ffn-hidden-size 14336 --num-attention-heads 32 "
                     "--group-query-attention --num-query-groups 8 --seq-length 4096 --max-position-embeddings 8192 "
                     "--micro-batch-size 1 --global-batch-size 32 --tensor-model-parallel-size 2 "
                     "--pipeline-model-parallel-size 2 --sequence-parallel --use-distributed-optimizer "
                     "--overlap-grad-reduce --overlap-param-gather --bf16 --recompute-granularity full "
                     "--recompute-method block --recompute-num-layers 1 --use-mcore-models --transformer-impl "
                     "transformer_engine --lr 3e-4 --min-lr 3e-5 --lr-decay-style cosine --train-iters 1000 "
                     "--data-path 0.5 /data/a 0.5 /data/b --split 99,1,0 --save /ckpt --seed 1234").split()
    pasted = run(orrery, "predict", "--model", "llama3-8b", "--num-gpus", "16", *megatron_line, "--json")
    scenario = {"model": {"preset": "llama3-8b", "num_hidden_layers": 8, "hidden_size": 4096,
                          "intermediate_size": 14336, "num_attention_heads": 32, "num_key_value_heads": 8,
                          "max_position_embeddings": 8192},
                "cluster": {"preset": "dgx-h100", "num_gpus": 16},
                "parallel": {"tp": 2, "pp": 2, "sequence_parallel": True, "use_distributed_optimizer": True,
                             "overlap_grad_reduce": True, "overlap_param_gather": True},
                "training": {"seq_length": 4096, "micro_batch_size": 1, "global_batch_size": 32, "precision": "bf16",
                             "recompute": "full", "recompute_method": "block", "recompute_num_layers": 1}}
    scenario_file = os.path.join(tmp, "megatron_line.json")
    with open(scenario_file, "w") as f:
        json.dump(scenario, f)
    from_file = run(orrery, "predict", scenario_file, "--json")
    expect(pasted.returncode == 0 and from_file.returncode == 0, f"pasted Megatron line: {pasted.stderr[:300]}")
    if pasted.returncode == 0 and from_file.returncode == 0:
        a, b = json.loads(pasted.stdout), json.loads(from_file.stdout)
        for key in ("iteration_time_s", "memory", "plan"):
            expect(key in a and a[key] == b.get(key), f"pasted Megatron line and scenario file differ in {key}")
        expect(a["plan"].get("recompute_method") == "block", f"pasted line's plan: {a['plan']}")
        for ignored in ("--lr 3e-4", "--data-path 0.5 /data/a 0.5 /data/b", "--use-mcore-models", "--seed 1234"):
            expect(f"ignored {ignored} (" in pasted.stderr, f"{ignored} not named as ignored: {pasted.stderr[:400]}")
    # Megatron-LM's nargs lists take their items space-separated as well as with commas; a list flag given twice is
    # refused like any other repeat; an architecture argument is refused naming the config key that gives it.
    spaced = run(orrery, *base, "--recompute-granularity", "selective", "--recompute-modules", "core_attn", "mlp")
    commas = run(orrery, *base, "--recompute-granularity", "selective", "--recompute-modules", "core_attn,mlp")
    expect(spaced.returncode == 0 and spaced.stdout == commas.stdout,
           f"--recompute-modules core_attn mlp: exit {spaced.returncode}, {spaced.stderr[:200]}")
    r = run(orrery, *base, "--recompute-granularity", "selective", "--recompute-modules", "core_attn",
            "--recompute-modules", "mlp")
    expect(r.returncode == 2 and "--recompute-modules (given more than once)" in r.stderr,
           f"--recompute-modules twice: exit {r.returncode}, {r.stderr[:200]}")
    r = run(orrery, "search", "--model", "llama3-8b", "--num-gpus", "8", "--tp", "3", "--global-batch-size", "32",
            "--quiet")
    expect(r.returncode == 2 and "--tp, --pp, --cp (3 x" in r.stderr and "divide" in r.stderr,
           f"search with no plan in its space: exit {r.returncode}, {r.stderr[:200]}")
    r = run(orrery, *base, "--swiglu")
    expect(r.returncode == 2 and "--swiglu (given)" in r.stderr and "hidden_act" in r.stderr,
           f"--swiglu: exit {r.returncode}, {r.stderr[:200]}")
    r = run(orrery, *base, "--normalization", "RMSNorm")
    expect(r.returncode == 2 and "--normalization (RMSNorm)" in r.stderr and "config" in r.stderr,
           f"--normalization RMSNorm: exit {r.returncode}, {r.stderr[:200]}")
    r = run(orrery, "predict", "--model", "llama3-8b", "--num-gpus", "8", "--num-layers", "two")
    expect(r.returncode == 2 and "--num-layers" in r.stderr and "whole number" in r.stderr,
           f"--num-layers two: exit {r.returncode}, {r.stderr[:200]}")
    r = run(orrery, "predict", "--model", "llama3-8b", "--num-gpus", "8", "--num-layers", "0")
    expect(r.returncode == 2 and "model.num_hidden_layers" in r.stderr,
           f"--num-layers 0: exit {r.returncode}, {r.stderr[:200]}")
    r = run(orrery, "predict", "--model", "llama3-8b", "--num-gpus", "8", "--recompute-activations",
            "--recompute-granularity", "full")
    expect(r.returncode == 2 and "recompute" in r.stderr and "once" in r.stderr,
           f"--recompute-activations with --recompute-granularity: exit {r.returncode}, {r.stderr[:200]}")
    off = run(orrery, *base, "--tp", "2", "--pp", "2", "--no-overlap-p2p-comm", "--no-tp-comm-overlap")
    expect(off.returncode == 0, f"--no-overlap-* switches: exit {off.returncode}: {off.stderr[:200]}")
    # bf16 gradient buffers halve the gradient memory; the optimizer adds fp32 main gradients: 12 + 4 = 16 bytes
    # per parameter instead of 12 (no ZeRO here, so unsharded).
    default = run(orrery, *base, "--tp", "2")
    fp32_grads = run(orrery, *base, "--tp", "2", "--accumulate-allreduce-grads-in-fp32")
    bf16_grads = run(orrery, *base, "--tp", "2", "--no-grad-reduce-in-fp32")
    expect(fp32_grads.returncode == 0 and fp32_grads.stdout == default.stdout,
           f"--accumulate-allreduce-grads-in-fp32 is not the default: {fp32_grads.stderr[:200]}")
    if fp32_grads.returncode == 0 and bf16_grads.returncode == 0:
        a = json.loads(fp32_grads.stdout)["memory"]["per_stage"][0]
        b = json.loads(bf16_grads.stdout)["memory"]["per_stage"][0]
        expect(b["gradients"] * 2 == a["gradients"], f"gradient memory {b['gradients']} is not half of {a['gradients']}")
        expect(abs(b["optimizer"] / a["optimizer"] - 16 / 12) < 1e-3,
               f"optimizer memory {b['optimizer']} vs {a['optimizer']}: not 16/12")
    else:
        expect(False, f"--no-grad-reduce-in-fp32: exit {bf16_grads.returncode}: {bf16_grads.stderr[:200]}")
    bad = run(orrery, *base, "--no-grad-reduce-in-fp32", "--precision", "fp32")
    expect(bad.returncode == 2 and "training.grad_reduce_in_fp32" in bad.stderr,
           f"--no-grad-reduce-in-fp32 with fp32: exit {bad.returncode}: {bad.stderr[:200]}")

    trace, timeline = os.path.join(tmp, "trace.json"), os.path.join(tmp, "timeline.json")
    r = run(orrery, *base, "--pp", "2", "--trace", trace, "--timeline", timeline)
    expect(r.returncode == 0, f"trace/timeline: exit {r.returncode}: {r.stderr[:200]}")
    if r.returncode == 0:
        events = json.load(open(trace))["traceEvents"]
        expect(any(e.get("ph") == "X" for e in events), "trace has no complete events")
        tl = json.load(open(timeline))
        keys = {"rank", "stream", "kind", "name", "stage", "layer", "microbatch", "phase", "start_s", "end_s"}
        expect(tl["tasks"] and keys <= set(tl["tasks"][0]), f"timeline task keys: {sorted(tl['tasks'][0])}")
        expect(tl["memory"] and tl["memory"][0]["samples"], "timeline has no memory samples")
        iteration = json.loads(r.stdout)["iteration_time_s"]
        expect(abs(max(t["end_s"] for t in tl["tasks"]) - iteration) < 1e-9, "timeline ends before the iteration does")

    # A validation gate over nothing, or over a record that fails for a reason other than "not modelled yet", fails.
    empty = os.path.join(tmp, "no-records")
    os.mkdir(empty)
    r = run(orrery, "validate", empty, "--max-mape", "8")
    expect(r.returncode == 1 and "no record was scored" in r.stderr, f"validate gate over no records: exit {r.returncode}")
    broken = os.path.join(tmp, "broken")
    os.mkdir(broken)
    with open(os.path.join(source, "scenarios", "validation", "kor22-22b-full-recompute.json")) as f:
        doc = json.load(f)
    doc["cluster"]["num_gpus"] = 3  # not a multiple of the plan
    with open(os.path.join(broken, "broken.json"), "w") as f:
        json.dump(doc, f)
    # Beside a record that simulates, the broken one fails the gate (1); alone, nothing was read and simulated:
    # bad input (2, tests/tools/input_hardening_test.py).
    r = run(orrery, "validate", broken, os.path.join(source, "scenarios", "validation", "kor22-22b-full-recompute.json"),
            "--max-error", "20")
    expect(r.returncode == 1 and "failed" in r.stderr, f"validate gate over a broken record: exit {r.returncode} {r.stderr[:200]}")
    r = run(orrery, "validate", broken, "--max-error", "20")
    expect(r.returncode == 2 and "none of the 1 record could be read and simulated" in r.stderr,
           f"validate gate over only a broken record: exit {r.returncode} {r.stderr[:200]}")

    # validate --explain (no name) names, for each record, the part of its step its error most probably lies in; the
    # JSON gives each part's seconds and share of the error, which sum to predicted - published.
    two = [os.path.join(source, "scenarios", "validation", n + ".json")
           for n in ("kor22-22b-full-recompute", "nemo2407-h100-fp8-llama3-8b-8gpu")]
    r = run(orrery, "validate", *two, "--explain")
    rows = [l for l in r.stdout.splitlines() if l.startswith(("kor22-22b", "nemo2407-h100-fp8-llama3-8b"))]
    expect(r.returncode == 0 and len(rows) == 2 and
           all(re.search(r"%\s+(compute|host|communication|bubble) \(", l) for l in rows),
           f"validate --explain rows: {r.returncode} {rows} {r.stderr[:200]}")
    r = run(orrery, "validate", *two, "--json")
    for rec in json.loads(r.stdout)["records"]:
        fig = rec["figures"]["iteration_time_s"]
        total = sum(p["error_s"] for p in rec["error_parts"].values())
        expect(abs(total - (fig["predicted"] - fig["published"])) < 1e-9 * fig["published"] + 1e-12,
               f"{rec['name']}: error parts sum to {total}, not {fig['predicted'] - fig['published']}")
        expect(rec["dominant_error_part"] in rec["error_parts"], f"{rec['name']}: dominant part {rec['dominant_error_part']}")

    # calibrate host on a trace without annotated ranges says so and exits 2; on the committed traces it prints the
    # per-launch costs cost_model.json holds (the C++ test checks the values).
    empty_trace = os.path.join(tmp, "empty-trace.json")
    with open(empty_trace, "w") as f:
        json.dump({"traceEvents": []}, f)
    r = run(orrery, "calibrate", "host", empty_trace)
    expect(r.returncode == 2 and "orrery.layer" in r.stderr, f"calibrate host on an empty trace: {r.returncode} {r.stderr[:200]}")
    r = run(orrery, "validate", two[0], "--explain", "kor22-22b-full-recompute", "--json")
    expect(r.returncode == 0 and json.loads(r.stdout)["records"][0]["name"] == "kor22-22b-full-recompute",
           f"validate --explain NAME --json: {r.returncode} {r.stdout[:100]}")
    if r.returncode == 0:
        # With the record's full prediction, whose iteration time is the one the comparison used.
        doc = json.loads(r.stdout)
        expect("breakdown_s" in doc.get("prediction", {}) and
               abs(doc["prediction"]["iteration_time_s"] - doc["records"][0]["figures"]["iteration_time_s"]["predicted"]) < 1e-9,
               f"validate --explain NAME --json prediction: {list(doc.keys())}")

    # --explain right before the paths: they are the scenarios, not a record's name; a long name keeps its columns.
    r = run(orrery, "validate", "--explain", two[0], two[1])
    expect(r.returncode == 0 and sum(l.startswith(("kor22-22b", "nemo2407-h100-fp8-llama3-8b")) for l in r.stdout.splitlines()) == 2,
           f"validate --explain PATH PATH: {r.returncode} {r.stdout[:200]} {r.stderr[:200]}")
    r = run(orrery, "validate", "--explain", two[1])
    lines = r.stdout.splitlines()
    expect(r.returncode == 0 and len(lines) > 1 and lines[1].startswith("nemo2407-h100-fp8-llama3-8b-8gpu ") and
           lines[0].index("error") > len("nemo2407-h100-fp8-llama3-8b-8gpu"),
           f"validate --explain PATH: {r.returncode} {lines[:2]} {r.stderr[:200]}")

    # collective --log with --bytes prints only those sizes of the log; a size the log lacks is refused by name.
    log = os.path.join(source, "tests", "data", "nccl-tests-logs", "01-aws-p5-h100-1x8-allreduce.txt")
    r = run(orrery, "collective", "--log", log, "--bytes", "1M,64M")
    sizes = [l.split()[0] for l in r.stdout.splitlines() if l.strip()[:1].isdigit()]
    expect(r.returncode == 0 and sizes == ["1048576", "67108864"], f"collective --log --bytes: {r.returncode} {sizes} {r.stderr[:200]}")
    r = run(orrery, "collective", "--log", log, "--bytes", "3000")
    expect(r.returncode == 2 and "--bytes (3000)" in r.stderr, f"collective --bytes not in the log: {r.returncode} {r.stderr[:200]}")
    # A flag that contradicts the log's group or collective is refused by name.
    log64 = os.path.join(source, "tests", "data", "nccl-tests-logs", "10-h100-8x8-ib-allreduce.txt")
    r = run(orrery, "collective", "--log", log64, "--num-gpus", "8", "--bytes", "1G")
    expect(r.returncode == 2 and "--num-gpus (8)" in r.stderr and "64 ranks" in r.stderr,
           f"collective --num-gpus against the log: {r.returncode} {r.stderr[:200]}")
    r = run(orrery, "collective", "--log", log, "--op", "all_gather", "--bytes", "1M")
    expect(r.returncode == 2 and "--op (all_gather)" in r.stderr, f"collective --op against the log: {r.returncode} {r.stderr[:200]}")
    # rope_scaling is checked as transformers defines it.
    for scaling, field in (('{"rope_type": "yarnn"}', "model.rope_scaling.rope_type (yarnn)"),
                           ('"yarn"', "model.rope_scaling"),
                           ('{"rope_type": "yarn", "factor": 0}', "model.rope_scaling.factor (0)"),
                           ('{"rope_type": "yarn", "type": "linear"}', "model.rope_scaling.type (linear)")):
        bad_rope = os.path.join(tmp, "rope.json")
        with open(bad_rope, "w") as f:
            f.write('{"model": {"preset": "llama3-8b", "num_hidden_layers": 2, "rope_scaling": ' + scaling +
                    '}, "cluster": {"preset": "dgx-h100", "num_gpus": 8}, "training": {"seq_length": 2048}}')
        r = run(orrery, "predict", bad_rope)
        expect(r.returncode == 2 and field in r.stderr, f"rope_scaling {scaling}: {r.returncode} {r.stderr[:200]}")
    # NCCL runs an all-to-all as grouped send/recv: its row says p2p.
    r = run(orrery, "collective", "--op", "all_to_all", "--bytes", "1M")
    expect(r.returncode == 0 and "p2p/" in r.stdout, f"collective all_to_all algorithm: {r.stdout[-200:]}")
    # FSDP2 without a ZeRO stage runs as torchtitan does: fully sharded, stage 3.
    fsdp2 = os.path.join(tmp, "fsdp2.json")
    with open(fsdp2, "w") as f:
        json.dump({"model": "llama3-8b", "cluster": {"preset": "dgx-h100", "num_gpus": 8},
                   "training": {"seq_length": 2048, "global_batch_size": 8, "framework": "fsdp2"}}, f)
    r = run(orrery, "predict", fsdp2, "--json")
    expect(r.returncode == 0 and json.loads(r.stdout)["plan"]["zero_stage"] == 3,
           f"fsdp2 default ZeRO stage: {r.returncode} {r.stdout[:300]} {r.stderr[:200]}")

    # --cluster takes a file as --model does: a cluster object in a file gives the report of a scenario file with the
    # same object (a second way in), and a bare preset object the report of the preset's name.
    cluster_file = os.path.join(tmp, "cluster.json")
    with open(cluster_file, "w") as f:
        json.dump({"preset": "dgx-h100", "nic_bandwidth_Gbit_s": 200}, f)
    flags = ["--model", "llama3-8b", "--num-gpus", "16", "--seq-length", "4096", "--global-batch-size", "32", "--tp", "2"]
    from_file = run(orrery, "predict", *flags, "--cluster", cluster_file, "--json")
    scenario_file = os.path.join(tmp, "slow-nics.json")
    with open(scenario_file, "w") as f:
        json.dump({"name": "slow NICs", "model": "llama3-8b",
                   "cluster": {"preset": "dgx-h100", "nic_bandwidth_Gbit_s": 200, "num_gpus": 16},
                   "parallel": {"tp": 2}, "training": {"seq_length": 4096, "global_batch_size": 32}}, f)
    from_scenario = run(orrery, "predict", scenario_file, "--json")
    if from_file.returncode == 0 and from_scenario.returncode == 0:
        a, b = json.loads(from_file.stdout), json.loads(from_scenario.stdout)
        expect(a["iteration_time_s"] == b["iteration_time_s"] and a["memory"] == b["memory"],
               f"--cluster FILE: {a['iteration_time_s']} s, the scenario with its object: {b['iteration_time_s']} s")
        preset = json.loads(run(orrery, "predict", *flags, "--cluster", "dgx-h100", "--json").stdout)
        expect(a["iteration_time_s"] > preset["iteration_time_s"],
               f"200 Gbit/s NICs are not slower than the preset's: {a['iteration_time_s']} vs {preset['iteration_time_s']}")
    else:
        expect(False, f"--cluster FILE: exit {from_file.returncode} {from_file.stderr[:200]}; "
                      f"scenario: exit {from_scenario.returncode} {from_scenario.stderr[:200]}")
    with open(os.path.join(tmp, "list.json"), "w") as f:
        f.write("[1]")
    r = run(orrery, "predict", "--cluster", os.path.join(tmp, "list.json"))
    expect(r.returncode == 2 and "--cluster" in r.stderr and "must hold a JSON object" in r.stderr,
           f"--cluster with a file that holds a list: exit {r.returncode}, {r.stderr[:200]}")
    # search --model PATH reads the Hugging Face config, as its help says: Llama-3-70B's config.json is the
    # llama3-70b preset's model, so both searches rank the same plans at the same times.
    search = ["search", "--num-gpus", "64", "--seq-length", "4096", "--global-batch-size", "64", "--tp", "8", "--pp", "4",
              "--cp", "1", "--quiet"]
    plans = []
    for model in (os.path.join(source, "tests", "data", "hf-configs", "Llama-3-70B.json"), "llama3-70b"):
        out = os.path.join(tmp, f"plans-{len(plans)}.json")
        r = run(orrery, *search, "--model", model, "--json", out)
        expect(r.returncode == 0, f"search --model {model}: exit {r.returncode}, {r.stderr[:200]}")
        if r.returncode == 0:
            with open(out) as f:
                plans.append([(c["key"], c["status"], c.get("iteration_time_s")) for c in json.load(f)["plans"]])
    expect(len(plans) == 2 and plans[0] == plans[1] and plans[0],
           "search --model PATH does not rank as the same model's preset")

    r = run(orrery, "list")
    expect(r.returncode == 0 and "llama3.1-405b" in r.stdout and "gb200-nvl72" in r.stdout and "mi300x" in r.stdout,
           "list lacks presets")

    bad = [
        (["predict", "--model", "llama3-8b", "--num-gpus", "16", "--tp", "3"], "cluster.num_gpus (16)"),
        (["predict", "--model", "llama3-9b"], "model (llama3-9b)"),
        (["predict", "--model", "llama3-8b", "--precision", "int3"], "training.precision (\"int3\")"),
        (["predict", os.path.join(tmp, "missing.json")], "missing.json"),
        (["predict", "--model", "llama3-8b", "--tp", "two"], "--tp"),
        (["frobnicate"], "frobnicate"),
        (["collective", "--bytes", "1e30"], "--bytes (1e30)"),
        (["collective", "--bytes", "inf"], "--bytes (inf)"),
        (["fit", "collectives", "--min-bytes-single-node", "1e19"], "--min-bytes-single-node (1e19)"),
    ]
    for args, word in bad:
        r = run(orrery, *args)
        expect(r.returncode == 2 and word in r.stderr, f"{' '.join(args)}: exit {r.returncode}, stderr {r.stderr[:200]}")

    # A scenario with a hf_config path relative to the scenario file.
    scenario = {"model": {"hf_config": os.path.abspath(os.path.join(source, "tests/data/hf-configs/Llama-3-8B.json"))},
                "cluster": {"preset": "dgx-h100", "num_gpus": 8}, "parallel": {"tp": 8},
                "training": {"seq_length": 8192, "global_batch_size": 8}}
    path = os.path.join(tmp, "s.json")
    json.dump(scenario, open(path, "w"))
    r = run(orrery, "predict", path, "--json")
    expect(r.returncode == 0, f"hf_config scenario: exit {r.returncode}: {r.stderr[:200]}")

    # Mixed clusters through the binary: the pools report, and bad pools, bad stage assignments and orrery plan of a
    # mixed cluster each exit 2 naming the field (tests/sim/pools_test.cpp checks the rules and figures).
    mixed = {"model": "llama3-8b", "parallel": {"tp": 8, "pp": 2},
             "cluster": {"pools": [{"name": "fast", "preset": "dgx-h100", "num_gpus": 8},
                                   {"name": "slow", "preset": "dgx-a100-80gb", "num_gpus": 8, "nic_type": "roce"}]},
             "training": {"seq_length": 4096, "global_batch_size": 8}}
    path = os.path.join(tmp, "mixed.json")
    json.dump(mixed, open(path, "w"))
    r = run(orrery, "predict", path, "--json")
    pools = json.loads(r.stdout).get("pools", []) if r.returncode == 0 else []
    expect([(p["name"], p["gpu"], p["nic_type"], p["stages"]) for p in pools] ==
           [("fast", "h100-sxm", "infiniband", [0]), ("slow", "a100-sxm4-80gb", "roce", [1])],
           f"predict of a mixed cluster: exit {r.returncode}, pools {pools}, {r.stderr[:200]}")
    r = run(orrery, "plan", path, "--steps", "10")
    expect(r.returncode == 2 and "not modelled yet: cluster.pools" in r.stderr, f"plan of a mixed cluster: {r.stderr[:200]}")
    for change, word in [({"parallel": {"tp": 8, "pp": 2, "pipeline_stage_pools": [1, 1]}}, "cluster.pools[1].num_gpus"),
                         ({"parallel": {"tp": 8, "pp": 2, "pipeline_stage_pools": [0]}}, "parallel.pipeline_stage_pools"),
                         ({"cluster": {"pools": [{"name": "x", "preset": "dgx-h100"}]}}, "cluster.pools[0].num_gpus"),
                         ({"cluster": {"preset": "dgx-h100", "nic_type": "carrier-pigeon"}}, "cluster.nic_type")]:
        bad_mixed = dict(mixed, **change)
        json.dump(bad_mixed, open(path, "w"))
        r = run(orrery, "predict", path)
        expect(r.returncode == 2 and word in r.stderr, f"mixed cluster {change}: exit {r.returncode}, {r.stderr[:200]}")

    # Calibration: a plan from a scenario, a raw file fitted into a profile that predict then reads, bad input.
    plan = os.path.join(tmp, "p.plan")
    r = run(orrery, "calibrate", "plan", "--no-grid", "--out", plan,
            os.path.join(source, "scenarios", "measured", "h200-llama-1b.json"))
    expect(r.returncode == 0 and "gemm 16384 512 2048 bf16" in open(plan).read(),
           f"calibrate plan: exit {r.returncode}: {r.stderr[:200]}")
    raw = {"format": "orrery-gpu-raw", "version": 1, "gpu": "NVIDIA H200", "warmup": 1, "repetitions": 3,
           "gemm": [{"m": 16384, "n": 8192, "k": 2048, "dtype": "bf16", "times_s": [3e-4, 2e-4, 2e-4]}],
           "memory": [{"kind": "copy", "bytes": 1 << 30, "times_s": [2.5e-4, 2.5e-4, 2.6e-4]}],
           "launch": {"kernel_s": [2e-6], "host_s": [3e-6]}, "collectives": [], "skipped": []}
    raw_path, prof = os.path.join(tmp, "raw.json"), os.path.join(tmp, "prof.json")
    json.dump(raw, open(raw_path, "w"))
    r = run(orrery, "calibrate", "fit", raw_path, "--out", prof)
    expect(r.returncode == 0 and "gemm bf16" in r.stdout and "TFLOP/s" in r.stdout,
           f"calibrate fit: exit {r.returncode}: {r.stdout[:200]} {r.stderr[:200]}")
    r = run(orrery, "predict", os.path.join(source, "scenarios", "measured", "h200-llama-1b.json"), "--profile", prof,
            "--json")
    expect(r.returncode == 0 and any("does not cover" in w for w in json.loads(r.stdout)["warnings"]),
           f"predict --profile with a fitted profile: exit {r.returncode}: {r.stderr[:200]}")
    expect(r.returncode == 0 and json.loads(r.stdout).get("profile") == prof,
           "predict --profile: the report does not name the profile it used")
    r = run(orrery, "predict", os.path.join(source, "scenarios", "measured", "h200-llama-1b.json"), "--profile", "")
    expect(r.returncode == 2 and "--profile" in r.stderr, f"predict --profile '': exit {r.returncode} {r.stderr[:200]}")
    raw["gemm"][0]["times_s"] = [-1]
    json.dump(raw, open(raw_path, "w"))
    r = run(orrery, "calibrate", "fit", raw_path, "--out", prof)
    expect(r.returncode == 2 and "gemm[0].times_s[0]" in r.stderr, f"calibrate fit of a bad raw file: exit {r.returncode}")
    r = run(orrery, "calibrate", "fit", os.path.join(tmp, "missing.json"), "--out", prof)
    expect(r.returncode == 2 and "missing.json" in r.stderr, f"calibrate fit of a missing file: exit {r.returncode}")

    # compare: a real trace (not of this model: parsing, medians and the table, not accuracy) and bad input.
    trace = os.path.join(source, "tests", "data", "kineto", "a100-2rank-nccl.json.gz")
    one_gpu = os.path.join(source, "scenarios", "measured", "h200-llama-1b.json")
    r = run(orrery, "compare", "--kineto", trace, one_gpu)
    # median of the steps after the first: (219726.905 + 224936.243) / 2 us
    expect(r.returncode == 0 and "0.222332" in r.stdout and "GEMM kernels" in r.stdout,
           f"compare --kineto: exit {r.returncode}: {r.stdout[:300]} {r.stderr[:200]}")
    # one GPU: nothing to communicate in the prediction; the trace's two ranks did communicate
    expect(re.search(r"communication kernels\s+0\.0[1-9]\d*\s+0\.000000", r.stdout) is not None,
           f"compare --kineto: communication row {r.stdout[:600]}")
    r = run(orrery, "compare", "--kineto", one_gpu, one_gpu)
    expect(r.returncode == 2 and "traceEvents" in r.stderr, f"compare with a non-trace: exit {r.returncode} {r.stderr[:200]}")
    r = run(orrery, "compare", "--kineto", trace, "--skip-steps", "3", one_gpu)
    expect(r.returncode == 2 and "--skip-steps" in r.stderr, f"compare --skip-steps 3: exit {r.returncode}")

    # compare --measured: the prediction's own timeline with every GEMM 20% longer reads as GEMMs 1/1.2 - 1 = -16.7% off.
    tl = os.path.join(tmp, "pred_timeline.json")
    r = run(orrery, "predict", one_gpu, "--timeline", tl)
    if r.returncode == 0:
        doc = json.load(open(tl))
        for t in doc["tasks"]:
            if t["kind"] == "gemm":
                t["end_s"] = t["start_s"] + 1.2 * (t["end_s"] - t["start_s"])
        doc["source"] = "test: prediction with GEMMs 20% longer"
        meas = os.path.join(tmp, "measured_timeline.json")
        json.dump(doc, open(meas, "w"))
        r = run(orrery, "compare", "--measured", meas, one_gpu)
        gemm_row = re.search(r"^\s+gemm\s+[\d.]+\s+[\d.]+\s+(\S+)", r.stdout, re.M)
        expect(r.returncode == 0 and gemm_row is not None and gemm_row.group(1) == "-16.7%" and
               re.search(r"^\s+attention\s+[\d.]+\s+[\d.]+\s+\+0\.0%", r.stdout, re.M) is not None,
               f"compare --measured: exit {r.returncode}: {r.stdout[:800]} {r.stderr[:200]}")
    r = run(orrery, "compare", "--kineto", trace, "--measured", tl, one_gpu)
    expect(r.returncode == 2 and "exactly one measurement" in r.stderr, f"compare with two measurements: exit {r.returncode}")

    # compare --kineto on our own H200 trace of this scenario: the step's GEMM kernels, and "other" with the step's
    # device copies and fills (values from an independent reading of the trace, tests/calibrate/kineto_test.cpp).
    h200 = os.path.join(source, "scenarios", "measured", "h200-2026-11-30", "llama-1b.trace.json.gz")
    r = run(orrery, "compare", "--kineto", h200, one_gpu)
    gemm = re.search(r"^GEMM kernels\s+([\d.]+)", r.stdout, re.M)
    other = re.search(r"^other kernels and copies\s+([\d.]+)", r.stdout, re.M)
    layers = re.findall(r"^layer \d+ (?:forward|backward)\s", r.stdout, re.M)
    expect(r.returncode == 0 and gemm is not None and gemm.group(1) == "0.157691" and other is not None and
           other.group(1) == f"{(156641.706 + 2494.518) * 1e-6:.6f}" and len(layers) == 32,
           f"compare --kineto on the H200 trace: exit {r.returncode}: {r.stdout[:900]} {r.stderr[:200]}")

    # compare --measured on the reference executor's real H200 timeline of this scenario: every task matched, and the
    # measured column is the file's own sums (computed from the JSON here, not read from the tool).
    executed = os.path.join(source, "scenarios", "measured", "h200-2026-11-30", "llama-1b.executed.json")
    doc = json.load(open(executed))
    sums = {}
    for t in doc["tasks"]:
        sums[t["kind"]] = sums.get(t["kind"], 0.0) + t["end_s"] - t["start_s"]
    span = max(t["end_s"] for t in doc["tasks"]) - min(t["start_s"] for t in doc["tasks"])
    peak = max(s[1] for m in doc["memory"] for s in m["samples"]) / 2**30
    r = run(orrery, "compare", "--measured", executed, one_gpu)
    expect(r.returncode == 0 and f"matched {len(doc['tasks'])} tasks; 0 only predicted, 0 only measured" in r.stdout,
           f"compare --measured on the H200 executor timeline: exit {r.returncode}: {r.stdout[:300]} {r.stderr[:200]}")
    for kind, seconds in sums.items():
        row = re.search(rf"^\s+{kind}\s+[\d.]+\s+([\d.]+)", r.stdout, re.M)
        expect(row is not None and abs(float(row.group(1)) - seconds) < 1e-6,
               f"compare --measured: {kind} measured {seconds:.6f}: {row.group(0) if row else r.stdout[:600]}")
    row = re.search(r"^iteration time\s+[\d.]+\s+([\d.]+)", r.stdout, re.M)
    expect(row is not None and abs(float(row.group(1)) - span) < 1e-6, f"compare --measured: iteration {span:.6f}")
    row = re.search(r"^peak memory \(GiB\)\s+[\d.]+\s+([\d.]+)", r.stdout, re.M)
    expect(row is not None and abs(float(row.group(1)) - peak) < 1e-3, f"compare --measured: peak {peak:.3f} GiB")

    # Search from a scenario with the flex dispatcher (valid only with EP > 1) and 61 layers (DeepSeek-V3): the base
    # plan validates, the scenario's own layout serves its plan, and PP 16 (which 61 layers do not divide) gets a
    # balanced split instead of being skipped.
    example = os.path.join(source, "scenarios", "examples", "deepseek-v3-1024xh100.json")
    r = run(orrery, "search", example, "--ep", "64", "--tp", "2", "--pp", "8,16", "--cp", "1", "--vpp", "1,4",
            "--zero-stage", "1", "--recompute", "none", "--micro-batch-size", "1", "--fp8", "on", "--quiet", "--json",
            os.path.join(tmp, "search.json"))
    expect(r.returncode == 0 and "the scenario's plan (tp2-pp8-cp1-ep64-etp1-vpp4-mb1-none-z1-1f1b-fp8) ranks" in r.stdout,
           f"search on the DeepSeek-V3 example: exit {r.returncode}: {r.stdout[:300]} {r.stderr[:300]}")
    if r.returncode == 0:
        plans = {p["key"]: p for p in json.load(open(os.path.join(tmp, "search.json")))["plans"]}
        # PP 16 x VPP 4 = 64 virtual stages would leave some without a layer: not enumerated.
        want = {"tp2-pp8-cp1-ep64-etp1-vpp1-mb1-none-z1-1f1b-fp8", "tp2-pp8-cp1-ep64-etp1-vpp4-mb1-none-z1-1f1b-fp8",
                "tp2-pp16-cp1-ep64-etp1-vpp1-mb1-none-z1-1f1b-fp8"}
        expect(set(plans) == want and all(p["status"] == "simulated" for p in plans.values()),
               f"search on the DeepSeek-V3 example: plans {sorted(plans)}")

    # The scenario's own first/last-stage split ranks its plan at predict's time; with --model for another model it
    # is dropped; --pp values no stage could use are errors.
    odd = os.path.join(tmp, "odd.json")
    json.dump({"model": {"preset": "llama3-8b", "num_hidden_layers": 31}, "cluster": {"preset": "dgx-h100", "num_gpus": 32},
               "parallel": {"pp": 4, "decoder_first_pipeline_num_layers": 4},
               "training": {"seq_length": 4096, "global_batch_size": 128}}, open(odd, "w"))
    narrow = ["--tp", "1", "--pp", "2,4", "--cp", "1", "--zero-stage", "0", "--recompute", "none", "--micro-batch-size",
              "1", "--fp8", "off", "--quiet"]
    r = run(orrery, "search", odd, *narrow)
    p = run(orrery, "predict", odd, "--json")
    own = re.search(r"the scenario's plan \(\S+\) ranks \d+ of \d+ fitting plans \(([\d.]+) s\)", r.stdout)
    expect(r.returncode == 0 and p.returncode == 0 and own is not None and
           abs(float(own.group(1)) - json.loads(p.stdout)["iteration_time_s"]) < 1e-3,
           f"search keeps the file's first/last split: {r.stdout[:300]} {r.stderr[:200]} {p.stderr[:200]}")
    r = run(orrery, "search", odd, "--model", "llama3-8b", *narrow, "--json", os.path.join(tmp, "odd-model.json"))
    if r.returncode == 0:
        plans = json.load(open(os.path.join(tmp, "odd-model.json")))["plans"]
        bad = [p["key"] for p in plans if p["status"] == "invalid"]
        expect(not bad, f"search --model with another layer count: invalid plans {bad}")
    else:
        expect(False, f"search --model: exit {r.returncode}: {r.stderr[:200]}")
    r = run(orrery, "search", "--model", "llama3-8b", "--num-gpus", "64", "--seq-length", "4096", "--global-batch-size",
            "128", "--pp", "64", "--quiet")
    expect(r.returncode == 2 and "--pp (64)" in r.stderr, f"search --pp 64 on 32 layers: exit {r.returncode}: {r.stderr[:200]}")

    # Every candidate's reason is in the CSV too (quoted: reasons hold commas).
    table = os.path.join(tmp, "plans.csv")
    r = run(orrery, "search", "--model", "llama3-8b", "--num-gpus", "16", "--seq-length", "4096", "--global-batch-size",
            "64", "--tp", "1", "--pp", "1,2", "--cp", "1", "--zero-stage", "1", "--recompute", "none",
            "--micro-batch-size", "1", "--fp8", "off", "--vpp", "1", "--schedule", "1f1b,dualpipe", "--quiet", "--csv", table)
    if r.returncode == 0:
        import csv
        rows = {row["key"]: row for row in csv.DictReader(open(table))}
        bad = rows.get("tp1-pp1-cp1-ep1-etp1-vpp1-mb1-none-z1-dualpipe-nofp8", {})
        expect(bad.get("status") == "invalid" and bad.get("reason", "").startswith("parallel.pp (1) must be even"),
               f"search --csv reason: {bad}")
    else:
        expect(False, f"search --csv: exit {r.returncode}: {r.stderr[:200]}")

    # --fp8-recipe sets the FP8 candidates' scaling: the candidate's time is predict's with the same recipe, the
    # search names the recipe, and a recipe the GPU or the space cannot use exits 2 naming the flag.
    space = ["--model", "llama3-8b", "--num-gpus", "8", "--seq-length", "4096", "--global-batch-size", "64"]
    plan = ["--tp", "2", "--pp", "1", "--cp", "1", "--micro-batch-size", "1", "--recompute", "none", "--zero-stage", "1"]
    for recipe in ("delayed", "tensorwise", "blockwise"):
        out = os.path.join(tmp, f"fp8-{recipe}.json")
        r = run(orrery, "search", *space, *plan, "--fp8", "on", "--fp8-recipe", recipe, "--quiet", "--json", out)
        p = run(orrery, "predict", *space, "--tp", "2", "--micro-batch-size", "1", "--zero-stage", "1",
                "--sequence-parallel", "--precision", "fp8", "--fp8-recipe", recipe, "--json")
        if r.returncode == 0 and p.returncode == 0:
            doc = json.load(open(out))
            [row] = [x for x in doc["plans"] if x["status"] == "simulated"]
            expect(abs(row["iteration_time_s"] - json.loads(p.stdout)["iteration_time_s"]) < 1e-6 and
                   row.get("fp8_recipe") == recipe and f"fp8 ({recipe} scaling)" in doc["search"] and
                   f"fp8 ({recipe} scaling)" in r.stdout,
                   f"search --fp8-recipe {recipe}: {row.get('iteration_time_s')} vs predict, search '{doc['search']}'")
        else:
            expect(False, f"search/predict --fp8-recipe {recipe}: {r.stderr[:200]} {p.stderr[:200]}")
    for bad, field in ((["--fp8-recipe", "mxfp8"], "--fp8-recipe (mxfp8) is not supported by the GPU"),
                       (["--fp8-recipe", "bogus"], "--fp8-recipe (bogus) must be one of: delayed, tensorwise"),
                       (["--fp8-recipe", ""], "--fp8-recipe takes one of"),
                       (["--fp8-recipe", "delayed,tensorwise"], "--fp8-recipe (delayed,tensorwise) takes one of"),
                       (["--fp8", "off", "--fp8-recipe", "tensorwise"], "--fp8-recipe (tensorwise) needs FP8 candidates")):
        r = run(orrery, "search", *space, *plan, *bad, "--quiet")
        expect(r.returncode == 2 and field in r.stderr, f"search {bad}: exit {r.returncode}: {r.stderr[:200]}")

    # Megatron-LM's --fp8-format turns FP8 on (beside --bf16, which keeps the rest in BF16) at the rate of
    # --precision fp8 whatever the format; with a non-FP8 precision, or in a file without FP8, it is an error.
    fp8 = run(orrery, "predict", *space, "--tp", "2", "--sequence-parallel", "--precision", "fp8", "--json")
    for fmt_args in (["--bf16", "--fp8-format", "hybrid"], ["--fp8-format", "e4m3"]):
        r = run(orrery, "predict", *space, "--tp", "2", "--sequence-parallel", *fmt_args, "--json")
        expect(r.returncode == 0 and fp8.returncode == 0 and r.stdout == fp8.stdout,
               f"predict {fmt_args}: exit {r.returncode}, {r.stderr[:200]}, differs from --precision fp8")
    r = run(orrery, "predict", *space, "--precision", "bf16", "--fp8-format", "hybrid")
    expect(r.returncode == 2 and "--fp8-format (hybrid) turns FP8 on" in r.stderr, f"--precision bf16 --fp8-format: {r.stderr[:200]}")
    bf16_file = os.path.join(tmp, "fp8-format-bf16.json")
    json.dump({"model": "llama3-8b", "cluster": {"preset": "dgx-h100", "num_gpus": 8},
               "training": {"seq_length": 4096, "global_batch_size": 8, "fp8_format": "e4m3"}}, open(bf16_file, "w"))
    r = run(orrery, "predict", bf16_file)
    expect(r.returncode == 2 and 'training.fp8_format ("e4m3") needs training.precision "fp8"' in r.stderr,
           f"fp8_format without FP8: exit {r.returncode}: {r.stderr[:200]}")

    for p in problems:
        print(p)
    print(f"cli: {len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
