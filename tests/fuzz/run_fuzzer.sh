#!/usr/bin/env bash
# Runs the scenario fuzzer for a bounded time: run_fuzzer.sh FUZZER REPO_ROOT WORK_DIR SECONDS [libFuzzer flags].
# New inputs go to WORK_DIR/corpus (the committed corpus is read, never written); a finding is written to
# WORK_DIR/findings and fails the run. Turn a finding into a regression: tests/fuzz/README.md.
set -euo pipefail
fuzzer="$1"; root="$2"; work="$3"; seconds="$4"; shift 4
mkdir -p "$work/corpus" "$work/findings"
# One input over 10 s is a hang (the fuzzer bounds its simulation, scenario_fuzzer.cpp); 6 GB of RSS is a leak or
# an unbounded allocation.
"$fuzzer" "$work/corpus" "$root/tests/fuzz/corpus" "$root/tests/fuzz/regressions" "$root/scenarios/examples" \
  "$root/scenarios/validation" -dict="$root/tests/fuzz/scenario.dict" -max_total_time="$seconds" -timeout=10 \
  -rss_limit_mb=6144 -max_len=16384 -print_final_stats=1 -artifact_prefix="$work/findings/" "$@"
