#!/usr/bin/env bash
# Constructions for time (docs/time.md, "Constructions for time"): the fastest verified
# construction per machine, collective and size, by `collsched compose`, with its predicted
# asynchronous time, its shape and pieces, and the wall seconds and peak memory of the answer.
# Issue 43's marks: h100rail4x8 allreduce 17.5 us / 71.6 us / 4.18 ms at 64K / 16M / 1G, and
# multibox4x8 allreduce within 10 % of the box cut 8.05 ms at 1G.
#
#   bash bench/compose_time.sh [BINARY]        (default build/tools/collsched; runs BINARY compose)
#   MACHINES="h100rail4x8 multibox4x8" COLLECTIVES=allreduce SIZES="64K 16M 1G" bash bench/compose_time.sh
# Run it under `nice` on a shared machine and quote `uptime` with the figures.
set -euo pipefail
if [[ "${1:-}" == "-h" || "${1:-}" == "--help" ]]; then sed -n '2,10p' "$0" | sed 's/^# \{0,1\}//'; exit 0; fi
here=$(cd "$(dirname "$0")/.." && pwd)
bin=${1:-$here/build/tools/collsched}
machines=${MACHINES:-h100rail4x8 multibox4x8 rail4x8 dgx1 nvswitch8 dgx2}
collectives=${COLLECTIVES:-allreduce reduce_scatter allgather}
sizes=${SIZES:-64K 1M 16M 256M 1G}
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
cd "$here"
for m in $machines; do
  for c in $collectives; do
    for s in $sizes; do
      best=$(/usr/bin/time -f "%e %M" -o "$scratch/time" "$bin" compose --topology "graph:schedules/machines/$m.json" --collective "$c" --size "$s" | sed -n 2p)
      read -r wall kb < <(tail -1 "$scratch/time")
      printf '%-12s %-14s %-5s %s  (%s s, %d MB)\n' "$m" "$c" "$s" "$(sed 's/^ *//;s/ *C = .*//' <<<"$best")" "$wall" "$((kb / 1000))"
    done
  done
done
