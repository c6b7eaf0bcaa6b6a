#!/usr/bin/env bash
# Benchmark: wall time of one `orrery predict` process for Llama-3.1-405B on 16,384 H100s (TP 8, PP 16 with 7
# layers on the first and last stage, DP 128, micro-batch 1, global batch 2048, sequence 8192, BF16, sequence
# parallelism, distributed optimizer, no recompute), the best of N runs, and the same with --expand-ranks.
#   tools/bench-predict.sh [build/tools/orrery] [runs]
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
orrery="${1:-$here/build/tools/orrery}"
runs="${2:-5}"
scenario="$here/scenarios/examples/llama3.1-405b-16k-h100.json"

best_of() {
  local best=""
  for _ in $(seq "$runs"); do
    local start end
    start=$(date +%s.%N)
    "$orrery" predict "$scenario" "$@" --json > /dev/null
    end=$(date +%s.%N)
    best=$(python3 -c "import sys; t=$end-$start; b='$best'; print(t if not b else min(t, float(b)))")
  done
  echo "$best"
}

echo "scenario: $scenario"
echo "representative ranks (one per stage): $(best_of) s per orrery predict process (best of $runs)"
runs=1
echo "--expand-ranks (all 16384 ranks):     $(best_of --expand-ranks) s (one run)"
