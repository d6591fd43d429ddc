#!/bin/sh
# Exports every catalog row (schedules/catalog.json) of at most 16 GPUs that --format mscclpp writes
# within 5 seconds, then the same rows as LL,
# and the test plans, and loads each for every rank with mscclpp's parser (load_plans).
# Usage: run.sh COLLSCHED LOAD_PLANS SOURCE_DIR
set -e
collsched=$1; load=$2; src=$3
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
python3 - "$src/schedules/catalog.json" > "$dir/rows" <<'PY'
import json, sys
for e in json.load(open(sys.argv[1]))["schedules"]:
    for row in e.get("rows", []):
        print(e["file"], " ".join(f"-D {k}={v}" for k, v in row.items()))
PY
n=0; written=0
while read -r file defines; do
  n=$((n + 1))
  # shellcheck disable=SC2086
  if timeout 5 "$collsched" compile "$src/schedules/$file" $defines --format mscclpp -o "$dir/p$n.json" 2>/dev/null &&
     python3 -c 'import json, sys; sys.exit(len(json.load(open(sys.argv[1]))["gpus"]) > 16)' "$dir/p$n.json"; then
    written=$((written + 1))
    # shellcheck disable=SC2086
    timeout 5 "$collsched" compile "$src/schedules/$file" $defines --format mscclpp --proto LL -o "$dir/p$n.ll.json" 2>/dev/null &&
      written=$((written + 1))
  fi
done < "$dir/rows"
echo "catalog: $written plans written from $n rows (Simple and LL; the other rows: collectives the format does not cover, more than 16 GPUs, or over 5 s)"
"$collsched" convert "$src/tests/data/ring8_allgather.json" --format mscclpp --instances 2 -o "$dir/r8.json"
"$load" "$dir"/*.json "$src"/tests/data/mscclpp/ring_allgather_8.json "$src"/tests/data/mscclpp/allpairs_allreduce_8_ll.json \
  "$src"/tests/data/mscclpp/allreduce_2node_8.json
