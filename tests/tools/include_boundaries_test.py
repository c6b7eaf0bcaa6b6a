#!/usr/bin/env python3
"""The folders' one-way dependencies (ARCHITECTURE.md), checked on every project #include:
  models/ <- hardware/ <- sim/engine/ <- sim/ <- calibrate/ <- tools/
A file may include its own folder's headers and those of the folders to its left; sim/engine/ is the one sub-folder
with a boundary of its own: it may not include the rest of sim/ (the scenario, the lowering, the report).
Usage: include_boundaries_test.py SOURCE_DIR"""
import os
import re
import sys

# Folder -> the folders its files may include (longest prefix wins).
ALLOWED = {
    "models/": ["models/"],
    "hardware/": ["models/", "hardware/"],
    "sim/engine/": ["models/", "hardware/", "sim/engine/"],
    "sim/": ["models/", "hardware/", "sim/"],
    "calibrate/": ["models/", "hardware/", "sim/", "calibrate/"],
}
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')


def folder_of(path):
    matches = [f for f in ALLOWED if path.startswith(f)]
    return max(matches, key=len) if matches else None


def main():
    root = sys.argv[1]
    problems, checked = [], 0
    for top in ALLOWED:
        for dirpath, _, files in os.walk(os.path.join(root, top)):
            for name in files:
                if not name.endswith((".h", ".cpp", ".cu")):
                    continue
                path = os.path.relpath(os.path.join(dirpath, name), root)
                if folder_of(path) != top:
                    continue  # a deeper folder with its own rule (sim/engine/ under sim/)
                with open(os.path.join(root, path), encoding="utf-8") as f:
                    for number, line in enumerate(f, 1):
                        m = INCLUDE.match(line)
                        if not m or "/" not in m.group(1):
                            continue  # system and generated headers, and same-folder includes by bare name
                        checked += 1
                        target = m.group(1)
                        if not any(target.startswith(a) for a in ALLOWED[top]):
                            problems.append(f"{path}:{number}: includes {target}; {top} may include only "
                                            f"{', '.join(ALLOWED[top])}")
    for p in problems:
        print("FAIL:", p)
    print(f"include boundaries: {checked} includes checked, {len(problems)} across a boundary")
    return 1 if problems or checked == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
