#!/usr/bin/env bash
# Everything a GPU session measures (device tool: `run` with `tools/gpu-session.sh [PART...]`). Results are written
# under /tmp/orrery-gpu-session and packed after each part into $OUT/PART.tar (split into 15 MiB pieces
# PART.tar.partNN where larger), because the device tool returns at most 8 files of 16 MiB: unpack with
# `cat PART.tar* | tar -x`.
# PARTs, in this order by default. A whole run may pass the device tool's 10-minute limit per command: with 15
# minutes of device time, run `tools/gpu-session.sh build train execute` and then, on the still-warm machine,
# `tools/gpu-session.sh calibrate` (`execute` and `calibrate` build first when the binaries are missing, as on a
# fresh machine; `build` starts the compile in the background while `train` uses the GPU).
#   build      cmake -S calibrate/cuda: orrery-calibrate and orrery-execute (needs only the CUDA toolkit)
#   train      the real-runs recipe on the three single-GPU scenarios (tools/pytorch_train_step.py):
#              $OUT/train-<model>.tar: <model>.json (iteration time, max_memory_allocated), <model>.trace.json.gz
#              (Kineto) and the log
#   execute    the reference executor on the committed workloads (scenarios/measured/workloads/, made here by
#              tools/make-gpu-inputs.sh): $OUT/execute.tar with <model>.executed.json and its Chrome trace
#   calibrate  orrery-calibrate over calibrate/plans/default.plan and tools/calibrate_attention.py:
#              $OUT/calibrate.tar with raw.json and attention.json, and tools/calibrate_pytorch_kernels.py: pytorch.json
#   attention, pytorch-kernels  one of those two scripts alone
#   power      orrery-power's phases (calibrate/cuda/power_main.cu) with nvidia-smi sampling power, clocks and
#              clock-limit reasons every 50 ms: $OUT/power.tar with power-phases.json and power-samples.csv
#              (summarise with tools/power_phases.py)
#   decode     LLM decode steps under CUDA graphs (tools/measure_decode.py): $OUT/decode.tar with decode.json
# Afterwards, on a machine with orrery built:
#   orrery calibrate fit raw.json --attention attention.json --pytorch pytorch.json --out hardware/profiles/h200.json
#   orrery compare --kineto OUT/llama-1b.trace.json.gz scenarios/measured/h200-llama-1b.json
#   orrery compare --measured OUT/llama-1b.executed.json scenarios/measured/h200-llama-1b.json
# and commit the outputs under scenarios/measured/ with the hardware they came from.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
out="${OUT:-/tmp/orrery-gpu-out}"
work=/tmp/orrery-gpu-session
build=/tmp/orrery-calibrate-build
mkdir -p "$out" "$work"
export PYTHONUNBUFFERED=1
parts=("$@")
[ ${#parts[@]} -eq 0 ] && parts=(build train execute calibrate)
log() { tee -a "$work/session.log"; }
# Runs a command with a time limit, keeping its whole output in $work/NAME.log and its last lines and status here.
step() {
  local limit=$1 name=$2
  shift 2
  timeout "$limit" "$@" > "$work/$name.log" 2>&1
  local status=$?
  tail -4 "$work/$name.log" | log
  echo "-- $name: exit $status$([ $status -eq 124 ] && echo ' (timed out)')" | log
  return $status
}
# Packs files of $work into $out/NAME.tar, written whole before it replaces an older one (a command stopped at the
# device tool's limit still returns what $out holds), split where it passes the tool's 16 MiB per file.
pack() {
  local name=$1
  shift
  local files=()
  for f in "$@"; do [ -e "$work/$f" ] && files+=("$f"); done
  [ ${#files[@]} -eq 0 ] && return
  tar -C "$work" -cf "$work/$name.tar.tmp" "${files[@]}" || return
  rm -f "$out/$name.tar" "$out/$name.tar.part"*
  if [ "$(stat -c %s "$work/$name.tar.tmp")" -gt $((15 * 1024 * 1024)) ]; then
    split -b 15M -d "$work/$name.tar.tmp" "$out/$name.tar.part" && rm "$work/$name.tar.tmp"
  else
    mv "$work/$name.tar.tmp" "$out/$name.tar"
  fi
}
build_pid=
start_build() {
  [ -x "$build/orrery-calibrate" ] && [ -x "$build/orrery-execute" ] && return
  [ -n "$build_pid" ] && return
  (step 240 build-tools bash -c "cmake -S calibrate/cuda -B $build -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_CUDA_ARCHITECTURES=90 && cmake --build $build") &
  build_pid=$!
}
ensure_built() {
  start_build
  [ -n "$build_pid" ] && wait "$build_pid"
  build_pid=
}
models=(llama-0.5b llama-1b llama-3b)
for part in "${parts[@]}"; do
  echo "== $part $(date -u +%FT%TZ)" | log
  case "$part" in
    build)
      nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,memory.total --format=csv,noheader 2>&1 | log
      python3 -c 'import torch, transformers; print("torch", torch.__version__, "cuda", torch.version.cuda,
        "transformers", transformers.__version__)' 2>&1 | log
      start_build ;;  # compiles on the CPUs while `train` uses the GPU
    train)
      for m in "${models[@]}"; do
        # SM clock, power and clock-limit reasons every 50 ms while the step runs (a slower backward than the
        # calibration's isolated calls is power or clock limiting if these say so).
        query=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_event_reasons.active
        nvidia-smi --query-gpu=$query --format=csv >/dev/null 2>&1 || query=${query/clocks_event/clocks_throttle}
        nvidia-smi --query-gpu=$query --format=csv -lms 50 > "$work/clocks-$m.csv" 2>&1 &
        local_smi=$!
        step 150 "train-$m" python3 tools/pytorch_train_step.py "scenarios/measured/h200-$m.json" --out "$work/$m"
        kill "$local_smi" 2>/dev/null
        pack "train-$m" "$m.json" "$m.trace.json.gz" "train-$m.log" "clocks-$m.csv"
      done ;;
    execute)
      ensure_built
      files=(build-tools.log)
      for m in "${models[@]}"; do
        step 60 "execute-$m" "$build/orrery-execute" --workload "scenarios/measured/workloads/h200-$m.workload" \
          --out "$work/$m.executed.json" --trace "$work/$m.executed.trace.json" --repeat 3
        files+=("$m.executed.json" "$m.executed.trace.json" "execute-$m.log")
      done
      pack execute "${files[@]}" ;;
    calibrate)
      ensure_built
      step 240 calibrate "$build/orrery-calibrate" --plan calibrate/plans/default.plan --out "$work/raw.json" \
        --warmup 3 --repetitions 15
      step 120 attention python3 tools/calibrate_attention.py --plan calibrate/plans/default.plan \
        --out "$work/attention.json" --warmup 3 --repetitions 10
      step 120 pytorch-kernels python3 tools/calibrate_pytorch_kernels.py --out "$work/pytorch.json"
      pack calibrate raw.json attention.json pytorch.json calibrate.log attention.log pytorch-kernels.log ;;
    attention)  # fused attention alone (part of calibrate), with the clocks it ran at
      query=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_event_reasons.active
      nvidia-smi --query-gpu=$query --format=csv >/dev/null 2>&1 || query=${query/clocks_event/clocks_throttle}
      nvidia-smi --query-gpu=$query --format=csv -lms 50 > "$work/clocks-attention.csv" 2>&1 &
      local_smi=$!
      step 120 attention python3 tools/calibrate_attention.py --plan calibrate/plans/default.plan \
        --out "$work/attention.json" --warmup 3 --repetitions 10
      kill "$local_smi" 2>/dev/null
      pack attention attention.json attention.log clocks-attention.csv ;;
    pytorch-kernels)  # PyTorch's eager kernel paths alone (part of calibrate)
      step 120 pytorch-kernels python3 tools/calibrate_pytorch_kernels.py --out "$work/pytorch.json"
      pack pytorch-kernels pytorch.json pytorch-kernels.log ;;
    power)  # board power per state: its own small target, built here when missing
      if [ ! -x "$build/orrery-power" ]; then
        step 240 build-power bash -c "cmake -S calibrate/cuda -B $build -G Ninja -DCMAKE_BUILD_TYPE=Release \
          -DCMAKE_CUDA_ARCHITECTURES=90 && cmake --build $build --target orrery-power"
      fi
      query=timestamp,power.draw,power.draw.instant,clocks.sm,clocks.mem,temperature.gpu,clocks_event_reasons.active
      nvidia-smi --query-gpu=$query --format=csv >/dev/null 2>&1 || query=timestamp,power.draw,clocks.sm,clocks.mem,temperature.gpu,clocks_throttle_reasons.active
      nvidia-smi --query-gpu=name,power.limit,power.max_limit,clocks.max.sm,driver_version --format=csv 2>&1 | log
      nvidia-smi --query-gpu=$query --format=csv -lms 50 > "$work/power-samples.csv" 2>&1 &
      local_smi=$!
      step 150 power "$build/orrery-power" --seconds 10 --out "$work/power-phases.json"
      kill "$local_smi" 2>/dev/null
      pack power power-phases.json power-samples.csv power.log build-power.log ;;
    decode)
      step 200 decode python3 tools/measure_decode.py --out "$work/decode.json"
      pack decode decode.json decode.log ;;
    *) echo "unknown part '$part' (build, train, execute, calibrate, attention, pytorch-kernels, power, decode)" | log; exit 2 ;;
  esac
  pack logs session.log build-tools.log
done
ls -la "$out" | log
pack logs session.log build-tools.log
