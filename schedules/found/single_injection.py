#!/usr/bin/env python3
"""Single-injection multinode broadcast on the CBFT without queues (docs/findings.md, section 3).

Plain Python, no collsched code. Under inject=once, queues=none, replicate=yes on cbft:n, a
schedule is fixed by the injection steps f(s): b(s) climbs to the root one branch per step from
step f(s) and every router copies it, in the step after it arrives, on every channel away from s.
So it crosses the up-branch above s's level-j subtree in step f(s) + j, and the down-branch into
a level-j subtree S' (s outside, lowest common ancestor at level h) in step f(s) + 2h - j - 1;
it is complete in step max f + 2 log n - 1. A choice of f is valid iff, for every branch, those
steps are distinct. `search N MAXF` looks for a valid f with f <= MAXF by min-conflicts local
search (finding none proves nothing); `table N F` prints the collsched JSON table of f.

`exhaust N MAXF` decides whether a valid f with f <= MAXF exists by exhaustive depth-first
search, so "none" proves T = MAXF + 2 log n - 1 impossible under this reduction. It fixes f(s) in
the order of s, keeps per branch the set of steps taken, and cuts two symmetries that map valid
f to valid f: a shift of all f (so min f = 1) and the swap of the two subtrees of a router (so at
every router the left subtree's least f is at most the right one's; orienting the routers from
the root down reaches this form without changing any higher router's subtrees as sets).
`least N` runs it for MAXF = 1, 2, ... and prints the first T that has an f, with the f.

usage: single_injection.py search N MAXF [SEEDS]
       single_injection.py exhaust N MAXF
       single_injection.py least N
       single_injection.py table N '[f(0), ..., f(n-1)]'
"""
import json
import random
import sys

from script_args import handle_help, int_arg, usage_error  # this directory: --help and usage errors


def constraints(n):
    L=n.bit_length()-1
    groups=[]  # each group: list of (s, offset) whose f(s)+offset must be distinct
    # up-channels: halves (level L-1 subtrees) -> f distinct within each half (covers all lower levels)
    for j in range(L):
        for root in range(n>>j):
            S=set(range(root<<j,(root+1)<<j))
            # up-channel above S: s in S, step f(s)+j (only if s's datum must leave S: always, j<L)
            groups.append([(s,j) for s in S])
            # down-channel into S: s not in S, step f(s)+2h-j-1 with h = LCA level
            g=[]
            for s in range(n):
                if s in S: continue
                h=((s)^(root<<j)).bit_length()
                g.append((s,2*h-j-1))
            groups.append(g)
    return groups
def search(n,maxf,seed=1,moves=200000):
    rng=random.Random(seed); groups=constraints(n)
    f=[rng.randint(1,maxf) for _ in range(n)]
    mem=[[gi for gi,g in enumerate(groups) if any(s==x for x,_ in g)] for s in range(n)]
    def conflicts(s):
        c=0
        for gi in mem[s]:
            g=groups[gi]; off=[o for x,o in g if x==s][0]; v=f[s]+off
            c+=sum(1 for x,o in g if x!=s and f[x]+o==v)
        return c
    for it in range(moves):
        bad=[s for s in range(n) if conflicts(s)]
        if not bad: return f
        s=rng.choice(bad)
        if rng.random()<0.1: f[s]=rng.randint(1,maxf); continue
        best=None
        for v in range(1,maxf+1):
            f[s]=v; c=conflicts(s)
            if best is None or c<best[0]: best=(c,[v])
            elif c==best[0]: best[1].append(v)
        f[s]=rng.choice(best[1])
    return None


def exhaust(n, maxf):
    """A valid f with max f <= maxf and min f = 1 in the canonical orientation, or None when there
    is none (then there is none at all: see the module comment); and the search nodes visited."""
    L = n.bit_length() - 1
    groups = constraints(n)
    member = [[] for _ in range(n)]  # per source: (group, offset) of the groups that constrain it
    for gi, g in enumerate(groups):
        if len(g) > 1:
            for s, o in g:
                member[s].append((gi, o))
    used = [0] * len(groups)  # per group, a bit mask of the steps f(s) + offset taken
    f = [0] * n
    nodes = 0

    def oriented(s):
        # s closes the subtrees of size 2^j whose last leaf it is: left least f <= right least f
        for j in range(1, L + 1):
            size = 1 << j
            if (s + 1) % size:
                break
            lo, half = s + 1 - size, size // 2
            if min(f[lo:lo + half]) > min(f[lo + half:lo + size]):
                return False
        return True

    def dfs(s):
        nonlocal nodes
        nodes += 1
        if s == n:
            return min(f) == 1
        for v in range(1, maxf + 1):
            if any(used[gi] >> (v + o) & 1 for gi, o in member[s]):
                continue
            f[s] = v
            if not oriented(s):
                continue
            for gi, o in member[s]:
                used[gi] |= 1 << (v + o)
            if dfs(s + 1):
                return True
            for gi, o in member[s]:
                used[gi] &= ~(1 << (v + o))
        return False

    return (list(f) if dfs(0) else None), nodes


def table(n, f):
    L = n.bit_length() - 1

    def name(level, idx):
        return str(idx) if level == 0 else f"r{level}.{idx}"

    tr = []

    def down(s, level, idx, step):
        tr.append({"step": step, "from": name(level + 1, idx >> 1), "to": name(level, idx), "msg": f"b({s})"})
        if level > 0:
            for c in (2 * idx, 2 * idx + 1):
                down(s, level - 1, c, step + 1)

    for s in range(n):
        for j in range(L):
            tr.append({"step": f[s] + j, "from": name(j, s >> j), "to": name(j + 1, s >> (j + 1)), "msg": f"b({s})"})
        for h in range(1, L + 1):
            down(s, h - 1, (s >> (h - 1)) ^ 1, f[s] + h)
    tr.sort(key=lambda x: (x["step"], x["from"], x["to"]))
    return {"format": "collsched.table/1", "topology": f"cbft:{n}",
            "model": {"timing": "hop", "ports": "multi", "queues": "none", "replicate": True, "inject": "once"},
            "collective": "allgather", "transfers": tr}




def main():
    if len(sys.argv) < 3 or sys.argv[1] not in ("search", "table", "exhaust", "least"):
        usage_error("expected search N MAXF [SEEDS], table N F, exhaust N MAXF or least N")
    if sys.argv[1] == "table":
        try:
            f = json.loads(sys.argv[3]) if len(sys.argv) > 3 else None
        except ValueError:
            f = None
        if not isinstance(f, list) or not all(isinstance(x, int) for x in f):
            usage_error("table N F: F must be a JSON list of integers")
        print(json.dumps(table(int_arg(2, "N", least=2), f)))
        return
    L = int_arg(2, "N", least=2).bit_length() - 1
    if sys.argv[1] == "exhaust":
        f, nodes = exhaust(int_arg(2, "N", least=2), int_arg(3, "MAXF"))
        T = int_arg(3, "MAXF") + 2 * L - 1
        print(f"T = {T}:", f"f = {json.dumps(f)}" if f else "no f (T impossible)", f"({nodes} search nodes)")
        return
    if sys.argv[1] == "least":
        for maxf in range(1, 4 * int_arg(2, "N", least=2)):
            f, nodes = exhaust(int_arg(2, "N", least=2), maxf)
            print(f"T = {maxf + 2 * L - 1}:", f"f = {json.dumps(f)}" if f else "impossible", f"({nodes} search nodes)", flush=True)
            if f:
                return
        return
    n, maxf = int_arg(2, "N", least=2), int_arg(3, "MAXF")
    seeds = int_arg(4, "SEEDS", 5)
    for seed in range(seeds):
        f = search(n, maxf, seed, moves=20000)
        if f:
            print("found", json.dumps(f), "T =", maxf + 2 * (n.bit_length() - 1) - 1)
            return
    print("not found")


if __name__ == "__main__":
    handle_help()
    main()
