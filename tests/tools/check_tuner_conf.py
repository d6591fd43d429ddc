#!/usr/bin/env python3
"""Reads an NCCL tuner configuration as NCCL's example tuner plugin does (plugins/tuner/example/plugin.c):
comment and blank lines skipped, every other line `collective,minBytes,maxBytes,algorithm,protocol,channels,nNodes,nRanks`
(-1 for "any" in the last three). Exit 0 when every line holds, else 1 with "error: " and the first line that does not (the hostile
campaigns read back what `collsched tune` writes)."""
import sys

COLLECTIVES = {"broadcast", "reduce", "allgather", "reducescatter", "allreduce"}
ALGORITHMS = {"tree", "ring", "collnet_direct", "collnet_chain", "nvls", "nvls_tree", "pat"}
PROTOCOLS = {"ll", "ll128", "simple"}


def main(path):
    ranges = {}
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            line = line.rstrip("\n")
            if not line.strip() or line.lstrip().startswith("#"):
                continue
            cells = line.split(",")
            if len(cells) != 8:
                return f"{path}:{n}: {len(cells)} fields, expected 8"
            coll, lo, hi, alg, proto, ch, nodes, ranks = cells
            if coll not in COLLECTIVES or alg not in ALGORITHMS or proto not in PROTOCOLS:
                return f"{path}:{n}: unknown collective, algorithm or protocol"
            lo, hi, ch, nodes, ranks = int(lo), int(hi), int(ch), int(nodes), int(ranks)
            if lo < 0 or hi < lo or not (ch == -1 or 1 <= ch <= 64) or not (nodes == -1 or nodes >= 1) or not (ranks == -1 or ranks >= nodes):
                return f"{path}:{n}: a value out of range"
            for a, b in ranges.get(coll, []):
                if lo <= b and a <= hi:
                    return f"{path}:{n}: {coll} {lo}..{hi} overlaps {a}..{b}"
            ranges.setdefault(coll, []).append((lo, hi))
    return None


if __name__ == "__main__":
    error = main(sys.argv[1])
    if error:
        print("error: " + error, file=sys.stderr)
        sys.exit(1)
