#!/usr/bin/env python3
"""Outputs of `orrery` that nothing breaks (issue 26), end to end. One case per run:
  kill_keeps_old_file      a prediction killed (SIGKILL) while it writes a trace leaves the old file byte-identical
  signal_removes_temporary SIGTERM or SIGINT while a trace is written: the old file stays, the temporary file goes,
                           and the process ends by the signal
  same_file_refused        two outputs naming one file, or an output naming an input, are refused before any work
  dev_full_fails           writing a trace, timeline, report, search or profile to /dev/full exits non-zero with a message
  trace_selection          --trace-ranks/-stages/-microbatches/-window select exactly what they say; the trace is valid
                           JSON with well-formed events whose flows pair up; --trace-max-events cuts and says so
  unwritable_path_refused  an output path that cannot be written is refused with exit 2 before any work
  sc21_trace_capped        the issue's case: --trace on the SC21 530B record (1,120 GPUs) at the default cap writes
                           at most a million events (not 626 MB), says what it left out, and stays under 1 GiB of
                           memory (it needed 10.7 GB); the kernel's peak (ru_maxrss) is the measure
Usage: outputs_test.py ORRERY SOURCE_DIR CASE"""
import collections
import json
import os
import signal
import subprocess
import sys
import tempfile
import time

problems = []
SMALL = ["--model", "llama3-8b", "--num-gpus", "16", "--seq-length", "4096", "--global-batch-size", "32"]
SEARCH = ["search", "--model", "llama3-8b", "--cluster", "dgx-h100", "--num-gpus", "8", "--seq-length", "2048",
          "--global-batch-size", "16", "--pp", "1", "--cp", "1", "--quiet"]
# The case: the SC21 530B record on 1,120 GPUs, whose whole trace is some 600 MB.
BIG = os.path.join("scenarios", "validation", "sc21-t2-ptdp-530b-1120gpu.json")


def run(orrery, *args, **kw):
    return subprocess.run([orrery, *args], capture_output=True, text=True, **kw)


def expect(condition, what):
    if not condition:
        problems.append(what)


def kill_keeps_old_file(orrery, source, tmp):
    target = os.path.join(tmp, "trace.json")
    old = b"".join(b"an old trace, line %d\n" % i for i in range(10000))
    with open(target, "wb") as f:
        f.write(old)
    p = subprocess.Popen([orrery, "predict", os.path.join(source, BIG), "--trace", target, "--trace-max-events", "0"],
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    # OutputFile's temporary name (models/output_file.h): kill once it holds part of the new trace.
    temporary = os.path.join(tmp, f".trace.json.{p.pid}.tmp")
    killed = False
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline and p.poll() is None:
        if os.path.exists(temporary) and os.path.getsize(temporary) > 0:
            p.send_signal(signal.SIGKILL)
            killed = True
            break
        time.sleep(0.002)
    p.wait()
    expect(killed, f"the prediction ended (exit {p.returncode}) before its temporary trace file appeared: "
                   f"{p.stderr.read()[:300]!r}")
    expect(p.returncode == -signal.SIGKILL, f"the prediction was not killed: exit {p.returncode}")
    with open(target, "rb") as f:
        expect(f.read() == old, "the old file changed under a killed prediction")
    # A later run replaces it whole (and is not confused by the killed run's leftover temporary file).
    r = run(orrery, "predict", *SMALL, "--pp", "2", "--trace", target)
    expect(r.returncode == 0, f"the next run: exit {r.returncode}: {r.stderr[:300]}")
    with open(target) as f:
        expect("traceEvents" in json.load(f), "the next run's trace has no traceEvents")


def signal_removes_temporary(orrery, source, tmp):
    target = os.path.join(tmp, "trace.json")
    old = b"an old trace\n" * 1000
    for sig in (signal.SIGTERM, signal.SIGINT):
        with open(target, "wb") as f:
            f.write(old)
        # The child's SIGINT is set to its default: a shell or a harness may start tests with it ignored, and
        # orrery leaves an ignored signal ignored (models/signal_cleanup.h).
        p = subprocess.Popen([orrery, "predict", os.path.join(source, BIG), "--trace", target, "--trace-max-events", "0"],
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                             preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
        temporary = os.path.join(tmp, f".trace.json.{p.pid}.tmp")
        sent = False
        deadline = time.monotonic() + 600
        while time.monotonic() < deadline and p.poll() is None:
            if os.path.exists(temporary) and os.path.getsize(temporary) > 0:
                p.send_signal(sig)
                sent = True
                break
            time.sleep(0.002)
        p.wait()
        name = signal.Signals(sig).name
        expect(sent, f"{name}: the prediction ended (exit {p.returncode}) before its temporary file appeared: "
                     f"{p.stderr.read()[:300]!r}")
        expect(p.returncode == -sig, f"{name}: the prediction did not end by the signal: exit {p.returncode}")
        expect(not os.path.exists(temporary), f"{name}: the temporary file {temporary} was left behind")
        with open(target, "rb") as f:
            expect(f.read() == old, f"{name}: the old file changed")
        p.stderr.close()


def same_file_refused(orrery, source, tmp):
    scenario = os.path.join(tmp, "s.json")
    with open(scenario, "w") as f:
        json.dump({"model": "llama3-8b", "cluster": {"preset": "dgx-h100", "num_gpus": 16},
                   "training": {"seq_length": 4096, "global_batch_size": 32}}, f)
    original = open(scenario, "rb").read()
    out = os.path.join(tmp, "out.json")
    link = os.path.join(tmp, "link.json")
    with open(out, "w") as f:
        f.write("old")
    os.symlink(out, link)
    for args, words in (
            (["predict", *SMALL, "--trace", out, "--timeline", out],
             f"--timeline ({out}) names the same file as --trace ({out})"),
            # Through a link and a "..": the same file all the same.
            (["predict", *SMALL, "--trace", link, "--timeline", os.path.join(tmp, "..", os.path.basename(tmp), "out.json")],
             "names the same file as --trace"),
            (["predict", scenario, "--timeline", scenario], f"--timeline ({scenario}) names the same file as the input scenario"),
            ([*SEARCH, "--csv", out, "--json", out], f"--json ({out}) names the same file as --csv ({out})"),
            (["search", "merge", out, "--json", out], f"--json ({out}) names the same file as the input files")):
        r = run(orrery, *args)
        # Refused before the work: nothing reported, both files as they were.
        expect(r.returncode == 2 and words in r.stderr and r.stdout == "",
               f"{' '.join(args[:2])}: exit {r.returncode}, stdout {r.stdout[:100]!r}, stderr {r.stderr[:300]!r}")
    expect(open(scenario, "rb").read() == original and open(out).read() == "old", "a refused run changed a file")
    # A special file may take both outputs.
    r = run(orrery, "predict", *SMALL, "--trace", os.devnull, "--timeline", os.devnull)
    expect(r.returncode == 0, f"--trace and --timeline {os.devnull}: exit {r.returncode}, {r.stderr[:300]!r}")


def dev_full_fails(orrery, source, tmp):
    if not os.path.exists("/dev/full"):
        return
    for what, args in [("--trace", ["predict", *SMALL, "--trace", "/dev/full"]),
                       ("--timeline", ["predict", *SMALL, "--timeline", "/dev/full"]),
                       ("search --json", [*SEARCH, "--json", "/dev/full"]),
                       ("search --csv", [*SEARCH, "--csv", "/dev/full"]),
                       ("calibrate import-nccl-tests --out",
                        ["calibrate", "import-nccl-tests", os.path.join(source, "tests", "data", "nccl-tests-logs",
                                                                        "01-aws-p5-h100-1x8-allreduce.txt"),
                         "--gpu", "H100", "--ranks", "8", "--out", "/dev/full"])]:
        r = run(orrery, *args)
        expect(r.returncode != 0 and "/dev/full" in r.stderr and "No space left" in r.stderr,
               f"{what} /dev/full: exit {r.returncode}, stderr {r.stderr[:300]!r}")
    # The report itself: standard output on a full device. list, collective and validate print with fmt::print,
    # which throws where std::cout only fails (once "internal error (please report): cannot write to file").
    record = os.path.join(source, "scenarios", "validation", "kor22-22b-full-recompute.json")
    for args in (["predict", *SMALL, "--json"], ["predict", *SMALL], ["list"], ["collective", "--bytes", "1M"],
                 ["validate", record]):
        with open("/dev/full", "w") as full:
            r = subprocess.run([orrery, *args], stdout=full, stderr=subprocess.PIPE, text=True)
        expect(r.returncode == 2 and "standard output: cannot be written: No space left on device" in r.stderr
               and "internal error" not in r.stderr,
               f"{' '.join(args)} > /dev/full: exit {r.returncode}, stderr {r.stderr[:300]!r}")


def load_trace(path):
    with open(path) as f:
        doc = json.load(f)
    events = doc["traceEvents"]
    # Well-formed events: each has a phase and a process; slices have a name, a thread and non-negative times.
    for e in events:
        if not (isinstance(e.get("ph"), str) and isinstance(e.get("pid"), int)):
            problems.append(f"malformed event {e}")
            break
        if e["ph"] in "Xsf" and not (isinstance(e.get("tid"), int) and isinstance(e.get("name"), str)
                                     and e.get("ts", -1) >= 0 and e.get("dur", 0) >= 0):
            problems.append(f"malformed event {e}")
            break
    return doc, events


def stage_of_track(events):
    """pid -> stage, from the process names ("rank 3 (stage 1)")."""
    out = {}
    for e in events:
        if e["ph"] == "M" and e["name"] == "process_name":
            out[e["pid"]] = int(e["args"]["name"].split("stage ")[1].split(")")[0].split(",")[0])
    return out


def check_flows(events, what):
    """Each flow id has one start and one finish, with the same name, on a slice that starts at the flow's time."""
    starts = collections.Counter(e["id"] for e in events if e["ph"] == "s")
    finishes = collections.Counter(e["id"] for e in events if e["ph"] == "f")
    expect(starts == finishes and all(n == 1 for n in starts.values()),
           f"{what}: flows do not pair: {len(starts)} starts, {len(finishes)} finishes")
    names = {}
    for e in events:
        if e["ph"] in "sf":
            names.setdefault(e["id"], set()).add(e["name"])
    expect(all(len(n) == 1 for n in names.values()), f"{what}: a flow's two ends have different names")
    slices = {(e["pid"], e["tid"], e["ts"]) for e in events if e["ph"] == "X"}
    expect(all((e["pid"], e["tid"], e["ts"]) in slices for e in events if e["ph"] in "sf"),
           f"{what}: a flow event is not at the start of a slice of its track")
    return len(starts)


def trace_selection(orrery, source, tmp):
    # Every rank simulated on its own: TP 2, PP 4, DP 2 on 16 GPUs; collectives span tracks.
    base = ["predict", *SMALL, "--tp", "2", "--pp", "4", "--expand-ranks"]
    whole = os.path.join(tmp, "whole.json")
    r = run(orrery, *base, "--trace", whole)
    expect(r.returncode == 0 and "warning" not in r.stderr, f"whole trace: exit {r.returncode}: {r.stderr[:300]}")
    doc, events = load_trace(whole)
    stages = stage_of_track(events)
    expect(sorted(stages) == list(range(16)), f"whole trace: tracks {sorted(stages)}, not ranks 0-15")
    flows = check_flows(events, "whole trace")
    expect(flows > 0, "whole trace: no flow events")
    kinds = {e["name"] for e in events if e["ph"] == "s"}
    expect("tp" in kinds and any(k.startswith("pp_") for k in kinds), f"whole trace: flows only of {sorted(kinds)}")
    expect(doc["otherData"]["events_left_out"] == 0, f"whole trace left events out: {doc['otherData']}")

    # Ranks and stages: the tracks are exactly the selected ranks of the selected stages.
    picked = os.path.join(tmp, "picked.json")
    r = run(orrery, *base, "--trace", picked, "--trace-ranks", "0-7,12", "--trace-stages", "1,3")
    expect(r.returncode == 0, f"--trace-ranks/--trace-stages: exit {r.returncode}: {r.stderr[:300]}")
    doc, events = load_trace(picked)
    wanted = sorted(pid for pid, s in stages.items() if s in (1, 3) and (pid <= 7 or pid == 12))
    expect(wanted, "no rank of 0-7,12 is in stage 1 or 3: the test's selection is empty")
    expect(sorted(stage_of_track(events)) == wanted and {e["pid"] for e in events} == set(wanted),
           f"--trace-ranks 0-7,12 --trace-stages 1,3: tracks {sorted(stage_of_track(events))}, want {wanted}")
    check_flows(events, "ranks and stages")

    # Micro-batches: only their tasks.
    mb = os.path.join(tmp, "mb.json")
    r = run(orrery, *base, "--trace", mb, "--trace-microbatches", "1,2")
    doc, events = load_trace(mb)
    got = {e["args"]["microbatch"] for e in events if e["ph"] == "X"}
    expect(r.returncode == 0 and got == {1, 2}, f"--trace-microbatches 1,2: micro-batches {sorted(got)}")
    check_flows(events, "micro-batches")

    # A window: only tasks that overlap it (the Trace Event Format counts microseconds).
    win = os.path.join(tmp, "window.json")
    r = run(orrery, *base, "--trace", win, "--trace-window", "0.1:0.2")
    doc, events = load_trace(win)
    slices = [e for e in events if e["ph"] == "X"]
    expect(r.returncode == 0 and slices and all(e["ts"] < 0.2e6 and e["ts"] + e["dur"] > 0.1e6 for e in slices),
           f"--trace-window 0.1:0.2: {len(slices)} slices, some outside the window")
    check_flows(events, "window")

    # The cap: at most 1,000 events, the rest left out and said so, on stderr and in the trace.
    capped = os.path.join(tmp, "capped.json")
    r = run(orrery, *base, "--trace", capped, "--trace-max-events", "1000")
    doc, events = load_trace(capped)
    counted = [e for e in events if e["ph"] in "XCsf"]
    expect(r.returncode == 0 and len(counted) <= 1000 and counted, f"--trace-max-events 1000: {len(counted)} events")
    expect("warning: --trace" in r.stderr and "left out" in r.stderr and "--trace-max-events" in r.stderr,
           f"--trace-max-events 1000: no warning on stderr: {r.stderr[:300]!r}")
    meta = doc["otherData"]
    expect(meta["events_left_out"] > 0 and meta["events"] == len(counted) and "left_out" in meta,
           f"--trace-max-events 1000: metadata {meta}")
    check_flows(events, "capped")

    # Bad selections are refused before the run.
    for args, field in [(["--trace-ranks", "16"], "--trace-ranks"), (["--trace-stages", "4"], "--trace-stages"),
                        (["--trace-window", "3:1"], "--trace-window"), (["--trace-ranks", "a"], "--trace-ranks"),
                        (["--trace-max-events", "-1"], "--trace-max-events")]:
        r = run(orrery, *base, "--trace", os.path.join(tmp, "bad.json"), *args)
        expect(r.returncode == 2 and field in r.stderr, f"{' '.join(args)}: exit {r.returncode}: {r.stderr[:200]}")
    r = run(orrery, *base, "--trace-ranks", "0")
    expect(r.returncode == 2 and "--trace FILE" in r.stderr, f"--trace-ranks without --trace: exit {r.returncode}")


def unwritable_path_refused(orrery, source, tmp):
    big = os.path.join(source, BIG)
    missing = os.path.join(tmp, "no-such-folder", "out.json")
    for option, args in [("--trace", ["predict", big, "--trace", missing]),
                         ("--timeline", ["predict", big, "--timeline", missing]),
                         ("--trace", ["predict", big, "--trace", tmp]),
                         ("--json", [*SEARCH, "--json", missing]),
                         ("--csv", [*SEARCH, "--csv", tmp]),
                         ("--out", ["calibrate", "plan", "--out", missing])]:
        r = run(orrery, *args)
        # Refused by the check before the work: the message names the option, and nothing was reported.
        expect(r.returncode == 2 and option in r.stderr and r.stdout == "",
               f"{' '.join(args[:2])} {option} unwritable: exit {r.returncode}, stdout {r.stdout[:100]!r}, "
               f"stderr {r.stderr[:300]!r}")
    expect(not os.path.exists(os.path.dirname(missing)), "the check created the missing folder")


def sc21_trace_capped(orrery, source, tmp):
    target = os.path.join(tmp, "sc21.json")
    p = subprocess.Popen([orrery, "predict", os.path.join(source, BIG), "--trace", target],
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    err = p.stderr.read()
    _, status, usage = os.wait4(p.pid, 0)
    code = os.waitstatus_to_exitcode(status)
    expect(code == 0, f"sc21 --trace: exit {code}, {err[:300]!r}")
    expect("left out 3343163 of 4343163 events" in err and "--trace-max-events" in err,
           f"sc21 --trace: the warning does not say what was left out: {err[:300]!r}")
    with open(target) as f:
        events = json.load(f)["traceEvents"]
    # The cap counts every event but the track names and the note of what was left out: tasks (X), memory
    # counters (C) and the flow ends (s, f).
    counted = sum(1 for e in events if e.get("ph") in ("X", "C", "s", "f"))
    expect(counted == 1000000, f"sc21 --trace: {counted} events, the default cap is 1,000,000")
    expect(usage.ru_maxrss < 1 << 20, f"sc21 --trace: peak memory {usage.ru_maxrss} KiB, above 1 GiB")


def main():
    orrery, source, case = sys.argv[1], sys.argv[2], sys.argv[3]
    with tempfile.TemporaryDirectory() as tmp:
        globals()[case](orrery, source, tmp)
    if problems:
        print("\n".join(problems))
        sys.exit(1)
    print(f"{case}: ok")


if __name__ == "__main__":
    main()
