#!/usr/bin/env bash
# The greedy synthesizer at scale (docs/performance.md, "Synthesis at scale: greedy"): allgather on
# 2D tori and on machines of boxes, one `optimize --greedy` run per size; prints one line per run:
# machine, processors, steps, lower bound, gap, greedy seconds, verification seconds, wall seconds,
# peak resident memory.
#
#   bash bench/greedy_scale.sh [BINARY] [SIZES...]     (default build/tools/collsched; tori 10 20 40 64 100)
#   MULTIBOX="16 32 64 128" bash bench/greedy_scale.sh  (boxes of 8 GPUs; the graph files are written
#                                                       to a scratch directory by `collsched machine`)
# Run it under `nice` on a shared machine and quote `uptime` with the figures.
set -euo pipefail
if [[ "${1:-}" == "-h" || "${1:-}" == "--help" ]]; then sed -n '2,10p' "$0" | sed 's/^# \{0,1\}//'; exit 0; fi
here=$(cd "$(dirname "$0")/.." && pwd)
bin=${1:-$here/build/tools/collsched}
shift || true
sizes=${*:-"10 20 40 64 100"}
timeout=${TIMEOUT:-1800}
memory=${MEMORY:-14G}
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
run() {  # machine-name topology-spec
    local out
    out=$(/usr/bin/time -f "%e %M" -o "$scratch/time" "$bin" optimize --topology "$2" --collective allgather --greedy \
          --timeout "$timeout" --memory "$memory" --json || true)
    read -r wall kb < <(tail -1 "$scratch/time")
    python3 - "$1" "$wall" "$kb" "$out" <<'PY'
import json, sys
name, wall, kb, out = sys.argv[1], float(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
j = json.loads(out)
g = j.get("greedy", {})
steps, lb = j["upper_bound"], j["lower_bound"]
gap = "" if steps is None else f"{steps - lb} ({100.0 * (steps - lb) / max(1, lb):.1f}%)"
print(f"{name:16} steps {steps} bound {lb} gap {gap} greedy {g.get('seconds', 0):.1f} s "
      f"verify {g.get('verify_seconds', 0):.1f} s wall {wall:.1f} s peak {kb / 1e6:.2f} GB {g.get('reason', '')}")
PY
}
uptime
for n in $sizes; do run "torus:${n}x${n}" "torus:${n}x${n}"; done
for k in ${MULTIBOX:-}; do
    "$bin" machine dgx-a100 --boxes "$k" --network switch --units gpu -o "$scratch/mb.json"
    run "multibox:${k}x8" "graph:$scratch/mb.json"
done
