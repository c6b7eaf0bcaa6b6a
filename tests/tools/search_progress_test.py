#!/usr/bin/env python3
"""`orrery search`'s progress bar on a terminal (issue 22): it ends with one line that says what happened, also when
the time bound stops the search before the bar is full, and it shows a rate and the time left.

Invariants, with stderr on a pseudo-terminal (the bar is drawn only on a terminal):
- every bar `[###   ] D/T` has T = the JSON's `counts.enumerated` and D never decreasing; from the second bar on
  it shows `R plans/s`, and `at most ... left` while D < T;
- the last line (after the last carriage return, ending the output) is
  `[shard I/N: ]simulated S of T candidates in X s, R plans/s (I invalid, M pruned by memory, B by the time bound[,
  the last K at once])` with S, I, M, B the JSON's `counts`, S + I + M + B = T, and K = T - the last bar's D
  exactly when that bar was not full;
- with --quiet, or with stderr not a terminal, neither the bar nor the line is printed.
No figure of time is asserted, only that the rate and the time left are there.
Expected values come from the search's own --json file (the counts) and from adding them up here.
Usage: search_progress_test.py ORRERY"""
import json
import os
import re
import subprocess
import sys
import tempfile

BASE = ["search", "--model", "llama3-8b", "--cluster", "dgx-h100", "--num-gpus", "16", "--seq-length", "2048",
        "--global-batch-size", "64", "--threads", "2"]
# Stops early: after some blocks no remaining bound beats the top ten, and the rest is pruned at once.
EARLY = BASE + ["--pp", "1,2", "--cp", "1", "--recompute", "none,selective"]
# Runs to the end: 20 candidates (5 VPPs x 2 micro-batches x FP8 off/on), exhaustive, so the bar fills.
WHOLE = BASE + ["--tp", "2", "--pp", "2", "--cp", "1", "--zero-stage", "1", "--recompute", "none",
                "--micro-batch-size", "1,2", "--no-prune"]
BAR = re.compile(r"\[([# ]{40})\] ([\d,]+)/([\d,]+)(.*)")
FINAL = re.compile(r"(shard (\d+)/(\d+): )?simulated ([\d,]+) of ([\d,]+) candidates in [\d.]+ s, [\d.]+ plans/s "
                   r"\(([\d,]+) invalid, ([\d,]+) pruned by memory, ([\d,]+) by the time bound(, the last ([\d,]+) at once)?\)")

problems = []


def number(text):
    return int(text.replace(",", ""))


def run(args, tty=True):
    """stdout, stderr (as the terminal saw it) and the exit status of `orrery ARGS`."""
    with tempfile.TemporaryFile() as out:
        if not tty:
            r = subprocess.run([sys.argv[1], *args], stdout=out, stderr=subprocess.PIPE)
            out.seek(0)
            return out.read().decode(), r.stderr.decode(), r.returncode
        master, slave = os.openpty()
        p = subprocess.Popen([sys.argv[1], *args], stdout=out, stderr=slave)
        os.close(slave)
        err = b""
        while True:
            try:
                chunk = os.read(master, 65536)
            except OSError:  # the child closed the terminal
                break
            if not chunk:
                break
            err += chunk
        os.close(master)
        code = p.wait()
        out.seek(0)
        return out.read().decode(), err.decode(), code


def check(name, args, expect_early, shard=None):
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "plans.json")
        _, err, code = run(args + ["--json", path])
        if code != 0:
            problems.append(f"{name}: exit {code}: {err[-300:]}")
            return
        with open(path) as f:
            counts = json.load(f)["counts"]
    # A terminal turns "\n" into "\r\n": the line ends are dropped, then the redraws split at "\r".
    text = err.replace("\r\n", "\n")
    if not text.endswith("\n") or text.count("\n") != 1:
        problems.append(f"{name}: stderr is not bars and one final line: {text[-300:]!r}")
        return
    pieces = [p.rstrip(" ") for p in text[:-1].split("\r") if p]
    bars, final = pieces[:-1], pieces[-1]
    total = counts["enumerated"]
    last_done = None
    for i, bar in enumerate(bars):
        m = BAR.fullmatch(bar)
        if not m:
            problems.append(f"{name}: not a bar: {bar!r}")
            continue
        done, bar_total, rest = number(m.group(2)), number(m.group(3)), m.group(4)
        if bar_total != total or (last_done is not None and done < last_done) or m.group(1).count("#") != 40 * done // total:
            problems.append(f"{name}: bar {bar!r} against {total} candidates after {last_done}")
        if i > 0 and not re.match(r"  [\d.]+ plans/s", rest):
            problems.append(f"{name}: bar {i + 1} shows no rate: {bar!r}")
        if i > 0 and done < total and not re.search(r"  at most (\d+ s|\d+m\d\ds|\d+h\d\dm) left$", rest):
            problems.append(f"{name}: bar {i + 1} shows no time left: {bar!r}")
        last_done = done
    if not bars:
        problems.append(f"{name}: no bar was drawn")
        return
    m = FINAL.fullmatch(final)
    if not m:
        problems.append(f"{name}: the last line is not the summary: {final!r}")
        return
    got = {"simulated": number(m.group(4)), "enumerated": number(m.group(5)), "invalid": number(m.group(6)),
           "pruned_memory": number(m.group(7)), "pruned_bound": number(m.group(8))}
    for key, value in got.items():
        if counts[key] != value:
            problems.append(f"{name}: the last line says {value} {key}, the JSON {counts[key]}")
    if got["simulated"] + got["invalid"] + got["pruned_memory"] + got["pruned_bound"] != got["enumerated"]:
        problems.append(f"{name}: the last line's counts do not add up to its {got['enumerated']} candidates")
    at_once = number(m.group(10)) if m.group(10) else None
    if expect_early:
        if last_done >= total:
            problems.append(f"{name}: the bar reached {last_done}/{total}: this case no longer stops early (narrow it)")
        elif at_once != total - last_done:
            problems.append(f"{name}: the last line says {at_once} pruned at once; the bar stopped at {last_done} of {total}")
    elif last_done != total or at_once is not None:
        problems.append(f"{name}: the bar ended at {last_done}/{total}, the last line says {at_once} at once")
    if (m.group(1) is None) != (shard is None) or (shard and (m.group(2), m.group(3)) != shard):
        problems.append(f"{name}: the last line names shard {m.group(1)!r}, expected {shard}")
    print(f"{name}: {len(bars)} bars, last {last_done}/{total}; {final}")


def main():
    check("early stop", EARLY, expect_early=True)
    check("whole search", WHOLE, expect_early=False)
    check("one shard", EARLY + ["--shard", "1/3"], expect_early=True, shard=("1", "3"))
    for name, args, tty in (("--quiet", WHOLE + ["--quiet"], True), ("not a terminal", WHOLE, False)):
        _, err, code = run(args, tty)
        if code != 0 or err.strip():
            problems.append(f"{name}: exit {code}, stderr {err[:200]!r} (nothing expected)")
    for p in problems:
        print(p)
    print(f"search progress: {len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
