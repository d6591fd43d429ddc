// The direct encoding of combining (docs/synthesis.md, "The direct encoding of combining"):
// allreduce, reduce_scatter, reduce(r) and scan with C chunks under the buffer rule of
// docs/semantics.md, "Reductions", under hop timing, on networks of processors and of routers that
// forward (CombiningEncoder below; why that optimum covers every schedule: verifier/synth/SYNTH.md).
//
// Under the buffer rule a processor sends exactly what its buffer of the chunk holds at the end
// of the step before, so a schedule is fixed by *which* (chunk, channel, step) carry a send: the
// partial sent follows. The variables are
//   x[c][e][t]   chunk c crosses channel e in step t (at most one useful copy: a second copy
//                of the same partial on the same channel and step arrives as a copy of what the
//                first left in the buffer and changes nothing),
//   h[c][v][s][t] the buffer of chunk c at v contains a(s, c) at the end of step t,
// and, for the arrivals of one step at v in table order (by channel id), the buffer after each
// arrival b_j = b_{j-1} ∪ (x_j ? h[c][u_j][.][t-1] : ∅), with b_0 = h[.][t-1] and the last
// b_k = h[.][t]. An arrival is legal when it is disjoint from the buffer it meets (combine) or
// covers it (copy): x_j -> d_j or k_j with d_j -> no s in both, k_j -> every s of the buffer
// in the partial. In both cases the buffer becomes the union, which is what b_j says.
//
// Variables, clauses and exactness (moved from docs/synthesis.md; the user's summary stays there):
//
// **Variables** (C chunks, P processors, horizon H):
//
// - `x[c][e][t]`: chunk c crosses channel e in step t. One per (c, e, t): a second copy carries the
//   same partial, arrives after the first made the buffer cover it, and changes nothing.
// - `h[c][v][s][t]`: the buffer of c at v contains a(s,c) after step t; `h[c][v][v][t]` true,
//   `h[c][v][s][0]` false for s ≠ v, false while t < dist(s, v).
// - per step, over v's in-channels in channel-id order (the table order), the buffer after the j-th
//   arrival `b_j[s]` (`b_0 = h[.][t-1]`, `b_k = h[.][t]`), and two case variables.
//
// **Clauses.** Arrival j over u -> v: `b_j[s] <-> b_{j-1}[s] or (x_j and h[c][u][s][t-1])`. Legality:
// `x_j -> d_j or k_j`; `d_j -> not (h[c][u][s][t-1] and b_{j-1}[s])` (disjoint: combine); `k_j ->
// (b_{j-1}[s] -> h[c][u][s][t-1])` (covers: copy). Capacity per channel and step (times the step's
// rounds), link groups alike; single ports one send and one receive, half one in all. Goals at T
// under `deadline[T]`: `h[c][p][s][T]` for s <= hi and its negation for s > hi per goal (c, hi, p)
// (`Collective::for_each_partial_goal`: allreduce every p and c with hi = P-1; reduce_scatter the
// block's owner; reduce the root; scan hi = p, so the buffer must not hold more).
//
// **Exactness.** Replaying the buffer rule on a model's transfers gives `b_j` by induction, every
// arrival legal, limits and goals hold: the table verifies. Any verifying table reduces to one
// transfer per (chunk, channel, step) and sets every variable. So UNSAT at T-1 plus a witness at T
// proves T over **every schedule of C chunks under the buffer rule, any route, one partial per chunk,
// channel and step** (`search:`). The decoder writes `partial(sender, c)` references, resolves them by
// replaying the rule (compiler/table/partials.cpp, `resolve_partials`) and verifies; the tests check
// witnesses with Z3 and the simulator and compare UNSAT answers on four tiny instances with an
// enumeration of every table of T-1 steps.
#include <algorithm>
#include <limits>
#include <map>
#include <optional>
#include <set>

#include <fmt/format.h>

#include "support/error.hpp"
#include "support/assert.hpp"
#include "verifier/synth/bounds/combining.hpp"
#include "verifier/synth/problem/internal.hpp"
#include "verifier/synth/sat/encode.hpp"
#include "verifier/synth/sat/router_copies.hpp"

namespace collsched::synth {

namespace {

using synth_internal::unreachable;

}  // namespace

std::uint64_t combining_variables(const SynthInstance& in, Step H) {
    const Topology& t = *in.topology;
    const std::uint64_t C = in.collective.chunks, P = t.processors(), E = t.channels().size(), steps = std::uint64_t{H} + 1;
    // h, x, the intermediate buffers (one per arrival but the last) and the two case variables; with routers,
    // per channel out of a router and step a count for each origin (a processor that reaches the router through
    // routers, an earlier step) and its partial's sources.
    std::uint64_t origins = 0;  // per step: over the channels out of routers, the processors reaching their router
    if (t.routers() > 0) {
        std::vector<std::uint32_t> reaching(t.nodes(), 0);
        for (std::uint32_t u = 0; u < P; ++u) {
            std::vector<bool> seen(t.nodes(), false);
            std::vector<Node> work{Node{u}};
            while (!work.empty()) {
                const Node v = work.back();
                work.pop_back();
                for (ChannelId c : t.out_channels(v)) {
                    const Node w = t.channel(c).to;
                    if (t.is_processor(w) || seen[idx(w)]) continue;
                    seen[idx(w)] = true;
                    ++reaching[idx(w)];
                    work.push_back(w);
                }
            }
        }
        for (std::uint32_t r = t.processors(); r < t.nodes(); ++r) origins += std::uint64_t{reaching[r]} * t.out_channels(Node{r}).size();
    }
    return C * steps * (P * P + E + E * P + 2 * E + origins * steps * (P + 2) / 2);
}

namespace {

/// The direct encoding of combining (docs/synthesis.md, "The direct encoding of combining"):
/// h[c][v][s][t] (the buffer of chunk c at processor v holds source s's contribution at the end
/// of step t) and x[c][ch][t] (a partial of chunk c crosses channel ch in step t). With routers
/// (forwarding, replicate=no), a partial is named by its origin (the processor whose buffer it
/// is, the step it left it); the copies of chunk c entering a router from processor u in step t
/// are a count inj[c][ch][t] (all are u's buffer), and those leaving a router a count per origin,
/// conserved per router, chunk and origin (router_copies.hpp). One method per constraint family,
/// called in order by encode().
class CombiningEncoder : EncoderBase {
public:
    CombiningEncoder(const SynthInstance& in, Step H, const SynthOptions& opt, Encoding& e)
        : EncoderBase(in, H, opt, e), P_(topo_.processors()), C_(in.collective.chunks), E_(topo_.channels().size()),
          routers_(topo_.routers() > 0) {}

    void encode() {
        if (std::string why = combining_problem(in_); !why.empty()) throw InputError(why);
        far_ = combining_distance(in_);
        e_.min_horizon = far_;
        if (H_ < far_) {
            f_.clause({});
            return;
        }
        variables();
        if (routers_) forwarding();
        buffer_rule();
        rounds_.emplace(f_, H_, in_.rounds);
        e_.round_lits.assign(H_ + 1, {});
        for (Step t = 1; t <= H_; ++t) e_.round_lits[t] = rounds_->extra(t);
        limits();
        deadlines();
        decoding();
        e_.notes.push_back(fmt::format("combining: {} chunks, {} channels, buffers of {} sources{}", C_, E_, P_,
                                       routers_ ? ", partials forwarded by routers named by their origins" : ""));
    }

private:
    /// A partial crossing a router's out-channel: its origin (oidx) and how many copies cross (unary).
    struct Routed {
        std::uint32_t origin;
        Unary n;
    };

    std::size_t hidx(std::uint32_t c, std::uint32_t v, std::uint32_t s, Step t) const {
        return ((std::size_t{c} * P_ + v) * P_ + s) * (H_ + 1) + t;
    }
    std::size_t xidx(std::uint32_t c, std::size_t ch, Step t) const { return (std::size_t{c} * E_ + ch) * (H_ + 1) + t; }
    std::uint32_t oidx(std::uint32_t u, Step t0) const { return u * (H_ + 1) + t0; }
    std::pair<std::uint32_t, Step> origin(std::uint32_t o) const { return {o / (H_ + 1), o % (H_ + 1)}; }
    bool from_processor(std::size_t ch) const { return topo_.is_processor(topo_.channels()[ch].from); }

    /// A count of at most `width` in unary, ordered.
    Unary count(std::uint64_t width) {
        Unary n(std::max<std::uint64_t>(width, 1));
        for (std::size_t k = 0; k < n.size(); ++k) {
            n[k] = f_.new_var();
            if (k > 0) f_.clause({-n[k], n[k - 1]});
        }
        return n;
    }
    std::uint64_t rounds_per_step() const { return in_.rounds && *in_.rounds >= H_ ? *in_.rounds - H_ + 1 : 1; }

    /// h exists where source s can have reached v by t (its own contribution always); x on every
    /// channel between processors, a count on every channel from a processor into a router.
    void variables() {
        std::vector<std::vector<std::uint32_t>> dist;  // dist[s][v]
        for (std::uint32_t s = 0; s < P_; ++s) {
            if (s % 64 == 0) check_deadline(opt_);
            dist.push_back(bfs_distances(topo_, Node{s}));
        }
        assign_polled(h_, std::size_t{C_} * P_ * P_ * (H_ + 1), -Formula::top, opt_);
        assign_polled(x_, std::size_t{C_} * E_ * (H_ + 1), -Formula::top, opt_);
        if (routers_) {
            inj_.assign(x_.size(), {});
            routed_.assign(x_.size(), {});
            reach_ = router_reach(topo_);
        }
        for (std::uint32_t c = 0; c < C_; ++c) {
            for (std::uint32_t v = 0; v < P_; ++v) {
                if (v % 16 == 0) check_deadline(opt_);
                for (std::uint32_t s = 0; s < P_; ++s)
                    for (Step t = 0; t <= H_; ++t) {
                        int& l = h_[hidx(c, v, s, t)];
                        if (s == v) l = Formula::top;
                        else if (dist[s][v] != unreachable && dist[s][v] <= t) l = f_.new_var();
                    }
            }
            for (std::size_t ch = 0; ch < E_; ++ch) {
                if (!from_processor(ch)) continue;
                const bool into_router = !topo_.is_processor(topo_.channels()[ch].to);
                for (Step t = 1; t <= H_; ++t) {
                    if (!into_router) x_[xidx(c, ch, t)] = f_.new_var();
                    else inj_[xidx(c, ch, t)] = count(copy_width(topo_, reach_, ChannelId{static_cast<std::uint32_t>(ch)}, rounds_per_step()));
                }
            }
        }
    }

    /// walk_[u][r - P][k]: a walk of k channels from processor u through routers only ends at router r.
    void walks() {
        const std::uint32_t R = topo_.routers();
        walk_.assign(P_, std::vector<std::vector<bool>>(R, std::vector<bool>(H_ + 2, false)));
        for (std::uint32_t u = 0; u < P_; ++u) {
            for (ChannelId ch : topo_.out_channels(Node{u}))
                if (!topo_.is_processor(topo_.channel(ch).to)) walk_[u][idx(topo_.channel(ch).to) - P_][1] = true;
            for (Step k = 1; k < H_; ++k)
                for (std::uint32_t r = 0; r < R; ++r) {
                    if (!walk_[u][r][k]) continue;
                    for (ChannelId ch : topo_.out_channels(Node{P_ + r}))
                        if (!topo_.is_processor(topo_.channel(ch).to)) walk_[u][idx(topo_.channel(ch).to) - P_][k + 1] = true;
                }
        }
    }

    /// A copy that left processor u in step t0 can leave router r in step t: it entered r by a walk
    /// of exactly t - t0 channels (queues=none) or of at most that many (it may wait).
    bool may_leave(std::uint32_t u, std::uint32_t r, Step t0, Step t) const {
        const std::vector<bool>& w = walk_[u][r - P_];
        if (model_.queues == QueueKind::none) return w[t - t0];
        for (Step k = 1; k <= t - t0; ++k)
            if (w[k]) return true;
        return false;
    }

    /// The copies leaving routers, per origin (never back to it: its own buffer holds what it sent),
    /// and their conservation per router, chunk and origin (router_copies.cpp: each copy leaves once,
    /// first in first out, in the next step under queues=none; the counts cut by the processors a
    /// copy can still reach).
    void forwarding() {
        walks();
        for (std::uint32_t c = 0; c < C_; ++c)
            for (std::size_t ch = 0; ch < E_; ++ch) {
                if (from_processor(ch)) continue;
                check_deadline(opt_);
                const Channel& k = topo_.channels()[ch];
                const std::uint32_t r = idx(k.from);
                const bool to_router = !topo_.is_processor(k.to);
                const std::uint64_t width = to_router ? std::min<std::uint64_t>(std::uint64_t{k.cap} * rounds_per_step(), reach_[idx(k.to)]) : 1;
                for (Step t = 2; t <= H_; ++t) {
                    if (to_router && model_.queues == QueueKind::none && t == H_) continue;  // it could not leave
                    for (std::uint32_t u = 0; u < P_; ++u)
                        for (Step t0 = 1; t0 < t; ++t0)
                            if (u != idx(k.to) && may_leave(u, r, t0, t)) routed_[xidx(c, ch, t)].push_back({oidx(u, t0), count(width)});
                }
            }
        struct Flow {
            std::vector<std::vector<Unary>> in, out;
        };
        for (std::uint32_t r = P_; r < topo_.nodes(); ++r)
            for (std::uint32_t c = 0; c < C_; ++c) {
                check_deadline(opt_);
                std::map<std::uint32_t, Flow> flows;
                auto flow = [&](std::uint32_t o) -> Flow& {
                    Flow& f = flows[o];
                    if (f.in.empty()) f.in.assign(H_ + 1, {}), f.out.assign(H_ + 1, {});
                    return f;
                };
                for (ChannelId ch : topo_.in_channels(Node{r}))
                    for (Step t = 1; t <= H_; ++t) {
                        const std::size_t i = xidx(c, idx(ch), t);
                        if (from_processor(idx(ch))) flow(oidx(idx(topo_.channel(ch).from), t)).in[t].push_back(inj_[i]);
                        else
                            for (const Routed& x : routed_[i]) flow(x.origin).in[t].push_back(x.n);
                    }
                for (ChannelId ch : topo_.out_channels(Node{r}))
                    for (Step t = 1; t <= H_; ++t)
                        for (const Routed& x : routed_[xidx(c, idx(ch), t)]) flow(x.origin).out[t].push_back(x.n);
                for (const auto& [o, f] : flows) conserve_copies(f_, model_.queues, f.in, f.out, reach_[r]);
            }
    }

    /// The buffer rule, arrival by arrival in table order (channel id within a step).
    void buffer_rule() {
        std::vector<std::vector<std::size_t>> in_by_id(P_);
        for (std::uint32_t v = 0; v < P_; ++v) {
            for (ChannelId ch : topo_.in_channels(Node{v})) in_by_id[v].push_back(idx(ch));
            std::sort(in_by_id[v].begin(), in_by_id[v].end());
        }
        std::vector<int> cur(P_), next(P_);
        for (std::uint32_t c = 0; c < C_; ++c) {
            for (std::uint32_t v = 0; v < P_; ++v)
                for (Step t = 1; t <= H_; ++t) {
                    check_deadline(opt_);
                    for (std::uint32_t s = 0; s < P_; ++s) cur[s] = h_[hidx(c, v, s, t - 1)];
                    const std::vector<std::size_t>& ins = in_by_id[v];
                    for (std::size_t j = 0; j < ins.size(); ++j) {
                        if (from_processor(ins[j])) arrival(c, v, t, ins[j], j + 1 == ins.size(), cur, next);
                        else routed_arrival(c, v, t, ins[j], j + 1 == ins.size(), cur, next);
                        std::swap(cur, next);
                    }
                    if (ins.empty())
                        for (std::uint32_t s = 0; s < P_; ++s) {
                            const int a = h_[hidx(c, v, s, t - 1)], b = h_[hidx(c, v, s, t)];
                            f_.clause({-a, b});
                            f_.clause({a, -b});
                        }
                }
        }
    }

    /// One arrival at v over channel `ch` in step t: the buffer after it (`next`, the step's
    /// final h when it is the last) is cur or, when the partial crosses, cur with the sender's
    /// buffer; the arrival is legal when disjoint (d) or covering (k).
    void arrival(std::uint32_t c, std::uint32_t v, Step t, std::size_t ch, bool last, const std::vector<int>& cur, std::vector<int>& next) {
        const std::uint32_t u = idx(topo_.channels()[ch].from);
        const int xj = x_[xidx(c, ch, t)];
        for (std::uint32_t s = 0; s < P_; ++s) {
            const int sent = h_[hidx(c, u, s, t - 1)];
            if (last) next[s] = h_[hidx(c, v, s, t)];
            else if (cur[s] == Formula::top) next[s] = Formula::top;
            else if (cur[s] == -Formula::top && sent == -Formula::top) next[s] = -Formula::top;
            else next[s] = f_.new_var();
            // next <-> cur or (x and sent)
            f_.clause({-cur[s], next[s]});
            f_.clause({-xj, -sent, next[s]});
            f_.clause({-next[s], cur[s], xj});
            f_.clause({-next[s], cur[s], sent});
        }
        const int d = f_.new_var(), k = f_.new_var();
        f_.clause({-xj, d, k});
        for (std::uint32_t s = 0; s < P_; ++s) {
            const int sent = h_[hidx(c, u, s, t - 1)];
            f_.clause({-d, -sent, -cur[s]});
            f_.clause({-k, -cur[s], sent});
        }
    }

    /// The partials arriving at v from a router over `ch` in step t, one per origin (a second copy
    /// of one partial changes nothing or counts twice). The checker applies them in message order
    /// (a(s) by s, then partials by their sorted sources); the legal groups that order cannot break:
    /// partials pairwise disjoint, each disjoint from the buffer (combined), except at most one
    /// covering it (a copy), which then comes first: every other has two or more sources and a
    /// larger least source. The buffer becomes the union (docs: verifier/synth/SYNTH.md).
    void routed_arrival(std::uint32_t c, std::uint32_t v, Step t, std::size_t ch, bool last, const std::vector<int>& cur,
                        std::vector<int>& next) {
        const std::vector<Routed>& rs = routed_[xidx(c, ch, t)];
        const std::size_t n = rs.size();
        auto sent = [&](std::size_t i, std::uint32_t s) {
            const auto [u, t0] = origin(rs[i].origin);
            return h_[hidx(c, u, s, t0 - 1)];
        };
        std::vector<std::vector<int>> g(P_, std::vector<int>(n));  // g[s][i]: partial i arrives and holds a(s)
        std::vector<int> cover(n);
        for (std::size_t i = 0; i < n; ++i) {
            for (std::uint32_t s = 0; s < P_; ++s) g[s][i] = f_.and_of(rs[i].n[0], sent(i, s));
            cover[i] = f_.new_var();
            f_.clause({-cover[i], rs[i].n[0]});
        }
        f_.at_most(cover, 1);
        for (std::uint32_t s = 0; s < P_; ++s) {
            const bool none = std::all_of(g[s].begin(), g[s].end(), [](int l) { return l == -Formula::top; });
            if (last) next[s] = h_[hidx(c, v, s, t)];
            else if (cur[s] == Formula::top || none) next[s] = cur[s];
            else next[s] = f_.new_var();
            // next <-> cur or some g
            std::vector<int> big{-next[s], cur[s]};
            f_.clause({-cur[s], next[s]});
            for (std::size_t i = 0; i < n; ++i) {
                f_.clause({-g[s][i], next[s]});
                big.push_back(g[s][i]);
                f_.clause({-cover[i], -cur[s], sent(i, s)});    // a cover holds the buffer
                f_.clause({-g[s][i], cover[i], -cur[s]});       // any other is disjoint from it
            }
            f_.clause(big);
            if (n >= 2) f_.at_most(g[s], 1);  // pairwise disjoint
        }
        if (n < 2) return;
        // With a cover, every other arrival has two or more sources and a larger least source.
        const int any_cover = f_.or_of(cover);
        int below = -Formula::top;  // some source of the cover is below s
        for (std::uint32_t s = 0; s < P_; ++s) {
            for (std::size_t i = 0; i < n; ++i) f_.clause({-any_cover, -g[s][i], cover[i], below});
            std::vector<int> in_cover{-Formula::top};
            for (std::size_t i = 0; i < n; ++i) in_cover.push_back(f_.and_of(cover[i], sent(i, s)));
            const int now = f_.new_var();
            in_cover.push_back(below);
            in_cover.push_back(-now);
            f_.clause(in_cover);  // now -> below or the cover holds a(s)
            below = now;
        }
        for (std::size_t i = 0; i < n; ++i) {
            std::vector<int> more{-any_cover, -rs[i].n[0], cover[i]};
            for (std::uint32_t s = 0; s < P_; ++s)
                if (s != origin(rs[i].origin).first) more.push_back(sent(i, s));
            f_.clause(more);
        }
    }

    /// The literals whose sum is how many partials of chunk c cross channel ch in step t.
    std::vector<int> load(std::uint32_t c, std::size_t ch, Step t) const {
        const std::size_t i = xidx(c, ch, t);
        std::vector<int> ls;
        if (x_[i] != -Formula::top) ls.push_back(x_[i]);
        if (!routers_) return ls;
        ls.insert(ls.end(), inj_[i].begin(), inj_[i].end());
        for (const Routed& r : routed_[i]) ls.insert(ls.end(), r.n.begin(), r.n.end());
        return ls;
    }

    /// Capacity per channel, link groups, ports.
    void limits() {
        for (std::size_t ch = 0; ch < E_; ++ch)
            for (Step t = 1; t <= H_; ++t) {
                if (ch % 64 == 0) check_deadline(opt_);
                std::vector<int> ls;
                for (std::uint32_t c = 0; c < C_; ++c)
                    for (int l : load(c, ch, t)) ls.push_back(l);
                rounds_->at_most(std::move(ls), topo_.channels()[ch].cap, t, t);
            }
        for (const LinkGroup& g : topo_.groups())
            for (Step t = 1; t <= H_; ++t) {
                check_deadline(opt_);
                std::vector<int> ls;
                for (ChannelId ch : g.channels)
                    for (std::uint32_t c = 0; c < C_; ++c)
                        for (int l : load(c, idx(ch), t)) ls.push_back(l);
                rounds_->at_most(std::move(ls), g.cap, t, t);
            }
        port_limits(*rounds_, topo_, model_.ports, H_, C_,
                    [&](std::size_t c, ChannelId ch, Step t) { return load(static_cast<std::uint32_t>(c), idx(ch), t); },
                    [&](std::uint32_t) { check_deadline(opt_); });
    }

    /// Goals: the buffer of chunk c at p holds exactly a({0..hi}, c) at T (at H always, before
    /// H under the assumption deadline[T]). Under queues=none a copy entering a router in step T
    /// would leave after T: not under deadline[T].
    void deadlines() {
        e_.deadline.assign(H_ + 1, 0);
        auto goals = [&](Step T, int d) {
            in_.collective.for_each_partial_goal(P_, C_, [&](std::uint32_t c, std::uint32_t hi, Node p) {
                check_deadline(opt_);
                for (std::uint32_t s = 0; s < P_; ++s) {
                    const int l = h_[hidx(c, idx(p), s, T)];
                    if (d == 0) f_.clause({s <= hi ? l : -l});
                    else f_.clause({-d, s <= hi ? l : -l});
                }
            });
            if (d == 0 || !routers_ || model_.queues != QueueKind::none) return;
            for (std::uint32_t c = 0; c < C_; ++c)
                for (std::size_t ch = 0; ch < E_; ++ch)
                    if (!topo_.is_processor(topo_.channels()[ch].to))
                        for (int l : load(c, ch, T)) f_.clause({-d, -l});
        };
        for (Step T = far_; T <= H_; ++T) {
            if (T == H_) {
                goals(H_, 0);
                continue;
            }
            e_.deadline[T] = f_.new_var();
            goals(T, e_.deadline[T]);
        }
    }

    /// Candidates: the pool's message carries the chunk and e_.senders the origin; decode names
    /// the partial (the origin's buffer at the end of the step before it left) by replaying the
    /// buffer rule.
    void decoding() {
        auto add = [&](int lit, Step t, std::size_t ch, std::uint32_t c, std::uint32_t u, Step t0) {
            e_.candidates.push_back({lit, static_cast<std::uint32_t>(e_.pool.size()), 1, t});
            e_.pool.push_back({t, ChannelId{static_cast<std::uint32_t>(ch)}, MessageId{c}});
            e_.senders.push_back({Node{u}, t0});
        };
        for (std::uint32_t c = 0; c < C_; ++c)
            for (std::size_t ch = 0; ch < E_; ++ch) {
                if (ch % 256 == 0) check_deadline(opt_);
                const std::uint32_t from = idx(topo_.channels()[ch].from);
                for (Step t = 1; t <= H_; ++t) {
                    const std::size_t i = xidx(c, ch, t);
                    if (x_[i] != -Formula::top) add(x_[i], t, ch, c, from, t);
                    if (!routers_) continue;
                    for (int l : inj_[i]) add(l, t, ch, c, from, t);
                    for (const Routed& r : routed_[i])
                        for (int l : r.n) add(l, t, ch, c, origin(r.origin).first, origin(r.origin).second);
                }
            }
    }

    const std::uint32_t P_, C_;
    const std::size_t E_;
    const bool routers_;
    Step far_ = 0;
    std::vector<int> h_, x_;
    std::vector<Unary> inj_;                        // per (c, ch, t) from a processor into a router
    std::vector<std::vector<Routed>> routed_;       // per (c, ch, t) out of a router
    std::vector<std::uint32_t> reach_;              // router_reach
    std::vector<std::vector<std::vector<bool>>> walk_;
    std::optional<Rounds> rounds_;
};

}  // namespace

void encode_combining(const SynthInstance& in, Step H, const SynthOptions& opt, Encoding& e) { CombiningEncoder(in, H, opt, e).encode(); }

}  // namespace collsched::synth

