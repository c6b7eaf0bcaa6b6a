#!/usr/bin/env python3
"""The memory budget of `orrery predict` (sim/memory_budget.h, issue 26), end to end:
  - the estimate a refusal prints is above the peak resident memory the same run measures without a budget, and
    within 2x of it (the peak is the kernel's count, ru_maxrss: a second method);
  - --expand-ranks on 2^20 GPUs is refused at once when its estimate is above the budget, naming the ranks;
  - a --memory-budget that is not a positive number of GiB is refused with exit 2;
  - five million stragglers (a 180 MB file; once still parsing after 11 minutes, the duplicate-key check being
    quadratic) are read in linear time and refused at the first rank beyond the GPU limit, with at most 2.5 GiB of peak
    memory.
Usage: memory_budget_test.py ORRERY"""
import json
import os
import re
import subprocess
import sys
import tempfile

problems = []


def expect(condition, what):
    if not condition:
        problems.append(what)


def run(orrery, *args):
    return subprocess.run([orrery, "predict", *args], capture_output=True, text=True)


def peak_kib(orrery, *args):
    """Exit status, peak resident memory (KiB) and standard error of one run (stderr read before the wait, so a
    long message cannot fill the pipe and stall the child)."""
    p = subprocess.Popen([orrery, "predict", *args], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    err = p.stderr.read()
    _, status, usage = os.wait4(p.pid, 0)
    return os.waitstatus_to_exitcode(status), usage.ru_maxrss, err


def estimate_matches_peak(orrery):
    # 1,024 ranks of Llama-3-8B, every rank simulated and recorded: 2.8 million task instances.
    args = ["--model", "llama3-8b", "--num-gpus", "1024", "--tp", "8", "--pp", "2", "--seq-length", "4096",
            "--micro-batch-size", "1", "--global-batch-size", "256", "--expand-ranks"]
    refused = run(orrery, *args, "--memory-budget", "0.01")
    m = re.search(r"is below the ([0-9.e+-]+) GiB estimated for --expand-ranks \(1024 ranks", refused.stderr)
    expect(refused.returncode == 2 and m, f"a budget below the estimate: exit {refused.returncode}, {refused.stderr!r}")
    if not m:
        return
    estimate_kib = float(m.group(1)) * 1024 * 1024
    status, peak, _ = peak_kib(orrery, *args)
    expect(status == 0, f"the run without a budget: exit {status}")
    expect(peak <= estimate_kib <= 2 * peak, f"estimate {estimate_kib:.0f} KiB against a measured peak of {peak} KiB")


def million_gpus_refused(orrery, tmp):
    # One micro-batch, so that the task instances (727 million) stay within limits::kTaskInstances: the budget
    # refuses. Run without a budget it took 723 s and 2.1 GiB (2026-12-02, 2 shared cores).
    scenario = {"name": "llama3-8b on 2^20 GPUs", "model": "llama3-8b",
                "cluster": {"preset": "dgx-h100", "num_gpus": 1 << 20},
                "parallel": {"tp": 8, "pp": 2, "sequence_parallel": True, "zero_stage": 1},
                "training": {"seq_length": 4096, "micro_batch_size": 1, "global_batch_size": 65536}}
    path = os.path.join(tmp, "million.json")
    with open(path, "w") as f:
        json.dump(scenario, f)
    r = run(orrery, path, "--expand-ranks", "--memory-budget", "1")
    m = re.search(r"^error: --memory-budget \(1 GiB\) is below the ([0-9.]+) GiB estimated for --expand-ranks "
                  r"\(1048576 ranks, 7.27e\+08 task instances\)", r.stderr)
    expect(r.returncode == 2 and m, f"2^20 GPUs expanded under 1 GiB: exit {r.returncode}, {r.stderr!r}")
    # 727 million task instances at 3 bytes (2.03 GiB), 2^20 instances at 2 KiB (2 GiB), the graph and the base
    # (16 MiB): 4.05 GiB.
    expect(m and 4.0 <= float(m.group(1)) <= 4.3, f"the estimate for 2^20 ranks: {m and m.group(1)} GiB")


def bad_budgets_refused(orrery):
    for value in ["0", "-1", "nan", "inf", "abc", "2e6", ""]:
        r = run(orrery, "--model", "llama3-8b", "--num-gpus", "8", "--memory-budget", value)
        expect(r.returncode == 2 and "--memory-budget" in r.stderr and "GiB" in r.stderr,
               f"--memory-budget {value!r}: exit {r.returncode}, {r.stderr!r}")


def five_million_stragglers(orrery, tmp):
    path = os.path.join(tmp, "stragglers.json")
    with open(path, "w") as f:
        f.write('{"name": "5M stragglers", "model": "llama3-8b", "cluster": {"preset": "dgx-h100", "num_gpus": 1048576},'
                ' "parallel": {"tp": 8}, "training": {"seq_length": 4096, "global_batch_size": 131072}, "stragglers": [')
        f.write(",".join('{"rank": %d, "compute_slowdown": 1.5}' % i for i in range(5_000_000)))
        f.write("]}")
    code, peak, err = peak_kib(orrery, path)
    expect(code == 2 and "stragglers[1048577].rank (1048577) must be at most 1048576" in err,
           f"5 million stragglers: exit {code}, {err[:300]!r}")
    expect(peak < 2.5 * (1 << 20), f"5 million stragglers: peak memory {peak} KiB")


def main():
    orrery = sys.argv[1]
    with tempfile.TemporaryDirectory() as tmp:
        estimate_matches_peak(orrery)
        million_gpus_refused(orrery, tmp)
        bad_budgets_refused(orrery)
        five_million_stragglers(orrery, tmp)
    for p in problems:
        print("FAIL:", p)
    print(f"memory budget: {len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
