#!/usr/bin/env bash
# Benchmark: wall time of `orrery predict` refusing a 300,000-element array of {} and one of small objects (the
# parse is nearly all of it; the refusal, "scenario ... must be a JSON object", comes after). The duplicate-key
# check once made this quadratic (15 s of CPU for the empty objects); the SAX builder of models/json_text.cpp is
# linear. Times are printed, never asserted (tests/models/input_hardening_test.cpp checks the parse's result).
#   tools/bench-json-parse.sh [build/tools/orrery] [elements]
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
orrery="${1:-$here/build/tools/orrery}"
n="${2:-300000}"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
python3 -c "import sys; n=$n; print('[' + ','.join(['{}'] * n) + ']')" > "$tmp/empty.json"
python3 -c "import sys; n=$n; print('[' + ','.join('{\"i\": %d, \"s\": \"x\"}' % i for i in range(n)) + ']')" > "$tmp/small.json"
for f in empty small; do
  start=$(date +%s.%N)
  "$orrery" predict "$tmp/$f.json" > /dev/null 2>&1 || true
  end=$(date +%s.%N)
  echo "$n elements of $f objects: $(python3 -c "print(f'{$end - $start:.3f}')") s"
done
