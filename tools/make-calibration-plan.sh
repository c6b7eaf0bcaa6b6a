#!/usr/bin/env bash
# Regenerates calibrate/plans/default.plan, the work list of a GPU calibration: the shapes sim/ lowers for the
# single-GPU measured scenarios and the H100/H200 examples, plus the log-spaced grids. A test checks that the
# committed plan is what this command writes.
#   tools/make-calibration-plan.sh [build/tools/orrery]
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
orrery="${1:-build/tools/orrery}"
"$orrery" calibrate plan --out calibrate/plans/default.plan \
  scenarios/measured/h200-llama-0.5b.json scenarios/measured/h200-llama-1b.json scenarios/measured/h200-llama-3b.json \
  scenarios/examples/llama3-70b-64xh100.json scenarios/validation/nemo2407-h100-fp8-llama3-8b-8gpu.json
