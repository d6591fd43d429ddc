#include "compiler/interop/export_msccl.hpp"
#include "compiler/interop/export_msccl_impl.hpp"

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <tuple>
#include <unordered_map>

#include "compiler/io/export_ranks.hpp"
#include "compiler/table/partials.hpp"
#include "support/assert.hpp"
#include "support/error.hpp"

namespace collsched {

namespace msccl_plan {
namespace {


Plan build_plan_as(const SendTable& t, const MscclOptions& opt);

/// Builds the whole plan (every check happens here, before a byte is written). Every refusal
/// names the executor's rule; docs/exports.md gives the source line of each. Paired thread
/// blocks that exceed the step limit fall back to one thread block per connection end.
Plan build_plan(const SendTable& t, const MscclOptions& opt) {
    if (const std::optional<std::string> r = in_switch_reduction(t))  // before the endpoint view, which cannot hold it
        refuse(t, fmt::format("MSCCL-IR has no in-switch reduction: {} (NVLS, SHARP: combine=routers); an MSCCL-IR thread block "
                              "copies and reduces between GPUs only (an MSCCL++ plan runs it on switch channels: --format mscclpp)",
                              *r));
    try {
        return build_plan_as(t, opt);
    } catch (const TwoWaits&) {
        if (!opt.coalesce) throw;
        MscclOptions one = opt;  // chunks with different waits: one step per chunk
        one.coalesce = false;
        return build_plan(t, one);
    } catch (const StepLimit&) {
        if (!opt.pair) throw;
        MscclOptions unpaired = opt;
        unpaired.pair = false;
        return build_plan(t, unpaired);
    } catch (const DependencyLimit& e) {
        // An alltoall that serves in-place calls waits, per receive, for the send that reads its
        // slot; on large GPU counts those waits name thread blocks past 127. Without --inplace
        // the out-of-place program (no such waits) is still a correct answer.
        if (opt.inplace || t.collective.kind != CollectiveKind::alltoall || opt.out_of_place_only) throw InputError(e.what());
        MscclOptions out = opt;
        out.out_of_place_only = true;
        return build_plan(t, out);
    }
}

/// Builds the whole plan (every check happens here, before a byte is written) in one try of
/// the options: the request's checks, the placement of every transfer, channels and thread
/// blocks as msccl-tools assigns them, coalescing and fusion, dependencies, the executor's load
/// rules. Every refusal names the executor's rule; docs/exports.md gives the source line of each.
class PlanBuilder {
public:
    PlanBuilder(const SendTable& t, const MscclOptions& opt) : t_(t), opt_(opt), ms_(t.messages()), ev_(view_.transfers) {}

    Plan build() {
        check_request();
        place();
        assign_channels();
        local_copies();
        connection_ends();
        if (opt_.pair) pair_ends();
        order_thread_blocks();
        fill_thread_blocks();
        if (opt_.coalesce) coalesce();
        fuse();
        positions();
        dependencies();
        load_limits();
        return std::move(plan_);
    }

private:
    using Gpc = std::tuple<std::uint32_t, std::uint32_t, int>;  ///< (gpu, peer, channel): one end of a connection

    /// The options and the collective: what MSCCL-IR and the executor can carry.
    void check_request() {
        if (opt_.max_steps < 1 || opt_.max_steps > MscclLimits::max_dependency_step + 1)
            throw InputError(fmt::format("--max-steps {} is outside 1..{} (the executor stores step numbers in an int16_t)",
                                         opt_.max_steps, MscclLimits::max_dependency_step + 1));
        if (opt_.proto != "Simple" && opt_.proto != "LL" && opt_.proto != "LL128")
            throw InputError(fmt::format("--proto {} is not Simple, LL or LL128", opt_.proto));
        if (opt_.channels < 1 || opt_.channels > MscclLimits::max_channels)
            throw InputError(fmt::format("--channels {} is outside 1..{} (MAXCHANNELS)", opt_.channels, MscclLimits::max_channels));
        kind_ = t_.collective.kind;
        reduction_ = uses_partials(t_);
        if (reduction_ && kind_ != CollectiveKind::allreduce && kind_ != CollectiveKind::reduce_scatter && kind_ != CollectiveKind::reduce)
            refuse(t_, "MSCCL-IR export covers allreduce, reduce_scatter and reduce among the reductions (MSCCL has no scan); use --format "
                       "ranks for this one");
        if (!reduction_ && kind_ != CollectiveKind::alltoall && kind_ != CollectiveKind::allgather && kind_ != CollectiveKind::broadcast)
            refuse(t_, "MSCCL-IR export covers alltoall, allgather, broadcast and the reductions allreduce, reduce_scatter and reduce "
                       "with partials, the collectives whose buffer layout the MSCCL executor fixes; use --format ranks for this one");
        if (kind_ == CollectiveKind::reduce && reduction_ && idx(t_.collective.root) != 0)
            refuse(t_, fmt::format("the root is processor {}, but the executor picks an algorithm by collective, rank count and size "
                                   "only, never by root (msccl_lifecycle.cc), so the file would also serve ncclReduce with root 0 "
                                   "[reduce root]; relabel the processors so that the root is 0",
                                   idx(t_.collective.root)));
        if (kind_ == CollectiveKind::broadcast && idx(t_.collective.root) != 0)
            refuse(t_, fmt::format("the root is processor {}, but the executor picks an algorithm by collective, rank count and size "
                                   "only, never by root (msccl_lifecycle.cc), so the file would also serve ncclBroadcast with "
                                   "root 0 and deliver wrong data [broadcast root]; relabel the processors so that the root is 0",
                                   idx(t_.collective.root)));
        if (!t_.requirements.empty()) refuse(t_, "extra requirements have no place in an MSCCL buffer layout");
        if (t_.has_composites() && !reduction_)
            refuse(t_, "MSCCL-IR cannot express combined values (a(i..j)) or bundles (b(0)+b(4)): a threadblock step copies one chunk; "
                       "use --format ranks, which names them");
        P_ = t_.topology->processors();
        if (P_ < 2) refuse(t_, "MSCCL needs at least 2 GPUs");
        if (P_ > MscclLimits::max_gpus)
            refuse(t_, fmt::format("{} GPUs; the executor's XML reader takes at most {} children of <algo> [MAX_SUBS]", P_,
                                   MscclLimits::max_gpus));
    }

    /// Every transfer gets its buffer locations (export_msccl_place.cpp).
    void place() {
        view_ = endpoint_view(t_);
        for (const EndpointTransfer& e : ev_)
            if (e.src == e.dst)
                refuse(t_, fmt::format("processor {} sends {} in step {} and it comes back to itself through routers; in MSCCL a "
                                       "peer is never the GPU itself",
                                       idx(e.src), ms_.name(e.message), e.sent));
        plan_.name = algo_name(t_);
        plan_.gpus.resize(P_);
        plan_.out_of_place_only = opt_.out_of_place_only;
        pl_ = reduction_ ? place_reduction(t_, ev_, plan_) : place_copies(t_, ev_, plan_);
        if (opt_.inplace && !plan_.inplace) refuse(t_, plan_.inplace_refusal + " (drop --inplace for an out-of-place program)");
        plan_.coll = std::string(t_.collective.row().msccl);
    }

    /// One connection per directed pair of GPUs. A channel holds at most 32 sending and 32
    /// receiving thread blocks per GPU. Two assignments, the one with fewer channels wins (the
    /// first at a tie): (a) greedy, the lowest channel where neither end has 32 thread blocks of
    /// that direction yet (one channel for sparse patterns such as rings); (b) by offset, pair
    /// (p, q) on window (q - p - 1) mod P / 32 of the offsets in use, which never exceeds 32 per
    /// GPU and direction because a GPU has one peer per offset, and needs ceil((P-1)/32)
    /// channels for an all-pairs pattern, where (a) fragments. With k instances (--channels k),
    /// instance j of a connection uses channel c + j * B, B being the channels of one instance.
    void assign_channels() {
        K_ = opt_.channels;
        for (const EndpointTransfer& e : ev_) chan_of_.emplace(std::pair(idx(e.src), idx(e.dst)), 0);
        auto window = [&](std::pair<std::uint32_t, std::uint32_t> pq) {
            return int(((pq.second + P_ - pq.first) % P_ - 1) / MscclLimits::max_tbs_per_channel);
        };
        std::vector<int> window_channel((P_ + MscclLimits::max_tbs_per_channel - 1) / MscclLimits::max_tbs_per_channel, -1);
        int by_offset = 0;
        for (auto& [pair, chan] : chan_of_) window_channel[window(pair)] = 0;
        for (int& w : window_channel)
            if (w == 0) w = by_offset++;
        std::vector<std::vector<int>> sends_on(P_), recvs_on(P_);
        int greedy = 0;
        for (auto& [pair, chan] : chan_of_) {
            auto& so = sends_on[pair.first];
            auto& ro = recvs_on[pair.second];
            int c = 0;
            while ((c < int(so.size()) && so[c] >= MscclLimits::max_tbs_per_channel) ||
                   (c < int(ro.size()) && ro[c] >= MscclLimits::max_tbs_per_channel))
                ++c;
            so.resize(std::max<std::size_t>(so.size(), c + 1));
            ro.resize(std::max<std::size_t>(ro.size(), c + 1));
            ++so[c];
            ++ro[c];
            chan = c;
            greedy = std::max(greedy, c + 1);
        }
        if (by_offset < greedy)
            for (auto& [pair, chan] : chan_of_) chan = window_channel[window(pair)];
        plan_.nchannels = std::max(1, std::min(greedy, by_offset));
        if (plan_.nchannels * K_ > MscclLimits::max_channels)
            refuse(t_, fmt::format("the connections need {} channels of at most {} sending and {} receiving thread blocks per GPU "
                                   "[MSCCL_MAX_NUM_THREAD_BLOCKS_PER_CHANNEL], and the executor has {} [MAXCHANNELS]",
                                   plan_.nchannels * K_, MscclLimits::max_tbs_per_channel, MscclLimits::max_tbs_per_channel,
                                   MscclLimits::max_channels));
        B_ = plan_.nchannels;
        plan_.nchannels = B_ * K_;
    }

    /// Local copies: in place (--inplace) a copy of a chunk onto itself is no copy at all (the
    /// executor's in-place call aliases input and output, msccl_lifecycle.cc:315-327); steps that
    /// waited for it wait for nothing.
    void local_copies() {
        auto aliased = [&](std::uint32_t g, Loc l) -> Loc {
            if (!opt_.inplace || l.buf == 's') return l;
            switch (kind_) {
                case CollectiveKind::allgather: return l.buf == 'i' ? Loc{'o', int(g) * int(t_.collective.chunks) + l.off} : l;
                case CollectiveKind::reduce_scatter:
                    return l.buf == 'o' ? Loc{'i', int(g) * (plan_.nchunksperloop / int(P_)) + l.off} : l;
                default: return l.buf == 'o' ? Loc{'i', l.off} : l;
            }
        };
        local_pos_.assign(P_, {});
        for (std::uint32_t g = 0; g < P_; ++g) {
            std::vector<Op> kept;
            for (const Op& op : pl_.local[g]) {
                Loc a = aliased(g, op.src), b = aliased(g, op.dst);
                const bool self = a.buf == b.buf && a.off == b.off;
                local_pos_[g].push_back(self ? -1 : int(kept.size()));
                if (!self) kept.push_back(op);
            }
            if (!kept.empty()) plan_.gpus[g].tbs.push_back(Tb{-1, -1, 0, std::move(kept)});
        }
    }

    /// (gpu, peer, channel) -> tb index; std::map iterates in msccl-tools' order
    /// (a connection with fewer than K transfers gets one instance per transfer)
    void connection_ends() {
        std::map<std::pair<std::uint32_t, std::uint32_t>, std::uint64_t> count;
        for (const EndpointTransfer& e : ev_) ++count[{idx(e.src), idx(e.dst)}];
        for (auto& [pair, chan] : chan_of_)
            for (int j = 0; j < K_ && std::uint64_t(j) < count[pair]; ++j) {
                recv_tb_[{pair.second, pair.first, chan + j * B_}] = 0;
                send_tb_[{pair.first, pair.second, chan + j * B_}] = 0;
            }
    }

    /// Pairing (MscclOptions::pair, as msccl-tools does): on each channel a GPU's sending thread
    /// block shares one thread block with a receiving one, the receiver from the same peer first,
    /// then the others in order; a thread block has one send and one receive peer.
    void pair_ends() {
        std::map<std::pair<std::uint32_t, int>, std::vector<std::uint32_t>> free_recv;  // (gpu, chan) -> receive peers
        for (auto& [gpc, tb] : recv_tb_) free_recv[{std::get<0>(gpc), std::get<2>(gpc)}].push_back(std::get<1>(gpc));
        std::vector<Gpc> unpaired;
        for (auto& [gpc, tb] : send_tb_) {
            auto& peers = free_recv[{std::get<0>(gpc), std::get<2>(gpc)}];
            auto same = std::find(peers.begin(), peers.end(), std::get<1>(gpc));
            if (same == peers.end()) {
                unpaired.push_back(gpc);
                continue;
            }
            partner_[gpc] = {std::get<0>(gpc), *same, std::get<2>(gpc)};
            peers.erase(same);
        }
        for (const auto& gpc : unpaired) {
            auto& peers = free_recv[{std::get<0>(gpc), std::get<2>(gpc)}];
            if (peers.empty()) continue;
            partner_[gpc] = {std::get<0>(gpc), peers.front(), std::get<2>(gpc)};
            peers.erase(peers.begin());
        }
    }

    /// Thread blocks per GPU, sorted as msccl-tools sorts them, by (send, recv, chan): the local
    /// copy (-1, -1), then receivers (-1, q), then senders (p, ...).
    void order_thread_blocks() {
        std::map<std::tuple<std::uint32_t, int, int, int>, std::pair<bool, Gpc>> order;  // (gpu, send, recv, chan)
        std::set<Gpc> paired_recv;
        for (auto& [snd, rcv] : partner_) paired_recv.insert(rcv);
        for (auto& [gpc, tb] : recv_tb_)
            if (!paired_recv.count(gpc)) order[{std::get<0>(gpc), -1, int(std::get<1>(gpc)), std::get<2>(gpc)}] = {false, gpc};
        for (auto& [gpc, tb] : send_tb_) {
            auto p = partner_.find(gpc);
            const int recv = p == partner_.end() ? -1 : int(std::get<1>(p->second));
            order[{std::get<0>(gpc), int(std::get<1>(gpc)), recv, std::get<2>(gpc)}] = {true, gpc};
        }
        for (auto& [k, member] : order) {
            Gpu& gpu = plan_.gpus[std::get<0>(k)];
            const int id = int(gpu.tbs.size());
            gpu.tbs.push_back(Tb{std::get<1>(k), std::get<2>(k), std::get<3>(k), {}});
            const auto& [sending, gpc] = member;
            if (!sending) {
                recv_tb_[gpc] = id;
                continue;
            }
            send_tb_[gpc] = id;
            if (auto p = partner_.find(gpc); p != partner_.end()) recv_tb_[p->second] = id;
        }
    }

    /// ev is sorted by (sent, src, dst, message, arrived): filtered by pair, both ends see the
    /// same order, which is the order the executor matches sends and receives in; the k-th
    /// transfer of a pair goes to instance k mod K at both ends. A thread block runs its steps in
    /// the table's order (step, sends before receives, transfer), which keeps every connection's
    /// order and puts every step after the ones it waits for.
    void fill_thread_blocks() {
        recv_pos_.assign(ev_.size(), {});
        send_pos_.assign(ev_.size(), {});
        // Coalescing wants the chunks a GPU sends one peer in one step in the order of their offsets;
        // both ends of a connection sort by the same rank, so its order stays the same at both.
        std::vector<std::size_t> rank(ev_.size());
        {
            std::vector<std::size_t> by(ev_.size());
            for (std::size_t i = 0; i < ev_.size(); ++i) by[i] = i;
            if (opt_.coalesce)
                std::stable_sort(by.begin(), by.end(), [&](std::size_t x, std::size_t y) {
                    return std::tuple(ev_[x].sent, idx(ev_[x].src), idx(ev_[x].dst), pl_.src[x].buf, pl_.src[x].off) <
                           std::tuple(ev_[y].sent, idx(ev_[y].src), idx(ev_[y].dst), pl_.src[y].buf, pl_.src[y].off);
                });
            for (std::size_t r = 0; r < by.size(); ++r) rank[by[r]] = r;
        }
        std::map<std::pair<std::uint32_t, std::uint32_t>, std::uint64_t> nth;
        for (std::size_t i = 0; i < ev_.size(); ++i) {
            std::uint32_t a = idx(ev_[i].src), b = idx(ev_[i].dst);
            const int chan = chan_of_[{a, b}] + int(nth[{a, b}]++ % K_) * B_;
            Op r{pl_.recv_type[i], pl_.recv_src[i], pl_.dst[i]};
            r.key = {ev_[i].arrived, 1, rank[i]};
            r.transfer = i;
            plan_.gpus[b].tbs[recv_tb_[{b, a, chan}]].ops.push_back(r);
            Op s{"s", pl_.src[i], pl_.dst[i]};
            s.key = {ev_[i].sent, 0, rank[i]};
            s.transfer = i;
            plan_.gpus[a].tbs[send_tb_[{a, b, chan}]].ops.push_back(s);
        }
        for (std::uint32_t g = 0; g < P_; ++g)
            for (Tb& tb : plan_.gpus[g].tbs)
                if (tb.send >= 0 || tb.recv >= 0)  // both ends of a connection in one order
                    std::stable_sort(tb.ops.begin(), tb.ops.end(), [](const Op& x, const Op& y) { return x.key < y.key; });
    }

    /// Coalescing (MscclOptions::coalesce, as msccl-tools' cnt > 1): consecutive sends of one
    /// thread block in one table step whose chunks are contiguous, and whose receives are
    /// consecutive in their thread block, arrive in one step and land contiguously, are one send
    /// and one receive of cnt chunks (both ends alike, so the connection's matching is kept).
    void coalesce() {
        std::vector<std::tuple<std::uint32_t, int, int>> rloc(ev_.size());  // receive -> (gpu, tb, step)
        for (std::uint32_t g = 0; g < P_; ++g)
            for (std::size_t k = 0; k < plan_.gpus[g].tbs.size(); ++k) {
                const auto& ops = plan_.gpus[g].tbs[k].ops;
                for (std::size_t st = 0; st < ops.size(); ++st)
                    if (std::get<1>(ops[st].key) == 1) rloc[ops[st].transfer] = {g, int(k), int(st)};
            }
        std::vector<std::vector<std::vector<bool>>> gone(P_);
        for (std::uint32_t g = 0; g < P_; ++g)
            for (const Tb& tb : plan_.gpus[g].tbs) gone[g].emplace_back(tb.ops.size(), false);
        for (std::uint32_t a = 0; a < P_; ++a)
            for (std::size_t k = 0; k < plan_.gpus[a].tbs.size(); ++k) {
                auto& ops = plan_.gpus[a].tbs[k].ops;
                for (std::size_t st = 0; st < ops.size(); ++st) {
                    if (std::get<1>(ops[st].key) != 0 || gone[a][k][st] || std::string_view(ops[st].type) != "s") continue;
                    const Op& first = ops[st];
                    const auto [b, rk, rs] = rloc[first.transfer];
                    auto& rops = plan_.gpus[b].tbs[std::size_t(rk)].ops;
                    const Op& rfirst = rops[std::size_t(rs)];
                    std::size_t len = 1;
                    while (st + len < ops.size() && len + 1 < std::size_t(MscclLimits::max_count)) {
                        const Op& s2 = ops[st + len];
                        if (std::get<1>(s2.key) != 0 || std::get<0>(s2.key) != std::get<0>(first.key) || s2.src.buf != first.src.buf ||
                            s2.src.off != first.src.off + int(len) || std::string_view(s2.type) != "s")
                            break;
                        const auto [b2, rk2, rs2] = rloc[s2.transfer];
                        if (b2 != b || rk2 != rk || rs2 != rs + int(len)) break;
                        const Op& r2 = rops[std::size_t(rs2)];
                        if (std::string_view(r2.type) != rfirst.type || std::get<0>(r2.key) != std::get<0>(rfirst.key) ||
                            r2.dst.buf != rfirst.dst.buf || r2.dst.off != rfirst.dst.off + int(len) || r2.src.buf != rfirst.src.buf ||
                            r2.src.off != rfirst.src.off + int(len))
                            break;
                        ++len;
                    }
                    if (len == 1) continue;
                    for (std::size_t j = 1; j < len; ++j) {
                        ops[st].also.push_back(ops[st + j].transfer);
                        rops[std::size_t(rs) + j].type = rfirst.type;
                        rops[std::size_t(rs)].also.push_back(rops[std::size_t(rs) + j].transfer);
                        gone[a][k][st + j] = true;
                        gone[b][std::size_t(rk)][std::size_t(rs) + j] = true;
                    }
                    ops[st].cnt = int(len);
                    rops[std::size_t(rs)].cnt = int(len);
                }
            }
        for (std::uint32_t g = 0; g < P_; ++g)
            for (std::size_t k = 0; k < plan_.gpus[g].tbs.size(); ++k) {
                auto& ops = plan_.gpus[g].tbs[k].ops;
                std::vector<Op> kept;
                for (std::size_t st = 0; st < ops.size(); ++st)
                    if (!gone[g][k][st]) kept.push_back(std::move(ops[st]));
                ops = std::move(kept);
            }
    }

    /// Fusion (MscclOptions::fuse, the executor's rcs and rrcs): a receive followed in its thread
    /// block by the send of exactly what it wrote, which waits for nothing else, is one step.
    void fuse() {
        for (std::uint32_t g = 0; g < P_ && opt_.fuse; ++g)
            for (Tb& tb : plan_.gpus[g].tbs) {
                std::vector<Op> fused;
                for (std::size_t k = 0; k < tb.ops.size(); ++k) {
                    const Op& op = tb.ops[k];
                    if (!fused.empty() && std::string_view(op.type) == "s" && std::get<1>(fused.back().key) == 1) {
                        Op& r = fused.back();
                        // chunk j of the send is chunk j of the receive, and waits for exactly that
                        bool from_r = op.cnt == r.cnt && op.also.size() == r.also.size();
                        for (std::size_t j = 0; from_r && j <= op.also.size(); ++j) {
                            const Dep d = pl_.send_dep[j == 0 ? op.transfer : op.also[j - 1]];
                            from_r = d.kind == Dep::recv && d.index == (j == 0 ? r.transfer : r.also[j - 1]);
                        }
                        const std::string_view rt = r.type;
                        if (from_r && op.src.buf == r.dst.buf && op.src.off == r.dst.off && (rt == "r" || rt == "rrc")) {
                            r.type = rt == "r" ? "rcs" : "rrcs";
                            for (std::size_t j = 0; j <= op.also.size(); ++j)  // resolved below: the step of that receive
                                send_pos_[j == 0 ? op.transfer : op.also[j - 1]] = {-2, int(j == 0 ? r.transfer : r.also[j - 1])};
                            continue;
                        }
                    }
                    fused.push_back(op);
                }
                tb.ops = std::move(fused);
            }
    }

    /// Where each transfer's send and receive ended up: (thread block, step).
    void positions() {
        for (std::uint32_t g = 0; g < P_; ++g)
            for (std::size_t k = 0; k < plan_.gpus[g].tbs.size(); ++k) {
                const Tb& tb = plan_.gpus[g].tbs[k];
                if (tb.send < 0 && tb.recv < 0) continue;
                for (std::size_t st = 0; st < tb.ops.size(); ++st) {
                    const Op& op = tb.ops[st];
                    const std::string_view ty = op.type;
                    for (std::size_t j = 0; j <= op.also.size(); ++j)
                        (ty == "s" ? send_pos_ : recv_pos_)[j == 0 ? op.transfer : op.also[j - 1]] = {int(k), int(st)};
                }
            }
        for (auto& sp : send_pos_)
            if (sp.first == -2) sp = recv_pos_[std::size_t(sp.second)];
    }

    /// One dependency of the step at `me` on GPU g.
    void resolve(std::uint32_t g, std::pair<int, int> me, Dep d) {
        if (d.kind == Dep::none) return;
        std::pair<int, int> target;
        if (d.kind == Dep::local) {
            const int at = local_pos_[g][d.index];
            if (at < 0) return;  // a copy onto itself, dropped in place
            target = {0, at};
        } else {
            target = d.kind == Dep::recv ? recv_pos_[d.index] : send_pos_[d.index];
        }
        if (target.first == me.first) {
            if (target.second <= me.second) return;
            const std::string why = fmt::format("cannot write MSCCL-IR for {} on {}: GPU {}, thread block {}: step {} must wait for "
                                                "step {} of the same thread block; the table orders the operations on one chunk "
                                                "against the order of its connection",
                                                t_.collective.to_string(), t_.topology->spec(), g, me.first, me.second,
                                                target.second);
            if (opt_.coalesce) throw TwoWaits(why);  // the offset order may be the cause: again in table order
            throw InputError(why);
        }
        if (target.first > MscclLimits::max_dependency_tb)
            throw DependencyLimit(fmt::format("cannot write MSCCL-IR for {} on {}: GPU {} would depend on thread block {}; the "
                                              "executor stores dependency ids in an int8_t (at most {}) [dependentBid]",
                                              t_.collective.to_string(), t_.topology->spec(), g, target.first,
                                              MscclLimits::max_dependency_tb));
        Op& op = plan_.gpus[g].tbs[me.first].ops[me.second];
        // two waits on one thread block: the later step implies the earlier (a thread block runs in
        // order and publishes a count, msccl_kernel.cu:224-236)
        if (op.depid == target.first) target.second = std::max(target.second, op.deps);
        if (op.depid >= 0 && (op.depid != target.first || op.deps > target.second))
            throw TwoWaits(fmt::format("cannot write MSCCL-IR for {} on {}: GPU {}, thread block {}: step {} would wait for two "
                                       "steps; collsched writes one dependency per step",
                                       t_.collective.to_string(), t_.topology->spec(), g, me.first, me.second));
        op.depid = target.first;
        op.deps = target.second;
        plan_.gpus[g].tbs[target.first].ops[target.second].hasdep = true;
    }

    /// Dependencies: a step waits for the step it depends on unless that one comes earlier in its
    /// own thread block (steps of a thread block run in order) or is the step itself (fused).
    void dependencies() {
        for (std::size_t i = 0; i < ev_.size(); ++i) {
            resolve(idx(ev_[i].src), send_pos_[i], pl_.send_dep[i]);
            resolve(idx(ev_[i].dst), recv_pos_[i], pl_.recv_dep[i]);
        }
    }

    /// The executor's load rules, per rank: thread blocks, steps per thread block, elements.
    void load_limits() {
        std::size_t longest = 0;
        for (std::uint32_t g = 0; g < P_; ++g)
            for (const Tb& tb : plan_.gpus[g].tbs) longest = std::max(longest, tb.ops.size());
        for (std::uint32_t g = 0; g < P_; ++g) {
            const Gpu& gpu = plan_.gpus[g];
            if (gpu.tbs.size() > std::size_t(MscclLimits::max_tbs))
                refuse(t_, fmt::format("GPU {} needs {} thread blocks; the executor allows at most {} per GPU "
                                       "[MSCCL_MAX_NUM_THREAD_BLOCKS]",
                                       g, gpu.tbs.size(), MscclLimits::max_tbs));
            std::size_t nodes = 1 + P_ + gpu.tbs.size();
            for (std::size_t k = 0; k < gpu.tbs.size(); ++k) {
                const Tb& tb = gpu.tbs[k];
                nodes += tb.ops.size();
                if (tb.ops.size() > std::size_t(opt_.max_steps)) {
                    const std::size_t fit = (longest * K_ + opt_.max_steps - 1) / opt_.max_steps;
                    std::string hint = fit * B_ <= std::size_t(MscclLimits::max_channels)
                                           ? fmt::format("; --channels {} spreads every connection over {} thread blocks", fit, fit)
                                           : "";
                    throw StepLimit(fmt::format(
                        "cannot write MSCCL-IR for {} on {}: GPU {}, thread block {} ({} {}) needs {} steps; the executor allows at "
                        "most {} per thread block (s < {}) [MSCCL_MAX_NUM_STEPS]{}; --max-steps N if the executor is built with "
                        "MSCCL_MAX_NUM_STEPS=N",
                        t_.collective.to_string(), t_.topology->spec(), g, k, tb.send >= 0 ? "sending to" : "receiving from",
                        tb.send >= 0 ? tb.send : tb.recv, tb.ops.size(), opt_.max_steps, opt_.max_steps, hint));
                }
            }
            if (nodes >= std::size_t(MscclLimits::max_nodes))
                refuse(t_, fmt::format("GPU {} loads {} XML elements (1 <algo>, {} <gpu>, {} <tb>, {} <step>); the executor's reader "
                                       "holds at most {} [MAX_NODES = {}]",
                                       g, nodes, P_, gpu.tbs.size(), nodes - 1 - P_ - gpu.tbs.size(), MscclLimits::max_nodes - 1,
                                       MscclLimits::max_nodes));
        }
    }

    const SendTable& t_;
    const MscclOptions& opt_;
    CollectiveKind kind_ = CollectiveKind::allgather;
    bool reduction_ = false;
    std::uint32_t P_ = 0;
    Messages ms_;
    EndpointView view_;
    const std::vector<EndpointTransfer>& ev_;  ///< view_.transfers
    Plan plan_;
    Placement pl_;
    int K_ = 1;  ///< instances of every connection (--channels)
    int B_ = 1;  ///< channels of one instance
    std::map<std::pair<std::uint32_t, std::uint32_t>, int> chan_of_;  ///< connection -> its channel in instance 0
    std::vector<std::vector<int>> local_pos_;  ///< per GPU: copy index -> step in the local thread block, -1 if dropped
    std::map<Gpc, int> recv_tb_, send_tb_;     ///< (gpu, peer, channel) -> thread block index
    std::map<Gpc, Gpc> partner_;               ///< paired thread blocks: send end -> receive end
    std::vector<std::pair<int, int>> recv_pos_, send_pos_;  ///< (thread block, step) of each transfer's receive and send
};

Plan build_plan_as(const SendTable& t, const MscclOptions& opt) { return PlanBuilder(t, opt).build(); }

/// `--instances I`, as msccl-tools' replicate (msccl/language/rank_dag.py:318-378, with its
/// default interleaved policy): the executor knows no instances, only more thread blocks,
/// channels and chunks per loop. Every thread block k becomes I thread blocks k*I + i on channel
/// chan + nchannels*i; every chunk of the input and output becomes I chunks (off*I + i*cnt for an
/// op of cnt chunks, so a datum's slices stay inside its slot and in-place aliasing is kept),
/// scratch chunks are batched (off + s_chunks*i); a dependency points to the same instance.
/// The plan is built without coalescing first, so that every op of a slot moves the same slices.
void replicate(const SendTable& t, Plan& plan, int I) {
    const int C = plan.nchannels;
    if (C * I > MscclLimits::max_channels)
        refuse(t, fmt::format("{} instances of {} channels need {} channels; the executor has {} [MAXCHANNELS]", I, C, C * I,
                              MscclLimits::max_channels));
    for (std::size_t g = 0; g < plan.gpus.size(); ++g) {
        Gpu& gpu = plan.gpus[g];
        const int S = gpu.s_chunks;
        auto at = [&](Loc l, int cnt, int i) -> Loc {
            if (l.off < 0) return l;
            return l.buf == 's' ? Loc{l.buf, l.off + S * i} : Loc{l.buf, l.off * I + i * cnt};
        };
        std::vector<Tb> tbs;
        for (const Tb& tb : gpu.tbs)
            for (int i = 0; i < I; ++i) {
                Tb copy{tb.send, tb.recv, tb.chan + C * i, tb.ops};
                for (Op& op : copy.ops) {
                    op.src = at(op.src, op.cnt, i);
                    op.dst = at(op.dst, op.cnt, i);
                    if (op.depid >= 0) op.depid = op.depid * I + i;
                }
                tbs.push_back(std::move(copy));
            }
        gpu.tbs = std::move(tbs);
        gpu.i_chunks *= I;
        gpu.o_chunks *= I;
        gpu.s_chunks *= I;
        if (gpu.tbs.size() > std::size_t(MscclLimits::max_tbs))
            refuse(t, fmt::format("GPU {} needs {} thread blocks with {} instances; the executor allows at most {} per GPU "
                                  "[MSCCL_MAX_NUM_THREAD_BLOCKS]",
                                  g, gpu.tbs.size(), I, MscclLimits::max_tbs));
        std::size_t nodes = 1 + plan.gpus.size() + gpu.tbs.size();
        for (const Tb& tb : gpu.tbs) {
            nodes += tb.ops.size();
            for (const Op& op : tb.ops)
                if (op.depid > MscclLimits::max_dependency_tb)
                    refuse(t, fmt::format("GPU {} would depend on thread block {} with {} instances; the executor stores "
                                          "dependency ids in an int8_t (at most {}) [dependentBid]",
                                          g, op.depid, I, MscclLimits::max_dependency_tb));
        }
        if (nodes >= std::size_t(MscclLimits::max_nodes))
            refuse(t, fmt::format("GPU {} loads {} XML elements with {} instances; the executor's reader holds at most {} "
                                  "[MAX_NODES = {}]",
                                  g, nodes, I, MscclLimits::max_nodes - 1, MscclLimits::max_nodes));
    }
    plan.nchannels = C * I;
    plan.nchunksperloop *= I;
}

Plan build_instances(const SendTable& t, const MscclOptions& opt) {
    if (opt.instances < 1 || opt.instances > MscclLimits::max_channels)
        throw InputError(fmt::format("--instances {} is outside 1..{} (an instance needs a channel of its own; MAXCHANNELS)",
                                     opt.instances, MscclLimits::max_channels));
    if (opt.instances == 1) return build_plan(t, opt);
    MscclOptions base = opt;
    base.coalesce = false;
    Plan plan = build_plan(t, base);
    replicate(t, plan, opt.instances);
    return plan;
}

}  // namespace
}  // namespace msccl_plan

void write_table_msccl(const SendTable& t, const MscclOptions& opt, fmt::memory_buffer& out, const Flush& flush) {
    using namespace msccl_plan;
    Plan plan = build_instances(t, opt);
    auto it = std::back_inserter(out);
    // The executor's reader wants one space between attributes, double quotes, no XML
    // declaration and `/>` right after the last attribute value.
    fmt::format_to(it,
                   "<algo name=\"{}\" proto=\"{}\" nchannels=\"{}\" nchunksperloop=\"{}\" ngpus=\"{}\" coll=\"{}\" "
                   "inplace=\"{}\" outofplace=\"{}\" minBytes=\"0\" maxBytes=\"0\">\n",
                   plan.name, opt.proto, plan.nchannels, plan.nchunksperloop, plan.gpus.size(), plan.coll, plan.inplace ? 1 : 0,
                   opt.inplace ? 0 : 1);
    for (std::size_t g = 0; g < plan.gpus.size(); ++g) {
        const Gpu& gpu = plan.gpus[g];
        fmt::format_to(it, "  <gpu id=\"{}\" i_chunks=\"{}\" o_chunks=\"{}\" s_chunks=\"{}\">\n", g, gpu.i_chunks, gpu.o_chunks,
                       gpu.s_chunks);
        for (std::size_t k = 0; k < gpu.tbs.size(); ++k) {
            const Tb& tb = gpu.tbs[k];
            fmt::format_to(it, "    <tb id=\"{}\" send=\"{}\" recv=\"{}\" chan=\"{}\">\n", k, tb.send, tb.recv, tb.chan);
            for (std::size_t s = 0; s < tb.ops.size(); ++s) {
                const Op& op = tb.ops[s];
                fmt::format_to(it,
                               "      <step s=\"{}\" type=\"{}\" srcbuf=\"{}\" srcoff=\"{}\" dstbuf=\"{}\" dstoff=\"{}\" cnt=\"{}\" "
                               "depid=\"{}\" deps=\"{}\" hasdep=\"{}\"/>\n",
                               s, op.type, op.src.buf, op.src.off, op.dst.buf, op.dst.off, op.cnt, op.depid, op.deps, op.hasdep ? 1 : 0);
            }
            fmt::format_to(it, "    </tb>\n");
            if (out.size() > table_flush_at) flush(out);
        }
        fmt::format_to(it, "  </gpu>\n");
    }
    fmt::format_to(it, "</algo>\n");
    flush(out);
}

std::string table_to_msccl(const SendTable& t, const MscclOptions& opt) {
    std::string s;
    fmt::memory_buffer buf;
    write_table_msccl(t, opt, buf, [&](fmt::memory_buffer& b) {
        s.append(b.data(), b.size());
        b.clear();
    });
    return s;
}

}  // namespace collsched
