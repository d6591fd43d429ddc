#!/usr/bin/env python3
"""Writes the graph files of the machines with link groups (docs/topologies.md, "Machines").

    python3 scripts/machines.py [OUT_DIR]                (default schedules/machines)
    python3 scripts/machines.py --large OUT_DIR          the cluster-scale files (32 .. 128 boxes)
    python3 scripts/machines.py --one FAMILY K OUT.json  one machine: multibox, rail, h100rail,
                                                         railrouters, ndv2, boxfattree with K boxes; fca100,
                                                         fcmi250: ForestColl's own examples

Each machine is a processor-only graph whose channel capacities count NVLinks (or normalized
link bandwidth) and whose link groups model switches as SCCL does (msccl-tools,
msccl/topologies/generic.py hub_and_spoke and distributed.py distributed_hub_and_spoke): a GPU
on an NVSwitch may send at most k chunks per step in all and receive at most k in all, which
is one group of its outgoing and one of its incoming channels, each of capacity k.
"""
import json
import os
import sys


# Link speeds (docs/time.md; figures and sources in docs/topologies.md, "Link speeds"): a latency
# and a bandwidth per unit of capacity, each direction. Latencies are NCCL's per-hop figures for
# its LL protocol (src/graph/tuning.cc, hwLatencies: NVLink 0.6 us, network 2.7 us); bandwidths
# are the vendors' per-direction figures.
NVLINK3_A100 = {"alpha": "0.6 us", "bandwidth": "300 GB/s",
                "note": "A100 through NVSwitch: 12 NVLink 3 links x 25 GB/s each way per GPU"}
NVLINK3_LINK = {"alpha": "0.6 us", "bandwidth": "25 GB/s", "note": "one NVLink 3 link: 25 GB/s each way"}
NVLINK2_DGX2 = {"alpha": "0.6 us", "bandwidth": "150 GB/s",
                "note": "V100 through NVSwitch (DGX-2): 6 NVLink 2 links x 25 GB/s each way per GPU"}
IB_HDR = {"alpha": "2.7 us", "bandwidth": "200 Gbit/s", "note": "InfiniBand HDR (ConnectX-6), one NIC per GPU"}
NVLINK4_LINK = {"alpha": "0.6 us", "bandwidth": "25 GB/s", "note": "one NVLink 4 link (H100: 18 links, 900 GB/s both ways)"}
IB_NDR = {"alpha": "2.7 us", "bandwidth": "400 Gbit/s", "note": "InfiniBand NDR (ConnectX-7), one NIC per GPU"}
NVLINK2_LINK = {"alpha": "0.6 us", "bandwidth": "25 GB/s", "note": "one NVLink 2 link (V100: 6 links, 300 GB/s both ways)"}
PCIE3 = {"alpha": "0.5 us", "bandwidth": "15.75 GB/s",
         "note": "PCIe 3.0 x16 each way, a hop to the box's NIC (NCCL's PCI hop 1 us over the two hops)"}
IB_EDR_HOP = {"alpha": "1.35 us", "bandwidth": "100 Gbit/s",
              "note": "InfiniBand EDR, a hop NIC to switch (NCCL's network hop 2.7 us over the two hops)"}
NVSWITCH_HOP = {"alpha": "0.3 us", "bandwidth": "37.5 GB/s",
                "note": "GPU to its box's NVSwitch, per unit of 8 (300 GB/s per GPU; NCCL's NVLink hop 0.6 us over the two hops)"}
IB_HDR_HOP = {"alpha": "0.9 us", "bandwidth": "200 Gbit/s",
              "note": "InfiniBand HDR, a hop GPU NIC to leaf or leaf to spine (assumed: NCCL's 2.7 us over three hops)"}


def write(path, processors, edges, groups, note, link_types=None):
    lines = ['{"note": ' + json.dumps(note) + ',', ' "processors": %d, "routers": 0,' % processors]
    if link_types:
        lines.append(' "link_types": ' + json.dumps(link_types, separators=(', ', ': ')) + ',')
    lines.append(' "edges": [')
    lines.append(',\n'.join(('   [%d, %d, %d, "%s"]' if len(e) == 4 else '   [%d, %d, %d]') % tuple(e) for e in edges) + '],')
    lines.append(' "groups": [')
    lines.append(',\n'.join('   ' + json.dumps(g, separators=(', ', ': ')) for g in groups) + ']}')
    with open(path, 'w') as f:
        f.write('\n'.join(lines) + '\n')


def hub_and_spoke(n, cap, groups_cap, note, path, link):
    """n GPUs on one NVSwitch: every pair linked (capacity cap), per GPU an out and an in group;
    `link` the speed of one unit of capacity (channels and groups alike)."""
    edges = [(u, v, cap, "nvlink") for u in range(n) for v in range(u + 1, n)]
    groups = []
    for g in range(n):
        groups.append({"name": f"gpu{g}.out", "cap": groups_cap, "out_of": g, "bandwidth": link["bandwidth"]})
        groups.append({"name": f"gpu{g}.in", "cap": groups_cap, "into": g, "bandwidth": link["bandwidth"]})
    write(path, n, edges, groups, note, {"nvlink": link})


def multibox(k, per_box, nic, note, path):
    """k boxes of per_box GPUs on an NVSwitch (capacity 1 per GPU and step in and out), every GPU
    with a NIC of capacity `nic` into a non-blocking switch between the boxes: every pair of GPUs
    in different boxes is linked, and per GPU one group of its links to other boxes each way."""
    n = k * per_box
    box = lambda x: x // per_box
    edges = [(u, v, 1, "nvlink" if box(u) == box(v) else "ib") for u in range(n) for v in range(u + 1, n)]
    nv, ib = NVLINK3_A100["bandwidth"], IB_HDR["bandwidth"]
    groups = []
    for g in range(n):
        local = [[g, o] for o in range(n) if o != g and box(o) == box(g)]
        remote = [[g, o] for o in range(n) if box(o) != box(g)]
        groups.append({"name": f"gpu{g}.out", "cap": 1, "channels": local, "bandwidth": nv})
        groups.append({"name": f"gpu{g}.in", "cap": 1, "channels": [[o, g] for _, o in local], "bandwidth": nv})
        groups.append({"name": f"nic{g}.out", "cap": nic, "channels": remote, "bandwidth": ib})
        groups.append({"name": f"nic{g}.in", "cap": nic, "channels": [[o, g] for _, o in remote], "bandwidth": ib})
    write(path, n, edges, groups, note, {"nvlink": NVLINK3_A100, "ib": IB_HDR})


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


def rail(k, per_box, nv, nic, note, path, nv_link=NVLINK3_A100, nic_link=IB_HDR):
    """Rail-optimized: k boxes of per_box GPUs on an NVSwitch (every local pair linked with capacity
    nv, per GPU an out and an in group of capacity nv over its local channels); GPU i of every box
    on rail switch i (every pair of GPUs with the same local index in different boxes linked with
    capacity nic, per GPU an out and an in group of capacity nic over its rail channels)."""
    n = k * per_box
    box, local = (lambda x: x // per_box), (lambda x: x % per_box)
    edges = [(u, v, nv, "nvlink") for u in range(n) for v in range(u + 1, n) if box(u) == box(v)]
    edges += [(u, v, nic, "ib") for u in range(n) for v in range(u + 1, n) if box(u) != box(v) and local(u) == local(v)]
    nvb, ibb = nv_link["bandwidth"], nic_link["bandwidth"]
    groups = []
    for g in range(n):
        mates = [o for o in range(n) if o != g and box(o) == box(g)]
        rail_peers = [o for o in range(n) if box(o) != box(g) and local(o) == local(g)]
        groups.append({"name": f"gpu{g}.out", "cap": nv, "channels": [[g, o] for o in mates], "bandwidth": nvb})
        groups.append({"name": f"gpu{g}.in", "cap": nv, "channels": [[o, g] for o in mates], "bandwidth": nvb})
        if rail_peers:
            groups.append({"name": f"nic{g}.out", "cap": nic, "channels": [[g, o] for o in rail_peers], "bandwidth": ibb})
            groups.append({"name": f"nic{g}.in", "cap": nic, "channels": [[o, g] for o in rail_peers], "bandwidth": ibb})
    write(path, n, edges, groups, note, {"nvlink": nv_link, "ib": nic_link})


def ndv2(k, path):
    """Azure NDv2: k boxes of 8 V100 in the DGX-1 hybrid cube-mesh (NVLink counts as capacities),
    one NIC per box: a router per box joined to each of its GPUs (PCIe, capacity 1) and to one
    InfiniBand switch (capacity 1)."""
    dgx1 = [(0, 1, 2), (0, 2, 1), (0, 3, 1), (0, 4, 2), (1, 2, 1), (1, 3, 2), (1, 5, 1), (2, 3, 2), (2, 6, 2), (3, 7, 1),
            (4, 5, 2), (4, 6, 1), (4, 7, 1), (5, 6, 1), (5, 7, 2), (6, 7, 2)]
    edges = [(8 * b + u, 8 * b + v, c, "nvlink") for b in range(k) for u, v, c in dgx1]
    edges += [(8 * b + g, f"r1.{b}", 1, "pcie") for b in range(k) for g in range(8)]
    edges += [(f"r1.{b}", f"r1.{k}", 1, "ib") for b in range(k)]
    write_routers(path, 8 * k, k + 1, edges,
                  f"Azure NDv2 x {k}: 8 V100 per box in the DGX-1 hybrid cube-mesh, one 100 Gb InfiniBand NIC per box "
                  f"(router r1.b, joined to its GPUs and to the switch r1.{k}); capacities in NVLink units",
                  {"nvlink": NVLINK2_LINK, "pcie": PCIE3, "ib": IB_EDR_HOP})


def boxfattree(k, per_leaf, uplink, path):
    """Two-level fat tree of boxes: k boxes of 8 GPUs on NVSwitch (a router per box, capacity 8 to
    each GPU), each GPU's NIC (capacity 1) on its leaf switch (per_leaf boxes per leaf), every
    leaf joined to one spine with capacity `uplink`."""
    n, leaves = 8 * k, (k + per_leaf - 1) // per_leaf
    edges = [(g, f"r1.{g // 8}", 8, "nvswitch") for g in range(n)]                 # NVSwitch per box
    edges += [(g, f"r1.{k + g // (8 * per_leaf)}", 1, "ib") for g in range(n)]     # NIC to its leaf
    edges += [(f"r1.{k + l}", f"r1.{k + leaves}", uplink, "ib") for l in range(leaves)]
    write_routers(path, n, k + leaves + 1, edges,
                  f"{k} boxes of 8 GPUs (NVSwitch as router r1.b, capacity 8 per GPU), one NIC per GPU (capacity 1) into "
                  f"{leaves} leaf switches of {per_leaf} boxes, each leaf joined to one spine with capacity {uplink}",
                  {"nvswitch": NVSWITCH_HOP, "ib": IB_HDR_HOP})


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


def railrouters(k, path):
    """Rail-optimized with the switches as routers, as the network is wired: k boxes of 8 GPUs,
    each box's NVSwitch a router r1.(8 + b) (a GPU's channel to it and back of capacity 1 at 300 GB/s),
    GPU i of every box on rail switch r1.i (a router; the GPU's NIC channel to it and back of
    capacity 1 at 200 Gb/s). Latencies: NCCL's NVLink 0.6 us and network 2.7 us, halved per hop
    (a transfer between GPUs crosses two channels)."""
    edges = [(8 * b + g, f"r1.{8 + b}", 1, "nvswitch") for b in range(k) for g in range(8)]
    edges += [(8 * b + g, f"r1.{g}", 1, "ib") for b in range(k) for g in range(8)]
    write_routers(path, 8 * k, 8 + k, edges,
                  f"{k} boxes of 8 GPUs, switches as routers: NVSwitch of box b is r1.(8+b), GPU i of every box on rail switch r1.i",
                  {"nvswitch": {"alpha": "0.3 us", "bandwidth": "300 GB/s", "note": "A100 to its NVSwitch (NCCL's NVLink hop 0.6 us over two hops)"},
                   "ib": {"alpha": "1.35 us", "bandwidth": "200 Gbit/s", "note": "HDR NIC to its rail switch (NCCL's network hop 2.7 us over two hops)"}})


def one(family, k, path):
    if family == "multibox":
        multibox(k, 8, 1, f"{k} boxes of 8 GPUs on NVSwitch (1 chunk per GPU and step each way), a NIC per GPU (1 each way) "
                 "into one non-blocking switch", path)
    elif family == "rail":
        rail(k, 8, 1, 1, f"{k} boxes of 8 GPUs on NVSwitch (1 chunk per GPU and step each way), rail-optimized: GPU i of "
             "every box on rail switch i (a NIC per GPU, 1 each way)", path)
    elif family == "h100rail":
        rail(k, 8, 18, 1, f"{k} DGX H100 style boxes: 8 GPUs on NVSwitch (18 NVLinks of 50 GB/s, 900 GB/s per GPU: 18 units), "
             "8 NICs of 400 Gb/s (50 GB/s: 1 unit) rail-optimized, GPU i of every box on rail switch i", path,
             NVLINK4_LINK, IB_NDR)
    elif family == "ndv2":
        ndv2(k, path)
    elif family == "boxfattree":
        boxfattree(k, 4, 16, path)
    elif family == "railrouters":
        railrouters(k, path)
    elif family == "fca100":
        forestcoll_a100(k, path)
    elif family == "fcmi250":
        forestcoll_mi250(k, path)
    else:
        raise SystemExit(f"unknown family {family}: multibox, rail, h100rail, railrouters, ndv2, boxfattree, fca100, fcmi250")


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), '..', 'schedules', 'machines')
    hub_and_spoke(16, 1, 1, "DGX-2: 16 GPUs on NVSwitch, SCCL's DGX2 = hub_and_spoke(16) (msccl-tools "
                  "msccl/cli/known_topologies.py): per GPU at most 1 chunk out and 1 in per step and round",
                  os.path.join(out, 'dgx2.json'), NVLINK2_DGX2)
    hub_and_spoke(8, 1, 1, "8 GPUs on NVSwitch (DGX A100/H100 style), normalized: per GPU at most 1 chunk out and "
                  "1 in per step and round (hub_and_spoke(8))", os.path.join(out, 'nvswitch8.json'), NVLINK3_A100)
    hub_and_spoke(8, 12, 12, "DGX A100: 8 GPUs, 12 NVLinks each into 6 NVSwitches; SCCL's dgx_a100() gives every "
                  "pair 12 links and no switch, here each GPU's 12 links are shared: groups of capacity 12",
                  os.path.join(out, 'dgx_a100.json'), NVLINK3_LINK)
    for k in (2, 4):
        multibox(k, 8, 1, f"{k} boxes of 8 GPUs on NVSwitch (per GPU 1 chunk out and in per step inside its box), "
                 "each GPU with a NIC (1 chunk out and in per step) into a non-blocking switch between boxes",
                 os.path.join(out, f'multibox{k}x8.json'))
    # Cluster families (issue 27): small members here, 32 .. 128 boxes with --large.
    for k in (2, 4, 8, 16):
        one("rail", k, os.path.join(out, f'rail{k}x8.json'))
        one("h100rail", k, os.path.join(out, f'h100rail{k}x8.json'))
    for k in (8, 16):
        one("multibox", k, os.path.join(out, f'multibox{k}x8.json'))
    for k in (2, 4):
        one("ndv2", k, os.path.join(out, f'ndv2x{k}.json'))
    one("boxfattree", 8, os.path.join(out, 'boxfattree8x8.json'))


def large(out):
    os.makedirs(out, exist_ok=True)
    for k in (32, 64, 128):
        one("rail", k, os.path.join(out, f'rail{k}x8.json'))
        one("h100rail", k, os.path.join(out, f'h100rail{k}x8.json'))
    for k in (32, 64):
        one("multibox", k, os.path.join(out, f'multibox{k}x8.json'))
    one("ndv2", 64, os.path.join(out, 'ndv2x64.json'))
    one("boxfattree", 128, os.path.join(out, 'boxfattree128x8.json'))


if __name__ == "__main__":
    if {"-h", "--help"} & set(sys.argv[1:]):
        print(__doc__.strip())
        sys.exit(0)
    if len(sys.argv) >= 2 and sys.argv[1] == "--large":
        large(sys.argv[2] if len(sys.argv) > 2 else "build/machines")
    elif len(sys.argv) >= 2 and sys.argv[1] == "--one":
        one(sys.argv[2], int(sys.argv[3]), sys.argv[4])
    else:
        main()
