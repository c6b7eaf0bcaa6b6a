#!/usr/bin/env python3
"""Compares `orrery predict --json` on each example scenario with its golden report (tests/golden/NAME.json).
A change of the cost models or lowering changes these on purpose: review the difference, then refresh with
    tests/tools/golden_test.py build/tools/orrery . --update
Usage: golden_test.py ORRERY SOURCE_DIR [--update]"""
import json, os, subprocess, sys


def main():
    orrery, source = sys.argv[1], sys.argv[2]
    update = "--update" in sys.argv
    examples = os.path.join(source, "scenarios", "examples")
    golden = os.path.join(source, "tests", "golden")
    problems = []
    for name in sorted(os.listdir(examples)):
        if not name.endswith(".json"):
            continue
        r = subprocess.run([orrery, "predict", os.path.join(examples, name), "--json"], capture_output=True, text=True)
        if r.returncode != 0:
            problems.append(f"{name}: exit {r.returncode}: {r.stderr[:200]}")
            continue
        target = os.path.join(golden, name)
        if update:
            open(target, "w").write(r.stdout)
            continue
        if not os.path.exists(target):
            problems.append(f"{name}: no golden report {target}")
            continue
        want, got = json.load(open(target)), json.loads(r.stdout)
        for key in sorted(set(want) | set(got)):
            if want.get(key) != got.get(key):
                problems.append(f"{name}: {key}: golden {json.dumps(want.get(key))[:120]} now {json.dumps(got.get(key))[:120]}")
    for p in problems:
        print(p)
    print(f"golden reports: {len(problems)} difference(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
