#!/usr/bin/env python3
"""Board power of each phase of orrery-power (calibrate/cuda/power_main.cu), from nvidia-smi's samples taken beside
it (tools/gpu-session.sh power): for each phase, the mean and spread of the instantaneous power, the 1-second
averaged power and the SM clock over the samples inside the phase, leaving out its first `--settle` seconds (the
clock and the 1-s average need that long to reach the new state) and its last 0.2 s.

    python3 tools/power_phases.py power-phases.json power-samples.csv [--settle 3] [--json OUT]

Prints one line per phase; --json writes {"gpu", "power_limit_W", "phases": [{"name", "samples", "power_W",
"power_instant_W", "power_instant_p10_W", "power_instant_p90_W", "sm_clock_MHz", "tflops", "copy_GB_s"}]}.
"""
import argparse
import csv
import datetime
import json
import statistics


def parse_time(text):
    return datetime.datetime.strptime(text.strip(), "%Y/%m/%d %H:%M:%S.%f")


def number(text):
    try:
        return float(text.strip().split()[0])
    except (ValueError, IndexError):
        return None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("phases")
    ap.add_argument("samples")
    ap.add_argument("--settle", type=float, default=3.0)
    ap.add_argument("--json")
    args = ap.parse_args()
    doc = json.load(open(args.phases))
    rows = list(csv.reader(open(args.samples)))
    header = [h.strip() for h in rows[0]]
    col = {name.split(" [")[0]: i for i, name in enumerate(header)}
    samples = []
    for r in rows[1:]:
        if len(r) != len(header):
            continue
        samples.append({"t": parse_time(r[col["timestamp"]]), "avg": number(r[col["power.draw"]]),
                        "inst": number(r[col["power.draw.instant"]]) if "power.draw.instant" in col else None,
                        "clock": number(r[col["clocks.current.sm"]])})
    out = []
    for p in doc["phases"]:
        start = parse_time(p["start"]) + datetime.timedelta(seconds=args.settle)
        end = parse_time(p["end"]) - datetime.timedelta(seconds=0.2)
        inside = [s for s in samples if start <= s["t"] <= end]
        if not inside:
            continue
        inst = sorted(s["inst"] for s in inside if s["inst"] is not None) or [None]
        q = statistics.quantiles(inst, n=10) if len(inst) > 2 and inst[0] is not None else [inst[0]] * 9
        row = {"name": p["name"], "samples": len(inside),
               "power_W": round(statistics.mean(s["avg"] for s in inside), 1),
               "power_instant_W": round(statistics.mean(inst), 1) if inst[0] is not None else None,
               "power_instant_p10_W": q[0], "power_instant_p90_W": q[-1],
               "sm_clock_MHz": round(statistics.mean(s["clock"] for s in inside)),
               "tflops": p["tflops"], "copy_GB_s": p["copy_GB_s"]}
        out.append(row)
        print(f'{row["name"]:24s} {row["samples"]:4d} samples  {row["power_W"]:6.1f} W (instant '
              f'{row["power_instant_W"]} W, p10-p90 {q[0]}-{q[-1]})  SM {row["sm_clock_MHz"]} MHz  '
              f'{p["tflops"]} TFLOP/s  {p["copy_GB_s"]} GB/s')
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"gpu": doc["gpu"], "settle_s": args.settle, "phases": out}, f, indent=1)
            f.write("\n")


if __name__ == "__main__":
    main()
