#include "compiler/interop/export_mscclpp.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <optional>
#include <set>
#include <unordered_map>

#include <fmt/format.h>

#include "compiler/io/export_ranks.hpp"
#include "compiler/interop/export_mscclpp_moves.hpp"
#include "compiler/interop/export_mscclpp_switch.hpp"
#include "compiler/interop/mscclpp_check.hpp"
#include "compiler/table/partials.hpp"
#include "support/assert.hpp"
#include "support/error.hpp"
#include "support/trace.hpp"
#include "support/units.hpp"

namespace collsched {

namespace {

using Loc = detail::PlanLoc;
using Move = detail::PlanMove;
using Buf = detail::PlanBuf;

struct PlanLayout {
    CollectiveKind kind;
    bool reduction = false, inplace = false, packets = false;
    int P = 0, C = 0, block = 0;
    int i_chunks = 0, o_chunks = 0;
    std::vector<int> s_chunks;       ///< per GPU: plain scratch chunks used
    std::vector<int> packet_slots;   ///< per GPU: LL packet slots used (after the plain ones)
    std::vector<std::vector<std::pair<Loc, Loc>>> initial_copies;  ///< per GPU and chain: local copies at the start
    std::vector<std::vector<int>> initial_chain;
};

/// Thread blocks a plan spreads its chains over at first (Writer::run).
constexpr int spread_blocks = 32;

struct Built {
    std::string plan;  ///< JSON text
    std::size_t max_ops = 0;
};

class Writer {
public:
    Writer(const SendTable& t, const MscclppOptions& opt) : t_(t), opt_(opt), ms_(t.messages()) {}

    std::string run() {
        check_table();
        place();
        check_size_range();
        // round-robin first; a table no K fits so, in runs of chains of the same steps (detail::chains_by_steps)
        std::string why;
        if (std::optional<std::string> plan = search(false, why)) return std::move(*plan);
        std::string in_runs;
        if (std::optional<std::string> plan = search(true, in_runs)) return std::move(*plan);
        detail::refuse_plan(t_, fmt::format("{} ({} dealt in runs of chains of the same steps)", why, in_runs));
    }

private:
    /// The plan at the first K that fits 64 ops a block, with the chains dealt round-robin or in runs (block_of), or
    /// nothing and `why` none fits.
    std::optional<std::string> search(bool runs, std::string& why) {
        // One thread block per chain, up to spread_blocks of them (MSCCL++'s DSL examples: 8 to 32 a GPU); more only when
        // a block would pass 64 ops, one K at a time (the busiest block's ops do not fall monotonically with K), and at
        // most the blocks every GPU runs at once (a wait spins until another block signals: resident_blocks). A K whose
        // floor on the busiest block (export_mscclpp_floor.cpp) is above 64 would fail: it is not built, so the search
        // starts at the first K the floor allows and the last K refuses at once (the same plan or refusal, sooner).
        runs_ = runs;
        const int chains = int(chain_ids_.size()), most = mscclpp::resident_blocks(1024) / opt_.instances;
        const int first = std::max(1, std::min({chains, spread_blocks, most})), last = std::max(first, std::min(chains, most));
        const detail::OpFloor floor(moves_, L_.initial_chain, dealt(), L_.P, L_.packets, L_.reduction, opt_.handshake);
        for (int K = first;; ++K) {
            const std::size_t least = floor.busiest(K, runs ? K : 1, row());
            if (least > 64 && K < last) continue;
            std::string ops = fmt::format("at least {}", least);
            if (least <= 64) {
                if (opt_.deadline.passed()) throw LimitReached(fmt::format("time limit (the MSCCL++ plan's writer, at {} thread blocks a GPU)", K));
                // counted without writing (the busiest block's ops, up to the first block past 64 but at the last K), and
                // the plan written once, at the K that fits
                const bool final = K >= chains || K >= most;
                const std::size_t busy = busiest(K, final ? ~std::size_t{0} : 64);
                trace("mscclpp plan: {} thread blocks a GPU{}, {} {} ops a block (at least {})", K, runs ? " (chains in runs)" : "",
                      busy > 64 && !final ? "more than" : "at most", busy > 64 && !final ? 64 : busy, least);
                COLLSCHED_ASSERT_MSG(busy >= least, fmt::format("the floor of {} ops a block at {} thread blocks is above the plan's {}", least, K, busy));
                if (busy <= 64 && K <= most) {
                    Built b = build(K);
                    COLLSCHED_ASSERT_MSG(b.max_ops == busy, fmt::format("the plan at {} thread blocks has {} ops in a block, counted {}", K, b.max_ops, busy));
                    return std::move(b.plan);
                }
                ops = fmt::format("{}", busy);
            }
            if (K < chains && K < most) continue;
            if (runs) why = fmt::format("{} ops", ops);
            else if (K >= chains)
                why = fmt::format("a thread block needs {} ops even with one chain of transfers per thread block; the executor allows 64 "
                                  "(MAX_OPERATION, execution_common.hpp:17)",
                                  ops);
            else
                why = fmt::format("{} thread blocks a GPU ({} of {} instance{}) still leave a block {} ops, above the executor's 64 (MAX_OPERATION, "
                                  "execution_common.hpp:17), and more would not all run at once on an A100 ({} blocks of 1024 threads; "
                                  "docs/exports.md): fewer pieces or instances",
                                  K * opt_.instances, K, opt_.instances, opt_.instances == 1 ? "" : "s", ops, mscclpp::resident_blocks(1024));
            return std::nullopt;
        }
    }

    void check_table() {
        const CollectiveKind kind = t_.collective.kind;
        L_.reduction = uses_partials(t_);
        if (L_.reduction && kind != CollectiveKind::allreduce && kind != CollectiveKind::reduce_scatter)
            detail::refuse_plan(t_, "MSCCL++ plans cover allreduce and reducescatter among the reductions (its executor's collectives); use --format ranks");
        if (!L_.reduction && kind != CollectiveKind::alltoall && kind != CollectiveKind::allgather)
            detail::refuse_plan(t_, "MSCCL++ plans cover allgather, alltoall, allreduce and reducescatter, the collectives whose buffers the "
                       "executor lays out; use --format ranks for this one");
        if (!t_.requirements.empty()) detail::refuse_plan(t_, "extra requirements have no place in an MSCCL++ buffer layout");
        if (t_.has_composites() && !L_.reduction) detail::refuse_plan(t_, "combined values and bundles are not chunks of an MSCCL++ buffer");
        if (opt_.proto != "Simple" && opt_.proto != "LL") detail::refuse_plan(t_, fmt::format("--proto {}: MSCCL++ plans are Simple or LL", opt_.proto));
        if (opt_.instances < 1 || opt_.instances > 64) detail::refuse_plan(t_, fmt::format("--instances {} is outside 1..64", opt_.instances));
        L_.kind = kind;
        L_.P = int(t_.topology->processors());
        if (L_.P < 2) detail::refuse_plan(t_, "an MSCCL++ plan needs at least 2 GPUs");
        L_.C = int(table_chunks(t_));
        L_.packets = opt_.proto == "LL";
        L_.inplace = !opt_.out_of_place && (kind == CollectiveKind::allgather || kind == CollectiveKind::allreduce);
        if (kind == CollectiveKind::reduce_scatter && L_.C % L_.P != 0) detail::refuse_plan(t_, "a reduce_scatter's chunks must be a multiple of P");
        L_.block = kind == CollectiveKind::reduce_scatter ? L_.C / L_.P : L_.C;
    }

    /// The executor serves a call only when its size S (the input size; allgather: the output)
    /// lies in [min_message_size, max_message_size] and the input and output are whole multiples of
    /// 16-byte units per chunk (checkMessageSize, execution_plan.cc:293-308): a range without such
    /// a size gives a plan that serves nothing.
    void check_size_range() const { detail::check_size_range(t_, opt_, std::uint64_t(L_.i_chunks) * std::uint64_t(opt_.instances)); }

    Loc work(int g, int c) const {
        if (L_.kind == CollectiveKind::allreduce) return {'o', c};
        if (c / L_.block == g) return {'o', c - g * L_.block};
        return {'s', c};
    }

    /// Where every transfer reads and writes (docs/exports.md, "Writing MSCCL++ plans").
    void place() {
        const EndpointView view = endpoint_view(t_);
        const auto& ev = view.transfers;
        const int P = L_.P;
        L_.s_chunks.assign(std::size_t(P), 0);
        L_.packet_slots.assign(std::size_t(P), 0);
        L_.initial_copies.assign(std::size_t(P), {});
        L_.initial_chain.assign(std::size_t(P), {});
        ports(ev);
        buffer_sizes();
        initial_copies();
        moves_.resize(ev.size());
        std::vector<std::size_t> by_arrival(ev.size());
        for (std::size_t i = 0; i < ev.size(); ++i) by_arrival[i] = i;
        std::stable_sort(by_arrival.begin(), by_arrival.end(), [&](std::size_t x, std::size_t y) { return ev[x].arrived < ev[y].arrived; });
        if (L_.reduction) place_partials(ev, by_arrival);
        else place_copies(ev, by_arrival);
        fold_initial_copies();
        finish_places(ev);
    }

    /// Reductions out of place: W starts as the input chunk. Instead of a copy at the start, a send from W before
    /// anything arrived there reads the input chunk, and the first reduction into W takes the input chunk as its
    /// src_buff[0] (handleReduceSend, execution_kernel.hpp:443-470: dst[0] = src[0] + src[1..]); the copy stays
    /// only for an output chunk nothing arrives at.
    void fold_initial_copies() {
        if (!L_.reduction || (L_.kind == CollectiveKind::allreduce && L_.inplace)) return;
        folds_ = true;
        std::map<std::pair<int, int>, Step> first;  // (gpu, chunk) -> first arrival
        for (const Move& m : moves_) {
            auto [it, fresh] = first.try_emplace({m.dst, m.chain}, m.arrived);
            if (!fresh) it->second = std::min(it->second, m.arrived);
        }
        for (Move& m : moves_)  // a step's sends come before its arrivals (TbWriter::program)
            if (auto it = first.find({m.src, m.chain}); it == first.end() || it->second >= m.sent) m.from = {'i', m.chain};
        for (int g = 0; g < L_.P; ++g) {
            auto& list = L_.initial_copies[std::size_t(g)];
            auto& chain = L_.initial_chain[std::size_t(g)];
            std::size_t kept = 0;
            for (std::size_t k = 0; k < list.size(); ++k)
                if (list[k].second.buf == 'o' && !first.count({g, chain[k]})) {
                    list[kept] = list[k];
                    chain[kept++] = chain[k];
                }
            list.resize(kept);
            chain.resize(kept);
        }
    }

    /// Which pairs of GPUs talk through port channels (a NIC).
    void ports(const std::vector<EndpointTransfer>& ev) {
        for (const EndpointTransfer& e : ev) {
            if (e.src == e.dst)
                detail::refuse_plan(t_, fmt::format("processor {} sends {} in step {} back to itself through routers", idx(e.src), ms_.name(e.message), e.sent));
            const std::pair<std::uint32_t, std::uint32_t> a(std::min(idx(e.src), idx(e.dst)), std::max(idx(e.src), idx(e.dst)));
            if (!port_.count(a)) port_[a] = detail::needs_port(*t_.topology, a.first, a.second) || detail::needs_port(*t_.topology, a.second, a.first);
        }
    }

    void buffer_sizes() {
        const int P = L_.P, C = L_.C;
        if (L_.reduction) {
            if (L_.kind == CollectiveKind::reduce_scatter)
                for (int g = 0; g < P; ++g) L_.s_chunks[std::size_t(g)] = C;
            L_.i_chunks = C;
            L_.o_chunks = L_.kind == CollectiveKind::allreduce ? C : L_.block;
        } else if (L_.kind == CollectiveKind::allgather) {
            L_.i_chunks = C;
            L_.o_chunks = P * C;
        } else {
            L_.i_chunks = L_.o_chunks = P * C;
        }
    }

    /// Local copies that put a GPU's own data where the collective wants it (out of place).
    void initial_copies() {
        const int P = L_.P, C = L_.C;
        for (int g = 0; g < P; ++g) {
            auto& list = L_.initial_copies[std::size_t(g)];
            auto& chain = L_.initial_chain[std::size_t(g)];
            for (int c = 0; c < C; ++c) {
                if (L_.kind == CollectiveKind::allgather && !L_.inplace) {
                    list.push_back({{'i', c}, {'o', g * C + c}});
                    chain.push_back(int(idx(ms_.broadcast(std::uint32_t(g), std::uint32_t(c)))));
                } else if (L_.kind == CollectiveKind::alltoall) {
                    list.push_back({{'i', g * C + c}, {'o', g * C + c}});
                    chain.push_back(int(idx(ms_.personal(std::uint32_t(g), std::uint32_t(g), std::uint32_t(c)))));
                } else if (L_.reduction && !(L_.kind == CollectiveKind::allreduce && L_.inplace)) {
                    list.push_back({{'i', c}, work(g, c)});
                    chain.push_back(c);
                }
            }
        }
    }

    /// Receivers' slots: plain scratch after W, LL packet slots after the plain scratch.
    Loc new_slot(int g) {
        if (L_.packets) return {'p', L_.packet_slots[std::size_t(g)]++};
        return {'s', L_.s_chunks[std::size_t(g)]++};
    }

    /// Reductions: every arrival combines into or replaces the receiver's work chunk.
    void place_partials(const std::vector<EndpointTransfer>& ev, const std::vector<std::size_t>& by_arrival) {
        const int P = L_.P, C = L_.C;
        std::vector<SourceSet> held;
        for (int g = 0; g < P; ++g)
            for (int c = 0; c < C; ++c) held.emplace_back(std::uint32_t(g));
        for (std::size_t i : by_arrival) {
            const EndpointTransfer& e = ev[i];
            auto pv = partial_of(ms_, e.message);
            if (!pv) detail::refuse_plan(t_, fmt::format("{} is not a partial of the reduction", ms_.name(e.message)));
            Move& m = moves_[i];
            m.src = int(idx(e.src));
            m.dst = int(idx(e.dst));
            m.sent = e.sent;
            m.arrived = e.arrived;
            m.chain = int(pv->chunk);
            m.from = work(m.src, int(pv->chunk));
            m.work = work(m.dst, int(pv->chunk));
            m.to = new_slot(m.dst);
            switch (apply_arrival(held[std::size_t(m.dst) * std::size_t(C) + pv->chunk], pv->sources)) {
                case Arrival::combined: m.combine = true; break;
                case Arrival::replaced: m.combine = false; break;
                case Arrival::counted_twice:
                    detail::refuse_plan(t_, fmt::format("GPU {} receives {} in step {} while its buffer shares a contribution with it (`collsched "
                                           "verify` shows where)",
                                           m.dst, ms_.name(e.message), e.arrived));
            }
        }
    }

    /// Copies: the first arrival of a message at a GPU is kept where the collective wants it.
    void place_copies(const std::vector<EndpointTransfer>& ev, const std::vector<std::size_t>& by_arrival) {
        const int C = L_.C;
        auto own = [&](int g, MessageId msg) -> std::optional<Loc> {
            MessageKey k = ms_.key(msg);
            if (int(k.src) != g) return std::nullopt;
            if (L_.kind == CollectiveKind::allgather)
                return k.kind == MessageKind::broadcast ? std::optional<Loc>(L_.inplace ? Loc{'o', g * C + int(k.chunk)} : Loc{'i', int(k.chunk)})
                                                        : std::nullopt;
            if (k.kind == MessageKind::personal && int(k.dst) != g) return Loc{'i', int(k.dst) * C + int(k.chunk)};
            return std::nullopt;
        };
        auto final_loc = [&](int g, MessageId msg) -> std::optional<Loc> {
            MessageKey k = ms_.key(msg);
            if (L_.kind == CollectiveKind::allgather)
                return k.kind == MessageKind::broadcast && int(k.src) != g ? std::optional<Loc>(Loc{'o', int(k.src) * C + int(k.chunk)})
                                                                            : std::nullopt;
            if (k.kind == MessageKind::personal && int(k.dst) == g && int(k.src) != g) return Loc{'o', int(k.src) * C + int(k.chunk)};
            return std::nullopt;
        };
        std::map<std::pair<int, std::uint32_t>, std::size_t> first;  // (gpu, message) -> first arrival
        for (std::size_t i : by_arrival) {
            const EndpointTransfer& e = ev[i];
            Move& m = moves_[i];
            m.src = int(idx(e.src));
            m.dst = int(idx(e.dst));
            m.sent = e.sent;
            m.arrived = e.arrived;
            m.chain = int(idx(e.message));
            m.to = new_slot(m.dst);
            if (!own(m.dst, e.message) && first.emplace(std::pair(m.dst, idx(e.message)), i).second)
                m.keep = final_loc(m.dst, e.message);
            if (!L_.packets && m.keep) {
                // Simple: the first arrival goes straight to its output chunk (no scratch slot)
                --L_.s_chunks[std::size_t(m.dst)];
                m.to = *m.keep;
                m.keep.reset();
            }
        }
        for (std::size_t i = 0; i < ev.size(); ++i) {
            const EndpointTransfer& e = ev[i];
            Move& m = moves_[i];
            if (auto o = own(m.src, e.message)) {
                m.from = *o;
                continue;
            }
            auto f = first.find({m.src, idx(e.message)});
            if (f == first.end() || ev[f->second].arrived >= e.sent)
                detail::refuse_plan(t_, fmt::format("GPU {} sends {} in step {} before it holds it (the table breaks causality; `collsched verify` "
                                       "shows where)",
                                       m.src, ms_.name(e.message), e.sent));
            m.from = moves_[f->second].to;  // Simple: its output or scratch chunk; LL: the packet slot it arrived in
        }
        // Simple: a first arrival the GPU only relays still needs its scratch chunk, which new_slot counted
    }

    const std::vector<int>& dealt() const { return runs_ ? order_ : ids_; }
    int row() const { return runs_ ? 1 : opt_.chains_a_block; }  ///< chains a block takes at a time (round-robin)

    void finish_places(const std::vector<EndpointTransfer>& ev) {
        const int P = L_.P;
        moves_of_gpu_.assign(std::size_t(P), {});
        for (std::size_t i = 0; i < ev.size(); ++i) {
            const int lo = std::min(moves_[i].src, moves_[i].dst), hi = std::max(moves_[i].src, moves_[i].dst);
            moves_[i].port = port_.at({std::uint32_t(lo), std::uint32_t(hi)});
            chain_ids_.insert(moves_[i].chain);
            moves_of_gpu_[std::size_t(lo)].push_back(i);
            if (hi != lo) moves_of_gpu_[std::size_t(hi)].push_back(i);
        }
        for (const auto& list : L_.initial_chain)
            for (int c : list) chain_ids_.insert(c);
        ids_.assign(chain_ids_.begin(), chain_ids_.end());
        order_ = detail::chains_by_steps(moves_, L_.initial_chain, ids_);
        // the plain scratch and the packet slots must not overlap: packet slot k is plain chunks 2k, 2k+1
        if (L_.packets) {
            packet_base_.assign(std::size_t(P), 0);
            for (int g = 0; g < P; ++g) packet_base_[std::size_t(g)] = (L_.s_chunks[std::size_t(g)] + 1) / 2;
        }
    }

    /// Chunk index of instance `inst` (interleaved, as the DSL's replicate_instances does).
    int at(int index, int inst) const { return index * opt_.instances + inst; }

    Buf buf(Loc l, int g, int inst, int size = 1) const {
        if (l.buf == 'p') return {'s', at(packet_base_[std::size_t(g)] + l.idx, inst), size};
        return {l.buf, at(l.idx, inst), size};
    }

    /// How build(K) deals the chains to thread blocks (blocks(K)) and a GPU's channels and moves (gpu(b, g), when it is
    /// first written: busiest() stops at the first block past 64 ops, most often on GPU 0; all GPUs at every K, with maps
    /// per move, were a quarter of `optimize --executor mscclpp` on 16 x 8 H100).
    struct Blocks {
        int K = 0;
        std::vector<int> tb_of_chain;  ///< per chain id (a message or chunk index: small and dense), its block; -1 none
        std::vector<std::map<std::tuple<int, int, int>, int>> chan_index;  ///< per GPU: (peer, tb, inst) -> index in its type's list
        std::vector<std::vector<int>> mem_peers, port_peers;               ///< per GPU
        std::vector<std::vector<std::vector<const Move*>>> mine;           ///< per GPU and thread block: the moves it sends or receives
    };

    Blocks blocks(int K) const {
        const int P = L_.P;
        COLLSCHED_ASSERT_MSG(P < (1 << 20) && K < (1 << 16), fmt::format("{} GPUs, {} thread blocks: beyond the channel keys", P, K));
        Blocks b;
        b.K = K;
        const std::vector<int>& order = dealt();
        b.tb_of_chain.assign(chain_ids_.empty() ? 0 : std::size_t(*chain_ids_.rbegin()) + 1, -1);
        for (std::size_t r = 0; r < order.size(); ++r) b.tb_of_chain[std::size_t(order[r])] = detail::block_of(r, order.size(), K, runs_ ? K : 1, row());
        b.chan_index.resize(std::size_t(P));
        b.mem_peers.resize(std::size_t(P)), b.port_peers.resize(std::size_t(P));
        b.mine.resize(std::size_t(P));
        return b;
    }

    /// GPU g's part of b: its channels, one per (peer, thread block, instance) with traffic either way, memory and port
    /// lists ordered by (peer, tb, inst) so that the k-th to a peer pairs with the peer's k-th back (executor.cc:287-312);
    /// and per thread block the moves it sends or receives, in the moves' order (each block's program reads its own: a
    /// scan of every move per block took 150 s on 16 GPUs and 15,360 transfers).
    void gpu(Blocks& b, int g) const {
        const std::vector<std::size_t>& own = moves_of_gpu_[std::size_t(g)];
        std::vector<std::uint64_t> ends;  // (peer, tb) as one sortable number (GPUs below 2^20, blocks below 2^16)
        ends.reserve(own.size());
        for (std::size_t i : own) {
            const Move& m = moves_[i];
            ends.push_back(std::uint64_t(m.src == g ? m.dst : m.src) << 16 | std::uint64_t(b.tb_of_chain[std::size_t(m.chain)]));
        }
        std::sort(ends.begin(), ends.end());
        ends.erase(std::unique(ends.begin(), ends.end()), ends.end());
        for (const std::uint64_t e : ends) {
            const int p = int(e >> 16), j = int(e & 0xffff);
            const bool pt = port_.at({std::uint32_t(std::min(g, p)), std::uint32_t(std::max(g, p))});  // every move of a pair has it
            auto& list = pt ? b.port_peers[std::size_t(g)] : b.mem_peers[std::size_t(g)];
            for (int inst = 0; inst < opt_.instances; ++inst)
                for (int twice = p == g ? 2 : 1; twice > 0; --twice) {  // a move from g to g named both ends: two channels
                    b.chan_index[std::size_t(g)][{p, j, inst}] = int(list.size());
                    list.push_back(p);
                }
        }
        b.mine[std::size_t(g)].assign(std::size_t(b.K), {});
        for (std::size_t i : own) b.mine[std::size_t(g)][std::size_t(b.tb_of_chain[std::size_t(moves_[i].chain)])].push_back(&moves_[i]);
    }

    /// The ops of the busiest thread block with K blocks a GPU, composed as build(K) composes them but not written
    /// (a plan's JSON took 1 s per K on 14,880 transfers); past `stop` ops it stops and returns what it found.
    std::size_t busiest(int K, std::size_t stop) {
        Blocks b = blocks(K);
        std::size_t most = 0;
        auto remote = [](int, char, bool) { return 0; };  // the ids do not change the ops
        for (int g = 0; g < L_.P; ++g) {
            if (opt_.deadline.passed()) throw LimitReached(fmt::format("time limit (the MSCCL++ plan's writer, at {} thread blocks a GPU)", K));
            gpu(b, g);
            for (int j = 0; j < K; ++j) {  // every instance has instance 0's ops
                TbWriter tw(*this, g, j, 0, b.chan_index[std::size_t(g)], remote);
                tw.program(b.tb_of_chain, b.mine[std::size_t(g)][std::size_t(j)]);
                most = std::max(most, tw.ops.size());
                if (most > stop) return most;
            }
        }
        return most;
    }

    /// The plan with K thread blocks a GPU: its JSON text (as nlohmann's dump(2)) and the ops of its busiest block.
    Built build(int K) {
        const int P = L_.P, N = opt_.instances;
        stage_used_.clear();
        Blocks b = blocks(K);
        for (int g = 0; g < P; ++g) gpu(b, g);
        Built built;
        detail::JsonText out(built.plan);
        out.open('{');
        out.key("name").str(fmt::format("collsched {} on {}", t_.collective.to_string(), t_.topology->spec()));
        out.key("collective").str(collective_row(L_.kind).msccl);
        out.key("protocol").str(opt_.proto);
        out.key("inplace").boolean(L_.inplace);
        out.key("reuse_resources").boolean(false);
        out.key("gpus").open('[');
        for (int g = 0; g < P; ++g) {
            if (opt_.deadline.passed()) throw LimitReached(fmt::format("time limit (the MSCCL++ plan's writer, at {} thread blocks a GPU)", K));
            std::map<std::tuple<int, char, bool>, int> remote_ids;  // (rank, buffer, port) -> id
            std::vector<std::tuple<int, char, bool>> remote_buffers;
            auto remote = [&](int rank, char c, bool pt) {
                auto [it, fresh] = remote_ids.try_emplace({rank, c, pt}, int(remote_buffers.size()));
                if (fresh) remote_buffers.emplace_back(rank, c, pt);
                return it->second;
            };
            std::vector<TbWriter> tws;  // the GPU's blocks first: the scratch they stage in comes before them
            tws.reserve(std::size_t(N * K));
            for (int inst = 0; inst < N; ++inst)
                for (int j = 0; j < K; ++j) {
                    TbWriter& tw = tws.emplace_back(*this, g, j, inst, b.chan_index[std::size_t(g)], remote);
                    tw.program(b.tb_of_chain, b.mine[std::size_t(g)][std::size_t(j)]);
                    built.max_ops = std::max(built.max_ops, tw.ops.size());
                }
            const int plain = L_.s_chunks[std::size_t(g)];
            const int scratch =
                L_.packets ? std::max(packet_base_[std::size_t(g)] + L_.packet_slots[std::size_t(g)] + stage_used_[g], (plain + 1) / 2) : plain;
            out.open('{');
            out.key("id").num(g);
            out.key("input_chunks").num(L_.i_chunks * N);
            out.key("output_chunks").num(L_.o_chunks * N);
            out.key("scratch_chunks").num(scratch * N);
            out.key("threadblocks").open('[');
            for (std::size_t x = 0; x < tws.size(); ++x) {
                const TbWriter& tw = tws[x];
                out.open('{');
                out.key("id").num(std::int64_t(x));
                out.key("ops").open('[');
                for (const detail::PlanOp& op : tw.ops) out.op(op);
                out.close();
                out.key("channels").open('[');
                for (auto [type, list] : {std::pair{"memory", &tw.mem_list}, std::pair{"port", &tw.port_list}})
                    if (!list->empty()) out.open('{').key("channel_type").str(type).key("channel_ids").ints(*list).close();
                out.close();
                out.key("remote_buffer_refs").open('[');
                for (auto [type, list] : {std::pair{"memory", &tw.mem_bufs}, std::pair{"port", &tw.port_bufs}})
                    if (!list->empty()) out.open('{').key("access_channel_type").str(type).key("remote_buffer_ids").ints(*list).close();
                out.close().close();
            }
            out.close();
            out.key("channels").open('[');
            for (auto [type, list] : {std::pair{"memory", &b.mem_peers[std::size_t(g)]}, std::pair{"port", &b.port_peers[std::size_t(g)]}})
                if (!list->empty()) out.open('{').key("channel_type").str(type).key("connected_to").ints(*list).close();
            out.close();
            out.key("remote_buffers").open('[');
            for (const auto& [rank, c, pt] : remote_buffers) {
                out.open('{').key("rank").num(rank).key("type").str(std::string_view(&c, 1));
                out.key("access_channel_types").open('[').str(pt ? "port" : "memory").close().close();
            }
            out.close();
            out.key("semaphores").open('[').close();
            out.close();
        }
        out.close();
        out.key("num_threads_per_block").num(1024);
        out.key("use_double_scratch_buffer").boolean(L_.packets);
        out.key("buffer_alignment").num(16);
        out.key("min_message_size").unum(opt_.min_message_size);
        out.key("max_message_size").unum(opt_.max_message_size);
        out.close();
        return built;
    }

    /// The ops of one thread block (GPU g, chain share j, instance inst).
    struct TbWriter {
        Writer& w;
        int g, j, inst;
        const std::map<std::tuple<int, int, int>, int>& chan_index;
        std::function<int(int, char, bool)> remote;
        std::vector<detail::PlanOp> ops;
        std::vector<int> mem_list, port_list, mem_bufs, port_bufs;
        std::map<int, int> mem_local, port_local, mem_buf_local, port_buf_local;
        bool pending_sync = false;  ///< data ops since the last nop
        std::map<int, int> port_thread;  ///< per port channel: the thread that pushed into its FIFO last since the last nop
        std::set<int> written;  ///< reductions: the chunks whose W this block has written

        TbWriter(Writer& w_, int g_, int j_, int inst_, const std::map<std::tuple<int, int, int>, int>& ci,
                 std::function<int(int, char, bool)> rm)
            : w(w_), g(g_), j(j_), inst(inst_), chan_index(ci), remote(std::move(rm)) {}

        int channel(int peer, bool pt) {
            const int global = chan_index.at({peer, j, inst});
            auto& local = pt ? port_local : mem_local;
            auto& list = pt ? port_list : mem_list;
            auto [it, fresh] = local.try_emplace(global, int(list.size()));
            if (fresh) list.push_back(global);
            return it->second;
        }
        int buffer_id(int rank, char b, bool pt) {
            const int id = remote(rank, b, pt);
            auto& local = pt ? port_buf_local : mem_buf_local;
            auto& list = pt ? port_bufs : mem_bufs;
            auto [it, fresh] = local.try_emplace(id, int(list.size()));
            if (fresh) list.push_back(id);
            return it->second;
        }
        void nop() {
            if (!ops.empty() && ops.back().name == "nop") return;
            ops.push_back({"nop"});
            pending_sync = false;
            port_thread.clear();
        }
        void data(detail::PlanOp op) {
            ops.push_back(std::move(op));
            pending_sync = true;
        }
        Buf remote_buf(Loc l, int rank, bool pt, int size = 1) {
            const char b = l.buf == 'p' ? 's' : l.buf;
            const int index = l.buf == 'p' ? w.packet_base_[std::size_t(rank)] + l.idx : l.idx;
            return {b, w.at(index, inst), size, buffer_id(rank, b, pt)};
        }
        /// The repkt that ends this block (before its nop) when it wrote exactly `at`: the
        /// reduction a packet put of `at` can join (respkt, recpkt: execution_kernel.hpp:335-410,
        /// the reduced value is written to dst[0] and as packets further on in the same loop).
        detail::PlanOp* reduction_of(const Buf& at) {
            if (ops.size() < 2 || ops.back().name != "nop") return nullptr;
            detail::PlanOp& r = ops[ops.size() - 2];
            if (r.name != "repkt" || r.dst.size() != 1 || !(r.dst[0] == at)) return nullptr;
            return &r;
        }
        void sync_ops(std::string_view name, const std::vector<int>& ids, bool pt) {
            for (std::size_t k = 0; k < ids.size(); k += 8) {
                std::vector<int> part(ids.begin() + std::ptrdiff_t(k), ids.begin() + std::ptrdiff_t(std::min(ids.size(), k + 8)));
                ops.push_back({name, {}, {}, std::move(part), false, pt ? 'p' : 'm'});
            }
        }

        void program(const std::vector<int>& tb_of_chain, const std::vector<const Move*>& own) {
            const bool LL = w.L_.packets;
            // local copies of this block's chains
            const auto& copies = w.L_.initial_copies[std::size_t(g)];
            for (std::size_t k = 0; k < copies.size(); ++k)
                if (tb_of_chain.at(std::size_t(w.L_.initial_chain[std::size_t(g)][k])) == j)
                    data({"copy", {w.buf(copies[k].first, g, inst)}, {w.buf(copies[k].second, g, inst)}});
            std::map<Step, std::vector<const Move*>> sends, arrivals;
            for (const Move* m : own) {
                if (m->src == g) sends[m->sent].push_back(m);
                if (m->dst == g) arrivals[m->arrived].push_back(m);
            }
            std::set<Step> steps;
            for (auto& [s, v] : sends) steps.insert(s);
            for (auto& [s, v] : arrivals) steps.insert(s);
            for (Step s : steps) {
                if (pending_sync) nop();
                // sends: puts (memory: fused per source buffer; port: put-with-signal), a nop, signals
                std::vector<int> signal_mem;
                std::vector<detail::PortPut> port_puts;
                std::map<char, std::vector<const Move*>> mem_puts, mem_packets;
                if (auto it = sends.find(s); it != sends.end())
                    for (const Move* m : it->second) {
                        if (LL && !m->port && m->from.buf != 'p') {
                            mem_packets[m->from.buf].push_back(m);  // fused below, as puts are
                        } else if (LL) {
                            send_packets(*m);
                        } else if (m->port) {
                            detail::PortPut& p = port_puts.emplace_back();  // buffers and channels numbered in the order named
                            p.src = w.buf(m->from, g, inst);
                            p.dst = remote_buf(m->to, m->dst, true);
                            p.channel = channel(m->dst, true);
                        } else {
                            mem_puts[m->from.buf].push_back(m);
                            if (std::find(signal_mem.begin(), signal_mem.end(), channel(m->dst, false)) == signal_mem.end())
                                signal_mem.push_back(channel(m->dst, false));
                        }
                    }
                // port puts: one op for up to 8 channels (Simple)
                for (detail::PlanOp& op : detail::fuse_port_puts(w.L_.reduction ? "pwsf" : "pws", port_puts, port_thread)) {
                    if (op.name == "nop") pending_sync = false;  // port_thread is as fuse_port_puts left it
                    ops.push_back(std::move(op));
                }
                // memory puts (and LL packet puts) from one source buffer: one op for up to 8 peers
                // (execution_kernel.hpp:259-270: the source buffer of entry 0, an offset and size per entry)
                for (auto [name, groups] : {std::pair{"put", &mem_puts}, std::pair{"ppkt", &mem_packets}})
                    for (auto& [b, list] : *groups)
                        for (std::size_t k = 0; k < list.size(); k += 8) {
                            std::vector<Buf> src, dst;
                            std::vector<int> ids;
                            bool same = true;  // every entry sends the one chunk
                            for (std::size_t q = k; q < std::min(list.size(), k + 8); ++q) {
                                src.push_back(w.buf(list[q]->from, g, inst));
                                dst.push_back(remote_buf(list[q]->to, list[q]->dst, false));
                                ids.push_back(channel(list[q]->dst, false));
                                same = same && src.back() == src.front();
                            }
                            // LL: packets of the chunk the block's last op reduced go out with the
                            // reduction, one respkt (its sends go to dst[1..], memory channels)
                            // (one group only: a second group of packet puts would read what the respkt writes, without
                            // the nop it takes away)
                            detail::PlanOp* r = std::string_view(name) == "ppkt" && same && list.size() <= 8 ? reduction_of(src.front()) : nullptr;
                            if (r && r->dst.size() + dst.size() <= 9) {  // 8 peers at most (MAX_CHANNEL_PER_OPERATION)
                                ops.pop_back();  // the nop: the op reads what it writes itself
                                r->name = "respkt";
                                r->dst.insert(r->dst.end(), dst.begin(), dst.end());
                                r->channel = 'm';
                                pending_sync = true;
                                continue;
                            }
                            data({name, std::move(src), std::move(dst), std::move(ids), false, 'm'});
                        }
                if (!signal_mem.empty()) {
                    nop();
                    sync_ops("signal", signal_mem, false);
                }
                auto it = arrivals.find(s);
                if (it == arrivals.end()) continue;
                if (!LL) {
                    // one wait per signal: a memory sender signals once per (peer, step), and all its
                    // transfers of a step arrive in one step; a port put signals once per transfer (pws)
                    std::vector<int> wait_mem, wait_port;
                    for (const Move* m : it->second) {
                        const int c = channel(m->src, m->port);
                        if (m->port) wait_port.push_back(c);
                        else if (std::find(wait_mem.begin(), wait_mem.end(), c) == wait_mem.end()) wait_mem.push_back(c);
                    }
                    sync_ops("wait", wait_mem, false);
                    for (std::vector<int>& part : detail::distinct_groups(wait_port)) ops.push_back({"wait", {}, {}, std::move(part), false, 'p'});
                    nop();
                } else if (pending_sync) {
                    nop();  // the unpacks and reductions below write what this step's puts read
                }
                receive(it->second);
            }
            if (pending_sync) nop();
            while (!ops.empty() && ops.back().name == "nop") ops.pop_back();
            if (!LL && w.opt_.handshake) handshake();
        }

        /// Simple: before anything else, one signal and one wait on every channel of the block
        /// (relaxed on memory channels, as the DSL's plans open; port channels have no relaxed
        /// form), then a nop: no put of this launch reaches a peer before the peer's block has
        /// started this launch, so before the peer's GPU finished the previous one. Both ends of a
        /// channel do it, so the persistent counters stay balanced. LL needs none (double scratch,
        /// and flags per launch).
        void handshake() {
            if (mem_list.empty() && port_list.empty()) return;
            std::vector<detail::PlanOp> saved = std::move(ops);
            ops.clear();
            std::vector<int> mem(mem_list.size()), port(port_list.size());
            std::iota(mem.begin(), mem.end(), 0);
            std::iota(port.begin(), port.end(), 0);
            sync_ops("rlxsignal", mem, false);
            sync_ops("signal", port, true);
            sync_ops("rlxwait", mem, false);
            sync_ops("wait", port, true);
            ops.push_back({"nop"});
            for (detail::PlanOp& o : saved) ops.push_back(std::move(o));
        }

        /// LL: write the packets into the peer's slot (port: stage them locally first).
        void send_packets(const Move& m) {
            if (!m.port) {
                data({m.from.buf == 'p' ? "rppkt" : "ppkt", {w.buf(m.from, g, inst)}, {remote_buf(m.to, m.dst, false)}, {channel(m.dst, false)}, false, 'm'});
                return;
            }
            if (m.from.buf == 'p') {
                data({"rppkt", {w.buf(m.from, g, inst)}, {remote_buf(m.to, m.dst, true)}, {channel(m.dst, true)}, false, 'p'});
                return;
            }
            // stage: cpkt into a local packet slot of its own (or, right after the reduction that
            // wrote the chunk, that reduction's recpkt copy), nop, then the proxy copies the packets
            const Loc stage{'p', w.stage_slot(g)};
            if (detail::PlanOp* r = reduction_of(w.buf(m.from, g, inst))) {
                r->name = "recpkt";
                r->dst.push_back(w.buf(stage, g, inst));
            } else {
                data({"cpkt", {w.buf(m.from, g, inst)}, {w.buf(stage, g, inst)}});
                nop();
            }
            ops.push_back({"ppkt", {w.buf(stage, g, inst)}, {remote_buf(m.to, m.dst, true)}, {channel(m.dst, true)}, false, 'p'});
        }

        /// What the receiver does with arrivals: Simple copies are in place already; LL unpacks
        /// the packets it keeps; reductions combine into or replace W (ops on one W separated by a nop).
        void receive(const std::vector<const Move*>& list) {
            const bool LL = w.L_.packets;
            if (!w.L_.reduction) {
                for (const Move* m : list)
                    if (LL && m->keep) data({"upkt", {w.buf(m->to, g, inst)}, {w.buf(*m->keep, g, inst)}});
                return;
            }
            // per W in order of arrival its ops: a run of combines one op (9 sources at most), a replacement one op
            std::vector<std::vector<std::vector<const Move*>>> per_w;
            std::map<std::pair<char, int>, std::size_t> index;
            for (const Move* m : list) {
                auto [at, fresh] = index.try_emplace({m->work.buf, m->work.idx}, per_w.size());
                if (fresh) per_w.emplace_back();
                auto& groups = per_w[at->second];
                if (groups.empty() || !m->combine || !groups.back().front()->combine || groups.back().size() >= 9) groups.emplace_back();
                groups.back().push_back(m);
            }
            // round r: the r-th op of every W; a nop between rounds (ops on one W in order)
            for (std::size_t r = 0, more = 1; more; ++r) {
                more = 0;
                for (const auto& groups : per_w) {
                    if (r >= groups.size()) continue;
                    if (r > 0 && !more) nop();
                    more = 1;
                    const std::vector<const Move*>& group = groups[r];
                    const Move& first = *group.front();
                    // the first write of W: W still holds the input chunk, which the reduction reads itself (fold_initial_copies)
                    const bool fresh = w.folds_ && written.insert(first.chain).second;
                    if (!first.combine) {
                        data({LL ? "upkt" : "copy", {w.buf(first.to, g, inst)}, {w.buf(first.work, g, inst)}});
                    } else {
                        std::vector<Buf> src{w.buf(fresh ? Loc{'i', first.chain} : first.work, g, inst)};
                        for (const Move* m : group) src.push_back(w.buf(m->to, g, inst));
                        data({LL ? "repkt" : "re", std::move(src), {w.buf(first.work, g, inst)}, {}, true});
                    }
                }
            }
        }
    };

    int stage_slot(int g) {
        // staging slots for LL over port channels come after the receive slots
        return L_.packet_slots[std::size_t(g)] + stage_used_[g]++;
    }

    const SendTable& t_;
    MscclppOptions opt_;
    Messages ms_;
    PlanLayout L_;
    std::vector<Move> moves_;
    std::map<std::pair<std::uint32_t, std::uint32_t>, bool> port_;  ///< per pair of GPUs (lower first): through a port channel
    std::set<int> chain_ids_;
    std::vector<std::vector<std::size_t>> moves_of_gpu_;  ///< per GPU the moves it sends or receives, in order
    bool runs_ = false;             ///< build(K) deals the chains in runs of order_ (chains_by_steps), else round-robin in ids_
    std::vector<int> ids_, order_;  ///< the chains by id, and by the steps they are active in
    bool folds_ = false;  ///< W's input chunk is read where it stands (fold_initial_copies)
    std::vector<int> packet_base_;
    std::map<int, int> stage_used_;
};

}  // namespace

std::string detail::puts_plan(const SendTable& t, const MscclppOptions& opt) { return Writer(t, opt).run(); }

}  // namespace collsched
