#!/usr/bin/env bash
# Load and soak benchmark of `orrery search` (issue 26): every plan of a large space (DeepSeek-V3 on 2048 H100s,
# every candidate simulated: --no-prune) on 2 threads, with the process's resident memory sampled every 5 s, then
# the same search on 1 thread. Prints the run times, plans per second, the memory samples' first, largest and
# last values, and fails (exit 1) when
#   - the memory of the last half of the 2-thread run rises more than 10% above the largest of its first half
#     (memory that grows with the plans evaluated: a leak or a cache without a bound), or
#   - the 2-thread ranking differs from the 1-thread one (every candidate, its order and its iteration time).
#   tools/bench-soak.sh [path/to/orrery] [extra search flags...]
# About 10 minutes for the 2-thread run on 2 cores here, 20 for the 1-thread one; pass e.g. `--num-gpus 256` for
# a shorter run.
set -euo pipefail
orrery="${1:-$(dirname "$0")/../build/tools/orrery}"
shift || true
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
args=(search --model deepseek-v3 --cluster dgx-h100 --num-gpus 2048 --seq-length 4096 --global-batch-size 2048
      --no-prune --quiet --top 5 "$@")

run() {  # run THREADS OUT.json: the search, with RSS samples (kB) in OUT.json.rss
  local threads="$1" out="$2" start end pid
  start=$(date +%s.%N)
  "$orrery" "${args[@]}" --threads "$threads" --json "$out" > "$out.txt" &
  pid=$!
  : > "$out.rss"
  while kill -0 "$pid" 2>/dev/null; do
    awk '/^VmRSS/ {print $2}' "/proc/$pid/status" 2>/dev/null >> "$out.rss" || true
    sleep 5
  done
  wait "$pid"
  end=$(date +%s.%N)
  python3 - "$out" "$threads" "$start" "$end" <<'PY'
import json, sys
out, threads, start, end = sys.argv[1], sys.argv[2], float(sys.argv[3]), float(sys.argv[4])
rows = json.load(open(out))["plans"]
rss = [int(x) for x in open(out + ".rss").read().split() if x.strip()]
seconds = end - start
print(f"{threads} thread(s): {len(rows)} candidates in {seconds:.1f} s ({len(rows) / seconds:.1f} plans/s); "
      f"RSS MiB first {rss[0] / 1024:.0f}, largest {max(rss) / 1024:.0f}, last {rss[-1] / 1024:.0f} "
      f"({len(rss)} samples)" if rss else f"{threads} thread(s): {len(rows)} candidates in {seconds:.1f} s")
PY
}

run 2 "$work/two.json"
run 1 "$work/one.json"
python3 - "$work" <<'PY'
import json, sys
work = sys.argv[1]
def ranking(name):
    doc = json.load(open(f"{work}/{name}.json"))
    # The order of the ranking and every plan's figures and reasons; the two runs differ only in threads.
    return doc["ranking"] + [json.dumps(r, sort_keys=True) for r in doc["plans"]]
ok = True
two, one = ranking("two"), ranking("one")
if two != one:
    diff = next(i for i, (a, b) in enumerate(zip(two + [""], one + [""])) if a != b)
    print(f"FAIL: the 2-thread ranking differs from the 1-thread one at row {diff}")
    ok = False
else:
    print(f"rankings equal: {len(json.load(open(f'{work}/one.json'))['plans'])} plans, same order and figures")
rss = [int(x) for x in open(f"{work}/two.json.rss").read().split()]
if len(rss) >= 4:
    half = len(rss) // 2
    first, last = max(rss[:half]), max(rss[half:])
    growth = 100.0 * (last / first - 1)
    print(f"memory: largest of the first half {first / 1024:.0f} MiB, of the last half {last / 1024:.0f} MiB ({growth:+.1f}%)")
    if growth > 10:
        print("FAIL: memory grows with the plans evaluated")
        ok = False
else:
    print("memory: the run was too short to sample (fewer than 4 samples)")
sys.exit(0 if ok else 1)
PY
