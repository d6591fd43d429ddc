#!/usr/bin/env python3
"""Writes the machine files with `collsched machine` (docs/topologies.md, "collsched machine").

    python3 scripts/machines.py [OUT_DIR]                (default schedules/machines)
    python3 scripts/machines.py --large OUT_DIR          the cluster-scale files (32 .. 128 boxes)
    python3 scripts/machines.py --one FAMILY K OUT.json  one machine: multibox, rail, h100rail,
                                                         h100nvls, h100sharp, ndv2, boxfattree, railrouters
                                                         with K boxes

The shipped files are the lines of schedules/machines/commands.txt, each a `collsched machine`
invocation (tests/tools/test_machine.cpp checks that they reproduce the files byte for byte);
the other shapes are `collsched machine FAMILY --boxes K --network ...` directly. The binary is
$COLLSCHED, else build/tools/collsched. ForestColl's example machines (fca100, fcmi250) are
bench/forestcoll_machines.py.
"""
import os
import shlex
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
# the legacy family names of --one: the arguments of `collsched machine`
ONE = {"multibox": "dgx-a100 --network switch --units gpu", "rail": "dgx-a100 --network rail --units gpu",
       "h100rail": "dgx-h100 --network rail", "h100nvls": "dgx-h100 --nvls --network rail",
       "h100sharp": "dgx-h100 --nvls --sharp --network rail",
       "ndv2": "ndv2 --network switch", "boxfattree": "dgx-a100 --network fat-tree:2 --units 8",
       "railrouters": "dgx-a100 --network rail --units gpu --switches routers"}


def fail(message, code=2):
    """One line on standard error and exit `code` (2: usage errors and a missing binary), no traceback."""
    print(f"machines.py: {message}", file=sys.stderr)
    sys.exit(code)


def machine(args, out):
    binary = os.environ.get("COLLSCHED", os.path.join(ROOT, "build", "tools", "collsched"))
    if not (os.path.isfile(binary) and os.access(binary, os.X_OK)):
        fail(f"no collsched binary at {binary}: build it (ninja -C build collsched) or set $COLLSCHED")
    run = subprocess.run([binary, "machine", *args, "-o", out])
    if run.returncode != 0:  # collsched said why on standard error
        fail(f"collsched machine {shlex.join(args)} failed (exit {run.returncode})", run.returncode if run.returncode > 0 else 1)


def one(family, k, out):
    if family not in ONE:
        fail(f"unknown family {family}: {', '.join(ONE)} (ForestColl's: bench/forestcoll_machines.py)")
    machine(shlex.split(ONE[family]) + ["--boxes", str(k)], out)


def catalog(out):
    with open(os.path.join(ROOT, "schedules", "machines", "commands.txt")) as f:
        for line in f:
            if line.strip() and not line.startswith("#"):
                name, args = line.split(None, 1)
                machine(shlex.split(args), os.path.join(out, name))


def large(out):
    os.makedirs(out, exist_ok=True)
    for k in (32, 64, 128):
        one("rail", k, os.path.join(out, f"rail{k}x8.json"))
        one("h100rail", k, os.path.join(out, f"h100rail{k}x8.json"))
        one("h100nvls", k, os.path.join(out, f"h100nvls{k}x8.json"))
    for k in (32, 64):
        one("multibox", k, os.path.join(out, f"multibox{k}x8.json"))
    one("ndv2", 64, os.path.join(out, "ndv2x64.json"))
    one("boxfattree", 128, os.path.join(out, "boxfattree128x8.json"))


if __name__ == "__main__":
    argv = sys.argv[1:]
    if {"-h", "--help"} & set(argv):
        print(__doc__.strip())
    elif argv[:1] == ["--large"]:
        large(argv[1] if len(argv) > 1 else "build/machines")
    elif argv[:1] == ["--one"]:
        if len(argv) != 4 or not argv[2].isdigit():
            fail("usage: machines.py --one FAMILY K OUT.json")
        one(argv[1], int(argv[2]), argv[3])
    else:
        catalog(argv[0] if argv else os.path.join(ROOT, "schedules", "machines"))
