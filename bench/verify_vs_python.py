#!/usr/bin/env python3
"""collsched verify against an independent plain-Python checker, on the same JSON table, side by side.

Compiles the EBFT total exchange (schedules/bft/ebft_alltoall.sched) at each size into a JSON
table, then runs on that file, alternately and REPEAT times each:
  - `collsched verify TABLE.json` (reads the file, checks every property of docs/semantics.md),
  - `python3 schedules/found/check_bft_alltoall.py TABLE.json --queue-free` (written from the
    paper's model, shares no code with collsched: paths, capacities, no waiting, delivery),
and prints per size the median CPU seconds (user + system of the child) and wall seconds of each,
the transfers per CPU second of collsched, and the ratio Python / collsched (issue 19's target:
>= 100). Both must accept the table (exit 0), else the run stops with exit 1.

usage: bench/verify_vs_python.py [--collsched build/tools/collsched] [--sizes 256,1024] [--repeat 3] [--json]
A benchmark, not a test: the figures depend on the machine and its load (docs/performance.md).
"""
import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run(cmd):
    """Runs cmd; returns (cpu seconds of the child, wall seconds, stdout)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if p.returncode != 0:
        sys.exit(f"verify_vs_python: {' '.join(cmd)} exited {p.returncode}:\n{p.stdout}{p.stderr}")
    return cpu, wall, p.stdout


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--collsched", default=os.path.join(ROOT, "build/tools/collsched"))
    ap.add_argument("--sizes", default="256")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    checker = os.path.join(ROOT, "schedules/found/check_bft_alltoall.py")
    sched = os.path.join(ROOT, "schedules/bft/ebft_alltoall.sched")
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for n in [int(x) for x in args.sizes.split(",")]:
            table = os.path.join(tmp, f"ebft{n}.json")
            run([args.collsched, "compile", sched, "-D", f"n={n}", "-o", table])
            transfers = n * sum(h * (1 << h) for h in range(1, n.bit_length()))
            c, p = [], []
            for _ in range(args.repeat):
                c.append(run([args.collsched, "verify", table])[:2])
                p.append(run([sys.executable, checker, table, "--queue-free"])[:2])
            row = {
                "n": n,
                "transfers": transfers,
                "bytes": os.path.getsize(table),
                "collsched_cpu_s": statistics.median(x[0] for x in c),
                "collsched_wall_s": statistics.median(x[1] for x in c),
                "python_cpu_s": statistics.median(x[0] for x in p),
                "python_wall_s": statistics.median(x[1] for x in p),
            }
            row["collsched_M_per_cpu_s"] = transfers / row["collsched_cpu_s"] / 1e6
            row["ratio_cpu"] = row["python_cpu_s"] / row["collsched_cpu_s"]
            row["ratio_wall"] = row["python_wall_s"] / row["collsched_wall_s"]
            rows.append(row)
    if args.json:
        print(json.dumps(rows, indent=1))
        return
    print(f"load average {os.getloadavg()[0]:.1f}; medians of {args.repeat} runs each, alternating")
    print("| n | transfers | MB | collsched verify CPU s (wall) | M transfers/CPU s | Python checker CPU s (wall) | ratio CPU (wall) |")
    print("|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        print(f"| {r['n']} | {r['transfers']:,} | {r['bytes'] / 1e6:.0f} | {r['collsched_cpu_s']:.3f} ({r['collsched_wall_s']:.3f}) | "
              f"{r['collsched_M_per_cpu_s']:.1f} | {r['python_cpu_s']:.2f} ({r['python_wall_s']:.2f}) | "
              f"{r['ratio_cpu']:.0f}x ({r['ratio_wall']:.0f}x) |")


if __name__ == "__main__":
    main()
