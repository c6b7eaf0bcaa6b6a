#!/usr/bin/env bash
# Everything a GPU session measures (device tool: `run` with `tools/gpu-session.sh [PART...]`; results in $OUT).
# PARTs, in this order by default (a whole run takes about 6-8 minutes on an H200; split it across two runs if the
# device time is short):
#   build      cmake -S calibrate/cuda: orrery-calibrate and orrery-execute (needs only the CUDA toolkit)
#   train      the real-runs recipe on the three single-GPU scenarios (tools/pytorch_train_step.py):
#              $OUT/<model>.json (iteration time, max_memory_allocated) and $OUT/<model>.trace.json.gz (Kineto)
#   execute    the reference executor on the committed workloads (scenarios/measured/workloads/, made here by
#              tools/make-gpu-inputs.sh): $OUT/<model>.executed.json
#   calibrate  orrery-calibrate over calibrate/plans/default.plan and tools/calibrate_attention.py:
#              $OUT/raw.json, $OUT/attention.json
# Afterwards, on a machine with orrery built:
#   orrery calibrate fit OUT/raw.json --attention OUT/attention.json --out hardware/profiles/h200.json
#   orrery compare --kineto OUT/llama-1b.trace.json.gz scenarios/measured/h200-llama-1b.json
#   orrery compare --measured OUT/llama-1b.executed.json scenarios/measured/h200-llama-1b.json
# and commit the outputs under scenarios/measured/ with the hardware they came from.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
out="${OUT:-/tmp/orrery-gpu-session}"
build=/tmp/orrery-calibrate-build
mkdir -p "$out"
export PYTHONUNBUFFERED=1
parts=("$@")
[ ${#parts[@]} -eq 0 ] && parts=(build train execute calibrate)
log() { tee -a "$out/session.log"; }
for part in "${parts[@]}"; do
  echo "== $part $(date -u +%FT%TZ)" | log
  case "$part" in
    build)
      nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,memory.total --format=csv,noheader 2>&1 | log
      { cmake -S calibrate/cuda -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 &&
        cmake --build "$build"; } 2>&1 | tail -3 | log ;;
    train)
      for m in llama-0.5b llama-1b llama-3b; do
        timeout 120 python3 tools/pytorch_train_step.py "scenarios/measured/h200-$m.json" --out "$out/$m" 2>&1 | tail -4 | log
      done ;;
    execute)
      for m in llama-0.5b llama-1b llama-3b; do
        timeout 60 "$build/orrery-execute" --workload "scenarios/measured/workloads/h200-$m.workload" \
          --out "$out/$m.executed.json" --repeat 3 2>&1 | tail -3 | log
      done ;;
    calibrate)
      timeout 240 "$build/orrery-calibrate" --plan calibrate/plans/default.plan --out "$out/raw.json" \
        --warmup 3 --repetitions 15 > "$out/calibrate.log" 2>&1; echo "orrery-calibrate exit $?" | log
      tail -5 "$out/calibrate.log" | log
      timeout 120 python3 tools/calibrate_attention.py --plan calibrate/plans/default.plan --out "$out/attention.json" \
        --warmup 3 --repetitions 10 2>&1 | tail -3 | log ;;
    *) echo "unknown part '$part' (build, train, execute, calibrate)" | log; exit 2 ;;
  esac
done
ls -la "$out" | log
