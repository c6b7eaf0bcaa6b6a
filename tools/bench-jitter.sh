#!/usr/bin/env bash
# Benchmark: wall time of one `orrery predict` process with a jitter Monte-Carlo of N iterations on the 16,384-H100
# Llama-3.1-405B scenario that tools/bench-predict.sh times (every iteration is one engine run with all 16,384
# ranks expanded). Prints the time and the jitter summary lines. No assertion: a figure for the README.
#   tools/bench-jitter.sh [build/tools/orrery] [iterations]
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
orrery="${1:-$here/build/tools/orrery}"
iterations="${2:-2}"
scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT
python3 - "$here/scenarios/examples/llama3.1-405b-16k-h100.json" "$scratch/jitter.json" "$iterations" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
doc["jitter"] = {"seed": 1, "iterations": int(sys.argv[3]), "compute": {"sigma": 0.02},
                 "thermal": {"fraction": 0.01, "clock_factor": 0.9}, "network": {"fraction": 0.01, "slowdown": 2}}
json.dump(doc, open(sys.argv[2], "w"))
PY
start=$(date +%s.%N)
"$orrery" predict "$scratch/jitter.json" > "$scratch/out.txt"
end=$(date +%s.%N)
echo "scenario: scenarios/examples/llama3.1-405b-16k-h100.json with a jitter section of $iterations iterations"
echo "wall time: $(python3 -c "print(f'{$end-$start:.1f}')") s for one orrery predict process"
sed -n '/jitter:/,$p' "$scratch/out.txt"
