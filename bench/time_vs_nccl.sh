#!/usr/bin/env bash
# collsched's fastest schedule against what NCCL runs, per machine, collective and size (issue 43,
# "Speed and quality"); docs/performance.md, "Time against NCCL", summarizes the current table and
# bench/results/time_vs_nccl.md holds every cell.
set -euo pipefail

usage() {
    cat <<'EOF'
Usage: bench/time_vs_nccl.sh [OPTIONS]

For every (machine, collective) one `collsched optimize --topology graph:M.json --collective C
--sizes S1,S2,... --json` under /usr/bin/time; per size (a cell): collsched's fastest schedule and
its time, the best NCCL algorithm generated for the machine and its time (same time model,
docs/time.md), NCCL's own tuning.cc figure (its tuner's algorithm and protocol), the proved time
bound, the gap to it, the speed-up over NCCL, and the wall and CPU seconds and peak RSS of the run
(one run answers all sizes of a row; the load average is kept beside it). Writes
OUT/time_vs_nccl.csv (one line per cell), OUT/time_vs_nccl.md (one row per machine and collective, and the summary) and keeps each run's
JSON and time in OUT/runs/. The tables are made from every run in OUT/runs/, so runs made
separately (the 128 x 8 machines last) end up in one table.

Options:
  --machines LIST     comma-separated machine names, or `all` (default), `small` (all but 128 x 8)
                      or `large` (the 128 x 8 ones). Names: multiboxKx8, railKx8 (switches as
                      routers), h100railKx8 for K in 2 4 8 16 128; dgx1, dgx2, ndv2x4; by name
                      only: dgx_h100_nvls and h100nvlsKx8 (K in 2 4 8 16), whose switch reduces,
                      and h100sharpKx8 (K in 2 4 8 16), whose rail switches reduce too (SHARP)
  --collectives LIST  default allreduce,allgather,reduce_scatter,alltoall
  --sizes LIST        default 64K,1M,16M,256M,1G (NCCL's sizes, docs/time.md "Sizes")
  --out DIR           default build/time_vs_nccl
  --bin PATH          collsched binary (default $COLLSCHED, else build/tools/collsched)
  --timeout S         optimize's --timeout per run (default 300)
  --executor NAME     also run every cell on this executor (nccl, mscclpp or msccl; docs/time.md
                      "Executors"): its time, its speed-up over NCCL's algorithms timed by the same
                      executor, `tie` where that is inside the executor model's validated error,
                      `NCCL's own` where NCCL's own algorithm is the fastest on it
  --calibration FILE  with --executor: the executor calibrated for the machine (collsched calibrate)
  --quick             a few cells (dgx1, multibox2x8, h100rail2x8; allreduce and alltoall; 64K and
                      16M), as ctest's benchmark `time_vs_nccl_quick` (labels bench and slow) runs them
  --strict            exit 1 when a cell is slower than NCCL's best algorithm, or not shown at or ahead of it
                      (its best only bounded from below; the issue's bar)
  --report            only rebuild the tables from OUT/runs/
  --keep              do not rerun a (machine, collective) whose run is in OUT/runs/
  -h, --help          this text

Exit 0 when every run wrote its JSON (a gap to the bound is a figure, not a failure), 1 otherwise
(and with --strict when a cell is slower than NCCL's best), 2 on a bad option.
Machine files: schedules/machines/ where shipped (multibox, h100rail up to 16 x 8, dgx1, dgx2,
ndv2x4), else written to OUT/machines/ by `collsched machine` (rail with --switches routers, the
128 x 8 ones; schedules/machines/commands.txt says how the shipped ones are made).
EOF
}

here=$(cd "$(dirname "$0")/.." && pwd)
cd "$here"  # the library's catalog (schedules/catalog.json) is read from the source tree
machines=all
collectives=allreduce,allgather,reduce_scatter,alltoall
sizes=64K,1M,16M,256M,1G
out=build/time_vs_nccl
bin=${COLLSCHED:-build/tools/collsched}
timeout=300
report_only=0
keep=0
strict=0
executor=
calibration=
while [ $# -gt 0 ]; do
    case "$1" in
        --machines) machines=$2; shift 2 ;;
        --collectives) collectives=$2; shift 2 ;;
        --sizes) sizes=$2; shift 2 ;;
        --out) out=$2; shift 2 ;;
        --bin) bin=$2; shift 2 ;;
        --timeout) timeout=$2; shift 2 ;;
        --executor) executor=$2; shift 2 ;;
        --calibration) calibration=$2; shift 2 ;;
        --quick) machines=dgx1,multibox2x8,h100rail2x8; collectives=allreduce,alltoall; sizes=64K,16M; shift ;;
        --strict) strict=1; shift ;;
        --report) report_only=1; shift ;;
        --keep) keep=1; shift ;;
        -h|--help) usage; exit 0 ;;
        *) echo "time_vs_nccl.sh: unknown option $1 (--help)" >&2; exit 2 ;;
    esac
done

small="multibox2x8 multibox4x8 multibox8x8 multibox16x8 rail2x8 rail4x8 rail8x8 rail16x8 h100rail2x8 h100rail4x8 h100rail8x8 h100rail16x8 dgx1 dgx2 ndv2x4"
large="multibox128x8 rail128x8 h100rail128x8"
case "$machines" in
    all) machines="$small $large" ;;
    small) machines=$small ;;
    large) machines=$large ;;
    *) machines=${machines//,/ } ;;
esac
collectives=${collectives//,/ }

mkdir -p "$out/runs" "$out/machines"
[ -z "$executor" ] || mkdir -p "$out/runs_executor"

# The machine file of a name (written when not shipped).
machine_file() {
    local name=$1 k
    case "$name" in
        rail*x8)
            k=${name#rail}; k=${k%x8}
            local f="$out/machines/$name.json"
            [ -s "$f" ] || "$bin" machine dgx-a100 --boxes "$k" --network rail --units gpu --switches routers -o "$f" >/dev/null
            echo "$f" ;;
        dgx_h100_nvls|h100nvls*x8|h100sharp*x8)  # shipped (NVLS, SHARP: switches reduce; bench/nvls_vs_nccl.py, sharp_vs_nccl.py)
            if [ -f "$here/schedules/machines/$name.json" ]; then echo "$here/schedules/machines/$name.json"; return; fi
            echo "time_vs_nccl.sh: no file for $name" >&2; return 1 ;;
        multibox*x8|h100rail*x8|dgx1|dgx2|ndv2x4)
            if [ -f "$here/schedules/machines/$name.json" ]; then echo "$here/schedules/machines/$name.json"; return; fi
            k=${name#*box}; k=${k#h100rail}; k=${k%x8}
            local f="$out/machines/$name.json"
            case "$name" in
                multibox*) [ -s "$f" ] || "$bin" machine dgx-a100 --boxes "$k" --network switch --units gpu -o "$f" >/dev/null ;;
                h100rail*) [ -s "$f" ] || "$bin" machine dgx-h100 --boxes "$k" --network rail -o "$f" >/dev/null ;;
                *) echo "time_vs_nccl.sh: no file for $name" >&2; return 1 ;;
            esac
            echo "$f" ;;
        *) echo "time_vs_nccl.sh: unknown machine $name (--help)" >&2; return 1 ;;
    esac
}

failed=0
if [ "$report_only" = 0 ]; then
    for m in $machines; do
        file=$(machine_file "$m") || { failed=1; continue; }
        for c in $collectives; do
            run="$out/runs/$m.$c"
            if [ "$keep" = 1 ] && [ -s "$run.json" ]; then continue; fi
            echo "time_vs_nccl: $m $c (load $(cut -d' ' -f1 /proc/loadavg))" >&2
            rc=0
            /usr/bin/time -f "%e %M %U %S" -o "$run.time" "$bin" optimize --topology "graph:$file" --collective "$c" --sizes "$sizes" \
                --timeout "$timeout" --json >"$run.json" 2>"$run.err" || rc=$?
            echo "$(cut -d' ' -f1 /proc/loadavg)" >"$run.load"
            # exit 0: every size meets its bound; 3: a gap remains (a figure of the table)
            if [ "$rc" != 0 ] && [ "$rc" != 3 ]; then
                echo "time_vs_nccl: $m $c exited $rc: $(tail -c 300 "$run.err")" >&2
                rm -f "$run.json"
                failed=1
            fi
            if [ -n "$executor" ]; then  # the same cell timed on the executor (exit 3: the winner is above the executor's bound)
                erun="$out/runs_executor/$m.$c"
                rc=0
                "$bin" optimize --topology "graph:$file" --collective "$c" --sizes "$sizes" --timeout "$timeout" --json \
                    --executor "$executor" ${calibration:+--calibration "$calibration"} >"$erun.json" 2>"$erun.err" || rc=$?
                if [ "$rc" != 0 ] && [ "$rc" != 3 ]; then
                    echo "time_vs_nccl: $m $c --executor $executor exited $rc: $(tail -c 300 "$erun.err")" >&2
                    rm -f "$erun.json"
                    failed=1
                fi
            fi
        done
    done
fi

rc=0
python3 - "$out" "$strict" <<'EOF' || rc=$?
import csv, glob, json, os, sys

out = sys.argv[1]
strict = sys.argv[2] == "1"
order = ["multibox", "rail", "h100rail", "h100nvls", "h100sharp", "dgx1", "dgx2", "ndv2x4", "dgx_h100_nvls"]
colls = ["allreduce", "allgather", "reduce_scatter", "alltoall"]


def machine_key(m):
    for i, f in enumerate(order):
        if m == f or (m.startswith(f) and m[len(f):len(f) + 1].isdigit()):
            k = m[len(f):].split("x")[0]
            return (i, int(k) if k.isdigit() else 0)
    return (len(order), m)


def tuner(row):
    """NCCL's own model at a size: its tuner's pick among ring, tree and PAT, NVLS / NVLS_TREE where
    the machine's switch reduces, and CollNet (Direct, Chain, NVLS across boxes) where its network's
    switches do (SHARP), whichever is the fastest (the tuner weighs them all)."""
    picks = [x for x in [row.get("nccl_model"), row.get("nccl_nvls_model")] + row.get("nccl_collnet_model", []) if x]
    return min(picks, key=lambda x: x["seconds"]) if picks else None


def fmt_s(x):
    if x is None:
        return "-"
    for unit, f in (("s", 1), ("ms", 1e3), ("us", 1e6)):
        if x * f >= 1:
            return f"{x * f:.3g} {unit}"
    return f"{x * 1e9:.3g} ns"


def fmt_b(n):
    for unit, f in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= f and n % f == 0:
            return f"{n // f} {unit}"
    return f"{n} B"


runs = []
for path in glob.glob(os.path.join(out, "runs", "*.json")):
    name = os.path.basename(path)[:-5]
    m, c = name.rsplit(".", 1)
    try:
        with open(path) as f:
            j = json.load(f)
    except (OSError, ValueError):
        continue
    fields_ = open(path[:-5] + ".time").read().strip().splitlines()[-1].split()  # after "Command exited with ..."
    if len(fields_) >= 4:
        wall, rss, cpu = fields_[-4], fields_[-3], float(fields_[-2]) + float(fields_[-1])
    else:  # wall and RSS only
        wall, rss, cpu = fields_[-2], fields_[-1], float("nan")
    load = open(path[:-5] + ".load").read().strip() if os.path.exists(path[:-5] + ".load") else ""
    runs.append((machine_key(m), colls.index(c) if c in colls else 9, m, c, j, float(wall), int(rss) / 1024, load, cpu))
runs.sort(key=lambda r: r[:2])

# the same cells on an executor (--executor): per (machine, collective) its JSON
on_executor = {}
for path in glob.glob(os.path.join(out, "runs_executor", "*.json")):
    m, c = os.path.basename(path)[:-5].rsplit(".", 1)
    try:
        with open(path) as f:
            on_executor[(m, c)] = json.load(f)
    except (OSError, ValueError):
        continue


def executor_cell(m, c, size):
    """The cell on the executor: its time, winner, and speed-up over NCCL's algorithms on the same executor,
    `tie` inside the executor model's validated error."""
    j = on_executor.get((m, c))
    s = next((x for x in j["sizes"] if int(x["size_bytes"]) == size), None) if j else None
    if not s or s.get("predicted_time_s") is None:
        return None
    sp = s.get("speedup_over_nccl")
    return {"executor": j.get("executor"), "executor_s": s["predicted_time_s"], "executor_winner": s.get("winner"),
            "executor_protocol": s.get("protocol"), "executor_speedup": sp,
            "executor_tie": bool(s.get("tie_with_nccl")), "executor_nccl_wins": bool(s.get("nccl_wins")),
            "executor_error": j.get("executor_error")}

fields = ["machine", "gpus", "collective", "size_bytes", "size", "collsched", "collsched_s", "nccl_best", "nccl_best_s",
          "nccl_best_at_least_s", "nccl_model", "nccl_model_s", "bound_s", "bound_term", "gap_percent", "speedup_over_nccl",
          "speedup_over_nccl_at_least", "wall_s", "cpu_s", "peak_rss_mb", "load", "executor", "executor_s", "executor_winner",
          "executor_protocol", "executor_speedup", "executor_tie", "executor_nccl_wins", "executor_error"]
rows = []
for _, _, m, c, j, wall, rss, load, cpu in runs:
    for s in j["sizes"]:
        t = s.get("predicted_time_s")
        nm = tuner(s)
        rows.append({"machine": m, "gpus": j.get("processors", ""), "collective": c, "size_bytes": int(s["size_bytes"]),
                     "size": fmt_b(int(s["size_bytes"])), "collsched": s.get("winner"), "collsched_s": t,
                     "nccl_best": s.get("nccl_best"), "nccl_best_s": s.get("nccl_best_s"),
                     "nccl_best_at_least_s": s.get("nccl_best_at_least_s"),
                     "speedup_over_nccl_at_least": s.get("speedup_over_nccl_at_least"),
                     "nccl_model": f"{nm['algorithm']} {nm['protocol']}" if nm else None, "nccl_model_s": nm["seconds"] if nm else None,
                     "bound_s": s.get("time_lower_bound_s"), "bound_term": s.get("time_bound", {}).get("term"),
                     "gap_percent": s.get("gap_percent"), "speedup_over_nccl": s.get("speedup_over_nccl"),
                     "wall_s": wall, "cpu_s": round(cpu, 2), "peak_rss_mb": round(rss), "load": load,
                     **(executor_cell(m, c, int(s["size_bytes"])) or {})})

with open(os.path.join(out, "time_vs_nccl.csv"), "w", newline="") as f:
    w = csv.DictWriter(f, fieldnames=fields)
    w.writeheader()
    for r in rows:
        w.writerow(r)

# Markdown: one row per (machine, collective); per size "time (x speed-up, gap %)"
sizes = sorted({r["size_bytes"] for r in rows})
lose = [r for r in rows if r["speedup_over_nccl"] is not None and r["speedup_over_nccl"] < 1 - 1e-9]
# NCCL's best only bounded from below (an algorithm not timed, docs/time.md "NCCL's ring without its table"), and
# collsched's time above that bound: neither ahead nor behind is shown
unshown = [r for r in rows if r["speedup_over_nccl"] is None and r["speedup_over_nccl_at_least"] is not None
           and r["speedup_over_nccl_at_least"] < 1 - 1e-9]
# one of NCCL's algorithms with neither a time nor a bound: NCCL's best not known, no speed-up claimed
unknown = [r for r in rows if r["nccl_best"] is not None and r["speedup_over_nccl"] is None and r["speedup_over_nccl_at_least"] is None]
far = [r for r in rows if r["size_bytes"] >= 16 << 20 and r["gap_percent"] is not None and r["gap_percent"] > 10]
no_nccl = [r for r in rows if r["nccl_best"] is None]
none = [r for r in rows if r["collsched_s"] is None]
slow = sorted({(wall, m, c, cpu) for _, _, m, c, _, wall, _, _, cpu in runs}, reverse=True)
md = []
md.append(f"{len(rows)} cells from {len(runs)} runs: {len(lose)} slower than NCCL's best algorithm, "
          f"{len(unshown)} not shown at or ahead of it (its best only bounded: an algorithm not timed), "
          f"{len(unknown)} where NCCL's best is not known (an algorithm neither timed nor bounded), "
          f"{len(far)} at 16 MiB or more above 10 % of the bound, {len(no_nccl)} without an NCCL algorithm, "
          f"{len(none)} without a schedule (none verified within the time limit); "
          f"runs over 10 s: {sum(1 for x in slow if x[0] > 10)} (over 10 CPU seconds: {sum(1 for x in slow if x[3] > 10)}); slowest: "
          + ", ".join(f"{m} {c} {w:.0f} s ({cpu:.0f} s CPU)" for w, m, c, cpu in slow[:5]) + ".")
md.append("")
md.append("Per size: collsched's time / the best NCCL algorithm generated for the machine, in the same model "
          "(`-`: none; `>= t`: an algorithm not timed whose proved lower bound t is below every timed one; in brackets "
          "NCCL's own tuning.cc figure where it models the machine) / the proved lower bound; "
          "then collsched's speed-up over NCCL (`>=`: at least) and its gap to the bound. **Bold**: slower than NCCL; "
          "_italic_: not shown at or ahead (collsched's time is above that lower bound); "
          "a dagger: 16 MiB or more and over 10 % above the bound. Last column: the wall and CPU seconds and the "
          "peak RSS of the run (all sizes at once). With --executor, after a semicolon: the cell on that executor "
          "(the fastest schedule it runs, its time, its speed-up over NCCL's algorithms timed on the same executor, "
          "`tie` inside the executor model's validated error).")
md.append("")
md.append("| machine | collective | " + " | ".join(fmt_b(s) for s in sizes) + " | run |")
md.append("|---|---|" + "---|" * len(sizes) + "---|")
for _, _, m, c, j, wall, rss, load, cpu in runs:
    cells = []
    by = {int(s["size_bytes"]): s for s in j["sizes"]}
    for size in sizes:
        s = by.get(size)
        if not s:
            cells.append("")
            continue
        if s.get("predicted_time_s") is None:  # no schedule verified within the time limit: no time, no gap
            cells.append(f"none in the time limit / {fmt_s(s.get('nccl_best_s'))} / {fmt_s(s.get('time_lower_bound_s'))}")
            continue
        sp = s.get("speedup_over_nccl")
        least = s.get("speedup_over_nccl_at_least") if sp is None else None
        g = s.get("gap_percent") or 0
        mark = "**" if sp is not None and sp < 1 - 1e-9 else "_" if least is not None and least < 1 - 1e-9 else ""
        dagger = " †" if size >= 16 << 20 and g > 10 else ""
        nm = tuner(s)
        model = f" [{fmt_s(nm['seconds'])}]" if nm and nm.get("seconds") else ""
        nccl = fmt_s(s.get('nccl_best_s')) if least is None else ">= " + fmt_s(s.get('nccl_best_at_least_s'))
        speed = '%.2fx' % sp if sp is not None else '>= %.2fx' % least if least is not None else '-'
        e = executor_cell(m, c, size)
        on = ""
        if e:
            esp = e["executor_speedup"]
            verdict = "NCCL's own" if e["executor_nccl_wins"] else "tie" if e["executor_tie"] else "%.2fx" % esp if esp else "-"
            on = f"; {e['executor']}: {fmt_s(e['executor_s'])}, {verdict}"
        cells.append(f"{fmt_s(s.get('predicted_time_s'))} / {nccl}{model} / {fmt_s(s.get('time_lower_bound_s'))}: "
                     f"{mark}{speed}{mark}, {g:.1f} %{dagger}{on}")
    md.append(f"| {m} | {c} | " + " | ".join(cells) + f" | {wall:.1f} s ({cpu:.1f} CPU), {rss:.0f} MB |")
md.append("")
if lose:
    md.append("Slower than NCCL: " + "; ".join(f"{r['machine']} {r['collective']} {r['size']} ({r['speedup_over_nccl']:.3f}x)" for r in lose))
    md.append("")
if unshown:
    md.append("Not shown at or ahead of NCCL (its best only bounded from below): " +
              "; ".join(f"{r['machine']} {r['collective']} {r['size']} (>= {r['speedup_over_nccl_at_least']:.3f}x)" for r in unshown))
    md.append("")
if far:
    md.append("More than 10 % above the bound at 16 MiB or more: " +
              "; ".join(f"{r['machine']} {r['collective']} {r['size']} ({r['gap_percent']:.0f} %)" for r in far))
    md.append("")
with open(os.path.join(out, "time_vs_nccl.md"), "w") as f:
    f.write("\n".join(md))
print(md[0])
print(f"tables: {os.path.join(out, 'time_vs_nccl.md')}, {os.path.join(out, 'time_vs_nccl.csv')}")
sys.exit(1 if strict and (lose or unshown or unknown) else 0)
EOF
[ "$rc" = 0 ] || failed=1
exit $failed
