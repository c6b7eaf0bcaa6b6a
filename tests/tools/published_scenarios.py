#!/usr/bin/env python3
"""Runs `orrery predict --json` on every published scenario (scenarios/validation).

Rows of the known sources (sc21-t1, sc21-t2 including ZeRO-3, kor22, mlm-readme-2020, nemo2407 with FP8 and CP, the
Megatron-Bridge MoE rows and Megatron-LM's MoE recipes) must predict with finite, positive numbers and a breakdown that
sums to the iteration time; a row of any other source must fail with exit status 2 and an error that starts with
"not modelled yet:" (a source added before its features are built). Usage: published_scenarios.py ORRERY SCENARIO_DIR
"""
import json, math, os, subprocess, sys

MODELLED = ("sc21-t1-", "sc21-t2-", "kor22-", "mlm-readme-2020-", "nemo2407-", "mbridge-",
            "mlm-moe-recipes-2607-")
POSITIVE = ["iteration_time_s", "tokens_per_s", "tokens_per_s_per_gpu", "model_tflops_per_gpu",
            "hardware_tflops_per_gpu", "mfu", "hfu", "peak_memory_bytes"]


def main():
    orrery, folder = sys.argv[1], sys.argv[2]
    problems, modelled, refused = [], 0, 0
    for name in sorted(os.listdir(folder)):
        if not name.endswith(".json"):
            continue
        r = subprocess.run([orrery, "predict", os.path.join(folder, name), "--json"], capture_output=True, text=True)
        if name.startswith(MODELLED):
            modelled += 1
            if r.returncode != 0:
                problems.append(f"{name}: exit {r.returncode}: {r.stderr.strip()[:200]}")
                continue
            report = json.loads(r.stdout)
            for key in POSITIVE:
                value = report.get(key)
                if not (isinstance(value, (int, float)) and math.isfinite(value) and value > 0):
                    problems.append(f"{name}: {key} = {value!r} is not a finite positive number")
            breakdown = report["breakdown_s"]
            total = sum(breakdown.values())
            if abs(total - report["iteration_time_s"]) > 1e-6 * report["iteration_time_s"]:
                problems.append(f"{name}: breakdown sums to {total}, iteration time is {report['iteration_time_s']}")
        else:
            refused += 1
            if r.returncode != 2 or not r.stderr.startswith("error: not modelled yet:"):
                problems.append(f"{name}: expected exit 2 and 'not modelled yet:', got exit {r.returncode}: "
                                f"{r.stderr.strip()[:200]}")
    for p in problems:
        print(p)
    print(f"published scenarios: {modelled} predicted, {refused} refused as not modelled yet, {len(problems)} problem(s)")
    return 1 if problems or modelled == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
