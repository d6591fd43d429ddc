#!/usr/bin/env python3
"""Writes the MSCCL++ execution plans of tests/data/mscclpp/ (run from this folder: python3 make_plans.py).

Our own small writer of plans in the shapes MSCCL++'s Python DSL (python/mscclpp/language) writes
them: per GPU the "channels" list (memory and port channels, connected_to in the order the program
creates them), "remote_buffers" (rank, type, access_channel_types), per thread block its channel and
remote-buffer lists, and ops with the DSL's keys ("src_buff"/"dst_buff" entries with "type" or
"buffer_id", "index", "size"; "channel_ids", "channel_type"), with the DSL's automatic nops (before a
signal, after a wait: data_sync, internal/operations.py add_data_sync). No mscclpp code is used.

Plans (good):
  ring_allgather_8.json        ring allgather, 8 GPUs, in place, memory channels, Simple
  allpairs_allreduce_8_ll.json all-pairs allreduce, 8 GPUs, in place, LL packets (ppkt, repkt, upkt)
  allreduce_2node_8.json       hierarchical allreduce on 2 nodes x 4 GPUs: memory channels inside a
                               node, port channels across (pwsf), in place, Simple
Plans (good under one in-place convention only):
  reducescatter_inplace_4.json all-pairs reducescatter, 4 GPUs, in place, leaving rank r's result at
                               input chunk r as the DSL's tests/multi_node/reducescatter.py does: it
                               holds under NCCL's in-place convention (recvbuff = sendbuff + r *
                               recvcount) and is wrong under mscclpp's (recvbuff == sendbuff)
Plans (broken, each one mutation of a good one):
  broken_missing_signal.json   ring allgather without GPU 0's second signal: GPU 1 waits forever
  broken_swapped_channel.json  ring allgather where GPU 3 waits on its channel to GPU 4 instead of 2
  broken_put_races_read.json   ring allgather without the nop after GPU 2's first wait
  broken_wrong_chunk.json      ring allgather whose GPU 5 forwards output chunk 3 instead of 7 (its last put)
  broken_port_pws.json         the 2-node allreduce with pws instead of pwsf: the proxy reads the
                               chunk the next reduce writes
  broken_limits.json           ring allgather with a wait on 9 channel ids, a barrier with id 16 and
                               a wait without channel_type (the kernel skips it)
  broken_zero_chunks.json      ring allgather with input_chunks 0 on GPU 6 (the executor divides by zero)
"""
import copy
import json


class Plan:
    def __init__(self, name, collective, n, inplace, protocol="Simple", i_chunks=1, o_chunks=1, s_chunks=0):
        self.name, self.collective, self.n, self.inplace, self.protocol = name, collective, n, inplace, protocol
        self.gpus = []
        for g in range(n):
            self.gpus.append({"id": g, "input_chunks": i_chunks, "output_chunks": o_chunks, "scratch_chunks": s_chunks,
                              "threadblocks": [], "_chan": {"memory": [], "port": []}, "_rb": []})

    def tb(self, g, t):
        tbs = self.gpus[g]["threadblocks"]
        while len(tbs) <= t:
            tbs.append({"id": len(tbs), "ops": [], "_ch": {"memory": [], "port": []}, "_rbs": {"memory": [], "port": []}})
        return tbs[t]

    def channel(self, g, peer, kind):
        """The GPU-level channel g -> peer of a kind (created on first use, as the DSL does)."""
        lst = self.gpus[g]["_chan"][kind]
        if peer not in lst:
            lst.append(peer)
        return lst.index(peer)

    def tb_channel(self, g, t, peer, kind):
        glob = self.channel(g, peer, kind)
        ch = self.tb(g, t)["_ch"][kind]
        if glob not in ch:
            ch.append(glob)
        return ch.index(glob)

    def remote(self, g, t, rank, buf, kind):
        rbs = self.gpus[g]["_rb"]
        key = (rank, buf, kind)
        if key not in rbs:
            rbs.append(key)
        rid = rbs.index(key)
        lst = self.tb(g, t)["_rbs"][kind]
        if rid not in lst:
            lst.append(rid)
        return lst.index(rid)

    def op(self, g, t, op):
        self.tb(g, t)["ops"].append(op)

    def put(self, g, t, peer, src, dst, kind="memory", name="put"):
        """src = (buffer, index), dst = (buffer on peer, index); one chunk."""
        self.op(g, t, {"name": name, "src_buff": [{"type": src[0], "index": src[1], "size": 1}],
                       "dst_buff": [{"buffer_id": self.remote(g, t, peer, dst[0], kind), "index": dst[1], "size": 1}],
                       "channel_ids": [self.tb_channel(g, t, peer, kind)], "channel_type": kind})

    def sync(self, g, t, name, peers, kind="memory"):
        self.op(g, t, {"name": name, "channel_ids": [self.tb_channel(g, t, p, kind) for p in peers], "channel_type": kind})

    def nop(self, g, t):
        self.op(g, t, {"name": "nop"})

    def to_json(self):
        gpus = []
        for gpu in self.gpus:
            out = {k: gpu[k] for k in ("id", "input_chunks", "output_chunks", "scratch_chunks")}
            out["threadblocks"] = []
            for tb in gpu["threadblocks"]:
                out["threadblocks"].append({
                    "id": tb["id"], "ops": tb["ops"],
                    "channels": [{"channel_type": k, "channel_ids": v} for k, v in tb["_ch"].items() if v],
                    "remote_buffer_refs": [{"access_channel_type": k, "remote_buffer_ids": v} for k, v in tb["_rbs"].items() if v],
                })
            out["channels"] = [{"channel_type": k, "connected_to": v} for k, v in gpu["_chan"].items() if v]
            out["remote_buffers"] = [{"rank": r, "type": b, "access_channel_types": [k]} for (r, b, k) in gpu["_rb"]]
            out["semaphores"] = []
            gpus.append(out)
        return {"name": self.name, "collective": self.collective, "protocol": self.protocol, "inplace": self.inplace,
                "reuse_resources": False, "gpus": gpus, "num_threads_per_block": 1024, "use_double_scratch_buffer": False,
                "buffer_alignment": 16, "min_message_size": 0, "max_message_size": 2**64 - 1}


def ring_allgather(n=8):
    """Step s: GPU g puts output chunk (g - s) mod n into GPU g+1's output, signals it, waits for g-1."""
    p = Plan("ring_allgather", "allgather", n, True, i_chunks=1, o_chunks=n)
    for g in range(n):
        nxt, prv = (g + 1) % n, (g - 1) % n
        for s in range(n - 1):
            c = (g - s) % n
            p.put(g, 0, nxt, ("o", c), ("o", c))
            p.nop(g, 0)
            p.sync(g, 0, "signal", [nxt])
            p.sync(g, 0, "wait", [prv])
            p.nop(g, 0)
    return p


def allpairs_allreduce_ll(n=8):
    """GPU g owns chunk g: every GPU writes its chunk j as packets to GPU j's scratch slot (its rank);
    GPU j reduces its own chunk with the packets, writes the sum as packets to every GPU's scratch slot
    n + j, and every GPU unpacks them into its output (the shape of the DSL's allreduce_pkt.py)."""
    p = Plan("allpairs_allreduce_ll", "allreduce", n, True, protocol="LL", i_chunks=n, o_chunks=n, s_chunks=2 * n)
    for g in range(n):
        for j in range(n):
            if j != g:
                p.op(g, 0, {"name": "ppkt", "src_buff": [{"type": "i", "index": j, "size": 1}],
                            "dst_buff": [{"buffer_id": p.remote(g, 0, j, "s", "memory"), "index": g, "size": 1}],
                            "channel_ids": [p.tb_channel(g, 0, j, "memory")], "channel_type": "memory"})
        srcs = [{"type": "i", "index": g, "size": 1}] + [{"type": "s", "index": k, "size": 1} for k in range(n) if k != g]
        dsts = [{"type": "i", "index": g, "size": 1}]
        dsts += [{"buffer_id": p.remote(g, 0, j, "s", "memory"), "index": n + g, "size": 1} for j in range(n) if j != g]
        p.op(g, 0, {"name": "respkt", "src_buff": srcs, "dst_buff": dsts, "channel_type": "memory", "reduce_op": "sum"})
        for j in range(n):
            if j != g:
                p.op(g, 0, {"name": "upkt", "src_buff": [{"type": "s", "index": n + j, "size": 1}],
                            "dst_buff": [{"type": "o", "index": j, "size": 1}]})
    return p


def allreduce_2node(nodes=2, per=4, pws="pwsf"):
    """Hierarchical allreduce: GPU (k, i) owns chunk i. Inside node k every GPU puts its chunk j into
    GPU (k, j)'s scratch slot (its local index) and GPU (k, j) reduces them; across nodes GPU (k, i)
    sends its node's partial of chunk i to (1-k, i) through a port channel (put, signal, flush) and
    reduces what comes back; inside the node it puts the full chunk i into every node peer's output."""
    n = nodes * per
    p = Plan("allreduce_2node", "allreduce", n, True, i_chunks=per, o_chunks=per, s_chunks=per + 1)
    for g in range(n):
        k, i = divmod(g, per)
        node = [k * per + j for j in range(per) if k * per + j != g]
        for q in node:
            p.put(g, 0, q, ("i", q % per), ("s", i))
        p.nop(g, 0)
        p.sync(g, 0, "signal", node)
        p.sync(g, 0, "wait", node)
        p.nop(g, 0)
        p.op(g, 0, {"name": "re", "src_buff": [{"type": "i", "index": i, "size": 1}] +
                    [{"type": "s", "index": q % per, "size": 1} for q in node],
                    "dst_buff": [{"type": "i", "index": i, "size": 1}], "reduce_op": "sum"})
        p.nop(g, 0)
        other = (1 - k) * per + i
        p.put(g, 0, other, ("i", i), ("s", per), kind="port", name=pws)
        p.sync(g, 0, "wait", [other], kind="port")
        p.nop(g, 0)
        p.op(g, 0, {"name": "re", "src_buff": [{"type": "i", "index": i, "size": 1}, {"type": "s", "index": per, "size": 1}],
                    "dst_buff": [{"type": "i", "index": i, "size": 1}], "reduce_op": "sum"})
        p.nop(g, 0)
        for q in node:
            p.put(g, 0, q, ("i", i), ("o", i))
        p.nop(g, 0)
        p.sync(g, 0, "signal", node)
        p.sync(g, 0, "wait", node)
    return p


def reducescatter_inplace(n=4):
    """GPU g puts its input chunk q into GPU q's scratch slot g, signals and waits for every peer, and
    reduces its own input chunk g with the scratch slots into input chunk g (the result stays there)."""
    p = Plan("reducescatter_inplace", "reducescatter", n, True, i_chunks=n, o_chunks=1, s_chunks=n)
    for g in range(n):
        peers = [q for q in range(n) if q != g]
        for q in peers:
            p.put(g, 0, q, ("i", q), ("s", g))
        p.nop(g, 0)
        p.sync(g, 0, "signal", peers)
        p.sync(g, 0, "wait", peers)
        p.nop(g, 0)
        p.op(g, 0, {"name": "re", "src_buff": [{"type": "i", "index": g, "size": 1}] +
                    [{"type": "s", "index": q, "size": 1} for q in peers],
                    "dst_buff": [{"type": "i", "index": g, "size": 1}], "reduce_op": "sum"})
    return p


def write(name, plan_json):
    with open(name, "w") as f:
        json.dump(plan_json, f, indent=2)
        f.write("\n")


def find(ops, name, nth=0):
    """Index of the nth op called name."""
    hits = [k for k, o in enumerate(ops) if o["name"] == name]
    return hits[nth]


def main():
    ring = ring_allgather().to_json()
    write("ring_allgather_8.json", ring)
    write("allpairs_allreduce_8_ll.json", allpairs_allreduce_ll().to_json())
    write("allreduce_2node_8.json", allreduce_2node().to_json())
    write("broken_port_pws.json", allreduce_2node(pws="pws").to_json())
    write("reducescatter_inplace_4.json", reducescatter_inplace().to_json())

    b = copy.deepcopy(ring)
    ops = b["gpus"][0]["threadblocks"][0]["ops"]
    del ops[find(ops, "signal", 1)]
    write("broken_missing_signal.json", b)

    b = copy.deepcopy(ring)
    tb = b["gpus"][3]["threadblocks"][0]
    ops = tb["ops"]
    ops[find(ops, "wait", 0)]["channel_ids"] = [0]  # channel 0 of the thread block is the one to GPU 4
    write("broken_swapped_channel.json", b)

    b = copy.deepcopy(ring)
    ops = b["gpus"][2]["threadblocks"][0]["ops"]
    del ops[find(ops, "wait", 0) + 1]
    write("broken_put_races_read.json", b)

    b = copy.deepcopy(ring)
    ops = b["gpus"][5]["threadblocks"][0]["ops"]
    ops[find(ops, "put", 6)]["src_buff"][0]["index"] = 3
    write("broken_wrong_chunk.json", b)

    b = copy.deepcopy(ring)
    ops = b["gpus"][1]["threadblocks"][0]["ops"]
    ops[find(ops, "wait", 0)]["channel_ids"] = [1] * 9
    ops.insert(0, {"name": "barrier", "barrier_id": 16, "num_threadblocks": 1})
    del b["gpus"][2]["threadblocks"][0]["ops"][3]["channel_type"]
    write("broken_limits.json", b)

    b = copy.deepcopy(ring)
    b["gpus"][6]["input_chunks"] = 0
    write("broken_zero_chunks.json", b)


if __name__ == "__main__":
    main()
