#!/usr/bin/env python3
"""Replays every fuzzer finding through the CLI: check_regressions.py ORRERY REGRESSIONS_DIR.

For each entry of REGRESSIONS_DIR/expected.json ({"file": {"exit": N, "message": "text"}}) runs
`orrery predict FILE` and checks its exit status and that stderr (or stdout for exit 0) contains the message.
Every file in the folder must have an entry, so a finding cannot be committed without its expected answer."""
import json
import pathlib
import subprocess
import sys


def main():
    orrery, folder = sys.argv[1], pathlib.Path(sys.argv[2])
    expected = json.loads((folder / "expected.json").read_text())
    files = sorted(p.name for p in folder.iterdir() if p.name not in ("expected.json", "README.md"))
    failures = [f"{name}: no entry in expected.json" for name in files if name not in expected]
    failures += [f"{name}: listed in expected.json but not in the folder" for name in expected if name not in files]
    for name, want in sorted(expected.items()):
        if name not in files:
            continue
        run = subprocess.run([orrery, "predict", str(folder / name)], capture_output=True, text=True, timeout=60)
        said = run.stderr if want["exit"] != 0 else run.stdout
        if run.returncode != want["exit"]:
            failures.append(f"{name}: exit {run.returncode}, expected {want['exit']}; stderr: {run.stderr.strip()[:300]}")
        elif want["message"] not in said:
            failures.append(f"{name}: message {want['message']!r} not in: {said.strip()[:300]}")
        if "Traceback" in run.stderr or "terminate called" in run.stderr:
            failures.append(f"{name}: crashed: {run.stderr.strip()[:300]}")
    for f in failures:
        print("FAIL", f)
    print(f"{len(expected)} fuzzer findings replayed, {len(failures)} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
