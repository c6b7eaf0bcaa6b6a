#!/usr/bin/env bash
# The GPU part of calibration, in one run on a machine with the CUDA toolkit and a GPU (for the device tool:
# `run` with this command; results land in $OUT, or in the folder given):
#   1. builds orrery-calibrate on its own (calibrate/cuda needs only the CUDA toolkit);
#   2. measures GEMMs, memory kernels, launch overhead and local NCCL collectives over calibrate/plans/default.plan;
#   3. measures fused attention with PyTorch over the plan's attention lines (tools/calibrate_attention.py).
# Then, on any machine with orrery built:
#   build/tools/orrery calibrate fit OUT/raw.json --attention OUT/attention.json --out hardware/profiles/h200.json
#   tools/gpu-calibrate.sh [OUT_DIR]
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
out="${1:-${OUT:-/tmp/orrery-calibration}}"
mkdir -p "$out"
log="$out/calibrate.log"
{
  echo "== $(date -u +%FT%TZ) $(nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader 2>&1)"
  cmake -S calibrate/cuda -B /tmp/orrery-calibrate-build -G Ninja -DCMAKE_BUILD_TYPE=Release \
        -DCMAKE_CUDA_ARCHITECTURES="${CUDA_ARCHS:-90}" && cmake --build /tmp/orrery-calibrate-build || exit 1
  time /tmp/orrery-calibrate-build/orrery-calibrate --plan calibrate/plans/default.plan --out "$out/raw.json" \
    --warmup 5 --repetitions 30
  echo "orrery-calibrate exit $?"
  time PYTHONUNBUFFERED=1 python3 tools/calibrate_attention.py --plan calibrate/plans/default.plan \
    --out "$out/attention.json" --warmup 5 --repetitions 20
  echo "calibrate_attention exit $?"
} 2>&1 | tee "$log"
