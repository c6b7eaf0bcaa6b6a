#!/usr/bin/env bash
# Benchmark of `orrery search` (the search issue's figure): every valid plan of the default space for Llama-3-70B on
# 1024 H100s, sequence 8192, global batch 1024, on all cores. Prints the plan counts and plans per second.
#   tools/bench-search.sh [path/to/orrery]
set -euo pipefail
orrery="${1:-$(dirname "$0")/../build/tools/orrery}"
"$orrery" search --model llama3-70b --cluster dgx-h100 --num-gpus 1024 --seq-length 8192 \
  --global-batch-size 1024 --top 10 --quiet
