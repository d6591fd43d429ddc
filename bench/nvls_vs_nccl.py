#!/usr/bin/env python3
"""Allreduce on machines whose switch reduces and multicasts (NVLS; issue 44), against NCCL's NVLS
and NVLS_TREE: the tables of docs/time.md, "NVLS against NCCL".

For every machine one `collsched optimize --topology graph:M --collective allreduce --sizes S --json`
(every candidate verified, timed by the asynchronous model, docs/time.md). Per size it prints
collsched's fastest and its time; NCCL's NVLS (one box) or NVLS_TREE (several) generated for the
machine (`nccl nvls`, `nccl nvls_tree`, the best of their piece counts) and NCCL's own model of it
(below); NCCL's ring generated for the machine; the best of NCCL's own model over ring, tree and
PAT (`nccl_model` in the JSON); the proved lower bound and the gap to it.

NCCL's model of NVLS and NVLS_TREE is collsched's `nccl::nccl_nvls_model` (verifier/constructions/nccl/
nccl.hpp; `nccl_nvls_model` in optimize's JSON): src/graph/tuning.cc with the NVLS graph of
search.cc, 8 channels at bwIntra 40 GB/s on 8 H100s a box; busBw 476 GB/s on one box, 8 x 57.7
on 2 boxes, 8 x 45.5 on more (perChMaxNVLSTreeBw); latency 25 us, NVLS_TREE + 2 log2(boxes) x
20.9 us (docs/time.md, "NVLS against NCCL").

Usage: bench/nvls_vs_nccl.py [--bin build/tools/collsched] [--machines dgx_h100_nvls,h100nvls2x8,h100nvls4x8]
                             [--sizes 64K,1M,16M,256M,1G] [--timeout 300] [--json-dir DIR]
Exit 0, 1 when a run fails, 2 on usage errors.
"""
import argparse
import json
import os
import subprocess
import sys


def fmt_t(s):
    if s is None:
        return "-"
    if s < 1e-3:
        return f"{s * 1e6:.3g} us"
    return f"{s * 1e3:.3g} ms"


def fmt_b(b):
    for unit, k in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if b >= 1 << k:
            return f"{b / (1 << k):g} {unit}"
    return f"{b:g} B"


def optimize_json(a, here, m):
    """`collsched optimize` on schedules/machines/M.json for allreduce at a.sizes, its JSON (written to a.json_dir when
    given), or None with the reason on stderr when it fails."""
    path = os.path.join(here, "schedules/machines", m + ".json")
    cmd = [a.bin, "optimize", "--topology", "graph:" + path, "--collective", "allreduce", "--sizes", a.sizes, "--timeout", a.timeout, "--json"]
    r = subprocess.run(cmd, capture_output=True, text=True, cwd=here)
    if r.returncode not in (0, 3):
        print(f"{m}: optimize exited {r.returncode}: {r.stderr.strip()}", file=sys.stderr)
        return None
    if a.json_dir:
        os.makedirs(a.json_dir, exist_ok=True)
        with open(os.path.join(a.json_dir, m + ".json"), "w") as f:
            f.write(r.stdout)
    return json.loads(r.stdout)


def parse_args(machines, timeout):
    """The options both tables take (this one and bench/sharp_vs_nccl.py): (args, repository root),
    or None on a bad option."""
    ap = argparse.ArgumentParser(add_help=False)
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    ap.add_argument("--bin", default=os.environ.get("COLLSCHED", os.path.join(here, "build/tools/collsched")))
    ap.add_argument("--machines", default=machines)
    ap.add_argument("--sizes", default="64K,1M,16M,256M,1G")
    ap.add_argument("--timeout", default=timeout)
    ap.add_argument("--json-dir", default=None)
    try:
        return ap.parse_args(), here
    except SystemExit:
        return None


def main():
    if len(sys.argv) == 2 and sys.argv[1] in ("-h", "--help"):
        print(__doc__.strip())
        return 0
    parsed = parse_args("dgx_h100_nvls,h100nvls2x8,h100nvls4x8", "300")
    if parsed is None:
        return 2
    a, here = parsed
    failed = False
    for m in a.machines.split(","):
        path = os.path.join(here, "schedules/machines", m + ".json")
        j = optimize_json(a, here, m)
        if j is None:
            failed = True
            continue
        with open(path) as f:
            routers = json.load(f).get("routers", 1)
        nodes = routers  # one NVSwitch router per box in these files
        gen = "nccl nvls_tree" if nodes > 1 else "nccl nvls"
        print(f"\n{m} ({j['processors']} GPUs, {nodes} box{'es' if nodes > 1 else ''}): allreduce, asynchronous time\n")
        print(f"| size | collsched's fastest | time | NCCL's {'NVLS_TREE' if nodes > 1 else 'NVLS'} generated | "
              f"NCCL's model of it | NCCL's ring generated | NCCL's model, best of ring/tree | bound | gap |")
        print("|---|---|---|---|---|---|---|---|---|")
        for i, s in enumerate(j["sizes"]):
            size = s["size_bytes"]
            timed = j["candidates"] + j.get("unchecked", [])  # the unchecked: slower than a checked winner
            gens = [c["seconds"][i] for c in timed if c["name"].startswith(gen + ",")]
            ring = [c["seconds"][i] for c in timed if c["name"] == "nccl ring"]
            nv = s.get("nccl_nvls_model")
            model = nv["seconds"] if nv else None
            nm = s.get("nccl_model")
            nm_text = f"{fmt_t(nm['seconds'])} ({nm['algorithm']} {nm['protocol']})" if nm else "-"
            print(f"| {fmt_b(size)} | {s['winner']} | {fmt_t(s['predicted_time_s'])} | {fmt_t(min(gens) if gens else None)} | "
                  f"{fmt_t(model)} | {fmt_t(ring[0] if ring else None)} | {nm_text} | {fmt_t(s['time_lower_bound_s'])} | "
                  f"{s['gap_percent']:.1f} % |")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
