#!/usr/bin/env python3
"""Writes the MSCCL-IR test programs of tests/data/msccl the way MSCCLang (microsoft/msccl-tools)
lowers and prints them, re-implemented here from its documented behaviour (this is not its code):

- every chunk copy between ranks is a send on the source rank and a receive on the destination,
  a copy on one rank is a `cpy`; each op depends on the last op of its rank that wrote a chunk it
  reads or that read or wrote a chunk it writes;
- ops go to thread blocks given by hand (sendtb/recvtb) or, automatically, to the thread block
  of their (send peer, receive peer, channel), local copies to the first thread block of the rank;
  a receive whose only dependent is the send of the chunk it received, on the same thread block
  and channel, becomes one `rcs` step (receive, copy, send) in the receive's place;
- the XML writer (ir_to_xml, old format): thread blocks sorted by (send, recv, chan) and numbered
  in that order, dependencies inside a thread block dropped, a dependency already implied by an
  earlier step of the thread block dropped, every step some other step waits for marked
  hasdep="1", extra dependencies moved to `nop` steps before the step, `s` the step's index,
  attributes in ir_to_xml's order, two-space indentation, no XML declaration.

Usage: python3 make_msccl.py OUTDIR   (writes allgather_ring.xml, alltoall_allpairs.xml,
alltoall_two_step.xml, allreduce_ring_inplace.xml (in place, rrs/rrcs/rcs), pipeline_custom.xml
(coll="custom") and mutated copies: a dropped dependency, two swapped sends, a missing receive, a
forward without reduction, a copy that does not wait for its receive; the tests read the committed
copies)."""
import sys
import xml.etree.ElementTree as ET


class Op:
    def __init__(self, rank, inst, src, dst, cnt, send=-1, recv=-1, chan=0, tb=None):
        self.rank, self.inst, self.src, self.dst, self.cnt = rank, inst, src, dst, cnt
        self.send, self.recv, self.chan, self.tb = send, recv, chan, tb
        self.deps = []


class Program:
    def __init__(self, name, coll, ngpus, inplace, proto, i_chunks, o_chunks):
        self.name, self.coll, self.ngpus, self.inplace, self.proto = name, coll, ngpus, inplace, proto
        self.i_chunks, self.o_chunks = i_chunks, o_chunks
        self.ops = []
        self.scratch = [dict() for _ in range(ngpus)]  # named buffer -> next free scratch index base

    def scratch_base(self, rank, name, size):
        d = self.scratch[rank]
        if name not in d:
            d[name] = sum(d.values()) if False else sum(v for v in d.values())
            d[name] = (len(d) - 1) * size
        return d[name]

    def copy(self, src_rank, src, dst_rank, dst, cnt=1, ch=0, sendtb=None, recvtb=None):
        """Copies cnt chunks from (buf, index) on src_rank to (buf, index) on dst_rank."""
        if src_rank == dst_rank:
            self.ops.append(Op(src_rank, "cpy", src, dst, cnt))
        else:
            send = Op(src_rank, "s", src, dst, cnt, send=dst_rank, chan=ch, tb=sendtb)
            recv = Op(dst_rank, "r", src, dst, cnt, recv=src_rank, chan=ch, tb=recvtb)
            recv.match = send
            self.ops += [send, recv]

    def lower(self):
        # dependencies per rank and chunk
        last_write, readers = {}, {}
        for op in self.ops:
            reads = [] if op.inst == "r" else [(op.src[0], op.src[1] + i) for i in range(op.cnt)]
            writes = [] if op.inst == "s" else [(op.dst[0], op.dst[1] + i) for i in range(op.cnt)]
            deps = []
            for slot in reads:
                w = last_write.get((op.rank, slot))
                if w is not None: deps.append(w)
            for slot in writes:
                w = last_write.get((op.rank, slot))
                if w is not None: deps.append(w)
                deps += readers.get((op.rank, slot), [])
            for d in deps:
                if d not in op.deps: op.deps.append(d)
            for slot in reads: readers.setdefault((op.rank, slot), []).append(op)
            for slot in writes:
                last_write[(op.rank, slot)] = op
                readers[(op.rank, slot)] = []
        # rcs fusion on the dependency graph: a receive whose only dependent is the send of the
        # chunk it received, on the same thread block and channel, becomes one rcs step
        dependents = {}
        for op in self.ops:
            for d in op.deps: dependents.setdefault(id(d), []).append(op)
        removed = set()
        for op in self.ops:
            if op.inst != "r": continue
            nxt = dependents.get(id(op), [])
            if len(nxt) != 1: continue
            s = nxt[0]
            if (s.inst == "s" and s.deps == [op] and s.src == op.dst and s.cnt == op.cnt and s.chan == op.chan
                    and s.tb == op.tb):
                op.inst, op.send = "rcs", s.send
                removed.add(id(s))
                for other in dependents.get(id(s), []):
                    other.deps = [op if d is s else d for d in other.deps]
                for other in self.ops:
                    if getattr(other, "match", None) is s: other.match = op
        self.ops = [op for op in self.ops if id(op) not in removed]
        # the order of steps in a thread block: by the hop at which the step sends (or receives,
        # when it only receives), so that both ends of a connection list its chunks in one order
        level = {}
        for op in self.ops:
            base = max((level[id(d)] for d in op.deps), default=-1)
            if op.inst in ("r", "rcs"):
                m = op.match
                arrive = level[id(m)]
                level[id(op)] = arrive + 1 if op.inst == "rcs" else arrive
            elif op.inst == "s":
                level[id(op)] = base + 1
            else:
                level[id(op)] = max(base, 0)
        self.level = level
        # thread blocks
        tbs = [dict() for _ in range(self.ngpus)]  # key -> list of ops; key = manual id or (send, recv, chan)
        meta = [dict() for _ in range(self.ngpus)]
        for op in self.ops:
            if op.tb is not None:
                key = ("manual", op.tb)
            elif op.inst == "cpy":
                key = next(iter(tbs[op.rank]), (op.send, op.recv, op.chan))
            else:
                key = (op.send, op.recv, op.chan)
            tbs[op.rank].setdefault(key, []).append(op)
            m = meta[op.rank].setdefault(key, [-1, -1, op.chan])
            if op.send >= 0: m[0] = op.send
            if op.recv >= 0: m[1] = op.recv
        for rank in range(self.ngpus):
            for key in tbs[rank]:
                tbs[rank][key].sort(key=lambda op: self.level[id(op)])  # stable: program order breaks ties
        return tbs, meta

    def xml(self):
        tbs, meta = self.lower()
        algo = ET.Element("algo")
        gpus = []
        tb_id, op_tb, op_idx = {}, {}, {}
        nchannels = 0
        has_dependence = set()
        for rank in range(self.ngpus):
            order = sorted(tbs[rank], key=lambda k: tuple(meta[rank][k]))
            blocks = []
            for i, key in enumerate(order):
                s, r, c = meta[rank][key]
                nchannels = max(nchannels, c + 1)
                blocks.append((s, r, c, tbs[rank][key]))
                for op in tbs[rank][key]:
                    op_tb[op] = i
            gpus.append(blocks)
        for rank, blocks in enumerate(gpus):
            for i, (s, r, c, ops) in enumerate(blocks):
                running = []
                for op in ops:
                    op.deps = [d for d in op.deps if op_tb[d] != i and d not in running]
                    running += op.deps
                    has_dependence.update(op.deps)
        for rank, blocks in enumerate(gpus):
            for i, (s, r, c, ops) in enumerate(blocks):
                new = []
                for op in ops:
                    for d in op.deps[1:]:
                        nop = Op(rank, "nop", None, None, 0)
                        nop.deps = [d]
                        new.append(nop)
                        op_idx[nop] = len(new) - 1
                    op.deps = op.deps[:1]
                    new.append(op)
                    op_idx[op] = len(new) - 1
                blocks[i] = (s, r, c, new)
                for op in new: op_tb[op] = i
        algo.set("name", self.name)
        algo.set("proto", self.proto)
        algo.set("nchannels", str(nchannels))
        algo.set("nchunksperloop", str(max(self.i_chunks, self.o_chunks)))
        algo.set("ngpus", str(self.ngpus))
        algo.set("coll", self.coll)
        algo.set("inplace", "1" if self.inplace else "0")
        for rank, blocks in enumerate(gpus):
            g = ET.SubElement(algo, "gpu")
            g.set("id", str(rank))
            g.set("i_chunks", str(self.i_chunks))
            g.set("o_chunks", str(self.o_chunks))
            used = [op.src[1] + op.cnt for _, _, _, ops in blocks for op in ops if op.src and op.src[0] == "s" and op.inst in ("s", "cpy")]
            used += [op.dst[1] + op.cnt for _, _, _, ops in blocks for op in ops if op.dst and op.dst[0] == "s" and op.inst in ("r", "rcs", "cpy")]
            g.set("s_chunks", str(max(used, default=0)))
            for i, (s, r, c, ops) in enumerate(blocks):
                t = ET.SubElement(g, "tb")
                t.set("id", str(i)); t.set("send", str(s)); t.set("recv", str(r)); t.set("chan", str(c))
                for op in ops:
                    e = ET.SubElement(t, "step")
                    e.set("s", str(op_idx[op]))
                    e.set("type", op.inst)
                    src = op.src if op.src else ("i", -1)
                    dst = op.dst if op.dst else ("o", -1)
                    e.set("srcbuf", src[0]); e.set("srcoff", str(src[1]))
                    e.set("dstbuf", dst[0]); e.set("dstoff", str(dst[1]))
                    e.set("cnt", str(op.cnt))
                    if op.deps:
                        e.set("depid", str(op_tb[op.deps[0]])); e.set("deps", str(op_idx[op.deps[0]]))
                    else:
                        e.set("depid", "-1"); e.set("deps", "-1")
                    e.set("hasdep", "1" if op in has_dependence else "0")
        ET.indent(algo, space="  ")
        return ET.tostring(algo, encoding="unicode") + "\n"


def allgather_ring(size):
    """allgather_ring.py with 1 channel: in step k, rank (i + k) sends chunk i to the next rank."""
    p = Program("allgather_ring_1channelsperring", "allgather", size, True, "LL128", 1, size)
    for step in range(size - 1):
        for index in range(size):
            rank = (index + step) % size
            nxt = (index + step + 1) % size
            p.copy(rank, ("o", index), nxt, ("o", index), sendtb=0, recvtb=0, ch=0)
    return p


def alltoall_allpairs(n):
    """alltoall_allpairs.py: chunk(r, input, i).copy(i, output, r) for every pair."""
    p = Program("alltoall_allpairs", "alltoall", n, False, "Simple", n, n)
    for r in range(n):
        for index in range(n):
            p.copy(r, ("i", index), index, ("o", r))
    return p


def alltoall_two_step(nodes, gpus):
    """alltoall_a100_two_step.py: gather the chunks for a remote node on one GPU (scratch
    buffer copy_<node>), send them in one step of cnt = gpus over the node link, then exchange
    the node's own chunks directly."""
    n = nodes * gpus
    p = Program("hierarchical_all_to_all", "alltoall", n, False, "Simple", n, n)
    def scratch(rank, node):  # the named buffer copy_<node>: gpus chunks per remote node, in order
        others = [m for m in range(nodes) if m != rank // gpus]
        return others.index(node) * gpus
    for n1 in range(nodes):
        for r in range(1, nodes):
            n2 = (n1 + r) % nodes
            for g1 in range(gpus):
                rank1 = n1 * gpus + g1
                for g2 in range(gpus):
                    rank2 = n1 * gpus + g2
                    index = n2 * gpus + g2
                    p.copy(rank1, ("i", index), rank2, ("s", scratch(rank2, n2) + g1))
        for r in range(1, nodes):
            n2 = (n1 + r) % nodes
            for g1 in range(gpus):
                rank = n1 * gpus + g1
                ib_peer = n2 * gpus + g1
                p.copy(rank, ("s", scratch(rank, n2)), ib_peer, ("o", n1 * gpus), cnt=gpus,
                       ch=((n1 + n2) % gpus) * 2 + (rank % 2) + 2)
    for rank in range(n):
        for g in range(gpus):
            index = (rank // gpus) * gpus + g
            p.copy(rank, ("i", index), index, ("o", rank))
    return p


def tb_xml(algo_attrs, gpus):
    """A program given thread block by thread block: gpus is a list of (i_chunks, o_chunks, s_chunks,
    [(send, recv, chan, [(type, srcbuf, srcoff, dstbuf, dstoff, cnt, depid, deps, hasdep), ...]), ...])."""
    algo = ET.Element("algo")
    for k, v in algo_attrs:
        algo.set(k, str(v))
    for rank, (ic, oc, sc, tbs) in enumerate(gpus):
        g = ET.SubElement(algo, "gpu")
        g.set("id", str(rank)); g.set("i_chunks", str(ic)); g.set("o_chunks", str(oc)); g.set("s_chunks", str(sc))
        for i, (snd, rcv, chan, steps) in enumerate(tbs):
            t = ET.SubElement(g, "tb")
            t.set("id", str(i)); t.set("send", str(snd)); t.set("recv", str(rcv)); t.set("chan", str(chan))
            for k, (ty, sb, so, db, do, cnt, depid, deps, hasdep) in enumerate(steps):
                e = ET.SubElement(t, "step")
                for key, val in (("s", k), ("type", ty), ("srcbuf", sb), ("srcoff", so), ("dstbuf", db), ("dstoff", do),
                                 ("cnt", cnt), ("depid", depid), ("deps", deps), ("hasdep", hasdep)):
                    e.set(key, str(val))
    ET.indent(algo, space="  ")
    return ET.tostring(algo, encoding="unicode") + "\n"


def allreduce_ring_inplace(n):
    """The ring allreduce in the shape msccl-tools writes it (allreduce_a100_ring.py, 1 channel, 1
    instance): in place, everything in the input buffer (i_chunks = n, o_chunks = 0), one thread
    block per rank sending to the next and receiving from the previous: s, then n-2 fused
    receive-reduce-send (rrs), one receive-reduce-copy-send (rrcs) that completes chunk, n-2
    receive-copy-send (rcs) of the sums, and a last receive (r). Rank r starts the ring of chunk r."""
    gpus = []
    for r in range(n):
        steps = [("s", "i", r, "i", r, 1, -1, -1, 0)]
        for k in range(1, n - 1):
            c = (r - k) % n
            steps.append(("rrs", "i", c, "i", c, 1, -1, -1, 0))
        c = (r + 1) % n
        steps.append(("rrcs", "i", c, "i", c, 1, -1, -1, 0))
        for k in range(n - 2):
            c = (r - k) % n
            steps.append(("rcs", "i", c, "i", c, 1, -1, -1, 0))
        c = (r + 2) % n
        steps.append(("r", "i", c, "i", c, 1, -1, -1, 0))
        gpus.append((n, 0, 0, [((r + 1) % n, (r - 1) % n, 0, steps)]))
    attrs = [("name", "allreduce_ring_inplace"), ("proto", "LL128"), ("nchannels", 1), ("nchunksperloop", n), ("ngpus", n),
             ("coll", "allreduce"), ("inplace", 1)]
    return tb_xml(attrs, gpus)


def pipeline_custom(n, k):
    """A custom collective in the shape of msccl-tools' alltonext_forward.py (one node): rank r < n-1
    sends its k input chunks to the same output chunks of rank r+1, through a scratch chunk at the
    receiver (receive into scratch, then copy to the output, the copy waiting for the receive)."""
    gpus = []
    for r in range(n):
        tbs = []
        if r + 1 < n:
            tbs.append((r + 1, -1, 0, [("s", "i", c, "s", c, 1, -1, -1, 0) for c in range(k)]))
        if r > 0:
            tbs.append((-1, r - 1, 0, [("r", "i", c, "s", c, 1, -1, -1, 1) for c in range(k)]))
            tbs.append((-1, -1, 0, [("cpy", "s", c, "o", c, 1, len(tbs) - 1, c, 0) for c in range(k)]))
        gpus.append((k, k if r > 0 else 0, k if r > 0 else 0, tbs))
    attrs = [("name", "pipeline"), ("proto", "Simple"), ("nchannels", 1), ("nchunksperloop", k), ("ngpus", n), ("coll", "custom"),
             ("inplace", 0)]
    return tb_xml(attrs, gpus)


def mutate(text, kind):
    """The mutated copies the tests expect collsched to catch (rank, thread block, step)."""
    algo = ET.fromstring(text)
    def tb(rank, **attrs):
        g = algo.find(f"gpu[@id='{rank}']")
        return next(t for t in g.findall("tb") if all(t.get(k) == str(v) for k, v in attrs.items()))
    if kind == "dropped_dependency":  # rank 0's node-link send no longer waits for its local copy
        t = tb(0, send=2)
        nop, step = t.findall("step")[:2]  # the nop carries the other dependency: it moves onto the send
        step.set("depid", nop.get("depid"))
        step.set("deps", nop.get("deps"))
        step.set("s", "0")
        t.remove(nop)
    elif kind == "swapped_sends":  # rank 0 sends its two chunks for rank 1 in the other order
        a, b = tb(0, send=1).findall("step")[:2]
        for k in ("srcbuf", "srcoff", "dstbuf", "dstoff"):
            x, y = a.get(k), b.get(k)
            a.set(k, y)
            b.set(k, x)
    elif kind == "rcs_not_reduced":  # rank 1 forwards instead of reducing: every sum misses a(1)
        step = tb(1, send=2).findall("step")[1]
        step.set("type", "rcs")
    elif kind == "copy_too_early":  # the receiver's copy no longer waits for the receive: a race
        t = tb(1, send=-1, recv=-1)
        t.findall("step")[0].set("depid", "-1")
        t.findall("step")[0].set("deps", "-1")
    elif kind == "missing_receive":  # rank 2 drops its last receive from rank 1
        t = tb(2, recv=1)
        t.remove(t.findall("step")[-1])
    ET.indent(algo, space="  ")
    return ET.tostring(algo, encoding="unicode") + "\n"


if __name__ == "__main__":
    out = sys.argv[1] if len(sys.argv) > 1 else "."
    for name, prog in [("allgather_ring", allgather_ring(4)), ("alltoall_allpairs", alltoall_allpairs(4)),
                       ("alltoall_two_step", alltoall_two_step(2, 2))]:
        with open(f"{out}/{name}.xml", "w") as f:
            f.write(prog.xml())
    with open(f"{out}/allreduce_ring_inplace.xml", "w") as f:
        f.write(allreduce_ring_inplace(4))
    with open(f"{out}/pipeline_custom.xml", "w") as f:
        f.write(pipeline_custom(3, 2))
    for base, kind in [("alltoall_two_step", "dropped_dependency"), ("alltoall_two_step", "swapped_sends"),
                       ("allgather_ring", "missing_receive"), ("allreduce_ring_inplace", "rcs_not_reduced"),
                       ("pipeline_custom", "copy_too_early")]:
        with open(f"{out}/{base}.xml") as f:
            text = mutate(f.read(), kind)
        with open(f"{out}/{base}_{kind}.xml", "w") as f:
            f.write(text)
