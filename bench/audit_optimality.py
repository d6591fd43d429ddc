#!/usr/bin/env python3
"""Independent audit of `collsched optimize` and `collsched pareto` by exhaustive search.

Written from docs/semantics.md and docs/topologies.md only; shares no code with collsched (the
tool is run as a subprocess, its JSON output and witness tables are read back). Standard library
only.

THE MODEL IMPLEMENTED (docs/semantics.md, hop timing, networks of processors only):
  - Steps 1, 2, ...; a transfer (t, u->v, m) needs u to hold m at the end of step t-1 and makes
    v hold m at the end of step t (store and forward). Processors keep what they hold.
  - Initial data and goals per collective: broadcast:r (b(r) at r; every processor needs it),
    allgather (b(s) at s; everyone needs every b(s)), alltoall (m(s,d) at s, needed at d),
    scatter:r (m(r,d) at r, needed at d), gather:r (m(s,r) at s, needed at r). With C chunks
    every datum is C messages (b(s,c), m(s,d,c)) with the datum's origin and goals.
  - Per step of r rounds: every channel carries at most r*cap transfers; ports single: at most
    r sends and r receives per processor; half: at most r sends+receives; multi: no limit;
    every link group (graph files, "groups") carries at most r*cap on its channels together.
  - Reductions (reduce:r, reduce_scatter with block p of the C chunks to p, allreduce: every
    buffer full, scan: p's buffer exactly a({0..p}); C as collsched's default or given): the
    buffer rule of docs/semantics.md "Reductions": one buffer per processor and chunk holding a
    set of sources, a send carries the sender's buffer (end of the step before), an arrival X
    at a buffer B makes it B|X when disjoint, X when X covers B, and is a violation otherwise;
    arrivals at one processor apply in table order (channel id = position in the sorted list
    of (from, to) pairs, which is how the built-in families list their channels).
  Queues and replicate only concern routers, so without routers the knobs do not matter.

THE SEARCH (exact for the model above; each reduction is argued here, none is taken from
docs/synthesis.md):
  Least steps = the least T for which a depth-first search over all tables of T steps finds a
  complete one (T = 1, 2, ... in turn; every T below the answer is refuted exhaustively).
  (1) Monotonicity: without routers, a table valid from holdings A is valid from any B >= A and
      ends with more. So per step only *maximal* transfer sets are tried (no further transfer
      fits the channel, port and group limits) and next states contained in another next
      state are dropped.
  (2) Relevance: delete from a complete table every transfer of m into v that is not on a
      chain of first acquisitions ending at a goal's first arrival; the rest stays valid and
      complete. So only transfers of m into a v that lacks m and from which some goal still
      lacking m is within the remaining steps (graph distance) are tried, and never two
      deliveries of m to one v in one step.
  (3) Necessary conditions cut branches: every missing goal pair has a holder within the
      remaining steps; every processor can receive its missing goal messages in the remaining
      steps (its receive capacity: channels, port, link groups), and those k away from their
      nearest holder only from the k-th remaining step on; a message only its origin holds
      leaves it early enough for its farthest goal lacking it, at most the origin's send
      capacity per round; the network can make the
      transfers still needed (per message: at least its goals lacking it, and at least the
      distance from its nearest holder to each of them) at one per unit of capacity, and one
      per processor (single ports) or per two processors (half) per round.
  (4) Refuted (state, step) pairs are memoized.
  Reductions use a separate search without (1) (buffers are not monotone). Its relevance rule:
  a transfer of chunk c into v != c's goal whose buffer is never sent on later can be deleted
  (later arrivals into a smaller buffer stay valid: disjoint stays disjoint, covering stays
  covering), so a transfer into v at step t is tried only if t + dist(v, goal) <= T, and a
  copy equal to the buffer (a no-op) is never tried.
  Pareto rows: (S, C, R) is feasible iff some split of R rounds over S steps (each >= 1) admits
  a complete table; every split is tried.

LIMITS: no routers (graph files with routers are refused), hop timing only, no wormhole, no
inject=once, no multicast or custom collectives, no --routes fixed (the audit checks the
bounds that hold for any route and reports the others as not applicable). Instances are tiny
(a search node budget per horizon; an instance whose search exceeds it is reported `budget`,
never as agreement). The duality's composed allreduce space (--method duality) is not searched
separately: its optimum is twice the reduce_scatter row's.

usage: bench/audit_optimality.py [--collsched build/tools/collsched] [--quick | --hard]
                                  [--budget N] [--progress] [--json]
Exit code 0 when every instance agrees, 1 on any disagreement (or a search without verdict),
2 on a usage error.
"""
import argparse
import itertools
import json
import os
import re
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


PRUNE = True  # --no-prune: leave out the necessary conditions (3), a check of the search itself


class Budget(Exception):
    """The search of one horizon exceeded its node budget."""


# ---------------------------------------------------------------------------------------------
# Topologies (docs/topologies.md), processors only


class Topo:
    def __init__(self, spec, procs, chans, groups):
        self.spec = spec
        self.P = procs
        # channels sorted by (from, to): (u, v, cap)
        self.chans = sorted(chans)
        self.index = {(u, v): i for i, (u, v, _) in enumerate(self.chans)}
        # groups: (name, cap, frozenset of channel indices)
        self.groups = [(n, c, frozenset(self.index[e] for e in es)) for n, c, es in groups]
        self.groups_of = [[g for g, (_, _, cs) in enumerate(self.groups) if i in cs]
                          for i in range(len(self.chans))]
        self.dist = self._distances()

    def _distances(self):
        inf = 1 << 30
        adj = [[] for _ in range(self.P)]
        for u, v, _ in self.chans:
            adj[u].append(v)
        dist = []
        for s in range(self.P):
            d = [inf] * self.P
            d[s] = 0
            frontier = [s]
            while frontier:
                nxt = []
                for u in frontier:
                    for v in adj[u]:
                        if d[v] == inf:
                            d[v] = d[u] + 1
                            nxt.append(v)
                frontier = nxt
            dist.append(d)
        return dist

    def automorphisms(self):
        """Processor permutations that map every channel to a channel of the same capacity and
        every link group to a group of the same capacity (brute force: tiny P only)."""
        caps = {(u, v): c for u, v, c in self.chans}
        gsets = {(c, frozenset(self.chans[i][:2] for i in cs)) for _, c, cs in self.groups}
        out = []
        for pi in itertools.permutations(range(self.P)):
            if any(caps.get((pi[u], pi[v])) != c for (u, v), c in caps.items()):
                continue
            if any((c, frozenset((pi[u], pi[v]) for u, v in es)) not in gsets for c, es in gsets):
                continue
            out.append(pi)
        return out

    def in_capacity(self, v, ports, end=1):
        """Largest number of transfers into v (end=1; out of v: end=0) in one round: channels,
        port, link groups."""
        into = [i for i, ch in enumerate(self.chans) if ch[end] == v]
        best = sum(self.chans[i][2] for i in into)
        if ports != "multi":
            best = min(best, 1)
        for _, cap, cs in self.groups:
            inside = [i for i in into if i in cs]
            if inside:
                rest = sum(self.chans[i][2] for i in into if i not in cs)
                best = min(best, cap + rest)
        return best


def parse_topology(spec):
    kind, _, arg = spec.partition(":")
    chans = []
    groups = []
    if kind in ("ring", "linear"):
        n = int(arg)
        for i in range(n - 1):
            chans += [(i, i + 1, 1), (i + 1, i, 1)]
        if kind == "ring" and n > 2:
            chans += [(n - 1, 0, 1), (0, n - 1, 1)]
        return Topo(spec, n, chans, groups)
    if kind == "complete":
        n = int(arg)
        chans = [(u, v, 1) for u in range(n) for v in range(n) if u != v]
        return Topo(spec, n, chans, groups)
    if kind == "hypercube":
        d = int(arg)
        n = 1 << d
        chans = [(u, u ^ (1 << b), 1) for u in range(n) for b in range(d)]
        return Topo(spec, n, chans, groups)
    if kind == "graph":
        with open(arg) as f:
            g = json.load(f)
        if g.get("routers", 0):
            raise SystemExit(f"audit: {arg}: routers are outside the audited model")
        n = g["processors"]
        for e in g["edges"]:
            if isinstance(e, dict):
                u, v, c = e["from"], e["to"], e.get("cap", 1)
            else:
                u, v, c = e[0], e[1], (e[2] if len(e) > 2 else 1)
            chans += [(u, v, c), (v, u, c)]
        ends = {(u, v) for u, v, _ in chans}
        for gr in g.get("groups", []):
            es = set()
            for u, v in gr.get("channels", []):
                es.add((u, v))
            if "out_of" in gr:
                es |= {(u, v) for u, v in ends if u == gr["out_of"]}
            if "into" in gr:
                es |= {(u, v) for u, v in ends if v == gr["into"]}
            groups.append((gr["name"], gr["cap"], es))
        return Topo(spec, n, chans, groups)
    raise SystemExit(f"audit: topology {spec} is outside the audited families")


# ---------------------------------------------------------------------------------------------
# Collectives (docs/semantics.md): messages with origin and goal processors


class Coll:
    def __init__(self, name, P, C):
        self.name = name
        self.C = C
        self.msgs = []  # (name, origin, goals frozenset)
        kind, _, arg = name.partition(":")
        sfx = (lambda c: f",{c}") if C > 1 else (lambda c: "")
        every = frozenset(range(P))
        if kind == "broadcast":
            r = int(arg)
            for c in range(C):
                self.msgs.append((f"b({r}{sfx(c)})", r, every - {r}))
        elif kind == "allgather":
            for s in range(P):
                for c in range(C):
                    self.msgs.append((f"b({s}{sfx(c)})", s, every - {s}))
        elif kind in ("alltoall", "scatter", "gather"):
            r = int(arg) if arg else None
            for s in range(P):
                for d in range(P):
                    if s == d or (kind == "scatter" and s != r) or (kind == "gather" and d != r):
                        continue
                    for c in range(C):
                        self.msgs.append((f"m({s},{d}{sfx(c)})", s, frozenset([d])))
        else:
            raise SystemExit(f"audit: collective {name} is outside the audited set")
        self.by_name = {m[0]: i for i, m in enumerate(self.msgs)}
        self.root = int(arg) if kind in ("broadcast", "scatter", "gather") else None
        self.init = [0] * P
        self.goal = [0] * P
        for i, (_, o, gs) in enumerate(self.msgs):
            self.init[o] |= 1 << i
            for g in gs:
                self.goal[g] |= 1 << i


def bits(x):
    while x:
        low = x & -x
        yield low.bit_length() - 1
        x ^= low


# ---------------------------------------------------------------------------------------------
# The exhaustive search for dissemination and personalized collectives


class Search:
    def __init__(self, topo, coll, ports, budget):
        self.t = topo
        self.c = coll
        self.ports = ports
        self.budget = budget
        P = topo.P
        self.goals_mask = []  # per message: processor mask of its goals
        for _, _, gs in coll.msgs:
            mask = 0
            for g in gs:
                mask |= 1 << g
            self.goals_mask.append(mask)
        maxd = max(max(d for d in row if d < (1 << 30)) for row in topo.dist)
        # reach[v][k]: processors within distance k of v (v to them)
        self.reach = [[sum(1 << w for w in range(P) if topo.dist[v][w] <= k)
                       for k in range(maxd + 2)] for v in range(P)]
        self.maxd = maxd
        self.incap = [topo.in_capacity(v, ports) for v in range(P)]
        self.outcap = [topo.in_capacity(v, ports, end=0) for v in range(P)]
        # transfers per round in the whole network: channels, and the ports (a transfer takes a
        # send and a receive: P under single ports, floor(P/2) under half)
        self.total_cap = sum(c for _, _, c in topo.chans)
        if ports == "single":
            self.total_cap = min(self.total_cap, P)
        if ports == "half":
            self.total_cap = min(self.total_cap, P // 2)
        self.reach_to = [[sum(1 << u for u in range(P) if topo.dist[u][p] <= k)
                          for k in range(maxd + 2)] for p in range(P)]
        # symmetries (feasibility is invariant under them): automorphisms of the topology that
        # fix the collective's root, acting on processors and messages alike
        keys = {}
        for i, (name, o, gs) in enumerate(coll.msgs):
            nums = tuple(int(x) for x in re.findall(r"[0-9]+", name))
            keys[(name[0],) + nums] = i
        self.perms = []
        for pi in topo.automorphisms():
            if coll.root is not None and pi[coll.root] != coll.root:
                continue
            mp = [0] * len(coll.msgs)
            for k, i in keys.items():
                if k[0] == "b":
                    img = ("b", pi[k[1]]) + k[2:]
                else:
                    img = ("m", pi[k[1]], pi[k[2]]) + k[3:]
                mp[i] = keys[img]
            self.perms.append((pi, mp))

    def canon(self, state):
        best = None
        for pi, mp in self.perms:
            img = [0] * len(state)
            for p, x in enumerate(state):
                y = 0
                for m in bits(x):
                    y |= 1 << mp[m]
                img[pi[p]] = y
            img = tuple(img)
            if best is None or img < best:
                best = img
        return best

    def reach_of(self, v, k):
        return self.reach[v][min(k, self.maxd + 1)]

    def done(self, state):
        return all(state[p] & g == g for p, g in enumerate(self.c.goal))

    def holders(self, state):
        h = [0] * len(self.c.msgs)
        for p, s in enumerate(state):
            for m in bits(s):
                h[m] |= 1 << p
        return h

    def hopeless(self, state, t):
        """A necessary condition fails: some goal cannot be met in steps t+1 .. T."""
        T, rounds = self.T, self.rounds
        remaining = T - t
        cum = [0]  # cum[k]: rounds of the next k steps
        for i in range(t, T):
            cum.append(cum[-1] + rounds[i])
        h = self.holders(state)
        # every transfer moves one message one hop: message m needs at least as many transfers
        # as it has goals lacking it, and as many as the distance from its nearest holder to
        # each of them
        dist = self.t.dist
        total = 0
        sole = [[] for _ in range(self.t.P)]
        for m, gm in enumerate(self.goals_mask):
            lacking = gm & ~h[m]
            if not lacking:
                continue
            far = max(min(dist[u][g] for u in bits(h[m])) for g in bits(lacking))
            if far > remaining:
                return True
            total += max(bin(lacking).count("1"), far)
            if h[m] & (h[m] - 1) == 0:
                sole[h[m].bit_length() - 1].append(far)
        if total > self.total_cap * cum[remaining]:
            return True
        for p in range(self.t.P):
            # receptions: a missing goal message whose nearest holder is k away arrives in
            # the k-th remaining step or later
            missing = self.c.goal[p] & ~state[p]
            if missing:
                near = sorted((min(dist[u][p] for u in bits(h[m])) for m in bits(missing)),
                              reverse=True)
                for j, k in enumerate(near):  # j+1 messages at distance >= k
                    if j + 1 > self.incap[p] * (cum[remaining] - cum[k - 1]):
                        return True
            # injections: a message only p holds, k away from a goal lacking it, leaves p in
            # remaining steps 1 .. remaining-k+1
            if sole[p]:
                for j, k in enumerate(sorted(sole[p], reverse=True)):
                    if j + 1 > self.outcap[p] * cum[remaining - k + 1]:
                        return True
        return False

    def reach_in(self, p, k):
        # processors u with dist(u, p) <= k
        return self.reach_to[p][min(k, self.maxd + 1)]

    def successors(self, state, remaining_after, r):
        """Every maximal set of relevant transfers of one step of r rounds from state."""
        topo = self.t
        h = self.holders(state)
        lacking = [self.goals_mask[m] & ~h[m] for m in range(len(h))]
        cands = []
        for ci, (u, v, cap) in enumerate(topo.chans):
            avail = state[u] & ~state[v]
            ball = self.reach_of(v, remaining_after)
            cands.append([m for m in bits(avail) if lacking[m] & ball])
        n = len(topo.chans)
        P = topo.P
        sends = [0] * P
        recvs = [0] * P
        gload = [0] * len(topo.groups)
        chload = [0] * n
        delivered = [0] * P
        chosen = []
        out = {}
        ports = self.ports

        def fits(ci):
            u, v, cap = topo.chans[ci]
            if chload[ci] >= cap * r:
                return False
            if ports == "single" and (sends[u] >= r or recvs[v] >= r):
                return False
            if ports == "half" and (sends[u] + recvs[u] >= r or sends[v] + recvs[v] >= r):
                return False
            for g in topo.groups_of[ci]:
                if gload[g] >= topo.groups[g][1] * r:
                    return False
            return True

        def take(ci, m, d):
            u, v, _ = topo.chans[ci]
            chload[ci] += d
            sends[u] += d
            recvs[v] += d
            for g in topo.groups_of[ci]:
                gload[g] += d
            delivered[v] ^= 1 << m

        def maximal():
            for ci in range(n):
                v = topo.chans[ci][1]
                for m in cands[ci]:
                    if not delivered[v] >> m & 1 and fits(ci):
                        return False
            return True

        def rec(ci, start):
            self.nodes += 1
            if self.nodes > self.budget:
                raise Budget()
            if ci == n:
                if maximal():
                    ns = tuple(state[p] | delivered[p] for p in range(P))
                    key = self.canon(ns)
                    if key not in out:
                        out[key] = (ns, list(chosen))
                return
            # choose the next message of channel ci at index >= start, or move on
            lst = cands[ci]
            v = topo.chans[ci][1]
            for j in range(start, len(lst)):
                m = lst[j]
                if delivered[v] >> m & 1 or not fits(ci):
                    continue
                take(ci, m, 1)
                chosen.append((ci, m))
                rec(ci, j + 1)
                chosen.pop()
                take(ci, m, -1)
            rec(ci + 1, 0)

        rec(0, 0)
        # drop next states contained in another
        items = sorted(out.values(), key=lambda kv: -sum(bin(x).count("1") for x in kv[0]))
        kept = []
        if len(items) <= 3000:
            for ns, tr in items:
                if any(all(a & b == a for a, b in zip(ns, k)) for k, _ in kept):
                    continue
                kept.append((ns, tr))
        else:
            kept = items
        return kept

    def feasible(self, rounds):
        """A complete table of len(rounds) steps, step t lasting rounds[t-1] rounds, or None."""
        T = len(rounds)
        self.T, self.rounds = T, rounds
        self.nodes = 0
        failed = set()

        def dfs(state, t):
            if self.done(state):
                return []
            key = (self.canon(state), t)
            if t == T or key in failed:
                return None
            if PRUNE and self.hopeless(state, t):
                failed.add(key)
                return None
            for ns, tr in self.successors(state, T - t - 1, rounds[t]):
                rest = dfs(ns, t + 1)
                if rest is not None:
                    return [tr] + rest
            failed.add(key)
            return None

        steps = dfs(tuple(self.c.init), 0)
        if steps is None:
            return None
        return [[(self.t.chans[ci][0], self.t.chans[ci][1], self.c.msgs[m][0]) for ci, m in st]
                for st in steps]


# ---------------------------------------------------------------------------------------------
# The exhaustive search for reductions under the buffer rule


class ReduceSearch:
    """reduce:r, reduce_scatter (C a multiple of P, block p of the chunks to p), allreduce (every
    buffer full), scan (processor p's buffer exactly a({0..p})), under the buffer rule."""

    def __init__(self, topo, name, ports, budget, C=None):
        self.t = topo
        self.ports = ports
        self.budget = budget
        P = topo.P
        self.full = (1 << P) - 1
        if name.startswith("reduce:"):
            self.C = C or 1
            r = int(name.split(":")[1])
            goals = [(r, c, self.full) for c in range(self.C)]
        elif name == "reduce_scatter":
            self.C = C or P
            goals = [(c * P // self.C, c, self.full) for c in range(self.C)]
        elif name == "allreduce":
            self.C = C or P
            goals = [(p, c, self.full) for p in range(P) for c in range(self.C)]
        elif name == "scan":
            self.C = C or 1
            goals = [(p, c, (1 << (p + 1)) - 1) for p in range(P) for c in range(self.C)]
        else:
            raise SystemExit(f"audit: {name} is not a reduction the audit searches")
        self.goals = goals
        self.goal_procs = [sorted({g for g, c2, _ in goals if c2 == c}) for c in range(self.C)]

    def init(self):
        P = self.t.P
        return tuple(1 << p for p in range(P) for _ in range(self.C))

    def done(self, st):
        return all(st[g * self.C + c] == x for g, c, x in self.goals)

    def feasible(self, T):
        topo = self.t
        P, C = topo.P, self.C
        self.nodes = 0
        failed = set()
        n = len(topo.chans)

        def hopeless(st, remaining):
            for g, c, x in self.goals:
                if st[g * C + c] & ~x:
                    return True  # buffers only grow (union, or a partial that covers them)
                have = 0
                for p in range(P):
                    if topo.dist[p][g] <= remaining:
                        have |= st[p * C + c]
                if have & x != x:
                    return True
            return False

        def successors(st, t):
            remaining_after = T - t - 1
            cands = []
            for ci, (u, v, cap) in enumerate(topo.chans):
                lst = []
                for c in range(C):
                    if st[u * C + c] != st[v * C + c] and any(
                            topo.dist[v][g] <= remaining_after for g in self.goal_procs[c]):
                        lst.append(c)
                cands.append(lst)
            sends = [0] * P
            recvs = [0] * P
            gload = [0] * len(topo.groups)
            chload = [0] * n
            chosen = []
            out = {}

            def fits(ci):
                u, v, cap = topo.chans[ci]
                if chload[ci] >= cap:
                    return False
                if self.ports == "single" and (sends[u] >= 1 or recvs[v] >= 1):
                    return False
                if self.ports == "half" and (sends[u] + recvs[u] >= 1 or sends[v] + recvs[v] >= 1):
                    return False
                return all(gload[g] < topo.groups[g][1] for g in topo.groups_of[ci])

            def take(ci, d):
                u, v, _ = topo.chans[ci]
                chload[ci] += d
                sends[u] += d
                recvs[v] += d
                for g in topo.groups_of[ci]:
                    gload[g] += d

            def apply():
                buf = list(st)
                # table order: channel id, then message (chunk)
                for ci, c in sorted(chosen):
                    u, v, _ = topo.chans[ci]
                    x = st[u * C + c]
                    b = buf[v * C + c]
                    if x & b == 0:
                        buf[v * C + c] = b | x
                    elif x & b == b:
                        buf[v * C + c] = x
                    else:
                        return None
                return tuple(buf)

            def rec(ci, start):
                self.nodes += 1
                if self.nodes > self.budget:
                    raise Budget()
                if ci == n:
                    ns = apply()
                    if ns is not None and ns not in out:
                        out[ns] = list(chosen)
                    return
                lst = cands[ci]
                for j in range(start, len(lst)):
                    if not fits(ci):
                        break
                    take(ci, 1)
                    chosen.append((ci, lst[j]))
                    rec(ci, j + 1)
                    chosen.pop()
                    take(ci, -1)
                rec(ci + 1, 0)

            rec(0, 0)
            return sorted(out.items(), key=lambda kv: -sum(bin(x).count("1") for x in kv[0]))

        def dfs(st, t):
            if self.done(st):
                return []
            if t == T or (st, t) in failed:
                return None
            if PRUNE and hopeless(st, T - t):
                failed.add((st, t))
                return None
            for ns, tr in successors(st, t):
                rest = dfs(ns, t + 1)
                if rest is not None:
                    return [tr] + rest
            failed.add((st, t))
            return None

        steps = dfs(self.init(), 0)
        if steps is None:
            return None
        return [[(topo.chans[ci][0], topo.chans[ci][1], c) for ci, c in s] for s in steps]


# ---------------------------------------------------------------------------------------------
# Witness checkers (tables written by collsched -o / pareto -d), from docs/semantics.md


def parse_set(text):
    out = set()
    for part in text.split(","):
        if ".." in part:
            a, b = part.split("..")
            out |= set(range(int(a), int(b) + 1))
        else:
            out.add(int(part))
    return out


def check_table(path, topo, coll, ports):
    """Problems of a plain table (empty list: valid and complete)."""
    with open(path) as f:
        tab = json.load(f)
    T = tab["steps"]
    rounds = tab.get("rounds", [1] * T)
    rounds = rounds + [1] * (T - len(rounds))
    if tab.get("chunks", 1) != coll.C:
        return [f"chunks {tab.get('chunks', 1)}, expected {coll.C}"]
    hold = list(coll.init)
    problems = []
    by_step = {}
    for tr in tab["transfers"]:
        by_step.setdefault(tr["step"], []).append(tr)
    for t in range(1, T + 1):
        r = rounds[t - 1]
        load = {}
        sends = [0] * topo.P
        recvs = [0] * topo.P
        gl = [0] * len(topo.groups)
        new = [0] * topo.P
        for tr in by_step.get(t, []):
            u, v, name = int(tr["from"]), int(tr["to"]), tr["msg"]
            if (u, v) not in topo.index:
                problems.append(f"step {t}: no channel {u}->{v}")
                continue
            if name not in coll.by_name:
                problems.append(f"step {t}: unknown message {name}")
                continue
            m = coll.by_name[name]
            ci = topo.index[(u, v)]
            if not hold[u] >> m & 1:
                problems.append(f"causality: step {t}: {u} sends {name} it does not hold")
            load[ci] = load.get(ci, 0) + 1
            sends[u] += 1
            recvs[v] += 1
            for g in topo.groups_of[ci]:
                gl[g] += 1
            new[v] |= 1 << m
        for ci, k in load.items():
            if k > topo.chans[ci][2] * r:
                problems.append(f"capacity: step {t}: channel {topo.chans[ci][:2]} carries {k}")
        for p in range(topo.P):
            if ports == "single" and (sends[p] > r or recvs[p] > r):
                problems.append(f"ports: step {t}: processor {p}")
            if ports == "half" and sends[p] + recvs[p] > r:
                problems.append(f"ports: step {t}: processor {p}")
        for g, k in enumerate(gl):
            if k > topo.groups[g][1] * r:
                problems.append(f"capacity: step {t}: group {topo.groups[g][0]} carries {k}")
        for p in range(topo.P):
            hold[p] |= new[p]
    for p in range(topo.P):
        if coll.goal[p] & ~hold[p]:
            problems.append(f"completeness: processor {p} misses "
                            + ", ".join(coll.msgs[m][0] for m in bits(coll.goal[p] & ~hold[p])))
    return problems


def check_reduction_table(path, topo, rs, ports):
    with open(path) as f:
        tab = json.load(f)
    C, P = rs.C, topo.P
    buf = list(rs.init())
    problems = []
    by_step = {}
    for tr in tab["transfers"]:
        by_step.setdefault(tr["step"], []).append(tr)
    pat = re.compile(r"^a\((?:\{([0-9.,]+)\}|([0-9]+))(?:,([0-9]+))?\)$")
    for t in range(1, tab["steps"] + 1):
        before = list(buf)
        arrivals = []
        load = {}
        sends = [0] * P
        recvs = [0] * P
        gl = [0] * len(topo.groups)
        for tr in by_step.get(t, []):
            u, v = int(tr["from"]), int(tr["to"])
            mt = pat.match(tr["msg"])
            if not mt or (u, v) not in topo.index:
                problems.append(f"step {t}: cannot read {tr}")
                continue
            srcs = parse_set(mt.group(1)) if mt.group(1) else {int(mt.group(2))}
            c = int(mt.group(3)) if mt.group(3) is not None else 0
            x = sum(1 << s for s in srcs)
            if before[u * C + c] != x:
                problems.append(f"causality: step {t}: {u} sends {tr['msg']} but holds another")
            ci = topo.index[(u, v)]
            load[ci] = load.get(ci, 0) + 1
            sends[u] += 1
            recvs[v] += 1
            for g in topo.groups_of[ci]:
                gl[g] += 1
            arrivals.append((ci, c, x, v))
        for ci, k in load.items():
            if k > topo.chans[ci][2]:
                problems.append(f"capacity: step {t}: channel {topo.chans[ci][:2]}")
        for p in range(P):
            if ports == "single" and (sends[p] > 1 or recvs[p] > 1):
                problems.append(f"ports: step {t}: processor {p}")
            if ports == "half" and sends[p] + recvs[p] > 1:
                problems.append(f"ports: step {t}: processor {p}")
        for g, k in enumerate(gl):
            if k > topo.groups[g][1]:
                problems.append(f"capacity: step {t}: group {topo.groups[g][0]}")
        for ci, c, x, v in sorted(arrivals):
            b = buf[v * C + c]
            if x & b == 0:
                buf[v * C + c] = b | x
            elif x & b == b:
                buf[v * C + c] = x
            else:
                problems.append(f"causality: step {t}: arrival at {v} counts a source twice")
    if not rs.done(tuple(buf)):
        problems.append("completeness: a goal buffer is not full")
    return problems


# ---------------------------------------------------------------------------------------------
# Driving collsched and the search


def run_json(cmd):
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode not in (0, 1, 3):
        raise SystemExit(f"audit: {' '.join(cmd)} exited {p.returncode}: {p.stderr.strip()}")
    return json.loads(p.stdout)


def least_steps(search_feasible, upto, witness_steps=None):
    """The least T <= upto with a complete table, or None; Budget propagates. When a witness of
    witness_steps steps is valid by the independent checker, only the horizons below it are
    searched (each refuted exhaustively, or the search finds a shorter table)."""
    top = upto if witness_steps is None else witness_steps - 1
    for T in range(1, top + 1):
        if search_feasible(T) is not None:
            return T
    return witness_steps


def audit_optimize(exe, inst, tmp, budget):
    topo_spec, coll_name, ports, C = inst
    topo = parse_topology(topo_spec)
    cmd = [exe, "optimize", "--topology", topo_spec, "--collective", coll_name, "--json",
           "--timeout", "120"]
    if ports != "multi":
        cmd += ["--model", f"ports={ports}"]
    reduction = coll_name.startswith("reduce") or coll_name in ("allreduce", "scan")
    if C is not None and (C > 1 or reduction):
        cmd += ["--chunks", str(C)]
    witness = os.path.join(tmp, "w.json")
    if os.path.exists(witness):
        os.remove(witness)
    cmd += ["-o", witness]
    t0 = time.time()
    res = run_json(cmd)
    tool_s = time.time() - t0
    row = {"topology": topo_spec, "collective": coll_name, "ports": ports, "chunks": C,
           "tool": res.get("optimum"), "status": res.get("status"),
           "lower_bound": res.get("lower_bound"), "problems": []}
    if reduction:
        C = ReduceSearch(topo, coll_name, ports, 1, C).C
        row["chunks"] = C
    probs = row["problems"]
    valid_steps = None
    if res.get("status") in ("proved", "found"):
        if not os.path.exists(witness):
            probs.append("no witness written")
        else:
            with open(witness) as f:
                wt = json.load(f)
            if wt["steps"] != res.get("optimum"):
                probs.append(f"witness has {wt['steps']} steps, optimum {res.get('optimum')}")
            if reduction:
                bad = check_reduction_table(
                    witness, topo, ReduceSearch(topo, coll_name, ports, 1, C),
                    ports)
            else:
                bad = check_table(witness, topo, Coll(coll_name, topo.P, C), ports)
            probs += ["witness: " + b for b in bad]
            row["witness"] = "valid" if not bad else "INVALID"
            if not bad:
                valid_steps = wt["steps"]
    t0 = time.time()
    upto = max(res.get("optimum") or 0, res.get("lower_bound") or 0) + 2
    try:
        if reduction:
            rs = ReduceSearch(topo, coll_name, ports, budget, C)
            opt = least_steps(rs.feasible, upto, valid_steps)
        else:
            s = Search(topo, Coll(coll_name, topo.P, C), ports, budget)
            opt = least_steps(lambda T: s.feasible([1] * T), upto, valid_steps)
    except Budget:
        opt = "budget"
    # the search's own schedule at the witness's length (a check of the search against the
    # checker: a valid witness the search refutes would be a bug of this script)
    row["own"] = "-"
    if valid_steps is not None and opt == valid_steps:
        try:
            if reduction:
                own = ReduceSearch(topo, coll_name, ports, budget // 10, C).feasible(valid_steps)
            else:
                own = Search(topo, Coll(coll_name, topo.P, C), ports,
                             budget // 10).feasible([1] * valid_steps)
            row["own"] = "found" if own is not None else "NONE"
            if own is None:
                probs.append("the search refutes the length of a valid witness (audit bug)")
        except Budget:
            row["own"] = "budget"
    row["brute"] = opt
    row["brute_s"] = round(time.time() - t0, 2)
    row["tool_s"] = round(tool_s, 2)
    if opt == "budget":
        probs.append("search budget exceeded (no verdict)")
    else:
        if res.get("status") == "proved" and res.get("optimum") != opt:
            probs.append(f"proved {res.get('optimum')} but the least is {opt}")
        if opt is not None and (res.get("lower_bound") or 0) > opt:
            probs.append(f"lower bound {res.get('lower_bound')} > least {opt}")
        bounds = res.get("bounds") or (res.get("dual") or {}).get("bounds") or []
        for b in bounds:
            if b.get("routes", "any") == "any" and opt is not None and b["steps"] > opt:
                probs.append(f"bound {b['name']} = {b['steps']} > least {opt}")
    return row


def compositions(R, S):
    """Every split of R rounds over S steps, each at least 1."""
    for cut in itertools.combinations(range(1, R), S - 1):
        edges = (0,) + cut + (R,)
        yield [edges[i + 1] - edges[i] for i in range(S)]


def audit_pareto(exe, inst, tmp, budget):
    topo_spec, coll_name, ports, K = inst
    topo = parse_topology(topo_spec)
    d = os.path.join(tmp, "pareto")
    os.makedirs(d, exist_ok=True)
    for f in os.listdir(d):
        os.remove(os.path.join(d, f))
    cmd = [exe, "pareto", "--topology", topo_spec, "--collective", coll_name, "--json",
           "--max-chunks", str(K), "--timeout", "120", "-d", d]
    if ports != "multi":
        cmd += ["--model", f"ports={ports}"]
    res = run_json(cmd)
    rows = []
    searches = {}
    for row in res.get("rows", []):
        S = row["steps"]
        for a in row["attempts"]:
            C, R, ans = a["chunks"], a["rounds"], a["answer"]
            if C not in searches:
                searches[C] = Search(topo, Coll(coll_name, topo.P, C), ports, budget)
            s = searches[C]
            t0 = time.time()
            try:
                found = any(s.feasible(split) is not None for split in compositions(R, S))
                brute = "sat" if found else "unsat"
            except Budget:
                brute = "budget"
            probs = []
            if brute == "budget":
                probs.append("search budget exceeded (no verdict)")
            elif ans in ("sat", "unsat") and ans != brute:
                probs.append(f"collsched {ans}, exhaustive {brute}")
            rows.append({"topology": topo_spec, "collective": coll_name, "ports": ports,
                         "steps": S, "chunks": C, "rounds": R, "tool": ans, "brute": brute,
                         "brute_s": round(time.time() - t0, 2), "problems": probs})
    # every frontier file is a valid table; the bandwidth bound is at most every feasible R/C
    for pt in res.get("frontier", []):
        C = pt["chunks"]
        for f in pt.get("files", []):
            if f.endswith(".json"):
                bad = check_table(f, topo, Coll(coll_name, topo.P, C), ports)
                rows.append({"topology": topo_spec, "collective": coll_name, "ports": ports,
                             "steps": pt["steps"], "chunks": C, "rounds": pt["rounds"],
                             "tool": "frontier point", "brute": "valid" if not bad else "INVALID",
                             "brute_s": 0, "problems": ["witness: " + b for b in bad]})
    return res, rows


def audit_rounds(exe, inst, budget):
    """optimize --chunks C --rounds R: the least S <= R with at most R rounds in all."""
    topo_spec, coll_name, ports, C, R = inst
    topo = parse_topology(topo_spec)
    cmd = [exe, "optimize", "--topology", topo_spec, "--collective", coll_name, "--json",
           "--timeout", "120", "--chunks", str(C), "--rounds", str(R)]
    if ports != "multi":
        cmd += ["--model", f"ports={ports}"]
    res = run_json(cmd)
    s = Search(topo, Coll(coll_name, topo.P, C), ports, budget)
    t0 = time.time()
    least = None
    try:
        for S in range(1, R + 1):
            if any(s.feasible(split) is not None for split in compositions(R, S)):
                least = S
                break
    except Budget:
        least = "budget"
    probs = []
    if least == "budget":
        probs.append("search budget exceeded (no verdict)")
    elif res.get("status") == "proved" and res.get("optimum") != least:
        probs.append(f"proved {res.get('optimum')} but the least is {least}")
    elif res.get("status") == "infeasible" and least is not None:
        probs.append(f"infeasible but {least} steps exist")
    elif least is None and res.get("status") != "infeasible":
        probs.append(f"status {res.get('status')} but no schedule exists")
    return {"topology": topo_spec, "collective": coll_name, "ports": ports, "steps": "least",
            "chunks": C, "rounds": R, "tool": f"{res.get('optimum')} {res.get('status')}",
            "brute": str(least), "brute_s": round(time.time() - t0, 2), "problems": probs}


def rounds_instances(files, quick, hard):
    if hard:
        return []
    out = [("ring:4", "allgather", "multi", 2, 3), ("ring:4", "allgather", "multi", 2, 2),
           ("ring:5", "broadcast:0", "multi", 3, 3), ("ring:5", "broadcast:0", "multi", 3, 4),
           ("complete:3", "allgather", "single", 2, 4), ("complete:3", "allgather", "single", 2, 3),
           (files["asym4"], "gather:0", "multi", 3, 4), (files["switch4"], "broadcast:0", "multi", 2, 3)]
    return out[:2] if quick else out


def graph_files(tmp):
    """The tiny graph files of the audit (docs/topologies.md format)."""
    files = {}
    box = {"processors": 4,
           "edges": [[u, v] for u in range(4) for v in range(u + 1, 4)],
           "groups": [g for p in range(4) for g in
                      ({"name": f"gpu{p}.out", "cap": 1, "out_of": p},
                       {"name": f"gpu{p}.in", "cap": 1, "into": p})]}
    # asymmetric: a triangle 0-1-2 with a double link 0-1, a tail 2-3, and a group that lets
    # the two channels out of 0 carry 2 together (less than their 3)
    asym = {"processors": 4,
            "edges": [[0, 1, 2], [1, 2], [0, 2], [2, 3]],
            "groups": [{"name": "nic0", "cap": 2, "out_of": 0},
                       {"name": "pair", "cap": 1, "channels": [[1, 2], [3, 2]]}]}
    # a 3-GPU switch box of capacity 2 per GPU and direction, every link of capacity 1
    box3 = {"processors": 3, "edges": [[0, 1], [0, 2], [1, 2]],
            "groups": [g for p in range(3) for g in
                       ({"name": f"gpu{p}.out", "cap": 1, "out_of": p},
                        {"name": f"gpu{p}.in", "cap": 1, "into": p})]}
    for name, g in (("switch4", box), ("asym4", asym), ("switch3", box3)):
        path = os.path.join(tmp, name + ".json")
        with open(path, "w") as f:
            json.dump(g, f)
        files[name] = "graph:" + path
    return files


# Beyond the default node budget (each refutation below the optimum needs more than 3 million
# search nodes, minutes of Python): run with --hard and a larger --budget.
def hard_instances(files):
    return [("linear:4", "alltoall", "half", 1), (files["asym4"], "alltoall", "multi", 1),
            (files["asym4"], "alltoall", "single", 1), (files["asym4"], "alltoall", "half", 1),
            (files["asym4"], "allgather", "single", 2), (files["asym4"], "allgather", "half", 2),
            ("ring:4", "reduce_scatter", "half", None),
            ("complete:4", "reduce_scatter", "half", None),
            ("linear:4", "reduce_scatter", "single", None),
            ("linear:4", "reduce_scatter", "half", None),
            ("hypercube:2", "reduce_scatter", "half", None), ("hypercube:2", "scan", "multi", None),
            ("hypercube:2", "scan", "single", None), ("hypercube:2", "scan", "half", None),
            ("ring:3", "allreduce", "single", None)]


def instances(files, quick, hard):
    if hard:
        return hard_instances(files)
    small = ["ring:3", "ring:4", "ring:5", "complete:3", "complete:4", "linear:3", "linear:4",
             "hypercube:2", files["switch4"], files["asym4"], files["switch3"]]
    colls = ["broadcast:0", "allgather", "scatter:0", "gather:0", "alltoall"]
    out = []
    for topo in small:
        for ports in ("multi", "single", "half"):
            for coll in colls:
                out.append((topo, coll, ports, 1))
    # two chunks on the smallest ones
    for topo in ["ring:3", "ring:4", "linear:3", "complete:3", files["switch3"], files["asym4"]]:
        for ports in ("multi", "single", "half"):
            for coll in ["broadcast:0", "allgather", "scatter:0", "gather:0"]:
                out.append((topo, coll, ports, 2))
        if topo in ("ring:3", "linear:3", "complete:3") or "switch3" in topo:
            out.append((topo, "alltoall", "multi", 2))
    # reductions under the buffer rule (C = None: the tool's default, P chunks for
    # reduce_scatter and allreduce, 1 for reduce and scan)
    for topo in ["ring:3", "ring:4", "ring:5", "complete:3", "complete:4", "linear:3",
                 "linear:4", "hypercube:2", files["switch3"], files["switch4"]]:
        for ports in ("multi", "single", "half"):
            out.append((topo, "reduce:0", ports, None))
            out.append((topo, "scan", ports, None))
            if topo not in ("ring:5",) and "switch4" not in topo:
                out.append((topo, "reduce_scatter", ports, None))
    for topo in ["ring:3", "linear:3"]:
        for ports in ("multi", "single"):
            out.append((topo, "allreduce", ports, None))
    for topo in ["ring:3", "ring:4", "complete:3", "complete:4", "linear:3", "linear:4",
                 "hypercube:2", "ring:5"]:
        for ports in ("multi", "single", "half"):
            out.append((topo, "allreduce", ports, 1))
    hard = set(hard_instances(files))
    out = [i for i in out if i not in hard]
    if quick:
        out = [i for i in out if i[0] in ("ring:3", "ring:4", "complete:3")]
    return out


def pareto_instances(files, quick, hard):
    if hard:
        return []
    out = [("ring:3", "broadcast:0", "multi", 3), ("ring:4", "allgather", "multi", 3),
           ("complete:4", "broadcast:0", "multi", 3), ("ring:5", "broadcast:0", "multi", 3),
           ("linear:4", "broadcast:0", "multi", 3), (files["switch4"], "broadcast:0", "multi", 3),
           (files["asym4"], "broadcast:0", "multi", 2), (files["asym4"], "gather:0", "multi", 3),
           (files["asym4"], "scatter:0", "multi", 3), ("ring:4", "gather:0", "multi", 2),
           ("complete:3", "allgather", "single", 3)]
    return out[:3] if quick else out


def short(spec):
    if spec.startswith("graph:"):
        return "graph:" + os.path.basename(spec[6:])
    return spec


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--collsched", default=os.path.join(ROOT, "build", "tools", "collsched"))
    ap.add_argument("--quick", action="store_true", help="ring:3, ring:4, complete:3 only")
    ap.add_argument("--budget", type=int, default=3_000_000, help="search nodes per horizon")
    ap.add_argument("--hard", action="store_true",
                    help="only the instances beyond the default budget (give a larger --budget)")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--progress", action="store_true", help="one line per instance on stderr")
    ap.add_argument("--no-prune", action="store_true",
                    help="leave out the necessary conditions (a check of the search; slower)")
    args = ap.parse_args()
    global PRUNE
    PRUNE = not args.no_prune
    exe = args.collsched
    if not os.access(exe, os.X_OK):
        print(f"audit: {exe} is not an executable", file=sys.stderr)
        return 2
    start = time.time()
    with tempfile.TemporaryDirectory(prefix="collsched-audit-") as tmp:
        files = graph_files(tmp)
        rows = []
        for i in instances(files, args.quick, args.hard):
            rows.append(audit_optimize(exe, i, tmp, args.budget))
            if args.progress:
                r = rows[-1]
                print(f"audit: {short(i[0])} {i[1]} {i[2]} C={r['chunks']}: {r['tool']} {r['status']} / "
                      f"{r['brute']} ({r['brute_s']} s)", file=sys.stderr, flush=True)
        prows = []
        for i in pareto_instances(files, args.quick, args.hard):
            prows += audit_pareto(exe, i, tmp, args.budget)[1]
        for i in rounds_instances(files, args.quick, args.hard):
            prows.append(audit_rounds(exe, i, args.budget))
    bad = [r for r in rows + prows if r["problems"]]
    if args.json:
        print(json.dumps({"optimize": rows, "pareto": prows, "disagreements": len(bad)}, indent=1))
    else:
        print("optimize: least steps, collsched against exhaustive search")
        print(f"{'topology':<20} {'collective':<15} {'ports':<6} {'C':>2} {'collsched':>16} "
              f"{'lb':>3} {'exhaustive':>10} {'witness':>8} {'own':>6}  verdict")
        for r in rows:
            tool = f"{r['tool']} {r['status']}"
            print(f"{short(r['topology']):<20} {r['collective']:<15} {r['ports']:<6} "
                  f"{r['chunks']:>2} {tool:>16} {str(r['lower_bound']):>3} {str(r['brute']):>10} "
                  f"{r.get('witness', '-'):>8} {r['own']:>6}  {'; '.join(r['problems']) or 'agree'}")
        print()
        print("pareto: every (steps S, chunks C, rounds R) collsched decided, against exhaustive "
              "search;\n  S = least: optimize --chunks C --rounds R (the least S <= R)")
        print(f"{'topology':<20} {'collective':<12} {'ports':<6} {'S':>2} {'C':>2} {'R':>2} "
              f"{'collsched':>15} {'exhaustive':>10}  verdict")
        for r in prows:
            print(f"{short(r['topology']):<20} {r['collective']:<12} {r['ports']:<6} "
                  f"{r['steps']:>2} {r['chunks']:>2} {r['rounds']:>2} {r['tool']:>15} "
                  f"{r['brute']:>10}  {'; '.join(r['problems']) or 'agree'}")
        print()
        print(f"{len(rows)} optimize instances, {len(prows)} pareto decisions, "
              f"{len(bad)} disagreements, {time.time() - start:.1f} s")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
