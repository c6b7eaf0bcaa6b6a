#!/usr/bin/env python3
"""Writes the key reference tables of scenarios/README.md from the option table (sim/option_table.cpp).

Each `<!-- options:SECTION -->` ... `<!-- /options -->` block is replaced by `orrery list options --markdown SECTION`.
With --check nothing is written: the script lists the blocks that differ and exits 1 (the ctest `key_reference`).

Usage: tools/update_key_reference.py BUILD/tools/orrery [README] [--check]
"""
import re
import subprocess
import sys
from pathlib import Path

BLOCK = re.compile(r"(<!-- options:(\w+) -->\n)(.*?)(<!-- /options -->)", re.S)


def main(argv):
    check = "--check" in argv
    args = [a for a in argv if a != "--check"]
    if not args:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    orrery = args[0]
    readme = Path(args[1]) if len(args) > 1 else Path(__file__).resolve().parent.parent / "scenarios" / "README.md"
    text = readme.read_text(encoding="utf-8")
    stale = []
    sections = []

    def replace(match):
        section = match.group(2)
        sections.append(section)
        table = subprocess.run([orrery, "list", "options", "--markdown", section], check=True,
                               capture_output=True, text=True).stdout
        if match.group(3) != table:
            stale.append(section)
        return match.group(1) + table + match.group(4)

    updated = BLOCK.sub(replace, text)
    missing = {"parallel", "training", "model"} - set(sections)
    if missing:
        print(f"{readme}: no key reference block for {', '.join(sorted(missing))}", file=sys.stderr)
        return 1
    if check:
        for section in stale:
            print(f"{readme}: the `{section}` key reference differs from the option table "
                  f"(run tools/update_key_reference.py {orrery})", file=sys.stderr)
        return 1 if stale else 0
    readme.write_text(updated, encoding="utf-8")
    print(f"{readme}: {len(stale)} block(s) rewritten")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
