// The lowering of every thread block and operation of an MSCCL++ plan
// (compiler/interop/mscclpp_lowering.hpp).
#include "compiler/interop/mscclpp_lowering.hpp"

#include <algorithm>
#include <map>
#include <numeric>
#include <optional>
#include <set>
#include <fmt/format.h>

#include "compiler/interop/async_program.hpp"
#include "compiler/interop/expect_file.hpp"
#include "compiler/core/json_tree.hpp"
#include "support/assert.hpp"
#include "support/error.hpp"

namespace collsched::mscclpp {

OpId Lowering::new_op(async::AgentId agent, const Op& op, std::string what) {
    OpId o = prog_.add_op(agent, {op.pos.line, op.pos.col});
    op_of_.push_back(&op);
    what_.push_back(std::move(what));
    moves_.push_back(false);
    return o;
}

OpId Lowering::in_segment(TbState& s, async::AgentId agent, const Op& op, std::string what) {
    OpId o = new_op(agent, op, std::move(what));
    if (s.gate) prog_.order(*s.gate, o);
    s.segment.push_back(o);
    return o;
}

OpId Lowering::data_op(TbState& s, const Op& op, std::string what) {
    if (s.next_data == s.data.size()) s.data.push_back(prog_.add_agent(std::uint32_t(s.gpu)));
    return in_segment(s, s.data[s.next_data++], op, std::move(what));
}

OpId Lowering::lane_op(TbState& s, int t, const Op& op, std::string what) {
    auto it = s.lanes.find(t);
    if (it == s.lanes.end()) it = s.lanes.emplace(t, prog_.add_agent(std::uint32_t(s.gpu))).first;
    return in_segment(s, it->second, op, std::move(what));
}

OpId Lowering::sync_op(TbState& s, const Op& op, std::string what) {
    OpId o = new_op(s.spine, op, std::move(what));
    if (s.gate) prog_.order(*s.gate, o);
    for (OpId x : s.segment) prog_.order(x, o);
    s.segment.clear();
    s.next_data = 0;
    s.gate = o;
    return o;
}

async::AgentId Lowering::proxy(int gpu, int channel) {
    auto [it, fresh] = proxies_.try_emplace({gpu, channel}, 0);
    if (fresh) it->second = prog_.add_agent(std::uint32_t(gpu));
    return it->second;
}

std::vector<Slot> Lowering::slots(const Op& op, int rank, Buf b, bool packet, std::int64_t index, std::int64_t size) {
    std::vector<Slot> out;
    const std::int64_t cap = capacity(rank, b, packet);
    if (index + size > cap) {
        finding("limit", op,
                fmt::format("{} chunks {}..{} of GPU {}'s {} buffer{}, which has {}: the executor does not check and "
                            "touches memory past its end",
                            info(op.code).name, index, index + size - 1, rank, buffer_name(b), packet ? " (as LL packets)" : "", cap));
        return out;
    }
    // tbg_size divides L_ <= 64, so total * (tbg_id + 1) <= 2^32 * 64 * 64 fits; a slice past the
    // op's chunks (tb_id >= tbg_size, a blind spot the reader names) is empty here
    const std::int64_t total = size * L_;
    const bool inside = op.tbg_id < op.tbg_size;
    const std::int64_t from = inside ? total * op.tbg_id / op.tbg_size : total, to = inside ? total * (op.tbg_id + 1) / op.tbg_size : total;
    for (std::int64_t x = from; x < to; ++x) out.push_back(slot(rank, b, packet, index + x / L_, x % L_));
    return out;
}

std::optional<Buf> Lowering::local(const Op& op, const BufRef& r, const char* role) {
    if (r.type) return r.type;
    fail(op, fmt::format("{} names no local buffer (\"type\")", role));
    return std::nullopt;
}

std::optional<std::pair<int, Buf>> Lowering::remote(const Op& op, const Tb& tb, const Gpu& gpu, const BufRef& r, const char* role) {
    if (r.buffer_id < 0) {
        fail(op, fmt::format("{} names no peer's buffer (\"buffer_id\")", role));
        return std::nullopt;
    }
    const Chan c = op.channel_type.value_or(Chan::none);
    if (c != Chan::memory && c != Chan::port) {
        fail(op, fmt::format("{} names a remote buffer, but the op's channel_type is {}: the parser throws \"Invalid channel "
                             "type\" (execution_plan.cc:493-501)",
                             role, op.channel_type ? fmt::format("\"{}\"", chan_name(c)) : std::string("missing")));
        return std::nullopt;
    }
    const auto& list = c == Chan::memory ? tb.memory_buffers : tb.port_buffers;
    if (std::size_t(r.buffer_id) >= list.size()) {
        fail(op, fmt::format("{} names remote buffer {} of the thread block's {} {} remote buffer{}: the executor reads past "
                             "the list",
                             role, r.buffer_id, list.size(), chan_name(c), list.size() == 1 ? "" : "s"));
        return std::nullopt;
    }
    const RemoteBuffer& rb = gpu.remote_buffers[std::size_t(list[std::size_t(r.buffer_id)])];
    if (std::find(rb.access.begin(), rb.access.end(), c) == rb.access.end())
        finding("blind spot", op,
                fmt::format("{} reaches remote buffer {} through a {} channel, but that buffer lists no {} access: the executor "
                            "maps it to registered memory 0 (bufferIndexMap default) and touches another buffer",
                            role, list[std::size_t(r.buffer_id)], chan_name(c), chan_name(c)));
    return std::pair(rb.rank, rb.type);
}

std::optional<int> Lowering::channel(const Op& op, const Tb& tb, Chan c, std::size_t t) {
    if (t >= op.channel_ids.size()) {
        fail(op, fmt::format("needs channel {} but lists {} channel id{}", t, op.channel_ids.size(), op.channel_ids.size() == 1 ? "" : "s"));
        return std::nullopt;
    }
    const auto& list = c == Chan::memory ? tb.memory : c == Chan::port ? tb.port : tb.switch_;
    const int id = op.channel_ids[t];
    if (id < 0 || std::size_t(id) >= list.size()) {
        fail(op, fmt::format("channel id {} but its thread block has {} {} channel{}: the kernel reads a channel handle past "
                             "them (execution_kernel.hpp:88-98)",
                             id, list.size(), chan_name(c), list.size() == 1 ? "" : "s"));
        return std::nullopt;
    }
    return list[std::size_t(id)];
}

std::uint64_t Lowering::signal_key(Chan c, int g, int k) const {
    const auto& pairs = c == Chan::memory ? mem_pair_ : port_pair_;
    const auto& peers = c == Chan::memory ? plan_.gpus[std::size_t(g)].memory_peers : plan_.gpus[std::size_t(g)].port_peers;
    const int p = peers[std::size_t(k)], back = pairs[std::size_t(g)][std::size_t(k)];
    const KeySpace s = c == Chan::memory ? memory_sem : port_sem;
    if (back < 0 || p < 0 || p >= P_) return key(s, g, phantom | std::uint32_t(k));  // nobody waits there
    return key(s, p, std::uint32_t(back));
}

void Lowering::lower_tb(int g, int t, const Tb* chan_tb) {
    const Gpu& gpu = plan_.gpus[std::size_t(g)];
    // the executor runs the ops at position t with the channels of the thread block whose id is t
    const Tb& ops_tb = gpu.tbs[std::size_t(t)];
    if (!chan_tb) chan_tb = &ops_tb;
    TbState s;
    s.gpu = g;
    s.tb = t;
    s.spine = prog_.add_agent(std::uint32_t(g));
    for (const Op& op : ops_tb.ops) {
        if (op.code == Code::pipeline) {
            if (!op.inner.empty())
                finding_once("pipeline", op,
                             "a pipeline is checked as one pass of its inner ops over whole chunks (the executor runs them in "
                             "slices of unit_size bytes; slices of different iterations are not compared)");
            for (const Op& in : op.inner) lower_op(s, gpu, *chan_tb, in);
        } else {
            lower_op(s, gpu, *chan_tb, op);
        }
    }
}

void Lowering::finding_once(const std::string& tag, const Op& op, std::string what) {
    if (notes_.insert(tag).second) notes_text_.push_back({"note", op.path, op.pos, std::move(what)});
}

bool Lowering::need_src(OpContext& c, std::size_t n) {
    if (c.op.src.size() >= n) return true;
    fail(c.op, fmt::format("needs {} src_buff entr{} and has {}", n, n == 1 ? "y" : "ies", c.op.src.size()));
    return false;
}

bool Lowering::need_dst(OpContext& c, std::size_t n) {
    if (c.op.dst.size() >= n) return true;
    fail(c.op, fmt::format("needs {} dst_buff entr{} and has {}", n, n == 1 ? "y" : "ies", c.op.dst.size()));
    return false;
}

void Lowering::lanes(OpId o, const std::vector<std::vector<Slot>>& ins, const std::vector<std::vector<Slot>>& outs, bool mark) {
    std::size_t n = ins.empty() ? 0 : ins[0].size();
    for (const auto& v : ins) n = std::min(n, v.size());
    for (const auto& v : outs) n = std::min(n, v.size());
    for (std::size_t x = 0; x < n; ++x) {
        async::Lane lane;
        for (const auto& v : ins) lane.in.push_back(async::Operand::read(v[x]));
        for (const auto& v : outs) lane.out.push_back(v[x]);
        lane.send = true;  // records the lane's value in the replay (no key: it goes nowhere)
        prog_.add_lane(o, std::move(lane));
    }
    if (mark) moves_[o] = true;
}

void Lowering::reads_packets(OpId o, const std::vector<Slot>& v) {
    for (const Slot& x : v) packet_reads_.push_back({o, x});
}

void Lowering::writes_packets(OpId o, const std::vector<Slot>& v) {
    for (const Slot& x : v) packet_writers_[x].push_back(o);
}

std::vector<Slot> Lowering::local_slots(OpContext& c, const BufRef& r, bool packet, std::int64_t size) {
    auto b = local(c.op, r, "an entry");
    return b ? slots(c.op, c.g, *b, packet, r.index, size) : std::vector<Slot>{};
}

std::vector<Slot> Lowering::remote_slots(OpContext& c, const BufRef& r, bool packet, std::int64_t index, std::int64_t size) {
    auto rb = remote(c.op, c.tb, c.gpu, r, "an entry");
    return rb ? slots(c.op, rb->first, rb->second, packet, index, size) : std::vector<Slot>{};
}

std::optional<Lowering::PortPut> Lowering::port_put(OpContext& c, std::size_t t, std::optional<OpId> after) {
    const Op& op = c.op;
    auto k = channel(op, c.tb, Chan::port, t);
    auto rb = remote(op, c.tb, c.gpu, op.dst[t], "dst_buff");
    if (!k || !rb) return std::nullopt;
    const OpId trig = lane_op(c.s, int(t), op, fmt::format("{}, channel {}", c.name, op.channel_ids[t]));
    push(c, int(t), *k);
    if (after) prog_.order(*after, trig);
    const OpId px = new_op(proxy(c.g, *k), op, fmt::format("{}, proxy of port channel {}", c.name, *k));
    prog_.order(trig, px);
    last_proxy_[{c.g, *k}] = px;
    return PortPut{*k, rb->first, rb->second, px};
}

void Lowering::push(OpContext& c, int t, int k) {
    // thread t pushes into the proxy's FIFO of port channel k (execution_kernel.hpp:96-98, 168-186, 275-289, and a flush's
    // TriggerSync, 120-127: one thread a channel); after another thread's push with no nop or barrier between, the two
    // land in either order
    auto [it, fresh] = pushes_.try_emplace({c.g, k}, LastPush{c.s.tb, t, c.s.gate, &c.op});
    const LastPush last = it->second;
    it->second = LastPush{c.s.tb, t, c.s.gate, &c.op};
    if (!fresh && last.tb == c.s.tb && last.thread != t && last.gate == c.s.gate)
        finding("blind spot", c.op,
                fmt::format("thread {} pushes into port channel {}'s FIFO after thread {} did in {} with no nop between: the two land "
                            "in either order, and the check takes them in the plan's",
                            t, k, last.thread, describe(*last.op)));
}

void Lowering::lower_op(TbState& s, const Gpu& gpu, const Tb& tb, const Op& op) {
    OpContext c{s, gpu, tb, op, s.gpu, describe(op), op.channel_type.value_or(Chan::none)};
    switch (op.code) {
        case Code::nop: sync_op(s, op, c.name); return;
        case Code::barrier: lower_barrier(c); return;
        case Code::signal:
        case Code::wait:
        case Code::rlxsignal:
        case Code::rlxwait: lower_semaphore_op(c); return;
        case Code::flush: lower_flush(c); return;
        case Code::sem_acquire:
        case Code::sem_release: lower_device_semaphore(c); return;
        case Code::put:
        case Code::pws:
        case Code::pwsf: lower_put(c); return;
        case Code::get: lower_get(c); return;
        case Code::copy: lower_copy(c); return;
        case Code::re:
        case Code::res:
        case Code::rre:
        case Code::rres: lower_reduce(c); return;
        case Code::cpkt: lower_copy_packets(c); return;
        case Code::upkt: lower_unpack_packets(c); return;
        case Code::ppkt: lower_put_packets(c); return;
        case Code::rppkt: lower_read_put_packets(c); return;
        case Code::repkt:
        case Code::respkt:
        case Code::recpkt:
        case Code::recspkt: lower_reduce_packets(c); return;
        case Code::glres:
        case Code::gstore:
        case Code::gstorepkt: lower_switch(c); return;
        case Code::pipeline: return;  // flattened by lower_tb
    }
}

/// A barrier among the thread blocks of a GPU: each round of calls joins at one op.
void Lowering::lower_barrier(OpContext& c) {
    const Op& op = c.op;
    OpId o = sync_op(c.s, op, c.name);
    if (op.barrier_id < 0 || op.num_threadblocks < 0) {
        fail(op, "a barrier needs \"barrier_id\" and \"num_threadblocks\" (the parser leaves them 0 otherwise)");
        return;
    }
    if (op.barrier_id >= 16)
        finding("limit", op,
                fmt::format("barrier_id {}; the kernel has 16 device syncers (MAX_DEVICE_SYNCERS, "
                            "execution_common.hpp:19; deviceSyncers[16], execution_kernel.hpp:27) and indexes past them",
                            op.barrier_id));
    // DeviceSyncer::sync(1) is __syncthreads only; sync(0) waits for a count of 0 that the first
    // arrival already passes: a deadlock (finish_barriers)
    if (op.num_threadblocks == 1) return;
    const int round = c.s.barrier_calls[op.barrier_id]++;
    auto& rounds = barriers_[{c.g, op.barrier_id}];
    if (rounds.agent == 0 && rounds.joins.empty()) rounds.agent = prog_.add_agent(std::uint32_t(c.g)) + 1;
    if (int(rounds.joins.size()) <= round) {
        rounds.joins.push_back(new_op(rounds.agent - 1, op, fmt::format("barrier {} of GPU {}, round {}", op.barrier_id, c.g, round + 1)));
        rounds.calls.emplace_back();
    }
    const OpId join = rounds.joins[std::size_t(round)];
    prog_.order(o, join);
    rounds.calls[std::size_t(round)].push_back({o, &op});
    c.s.gate = join;  // what follows the barrier waits for every participant
}

/// signal, wait and their relaxed forms on memory or port channels.
void Lowering::lower_semaphore_op(OpContext& c) {
    const Op& op = c.op;
    if (c.ct != Chan::memory && c.ct != Chan::port) {
        finding("blind spot", op,
                fmt::format("a {} on a {} channel: the kernel signals and waits on memory and port channels only, so "
                            "this op does nothing (execution_kernel.hpp:82-118)",
                            info(op.code).name, op.channel_type ? chan_name(c.ct) : "missing"));
        return;
    }
    const bool relaxed = op.code == Code::rlxsignal || op.code == Code::rlxwait;
    if (relaxed && c.ct == Chan::port)
        finding("blind spot", op, "a relaxed signal or wait on a port channel runs as a plain one (execution_kernel.hpp:96-98, 115-117)");
    const bool sig = op.code == Code::signal || op.code == Code::rlxsignal;
    const async::KeyKind kind = relaxed && c.ct == Chan::memory ? async::KeyKind::relaxed : async::KeyKind::semaphore;
    for (std::size_t t = 0; t < op.channel_ids.size(); ++t) {
        auto k = channel(op, c.tb, c.ct, t);
        if (!k) return;
        OpId o = lane_op(c.s, int(t), op, fmt::format("{}, channel {}", c.name, op.channel_ids[t]));
        if (sig && c.ct == Chan::port) {
            // the proxy signals in FIFO order after the channel's earlier puts
            push(c, int(t), *k);
            OpId px = new_op(proxy(c.g, *k), op, fmt::format("{}, proxy of port channel {}", c.name, *k));
            prog_.order(o, px);
            prog_.send(px, signal_key(c.ct, c.g, *k), kind);
            ++signals_[{c.ct, c.g, *k}];
        } else if (sig) {
            prog_.send(o, signal_key(c.ct, c.g, *k), kind);
            ++signals_[{c.ct, c.g, *k}];
        } else {
            prog_.receive(o, wait_key(c.ct, c.g, *k), kind);
            ++waits_[{c.ct, c.g, *k}];
        }
    }
}

/// A flush waits for the proxy's earlier puts on each port channel.
void Lowering::lower_flush(OpContext& c) {
    const Op& op = c.op;
    // handleFlush loops over nOutputs, which only dst_buff sets (execution_kernel.hpp:120-127,
    // execution_plan.cc:550-551): a flush without dst_buff waits for nothing
    for (std::size_t t = 0; t < op.dst.size() && t < op.channel_ids.size(); ++t) {
        auto k = channel(op, c.tb, Chan::port, t);
        if (!k) return;
        OpId o = lane_op(c.s, int(t), op, fmt::format("{}, channel {}", c.name, op.channel_ids[t]));
        push(c, int(t), *k);  // a TriggerSync into the FIFO: it waits only for what was pushed before it
        if (auto last = last_proxy_.find({c.g, *k}); last != last_proxy_.end()) prog_.order(last->second, o);
    }
}

/// sem_acquire and sem_release on the GPU's device semaphores.
void Lowering::lower_device_semaphore(OpContext& c) {
    const Op& op = c.op;
    for (std::size_t t = 0; t < op.semaphore_ids.size(); ++t) {
        const int id = op.semaphore_ids[t];
        if (id < 0 || std::size_t(id) >= c.gpu.semaphores.size()) {
            fail(op, fmt::format("semaphore {} but GPU {} declares {}: the kernel indexes past them", id, c.g,
                                 c.gpu.semaphores.size()));
            return;
        }
        OpId o = lane_op(c.s, int(t), op, fmt::format("{}, semaphore {}", c.name, id));
        if (op.code == Code::sem_release) {
            prog_.send(o, key(device_sem, c.g, std::uint32_t(id)), async::KeyKind::semaphore);
            ++releases_[{c.g, id}];
        } else {
            prog_.receive(o, key(device_sem, c.g, std::uint32_t(id)), async::KeyKind::semaphore);
            ++acquires_[{c.g, id}];
        }
    }
}

/// put, put-with-signal and put-with-signal-and-flush, through memory or port channels.
void Lowering::lower_put(OpContext& c) {
    const Op& op = c.op;
    if (op.src.empty() || op.dst.empty()) {
        fail(op, "a put needs src_buff and dst_buff");
        return;
    }
    for (std::size_t i = 0; i < op.dst.size(); ++i)
        if (i < op.src.size() && op.src[i].size != op.dst[i].size)
            finding("blind spot", op,
                    fmt::format("src_buff[{}] has {} chunks and dst_buff[{}] {}: the kernel copies the destination's "
                                "size (execution_kernel.hpp:162, 171)",
                                i, op.src[i].size, i, op.dst[i].size));
    if (c.ct == Chan::memory) {
        if (op.code != Code::put)
            finding("blind spot", op,
                    fmt::format("{} on a memory channel: the kernel's memory branch only copies and never signals "
                                "(execution_kernel.hpp:157-166)",
                                info(op.code).name));
        // all threads copy; every source is read from src_buff[0]'s buffer (execution_kernel.hpp:156)
        OpId o = data_op(c.s, op, c.name);
        for (std::size_t i = 0; i < op.dst.size(); ++i) {
            const BufRef& sr = op.src[std::min(i, op.src.size() - 1)];
            if (i >= op.src.size()) {
                fail(op, fmt::format("dst_buff[{}] has no src_buff[{}]", i, i));
                return;
            }
            if (op.src[i].type && op.src[0].type && *op.src[i].type != *op.src[0].type)
                finding("blind spot", op,
                        fmt::format("src_buff[{}] is in the {} buffer, but the kernel reads every source of a memory "
                                    "put from src_buff[0]'s buffer ({}) (execution_kernel.hpp:156-164)",
                                    i, buffer_name(*op.src[i].type), buffer_name(*op.src[0].type)));
            BufRef from = sr;
            from.type = op.src[0].type;
            lanes(o, {local_slots(c, from, false, op.dst[i].size)}, {remote_slots(c, op.dst[i], false, op.dst[i].index, op.dst[i].size)}, true);
        }
        return;
    }
    if (c.ct != Chan::port) {
        fail(op, fmt::format("a put on channel type {}: the kernel puts through memory and port channels only",
                             op.channel_type ? chan_name(c.ct) : "missing"));
        return;
    }
    for (std::size_t t = 0; t < op.dst.size(); ++t) {
        if (t >= op.src.size()) {
            fail(op, fmt::format("dst_buff[{}] has no src_buff[{}]", t, t));
            return;
        }
        auto pp = port_put(c, t);
        if (!pp) return;
        const int k = pp->channel, peer = c.gpu.port_peers[std::size_t(k)];
        if (peer != pp->rank)
            finding("blind spot", op,
                    fmt::format("puts into GPU {}'s buffer through port channel {}, which connects to GPU {}: the proxy "
                                "writes through the channel's connection with another rank's memory handle",
                                pp->rank, k, peer));
        const OpId px = pp->proxy;
        lanes(px, {local_slots(c, op.src[t], false, op.dst[t].size)}, {slots(op, pp->rank, pp->buf, false, op.dst[t].index, op.dst[t].size)}, true);
        if (op.code != Code::put) {
            OpId sg = new_op(proxy(c.g, k), op, fmt::format("{}, signal by the proxy of port channel {}", c.name, k));
            prog_.send(sg, signal_key(Chan::port, c.g, k), async::KeyKind::semaphore);
            ++signals_[{Chan::port, c.g, k}];
            last_proxy_[{c.g, k}] = sg;
            if (op.code == Code::pwsf) {
                OpId f = lane_op(c.s, int(t), op, fmt::format("{}, flush of channel {}", c.name, op.channel_ids[t]));
                prog_.order(sg, f);
            }
        }
    }
}

/// get: a peer's chunks into the local buffer, through memory channels.
void Lowering::lower_get(OpContext& c) {
    const Op& op = c.op;
    if (c.ct != Chan::memory) {
        fail(op, "a get reads through memory channels only (execution_kernel.hpp:130-145)");
        return;
    }
    OpId o = data_op(c.s, op, c.name);
    for (std::size_t i = 0; i < op.src.size(); ++i) {
        if (i >= op.dst.size()) {
            fail(op, fmt::format("src_buff[{}] has no dst_buff[{}]", i, i));
            return;
        }
        // the kernel copies the peer's chunk at the destination's offset to the local
        // buffer at the source's offset (execution_kernel.hpp:137-143: the offsets are swapped)
        if (op.src[i].index != op.dst[i].index)
            finding("blind spot", op,
                    fmt::format("get with src_buff[{}].index {} and dst_buff[{}].index {}: the kernel swaps the two "
                                "offsets (execution_kernel.hpp:137-143) and copies the peer's chunk {} into local chunk {}",
                                i, op.src[i].index, i, op.dst[i].index, op.dst[i].index, op.src[i].index));
        BufRef to = op.dst[i];
        to.index = op.src[i].index;
        lanes(o, {remote_slots(c, op.src[i], false, op.dst[i].index, op.src[i].size)}, {local_slots(c, to, false, op.src[i].size)}, true);
    }
}

/// copy within the GPU.
void Lowering::lower_copy(OpContext& c) {
    const Op& op = c.op;
    if (!need_src(c, 1) || !need_dst(c, 1)) return;
    OpId o = data_op(c.s, op, c.name);
    lanes(o, {local_slots(c, op.src[0], false, op.src[0].size)}, {local_slots(c, op.dst[0], false, op.src[0].size)}, false);
}

/// re, res, rre and rres: sum sources into the destination, local or through memory channels.
void Lowering::lower_reduce(OpContext& c) {
    const Op& op = c.op;
    if (!need_src(c, 1) || !need_dst(c, 1)) return;
    const bool remote_in = op.code == Code::rre || op.code == Code::rres;
    const bool remote_out = op.code == Code::res || op.code == Code::rres;
    if ((remote_in || remote_out) && c.ct != Chan::memory && (op.src.size() > 1 || op.dst.size() > 1)) {
        fail(op, "reads or writes peers' buffers through memory channels only, and has no memory channel_type");
        return;
    }
    const std::int64_t size = op.src[0].size;
    OpId o = data_op(c.s, op, c.name);
    std::vector<std::vector<Slot>> ins{local_slots(c, op.src[0], false, size)};
    for (std::size_t k = 1; k < op.src.size(); ++k)
        ins.push_back(remote_in ? remote_slots(c, op.src[k], false, op.src[k].index, size) : local_slots(c, op.src[k], false, size));
    std::vector<std::vector<Slot>> outs{local_slots(c, op.dst[0], false, size)};
    if (!remote_out && op.dst.size() > 1)
        finding("blind spot", op, fmt::format("{} writes dst_buff[0] only; the other {} entries are ignored", info(op.code).name, op.dst.size() - 1));
    for (std::size_t k = 1; remote_out && k < op.dst.size(); ++k) outs.push_back(remote_slots(c, op.dst[k], false, op.dst[k].index, size));
    lanes(o, ins, outs, remote_in || remote_out);
}

/// cpkt: plain data into LL packets.
void Lowering::lower_copy_packets(OpContext& c) {
    const Op& op = c.op;
    if (!need_src(c, 1) || !need_dst(c, 1)) return;
    OpId o = data_op(c.s, op, c.name);
    auto to = local_slots(c, op.dst[0], true, op.src[0].size);
    lanes(o, {local_slots(c, op.src[0], false, op.src[0].size)}, {to}, false);
    writes_packets(o, to);
}

/// upkt: LL packets from the scratch buffer into plain data.
void Lowering::lower_unpack_packets(OpContext& c) {
    const Op& op = c.op;
    if (!need_src(c, 1) || !need_dst(c, 1)) return;
    OpId o = data_op(c.s, op, c.name);
    // the packets are always read from the scratch buffer (execution_kernel.hpp:421)
    auto from = slots(op, c.g, Buf::scratch, true, op.src[0].index, op.src[0].size);
    lanes(o, {from}, {local_slots(c, op.dst[0], false, op.src[0].size)}, false);
    reads_packets(o, from);
}

/// ppkt: packets to a peer through memory or port channels.
void Lowering::lower_put_packets(OpContext& c) {
    const Op& op = c.op;
    if (!need_src(c, 1) || !need_dst(c, 1)) return;
    if (c.ct == Chan::memory) {
        OpId o = data_op(c.s, op, c.name);
        for (std::size_t i = 0; i < op.dst.size() && i < op.src.size(); ++i) {
            BufRef from = op.src[i];
            from.type = op.src[0].type;
            auto to = remote_slots(c, op.dst[i], true, op.dst[i].index, op.src[i].size);
            lanes(o, {local_slots(c, from, false, op.src[i].size)}, {to}, true);
            writes_packets(o, to);
        }
        return;
    }
    if (c.ct != Chan::port) {
        fail(op, "ppkt puts through memory and port channels only");
        return;
    }
    for (std::size_t t = 0; t < op.dst.size() && t < op.src.size(); ++t) {
        auto pp = port_put(c, t);
        if (!pp) return;
        // the source is already in packet form (execution_kernel.hpp:280-288)
        auto to = slots(op, pp->rank, pp->buf, true, op.dst[t].index, op.src[t].size);
        lanes(pp->proxy, {local_slots(c, op.src[t], true, op.src[t].size)}, {to}, true);
        writes_packets(pp->proxy, to);
    }
}

/// rppkt: read packets from scratch and put them to peers.
void Lowering::lower_read_put_packets(OpContext& c) {
    const Op& op = c.op;
    if (!need_src(c, 1) || !need_dst(c, 1)) return;
    auto from = slots(op, c.g, Buf::scratch, true, op.src[0].index, op.src[0].size);
    if (c.ct == Chan::memory) {
        OpId o = data_op(c.s, op, c.name);
        reads_packets(o, from);
        for (std::size_t i = 0; i < op.dst.size(); ++i) {
            auto to = remote_slots(c, op.dst[i], true, op.dst[i].index, op.src[0].size);
            lanes(o, {from}, {to}, true);
            writes_packets(o, to);
        }
        return;
    }
    if (c.ct != Chan::port) {
        fail(op, "rppkt puts through memory and port channels only");
        return;
    }
    // all threads wait for the packets, __syncthreads, then thread t triggers put t
    OpId rd = data_op(c.s, op, c.name + ", reading the packets");
    prog_.add_lane(rd, async::Lane{});
    for (const Slot& x : from) prog_.add_lane(rd, async::Lane{{async::Operand::read(x)}, {}, false});
    reads_packets(rd, from);
    for (std::size_t t = 0; t < op.dst.size(); ++t) {
        auto pp = port_put(c, t, rd);
        if (!pp) return;
        auto to = slots(op, pp->rank, pp->buf, true, op.dst[t].index, op.src[0].size);
        lanes(pp->proxy, {from}, {to}, true);
        writes_packets(pp->proxy, to);
    }
}

/// repkt, respkt, recpkt and recspkt: reduce packets, optionally copy and send them.
void Lowering::lower_reduce_packets(OpContext& c) {
    const Op& op = c.op;
    if (!need_src(c, 1) || !need_dst(c, 1)) return;
    const bool copy = op.code == Code::recpkt || op.code == Code::recspkt;
    const bool send = op.code == Code::respkt || op.code == Code::recspkt;
    if (copy && !need_dst(c, 2)) return;
    if (send && c.ct != Chan::memory && op.dst.size() > (copy ? 2u : 1u)) {
        fail(op, "sends packets to peers through memory channels only");
        return;
    }
    const std::int64_t size = op.src[0].size;
    OpId o = data_op(c.s, op, c.name);
    std::vector<std::vector<Slot>> ins{local_slots(c, op.src[0], false, size)};
    for (std::size_t k = 1; k < op.src.size(); ++k) {
        // packets are read from the scratch buffer (execution_kernel.hpp:355, 396)
        ins.push_back(slots(op, c.g, Buf::scratch, true, op.src[k].index, size));
        reads_packets(o, ins.back());
    }
    std::vector<std::vector<Slot>> outs{local_slots(c, op.dst[0], false, size)};
    std::vector<std::vector<Slot>> packets_out;
    if (copy) {
        outs.push_back(local_slots(c, op.dst[1], true, size));
        packets_out.push_back(outs.back());
    }
    for (std::size_t k = copy ? 2 : 1; send && k < op.dst.size(); ++k) {
        outs.push_back(remote_slots(c, op.dst[k], true, op.dst[k].index, size));
        packets_out.push_back(outs.back());
    }
    if (!send && op.dst.size() > (copy ? 2u : 1u))
        finding("blind spot", op, fmt::format("{} ignores dst_buff entries past the first {}", info(op.code).name, copy ? 2 : 1));
    lanes(o, ins, outs, send);
    for (const auto& v : packets_out) writes_packets(o, v);
}

/// glres, gstore and gstorepkt through NVLS switch channels.
void Lowering::lower_switch(OpContext& c) {
    const Op& op = c.op;
    if (!need_src(c, 1) || !need_dst(c, 1)) return;
    auto group = [&](const BufRef& r) -> const std::vector<int>* {
        if (r.switch_channel_id < 0 || std::size_t(r.switch_channel_id) >= c.tb.switch_.size()) {
            fail(op, fmt::format("switch_channel_id {} but the thread block has {} switch channel{}", r.switch_channel_id,
                                 c.tb.switch_.size(), c.tb.switch_.size() == 1 ? "" : "s"));
            return nullptr;
        }
        const int idx = c.tb.switch_[std::size_t(r.switch_channel_id)];
        current_switch_buf_ = c.gpu.switch_buffers[std::size_t(idx)];
        return &c.gpu.switch_groups[std::size_t(idx)];
    };
    OpId o = data_op(c.s, op, c.name);
    const std::int64_t size = op.src[0].size;
    const std::vector<int>* dst_group = group(op.dst[0]);
    if (!dst_group) return;
    const Buf dst_buf = current_switch_buf_;
    std::vector<std::vector<Slot>> ins;
    if (op.code == Code::glres) {
        const std::vector<int>* src_group = group(op.src[0]);
        if (!src_group) return;
        for (int m : *src_group) ins.push_back(slots(op, m, current_switch_buf_, false, op.src[0].index, size));
    } else {
        const bool packet = op.code == Code::gstorepkt;
        ins.push_back(local_slots(c, op.src[0], packet, size));
        if (packet) reads_packets(o, ins.back());
    }
    std::vector<std::vector<Slot>> outs;
    for (int m : *dst_group) {
        outs.push_back(slots(op, m, op.code == Code::gstorepkt ? Buf::scratch : dst_buf, op.code == Code::gstorepkt,
                             op.dst[0].index, size));
        if (op.code == Code::gstorepkt) writes_packets(o, outs.back());
    }
    lanes(o, ins, outs, false);
}

}  // namespace collsched::mscclpp
