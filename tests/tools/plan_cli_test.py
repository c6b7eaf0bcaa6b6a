#!/usr/bin/env python3
"""`orrery plan` from the command line (issue 23): the contract's keys, determinism, the CSV, the sweep's skipped
points, progress with the time left, and bad input refused with exit 2 and a message naming the flag or field.

Usage: plan_cli_test.py ORRERY SOURCE_DIR"""
import csv
import io
import json
import os
import subprocess
import sys
import tempfile

problems = []


def check(ok, what):
    if not ok:
        problems.append(what)


def run(orrery, *args):
    return subprocess.run([orrery, *args], capture_output=True, text=True, timeout=600)


def main():
    orrery, source = sys.argv[1], sys.argv[2]
    scenario = os.path.join(source, "scenarios", "examples", "llama3-70b-64xh100.json")
    plan = ["plan", scenario, "--tokens", "1e12", "--monte-carlo-runs", "300", "--quiet", "--price-on-demand", "4"]

    # The contract's keys (the names DESIGN gives `orrery plan --json`), and ETTR and the GPU-hours by hand.
    r = run(orrery, *plan, "--json")
    check(r.returncode == 0, f"plan --json exits {r.returncode}: {r.stderr[:300]}")
    doc = json.loads(r.stdout) if r.returncode == 0 else {}
    for key in ("time_to_train_s", "effective_time_to_train_s", "gpu_hours", "energy_J", "ettr", "goodput", "energy",
                "cost", "sweep", "breakdown_s", "memory"):
        check(key in doc, f"plan --json has no {key}")
    if doc:
        check(abs(doc["ettr"] - doc["time_to_train_s"] / doc["effective_time_to_train_s"]) < 1e-9,
              "ettr is not time_to_train_s / effective_time_to_train_s")
        check(abs(doc["gpu_hours"] - 64 * doc["time_to_train_s"] / 3600) < 1e-6 * doc["gpu_hours"],
              "gpu_hours is not GPUs x time to train / 3600")
        check(abs(doc["cost"]["on_demand_usd"] - 4 * doc["gpu_hours"]) < 1e-6 * doc["gpu_hours"],
              "on-demand cost is not price x GPU-hours")
        check(doc["cost"]["spot_usd"] is None, "a spot cost without a spot price")
        e = doc["energy"]
        check(abs(e["facility_J"] - e["pue"] * (e["gpu_J"] + e["host_J"] + e["network_J"])) < 1e-6 * e["facility_J"],
              "facility energy is not the PUE times the IT energy")
        check(doc["energy_J"] == e["facility_J"], "energy_J is not the facility energy")
        check(0 < doc["mfu"] < 1, "MFU outside (0, 1)")

    # The same seed gives byte-identical output; another seed changes only the Monte-Carlo figures.
    again = run(orrery, *plan, "--json")
    check(again.stdout == r.stdout, "two runs with the same seed differ")
    other = run(orrery, *plan, "--json", "--monte-carlo-seed", "7")
    if other.returncode == 0 and doc:
        o = json.loads(other.stdout)
        check(o["goodput"]["monte_carlo"] != doc["goodput"]["monte_carlo"], "another seed gives the same Monte-Carlo run")
        check(o["effective_time_to_train_s"] == doc["effective_time_to_train_s"], "the seed changed the expectation")

    # A sweep: one CSV row per point; a size the plan cannot use is skipped with its reason; progress says the time left.
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "sweep.csv")
        r = run(orrery, "plan", scenario, "--tokens", "1e12", "--num-gpus", "64,96,128", "--csv", path,
                "--monte-carlo-runs", "0", "--json")
        check(r.returncode == 0, f"sweep exits {r.returncode}: {r.stderr[:300]}")
        if r.returncode == 0:
            doc = json.loads(r.stdout)
            rows = list(csv.DictReader(io.StringIO(open(path).read())))
            check([int(x["num_gpus"]) for x in rows] == [64, 128], f"CSV rows {[x['num_gpus'] for x in rows]}")
            check([k["num_gpus"] for k in doc["skipped"]] == [96], "96 GPUs (not a multiple of TP 8 x PP 4) not skipped")
            check("divisible" in doc["skipped"][0]["reason"] or "divide" in doc["skipped"][0]["reason"],
                  f"skipped reason: {doc['skipped'][0]['reason']}")
            check("about" in r.stderr and "s left" in r.stderr, "no progress line with the time left")
            check(abs(float(rows[0]["strong_scaling_efficiency"]) - 1) < 1e-9, "first point's strong scaling is not 1")

    # --clusters without --num-gpus keeps the scenario's GPU count; a size whose plan does not fit the GPU's memory
    # is skipped in a sweep, with its peak (Llama-3-70B on TP 8 alone holds about 150 GiB of model state per GPU).
    r = run(orrery, "plan", scenario, "--tokens", "1e12", "--clusters", "dgx-h100,dgx-h200", "--quiet", "--json",
            "--monte-carlo-runs", "0")
    if r.returncode == 0:
        doc = json.loads(r.stdout)
        check([p["num_gpus"] for p in doc["sweep"]] == [64, 64], f"--clusters sizes {[p['num_gpus'] for p in doc['sweep']]}")
    else:
        check(False, f"--clusters alone exits {r.returncode}: {r.stderr[:200]}")
    r = run(orrery, "plan", scenario, "--tokens", "1e12", "--num-gpus", "8,256", "--quiet", "--json", "--pp", "1", "--recompute", "full",
            "--vpp", "1", "--monte-carlo-runs", "0")
    if r.returncode == 0:
        doc = json.loads(r.stdout)
        check([k["num_gpus"] for k in doc["skipped"]] == [8] and "does not fit" in doc["skipped"][0]["reason"],
              f"a plan over memory not skipped: {doc['skipped']}")
        check(all(p["fits"] for p in doc["sweep"]), "a point that does not fit is in the sweep")
    else:
        check(False, f"sweep 8,256 exits {r.returncode}: {r.stderr[:200]}")
    with tempfile.TemporaryDirectory() as tmp:
        cluster_file = os.path.join(tmp, "c.json")
        json.dump({"preset": "dgx-h100"}, open(cluster_file, "w"))
        r = run(orrery, "plan", scenario, "--tokens", "1e12", "--clusters", cluster_file, "--report", cluster_file)
        check(r.returncode == 2 and "--clusters" in r.stderr, f"--report over a --clusters file: exit {r.returncode}")
        check(json.load(open(cluster_file)) == {"preset": "dgx-h100"}, "the --clusters file was overwritten")

    # Bad input: exit 2 and the flag or field in the message.
    bad = [
        (["plan", scenario], "--tokens"),
        (["plan", scenario, "--tokens", "1e12", "--steps", "10"], "exactly one of --tokens"),
        (["plan", scenario, "--tokens", "1e12", "--num-gpus", "64,abc"], "--num-gpus"),
        (["plan", scenario, "--tokens", "1e12", "--num-gpus", "0"], "--num-gpus"),
        (["plan", scenario, "--tokens", "1e12", "--clusters", "dgx-h900"], "dgx-h900"),
        (["plan", scenario, "--tokens", "1e12", "--pue", "0.5"], "energy.pue (0.5)"),
        (["plan", scenario, "--tokens", "1e12", "--report", "/nonexistent-dir/r.html"], "--report"),
        (["plan", "--tokens", "1e12"], "scenario"),
        (["plan", scenario, "--tokens", "1e20"], "--tokens (1e+20) must be at most"),
        (["plan", scenario, "--steps", "1.5"], "whole number of steps"),
        (["plan", scenario, "--tokens", "abc"], "'abc' must be a finite number above 0"),
        (["plan", scenario, "--tokens", "1e12", "--monte-carlo-seed", "-1"], "--monte-carlo-seed"),
        (["plan", scenario, "--tokens", "1e12", "--num-gpus", "64,64"], "given twice"),
        (["plan", scenario, "--tokens", "1e12", "--clusters", "dgx-h100, dgx-b200"], "without spaces"),
        (["plan", scenario, "--tokens", "1e12", "--clusters", "dgx-h100,"], "an empty item"),
        (["plan", scenario, "--tokens", "1e12", "--clusters", "dgx-h100,nope"], "--clusters: cluster.preset (nope)"),
        (["plan", scenario, "--tokens", "1e15", "--monte-carlo-runs", "1000000"], "--monte-carlo-runs"),
    ]
    for args, needle in bad:
        r = run(orrery, *args)
        check(r.returncode == 2 and needle in r.stderr, f"{' '.join(args[2:])}: exit {r.returncode}, {r.stderr[:200]!r}")
    with tempfile.TemporaryDirectory() as tmp:
        for section, needle in [({"failures": "no-such-preset"}, "failures"),
                                ({"checkpoint": {"mode": "sometimes"}}, "checkpoint.mode"),
                                ({"cost": {"price_per_gpu_hour_usd": {"on_demand": 0}}}, "on_demand"),
                                ({"energy": {"pue": "high"}}, "energy.pue"),
                                ({"checkpoint": {"interval_s": 1e-9}}, "at least one training step"),
                                ({"checkpoint": {"interval_s": 1e300}}, "too long for the job's failures"),
                                ({"cost": {"price_per_gpu_hour_usd": {"by_gpu": {"h100": {"spot": 2}}}}},
                                 "cost.price_per_gpu_hour_usd.by_gpu.h100"),
                                ({"cost": {"price_per_gpu_hour_usd": {"spot": 1, "by_gpu": {"b200": {"spot": 2}}}}},
                                 "either for every GPU or by GPU")]:
            doc = json.load(open(scenario))
            doc.update(section)
            path = os.path.join(tmp, "s.json")
            json.dump(doc, open(path, "w"))
            r = run(orrery, "plan", path, "--tokens", "1e12")
            check(r.returncode == 2 and needle in r.stderr, f"{section}: exit {r.returncode}, {r.stderr[:200]!r}")

    for p in problems:
        print("FAIL:", p)
    print(f"plan CLI: {len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
