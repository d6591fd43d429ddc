#!/usr/bin/env python3
"""Writes omega-N.json, the omega network of N inputs as a collsched graph file.

Processors 0..N-1 are the inputs, N..2N-1 the outputs; the routers are the 2x2 switches,
log2(N) stages of N/2 each: switch j of stage s (s = 1..L) is router r1.((s-1)*N/2 + j). Before
every stage the wires are perfectly shuffled (wire w goes to position rotl(w), the L-bit rotate
left), so input i enters switch rotl(i)/2 of stage 1, wire w leaving a switch of stage s enters
switch rotl(w)/2 of stage s+1, and wire w leaving stage L is output N + w. Every link has capacity
1. The path from an input to an output is unique and crosses every stage once, so the graph's
shortest-path routing is the omega network's destination-tag routing.

    python3 make_omega.py 4 8 16 32 64 128 256 512
"""
import json
import sys


def omega(n):
    L = n.bit_length() - 1
    assert n == 1 << L and L >= 1, "N must be a power of two, at least 2"
    rotl = lambda w: ((w << 1) | (w >> (L - 1))) & (n - 1) if L > 1 else w
    switch = lambda s, j: f"r1.{(s - 1) * (n // 2) + j}"
    edges = [[i, switch(1, rotl(i) // 2)] for i in range(n)]
    for s in range(1, L):
        for w in range(n):
            edges.append([switch(s, w // 2), switch(s + 1, rotl(w) // 2)])
    for w in range(n):
        edges.append([switch(L, w // 2), n + w])
    return {"processors": 2 * n, "routers": L * (n // 2), "edges": edges}


for arg in sys.argv[1:]:
    n = int(arg)
    with open(f"omega-{n}.json", "w") as f:
        g = omega(n)
        f.write('{"processors": %d, "routers": %d,\n "edges": [\n' % (g["processors"], g["routers"]))
        f.write(",\n".join("  " + json.dumps(e) for e in g["edges"]))
        f.write("\n ]}\n")
