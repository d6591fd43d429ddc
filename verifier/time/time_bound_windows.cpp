// Windows on a cut: reduce-scatter and allgather.
//
// **Lemma 3 (a window on an arc).** Take a run ending at T (the launch not counted: the executor's bound adds
// it), a set S of processors and a region R with S inside and the rest of the processors U outside. Let
// r(v) be, at a processor v, the least alpha-distance (channel_delay: alpha, the protocol's hop and the
// message) from a fixed source of a value to v, and 0 at a router; d(v) the least alpha-distance from v
// to a fixed destination. A value's way from its source to its destination is a chain of transfers, each
// leaving a processor once what it carries has arrived there (a router that cuts through may start early,
// but its last byte leaves no earlier than the copy it forwards arrived: docs/time.md, "Routers and
// copies"); each transfer over channel c arrives at least channel_delay(c) after its last byte left. So
// the last transfer of the chain that enters R, over channel c from tail v to head w, holds c (and its
// groups) inside [r(v), T - alpha_c - d(w)] (a group: alpha_c without the message, as Lemma 1, but with it for the
// asynchronous time on a channel no faster than the group, Lemma 1's "A group's message"). An arc of
// the cut made of several channels (a group, a port) holds such transfers inside the union of their
// windows, within [min r(v), T - min (alpha_c + d(w))]: it carries at most B_a max(0, T - min r - min
// (alpha + d)) bytes of them, which is Lemma 1 with alpha_a raised to that shift (synchronous: the steps
// before the transfer's last at least r, those after it at least d, as in Lemma 1).
//
// **The terms.** *Reduce-scatter*, S a set whose blocks K (owned in S) need the values of a processor u
// outside: for every byte x of a block owned by o in K, u's value of x reaches o along such a chain (values
// combine only at processors), and different bytes are different bytes on the arcs: |K| M/P bytes cross
// into R, each in the window of r = from u and d = to the nearest of K. *Allgather*, S a set that needs
// the data of K outside it: every byte of K's data reaches a fixed o in S, |K| M/P bytes, each in the window
// of r = from the nearest of K and d = to o. By Lemma 2 each gives T >= T*(|K| M/P) on the cut's arcs
// with their windows; any K, u or o, and any region holds, so the terms tried are a choice, not a claim.
//
// On 4 x DGX H100 (rail-only) with NIC 0 at half on the mscclpp executor (Simple), GPU 0's values of the
// 24 blocks owned in the other boxes leave it over its NVLink (345 GB/s), whose heads still need a NIC
// (23.2 us with the proxy's message), or over its own NIC (24 GB/s, 2.7 us): 3/4 M cannot be out before
// 56.5 us (58.6 with the launch), where the densest cut without windows gives 44.8 us.
#include "verifier/time/time_bound_windows.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>

#include <fmt/format.h>

#include "runtime/timing.hpp"
#include "support/units.hpp"

namespace collsched::time_internal {

namespace {

/// The sizes at which the largest window term is kept (the others are dropped: each is proved, none needed).
constexpr double kept_at[] = {64.0 * 1024, 1024.0 * 1024, 16.0 * 1024 * 1024, 256.0 * 1024 * 1024, 1024.0 * 1024 * 1024, 16.0 * 1024 * 1024 * 1024};
constexpr std::size_t most_ends = 8;      ///< the single processors tried at the other end (u or o) per set
constexpr std::size_t most_classes = 32;  ///< the classes K tried per set

class Windows {
public:
    Windows(TimeBounds& out, const Topology& t, CollectiveKind kind, WeightedNetwork& n, const TimeOptions& speeds, const RunLimits& limits)
        : out_(out), t_(t), rs_(kind == CollectiveKind::reduce_scatter), n_(n), speeds_(speeds), limits_(limits), P_(t.processors()),
          delays_(channel_delays(t, speeds)), from_(P_), to_(P_) {}

    /// The set S (sorted) entered; `parts` split the far side (reduce-scatter: S's owners; allgather: U's data) into classes.
    void set(const std::vector<std::uint32_t>& S, const std::vector<Partition>& parts) {
        limits_.check("the windows on a cut");
        std::vector<char> in(P_, 0);
        for (std::uint32_t v : S) in[v] = 1;
        std::vector<std::uint32_t> U;
        for (std::uint32_t v = 0; v < P_; ++v)
            if (!in[v]) U.push_back(v);
        if (S.empty() || U.empty()) return;
        const std::vector<std::size_t> arcs = n_.leaving(n_.region(U, S, out_.max_flows, limits_));
        const std::vector<std::uint32_t>& base = rs_ ? S : U;  // the classes' processors: owners, or data
        const std::vector<std::uint32_t>& ends = rs_ ? U : S;  // the fixed source, or destination
        // every class with the farthest end first; the other ends only for a class that gave a term kept
        for (const std::vector<std::uint32_t>& K : classes(base, parts)) {
            const std::vector<double>& k_dist = of_class(K);
            const std::vector<std::uint32_t> es = pick(ends, K);
            for (std::size_t i = 0; i < es.size(); ++i) {
                const std::vector<double>& e_dist = rs_ ? from(es[i]) : to(es[i]);
                Candidate c;
                // reduce-scatter: released from u = e, on to the nearest of K; allgather: released from K, on to o = e
                for (std::size_t a : arcs) {
                    const CutArc x = n_.arc(a, rs_ ? &k_dist : &e_dist, rs_ ? &e_dist : &k_dist);
                    if (std::isfinite(x.alpha)) c.term.arcs.push_back(x), c.arcs.push_back(a);
                }
                if (c.arcs.empty()) continue;
                c.term.demand = static_cast<double>(K.size()) / P_;
                c.term.inside = S;
                if (!keep(std::move(c), S, K, es[i]) && i == 0) break;
            }
        }
    }

    void finish() {
        for (std::optional<TimeTerm>& t : best_)
            if (t && std::none_of(out_.terms.begin(), out_.terms.end(), [&](const TimeTerm& x) { return x.detail == t->detail; }))
                out_.terms.push_back(std::move(*t));
    }

private:
    /// The classes: the whole, and each set of each partition of at most 64 sets inside it and outside it.
    std::vector<std::vector<std::uint32_t>> classes(const std::vector<std::uint32_t>& base, const std::vector<Partition>& parts) const {
        std::vector<std::vector<std::uint32_t>> out{base};
        for (const Partition& p : parts) {
            if (p.sets > 64) continue;
            for (std::uint32_t x = 0; x < p.sets && out.size() < most_classes; ++x) {
                std::vector<std::uint32_t> inside, outside;
                for (std::uint32_t v : base) (p.set[v] == x ? inside : outside).push_back(v);
                for (auto* k : {&inside, &outside})
                    if (!k->empty() && std::find(out.begin(), out.end(), *k) == out.end()) out.push_back(std::move(*k));
            }
        }
        return out;
    }
    /// Up to most_ends of `ends`, the farthest from K first (a far source or destination gives the longest windows' loss).
    std::vector<std::uint32_t> pick(const std::vector<std::uint32_t>& ends, const std::vector<std::uint32_t>& K) {
        if (ends.size() <= most_ends) return ends;
        std::vector<std::pair<double, std::uint32_t>> order;
        for (std::uint32_t e : ends) {
            const std::vector<double>& d = rs_ ? from(e) : to(e);
            double least = std::numeric_limits<double>::infinity();
            for (std::uint32_t k : K) least = std::min(least, d[k]);
            order.emplace_back(-least, e);
        }
        std::stable_sort(order.begin(), order.end());
        std::vector<std::uint32_t> out;
        for (std::size_t i = 0; i < most_ends; ++i) out.push_back(order[i].second);
        return out;
    }
    /// The class's distances: to the nearest of K (reduce-scatter: on to an owner) or from it (allgather: a release).
    const std::vector<double>& of_class(const std::vector<std::uint32_t>& K) {
        auto it = classes_.find(K);
        if (it == classes_.end()) it = classes_.emplace(K, at_processors(alpha_distances(t_, delays_, K, rs_), !rs_)).first;
        return it->second;
    }
    /// Releases are proved at processors only (a router that cuts through may start before the copy is in).
    std::vector<double> at_processors(std::vector<double> d, bool release) const {
        if (release)
            for (std::uint32_t v = P_; v < d.size(); ++v) d[v] = 0;
        return d;
    }
    const std::vector<double>& from(std::uint32_t p) {
        if (from_[p].empty()) from_[p] = at_processors(alpha_distances(t_, delays_, {p}, false), true);
        return from_[p];
    }
    const std::vector<double>& to(std::uint32_t p) {
        if (to_[p].empty()) to_[p] = alpha_distances(t_, delays_, {p}, true);
        return to_[p];
    }

    /// Keeps `term` where it is the largest so far at one of the sizes; whether it was.
    struct Candidate {
        TimeTerm term;
        std::vector<std::size_t> arcs;  ///< the network's arc of each of term.arcs
    };
    bool keep(Candidate c, const std::vector<std::uint32_t>& S, const std::vector<std::uint32_t>& K, std::uint32_t e) {
        TimeTerm& term = c.term;
        bool wanted = false;
        std::vector<double> at(std::size(kept_at));
        for (std::size_t i = 0; i < std::size(kept_at); ++i) {
            at[i] = term.seconds(kept_at[i]);
            wanted = wanted || !best_[i] || at[i] > best_s_[i];
        }
        if (!wanted) return false;
        for (std::size_t i = 0; i < c.arcs.size() && i < 12; ++i) term.crossing.push_back(n_.arc_text(c.arcs[i], term.arcs[i].alpha, "its window"));
        if (c.arcs.size() > 12) term.crossing.push_back(fmt::format("... ({} more)", c.arcs.size() - 12));
        term.name = fmt::format("windows on a cut into {}", support::runs_text(S));
        term.detail = rs_ ? fmt::format("the {} blocks owned by {} (M/P bytes each) need processor {}'s values, which reach them over a chain that "
                                        "enters the region of {}: over a channel no earlier than they can be at its sender, and no later than "
                                        "the channel's latency and the way on to the nearest of them before the end (docs/time.md, \"Lower "
                                        "bounds on time\", windows); the arcs with their windows: {}",
                                        K.size(), support::runs_text(K), e, support::runs_text(S), fmt::join(term.crossing, " + "))
                          : fmt::format("the data of {} ({} x M/P bytes) reach processor {} over a chain that enters the region of {}: over a "
                                        "channel no earlier than the nearest of them can be at its sender, and no later than the channel's "
                                        "latency and the way on to {} before the end (docs/time.md, \"Lower bounds on time\", windows); the "
                                        "arcs with their windows: {}",
                                        support::runs_text(K), K.size(), e, support::runs_text(S), e, fmt::join(term.crossing, " + "));
        for (std::size_t i = 0; i < std::size(kept_at); ++i)
            if (!best_[i] || at[i] > best_s_[i]) best_[i] = term, best_s_[i] = at[i];
        return true;
    }

    TimeBounds& out_;
    const Topology& t_;
    const bool rs_;
    WeightedNetwork& n_;
    const TimeOptions& speeds_;
    const RunLimits& limits_;
    const std::uint32_t P_;
    const std::vector<double> delays_;             ///< per channel its channel_delay
    std::vector<std::vector<double>> from_, to_;  ///< per processor, alpha-distances from it (routers 0) and to it
    std::map<std::vector<std::uint32_t>, std::vector<double>> classes_;  ///< of_class
    std::optional<TimeTerm> best_[std::size(kept_at)];
    double best_s_[std::size(kept_at)] = {};
};

}  // namespace

void add_window_terms(TimeBounds& out, const Topology& t, CollectiveKind kind, WeightedNetwork& forward, const TimeOptions& speeds,
                      const std::vector<std::vector<std::uint32_t>>& sets, const std::vector<Partition>& parts, const RunLimits& limits) {
    if (t.processors() > window_processors || (kind != CollectiveKind::reduce_scatter && kind != CollectiveKind::allgather)) return;
    Windows w(out, t, kind, forward, speeds, limits);
    std::vector<std::vector<std::uint32_t>> seen;
    for (std::vector<std::uint32_t> S : sets) {
        std::sort(S.begin(), S.end());
        if (std::find(seen.begin(), seen.end(), S) != seen.end()) continue;
        seen.push_back(S);
        w.set(S, parts);
    }
    w.finish();
}

}  // namespace collsched::time_internal
