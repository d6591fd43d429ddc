#!/usr/bin/env python3
"""Writes the graph files of the machines with link groups (docs/topologies.md, "Machines").

    python3 scripts/machines.py [OUT_DIR]     (default schedules/machines)

Each machine is a processor-only graph whose channel capacities count NVLinks (or normalized
link bandwidth) and whose link groups model switches as SCCL does (msccl-tools,
msccl/topologies/generic.py hub_and_spoke and distributed.py distributed_hub_and_spoke): a GPU
on an NVSwitch may send at most k chunks per step in all and receive at most k in all, which
is one group of its outgoing and one of its incoming channels, each of capacity k.
"""
import json
import os
import sys


def write(path, processors, edges, groups, note):
    lines = ['{"note": ' + json.dumps(note) + ',', ' "processors": %d, "routers": 0,' % processors, ' "edges": [']
    lines.append(',\n'.join('   [%d, %d, %d]' % e for e in edges) + '],')
    lines.append(' "groups": [')
    lines.append(',\n'.join('   ' + json.dumps(g, separators=(', ', ': ')) for g in groups) + ']}')
    with open(path, 'w') as f:
        f.write('\n'.join(lines) + '\n')


def hub_and_spoke(n, cap, groups_cap, note, path):
    """n GPUs on one NVSwitch: every pair linked (capacity cap), per GPU an out and an in group."""
    edges = [(u, v, cap) for u in range(n) for v in range(u + 1, n)]
    groups = []
    for g in range(n):
        groups.append({"name": f"gpu{g}.out", "cap": groups_cap, "out_of": g})
        groups.append({"name": f"gpu{g}.in", "cap": groups_cap, "into": g})
    write(path, n, edges, groups, note)


def multibox(k, per_box, nic, note, path):
    """k boxes of per_box GPUs on an NVSwitch (capacity 1 per GPU and step in and out), every GPU
    with a NIC of capacity `nic` into a non-blocking switch between the boxes: every pair of GPUs
    in different boxes is linked, and per GPU one group of its links to other boxes each way."""
    n = k * per_box
    box = lambda x: x // per_box
    edges = [(u, v, 1) for u in range(n) for v in range(u + 1, n)]
    groups = []
    for g in range(n):
        local = [[g, o] for o in range(n) if o != g and box(o) == box(g)]
        remote = [[g, o] for o in range(n) if box(o) != box(g)]
        groups.append({"name": f"gpu{g}.out", "cap": 1, "channels": local})
        groups.append({"name": f"gpu{g}.in", "cap": 1, "channels": [[o, g] for _, o in local]})
        groups.append({"name": f"nic{g}.out", "cap": nic, "channels": remote})
        groups.append({"name": f"nic{g}.in", "cap": nic, "channels": [[o, g] for _, o in remote]})
    write(path, n, edges, groups, note)


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), '..', 'schedules', 'machines')
    hub_and_spoke(16, 1, 1, "DGX-2: 16 GPUs on NVSwitch, SCCL's DGX2 = hub_and_spoke(16) (msccl-tools "
                  "msccl/cli/known_topologies.py): per GPU at most 1 chunk out and 1 in per step and round",
                  os.path.join(out, 'dgx2.json'))
    hub_and_spoke(8, 1, 1, "8 GPUs on NVSwitch (DGX A100/H100 style), normalized: per GPU at most 1 chunk out and "
                  "1 in per step and round (hub_and_spoke(8))", os.path.join(out, 'nvswitch8.json'))
    hub_and_spoke(8, 12, 12, "DGX A100: 8 GPUs, 12 NVLinks each into 6 NVSwitches; SCCL's dgx_a100() gives every "
                  "pair 12 links and no switch, here each GPU's 12 links are shared: groups of capacity 12",
                  os.path.join(out, 'dgx_a100.json'))
    for k in (2, 4):
        multibox(k, 8, 1, f"{k} boxes of 8 GPUs on NVSwitch (per GPU 1 chunk out and in per step inside its box), "
                 "each GPU with a NIC (1 chunk out and in per step) into a non-blocking switch between boxes",
                 os.path.join(out, f'multibox{k}x8.json'))


if __name__ == "__main__":
    if {"-h", "--help"} & set(sys.argv[1:]):
        print(__doc__.strip())
        sys.exit(0)
    main()
