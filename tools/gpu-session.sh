#!/usr/bin/env bash
# Everything a GPU session measures, in one run (device tool: `run` with `tools/gpu-session.sh`, timeout ~560 s):
#   1. calibration (tools/gpu-calibrate.sh): orrery-calibrate over calibrate/plans/default.plan and the attention
#      script, into $OUT/raw.json and $OUT/attention.json;
#   2. the real-runs recipe on the three single-GPU scenarios (tools/pytorch_train_step.py): $OUT/<model>.json
#      (iteration time, max_memory_allocated) and $OUT/<model>.trace.json.gz (Kineto).
# Afterwards, here:  orrery calibrate fit OUT/raw.json --attention OUT/attention.json --out hardware/profiles/h200.json
#                    orrery compare --kineto OUT/llama-1b.trace.json.gz scenarios/measured/h200-llama-1b.json
# and commit the outputs under scenarios/measured/ with the hardware they came from.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
out="${OUT:-/tmp/orrery-gpu-session}"
mkdir -p "$out"
export PYTHONUNBUFFERED=1
for m in llama-0.5b llama-1b llama-3b; do
  timeout 150 python3 tools/pytorch_train_step.py "scenarios/measured/h200-$m.json" --out "$out/$m" \
    2>&1 | tail -5 | tee -a "$out/session.log"
done
timeout 330 tools/gpu-calibrate.sh "$out" >/dev/null 2>&1
tail -30 "$out/calibrate.log" | tee -a "$out/session.log"
ls -la "$out"
