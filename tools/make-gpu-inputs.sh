#!/usr/bin/env bash
# Regenerates what a GPU session reads and cannot make itself (the GPU machine has the CUDA toolkit but not the
# Debian libraries orrery builds with): calibrate/plans/default.plan, the work list of the calibration (the shapes
# sim/ lowers for the single-GPU measured scenarios and the H100 examples, plus log-spaced grids), and
# scenarios/measured/workloads/*.workload, the reference executor's input. Tests check both are current.
#   tools/make-gpu-inputs.sh [build/tools/orrery]
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
orrery="${1:-build/tools/orrery}"
"$orrery" calibrate plan --out calibrate/plans/default.plan \
  scenarios/measured/h200-llama-0.5b.json scenarios/measured/h200-llama-1b.json scenarios/measured/h200-llama-3b.json \
  scenarios/examples/llama3-70b-64xh100.json scenarios/validation/nemo2407-h100-fp8-llama3-8b-8gpu.json
mkdir -p scenarios/measured/workloads
for m in llama-0.5b llama-1b llama-3b; do
  "$orrery" calibrate export-workload "scenarios/measured/h200-$m.json" --out "scenarios/measured/workloads/h200-$m.workload"
done
