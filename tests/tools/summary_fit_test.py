#!/usr/bin/env python3
"""The text summary of a plan that does not fit in GPU memory says so on its first line (issue 22), and that of a
plan that fits does not.

Invariant: `orrery predict` prints as its first line
    does not fit: peak memory P GiB of C GiB per GPU, over in WHERE; the figures below are for a GPU with that much memory
exactly when the report's peak memory exceeds the GPU's capacity, where WHERE names the pipeline stages whose peak
exceeds the capacity ("pipeline stage 0", "pipeline stages 0, 1, 2", or "N of M pipeline stages" beyond eight).
Expected values: P, C and the stages over are computed here from the same prediction's --json report
(`peak_memory_bytes`, `memory.capacity_bytes`, `memory.per_stage[].peak`), whose keys stay as they were; each stage
over also has the report's warning. A plan that fits starts with its name (the report's `name`).
Usage: summary_fit_test.py ORRERY"""
import json
import subprocess
import sys

GIB = 2 ** 30
CASES = [
    # (flags, what the case is): the first three do not fit, the last two do.
    (["--model", "llama3-70b", "--cluster", "dgx-h100", "--num-gpus", "64", "--tp", "8"],
     "the README's third example: TP 8 alone, one stage over"),
    (["--model", "llama3-70b", "--num-gpus", "64", "--tp", "4", "--pp", "16", "--global-batch-size", "16"],
     "a 16-stage pipeline whose first stages hold the most activations"),
    (["--model", "llama3-70b", "--num-gpus", "16", "--tp", "1", "--pp", "16", "--global-batch-size", "16"],
     "every one of 16 stages over: counted, not listed"),
    ([], "the built-in default (fits, 50 GiB of 80)"),
    (["--model", "llama3-8b", "--num-gpus", "8", "--tp", "8"], "Llama-3-8B on 8 GPUs (fits)"),
]

problems = []


def predict(flags, *more):
    r = subprocess.run([sys.argv[1], "predict", *flags, *more], capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"predict {' '.join(flags)} {' '.join(more)}: exit {r.returncode}: {r.stderr[:300]}")
    return r.stdout


def expected_first_line(report):
    capacity = report["memory"]["capacity_bytes"]
    peak = report["peak_memory_bytes"]
    stages = report["memory"]["per_stage"]
    over = [s["stage"] for s in stages if s["peak"] > capacity]
    if peak <= capacity:
        return None, over
    if len(over) <= 8:
        where = f"pipeline stage{'' if len(over) == 1 else 's'} {', '.join(str(s) for s in over)}"
    else:
        where = f"{len(over)} of {len(stages)} pipeline stages"
    return (f"does not fit: peak memory {peak / GIB:.2f} GiB of {capacity / GIB:.1f} GiB per GPU, over in {where}; "
            f"the figures below are for a GPU with that much memory"), over


def main():
    over_cases = fit_cases = 0
    for flags, what in CASES:
        report = json.loads(predict(flags, "--json"))
        text = predict(flags).split("\n")
        want, over = expected_first_line(report)
        if want is None:
            fit_cases += 1
            if text[0] != report["name"] or any("does not fit" in line for line in text):
                problems.append(f"{what}: fits, yet its summary starts {text[0]!r} or says 'does not fit'")
            continue
        over_cases += 1
        if text[0] != want:
            problems.append(f"{what}: first line\n    {text[0]!r}\n  expected\n    {want!r}")
        if text[1] != report["name"]:
            problems.append(f"{what}: second line {text[1]!r}, expected the name {report['name']!r}")
        for stage in over:
            if not any(line.startswith(f"  warning: does not fit: pipeline stage {stage} needs") for line in text):
                problems.append(f"{what}: stage {stage} is over, but no warning names it")
    if over_cases != 3 or fit_cases != 2:
        problems.append(f"{over_cases} cases over memory and {fit_cases} that fit; the cases expect 3 and 2")
    for p in problems:
        print(p)
    print(f"summary fit line: {over_cases} plans over memory, {fit_cases} that fit; {len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
