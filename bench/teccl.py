#!/usr/bin/env python3
"""TE-CCL's instances side by side (docs/performance.md, "TE-CCL's instances").

TE-CCL (microsoft/TE-CCL, SIGCOMM 2024) schedules allgather and alltoall with a MILP/LP over
time epochs in an alpha-beta model. Its repository ships its schedules' finish times and Gurobi
solver times (schedules/teccl/published.csv, from teccl/examples/experiments/output_provided/ at
commit c128bf2); schedules/teccl/*.json are its topologies as collsched graph files, one-way links
one way. For every (machine, collective) this runs

    collsched optimize --topology graph:schedules/teccl/M.json --collective C --sizes S --json

(the ideal model: a transfer of b bytes holds its channel b/B and arrives alpha after its last
byte, as TE-CCL's links), and on DGX-2 x 2 and NDv2 x 4 times the hand-written allgathers
bench/teccl/dgx2x2_allgather.sched (collsched verify -D C=k --size S) and ndv2x4_allgather.sched
(shortest paths, for small sizes) beside it as a cross-check, and prints a markdown table per size:
TE-CCL's best shipped finish time (the fastest of its Fast, Slow and Fast_Early_Stop epoch settings)
and that run's solver time, optimize's fastest verified schedule, its proved lower bound, the ratio,
the wall time of the one optimize run that answers every size, and the hand-written schedule's
time. Notes (the models' differences):
0 = TE-CCL's NDv2 x 2 reads GPU 0 as a switch (teccl/topologies/ndv2.py set_switch_indicies):
    its collectives run among 15 GPUs, and GPU 0's links out, one of the two links between the
    boxes among them, count their alpha but no transfer time; allgather here runs on
    ndv2x2.json (16 GPUs' data), alltoall on ndv2x2_gpu0_switch.json (TE-CCL's reading, GPU 0 a
    router that multicasts, whose links out do take time) at 15/16 of the size (TE-CCL's message);
a = TE-CCL dropped the latency of links whose alpha is at most 0.1 epoch (its alpha_threshold),
    so its time omits them;
c = collsched's winner cuts each datum into chunks (TE-CCL's allgather moves each GPU's data
    whole; its alltoall is an LP that splits freely);
s = TE-CCL's switch copies a chunk to several GPUs or boxes for one use of a port, collsched's
    channels between the switch's GPUs (one hop: both links' alphas, one transfer, as TE-CCL's
    path) do not (the graph files' notes);
slower = collsched is slower at this size (explained by a note, or a gap).

Exit: 0; 1 with --strict when collsched is slower than TE-CCL at some size; 2 on bad arguments
or a failed run.
"""
import argparse
import csv
import json
import math
import os
import re
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
TECCL = os.path.join(ROOT, "schedules", "teccl")
SIZES = ["1kB", "4kB", "16kB", "64kB", "256kB", "1MB", "4MB", "16MB", "64MB", "256MB", "1GB"]
# Every link's alpha in TE-CCL's topology files (ndv2.py, dgx2.py), seconds.
ALPHAS = {"ndv2x2": [0.7e-6, 1.3e-6], "ndv2x4": [0.7e-6, 1.3e-6], "dgx2x2": [0.35e-6, 2.6e-6]}
SWITCH_COPIES = {"ndv2x4", "dgx2x2"}
# Per TE-CCL instance the graph file collsched runs on and the factor from TE-CCL's size to
# collsched's. TE-CCL's NDv2 x 2 reads GPU 0 as a switch (ndv2.py set_switch_indicies: node 0
# whenever chassis > 1): its collectives are among 15 GPUs with TE-CCL's chunk of size / 16.
# Allgather runs on ndv2x2.json (16 GPUs' data: more than TE-CCL moves), alltoall on
# ndv2x2_gpu0_switch.json at 15/16 of the size, so that a message has TE-CCL's bytes (rounded up).
FILES = {("ndv2x2", "alltoall"): ("ndv2x2_gpu0_switch", 15 / 16)}
VALUE = {"kB": 1e3, "MB": 1e6, "GB": 1e9}
# Hand-written schedules (bench/teccl/) that collsched verifies and times beside optimize's answer,
# at these chunk counts, as a cross-check of optimize's link trees (verifier/constructions/compose/box_links.hpp).
SCHEDULES = {("dgx2x2", "allgather"): ("dgx2x2_allgather.sched", [1, 16, 256]),
             ("ndv2x4", "allgather"): ("ndv2x4_allgather.sched", [None])}  # one chunk: no parameter


def size_bytes(label, factor):
    """TE-CCL's size label (decimal units, as its GB) as collsched's size in bytes."""
    unit = label[-2:]
    return math.ceil(float(label[:-2]) * VALUE[unit] * factor - 1e-6)


def fail(msg):
    print(f"teccl.py: {msg}", file=sys.stderr)
    sys.exit(2)


def published():
    """{(machine, collective, size): best row} over TE-CCL's epoch settings."""
    best = {}
    with open(os.path.join(TECCL, "published.csv")) as f:
        rows = csv.DictReader(line for line in f if not line.startswith("#"))
        for r in rows:
            key = (r["machine"], r["collective"], r["size"])
            r["finish_s"], r["solver_s"], r["epoch_s"] = float(r["finish_s"]), float(r["solver_s"]), float(r["epoch_s"])
            if key not in best or r["finish_s"] < best[key]["finish_s"]:
                best[key] = r
    return best


def cuts(winner):
    """Whether a schedule's name says it cuts each datum into several chunks (C=k, k pieces or chunks)."""
    return any(int(a or b) > 1 for a, b in re.findall(r"C=(\d+)|(\d+) (?:pieces|chunks)", winner))


def fmt_time(s):
    for unit, f in (("s", 1), ("ms", 1e-3), ("us", 1e-6)):
        if s >= f:
            return f"{s / f:.4g} {unit}"
    return f"{s * 1e9:.4g} ns"


def run(binary, graph, collective, sizes, timeout, jobs):
    cmd = [binary, "optimize", "--topology", f"graph:{os.path.join(TECCL, graph + '.json')}", "--collective", collective,
           "--sizes", ",".join(str(x) for x in sizes), "--timeout", str(timeout), "--jobs", str(jobs), "--json"]
    t0 = time.monotonic()
    p = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.monotonic() - t0
    if p.returncode not in (0, 3):  # 3: a gap to the bound remains
        fail(f"{' '.join(cmd)}: exit {p.returncode}: {p.stderr.strip()[:300]}")
    return json.loads(p.stdout), wall


def verify(binary, sched, chunks, sizes):
    """Per size the asynchronous time of the schedule at `chunks` chunks (it must hold)."""
    path = os.path.join(HERE, "teccl", sched)
    cmd = [binary, "verify", path] + (["-D", f"C={chunks}"] if chunks else []) + ["--size", ",".join(str(x) for x in sizes), "--json"]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        fail(f"{' '.join(cmd)}: exit {p.returncode}: {(p.stderr or p.stdout).strip()[:300]}")
    report = json.loads(p.stdout)
    if report["verdict"] != "holds":
        fail(f"{' '.join(cmd)}: the schedule does not hold")
    return [x["asynchronous_s"] for x in report["time"]["sizes"]]


def main():
    ap = argparse.ArgumentParser(prog="teccl.py", description=__doc__.split("\n\n")[0],
                                 epilog=__doc__.split("\n\n", 1)[1], formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", default=os.environ.get("COLLSCHED", os.path.join(ROOT, "build", "tools", "collsched")),
                    help="the collsched binary (default $COLLSCHED or build/tools/collsched)")
    ap.add_argument("--machines", default="ndv2x2,ndv2x4,dgx2x2", help="comma-separated, of schedules/teccl/")
    ap.add_argument("--collectives", default="allgather,alltoall")
    ap.add_argument("--sizes", default=",".join(SIZES), help="TE-CCL's sizes to compare (default all 11)")
    ap.add_argument("--timeout", type=float, default=120, help="optimize --timeout per run (s)")
    ap.add_argument("--jobs", type=int, default=1, help="optimize --jobs")
    ap.add_argument("--strict", action="store_true", help="exit 1 when collsched is slower than TE-CCL at some size")
    a = ap.parse_args()
    if not os.access(a.bin, os.X_OK):
        fail(f"no collsched binary at {a.bin} (build it or give --bin)")
    sizes = a.sizes.split(",")
    for s in sizes:
        if s not in SIZES:
            fail(f"size {s!r} is not one of TE-CCL's ({', '.join(SIZES)})")
    best = published()
    print("| instance | collective | size | TE-CCL | TE-CCL solver | collsched's graph | collsched | bound | collsched / TE-CCL "
          "| collsched run | collsched's schedule | hand-written | notes |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    slower = 0
    for machine in a.machines.split(","):
        if machine not in ALPHAS:
            fail(f"machine {machine!r} is not one of {', '.join(ALPHAS)}")
        for coll in a.collectives.split(","):
            todo = [s for s in sizes if (machine, coll, s) in best]
            if not todo:
                continue
            graph, factor = FILES.get((machine, coll), (machine, 1))
            cs = [size_bytes(x, factor) for x in todo]
            report, wall = run(a.bin, graph, coll, cs, a.timeout, a.jobs)
            winners = [(r["predicted_time_s"], r["winner"]) for r in report["sizes"]]
            by_hand = [None] * len(cs)  # the hand-written schedule's fastest chunk count, a cross-check
            if (machine, coll) in SCHEDULES:
                sched, counts = SCHEDULES[(machine, coll)]
                for k in counts:
                    times = verify(a.bin, sched, k, cs)
                    by_hand = [x if h is None else min(h, x) for h, x in zip(by_hand, times)]
            for s, r, (ours, winner), hand in zip(todo, report["sizes"], winners, by_hand):
                t = best[(machine, coll, s)]
                bound = r["time_lower_bound_s"]
                notes = ["0"] if machine == "ndv2x2" else []
                dropped = [x for x in ALPHAS[machine] if x / t["epoch_s"] <= 0.1]
                if dropped:
                    notes.append("a")
                if coll == "allgather" and cuts(winner):
                    notes.append("c")
                if machine in SWITCH_COPIES and coll == "allgather":
                    notes.append("s")
                if ours > t["finish_s"] * (1 + 1e-9):
                    notes.append("slower")
                    slower += 1
                print(f"| {machine} | {coll} | {s} | {fmt_time(t['finish_s'])} ({t['variant']}) | {t['solver_s']:.4g} s "
                      f"| {graph} | {fmt_time(ours)} | {fmt_time(bound)} | {ours / t['finish_s']:.2f} | {wall:.1f} s | {winner} "
                      f"| {fmt_time(hand) if hand is not None else ''} | {', '.join(notes)} |")
    return 1 if a.strict and slower else 0


if __name__ == "__main__":
    sys.exit(main())
