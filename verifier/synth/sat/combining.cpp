// The direct encoding of combining (docs/synthesis.md, "The direct encoding of combining"):
// allreduce, reduce_scatter, reduce(r) and scan with C chunks under the buffer rule of
// docs/semantics.md, "Reductions", on networks of processors under hop timing.
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
#include <optional>
#include <set>

#include <fmt/format.h>

#include "support/error.hpp"
#include "support/assert.hpp"
#include "verifier/synth/bounds/combining.hpp"
#include "verifier/synth/problem/internal.hpp"
#include "verifier/synth/sat/encode.hpp"

namespace collsched::synth {

namespace {

using synth_internal::unreachable;

}  // namespace

std::uint64_t combining_variables(const SynthInstance& in, Step H) {
    const Topology& t = *in.topology;
    const std::uint64_t C = in.collective.chunks, P = t.processors(), E = t.channels().size(), steps = std::uint64_t{H} + 1;
    // h, x, the intermediate buffers (one per arrival but the last) and the two case variables.
    return C * steps * (P * P + E + E * P + 2 * E);
}

namespace {

/// The direct encoding of combining (docs/synthesis.md, "The direct encoding of combining"):
/// h[c][v][s][t] (the buffer of chunk c at processor v holds source s's contribution at the end
/// of step t) and x[c][ch][t] (a partial of chunk c crosses channel ch in step t). One method per
/// constraint family, called in order by encode().
class CombiningEncoder : EncoderBase {
public:
    CombiningEncoder(const SynthInstance& in, Step H, const SynthOptions& opt, Encoding& e)
        : EncoderBase(in, H, opt, e), P_(topo_.processors()), C_(in.collective.chunks), E_(topo_.channels().size()) {}

    void encode() {
        if (std::string why = combining_problem(in_); !why.empty()) throw InputError(why);
        far_ = combining_distance(in_);
        e_.min_horizon = far_;
        if (H_ < far_) {
            f_.clause({});
            return;
        }
        variables();
        buffer_rule();
        rounds_.emplace(f_, H_, in_.rounds);
        e_.round_lits.assign(H_ + 1, {});
        for (Step t = 1; t <= H_; ++t) e_.round_lits[t] = rounds_->extra(t);
        limits();
        deadlines();
        decoding();
        e_.notes.push_back(fmt::format("combining: {} chunks, {} channels, buffers of {} sources", C_, E_, P_));
    }

private:
    std::size_t hidx(std::uint32_t c, std::uint32_t v, std::uint32_t s, Step t) const {
        return ((std::size_t{c} * P_ + v) * P_ + s) * (H_ + 1) + t;
    }
    std::size_t xidx(std::uint32_t c, std::size_t ch, Step t) const { return (std::size_t{c} * E_ + ch) * (H_ + 1) + t; }

    /// h exists where source s can have reached v by t (its own contribution always); x everywhere.
    void variables() {
        std::vector<std::vector<std::uint32_t>> dist;  // dist[s][v]
        for (std::uint32_t s = 0; s < P_; ++s) {
            if (s % 64 == 0) check_deadline(opt_);
            dist.push_back(bfs_distances(topo_, Node{s}));
        }
        assign_polled(h_, std::size_t{C_} * P_ * P_ * (H_ + 1), -Formula::top, opt_);
        assign_polled(x_, std::size_t{C_} * E_ * (H_ + 1), -Formula::top, opt_);
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
            for (std::size_t ch = 0; ch < E_; ++ch)
                for (Step t = 1; t <= H_; ++t) x_[xidx(c, ch, t)] = f_.new_var();
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
                        arrival(c, v, t, ins[j], j + 1 == ins.size(), cur, next);
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

    /// Capacity per channel, link groups, ports.
    void limits() {
        for (std::size_t ch = 0; ch < E_; ++ch)
            for (Step t = 1; t <= H_; ++t) {
                if (ch % 64 == 0) check_deadline(opt_);
                std::vector<int> ls;
                for (std::uint32_t c = 0; c < C_; ++c) ls.push_back(x_[xidx(c, ch, t)]);
                rounds_->at_most(std::move(ls), topo_.channels()[ch].cap, t, t);
            }
        for (const LinkGroup& g : topo_.groups())
            for (Step t = 1; t <= H_; ++t) {
                check_deadline(opt_);
                std::vector<int> ls;
                for (ChannelId ch : g.channels)
                    for (std::uint32_t c = 0; c < C_; ++c) ls.push_back(x_[xidx(c, idx(ch), t)]);
                rounds_->at_most(std::move(ls), g.cap, t, t);
            }
        port_limits(*rounds_, topo_, model_.ports, H_, C_,
                    [&](std::size_t c, ChannelId ch, Step t) { return x_[xidx(static_cast<std::uint32_t>(c), idx(ch), t)]; },
                    [&](std::uint32_t) { check_deadline(opt_); });
    }

    /// Goals: the buffer of chunk c at p holds exactly a({0..hi}, c) at T (at H always, before
    /// H under the assumption deadline[T]).
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

    /// Candidates: the pool's message carries the chunk; decode names the partial (the sender's
    /// buffer at the end of the step before) by replaying the buffer rule.
    void decoding() {
        for (std::uint32_t c = 0; c < C_; ++c)
            for (std::size_t ch = 0; ch < E_; ++ch) {
                if (ch % 256 == 0) check_deadline(opt_);
                for (Step t = 1; t <= H_; ++t) {
                    e_.candidates.push_back({x_[xidx(c, ch, t)], static_cast<std::uint32_t>(e_.pool.size()), 1, t});
                    e_.pool.push_back({t, ChannelId{static_cast<std::uint32_t>(ch)}, MessageId{c}});
                }
            }
    }

    const std::uint32_t P_, C_;
    const std::size_t E_;
    Step far_ = 0;
    std::vector<int> h_, x_;
    std::optional<Rounds> rounds_;
};

}  // namespace

void encode_combining(const SynthInstance& in, Step H, const SynthOptions& opt, Encoding& e) { CombiningEncoder(in, H, opt, e).encode(); }

}  // namespace collsched::synth

