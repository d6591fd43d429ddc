#!/usr/bin/env python3
"""ForestColl's own example machines as graph files, for the ForestColl comparison in
docs/performance.md (they are ForestColl's models, with its units, not machines of collsched's
families: `collsched machine` writes those).

    python3 bench/forestcoll_machines.py fca100|fcmi250 K OUT.json

fca100: ForestColl's a100_topology(K) (github liangyuRain/ForestColl, topologies.py); fcmi250:
its mi250_topology(K).
"""
import json
import sys


def write_routers(path, processors, routers, edges, note, link_types=None):
    """A graph with routers: edges [u, v, cap] or [u, v, cap, type] where u, v are processor numbers
    or router names."""
    lines = ['{"note": ' + json.dumps(note) + ',', ' "processors": %d, "routers": %d,' % (processors, routers)]
    if link_types:
        lines.append(' "link_types": ' + json.dumps(link_types, separators=(', ', ': ')) + ',')
    lines.append(' "edges": [')
    lines.append(',\n'.join('   ' + json.dumps(list(e)) for e in edges) + ']}')
    with open(path, 'w') as f:
        f.write('\n'.join(lines) + '\n')


def forestcoll_a100(k, path):
    """ForestColl's own example (its topologies.py, a100_topology): k boxes of 8 A100, each GPU on its
    box's NVSwitch (a router, 300 GB/s each way) and on its own NIC (a router, 25 GB/s), the NICs of
    even and odd local index on two InfiniBand switches (routers). Capacities in units of 25 GB/s."""
    edges, names = [], {}
    def r(key):
        if key not in names:
            names[key] = f"r1.{len(names)}"
        return names[key]
    for a in range(k):
        for b in range(8):
            g = 8 * a + b
            edges.append((g, r(("nvs", a)), 12, "nvswitch"))
            if k > 1:
                edges.append((g, r(("nic", a, b)), 1, "ib"))
    if k > 1:
        for a in range(k):
            for b in range(8):
                edges.append((r(("nic", a, b)), r(("ib", b % 2)), 1, "ib"))
    write_routers(path, 8 * k, len(names), edges,
                  f"ForestColl's a100_topology({k}) (github liangyuRain/ForestColl, topologies.py): NVSwitch and NICs as routers, "
                  "NVLink 300 GB/s = 12 units, NIC 25 GB/s = 1 unit, two IB switches (even and odd NICs)",
                  {"nvswitch": {"alpha": "0.3 us", "bandwidth": "25 GB/s", "note": "per unit (ForestColl's NVLINK_BW = 300)"},
                   "ib": {"alpha": "0.9 us", "bandwidth": "25 GB/s", "note": "ForestColl's A100_IB_BW = 25 GB/s"}})


MI250_ADJ = [
    [0, 4, 0, 0, 2, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0], [4, 0, 0, 0, 0, 1, 0, 0, 0, 1, 1, 0, 0, 0, 0, 0],
    [0, 0, 0, 4, 0, 0, 1, 0, 0, 1, 1, 0, 0, 0, 0, 0], [0, 0, 4, 0, 0, 0, 0, 2, 0, 0, 0, 1, 0, 0, 0, 0],
    [2, 0, 0, 0, 0, 4, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0], [0, 1, 0, 0, 4, 0, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0],
    [0, 0, 1, 0, 1, 1, 0, 4, 0, 0, 0, 0, 0, 0, 0, 0], [0, 0, 0, 2, 0, 1, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0],
    [1, 0, 0, 0, 0, 0, 0, 0, 0, 4, 0, 0, 2, 0, 0, 0], [0, 1, 1, 0, 0, 0, 0, 0, 4, 0, 0, 0, 0, 1, 0, 0],
    [0, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 4, 0, 0, 1, 0], [0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 4, 0, 0, 0, 0, 2],
    [0, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 0, 4, 1, 0], [0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 4, 0, 1, 1],
    [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 1, 1, 0, 4], [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2, 0, 1, 4, 0]]


def forestcoll_mi250(k, path):
    """ForestColl's own example (topologies.py, mi250_topology): k boxes of 16 MI250 dies joined by
    xGMI (MI250_ADJ_MAT links of 50 GB/s), every die on one InfiniBand switch (a router, 16 GB/s).
    Capacities in units of 2 GB/s (xGMI link 25, IB 8)."""
    edges = [(16 * a + b, 16 * a + c, 25 * MI250_ADJ[b][c], "xgmi") for a in range(k) for b in range(16) for c in range(b + 1, 16)
             if MI250_ADJ[b][c] > 0]
    if k > 1:
        edges += [(16 * a + b, "r1.0", 8, "ib") for a in range(k) for b in range(16)]
    write_routers(path, 16 * k, 1 if k > 1 else 0, edges,
                  f"ForestColl's mi250_topology({k}) (github liangyuRain/ForestColl, topologies.py): xGMI 50 GB/s per link = 25 units, "
                  "one IB switch (router) at 16 GB/s per die = 8 units",
                  {"xgmi": {"alpha": "0.6 us", "bandwidth": "2 GB/s", "note": "per unit (ForestColl's xGMI_BW = 50 per link)"},
                   "ib": {"alpha": "2.7 us", "bandwidth": "2 GB/s", "note": "per unit (ForestColl's MI250_IB_BW = 16)"}})



def main():
    if {"-h", "--help"} & set(sys.argv[1:]):
        print(__doc__.strip())
        return 0
    if len(sys.argv) != 4 or sys.argv[1] not in ("fca100", "fcmi250") or not sys.argv[2].isdigit() or int(sys.argv[2]) < 1:
        print("usage: forestcoll_machines.py fca100|fcmi250 K OUT.json", file=sys.stderr)
        return 2
    (forestcoll_a100 if sys.argv[1] == "fca100" else forestcoll_mi250)(int(sys.argv[2]), sys.argv[3])
    return 0


if __name__ == "__main__":
    sys.exit(main())
