#!/usr/bin/env python3
"""An independent oracle for reductions through routers that forward partials.

Exhaustive search, sharing no code with collsched, over every schedule of scan, allreduce and
reduce:R with one chunk on tiny graph files with routers, under docs/semantics.md ("Reductions:
partials and the buffer rule"): hop timing, replicate=no, queues none or unbounded, ports multi,
single or half. A state is every processor's buffer (a set of contributions) and every router's
copies; a step is any choice of transfers: a processor sends its buffer as of the step before (to a
processor at most once per channel: a second copy changes nothing or counts twice), a router sends
copies it holds (under queues=none exactly those that arrived in the step before, all of them).
Arrivals at a processor apply in table order (channel by (from, to) node number, then message: a(s)
by s, then partials by their sorted sources); a partial disjoint from the buffer combines, one
covering it replaces it, anything else counts twice and the table is refused.

Pruning, each sound: a goal buffer never holds a source its goal lacks (buffers only grow); a
contribution moves one hop a step (distance to every goal that lacks it); a copy that never leaves
a router can be deleted with its walk (the last arrival of a message at a router is then the one
left over, so every departure still has an earlier copy), so the search ends with empty routers and
drops states whose routers cannot empty in the steps left.

The least number of steps is then compared with `collsched optimize` (defaults and --method
direct), every witness with `verify --engine both` and `simulate`, on a seeded set of random tiny
machines. Exit 0 when every verdict agrees, 1 with the instance and both answers otherwise.

    python3 tests/tools/router_reduction_oracle.py --collsched build/tools/collsched [--seed 1] [--count 30]
"""
import argparse
import itertools
import json
import os
import random
import re
import subprocess
import sys
import tempfile
from collections import deque


class Machine:
    def __init__(self, P, R, edges):
        self.P, self.R, self.edges = P, R, edges
        self.N = P + R
        chans = []
        for u, v, cap in edges:
            chans.append((u, v, cap))
            chans.append((v, u, cap))
        chans.sort()
        self.chans = chans
        # hop distances between nodes (every node, routers included)
        INF = 10 ** 9
        self.dist = [[INF] * self.N for _ in range(self.N)]
        for s in range(self.N):
            self.dist[s][s] = 0
            q = deque([s])
            while q:
                x = q.popleft()
                for u, v, _ in chans:
                    if u == x and self.dist[s][v] == INF:
                        self.dist[s][v] = self.dist[s][x] + 1
                        q.append(v)

    def name(self, n):
        return str(n) if n < self.P else f"r1.{n - self.P}"

    def graph_json(self):
        return json.dumps({"processors": self.P, "routers": self.R,
                           "edges": [[self.name(u), self.name(v), c] if u >= self.P or v >= self.P else [u, v, c]
                                     for u, v, c in self.edges]})


def msg_key(mask):
    srcs = [i for i in range(mask.bit_length()) if mask >> i & 1]
    return (0, srcs) if len(srcs) == 1 else (1, srcs)


def msg_name(mask):
    srcs = [i for i in range(mask.bit_length()) if mask >> i & 1]
    if len(srcs) == 1:
        return f"a({srcs[0]})"
    parts, i = [], 0
    while i < len(srcs):
        j = i
        while j + 1 < len(srcs) and srcs[j + 1] == srcs[j] + 1:
            j += 1
        if j - i >= 2:
            parts.append(f"{srcs[i]}..{srcs[j]}")
        else:
            parts.extend(str(s) for s in srcs[i:j + 1])
        i = j + 1
    return "a({" + ",".join(parts) + "})"


def arrive(buf, x):
    """The buffer rule: the new buffer, or None when x counts a contribution twice."""
    if x == buf:
        return buf
    if x & buf == 0:
        return buf | x
    if x & buf == buf:
        return x
    return None


def goals_of(coll, P):
    full = (1 << P) - 1
    if coll == "allreduce":
        return {p: full for p in range(P)}
    if coll == "scan":
        return {p: (1 << (p + 1)) - 1 for p in range(P)}
    m = re.fullmatch(r"reduce:(\d+)", coll)
    assert m
    return {int(m.group(1)): full}


def multisets(items, k):
    """Every sub-multiset of size <= k of the multiset `items` (a sorted tuple), as sorted tuples."""
    out = {()}
    for size in range(1, k + 1):
        for c in itertools.combinations(items, size):
            out.add(c)
    return sorted(out)


def router_departures(m, r, held, cap_left, none):
    """Every assignment of router r's held copies (sorted tuple) to its out-channels: a list of
    (per-channel tuples, remaining copies). Under queues=none every copy leaves."""
    outs = [(i, v, cap) for i, (u, v, cap) in enumerate(m.chans) if u == r]
    results = []

    def rec(k, left, chosen):
        if k == len(outs):
            if none and left:
                return
            results.append((tuple(chosen), left))
            return
        _, v, cap = outs[k]
        for sub in multisets(left, cap):
            rest = list(left)
            for x in sub:
                rest.remove(x)
            chosen.append(sub)
            rec(k + 1, tuple(rest), chosen)
            chosen.pop()

    rec(0, held, [])
    return outs, results


class TooLarge(Exception):
    """The search passed its budget of states: the instance is skipped, not compared."""


def least_steps(m, coll, ports, queues, horizon, budget=300000):
    """The least T <= horizon in which `coll` completes, or None; with one witness (list of steps,
    each a list of (from, to, mask))."""
    P, none = m.P, queues == "none"
    goals = goals_of(coll, P)
    start = (tuple(1 << p for p in range(P)), tuple(() for _ in range(m.R)))
    out_cap = [sum(c for u, v, c in m.chans if u == r) for r in range(m.N)]

    def done(state):
        bufs, routers = state
        return all(bufs[p] == g for p, g in goals.items()) and all(not h for h in routers)

    def hopeless(state, left):
        bufs, routers = state
        for r, h in enumerate(routers):
            if len(h) > left * out_cap[P + r]:
                return True
        for p, g in goals.items():
            missing = g & ~bufs[p]
            for s in range(P):
                if not missing >> s & 1:
                    continue
                best = min([m.dist[q][p] for q in range(P) if bufs[q] >> s & 1] +
                           [m.dist[P + r][p] for r, h in enumerate(routers) if any(x >> s & 1 for x in h)])
                if best > left:
                    return True
        return False

    proc_chans = [(i, u, v, cap) for i, (u, v, cap) in enumerate(m.chans) if u < P]
    dep_cache = {}
    work = [0]

    def successors(state):
        bufs, routers = state
        # router choices (independent of processor sends)
        router_opts = []
        for r in range(m.R):
            key = (r, routers[r])
            if key not in dep_cache:
                dep_cache[key] = router_departures(m, P + r, routers[r], None, none)
            router_opts.append(dep_cache[key])
        proc_opts = [range(0, 2) if v < P else range(0, cap + 1) for _, u, v, cap in proc_chans]
        for psend in itertools.product(*proc_opts):
            sends = [0] * P
            for (i, u, v, cap), k in zip(proc_chans, psend):
                sends[u] += k
            if ports == "single" and any(s > 1 for s in sends):
                continue
            if ports == "half" and any(s > 1 for s in sends):
                continue
            for rchoice in itertools.product(*[res for _, res in router_opts]):
                work[0] += 1
                if work[0] > budget:
                    raise TooLarge()
                # arrivals: (channel index, mask) per destination
                arr = {}
                recv = [0] * P
                for (i, u, v, cap), k in zip(proc_chans, psend):
                    for _ in range(k):
                        arr.setdefault(v, []).append((i, msg_key(bufs[u]), bufs[u]))
                for (outs, _), (per, _) in zip(router_opts, rchoice):
                    for (i, v, cap), sub in zip(outs, per):
                        for x in sub:
                            arr.setdefault(v, []).append((i, msg_key(x), x))
                ok = True
                for v, lst in arr.items():
                    if v < P:
                        recv[v] = len(lst)
                for p in range(P):
                    if ports == "single" and recv[p] > 1:
                        ok = False
                    if ports == "half" and sends[p] + recv[p] > 1:
                        ok = False
                if not ok:
                    continue
                nb = list(bufs)
                for v in range(P):
                    for _, _, x in sorted(arr.get(v, [])):
                        b = arrive(nb[v], x)
                        if b is None:
                            ok = False
                            break
                        nb[v] = b
                    if not ok:
                        break
                    if v in goals and nb[v] & ~goals[v]:
                        ok = False
                        break
                if not ok:
                    continue
                nr = []
                for r in range(m.R):
                    left = list(rchoice[r][1])
                    left.extend(x for _, _, x in arr.get(P + r, []))
                    nr.append(tuple(sorted(left)))
                moves = []
                for (i, u, v, cap), k in zip(proc_chans, psend):
                    moves.extend([(u, v, bufs[u])] * k)
                for (outs, _), (per, _) in zip(router_opts, rchoice):
                    for (i, v, cap), sub in zip(outs, per):
                        moves.extend((m.chans[i][0], v, x) for x in sub)
                yield (tuple(nb), tuple(nr)), moves

    for H in range(1, horizon + 1):
        level = {start: None}
        parents = [level]
        found = None
        for t in range(1, H + 1):
            nxt = {}
            for state in level:
                for s2, moves in successors(state):
                    if s2 in nxt or hopeless(s2, H - t):
                        continue
                    nxt[s2] = (state, moves)
            level = nxt
            parents.append(level)
            if not level:
                break
        for state in level:
            if done(state):
                found = state
                break
        if found is not None:
            steps, s = [], found
            for t in range(H, 0, -1):
                prev, moves = parents[t][s]
                steps.append(moves)
                s = prev
            return H, steps[::-1]
    return None, None


def random_machine(rng, P, R, cap2):
    """P processors, R routers, every router on two or three processors, connected; capacities 1
    (and 2 with probability cap2)."""
    while True:
        N = P + R
        edges = set()
        for r in range(P, N):
            for q in rng.sample(range(P), rng.randint(2, min(P, 3))):
                edges.add((q, r))
        if R == 2 and rng.random() < 0.3:
            edges.add((P, P + 1))
        for _ in range(rng.randint(0, 1)):
            a, b = rng.sample(range(P), 2)
            edges.add((min(a, b), max(a, b)))
        m = Machine(P, R, sorted((u, v, 2 if rng.random() < cap2 else 1) for u, v in edges))
        if all(m.dist[0][x] < 10 ** 9 for x in range(N)):
            return m


def replay(m, coll, ports, queues, moves):
    """Whether a table (a list of (step, from, to, mask)) holds under the buffer rule with routers
    that forward: the direct reading of docs/semantics.md, transfer by transfer."""
    P, none = m.P, queues == "none"
    # reduce(r) follows the table (docs/semantics.md, compiler/table/collective.hpp `reduces`): with
    # no partial of two or more sources it is the ordered rule, a processor holding every a(s) it
    # received (a second copy changes nothing) and sending any of them
    ordered = coll.startswith("reduce:") and all(bin(x).count("1") == 1 for _, _, _, x in moves)
    caps = {(u, v): c for u, v, c in m.chans}
    order = sorted(moves, key=lambda x: (x[0], x[1], x[2], msg_key(x[3])))
    bufs = [1 << p for p in range(P)]
    fifo = {}
    steps = sorted({x[0] for x in order})
    for s in steps:
        xs = [x for x in order if x[0] == s]
        load, sends, recv = {}, [0] * P, [0] * P
        for _, u, v, x in xs:
            load[(u, v)] = load.get((u, v), 0) + 1
            if u < P:
                sends[u] += 1
            if v < P:
                recv[v] += 1
        if any(load[c] > caps[c] for c in load):
            return False
        for p in range(P):
            if ports == "single" and (sends[p] > 1 or recv[p] > 1):
                return False
            if ports == "half" and sends[p] + recv[p] > 1:
                return False
        for _, u, v, x in xs:
            if u < P:
                if (bufs[u] & x != x) if ordered else bufs[u] != x:
                    return False
            else:
                q = fifo.get((u, x), [])
                if not q:
                    return False
                a = q.pop(0)
                if none and s != a + 1:
                    return False
        for _, u, v, x in xs:
            if v < P:
                b = bufs[v] | x if ordered else arrive(bufs[v], x)
                if b is None:
                    return False
                bufs[v] = b
            else:
                fifo.setdefault((v, x), []).append(s)
    if none and any(fifo.values()):
        return False
    return all((bufs[p] & g == g) if ordered else bufs[p] == g for p, g in goals_of(coll, P).items())


def table_json(m, graph, coll, ports, queues, moves):
    rows = ",\n".join(f'  {{"step": {s}, "from": "{m.name(u)}", "to": "{m.name(v)}", "msg": "{msg_name(x)}"}}'
                      for s, u, v, x in sorted(moves, key=lambda x: (x[0], x[1], x[2], msg_key(x[3]))))
    return (f'{{"format": "collsched.table/1", "topology": "graph:{graph}",\n'
            f' "model": {{"ports":"{ports}","queues":"{queues}","replicate":false,"timing":"hop"}},\n'
            f' "collective": "{coll}",\n "transfers": [\n{rows}\n ]}}\n')


def mutations(m, rng, moves, count):
    """Tables near a schedule: a transfer dropped, moved a step later, re-labelled, or added."""
    masks = sorted({x for _, _, _, x in moves} | {1 << p for p in range(m.P)})
    T = max(s for s, _, _, _ in moves)
    for _ in range(count):
        ms = list(moves)
        kind = rng.randrange(4)
        i = rng.randrange(len(ms))
        s, u, v, x = ms[i]
        if kind == 0:
            del ms[i]
        elif kind == 1:
            ms[i] = (s + 1, u, v, x)
        elif kind == 2:
            ms[i] = (s, u, v, rng.choice(masks))
        else:
            u, v, _ = rng.choice(m.chans)
            ms.append((rng.randint(1, T), u, v, rng.choice(masks)))
        if ms:
            yield ms


# Hand-made tables on three processors on one router (capacity 2) and a link 0 - 1 (capacity 2): (name, collective, queues,
# transfers, whether it holds). Each is also replayed, and verify and simulate must agree.
STAR3 = Machine(3, 1, [(0, 1, 2), (0, 3, 2), (1, 3, 2), (2, 3, 2)])
HAND = [
    ("the router forwards both partials, one a step later", "reduce:0", "unbounded",
     [(1, 1, 3, 2), (1, 2, 3, 4), (2, 3, 0, 4), (3, 3, 0, 2)], True),
    ("the same with queues=none: a(1) waits in the router past one step", "reduce:0", "none",
     [(1, 1, 3, 2), (1, 2, 3, 4), (2, 3, 0, 4), (3, 3, 0, 2)], False),
    ("the router would combine a(1) and a(2) into a({1,2})", "reduce:0", "none",
     [(1, 1, 3, 2), (1, 2, 3, 4), (2, 3, 0, 6)], False),
    ("both partials forwarded in one step on one channel combine at 0", "reduce:0", "none",
     [(1, 1, 3, 2), (1, 2, 3, 4), (2, 3, 0, 2), (2, 3, 0, 4)], True),
    ("a copy never leaves the router under queues=none", "reduce:0", "none",
     [(1, 1, 3, 2), (1, 2, 3, 4), (1, 2, 3, 4), (2, 3, 0, 2), (2, 3, 0, 4)], False),
    ("processor 1 sends a(1) after its buffer took a(0) (the buffer rule)", "scan", "none",
     [(1, 0, 3, 1), (1, 0, 3, 1), (2, 3, 1, 1), (2, 3, 2, 1), (3, 1, 3, 2), (4, 3, 2, 2)], False),
    ("processor 1 sends its buffer a({0,1}) instead; 2, holding a(0) already, counts it twice", "scan", "none",
     [(1, 0, 3, 1), (1, 0, 3, 1), (2, 3, 1, 1), (2, 3, 2, 1), (3, 1, 3, 3), (4, 3, 2, 3)], False),
    ("scan: 2 takes a(0), then a(1) disjoint from its buffer", "scan", "none",
     [(1, 0, 3, 1), (1, 0, 3, 1), (2, 3, 1, 1), (2, 3, 2, 1), (2, 1, 3, 2), (3, 3, 2, 2)], True),
    ("allreduce: a partial sent back to a contributor counts it twice", "allreduce", "none",
     [(1, 0, 3, 1), (2, 3, 1, 1), (3, 1, 3, 3), (4, 3, 0, 3)], False),
    ("the router forwards a partial it never received", "reduce:0", "unbounded",
     [(1, 1, 3, 2), (2, 3, 0, 4)], False),
    ("reduce with no partial of two sources takes the ordered rule: a(1) twice at 0 is one value", "reduce:0", "none",
     [(1, 1, 0, 2), (1, 1, 0, 2), (1, 2, 3, 4), (2, 3, 0, 4)], True),
    ("the same a(1) twice at 0 in an allreduce counts it twice", "allreduce", "none",
     [(1, 1, 0, 2), (1, 1, 0, 2)], False),
]


def run(cmd):
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    return p.returncode, p.stdout + p.stderr


def tool_answer(bin_, graph, coll, queues, ports, method, witness):
    """('proved', T), ('none', None) or ('open', text) from collsched optimize."""
    cmd = [bin_, "optimize", "--topology", "graph:" + graph, "--collective", coll, "--chunks", "1",
           "--model", f"queues={queues},ports={ports}", "--timeout", "30", "-o", witness]
    if method:
        cmd += ["--method", method]
    code, out = run(cmd)
    m = re.search(r"(?:optimum|" + re.escape(coll) + r"): (\d+) steps \(proved", out)
    if code == 0 and m:
        return ("proved", int(m.group(1))), out
    if code == 1 and "no schedule exists" in out:
        return ("none", None), out
    return ("open", code), out


def witness_holds(bin_, witness):
    """Problems of a witness under verify --engine both and simulate (empty: it holds)."""
    bad = []
    for cmd in (["verify", witness, "--engine", "both"], ["simulate", witness]):
        code, out = run([bin_] + cmd)
        if code != 0:
            bad.append(f"{' '.join(cmd)}: exit {code}\n{out}")
    return bad


def instances(seed, count, most=3):
    rng = random.Random(seed)
    colls = ["scan", "allreduce", "reduce:0", "reduce:1"]
    for i in range(count):
        P = rng.choice([2, 3, 3, 3] if most == 3 else [2, 3] + [most] * 2)
        R = rng.choice([1, 1, 2])
        m = random_machine(rng, P, R, 0.25)
        queues = "none" if rng.random() < 0.6 else "unbounded"
        ports = rng.choice(["multi", "multi", "single", "half"])
        yield i, m, rng.choice(colls[:3] if P == 2 else colls), queues, ports


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--collsched", required=True)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--count", type=int, default=30)
    ap.add_argument("--processors", type=int, default=3, choices=[3, 4, 5], help="the most processors of an instance")
    ap.add_argument("--horizon", type=int, default=6)
    ap.add_argument("--mutations", type=int, default=4, help="tables near each oracle schedule checked by verify and simulate")
    ap.add_argument("--budget", type=int, default=300000, help="schedule steps tried before an instance is skipped")
    ap.add_argument("--keep", help="directory to keep the instances and witnesses in")
    a = ap.parse_args()
    if a.keep:
        os.makedirs(a.keep, exist_ok=True)
        return compare(a, a.keep)
    with tempfile.TemporaryDirectory(prefix="router_oracle_") as work:
        return compare(a, work)


def compare(a, work):
    failures, tally, tables = [], {}, {}
    star = os.path.join(work, "star3.json")
    with open(star, "w") as f:
        f.write(STAR3.graph_json() + "\n")
    for k, (what, coll, queues, ms, holds) in enumerate(HAND):
        table = os.path.join(work, f"hand{k}.json")
        with open(table, "w") as f:
            f.write(table_json(STAR3, star, coll, "multi", queues, ms))
        if replay(STAR3, coll, "multi", queues, ms) != holds:
            failures.append(f"hand table {table} ({what}): the replay says {not holds}, expected {holds}")
        for cmd in (["verify", table, "--engine", "direct"], ["verify", table, "--engine", "z3"], ["simulate", table]):
            code, out = run([a.collsched] + cmd)
            if code != (0 if holds else 1):
                failures.append(f"hand table {table} ({what}): {' '.join(cmd)}: exit {code}, expected {0 if holds else 1}\n{out}")
        print(f"hand table {k}: {what}: {'holds' if holds else 'refused'}", flush=True)
    for i, m, coll, queues, ports in instances(a.seed, a.count, a.processors):
        graph = os.path.join(work, f"g{i}.json")
        with open(graph, "w") as f:
            f.write(m.graph_json() + "\n")
        try:
            T, steps = least_steps(m, coll, ports, queues, a.horizon, a.budget)
        except TooLarge:
            print(f"[{i}] {graph} {coll} queues={queues} ports={ports}: skipped (over {a.budget} steps tried)", flush=True)
            tally["skipped"] = tally.get("skipped", 0) + 1
            continue
        line = f"[{i}] {graph} {coll} queues={queues} ports={ports}: oracle {T if T is not None else f'none within {a.horizon}'}"
        if T is not None:
            # the oracle's own schedule, and tables near it: collsched's verdicts against the replay's
            moves = [(t + 1, u, v, x) for t, st in enumerate(steps) for u, v, x in st]
            assert replay(m, coll, ports, queues, moves), line
            rng = random.Random(a.seed * 1000 + i)
            for k, ms in enumerate([moves] + list(mutations(m, rng, moves, a.mutations))):
                table = os.path.join(work, f"t{i}_{k}.json")
                with open(table, "w") as f:
                    f.write(table_json(m, graph, coll, ports, queues, ms))
                want = replay(m, coll, ports, queues, ms)
                tables[want] = tables.get(want, 0) + 1
                for cmd in (["verify", table, "--engine", "both"], ["simulate", table]):
                    code, out = run([a.collsched] + cmd)
                    if code != (0 if want else 1):
                        failures.append(f"{line}\n  {' '.join(cmd)}: exit {code}, the replay says {'holds' if want else 'fails'}\n{out}")
        for method in (None, "direct"):
            witness = os.path.join(work, f"w{i}_{method or 'auto'}.json")
            (kind, val), out = tool_answer(a.collsched, graph, coll, queues, ports, method, witness)
            line += f"; {method or 'auto'} {kind} {val if val is not None else ''}".rstrip()
            tally[kind] = tally.get(kind, 0) + 1
            wrong = None
            if kind == "proved" and T is not None and val != T:
                wrong = f"collsched proves {val} steps, the oracle finds {T}"
            if kind == "proved" and T is None and val <= a.horizon:
                wrong = f"collsched proves {val} steps, the oracle finds no schedule within {a.horizon}"
            if kind == "none" and T is not None:
                wrong = f"collsched says no schedule exists, the oracle finds {T} steps"
            if kind == "proved":
                bad = witness_holds(a.collsched, witness)
                if bad:
                    wrong = (wrong + "; " if wrong else "") + "the witness fails: " + "; ".join(bad)
            if wrong:
                failures.append(f"{line}\n  optimize --method {method or 'auto'}: {wrong}\n{out}")
        print(line, flush=True)
    print(f"{a.count} instances, optimize answers {tally}, tables checked (holds: count) {tables}, {len(failures)} disagreements")
    for f in failures:
        print("DISAGREE", f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
