#!/usr/bin/env python3
"""Independent checker for total-exchange tables on binary fat trees (ebft:N, cbft:N).

Written from the model of Dimakopoulos & Dimopoulos, "Communications in Binary Fat Trees"
(section 2), sharing no code with collsched: leaves 0..n-1, the branch between levels i-1 and i
has capacity 2^(i-1) (ebft) or 1 (cbft) in each direction, a message crosses one branch per
step along the unique tree path, and with --queue-free a message never waits in a router.
Checks: every m(s,d) follows the path from s to d, hops in increasing steps (consecutive steps
with --queue-free), at most the branch capacity of messages per branch direction and step,
every message delivered, and prints the completion step T.

usage: check_bft_alltoall.py TABLE.json [--queue-free]
"""
import collections
import json
import re
import sys

from script_args import handle_help, usage_error  # this directory: --help and usage errors




def main():
    if len(sys.argv) < 2 or any(a != "--queue-free" for a in sys.argv[2:]):
        usage_error("expected TABLE.json and at most --queue-free")
    try:
        with open(sys.argv[1]) as f:
            table = json.load(f)
    except (OSError, ValueError) as e:
        print(f"check_bft_alltoall.py: {sys.argv[1]}: {e}", file=sys.stderr)
        sys.exit(2)
    queue_free = "--queue-free" in sys.argv[2:]
    family, n = table["topology"].split(":")[0], int(table["topology"].split(":")[1])
    assert family in ("ebft", "cbft") and n & (n - 1) == 0, table["topology"]
    cap = (lambda lvl: 1 << (lvl - 1)) if family == "ebft" else (lambda lvl: 1)

    def name(level, index):
        return str(index) if level == 0 else f"r{level}.{index}"

    def path(s, d):
        up, down, a, b, lvl = [], [], s, d, 0
        while a != b:
            up.append((name(lvl, a), name(lvl + 1, a // 2), lvl + 1))
            down.append((name(lvl + 1, b // 2), name(lvl, b), lvl + 1))
            a, b, lvl = a // 2, b // 2, lvl + 1
        return up + down[::-1]

    hops = collections.defaultdict(list)
    for t in table["transfers"]:
        m = re.fullmatch(r"m\((\d+),(\d+)\)", t["msg"])
        assert m, f"not a personalized message: {t['msg']}"
        hops[(int(m[1]), int(m[2]))].append((t["step"], t["from"], t["to"]))
    load = collections.Counter()
    T = 0
    for s in range(n):
        for d in range(n):
            if s == d:
                continue
            h = sorted(hops.pop((s, d), []))
            p = path(s, d)
            assert [(a, b) for _, a, b in h] == [(a, b) for a, b, _ in p], f"m({s},{d}) does not follow its path: {h}"
            for k in range(1, len(h)):
                assert h[k][0] > h[k - 1][0], f"m({s},{d}): two hops in one step"
                if queue_free:
                    assert h[k][0] == h[k - 1][0] + 1, f"m({s},{d}) waits in a router: {h}"
            assert h[0][0] >= 1
            for (step, a, b), (_, _, lvl) in zip(h, p):
                load[(step, a, b, lvl)] += 1
            T = max(T, h[-1][0])
    assert not hops, f"transfers of messages that are not part of the total exchange: {list(hops)[:3]}"
    for (step, a, b, lvl), c in load.items():
        assert c <= cap(lvl), f"step {step}: {c} messages on {a}->{b}, capacity {cap(lvl)}"
    print(f"OK {table['topology']}: total exchange of {n * (n - 1)} messages on their paths, "
          f"capacities hold{', queue-free' if queue_free else ''}, T = {T}")


if __name__ == "__main__":
    handle_help()
    main()
