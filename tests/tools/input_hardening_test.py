#!/usr/bin/env python3
"""Bad input through the `orrery` command line (issue 26, "nothing breaks it"): each input below once crashed,
printed NaN or null, named nothing, or passed silently; each must now exit 2 with a message that names the file or
field, the value and the rule. Usage: input_hardening_test.py ORRERY REPO_ROOT"""
import json
import os
import subprocess
import sys
import tempfile

problems = []


def run(orrery, *args):
    # Bytes, not text: some of these inputs and messages are what the test checks the encoding of.
    r = subprocess.run([orrery, *args], capture_output=True, timeout=120)
    return r.returncode, r.stdout.decode("utf-8", "replace"), r.stderr.decode("utf-8", "replace"), r.stdout


def expect(condition, what):
    if not condition:
        problems.append(what)


def refused(orrery, args, *words, what):
    """The command exits 2 and its error holds every one of `words`."""
    code, _, err, _ = run(orrery, *args)
    expect(code == 2 and all(w in err for w in words), f"{what}: exit {code}, stderr {err[:400]!r}")
    return err


SMALL = {"model": "llama3-8b", "cluster": {"preset": "dgx-h100", "num_gpus": 8},
         "training": {"seq_length": 2048, "global_batch_size": 8}}


SMALL_FLAGS = ["--model", "llama3-8b", "--num-gpus", "8", "--seq-length", "2048", "--global-batch-size", "8"]


def write(tmp, name, data):
    path = os.path.join(tmp, name)
    with open(path, "wb") as f:
        f.write(data if isinstance(data, bytes) else json.dumps(data).encode())
    return path


def deepseek(**model):
    """A small DeepSeek-V3 (4 layers, 256 experts in 8 groups) on 8 GPUs, its model keys overridden by `model`."""
    return {"model": {"preset": "deepseek-v3", "num_hidden_layers": 4, "first_k_dense_replace": 1,
                      "num_nextn_predict_layers": 0, **model},
            "cluster": {"preset": "dgx-h100", "num_gpus": 8}, "parallel": {"ep": 8},
            "training": {"seq_length": 2048, "global_batch_size": 8}}


def unbounded_numbers(orrery, tmp):
    """Numbers once read without a range (the second review): each passed with exit 0."""
    # Group-limited routing picks topk_group of the n_group groups; without groups (n_group 1) topk_group was never
    # read, so 100 passed. The preset's 8 groups bound it too.
    for over, words in (({"n_group": 1, "topk_group": 100}, "model.topk_group (100) must be at most n_group (1)"),
                        ({"topk_group": 9}, "model.topk_group (9) must be at most n_group (8)"),
                        ({"topk_group": 0}, "model.topk_group (0) must be at least 1")):
        refused(orrery, ["predict", write(tmp, "groups.json", deepseek(**over))], words, what=f"deepseek {over}")
    # rope_theta sets no cost, so nothing read it: 1e300 passed. The bound is in models/physical_bounds.h.
    refused(orrery, ["predict", write(tmp, "theta.json", deepseek(rope_theta=1e300))],
            "model.rope_theta (1e+300) must lie in [1, 10000000000]", "Qwen's 1e6", what="rope_theta 1e300")
    code, out, err, _ = run(orrery, "predict", write(tmp, "theta.json", deepseek(rope_theta=5e8)))
    expect(code == 0 and "iteration time" in out, f"rope_theta 5e8 (in range): exit {code}, {err[:300]!r}")
    for over, words in (({"rope_scaling": {"type": "yarn", "factor": 1e300}},
                         "model.rope_scaling.factor (1e+300) must lie in [1, 10000]"),
                        ({"attention_dropout": 1.0},
                         "model.attention_dropout (1) is a dropout probability and must be in [0, 1)")):
        refused(orrery, ["predict", write(tmp, "bound.json", deepseek(**over))], words, what=f"deepseek {over}")
    oss = dict(SMALL, model={"preset": "gpt-oss-20b", "swiglu_limit": 1e300})
    refused(orrery, ["predict", write(tmp, "swiglu.json", oss)], "model.swiglu_limit (1e+300) must be at most 10000",
            what="swiglu_limit 1e300")
    # An attention rate of 1e-300 of the peak was caught only as a task too long to simulate, naming the cluster.
    slow = dict(SMALL, cluster={"preset": "dgx-h100", "num_gpus": 8,
                                "gpu": {"preset": "h100-sxm", "attention_peak_fraction": {"forward": 1e-300}}})
    refused(orrery, ["predict", write(tmp, "attention.json", slow)],
            "cluster.gpu.attention_peak_fraction.forward (1e-300) must lie in [0.01, 1]", what="attention fraction 1e-300")


SEARCH = ["search", "--model", "llama3-8b", "--seq-length", "2048", "--global-batch-size", "16", "--pp", "1",
          "--cp", "1", "--quiet"]


def flag_ranges(orrery):
    """Flags once saturated, emptied or zero without a word (the second review): each ran with exit 0."""
    # Past 64 bits CLI11 read the count as 9223372036854775807; the check sees the text as given.
    for value in ("99999999999999999999", "1000000001", "-1"):
        refused(orrery, ["predict", *SMALL_FLAGS, "--trace", os.devnull, "--trace-max-events", value],
                f"--trace-max-events: {value} must be a whole number from 0 to 1000000000", "150 GB",
                what=f"--trace-max-events {value}")
    refused(orrery, ["predict", *SMALL_FLAGS[:-2], "--global-batch-size", "99999999999999999999"],
            "--global-batch-size (99999999999999999999) must be a whole number of at most 64 bits",
            what="--global-batch-size past 64 bits")
    # An empty list searched the defaults, an empty item fewer values than written.
    for flag, value, rule in (("--tp", "", "must list at least one value"),
                              ("--tp", "1,,2", "has an empty item"), ("--schedule", "1f1b,", "has an empty item"),
                              ("--recompute", "", "must list at least one value")):
        refused(orrery, [*SEARCH, "--num-gpus", "8", flag, value], f'{flag} ("{value}") {rule}',
                what=f"search {flag} {value!r}")
    refused(orrery, ["predict", *SMALL_FLAGS, "--recompute", "selective", "--recompute-modules", "mlp,,core_attn"],
            '--recompute-modules ("mlp,,core_attn") has an empty item', what="--recompute-modules with an empty item")
    for flag in ("--trace-ranks", "--trace-window"):
        refused(orrery, ["predict", *SMALL_FLAGS, "--trace", os.devnull, flag, ""], f"{flag}: must not be empty",
                what=f"{flag} ''")
    # 0 meant "the default" for --memory-cap and --max-tp: given, it must be a real value.
    for args, words in ((["--memory-cap", "0"], "--memory-cap (0) must be a GiB figure from 1/1024 (1 MiB) to 4096"),
                        (["--memory-cap", "inf"], "--memory-cap (inf) must be a GiB figure from 1/1024"),
                        (["--max-tp", "0"], "--max-tp (0) must be from 1 to 1048576"),
                        (["--threads", "100000"], "--threads (100000) must be from 1 to 1024"),
                        (["--objective", "gpus", "--target-tokens-per-s", "inf"],
                         "--target-tokens-per-s (inf) must be a finite, positive throughput")):
        refused(orrery, [*SEARCH, "--num-gpus", "8", *args], words, what=f"search {' '.join(args)}")
    # More GPUs than one job may have (limits::kGpus = 2^20): search listed every plan invalid with exit 0.
    refused(orrery, [*SEARCH, "--num-gpus", "2000000"], "--num-gpus (2000000) must be from 1 to 1048576",
            what="search --num-gpus 2000000")
    refused(orrery, ["collective", "--num-gpus", "2000000", "--bytes", "1M"],
            "--num-gpus (2000000) must be from 2 to 1048576", what="collective --num-gpus 2000000")


def unreadable_paths(orrery, tmp):
    """Paths the operating system refuses (the second review): a loop of symbolic links once gave "internal error
    (please report)" with exit 1, and an I/O error part-way through a read passed as malformed JSON."""
    loop = os.path.join(tmp, "loop.json")
    os.symlink("loop.json", loop)
    reason = "cannot be read: Too many levels of symbolic links"
    refused(orrery, ["predict", loop], f"scenario ({loop}) {reason}", what="predict a symlink loop")
    refused(orrery, ["search", loop, "--quiet"], f"scenario ({loop}) {reason}", what="search a symlink loop")
    refused(orrery, ["predict", "--model", loop], f"model.hf_config ({loop}) {reason}", what="--model a symlink loop")
    # validate reads it as a record that fails by name; over nothing else that is exit 2.
    err = refused(orrery, ["validate", loop], "none of the 1 record could be read", f"({loop}) {reason}",
                  what="validate a symlink loop")
    expect("internal error" not in err, f"validate a symlink loop: {err[:300]!r}")
    # Reading /proc/self/mem from offset 0 fails with EIO (nothing is mapped there): a stream read stopped as at
    # the end of the file, and the parser then reported "not valid JSON ... unexpected end of input".
    if os.path.exists("/proc/self/mem"):
        err = refused(orrery, ["predict", "/proc/self/mem"], "scenario (/proc/self/mem) cannot be read: Input/output error",
                      what="predict /proc/self/mem")
        expect("JSON" not in err, f"an I/O error reported as JSON: {err[:300]!r}")


def error_texts(orrery, tmp):
    """What errors say (the second review): the file a field error is in, the key given, the input's control
    characters escaped, a long quote cut."""
    # predict named the field but not the file (as search did not either); with flags, it says they took part.
    bad = write(tmp, "tp6.json", dict(SMALL, parallel={"tp": 6}))
    rule = "cluster.num_gpus (8) must be divisible by tp x pp x cp (6 x 1 x 1 = 6)"
    refused(orrery, ["predict", bad], f"error: scenario {bad}: {rule}", what="predict names the file")
    refused(orrery, ["predict", bad, "--pp", "1"], f"error: scenario {bad} with the command-line flags: {rule}",
            what="predict names the file and the flags")
    refused(orrery, ["search", bad, "--quiet"], f"error: scenario {bad}: {rule}", what="search names the file")
    # The last stage's count was reported as decoder_first_pipeline_num_layers.
    last = write(tmp, "last.json", dict(SMALL, cluster={"preset": "dgx-h100", "num_gpus": 16},
                                        parallel={"tp": 4, "pp": 4, "decoder_last_pipeline_num_layers": 9}))
    err = refused(orrery, ["predict", last], "parallel.decoder_last_pipeline_num_layers (9) leaves 23 of "
                  "num_hidden_layers (32) for 3 other stage(s)", what="decoder_last_pipeline_num_layers")
    expect("decoder_first" not in err, f"decoder_last's error names decoder_first: {err[:300]!r}")
    # ESC and C1's CSI from the input reached the terminal raw: in an error's value, a warning's key, a command
    # name and CLI11's own messages.
    esc = write(tmp, "esc.json", dict(SMALL, training={"seq_length": 2048, "global_batch_size": 8,
                                                       "precision": "bf16\x1b[2J\u009b1m"}))
    code, out, err, _ = run(orrery, "predict", esc)
    expect(code == 2 and 'training.precision ("bf16\\u001B[2J\\u009B1m")' in err and "\x1b" not in err
           and "\u009b" not in err, f"ESC in a value: exit {code}, {err[:300]!r}")
    key = write(tmp, "esckey.json", dict(SMALL, model={"preset": "llama3-8b", "\x1b[31mzap": 1}))
    code, out, err, _ = run(orrery, "predict", key)
    expect(code == 0 and "warning: model.\\u001B[31mzap is not a field" in out and "\x1b" not in out,
           f"ESC in an override's key: exit {code}, {out[-300:]!r}")
    for args, words in ((["\x1b[31mfoo"], "error: unknown command '\\u001B[31mfoo'"),
                        (["predict", "--tp", "\x1b[31m"], "--tp (\\u001B[31m) must be a whole number")):
        code, out, err, _ = run(orrery, *args)
        expect(code == 2 and words in err and "\x1b" not in err, f"{args!r}: exit {code}, {err[:300]!r}")
    # A 10 MB key was echoed whole (10 MB on stderr); the quote is cut to 200 bytes with its length.
    big = write(tmp, "bigkey.json", {**SMALL, "k" * 10_000_000: 1})
    err = refused(orrery, ["predict", big], "k" * 200 + "... (10000000 bytes in all) (1) is not a known key here",
                  what="a 10 MB key")
    expect(len(err) < 1000, f"a 10 MB key: {len(err)} bytes of error")


def validate_inputs(orrery, root, tmp):
    """What validate counts (the second review): a file given without expect was passed over with a note (exit 0
    over nothing), and a file given twice weighed twice in the MAPE."""
    plain = write(tmp, "plain.json", SMALL)
    refused(orrery, ["validate", plain], "none of the 1 record could be read and simulated",
            f"scenario {plain} has no expect block: a record needs the published figures it is compared with",
            what="validate a file without expect")
    empty = write(tmp, "empty-expect.json", dict(SMALL, expect={}))
    refused(orrery, ["validate", empty], f"scenario {empty} has an empty expect block", what="validate expect {}")
    # Beside a good record it is listed as failed, and it fails a gate as any broken record does.
    record = os.path.join(root, "scenarios", "validation", "kor22-22b-full-recompute.json")
    code, out, err, _ = run(orrery, "validate", plain, record, "--json")
    doc = json.loads(out) if code == 0 else {"summary": {}, "records": []}
    errors = {r["name"]: r.get("error", "") for r in doc["records"]}
    expect(code == 0 and doc["summary"].get("records") == 1 and doc["summary"].get("not_simulated") == 1
           and "has no expect block" in errors.get("plain", ""),
           f"validate a file without expect beside a record: exit {code}, {out[:300]!r} {err[:300]!r}")
    code, out, err, _ = run(orrery, "validate", plain, record, "--max-mape", "100")
    expect(code == 1 and "validate: plain failed: scenario" in err, f"gate over a file without expect: exit {code}, {err[:300]!r}")
    # The same record three ways (twice by name, once through a link): one record, with a note for each repeat.
    record = os.path.abspath(record)
    link = os.path.join(tmp, "link.json")
    os.symlink(record, link)
    code, out, err, _ = run(orrery, "validate", record, record, link, "--json")
    doc = json.loads(out) if code == 0 else {"summary": {}, "records": []}
    expect(code == 0 and doc["summary"].get("records") == 1 and len(doc["records"]) == 1
           and f"note: validate: {record} is given twice; it is validated once" in err
           and f"note: validate: {link} is the same file as {record}; it is validated once" in err,
           f"validate one record three ways: exit {code}, {out[:200]!r}, {err[:400]!r}")
    # A folder and a file in it: the file once.
    folder = os.path.join(tmp, "one-record")
    os.mkdir(folder)
    copy = write(folder, "kor22-copy.json", json.load(open(record)))
    code, out, err, _ = run(orrery, "validate", folder, copy, "--json")
    doc = json.loads(out) if code == 0 else {"records": []}
    expect(code == 0 and len(doc["records"]) == 1
           and f"note: validate: {copy} is given and lies in a given folder; it is validated once" in err,
           f"validate a folder and a file in it: exit {code}, {err[:300]!r}")


def main():
    orrery = sys.argv[1]
    tmp = tempfile.mkdtemp()

    # 1. An override nested 100,000 levels deep once overflowed the stack in the preset merge (a segfault); now the
    # parser refuses it, naming the file, the depth and the limit, under cluster and model alike.
    deep = "[" * 100000 + "]" * 100000
    training = '"training": {"seq_length": 2048, "global_batch_size": 8}'
    for key, doc in (("cluster", '{"model": "llama3-8b", "cluster": {"preset": "dgx-h100", "num_gpus": 8, "notes": ' +
                      deep + "}, " + training + "}"),
                     ("model", '{"model": {"preset": "llama3-8b", "notes": ' + deep +
                      '}, "cluster": {"preset": "dgx-h100", "num_gpus": 8}, ' + training + "}")):
        path = write(tmp, f"deep-{key}.json", doc.encode())
        refused(orrery, ["predict", path], f"scenario {path} (depth 65 at byte", f"in {key}.notes[0]",
                "is nested deeper than 64 levels of objects and arrays", what=f"{key} override 100,000 deep")

    # 2. Numbers beyond physical bounds, once predicted with exit 0.
    for field, value, words in (
            ("peak_tflops", {"bf16": 1e300}, "cluster.gpu.peak_tflops.bf16 (1e+300) must lie in [0.1, 150000] TFLOP/s"),
            ("hbm_capacity_GiB", 1e10, "cluster.gpu.hbm_capacity_GiB (10000000000) must lie in [1, 4096] GiB")):
        doc = json.loads(json.dumps(SMALL))
        doc["cluster"]["gpu"] = {"preset": "h100-sxm", field: value}
        refused(orrery, ["predict", write(tmp, "bound.json", doc)], words, what=f"gpu.{field} {value}")

    # 3. An expect value of 1e308 or 4.9e-324 once made validate --json print null for the MAPE, the worst error and
    # the per-source MAPE; now the record is refused with the bound, and validate's JSON holds no null.
    good = json.loads(json.dumps(SMALL))
    good["expect"] = {"iteration_time_s": 1.0}
    records = os.path.join(tmp, "records")
    os.mkdir(records)
    write(records, "good-run.json", good)
    for name, value in (("huge-run.json", 1e308), ("tiny-run.json", 4.9e-324)):
        bad = json.loads(json.dumps(SMALL))
        bad["expect"] = {"iteration_time_s": value}
        write(records, name, bad)
    code, out, err, _ = run(orrery, "validate", records, "--json")
    expect(code == 0 and "null" not in out and "NaN" not in out, f"validate --json with extreme expect values: exit {code}, "
           f"null in output: {'null' in out}, {err[:200]!r}")
    if code == 0:
        doc = json.loads(out)
        messages = {r["name"]: r.get("error", "") for r in doc["records"]}
        expect("expect.iteration_time_s (1e+308) must lie in [1e-06, 1000000] s" in messages.get("huge-run", ""),
               f"validate: the 1e308 record's error: {messages.get('huge-run')!r}")
        expect("expect.iteration_time_s (5e-324) must lie in" in messages.get("tiny-run", ""),
               f"validate: the 4.9e-324 record's error: {messages.get('tiny-run')!r}")
        expect(doc["summary"]["records"] == 1 and doc["summary"]["not_simulated"] == 2,
               f"validate summary: {doc['summary']}")

    # 4. Invalid UTF-8 once gave "invalid value in the input: [json.exception.type_error.316] invalid UTF-8 byte at
    # index 220", naming neither file nor field; a NUL in a key gave just the key's name.
    latin1 = write(tmp, "latin1.json", json.dumps(SMALL)[:-1].encode() + b', "notes": "caf\xe9"}')
    refused(orrery, ["predict", latin1], f"scenario {latin1} (notes at byte 144: 0xE9) is not valid UTF-8",
            what="invalid UTF-8 in a value")
    broken = os.path.join(tmp, "utf8")
    os.mkdir(broken)
    write(broken, "latin1.json", open(latin1, "rb").read()[:-1] + b', "expect": {"iteration_time_s": 1}}')
    code, out, err, raw = run(orrery, "validate", broken, "--json")
    try:
        raw.decode("utf-8")
        doc = json.loads(out)
        readable = "is not valid UTF-8" in doc["records"][0]["error"]
    except (UnicodeDecodeError, ValueError, KeyError, IndexError):
        readable = False
    expect(code == 2 and readable and "type_error" not in err,
           f"validate --json over a non-UTF-8 record: exit {code}, stdout {out[:300]!r}, stderr {err[:300]!r}")
    nul = write(tmp, "nul.json", json.dumps(SMALL)[:-1].encode() + b', "no\\u0000tes": "x"}')
    refused(orrery, ["predict", nul], f"scenario {nul} (the key \"no\\u0000tes\" of the top level at byte",
            "holds a NUL character (\\u0000) in a key", what="NUL in a key")

    # 6. An empty scenario path once predicted the built-in default; validate over nothing but broken records
    # once exited 0.
    refused(orrery, ["predict", ""], "scenario", "must name a scenario file", what="predict ''")
    refused(orrery, ["search", "", "--quiet"], "scenario", "must name a file", what="search ''")
    refused(orrery, ["validate", broken], "none of the 1 record could be read and simulated", "latin1",
            what="validate over a broken record only")

    # 7. --expand-ranks of 262,144 GPUs beyond the task-instance limit: refused from the task count, before any
    # per-rank structure is built (this once took 95 s; the limit is limits::kTaskInstances).
    refused(orrery, ["predict", "--model", "llama3.1-405b", "--num-gpus", "262144", "--tp", "8", "--pp", "2",
                     "--sequence-parallel", "--seq-length", "8192", "--micro-batch-size", "1",
                     "--global-batch-size", "262144", "--expand-ranks"],
            "--expand-ranks (262144 ranks) would simulate", "task instances, above the limit of 2e+09",
            what="--expand-ranks at 262,144 GPUs")

    # 8. Found by the review of this work. A capacity factor of 1e18 overflowed the padded token count (UBSan:
    # signed overflow in sim/lower/moe_block.cpp) and printed a negative HFU with exit 0.
    moe = json.load(open(os.path.join(sys.argv[2], "tests", "fuzz", "corpus", "moe-ep-alltoall.json")))
    moe["training"].update({"moe_expert_capacity_factor": 1e18, "moe_pad_expert_input_to_capacity": True})
    refused(orrery, ["predict", write(tmp, "capacity.json", moe)], "training.moe_expert_capacity_factor (1e+18)",
            "must be at most num_experts / top-k = 4", what="capacity factor 1e18")
    # A straggler faster than the GPU (compute_slowdown below 1) once printed MFU 142.9% with exit 0.
    fast = dict(SMALL, stragglers=[{"rank": 1, "compute_slowdown": 1e-9}])
    refused(orrery, ["predict", write(tmp, "fast.json", fast)], "stragglers[0].compute_slowdown (1e-09)",
            "must be between 1 (no slowdown)", what="compute_slowdown below 1")
    # One thread per -j once aborted (std::terminate) at -j 100000; an infinite price once ranked plans at $inf.
    refused(orrery, ["validate", "-j", "100000", os.path.join(sys.argv[2], "scenarios", "validation")], "--jobs",
            what="validate -j 100000")
    refused(orrery, ["search", "--model", "llama3-8b", "--num-gpus", "8", "--global-batch-size", "64",
                     "--objective", "cost", "--gpu-hour-price", "inf"], "--gpu-hour-price (inf)", "must be a finite, non-negative price", what="price inf")
    # A Kineto trace path that is a device read forever (/dev/zero grew past 7 GB).
    refused(orrery, ["calibrate", "host", "/dev/zero"], "/dev/zero", "is not a regular file",
            what="calibrate host /dev/zero")
    # A gate of NaN once passed every record, and --skip "" skipped them all with exit 0.
    record = os.path.join(sys.argv[2], "scenarios", "validation", "kor22-22b-full-recompute.json")
    refused(orrery, ["validate", record, "--max-mape", "nan"], "--max-mape", "finite, non-negative",
            what="validate --max-mape nan")
    refused(orrery, ["validate", record, "--skip", ""], "--skip", "would skip every record", what="validate --skip ''")
    # One straggler on 65,536 GPUs: the consistency check built every rank's groups (minutes); now it finishes.
    strag = dict(SMALL, cluster={"preset": "dgx-h100", "num_gpus": 65536},
                 training={"seq_length": 2048, "global_batch_size": 65536},
                 stragglers=[{"rank": 1, "compute_slowdown": 2}])
    code, out, err, _ = run(orrery, "predict", write(tmp, "strag.json", strag))
    expect(code == 0 and "iteration time" in out, f"straggler on 65,536 GPUs: exit {code}, {err[:300]!r}")

    # From the second review: values that rounded to "none" or to an empty message, a window past the 64-bit
    # nanosecond clock, and stragglers that split 2^20 ranks into classes beyond the memory budget.
    refused(orrery, ["predict", *SMALL_FLAGS, "--memory-budget", "1e-300"], "--memory-budget (9.31e-10 GiB)",
            "is below the", what="--memory-budget 1e-300 (rounded to 0 bytes: no budget)")
    refused(orrery, ["search", *SMALL_FLAGS, "--memory-cap", "1e-10"], "--memory-cap (1e-10)", "1/1024 (1 MiB)",
            what="search --memory-cap 1e-10 (rounded to no cap)")
    refused(orrery, ["collective", "--op", "all_reduce", "--num-gpus", "8", "--bytes", "0.4"], "--bytes (0.4)",
            "whole number of bytes", what="collective --bytes 0.4 (printed -nan GB/s)")
    refused(orrery, ["predict", *SMALL_FLAGS, "--trace", os.path.join(tmp, "w.json"), "--trace-window", "1e10:"],
            "--trace-window (1e10:)", "within 1e9 s", what="--trace-window past the clock")
    many = dict(SMALL, cluster={"preset": "dgx-h100", "num_gpus": 1 << 20},
                parallel={"tp": 8, "pp": 2, "sequence_parallel": True, "zero_stage": 1},
                training={"seq_length": 4096, "micro_batch_size": 1, "global_batch_size": 65536},
                stragglers=[{"rank": i * 4099 % (1 << 20), "compute_slowdown": 1.5} for i in range(1000)])
    refused(orrery, ["predict", write(tmp, "many_stragglers.json", many), "--memory-budget", "1"],
            "estimated for splitting 1048576 ranks by 1000 stragglers", what="1,000 stragglers on 2^20 GPUs")

    # 100,000 layers were within the limit and lowered for minutes (bucketing grows with layers squared).
    deep_model = dict(SMALL, model={"preset": "llama3-8b", "num_hidden_layers": 100000})
    refused(orrery, ["predict", write(tmp, "layers.json", deep_model)], "num_hidden_layers (100000)", "10000",
            what="100,000 layers")

    unbounded_numbers(orrery, tmp)
    flag_ranges(orrery)
    unreadable_paths(orrery, tmp)
    error_texts(orrery, tmp)
    validate_inputs(orrery, sys.argv[2], tmp)

    for p in problems:
        print(p)
    print(f"input hardening: {len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
