#!/usr/bin/env bash
# Load and soak benchmark of `orrery search` (issue 26): tools/soak/search_soak.cpp runs the default search space of
# Llama-3-70B on 64 H100s (scenarios/examples/llama3-70b-64xh100.json, 11,988 candidates, pruning on) once on 1
# thread, then round after round on 2 threads for 10 minutes in one process, and fails (exit 1) if any round's
# ranking differs from the single-thread one or the median resident memory of the later rounds passes the first two
# rounds' by 10%.
#   tools/bench-soak.sh [build dir=build] [seconds=600] [scenario]
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${1:-$here/build}"
"$build/tools/orrery-search-soak" "${3:-$here/scenarios/examples/llama3-70b-64xh100.json}" "${2:-600}" 2
