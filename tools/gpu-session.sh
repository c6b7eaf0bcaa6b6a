#!/usr/bin/env bash
# Everything a GPU session measures (device tool: `run` with `tools/gpu-session.sh [PART...]`; results in $OUT).
# PARTs, in this order by default. A whole run may pass the device tool's 10-minute limit per command: with 15
# minutes of device time, run `tools/gpu-session.sh build train` (about 3 minutes) and then
# `tools/gpu-session.sh execute calibrate` (about 6; `execute` and `calibrate` build first when the binaries are
# missing, as on a fresh machine).
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
# Runs a command with a time limit, keeping its whole output in $out/PART.log and its last lines and status here.
step() {
  local limit=$1 name=$2
  shift 2
  timeout "$limit" "$@" > "$out/$name.log" 2>&1
  local status=$?
  tail -4 "$out/$name.log" | log
  echo "-- $name: exit $status$([ $status -eq 124 ] && echo ' (timed out)')" | log
}
ensure_built() {
  [ -x "$build/orrery-calibrate" ] && [ -x "$build/orrery-execute" ] && return
  step 240 build-tools bash -c "cmake -S calibrate/cuda -B $build -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_CUDA_ARCHITECTURES=90 && cmake --build $build"
}
for part in "${parts[@]}"; do
  echo "== $part $(date -u +%FT%TZ)" | log
  case "$part" in
    build)
      nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,memory.total --format=csv,noheader 2>&1 | log
      ensure_built ;;
    train)
      for m in llama-0.5b llama-1b llama-3b; do
        step 150 "train-$m" python3 tools/pytorch_train_step.py "scenarios/measured/h200-$m.json" --out "$out/$m"
      done ;;
    execute)
      ensure_built
      for m in llama-0.5b llama-1b llama-3b; do
        step 60 "execute-$m" "$build/orrery-execute" --workload "scenarios/measured/workloads/h200-$m.workload" \
          --out "$out/$m.executed.json" --repeat 3
      done ;;
    calibrate)
      ensure_built
      step 240 calibrate "$build/orrery-calibrate" --plan calibrate/plans/default.plan --out "$out/raw.json" \
        --warmup 3 --repetitions 15
      step 120 attention python3 tools/calibrate_attention.py --plan calibrate/plans/default.plan \
        --out "$out/attention.json" --warmup 3 --repetitions 10 ;;
    *) echo "unknown part '$part' (build, train, execute, calibrate)" | log; exit 2 ;;
  esac
done
ls -la "$out" | log
