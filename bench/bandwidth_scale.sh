#!/bin/sh
# The growth curve of `collsched bandwidth` (docs/performance.md, "Synthesis at scale"): for
# rail-optimized machines of 1 .. 128 boxes of 8 GPUs, the seconds and peak memory of the flow
# bound alone and of the bound with the packed allgather table (up to PACK_MAX GPUs).
#   bench/bandwidth_scale.sh [FAMILY] [PACK_MAX]     (FAMILY rail, h100rail or multibox; default rail 1024)
set -eu
FAMILY=${1:-rail}; PACK_MAX=${2:-1024}
COLLSCHED=${COLLSCHED:-build/tools/collsched}
DIR=${DIR:-build/machines}
mkdir -p "$DIR"
printf 'GPUs\tbound\tbound s\tbound MB\tschedule R/C\ttotal s\ttotal MB\n'
for k in 1 2 4 8 16 32 64 128; do
  f="$DIR/${FAMILY}${k}x8.json"
  [ -f "$f" ] || COLLSCHED=$COLLSCHED python3 scripts/machines.py --one "$FAMILY" "$k" "$f"
  /usr/bin/time -f '%e %M' -o /tmp/bwt.$$ $COLLSCHED bandwidth --topology "graph:$f" --collective allgather --no-packing --json > /tmp/bw.$$ || true
  b=$(tail -1 /tmp/bwt.$$)
  bound=$(python3 -c "import json; print(json.load(open('/tmp/bw.$$'))['bound']['rounds_per_chunk'])" 2>/dev/null || echo -)
  if [ $((k * 8)) -le "$PACK_MAX" ]; then
    /usr/bin/time -f '%e %M' -o /tmp/bwt.$$ $COLLSCHED bandwidth --topology "graph:$f" --collective allgather --timeout 120 --json > /tmp/bw.$$ || true
    p=$(tail -1 /tmp/bwt.$$)
    rc=$(python3 -c "import json; s=json.load(open('/tmp/bw.$$'))['schedule']; print(s.get('rounds_per_chunk', 'none'))" 2>/dev/null || echo -)
  else
    p='- -'; rc='-'
  fi
  set -- $b; bs=$1; bm=$(($2 / 1024))
  set -- $p; ps=$1; pm=$2; [ "$pm" = "-" ] || pm=$((pm / 1024))
  printf '%d\t%s\t%s\t%s\t%s\t%s\t%s\n' $((k * 8)) "$bound" "$bs" "$bm" "$rc" "$ps" "$pm"
done
rm -f /tmp/bw.$$ /tmp/bwt.$$
