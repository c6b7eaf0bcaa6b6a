#!/usr/bin/env bash
# For every published plan in scenarios/validation: its rank among the plans `orrery search` finds for the same
# model, cluster, GPU count, sequence and global batch (the record's own plan is ranked exactly), and the predicted
# gain of the best plan over it. One line per record; the search issue's resolution note lists them.
#   tools/search-published.sh [path/to/orrery] [seconds per record, default 600]
set -uo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
orrery="${1:-$here/build/tools/orrery}"
limit="${2:-600}"
for f in "$here"/scenarios/validation/*.json; do
  name="$(basename "$f" .json)"
  line="$(timeout "$limit" "$orrery" search "$f" --quiet --top 10 2>&1 | grep -m1 -e "the scenario's plan" -e "^error")"
  status=$?
  if [ -z "$line" ]; then line="no result within ${limit} s"; fi
  echo "$name: $line"
done
