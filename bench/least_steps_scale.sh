#!/usr/bin/env bash
# Least steps at scale (docs/synthesis.md, "At scale"): one `optimize` run per machine and
# collective, without --greedy, so the run is the counting bounds, the translates (where the
# machine has a translation group), the greedy and the known schedules, then the solver while a
# gap remains. Prints one line per run: machine, collective, status, steps, lower bound, the
# upper bound's source, wall seconds and peak resident memory.
#
#   bash bench/least_steps_scale.sh [BINARY]            (default build/tools/collsched)
#   MULTIBOX="32 128" TORI="64 100" bash bench/least_steps_scale.sh
# Run it under `nice` on a shared machine and quote `uptime` with the figures.
set -euo pipefail
if [[ "${1:-}" == "-h" || "${1:-}" == "--help" ]]; then sed -n '2,10p' "$0" | sed 's/^# \{0,1\}//'; exit 0; fi
here=$(cd "$(dirname "$0")/.." && pwd)
bin=${1:-$here/build/tools/collsched}
timeout=${TIMEOUT:-600}
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
run() {  # name topology collective [extra options]
    local out
    out=$(/usr/bin/time -f "%e %M" -o "$scratch/time" "$bin" optimize --topology "$2" --collective "$3" --timeout "$timeout" ${4:-} --json || true)
    read -r wall kb < <(tail -1 "$scratch/time")
    python3 - "$1" "$3" "$wall" "$kb" "$out" <<'PY'
import json, sys
name, coll, wall, kb, out = sys.argv[1], sys.argv[2], float(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
j = json.loads(out)
src = (j.get("upper_bound_source") or j.get("method") or "").split(" (collsched")[0]
steps = j.get("upper_bound", j.get("optimum"))
print(f"{name:16} {coll:14} {j['status']:7} steps {steps} bound {j['lower_bound']} "
      f"wall {wall:.2f} s peak {kb / 1e6:.3f} GB  {src[:60]}")
PY
}
uptime
machines=$here/schedules/machines
for m in multibox4x8 rail4x8 multibox8x8 rail8x8 multibox16x8 rail16x8; do
    for c in allgather alltoall reduce_scatter; do run "$m" "graph:$machines/$m.json" "$c"; done
done
# allreduce of C = 2P (rings run at once against the transfers bound), H100 allgather (box entries)
for m in multibox4x8:64 rail4x8:64 multibox8x8:128 rail8x8:128 multibox16x8:256 rail16x8:256; do
    run "${m%%:*}" "graph:$machines/${m%%:*}.json" allreduce "--chunks ${m##*:}"
done
for m in h100rail4x8 h100rail8x8; do run "$m" "graph:$machines/$m.json" allgather; done
for k in ${MULTIBOX:-128}; do
    "$bin" machine dgx-a100 --boxes "$k" --network switch --units gpu -o "$scratch/mb.json"
    for c in allgather alltoall; do run "multibox:${k}x8" "graph:$scratch/mb.json" "$c"; done
done
for n in ${TORI:-40 64 100}; do run "torus:${n}x${n}" "torus:${n}x${n}" allgather --greedy; done
