#!/usr/bin/env python3
"""Prints predicted vs published iteration time for the scenarios whose names start with PREFIX and fails when
any misses by more than MAX_PCT percent. Usage: accuracy_bar.py ORRERY SCENARIO_DIR PREFIX MAX_PCT"""
import json, os, subprocess, sys


def main():
    orrery, folder, prefix, limit = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4])
    rows, worst = [], 0.0
    for name in sorted(os.listdir(folder)):
        if not (name.startswith(prefix) and name.endswith(".json")):
            continue
        path = os.path.join(folder, name)
        expect = json.load(open(path))["expect"]["iteration_time_s"]
        r = subprocess.run([orrery, "predict", path, "--json"], capture_output=True, text=True, check=True)
        predicted = json.loads(r.stdout)["iteration_time_s"]
        error = 100.0 * (predicted - expect) / expect
        worst = max(worst, abs(error))
        rows.append((name[:-5], predicted, expect, error))
    print(f"{'scenario':<32} {'predicted s':>12} {'published s':>12} {'error':>8}")
    for name, predicted, expect, error in rows:
        flag = "" if abs(error) <= limit else "  <-- over the bar"
        print(f"{name:<32} {predicted:12.3f} {expect:12.3f} {error:+7.1f}%{flag}")
    mape = sum(abs(r[3]) for r in rows) / len(rows)
    print(f"{len(rows)} scenarios, mean absolute error {mape:.1f}%, worst {worst:.1f}% (bar {limit:.0f}%)")
    return 0 if rows and worst <= limit else 1


if __name__ == "__main__":
    sys.exit(main())
