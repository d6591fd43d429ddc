#include "compiler/interop/mscclpp_check.hpp"

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

namespace {

using async::OpId;
using async::Slot;

/// Regions of a GPU's memory: the three buffers as plain data, and the same buffers holding LL
/// packets (a packet slot i is the 2*chunk bytes at 2*i*chunk; the executor never mixes the two
/// views of one buffer in the plans it is given, and a plan that does is refused below).
std::uint32_t region(Buf b, bool packet) { return std::uint32_t(b) + (packet ? 3 : 0); }

/// Key spaces for the engine's matching.
enum KeySpace : std::uint64_t { memory_sem = 1, port_sem = 2, device_sem = 3 };
std::uint64_t key(KeySpace s, int gpu, std::uint32_t index) { return (std::uint64_t(s) << 56) | (std::uint64_t(gpu) << 32) | index; }
constexpr std::uint32_t phantom = 0x80000000u;

std::string buffer_name(Buf b) { return b == Buf::input ? "input" : b == Buf::output ? "output" : "scratch"; }

/// Builds the asynchronous program of a plan (see the header for the model).
class Lowering {
public:
    Lowering(const Plan& plan, std::vector<Finding>& findings) : plan_(plan), out_(findings) {}

    bool build() {
        P_ = int(plan_.gpus.size());
        atoms_per_chunk();
        pair_channels();
        if (failed_) return false;
        initial_values();
        for (int g = 0; g < P_; ++g)
            for (std::size_t t = 0; t < plan_.gpus[std::size_t(g)].tbs.size(); ++t) lower_tb(g, int(t));
        finish_barriers();
        finish_packets();
        finish_semaphores();
        return !failed_;
    }

    async::Program& program() { return prog_; }
    const std::vector<const Op*>& op_of() const { return op_of_; }
    const std::vector<std::string>& what() const { return what_; }
    const std::vector<bool>& moves() const { return moves_; }
    int L() const { return L_; }
    std::int64_t input_chunks(int g) const { return plan_.gpus[std::size_t(g)].input_chunks; }
    std::string slot_name(Slot s) const {
        const bool packet = s.region >= 3;
        const Buf b = Buf(s.region % 3);
        std::string part = L_ > 1 ? fmt::format(" (part {} of {})", s.index % std::uint32_t(L_) + 1, L_) : "";
        return fmt::format("GPU {}'s {} chunk {}{}{}", s.rank, buffer_name(b), s.index / std::uint32_t(L_),
                           packet ? " (LL packets)" : "", part);
    }
    /// An atom: (rank, input chunk, part).
    std::tuple<int, int, int> atom_parts(async::Atom a) const {
        const int part = int(a % std::uint32_t(L_));
        const std::uint32_t rc = a / std::uint32_t(L_);
        return {int(rc / std::uint32_t(Ci_)), int(rc % std::uint32_t(Ci_)), part};
    }
    async::Atom atom(int rank, std::int64_t chunk, int part) const {
        return async::Atom((std::uint32_t(rank) * std::uint32_t(Ci_) + std::uint32_t(chunk)) * std::uint32_t(L_) + std::uint32_t(part));
    }
    std::int64_t Ci() const { return Ci_; }

    /// In place, the input is part of the output: allgather's input chunk j is output chunk
    /// rank*input_chunks + j; the other collectives pass one buffer (algorithm.cc:13-23).
    Slot slot(int rank, Buf b, bool packet, std::int64_t chunk, std::int64_t part) const {
        if (!packet && plan_.inplace && b == Buf::input) {
            const std::int64_t c = plan_.collective == "allgather" ? rank * plan_.gpus[std::size_t(rank)].input_chunks + chunk : chunk;
            return Slot{std::uint32_t(rank), region(Buf::output, false), std::uint32_t(c * L_ + part)};
        }
        return Slot{std::uint32_t(rank), region(b, packet), std::uint32_t(chunk * L_ + part)};
    }

    /// How many chunks (or packet slots) a buffer of a rank has.
    std::int64_t capacity(int rank, Buf b, bool packet) const {
        const Gpu& g = plan_.gpus[std::size_t(rank)];
        const std::int64_t plain = b == Buf::input ? g.input_chunks : b == Buf::output ? g.output_chunks : g.scratch_chunks;
        if (b == Buf::scratch) return plan_.packets() ? (packet ? plain : 2 * plain) : (packet ? plain / 2 : plain);
        return packet ? plain / 2 : plain;
    }

private:
    void finding(const std::string& rule, const Op& op, std::string what) { out_.push_back({rule, op.path, op.pos, std::move(what)}); }
    void fail(const Op& op, std::string what) {
        failed_ = true;
        finding("structure", op, std::move(what));
    }

    void atoms_per_chunk() {
        std::function<void(const Op&)> visit = [&](const Op& op) {
            if (op.tbg_size > 1) L_ = std::lcm(L_, op.tbg_size);
            for (const Op& in : op.inner) visit(in);
        };
        for (const Gpu& g : plan_.gpus)
            for (const Tb& tb : g.tbs)
                for (const Op& op : tb.ops) visit(op);
        if (L_ > 64) {
            out_.push_back({"structure", "", {}, fmt::format("thread-block groups of sizes whose least common multiple is {}; "
                                                             "the checker splits chunks into at most 64 parts", L_)});
            failed_ = true;
        }
        Ci_ = 1;
        for (const Gpu& g : plan_.gpus) Ci_ = std::max(Ci_, g.input_chunks);
        for (const Gpu& g : plan_.gpus)
            if (g.input_chunks != plan_.gpus[0].input_chunks || g.output_chunks != plan_.gpus[0].output_chunks)
                out_.push_back({"blind spot", fmt::format("gpus[{}]", g.id), g.pos,
                                fmt::format("GPU {} has {}/{} input/output chunks and GPU 0 {}/{}: every rank sizes its chunks by its "
                                            "own counts (execution_plan.cc:601-619), so a chunk index means different bytes on the two",
                                            g.id, g.input_chunks, g.output_chunks, plan_.gpus[0].input_chunks, plan_.gpus[0].output_chunks)});
    }

    /// The executor connects rank r's k-th channel of a type to peer p with the k-th of p's
    /// channels of that type to r (executor.cc:287-312: one tag counter per peer, memory
    /// channels first, each side's unpaired surplus connected to nothing the plan uses).
    void pair_channels() {
        for (Chan type : {Chan::memory, Chan::port}) {
            auto& pairs = type == Chan::memory ? mem_pair_ : port_pair_;
            pairs.resize(std::size_t(P_));
            for (int r = 0; r < P_; ++r) {
                const auto& peers = type == Chan::memory ? plan_.gpus[std::size_t(r)].memory_peers : plan_.gpus[std::size_t(r)].port_peers;
                pairs[std::size_t(r)].assign(peers.size(), -1);
            }
            for (int r = 0; r < P_; ++r) {
                const Gpu& gr = plan_.gpus[std::size_t(r)];
                const auto& peers = type == Chan::memory ? gr.memory_peers : gr.port_peers;
                std::map<int, int> occurrence;
                for (std::size_t k = 0; k < peers.size(); ++k) {
                    const int p = peers[k];
                    if (p < 0 || p >= P_ || p == r) continue;
                    const int o = occurrence[p]++;
                    const auto& back = type == Chan::memory ? plan_.gpus[std::size_t(p)].memory_peers : plan_.gpus[std::size_t(p)].port_peers;
                    int seen = 0;
                    for (std::size_t q = 0; q < back.size(); ++q)
                        if (back[q] == r && seen++ == o) pairs[std::size_t(r)][k] = int(q);
                }
                for (auto [p, n] : occurrence) {
                    const auto& back = type == Chan::memory ? plan_.gpus[std::size_t(p)].memory_peers : plan_.gpus[std::size_t(p)].port_peers;
                    const int m = int(std::count(back.begin(), back.end(), r));
                    if (m != n && r < p)
                        out_.push_back({"blind spot", fmt::format("gpus[{}].channels", r), gr.pos,
                                        fmt::format("GPU {} has {} {} channel{} to GPU {}, GPU {} has {} back: the executor pairs "
                                                    "them in order and connects the {} surplus to a channel no thread block "
                                                    "uses (executor.cc:304-311), whose signals nobody waits for and whose waits "
                                                    "nobody releases",
                                                    r, n, chan_name(type), n == 1 ? "" : "s", p, p, m, std::abs(n - m))});
                }
                for (const auto& [p, n] : occurrence) {
                    (void)n;
                    const auto& back = type == Chan::memory ? plan_.gpus[std::size_t(p)].memory_peers : plan_.gpus[std::size_t(p)].port_peers;
                    if (std::count(back.begin(), back.end(), r) == 0 && r > p)
                        out_.push_back({"blind spot", fmt::format("gpus[{}].channels", r), gr.pos,
                                        fmt::format("GPU {} has {} channels to GPU {}, which has none back", r, chan_name(type), p)});
                }
            }
        }
    }

    void initial_values() {
        for (int r = 0; r < P_; ++r) {
            const Gpu& g = plan_.gpus[std::size_t(r)];
            for (std::int64_t c = 0; c < g.input_chunks; ++c)
                for (int a = 0; a < L_; ++a) prog_.initial(slot(r, Buf::input, false, c, a), prog_.values().atom(atom(r, c, a)));
        }
    }

    struct TbState {
        int gpu = 0, tb = 0;
        async::AgentId spine = 0;
        std::optional<OpId> gate;  ///< the last nop/barrier: everything after it follows it
        std::vector<OpId> segment;  ///< ops since the gate: the next nop/barrier follows them all
        std::map<int, async::AgentId> lanes;
        std::vector<async::AgentId> data;
        std::size_t next_data = 0;
        std::map<int, int> barrier_calls;  ///< barrier id -> calls so far
    };

    OpId new_op(async::AgentId agent, const Op& op, std::string what) {
        OpId o = prog_.add_op(agent, {op.pos.line, op.pos.col});
        op_of_.push_back(&op);
        what_.push_back(std::move(what));
        moves_.push_back(false);
        return o;
    }
    OpId in_segment(TbState& s, async::AgentId agent, const Op& op, std::string what) {
        OpId o = new_op(agent, op, std::move(what));
        if (s.gate) prog_.order(*s.gate, o);
        s.segment.push_back(o);
        return o;
    }
    OpId data_op(TbState& s, const Op& op, std::string what) {
        if (s.next_data == s.data.size()) s.data.push_back(prog_.add_agent(std::uint32_t(s.gpu)));
        return in_segment(s, s.data[s.next_data++], op, std::move(what));
    }
    OpId lane_op(TbState& s, int t, const Op& op, std::string what) {
        auto it = s.lanes.find(t);
        if (it == s.lanes.end()) it = s.lanes.emplace(t, prog_.add_agent(std::uint32_t(s.gpu))).first;
        return in_segment(s, it->second, op, std::move(what));
    }
    /// A nop or barrier: after everything since the last one, before everything that follows.
    OpId sync_op(TbState& s, const Op& op, std::string what) {
        OpId o = new_op(s.spine, op, std::move(what));
        if (s.gate) prog_.order(*s.gate, o);
        for (OpId x : s.segment) prog_.order(x, o);
        s.segment.clear();
        s.next_data = 0;
        s.gate = o;
        return o;
    }
    async::AgentId proxy(int gpu, int channel) {
        auto [it, fresh] = proxies_.try_emplace({gpu, channel}, 0);
        if (fresh) it->second = prog_.add_agent(std::uint32_t(gpu));
        return it->second;
    }

    /// The slots of `size` chunks from `index`, the part a thread-block group member handles.
    std::vector<Slot> slots(const Op& op, int rank, Buf b, bool packet, std::int64_t index, std::int64_t size) {
        std::vector<Slot> out;
        const std::int64_t cap = capacity(rank, b, packet);
        if (index + size > cap) {
            finding("limit", op,
                    fmt::format("{} chunks {}..{} of GPU {}'s {} buffer{}, which has {}: the executor does not check and "
                                "touches memory past its end",
                                info(op.code).name, index, index + size - 1, rank, buffer_name(b), packet ? " (as LL packets)" : "", cap));
            return out;
        }
        const std::int64_t total = size * L_, from = total * op.tbg_id / op.tbg_size, to = total * (op.tbg_id + 1) / op.tbg_size;
        for (std::int64_t x = from; x < to; ++x) out.push_back(slot(rank, b, packet, index + x / L_, x % L_));
        return out;
    }

    std::optional<Buf> local(const Op& op, const BufRef& r, const char* role) {
        if (r.type) return r.type;
        fail(op, fmt::format("{} names no local buffer (\"type\")", role));
        return std::nullopt;
    }

    /// A peer's buffer through the thread block's remote-buffer list of the op's channel type.
    std::optional<std::pair<int, Buf>> remote(const Op& op, const Tb& tb, const Gpu& gpu, const BufRef& r, const char* role) {
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

    /// The global channel (index into the GPU's flattened channels of that type) of the op's t-th channel id.
    std::optional<int> channel(const Op& op, const Tb& tb, Chan c, std::size_t t) {
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

    /// The key a signal on channel `k` of GPU `g` posts to, and the key a wait on it takes.
    std::uint64_t signal_key(Chan c, int g, int k) const {
        const auto& pairs = c == Chan::memory ? mem_pair_ : port_pair_;
        const auto& peers = c == Chan::memory ? plan_.gpus[std::size_t(g)].memory_peers : plan_.gpus[std::size_t(g)].port_peers;
        const int p = peers[std::size_t(k)], back = pairs[std::size_t(g)][std::size_t(k)];
        const KeySpace s = c == Chan::memory ? memory_sem : port_sem;
        if (back < 0 || p < 0 || p >= P_) return key(s, g, phantom | std::uint32_t(k));  // nobody waits there
        return key(s, p, std::uint32_t(back));
    }
    std::uint64_t wait_key(Chan c, int g, int k) const { return key(c == Chan::memory ? memory_sem : port_sem, g, std::uint32_t(k)); }

    void lower_tb(int g, int t) {
        const Gpu& gpu = plan_.gpus[std::size_t(g)];
        // the executor runs the ops at position t with the channels of the thread block whose id is t
        const Tb& ops_tb = gpu.tbs[std::size_t(t)];
        const Tb* chan_tb = &ops_tb;
        for (const Tb& x : gpu.tbs)
            if (x.id == t) chan_tb = &x;
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

    void finding_once(const std::string& tag, const Op& op, std::string what) {
        if (notes_.insert(tag).second) notes_text_.push_back({"note", op.path, op.pos, std::move(what)});
    }

    std::string describe(const Op& op) const { return fmt::format("{} ({})", op.path, info(op.code).name); }

    void lower_op(TbState& s, const Gpu& gpu, const Tb& tb, const Op& op) {
        const int g = s.gpu;
        const std::string name = describe(op);
        const Chan ct = op.channel_type.value_or(Chan::none);
        auto need_src = [&](std::size_t n) {
            if (op.src.size() >= n) return true;
            fail(op, fmt::format("needs {} src_buff entr{} and has {}", n, n == 1 ? "y" : "ies", op.src.size()));
            return false;
        };
        auto need_dst = [&](std::size_t n) {
            if (op.dst.size() >= n) return true;
            fail(op, fmt::format("needs {} dst_buff entr{} and has {}", n, n == 1 ? "y" : "ies", op.dst.size()));
            return false;
        };
        // one lane per atom: out[x] = combine(in[0][x], in[1][x], ...)
        auto lanes = [&](OpId o, const std::vector<std::vector<Slot>>& ins, const std::vector<std::vector<Slot>>& outs, bool mark) {
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
        };
        auto reads_packets = [&](OpId o, const std::vector<Slot>& v) {
            for (const Slot& x : v) packet_reads_.push_back({o, x});
        };
        auto writes_packets = [&](OpId o, const std::vector<Slot>& v) {
            for (const Slot& x : v) packet_writers_[x].push_back(o);
        };
        auto sized = [&](const BufRef& r, std::int64_t size) { BufRef c = r; c.size = size; return c; };
        auto local_slots = [&](const BufRef& r, bool packet, std::int64_t size) -> std::vector<Slot> {
            auto b = local(op, r, "an entry");
            return b ? slots(op, g, *b, packet, r.index, size) : std::vector<Slot>{};
        };
        auto remote_slots = [&](const BufRef& r, bool packet, std::int64_t index, std::int64_t size) -> std::vector<Slot> {
            auto rb = remote(op, tb, gpu, r, "an entry");
            return rb ? slots(op, rb->first, rb->second, packet, index, size) : std::vector<Slot>{};
        };
        (void)sized;
        switch (op.code) {
            case Code::nop: sync_op(s, op, name); return;
            case Code::barrier: {
                OpId o = sync_op(s, op, name);
                if (op.barrier_id < 0 || op.num_threadblocks < 0) {
                    fail(op, "a barrier needs \"barrier_id\" and \"num_threadblocks\" (the parser leaves them 0 otherwise)");
                    return;
                }
                if (op.barrier_id >= 16)
                    finding("limit", op,
                            fmt::format("barrier_id {}; the kernel has 16 device syncers (MAX_DEVICE_SYNCERS, "
                                        "execution_common.hpp:19; deviceSyncers[16], execution_kernel.hpp:27) and indexes past them",
                                        op.barrier_id));
                if (op.num_threadblocks <= 1) return;  // DeviceSyncer::sync(1) is __syncthreads only
                const int round = s.barrier_calls[op.barrier_id]++;
                auto& rounds = barriers_[{g, op.barrier_id}];
                if (rounds.agent == 0 && rounds.joins.empty()) rounds.agent = prog_.add_agent(std::uint32_t(g)) + 1;
                if (int(rounds.joins.size()) <= round) {
                    rounds.joins.push_back(new_op(rounds.agent - 1, op, fmt::format("barrier {} of GPU {}, round {}", op.barrier_id, g, round + 1)));
                    rounds.calls.emplace_back();
                }
                const OpId join = rounds.joins[std::size_t(round)];
                prog_.order(o, join);
                rounds.calls[std::size_t(round)].push_back({o, &op});
                s.gate = join;  // what follows the barrier waits for every participant
                return;
            }
            case Code::signal:
            case Code::wait:
            case Code::rlxsignal:
            case Code::rlxwait: {
                if (ct != Chan::memory && ct != Chan::port) {
                    finding("blind spot", op,
                            fmt::format("a {} on a {} channel: the kernel signals and waits on memory and port channels only, so "
                                        "this op does nothing (execution_kernel.hpp:82-118)",
                                        info(op.code).name, op.channel_type ? chan_name(ct) : "missing"));
                    return;
                }
                const bool relaxed = op.code == Code::rlxsignal || op.code == Code::rlxwait;
                if (relaxed && ct == Chan::port)
                    finding("blind spot", op, "a relaxed signal or wait on a port channel runs as a plain one (execution_kernel.hpp:96-98, 115-117)");
                const bool sig = op.code == Code::signal || op.code == Code::rlxsignal;
                const async::KeyKind kind = relaxed && ct == Chan::memory ? async::KeyKind::relaxed : async::KeyKind::semaphore;
                for (std::size_t t = 0; t < op.channel_ids.size(); ++t) {
                    auto k = channel(op, tb, ct, t);
                    if (!k) return;
                    OpId o = lane_op(s, int(t), op, fmt::format("{}, channel {}", name, op.channel_ids[t]));
                    if (sig && ct == Chan::port) {
                        // the proxy signals in FIFO order after the channel's earlier puts
                        OpId px = new_op(proxy(g, *k), op, fmt::format("{}, proxy of port channel {}", name, *k));
                        prog_.order(o, px);
                        prog_.send(px, signal_key(ct, g, *k), kind);
                        ++signals_[{ct, g, *k}];
                    } else if (sig) {
                        prog_.send(o, signal_key(ct, g, *k), kind);
                        ++signals_[{ct, g, *k}];
                    } else {
                        prog_.receive(o, wait_key(ct, g, *k), kind);
                        ++waits_[{ct, g, *k}];
                    }
                }
                return;
            }
            case Code::flush: {
                // handleFlush loops over nOutputs, which only dst_buff sets (execution_kernel.hpp:120-127,
                // execution_plan.cc:550-551): a flush without dst_buff waits for nothing
                for (std::size_t t = 0; t < op.dst.size() && t < op.channel_ids.size(); ++t) {
                    auto k = channel(op, tb, Chan::port, t);
                    if (!k) return;
                    OpId o = lane_op(s, int(t), op, fmt::format("{}, channel {}", name, op.channel_ids[t]));
                    if (auto last = last_proxy_.find({g, *k}); last != last_proxy_.end()) prog_.order(last->second, o);
                }
                return;
            }
            case Code::sem_acquire:
            case Code::sem_release: {
                for (std::size_t t = 0; t < op.semaphore_ids.size(); ++t) {
                    const int id = op.semaphore_ids[t];
                    if (id < 0 || std::size_t(id) >= gpu.semaphores.size()) {
                        fail(op, fmt::format("semaphore {} but GPU {} declares {}: the kernel indexes past them", id, g,
                                             gpu.semaphores.size()));
                        return;
                    }
                    OpId o = lane_op(s, int(t), op, fmt::format("{}, semaphore {}", name, id));
                    if (op.code == Code::sem_release) {
                        prog_.send(o, key(device_sem, g, std::uint32_t(id)), async::KeyKind::semaphore);
                        ++releases_[{g, id}];
                    } else {
                        prog_.receive(o, key(device_sem, g, std::uint32_t(id)), async::KeyKind::semaphore);
                        ++acquires_[{g, id}];
                    }
                }
                return;
            }
            case Code::put:
            case Code::pws:
            case Code::pwsf: {
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
                if (ct == Chan::memory) {
                    if (op.code != Code::put)
                        finding("blind spot", op,
                                fmt::format("{} on a memory channel: the kernel's memory branch only copies and never signals "
                                            "(execution_kernel.hpp:157-166)",
                                            info(op.code).name));
                    // all threads copy; every source is read from src_buff[0]'s buffer (execution_kernel.hpp:156)
                    OpId o = data_op(s, op, name);
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
                        lanes(o, {local_slots(from, false, op.dst[i].size)}, {remote_slots(op.dst[i], false, op.dst[i].index, op.dst[i].size)}, true);
                    }
                    return;
                }
                if (ct != Chan::port) {
                    fail(op, fmt::format("a put on channel type {}: the kernel puts through memory and port channels only",
                                         op.channel_type ? chan_name(ct) : "missing"));
                    return;
                }
                for (std::size_t t = 0; t < op.dst.size(); ++t) {
                    if (t >= op.src.size()) {
                        fail(op, fmt::format("dst_buff[{}] has no src_buff[{}]", t, t));
                        return;
                    }
                    auto k = channel(op, tb, Chan::port, t);
                    auto rb = remote(op, tb, gpu, op.dst[t], "dst_buff");
                    if (!k || !rb) return;
                    const int peer = gpu.port_peers[std::size_t(*k)];
                    if (peer != rb->first)
                        finding("blind spot", op,
                                fmt::format("puts into GPU {}'s buffer through port channel {}, which connects to GPU {}: the proxy "
                                            "writes through the channel's connection with another rank's memory handle",
                                            rb->first, *k, peer));
                    OpId trig = lane_op(s, int(t), op, fmt::format("{}, channel {}", name, op.channel_ids[t]));
                    OpId px = new_op(proxy(g, *k), op, fmt::format("{}, proxy of port channel {}", name, *k));
                    prog_.order(trig, px);
                    lanes(px, {local_slots(op.src[t], false, op.dst[t].size)}, {slots(op, rb->first, rb->second, false, op.dst[t].index, op.dst[t].size)}, true);
                    last_proxy_[{g, *k}] = px;
                    if (op.code != Code::put) {
                        OpId sg = new_op(proxy(g, *k), op, fmt::format("{}, signal by the proxy of port channel {}", name, *k));
                        prog_.send(sg, signal_key(Chan::port, g, *k), async::KeyKind::semaphore);
                        ++signals_[{Chan::port, g, *k}];
                        last_proxy_[{g, *k}] = sg;
                        if (op.code == Code::pwsf) {
                            OpId f = lane_op(s, int(t), op, fmt::format("{}, flush of channel {}", name, op.channel_ids[t]));
                            prog_.order(sg, f);
                        }
                    }
                }
                return;
            }
            case Code::get: {
                if (ct != Chan::memory) {
                    fail(op, "a get reads through memory channels only (execution_kernel.hpp:130-145)");
                    return;
                }
                OpId o = data_op(s, op, name);
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
                    lanes(o, {remote_slots(op.src[i], false, op.dst[i].index, op.src[i].size)}, {local_slots(to, false, op.src[i].size)}, true);
                }
                return;
            }
            case Code::copy: {
                if (!need_src(1) || !need_dst(1)) return;
                OpId o = data_op(s, op, name);
                lanes(o, {local_slots(op.src[0], false, op.src[0].size)}, {local_slots(op.dst[0], false, op.src[0].size)}, false);
                return;
            }
            case Code::re:
            case Code::res:
            case Code::rre:
            case Code::rres: {
                if (!need_src(1) || !need_dst(1)) return;
                const bool remote_in = op.code == Code::rre || op.code == Code::rres;
                const bool remote_out = op.code == Code::res || op.code == Code::rres;
                if ((remote_in || remote_out) && ct != Chan::memory && (op.src.size() > 1 || op.dst.size() > 1)) {
                    fail(op, "reads or writes peers' buffers through memory channels only, and has no memory channel_type");
                    return;
                }
                const std::int64_t size = op.src[0].size;
                OpId o = data_op(s, op, name);
                std::vector<std::vector<Slot>> ins{local_slots(op.src[0], false, size)};
                for (std::size_t k = 1; k < op.src.size(); ++k)
                    ins.push_back(remote_in ? remote_slots(op.src[k], false, op.src[k].index, size) : local_slots(op.src[k], false, size));
                std::vector<std::vector<Slot>> outs{local_slots(op.dst[0], false, size)};
                if (!remote_out && op.dst.size() > 1)
                    finding("blind spot", op, fmt::format("{} writes dst_buff[0] only; the other {} entries are ignored", info(op.code).name, op.dst.size() - 1));
                for (std::size_t k = 1; remote_out && k < op.dst.size(); ++k) outs.push_back(remote_slots(op.dst[k], false, op.dst[k].index, size));
                lanes(o, ins, outs, remote_in || remote_out);
                return;
            }
            case Code::cpkt: {
                if (!need_src(1) || !need_dst(1)) return;
                OpId o = data_op(s, op, name);
                auto to = local_slots(op.dst[0], true, op.src[0].size);
                lanes(o, {local_slots(op.src[0], false, op.src[0].size)}, {to}, false);
                writes_packets(o, to);
                return;
            }
            case Code::upkt: {
                if (!need_src(1) || !need_dst(1)) return;
                OpId o = data_op(s, op, name);
                // the packets are always read from the scratch buffer (execution_kernel.hpp:421)
                auto from = slots(op, g, Buf::scratch, true, op.src[0].index, op.src[0].size);
                lanes(o, {from}, {local_slots(op.dst[0], false, op.src[0].size)}, false);
                reads_packets(o, from);
                return;
            }
            case Code::ppkt: {
                if (!need_src(1) || !need_dst(1)) return;
                if (ct == Chan::memory) {
                    OpId o = data_op(s, op, name);
                    for (std::size_t i = 0; i < op.dst.size() && i < op.src.size(); ++i) {
                        BufRef from = op.src[i];
                        from.type = op.src[0].type;
                        auto to = remote_slots(op.dst[i], true, op.dst[i].index, op.src[i].size);
                        lanes(o, {local_slots(from, false, op.src[i].size)}, {to}, true);
                        writes_packets(o, to);
                    }
                    return;
                }
                if (ct != Chan::port) {
                    fail(op, "ppkt puts through memory and port channels only");
                    return;
                }
                for (std::size_t t = 0; t < op.dst.size() && t < op.src.size(); ++t) {
                    auto k = channel(op, tb, Chan::port, t);
                    auto rb = remote(op, tb, gpu, op.dst[t], "dst_buff");
                    if (!k || !rb) return;
                    OpId trig = lane_op(s, int(t), op, fmt::format("{}, channel {}", name, op.channel_ids[t]));
                    OpId px = new_op(proxy(g, *k), op, fmt::format("{}, proxy of port channel {}", name, *k));
                    prog_.order(trig, px);
                    // the source is already in packet form (execution_kernel.hpp:280-288)
                    auto to = slots(op, rb->first, rb->second, true, op.dst[t].index, op.src[t].size);
                    lanes(px, {local_slots(op.src[t], true, op.src[t].size)}, {to}, true);
                    writes_packets(px, to);
                    last_proxy_[{g, *k}] = px;
                }
                return;
            }
            case Code::rppkt: {
                if (!need_src(1) || !need_dst(1)) return;
                auto from = slots(op, g, Buf::scratch, true, op.src[0].index, op.src[0].size);
                if (ct == Chan::memory) {
                    OpId o = data_op(s, op, name);
                    reads_packets(o, from);
                    for (std::size_t i = 0; i < op.dst.size(); ++i) {
                        auto to = remote_slots(op.dst[i], true, op.dst[i].index, op.src[0].size);
                        lanes(o, {from}, {to}, true);
                        writes_packets(o, to);
                    }
                    return;
                }
                if (ct != Chan::port) {
                    fail(op, "rppkt puts through memory and port channels only");
                    return;
                }
                // all threads wait for the packets, __syncthreads, then thread t triggers put t
                OpId rd = data_op(s, op, name + ", reading the packets");
                prog_.add_lane(rd, async::Lane{});
                for (const Slot& x : from) prog_.add_lane(rd, async::Lane{{async::Operand::read(x)}, {}, false});
                reads_packets(rd, from);
                for (std::size_t t = 0; t < op.dst.size(); ++t) {
                    auto k = channel(op, tb, Chan::port, t);
                    auto rb = remote(op, tb, gpu, op.dst[t], "dst_buff");
                    if (!k || !rb) return;
                    OpId trig = lane_op(s, int(t), op, fmt::format("{}, channel {}", name, op.channel_ids[t]));
                    prog_.order(rd, trig);
                    OpId px = new_op(proxy(g, *k), op, fmt::format("{}, proxy of port channel {}", name, *k));
                    prog_.order(trig, px);
                    auto to = slots(op, rb->first, rb->second, true, op.dst[t].index, op.src[0].size);
                    lanes(px, {from}, {to}, true);
                    writes_packets(px, to);
                    last_proxy_[{g, *k}] = px;
                }
                return;
            }
            case Code::repkt:
            case Code::respkt:
            case Code::recpkt:
            case Code::recspkt: {
                if (!need_src(1) || !need_dst(1)) return;
                const bool copy = op.code == Code::recpkt || op.code == Code::recspkt;
                const bool send = op.code == Code::respkt || op.code == Code::recspkt;
                if (copy && !need_dst(2)) return;
                if (send && ct != Chan::memory && op.dst.size() > (copy ? 2u : 1u)) {
                    fail(op, "sends packets to peers through memory channels only");
                    return;
                }
                const std::int64_t size = op.src[0].size;
                OpId o = data_op(s, op, name);
                std::vector<std::vector<Slot>> ins{local_slots(op.src[0], false, size)};
                for (std::size_t k = 1; k < op.src.size(); ++k) {
                    // packets are read from the scratch buffer (execution_kernel.hpp:355, 396)
                    ins.push_back(slots(op, g, Buf::scratch, true, op.src[k].index, size));
                    reads_packets(o, ins.back());
                }
                std::vector<std::vector<Slot>> outs{local_slots(op.dst[0], false, size)};
                std::vector<std::vector<Slot>> packets_out;
                if (copy) {
                    outs.push_back(local_slots(op.dst[1], true, size));
                    packets_out.push_back(outs.back());
                }
                for (std::size_t k = copy ? 2 : 1; send && k < op.dst.size(); ++k) {
                    outs.push_back(remote_slots(op.dst[k], true, op.dst[k].index, size));
                    packets_out.push_back(outs.back());
                }
                if (!send && op.dst.size() > (copy ? 2u : 1u))
                    finding("blind spot", op, fmt::format("{} ignores dst_buff entries past the first {}", info(op.code).name, copy ? 2 : 1));
                lanes(o, ins, outs, send);
                for (const auto& v : packets_out) writes_packets(o, v);
                return;
            }
            case Code::glres:
            case Code::gstore:
            case Code::gstorepkt: {
                if (!need_src(1) || !need_dst(1)) return;
                auto group = [&](const BufRef& r) -> const std::vector<int>* {
                    if (r.switch_channel_id < 0 || std::size_t(r.switch_channel_id) >= tb.switch_.size()) {
                        fail(op, fmt::format("switch_channel_id {} but the thread block has {} switch channel{}", r.switch_channel_id,
                                             tb.switch_.size(), tb.switch_.size() == 1 ? "" : "s"));
                        return nullptr;
                    }
                    const int idx = tb.switch_[std::size_t(r.switch_channel_id)];
                    current_switch_buf_ = gpu.switch_buffers[std::size_t(idx)];
                    return &gpu.switch_groups[std::size_t(idx)];
                };
                OpId o = data_op(s, op, name);
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
                    ins.push_back(local_slots(op.src[0], packet, size));
                    if (packet) reads_packets(o, ins.back());
                }
                std::vector<std::vector<Slot>> outs;
                for (int m : *dst_group) {
                    outs.push_back(slots(op, m, op.code == Code::gstorepkt ? Buf::scratch : dst_buf, op.code == Code::gstorepkt,
                                         op.dst[0].index, size));
                    if (op.code == Code::gstorepkt) writes_packets(o, outs.back());
                }
                lanes(o, ins, outs, false);
                return;
            }
            case Code::pipeline: return;  // flattened by lower_tb
        }
    }

    void finish_barriers() {
        for (auto& [id, rounds] : barriers_) {
            const auto [g, b] = id;
            for (std::size_t r = 0; r < rounds.joins.size(); ++r) {
                const auto& calls = rounds.calls[r];
                const int want = calls.front().second->num_threadblocks;
                for (const auto& c : calls)
                    if (c.second->num_threadblocks != want)
                        finding("deadlock", *c.second,
                                fmt::format("calls barrier {} (round {}) with num_threadblocks {}, another thread block with {}: "
                                            "the device syncer waits for the count its caller gives",
                                            b, r + 1, c.second->num_threadblocks, want));
                if (int(calls.size()) != want)
                    prog_.never_released(rounds.joins[r],
                                         fmt::format("barrier {} of GPU {} (round {}) waits for {} thread blocks, but {} arrive{}", b, g,
                                                     r + 1, want, calls.size(),
                                                     int(calls.size()) > want ? " (the count passes its target and never equals it again)"
                                                                              : ""));
            }
        }
    }

    /// LL packets: a read spins until the packet's flag is this launch's, so it follows the one
    /// write of that packet in the launch; none, and it spins forever; two, and which one it sees
    /// is a race.
    void finish_packets() {
        std::set<std::pair<OpId, OpId>> edges;
        std::set<OpId> stuck;
        for (const auto& [o, x] : packet_reads_) {
            auto it = packet_writers_.find(x);
            if (it == packet_writers_.end()) {
                if (stuck.insert(o).second)
                    prog_.never_released(o, fmt::format("reads LL packets of {}, which nothing writes in this launch: it spins on their "
                                                        "flag forever",
                                                        slot_name(x)));
                continue;
            }
            std::vector<OpId> w = it->second;
            std::sort(w.begin(), w.end());
            w.erase(std::unique(w.begin(), w.end()), w.end());
            // two writes in one launch: the reader sees either; harmless only when both write the same
            // packets (a multicast that includes its sender), which the replay decides
            if (w.size() > 1 && races_.insert({x.rank, x.region, x.index}).second) multi_writers_.push_back({o, x, w});
            for (OpId a : w)
                if (a != o && edges.insert({a, o}).second) prog_.order(a, o);
        }
    }

    void finish_semaphores() {
        for (int g = 0; g < P_; ++g) {
            const Gpu& gpu = plan_.gpus[std::size_t(g)];
            for (std::size_t id = 0; id < gpu.semaphores.size(); ++id) {
                const int rel = releases_[{g, int(id)}], acq = acquires_[{g, int(id)}];
                if (rel != acq && (rel > 0 || acq > 0))
                    out_.push_back({"blind spot", fmt::format("gpus[{}].semaphores[{}]", g, id), gpu.pos,
                                    fmt::format("GPU {} releases device semaphore {} {} time{} and acquires it {}: its value persists, "
                                                "so every launch starts it {} by {}",
                                                g, id, rel, rel == 1 ? "" : "s", acq, rel > acq ? "higher" : "lower", std::abs(rel - acq))});
            }
        }
        for (const auto& [k, n] : signals_) {
            const auto [c, g, ch] = k;
            const int w = waits_count(c, g, ch);
            if (n > w) {
                const auto& peers = c == Chan::memory ? plan_.gpus[std::size_t(g)].memory_peers : plan_.gpus[std::size_t(g)].port_peers;
                out_.push_back({"blind spot", fmt::format("gpus[{}].channels", g), plan_.gpus[std::size_t(g)].pos,
                                fmt::format("GPU {} signals {} channel {} (to GPU {}) {} time{}, and the peer waits {} time{}: the "
                                            "semaphore's count persists across launches, so every later launch finds {} signal{} it "
                                            "did not send",
                                            g, chan_name(c), ch, peers[std::size_t(ch)], n, n == 1 ? "" : "s", w, w == 1 ? "" : "s",
                                            n - w, n - w == 1 ? "" : "s")});
            }
        }
    }

    int waits_count(Chan c, int g, int ch) const {
        const auto& pairs = c == Chan::memory ? mem_pair_ : port_pair_;
        const int back = pairs[std::size_t(g)][std::size_t(ch)];
        if (back < 0) return 0;
        const auto& peers = c == Chan::memory ? plan_.gpus[std::size_t(g)].memory_peers : plan_.gpus[std::size_t(g)].port_peers;
        auto it = waits_.find({c, peers[std::size_t(ch)], back});
        return it == waits_.end() ? 0 : it->second;
    }

public:
    /// Device semaphores' initial values: registered before any lowering (call first).
    void semaphore_initial_values() {
        for (int g = 0; g < int(plan_.gpus.size()); ++g) {
            const Gpu& gpu = plan_.gpus[std::size_t(g)];
            if (gpu.semaphores.empty()) continue;
            async::AgentId a = prog_.add_agent(std::uint32_t(g));
            for (std::size_t id = 0; id < gpu.semaphores.size(); ++id)
                for (std::int64_t v = 0; v < gpu.semaphores[id] && v < 1024; ++v) {
                    OpId o = prog_.add_op(a, {gpu.pos.line, gpu.pos.col});
                    op_of_.push_back(nullptr);
                    what_.push_back(fmt::format("GPU {}'s semaphore {} (initial value {})", g, id, gpu.semaphores[id]));
                    moves_.push_back(false);
                    prog_.send(o, key(device_sem, g, std::uint32_t(id)), async::KeyKind::semaphore);
                }
        }
    }
    std::vector<Finding> notes() const { return notes_text_; }
    struct MultiWriter {
        OpId reader;
        Slot slot;
        std::vector<OpId> writers;
    };
    const std::vector<MultiWriter>& multi_writers() const { return multi_writers_; }

private:
    struct Barrier {
        async::AgentId agent = 0;  ///< +1; 0: none yet
        std::vector<OpId> joins;
        std::vector<std::vector<std::pair<OpId, const Op*>>> calls;
    };

    const Plan& plan_;
    std::vector<Finding>& out_;
    async::Program prog_;
    int P_ = 0, L_ = 1;
    std::int64_t Ci_ = 1;
    bool failed_ = false;
    std::vector<std::vector<int>> mem_pair_, port_pair_;
    std::vector<const Op*> op_of_;
    std::vector<std::string> what_;
    std::vector<bool> moves_;
    std::map<std::pair<int, int>, async::AgentId> proxies_;
    std::map<std::pair<int, int>, OpId> last_proxy_;
    std::map<std::pair<int, int>, Barrier> barriers_;
    std::map<Slot, std::vector<OpId>> packet_writers_;
    std::vector<std::pair<OpId, Slot>> packet_reads_;
    std::set<std::tuple<std::uint32_t, std::uint32_t, std::uint32_t>> races_;
    std::vector<MultiWriter> multi_writers_;
    std::map<std::tuple<Chan, int, int>, int> signals_, waits_;
    std::map<std::pair<int, int>, int> releases_, acquires_;
    std::set<std::string> notes_;
    std::vector<Finding> notes_text_;
    Buf current_switch_buf_ = Buf::scratch;
};

/// "in(3,5)", "in({0..7},5)" (a sum over ranks), with parts when chunks are split.
std::string value_name(const Lowering& lw, const std::vector<async::Atom>& atoms) {
    std::map<std::pair<int, int>, std::vector<int>> by;  // (chunk, part) -> ranks
    for (async::Atom a : atoms) {
        auto [r, c, part] = lw.atom_parts(a);
        by[{c, part}].push_back(r);
    }
    std::string out;
    for (const auto& [cp, ranks] : by) {
        std::string rs;
        if (ranks.size() == 1) {
            rs = std::to_string(ranks[0]);
        } else {
            bool run = true;
            for (std::size_t i = 1; i < ranks.size(); ++i) run = run && ranks[i] == ranks[i - 1] + 1;
            if (run) {
                rs = fmt::format("{{{}..{}}}", ranks.front(), ranks.back());
            } else {
                for (std::size_t i = 0; i < ranks.size(); ++i) rs += fmt::format("{}{}", i ? "," : "{", ranks[i]);
                rs += "}";
            }
        }
        std::string part = lw.L() > 1 ? fmt::format(" part {}", cp.second + 1) : "";
        out += fmt::format("{}in({},{}){}", out.empty() ? "" : " + ", rs, cp.first, part);
    }
    return out;
}

/// The collective's postcondition as goals; a note when there is none.
std::string set_goals(const Plan& plan, Lowering& lw, const std::vector<Expectation>& expect, std::vector<Finding>& findings) {
    async::Program& p = lw.program();
    const int P = int(plan.gpus.size()), L = lw.L();
    auto out_slot = [&](int r, std::int64_t c, int a) { return Slot{std::uint32_t(r), 1, std::uint32_t(c * L + a)}; };
    if (!expect.empty()) {
        for (const Expectation& e : expect) {
            // the ranks and chunks were checked against the plan (check_expectations, exit 2)
            const Buf buf = e.buffer == 'i' ? Buf::input : e.buffer == 's' ? Buf::scratch : Buf::output;
            for (int a = 0; a < L; ++a) {
                std::vector<async::Atom> atoms;
                for (auto [r, c] : e.holds) atoms.push_back(lw.atom(r, c, a));
                p.goal(lw.slot(e.rank, buf, false, e.chunk, a), p.values().make(atoms));
            }
        }
        return "";
    }
    const std::string& coll = plan.collective;
    auto sizes = [&](auto ok, std::string_view want) -> bool {
        for (const Gpu& g : plan.gpus)
            if (!ok(g.input_chunks, g.output_chunks)) {
                findings.push_back({"result", fmt::format("gpus[{}]", g.id), g.pos,
                                    fmt::format("{} input and {} output chunks, but a {} on {} GPUs has {} (the executor throws \"Size per "
                                                "chunks inconsistent\" or the buffers do not hold the collective)",
                                                g.input_chunks, g.output_chunks, coll, P, want)});
                return false;
            }
        return true;
    };
    if (coll == "allgather") {
        if (!sizes([&](auto i, auto o) { return o == i * P; }, "P times as many output chunks as input chunks")) return "";
        for (int r = 0; r < P; ++r) {
            const std::int64_t Ci = plan.gpus[0].input_chunks;
            for (std::int64_t c = 0; c < plan.gpus[std::size_t(r)].output_chunks; ++c)
                for (int a = 0; a < L; ++a) p.goal(out_slot(r, c, a), p.values().atom(lw.atom(int(c / Ci), c % Ci, a)));
        }
        return "";
    }
    if (coll == "allreduce" || coll == "reducescatter") {
        const bool rs = coll == "reducescatter";
        if (!sizes([&](auto i, auto o) { return rs ? i == o * P : i == o; }, rs ? "P times as many input chunks as output chunks" : "as many output chunks as input chunks"))
            return "";
        for (int r = 0; r < P; ++r) {
            const std::int64_t Co = plan.gpus[std::size_t(r)].output_chunks;
            for (std::int64_t c = 0; c < Co; ++c)
                for (int a = 0; a < L; ++a) {
                    std::vector<async::Atom> atoms;
                    for (int s = 0; s < P; ++s) atoms.push_back(lw.atom(s, rs ? r * Co + c : c, a));
                    p.goal(out_slot(r, c, a), p.values().make(atoms));
                }
        }
        return "";
    }
    if (coll == "alltoall") {
        if (!sizes([&](auto i, auto o) { return i == o && i % P == 0; }, "as many output as input chunks, a multiple of P")) return "";
        for (int d = 0; d < P; ++d) {
            const std::int64_t K = plan.gpus[std::size_t(d)].output_chunks / P;
            for (int s = 0; s < P; ++s)
                for (std::int64_t j = 0; j < K; ++j)
                    for (int a = 0; a < L; ++a) p.goal(out_slot(d, s * K + j, a), p.values().atom(lw.atom(s, d * K + j, a)));
        }
        return "";
    }
    return fmt::format("the result is not checked: collective \"{}\" has no postcondition collsched knows (allgather, allreduce, "
                       "reducescatter, alltoall); --expect FILE gives one",
                       coll);
}

}  // namespace

PlanReport check_plan(const ReadResult& read, const std::vector<Expectation>& expect) {
    PlanReport rep;
    rep.findings = read.findings;
    const Plan& plan = read.plan;
    for (const Gpu& g : plan.gpus) {
        rep.thread_blocks += g.tbs.size();
        for (const Tb& tb : g.tbs)
            for (const Op& op : tb.ops) rep.ops += 1 + op.inner.size();
    }
    auto count = [&] {
        for (const Finding& f : rep.findings) {
            if (f.rule == "deadlock") ++rep.counts_deadlock;
            else if (f.rule == "data race") ++rep.counts_race;
            else if (f.rule == "result") ++rep.counts_result;
            else ++rep.counts_other;
        }
    };
    if (!read.checkable) {
        count();
        return rep;
    }
    Lowering lw(plan, rep.findings);
    lw.semaphore_initial_values();
    if (!lw.build()) {
        count();
        return rep;
    }
    // callers that read the file check it against the plan first, with its name (cmd_verify)
    check_expectations(expect, "--expect", int(plan.gpus.size()), [&](int r, char buf) -> long long {
        const Gpu& g = plan.gpus[std::size_t(r)];
        return buf == 'i' ? g.input_chunks : buf == 'o' ? g.output_chunks : g.scratch_chunks;
    });
    rep.result_note = set_goals(plan, lw, expect, rep.findings);
    rep.modelled = true;
    async::Naming names;
    names.op = [&](OpId o) { return lw.what()[o]; };
    names.slot = [&](Slot s) { return lw.slot_name(s); };
    names.value = [&](const std::vector<async::Atom>& a) { return value_name(lw, a); };
    names.key = [&](std::uint64_t k) {
        const auto space = k >> 56;
        const int g = int((k >> 32) & 0xffffff);
        const std::uint32_t idx = std::uint32_t(k);
        if (space == device_sem) return fmt::format("GPU {}'s device semaphore {}", g, idx);
        const Gpu& gpu = plan.gpus[std::size_t(g)];
        const auto& peers = space == memory_sem ? gpu.memory_peers : gpu.port_peers;
        const std::uint32_t ch = idx & ~phantom;
        const std::string peer = ch < peers.size() ? fmt::format(" (to GPU {})", peers[ch]) : "";
        if (idx & phantom)
            return fmt::format("the unpaired peer end of GPU {}'s {} channel {}{}", g, space == memory_sem ? "memory" : "port", ch, peer);
        return fmt::format("GPU {}'s {} channel {}{}", g, space == memory_sem ? "memory" : "port", ch, peer);
    };
    async::Report r = async::check(lw.program(), names);
    rep.finishes = r.finishes;
    rep.race_checked = r.race_checked;
    rep.race_free = r.race_free;
    rep.result_checked = r.replayed && rep.result_note.empty();
    for (const async::Finding& f : r.findings) {
        const Op* op = f.op == async::no_op ? nullptr : lw.op_of()[f.op];
        std::string rule = f.kind == async::FindingKind::race           ? "data race"
                           : f.kind == async::FindingKind::wrong_output ? "result"
                           : f.kind == async::FindingKind::reader && f.text.find("[data race]") != std::string::npos ? "data race"
                                                                                                                     : f.kind == async::FindingKind::reader ? "structure"
                                                                                                                                                            : "deadlock";
        std::string text = f.text;
        for (std::string_view tag : {" [deadlock]", " [data race]", " [wrong output]", " [unmatched send]"})
            if (auto at = text.rfind(tag); at != std::string::npos && at + tag.size() == text.size()) text.erase(at);
        // the op's own path leads the engine's text; the finding names it already
        if (op && text.starts_with(lw.what()[f.op] + ": ")) text.erase(0, lw.what()[f.op].size() + 2);
        rep.findings.push_back({rule, op ? lw.what()[f.op] : "", op ? op->pos : Pos{}, std::move(text)});
    }
    if (r.replayed) {
        for (const auto& mw : lw.multi_writers()) {
            std::vector<std::pair<OpId, async::Value>> vals;
            for (OpId w : mw.writers) {
                const auto& lanes = lw.program().op(w).lanes;
                for (std::size_t x = 0; x < lanes.size(); ++x)
                    if (std::find(lanes[x].out.begin(), lanes[x].out.end(), mw.slot) != lanes[x].out.end() && x < r.sent[w].size())
                        vals.push_back({w, r.sent[w][x]});
            }
            for (std::size_t k = 1; k < vals.size(); ++k)
                if (vals[k].second != vals[0].second) {
                    const Op* op = lw.op_of()[mw.reader];
                    rep.findings.push_back({"data race", lw.what()[mw.reader], op ? op->pos : Pos{},
                                            fmt::format("reads LL packets of {}, which {} writes with {} and {} with {} in one launch: "
                                                        "the flag cannot tell them apart",
                                                        lw.slot_name(mw.slot), lw.what()[vals[0].first],
                                                        value_name(lw, r.values.atoms(vals[0].second)), lw.what()[vals[k].first],
                                                        value_name(lw, r.values.atoms(vals[k].second)))});
                    break;
                }
        }
        for (OpId o = 0; o < lw.program().ops(); ++o) {
            if (!lw.moves()[o]) continue;
            const auto& od = lw.program().op(o);
            for (std::size_t x = 0; x < od.lanes.size() && x < r.sent[o].size(); ++x) {
                const async::Lane& lane = od.lanes[x];
                int from = int(od.rank);
                for (const async::Operand& in : lane.in)
                    if (!in.received && int(in.slot.rank) != from) from = int(in.slot.rank);
                // every peer the lane writes to (put, ppkt and respkt to several peers), else the GPU itself
                std::vector<int> tos;
                for (const Slot& s : lane.out)
                    if (int(s.rank) != int(od.rank) && std::find(tos.begin(), tos.end(), int(s.rank)) == tos.end()) tos.push_back(int(s.rank));
                if (tos.empty()) tos.push_back(int(od.rank));
                std::vector<std::pair<int, int>> value;
                for (async::Atom a : r.values.atoms(r.sent[o][x])) {
                    auto [rk, c, part] = lw.atom_parts(a);
                    if (part == 0) value.emplace_back(rk, c);
                }
                for (int to : tos)
                    if (from != to) rep.movement.push_back(Movement{from, to, value});
            }
        }
        std::sort(rep.movement.begin(), rep.movement.end());
    }
    count();
    return rep;
}

std::string format_plan_report(const PlanReport& r, const Plan& plan, std::string_view file) {
    std::string out;
    const bool holds = r.holds();
    out += fmt::format("verdict: {} (MSCCL++ plan \"{}\": {} on {} GPUs, {}, {}; {} thread blocks, {} ops)\n", holds ? "holds" : "violated",
                       plan.name, plan.collective, plan.gpus.size(), plan.inplace ? "in place" : "out of place",
                       plan.packets() ? "LL" : "Simple", r.thread_blocks, r.ops);
    auto status = [&](bool checked, bool ok, std::size_t n) {
        return !checked ? std::string("not checked") : ok ? std::string("holds") : fmt::format("violated ({} finding{})", n, n == 1 ? "" : "s");
    };
    out += fmt::format("  executor rules  {}\n", r.counts_other == 0 ? "hold" : fmt::format("violated ({} finding{})", r.counts_other, r.counts_other == 1 ? "" : "s"));
    out += fmt::format("  deadlock        {}\n", status(r.modelled, r.finishes && r.counts_deadlock == 0, r.counts_deadlock));
    out += fmt::format("  data races      {}\n", status(r.modelled && r.race_checked, r.counts_race == 0, r.counts_race));
    out += fmt::format("  result          {}\n",
                       r.result_checked ? status(true, r.counts_result == 0, r.counts_result)
                       : r.counts_result ? status(true, false, r.counts_result)
                       : !r.result_note.empty() ? "not checked (" + r.result_note + ")"
                                                : std::string("not checked (a deadlock or race comes first)"));
    if (!r.modelled) out += "  (the plan's structure is broken: deadlock, races and the result are not checked)\n";
    if (!r.findings.empty()) {
        out += "counterexamples:\n";
        for (const Finding& f : r.findings) out += "  " + format_finding(file, f) + "\n";
    }
    return out;
}

}  // namespace collsched::mscclpp
