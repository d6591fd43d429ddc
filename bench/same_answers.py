#!/usr/bin/env python3
"""Whether a change to `optimize --size` changed an answer (issue 43, docs/performance.md).

    bench/same_answers.py run BIN DIR [--machines a,b] [--collectives x,y] [--sizes S] [--jobs N]
                                      [--executor E] [--timeout T]
    bench/same_answers.py diff BEFORE_DIR AFTER_DIR [--tolerance 0.001]

`run` writes DIR/<machine>.<collective>.json, the `--json` of `BIN optimize --topology
graph:schedules/machines/<machine>.json --collective <collective> --sizes S` (default: the five
machines and four collectives below at 64K,1M,16M,256M,1G; `--executor` and `--timeout` passed on
when given), with the CPU seconds of each run on stderr. `diff` compares two such directories: every key but `candidates` and `notes` must be the
same value, except each crossover's `size_bytes`, which may move by a factor of at most
1 + tolerance (the crossover search promises a bracket of 0.1 %: docs/time.md). Exit 0 when every
pair matches, 1 otherwise (each difference printed), 2 for bad arguments or a missing file.
"""
import argparse
import json
import os
import resource
import subprocess
import sys

MACHINES = ["h100rail2x8", "h100rail4x8", "multibox2x8", "dgx1", "ndv2x4"]
COLLECTIVES = ["allreduce", "allgather", "reduce_scatter", "alltoall"]
HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run(args):
    os.makedirs(args.dir, exist_ok=True)
    for m in args.machines.split(","):
        for c in args.collectives.split(","):
            cmd = [args.bin, "optimize", "--topology", f"graph:{HERE}/schedules/machines/{m}.json", "--collective", c,
                   "--sizes", args.sizes, "--json"]
            if args.jobs:
                cmd += ["--jobs", str(args.jobs)]
            if args.executor:
                cmd += ["--executor", args.executor]
            if args.timeout is not None:
                cmd += ["--timeout", str(args.timeout)]
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            p = subprocess.run(cmd, capture_output=True, text=True)
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
            if p.returncode not in (0, 3):
                print(f"{m} {c}: exit {p.returncode}: {p.stderr.strip()}", file=sys.stderr)
                return 1
            with open(os.path.join(args.dir, f"{m}.{c}.json"), "w") as f:
                f.write(p.stdout)
            print(f"{m} {c}: {cpu:.2f} CPU s", file=sys.stderr)
    return 0


def differences(a, b, tol, path=""):
    if isinstance(a, dict) and isinstance(b, dict):
        if list(a) != list(b):
            return [f"{path}: keys {list(a)} != {list(b)}"]
        out = []
        for k in a:
            out += differences(a[k], b[k], tol, f"{path}.{k}")
        return out
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return [f"{path}: {len(a)} entries != {len(b)}"]
        out = []
        for i, (x, y) in enumerate(zip(a, b)):
            out += differences(x, y, tol, f"{path}[{i}]")
        return out
    if path.startswith(".crossovers[") and path.endswith(".size_bytes"):
        ok = isinstance(a, (int, float)) and isinstance(b, (int, float)) and a > 0 and b > 0 and max(a / b, b / a) <= 1 + tol
        return [] if ok else [f"{path}: {a!r} != {b!r} (beyond a factor 1 + {tol})"]
    # same type and value: a double printed the same way round-trips to the same float
    return [] if type(a) is type(b) and a == b else [f"{path}: {a!r} != {b!r}"]


def diff(args):
    names = sorted(f for f in os.listdir(args.before) if f.endswith(".json"))
    if not names:
        print(f"same_answers.py: no .json in {args.before}", file=sys.stderr)
        return 2
    bad = 0
    moved = 0
    for n in names:
        try:
            with open(os.path.join(args.before, n)) as f:
                a = json.load(f)
            with open(os.path.join(args.after, n)) as f:
                b = json.load(f)
        except (OSError, ValueError) as e:
            print(f"same_answers.py: {e}", file=sys.stderr)
            return 2
        for x in (a, b):
            x.pop("candidates", None)
            x.pop("notes", None)
        ds = differences(a, b, args.tolerance)
        moved += sum(1 for x, y in zip(a.get("crossovers", []), b.get("crossovers", [])) if x.get("size_bytes") != y.get("size_bytes"))
        for d in ds:
            print(f"{n}{d}")
        bad += bool(ds)
    print(f"{len(names) - bad} of {len(names)} the same ({moved} crossover{'' if moved == 1 else 's'} moved within a factor 1 + {args.tolerance})")
    return 1 if bad else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="what", required=True)
    r = sub.add_parser("run")
    r.add_argument("bin")
    r.add_argument("dir")
    r.add_argument("--machines", default=",".join(MACHINES))
    r.add_argument("--collectives", default=",".join(COLLECTIVES))
    r.add_argument("--sizes", default="64K,1M,16M,256M,1G")
    r.add_argument("--jobs", type=int, default=0, help="passed as --jobs when given")
    r.add_argument("--executor", default="", help="passed as --executor when given")
    r.add_argument("--timeout", type=float, default=None, help="passed as --timeout when given")
    d = sub.add_parser("diff")
    d.add_argument("before")
    d.add_argument("after")
    d.add_argument("--tolerance", type=float, default=0.001)
    args = ap.parse_args()
    return run(args) if args.what == "run" else diff(args)


if __name__ == "__main__":
    sys.exit(main())
