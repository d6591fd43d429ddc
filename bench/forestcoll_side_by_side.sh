#!/bin/sh
# Side by side with ForestColl (docs/performance.md, "Synthesis at scale"): the optimal allgather
# R/C and the time of collsched's flow bound next to ForestColl's binary search, one machine at a
# time, in one run; then collsched's verified table (bound + packing: its R/C and seconds, "-"
# where the machine has routers, which the packing does not take). ForestColl is not part of collsched: it needs Debian's python3-networkx, its
# source (github liangyuRain/ForestColl, `git archive` into FC_DIR) and the two anchor scripts
# convert.py and run_forestcoll.py (ANCHOR_DIR), which run it on collsched's graph files.
#   bench/forestcoll_side_by_side.sh FC_DIR ANCHOR_DIR MACHINE.json...
set -eu
FC=$1; ANCHOR=$2; shift 2
COLLSCHED=${COLLSCHED:-build/tools/collsched}
TMP=$(mktemp -d)
printf 'machine\tGPUs\tcollsched R/C\tcollsched s\tForestColl R/C\tForestColl s\tratio\ttable R/C\ttable s\n'
for m in "$@"; do
  name=$(basename "$m" .json)
  t0=$(date +%s.%N)
  ours=$($COLLSCHED bandwidth --topology "graph:$m" --collective allgather --no-packing --json || true)
  t1=$(date +%s.%N)
  table=$($COLLSCHED bandwidth --topology "graph:$m" --collective allgather --json || true)
  t1b=$(date +%s.%N)
  # The anchor's converter reads [u, v, cap] edges: drop link types and speeds (docs/time.md).
  python3 -c "
import json, sys
d = json.load(open(sys.argv[1]))
d.pop('link_types', None)
d['edges'] = [e[:3] if isinstance(e, list) else e for e in d['edges']]
for g in d.get('groups', []): g.pop('bandwidth', None)
json.dump(d, open(sys.argv[2], 'w'))" "$m" "$TMP/$name.plain.json"
  python3 "$ANCHOR/convert.py" "$TMP/$name.plain.json" "$TMP/$name.fc.json" >/dev/null
  t2=$(date +%s.%N)
  theirs=$(timeout 600 python3 "$ANCHOR/run_forestcoll.py" "$FC" opt "$TMP/$name.fc.json" || echo '{"rc": "timeout"}')
  t3=$(date +%s.%N)
  python3 - "$name" "$ours" "$theirs" "$table" "$t0" "$t1" "$t1b" "$t2" "$t3" <<'PY'
import json, sys
name, ours, theirs, table = sys.argv[1], json.loads(sys.argv[2]), json.loads(sys.argv[3]), json.loads(sys.argv[4])
t0, t1, t1b, t2, t3 = map(float, sys.argv[5:])
a, b = t1 - t0, t3 - t2
s = table.get("schedule", {})
rc = s.get("rounds_per_chunk", "-")
print(f"{name}\t{ours['processors']}\t{ours['bound']['rounds_per_chunk']}\t{a:.3f}\t{theirs['rc']}\t{b:.3f}\t{b / a:.0f}x\t{rc}\t{t1b - t1:.3f}")
PY
done
rm -rf "$TMP"
