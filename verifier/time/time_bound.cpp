// Lower bounds on time: the terms per collective, their value at a size, and their text.
//
// The proofs (moved from docs/time.md; the statement stays there):
//
// **Lemma 1 (what an arc carries).** In the capacity network give arc a the bandwidth B_a of its channel
// or group (a port: its channels' sum) and alpha_a the least latency of its channels. In a run ending at
// T, a carries at most B_a max(0, T - alpha_a) bytes. *Asynchronous:* a transfer holds its resources
// b/B, one resource's transfers never overlap, and it arrives alpha_e >= alpha_a after its last byte, by
// T: so its holding lies in [0, T - alpha_a]. *Synchronous:* a step in which a carries L_a lasts D_s >=
// alpha_e + L_a/B_a, so L_a <= B_a (D_s - alpha_a); summed, <= B_a (T - alpha_a).
// *A group's message (the asynchronous time alone).* On an executor a transfer over channel c takes c and its
// groups g at one start and its connection for m_c + b/B_c (runtime/timing.cpp, AsyncRun::start: the hold is at least
// every resource's), arriving alpha_c after that; g is held b/B_g. Where B_c <= B_g, b/B_g <= m_c + b/B_c - m_c, so g is
// free m_c + alpha_c before the arrival: the group's alpha_a may count m_c (WeightedNetwork::group_delay). A
// synchronous step lasts alpha_c + max(bytes/B_c + turns x m_c, bytes_g/B_g): the group's bytes may fill the messages'
// time, so there the group keeps alpha_c (the bounds say which time they hold for: time_bounds' `asynchronous`).
//
// **Lemma 2 (a cut).** If every run moves at least D bytes over the arcs of a set A (a byte counted per
// arc crossed), then T >= T*(D), the least T with sum over A of B_a max(0, T - alpha_a) >= D; T* >= D /
// sum B_a + min alpha_a. Latency is added **inside** a cut term, where Lemma 1 proves it; terms combine
// by **max** only (pipelining overlaps latency and bandwidth). A byte inside a set S and later outside
// crossed an arc leaving S.
// In the cuts around a processor or a set (the rooted cuts: broadcast, reduce, scatter, gather, and
// the cuts with reduction in the network), the bytes counted must reach a processor on the far side,
// so alpha_a is the least over the channels e through a of alpha_e + d(head of e), d(v) the least
// latency from v on to any processor (0 at a processor): what crosses into a router (SHARP's rail
// switch, 1.35 us in and 1.35 us out) is held by no processor before its next hop, and the router
// adding or copying it does not shorten that hop; one that cuts through starts the hop early, but ends
// it no earlier than the copy arrived (docs/time.md, "Routers and copies"), so the hop's last byte
// still arrives its latency later.
//
//
// **Allreduce: one-way gossip on partitions.** Fix a byte x and a partition of the processors into N >= 2
// sets V_i with regions R_i (R_i ∩ P = V_i; regions may share routers). A *delivery* carries a value from
// a processor to one of another set (a chain of transfers; a router's copy starts its own); let it carry
// all its sender's set has seen at x, which only adds knowledge. Order deliveries by arrival; let X be
// the first set to have seen all N contributions, after delivery k. (i) Every other set's contribution
// left it by k: N - 1 deliveries from distinct sets. (ii) Delivery k changed X only, so the N - 1 others
// each need a delivery after k: N - 1 into distinct sets. Deliveries of (i) are distinct transfers (no
// combining in the network); one of (ii) into set i differs from one of (i) into i (it brings something
// new). So each byte needs 2(N - 1) transfers entering the regions, at least one each; over M bytes, by
// Lemma 2:
//
//     T >= T*(2(N-1) M) on the entering arcs of all regions together,  and  T >= T*(M) on those of each region.
//
// **Reduce-scatter and allgather on partitions.** Fix a byte x of the buffer and a partition as above.
// *Reduce-scatter:* x's block is owned in one set; each of the N - 1 other sets' contributions leaves it in
// a delivery (the first that carries it out), N - 1 deliveries from distinct sets. *Allgather:* x starts in
// one set and a delivery brings it into each of the N - 1 others. Without adding in the network a
// delivery's last transfer is its own (a router forwards or copies one incoming transfer: two deliveries
// that end with one transfer are one), so each byte needs N - 1 transfers entering the regions, copies
// or not; without copies as many leave them (a delivery's first transfer is its own then). By Lemma 2:
//
//     T >= T*((N-1) M) on the entering arcs of all regions together (and on the leaving arcs, without copies).
//
// On a machine whose box has a NIC that only sends (4 x DGX H100, rail-only), the boxes give 3 M over 31 NICs
// in, each after the NIC's 2.7 us: the reduce-scatter cannot end before 3 M / 1,550 GB/s + 2.7 us, where the
// densest cut (GPU 0's way out, 500 GB/s for 31/32 of M) adds only NVLink's 0.6 us.
#include "verifier/time/time_bound.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "runtime/timing.hpp"
#include "support/units.hpp"
#include "verifier/synth/symmetry/processor_orbits.hpp"
#include "verifier/time/time_bound_windows.hpp"
#include "verifier/time/weighted_network.hpp"

namespace collsched {

using namespace time_internal;

double TimeTerm::bandwidth() const {
    double b = 0;
    for (const CutArc& a : arcs) b += a.bandwidth;
    return b;
}

double TimeTerm::seconds(double size) const {
    if (demand <= 0) return latency;
    const double need = demand * size;
    if (need <= 0) return 0;
    // the least T with sum_a B_a max(0, T - alpha_a) >= need: walk the latencies in order
    std::vector<CutArc> as = arcs;
    std::sort(as.begin(), as.end(), [](const CutArc& x, const CutArc& y) { return x.alpha < y.alpha; });
    double slope = 0, moved = 0, at = 0;
    for (std::size_t i = 0; i < as.size(); ++i) {
        if (slope > 0 && moved + slope * (as[i].alpha - at) >= need) break;
        moved += slope * (as[i].alpha - at);
        at = as[i].alpha;
        slope += as[i].bandwidth;
    }
    if (slope <= 0) return std::numeric_limits<double>::infinity();
    return at + (need - moved) / slope;
}

namespace {

/// The collectives with bounds, and the pairs their latency term joins.
enum class Pairs { all, from_root, to_root, none };

Pairs pairs_of(CollectiveKind k) {
    switch (k) {
        case CollectiveKind::allgather:
        case CollectiveKind::alltoall:
        case CollectiveKind::allreduce:
        case CollectiveKind::reduce_scatter: return Pairs::all;
        case CollectiveKind::broadcast:
        case CollectiveKind::scatter: return Pairs::from_root;
        case CollectiveKind::reduce:
        case CollectiveKind::gather: return Pairs::to_root;
        default: return Pairs::none;
    }
}

/// Builds the terms of one instance.
class Bounds {
public:
    Bounds(const Topology& t, const Collective& c, const Model& m, const TimeOptions& speeds, const RunLimits& limits, bool asynchronous)
        : t_(t), c_(c), m_(m), speeds_(speeds), asynchronous_(asynchronous), P_(t.processors()), limits_(limits),
          orbits_(processor_orbits(t, limits)) {}  // AutomorphismCheck keeps speeds too; fewer symmetries at a limit only cost flows

    TimeBounds run() {
        out_.model = asynchronous_ ? "docs/time.md, the asynchronous time: a transfer of b bytes holds its channel b/B_e and each of its link "
                                     "groups b/B_g from its start and arrives alpha_e after its last byte left, and its message after the "
                                     "group's holding where its channel is no faster than the group"
                                   : "docs/time.md, asynchronous and synchronous alike: a transfer of b bytes holds its channel b/B_e and each of "
                                     "its link groups b/B_g and arrives alpha_e after its last byte left";
        out_.assumptions = {"hop timing (a transfer crosses one channel; a router that only forwards cuts through: docs/time.md, \"Routers and copies\")",
                            "any schedule, route, number of chunks and rounds; routers under replicate=no and yes"};
        const bool in_network = c_.row().combining() && m_.combine_routers;
        if (in_network)
            out_.assumptions.push_back("in-network reduction allowed (combine=routers): only arguments that hold when routers add partials");
        else if (c_.row().combining())
            out_.assumptions.push_back("no in-network reduction: values combine only at processors (routers forward and copy, never add)");
        if (m_.ports != Ports::multi) out_.assumptions.push_back("ports not counted (a relaxation: each port as the sum of its channels)");
        guarded("latency", [&] { latency(); });
        if (in_network && c_.kind != CollectiveKind::reduce) {
            guarded("cut", [&] {
                reduction_in_network();
                if (c_.kind == CollectiveKind::reduce_scatter) windows();  // one crossing per byte of a block: wherever values add
                if (c_.kind == CollectiveKind::allreduce)
                    for (const Partition& part : partitions(t_, speeds_))
                        if (part.sets >= 2 && part.sets < P_ && functions_inside_sets(part))
                            gossip(part, "; in-network reduction and copies only inside the sets: every router that can add or copy is "
                                         "joined to processors of one set alone, so it acts as part of that set");
            });
            if (out_.terms.size() < 2) out_.no_bandwidth = fmt::format("no cut bound for {} with reduction in the network", c_.row().name);
            return std::move(out_);
        }
        guarded("cut", [&] { cuts(); });
        if (out_.terms.size() < 2) out_.no_bandwidth = fmt::format("no cut bound for {} here", c_.row().name);
        return std::move(out_);
    }

private:
    /// Runs one argument; a limit that stops it is recorded, the terms it completed are kept.
    template <class F>
    void guarded(const char* what, F&& argument) {
        try {
            argument();
        } catch (const LimitReached& e) {
            out_.stopped.push_back(fmt::format("{}: {}", what, e.what()));
        }
    }

    void cuts() {
        switch (c_.kind) {
            case CollectiveKind::allgather: densest(false), crossings(), windows(); break;
            case CollectiveKind::reduce_scatter: densest(true), crossings(), windows(); break;
            case CollectiveKind::allreduce: allreduce(); break;
            case CollectiveKind::alltoall: alltoall(); break;
            case CollectiveKind::broadcast: rooted({idx(c_.root)}, others(), 1, "broadcast: the root's buffer crosses every cut between the root and a processor"); break;
            case CollectiveKind::reduce: rooted(others(), {idx(c_.root)}, 1, "reduce: a partial of every byte enters the root's region (values combine only at processors)"); break;
            case CollectiveKind::scatter: rooted({idx(c_.root)}, others(), (P_ - 1.0) / P_, "scatter: the P-1 other messages leave the root's region"); break;
            case CollectiveKind::gather: rooted(others(), {idx(c_.root)}, (P_ - 1.0) / P_, "gather: the P-1 other messages enter the root's region"); break;
            default: break;
        }
    }
    std::vector<std::uint32_t> others() const {
        std::vector<std::uint32_t> v;
        for (std::uint32_t p = 0; p < P_; ++p)
            if (p != idx(c_.root)) v.push_back(p);
        return v;
    }

    WeightedNetwork& net(bool reverse) {
        auto& n = reverse ? backward_ : forward_;
        if (!n) {
            limits_.check("the flow network of the link speeds");
            n.emplace(t_, m_, speeds_, reverse, asynchronous_);
        }
        return *n;
    }

    /// The largest alpha-distance between the pairs the collective joins (distances are kept by
    /// the verified symmetries, so one source per orbit for the all-pairs collectives).
    void latency() {
        const Pairs pairs = pairs_of(c_.kind);
        double worst = 0;
        std::uint32_t s_best = 0, d_best = 0;
        auto scan = [&](std::uint32_t src, bool reversed) {
            limits_.check("the latency term");
            const std::vector<double> d = alpha_distances(t_, speeds_, src, reversed);
            for (std::uint32_t v = 0; v < P_; ++v)
                if (v != src && std::isfinite(d[v]) && d[v] > worst) worst = d[v], s_best = reversed ? v : src, d_best = reversed ? src : v;
        };
        if (pairs == Pairs::all) {
            for (std::uint32_t r : orbits_.representatives) scan(r, false);
        } else if (pairs == Pairs::from_root) {
            scan(idx(c_.root), false);
        } else if (pairs == Pairs::to_root) {
            scan(idx(c_.root), true);
        }
        TimeTerm term;
        term.name = "latency";
        term.latency = worst;
        term.detail = pairs == Pairs::none ? "no pairs counted for this collective"
                                           : fmt::format("a byte of processor {}'s data that processor {} needs crosses channels whose latencies "
                                                         "add up to at least {} (the least over every route; the largest such pair)",
                                                         s_best, d_best, support::format_seconds(worst));
        out_.terms.push_back(std::move(term));
    }

    /// ForestColl's cut: (M/P) |S ∩ P| leave S (reduce_scatter: enter it, one partial per block).
    void densest(bool reverse) {
        WeightedNetwork& n = net(reverse);
        std::vector<char> side = n.densest_cut(orbits_.representatives, out_.max_flows, limits_);
        if (side.empty()) return;
        TimeTerm term;
        term.name = "cut (max flow on link speeds)";
        for (std::uint32_t v = 0; v < P_; ++v)
            if (side[v]) term.inside.push_back(v);
        term.demand = static_cast<double>(term.inside.size()) / P_;
        n.crossing(side, term);
        const std::string set = reverse ? fmt::format("the complement of the set {}", runs_text(term.inside)) : fmt::format("the set {}", runs_text(term.inside));
        term.detail = reverse ? fmt::format("the {} blocks owned inside {} need one partial (M/P bytes) each from outside; what enters it is {} = {}; "
                                            "the densest such set over every set of nodes (ForestColl's cut, {} max flows)",
                                            term.inside.size(), runs_text(term.inside), fmt::join(term.crossing, " + "),
                                            support::format_bandwidth(term.bandwidth()), out_.max_flows)
                              : fmt::format("the {} data (M/P bytes each) that start in {} must leave it; what leaves it is {} = {}; the densest "
                                            "such set over every set of nodes (ForestColl's cut, {} max flows)",
                                            term.inside.size(), set, fmt::join(term.crossing, " + "), support::format_bandwidth(term.bandwidth()),
                                            out_.max_flows);
        if (!n.net().exact()) term.detail += fmt::format("; on a relaxed network: {}", fmt::join(n.net().relaxations, "; "));
        cut_set_ = term.inside;
        out_.terms.push_back(std::move(term));
    }

    /// The region of the processors of `set` (none of the others), entering or leaving.
    TimeTerm region_term(const std::vector<std::uint32_t>& set, bool entering) {
        std::vector<char> in(P_, 0);
        for (std::uint32_t v : set) in[v] = 1;
        std::vector<std::uint32_t> rest;
        for (std::uint32_t v = 0; v < P_; ++v)
            if (!in[v]) rest.push_back(v);
        WeightedNetwork& n = net(false);
        TimeTerm term;
        term.inside = set;
        std::vector<char> side = entering ? n.region(rest, set, out_.max_flows, limits_) : n.region(set, rest, out_.max_flows, limits_);
        n.crossing(side, term);
        return term;
    }

    void allreduce();
    void alltoall();
    /// Reduce-scatter and allgather: the crossings between the sets of each partition (single processors first).
    void crossings();
    /// Reduce-scatter and allgather: windows on the cuts into single processors, the sets of each partition, their
    /// complements and the densest cut's side (time_bound_windows.hpp).
    void windows() {
        if (P_ > window_processors) return;
        const std::vector<Partition> parts = partitions(t_, speeds_);
        std::vector<std::vector<std::uint32_t>> sets;
        auto both = [&](const std::vector<std::uint32_t>& S) {
            std::vector<char> in(P_, 0);
            for (std::uint32_t v : S) in[v] = 1;
            std::vector<std::uint32_t> rest;
            for (std::uint32_t v = 0; v < P_; ++v)
                if (!in[v]) rest.push_back(v);
            sets.push_back(S), sets.push_back(std::move(rest));
        };
        for (std::uint32_t r : orbits_.representatives) both({r});
        for (const Partition& p : parts)
            for (std::uint32_t x = 0; x < p.sets && p.sets <= 64; ++x) {
                std::vector<std::uint32_t> S;
                for (std::uint32_t v = 0; v < P_; ++v)
                    if (p.set[v] == x) S.push_back(v);
                both(S);
            }
        if (!cut_set_.empty()) both(cut_set_);
        add_window_terms(out_, t_, c_.kind, net(false), speeds_, sets, parts, limits_);
    }
    /// Single processors, then partitions().
    std::vector<Partition> single_and_partitions() const {
        std::vector<Partition> parts;
        Partition single{"single processors", std::vector<std::uint32_t>(P_), P_};
        for (std::uint32_t v = 0; v < P_; ++v) single.set[v] = v;
        parts.push_back(std::move(single));
        for (Partition& p : partitions(t_, speeds_)) parts.push_back(std::move(p));
        return parts;
    }
    /// Whether a router's copies may serve several sets with one departure (replicate=yes, or a switch that
    /// multicasts under multicast=routers): then no argument counts the transfers that leave the sets.
    bool router_copies() const {
        bool copies = t_.routers() > 0 && m_.replicate;
        for (std::uint32_t r = P_; r < t_.nodes() && !copies; ++r) copies = m_.multicast_routers && t_.can_multicast(Node{r});
        return copies;
    }
    /// Per set of a partition, the least region's entering and leaving arcs (region_term).
    struct SetTerms {
        std::vector<TimeTerm> enter, leave;
    };
    SetTerms set_terms(const Partition& part);
    /// `note`: the sets' gossip where routers reduce, only inside the sets (functions_inside_sets):
    /// the entering side alone, with the note added to the detail.
    void gossip(const Partition& part, const SetTerms& terms, const char* note = nullptr);
    void gossip(const Partition& part, const char* note = nullptr) { gossip(part, set_terms(part), note); }
    void refined(const Partition& part, const SetTerms& terms, const SetTerms& single);

    /// Whether every router that may add partials (combine=routers) or copy (multicast=routers or
    /// replicate) has all its channels, in and out, to processors of one set of `part`. Such a router
    /// only combines or copies what that set already holds and gives it back to the set, as a
    /// processor of the set could: the one-way gossip between the sets still counts every transfer
    /// between them (docs/time.md, "Bounds with reduction in the network").
    bool functions_inside_sets(const Partition& part) const {
        const std::uint32_t P = P_;
        for (std::uint32_t r = P; r < t_.nodes(); ++r) {
            const Node n{r};
            const bool adds = m_.combine_routers && t_.can_reduce(n);
            const bool copies = m_.replicate || (m_.multicast_routers && t_.can_multicast(n));
            if (!adds && !copies) continue;
            std::optional<std::uint32_t> set;
            auto same_set = [&](Node v) {
                if (idx(v) >= P) return false;  // a router joined to a router: not one set's alone
                if (set && *set != part.set[idx(v)]) return false;
                set = part.set[idx(v)];
                return true;
            };
            for (ChannelId c : t_.out_channels(n))
                if (!same_set(t_.channel(c).to)) return false;
            for (ChannelId c : t_.in_channels(n))
                if (!same_set(t_.channel(c).from)) return false;
        }
        return true;
    }

    /// Allreduce and reduce-scatter when routers may add partials (issue 44): the gossip bounds do
    /// not hold (a switch sums what P GPUs send it), but every processor r must still send, for
    /// each byte that another processor's result depends on, something carrying r's value, and
    /// receive its own result: allreduce M out of r's region and M into it; reduce-scatter
    /// (P-1)/P M out (its values of the others' blocks) and M/P in (its block's sum). One
    /// processor per orbit of the verified symmetries.
    void reduction_in_network() {
        const bool ar = c_.kind == CollectiveKind::allreduce;
        if (!ar && c_.kind != CollectiveKind::reduce_scatter) return;
        for (std::uint32_t r : orbits_.representatives) {
            std::vector<std::uint32_t> rest;
            for (std::uint32_t p = 0; p < P_; ++p)
                if (p != r) rest.push_back(p);
            rooted({r}, rest, ar ? 1.0 : (P_ - 1.0) / P_,
                   fmt::format("with reduction in the network: processor {}'s value of every byte {} leaves its region", r,
                               ar ? "of the buffer" : "of the other blocks"),
                   "cut around a processor (in-network reduction)");
            rooted(rest, {r}, ar ? 1.0 : 1.0 / P_,
                   fmt::format("with reduction in the network: the sum of every byte of {} enters processor {}'s region",
                               ar ? "the buffer" : "its block", r),
                   "cut around a processor (in-network reduction)");
        }
        // the same for a set S of k processors, the first set of each partition (a box: the contracted
        // bound M / B_box, and reduce-scatter's (P-k)/P M / B_box, which hold with reduction anywhere,
        // in the box's switch or SHARP between the boxes: every byte of a block owned outside S
        // depends on S's values, and a transfer carries bytes of one block, so for each such byte
        // something crosses out of any region that holds S and not the owner, whatever adds where;
        // docs/time.md, "Bounds with reduction in the network")
        for (const Partition& part : partitions(t_, speeds_)) {
            std::vector<std::uint32_t> in, rest;
            for (std::uint32_t v = 0; v < P_; ++v) (part.set[v] == 0 ? in : rest).push_back(v);
            if (in.size() < 2 || rest.empty()) continue;
            const double k = static_cast<double>(in.size());
            rooted(in, rest, ar ? 1.0 : (P_ - k) / P_,
                   fmt::format("with reduction in the network: the value of {} ({}) of every byte {} leaves its region", part.name, runs_text(in),
                               ar ? "of the buffer" : "of the blocks owned outside it"),
                   "cut around a set (in-network reduction)");
            rooted(rest, in, ar ? 1.0 : k / P_,
                   fmt::format("with reduction in the network: the sum of every byte {} enters the region of {} ({})", ar ? "of the buffer" : "of its blocks",
                               part.name, runs_text(in)),
                   "cut around a set (in-network reduction)");
        }
    }

    void rooted(const std::vector<std::uint32_t>& from, const std::vector<std::uint32_t>& to, double demand, const std::string& why,
                const char* name = "cut around the root") {
        if (from.empty() || to.empty()) return;
        WeightedNetwork& n = net(false);
        TimeTerm term;
        std::vector<char> side = n.region(from, to, out_.max_flows, limits_);
        // what crosses into a router still goes on to a processor (SHARP's rail switches: 1.35 us in, 1.35 us out)
        if (!onward_) onward_ = alpha_to_processors(t_, speeds_);
        n.crossing(side, term, &*onward_);
        for (std::uint32_t v = 0; v < P_; ++v)
            if (side[v]) term.inside.push_back(v);
        term.name = name;
        term.demand = demand;
        term.detail = fmt::format("{}; the least such cut (max flow) is {} = {}", why, fmt::join(term.crossing, " + "), support::format_bandwidth(term.bandwidth()));
        out_.terms.push_back(std::move(term));
    }

    const Topology& t_;
    const Collective& c_;
    const Model& m_;
    const TimeOptions speeds_;  ///< the speeds the time model times channels and groups at
    const bool asynchronous_;   ///< the bounds are for the asynchronous time only (WeightedNetwork::group_delay)
    const std::uint32_t P_;
    const RunLimits limits_;
    const ProcessorOrbits orbits_;
    std::optional<WeightedNetwork> forward_, backward_;
    std::vector<std::uint32_t> cut_set_;
    std::optional<std::vector<double>> onward_;  ///< per node the least latency on to a processor (rooted cuts)
    TimeBounds out_;
};

Bounds::SetTerms Bounds::set_terms(const Partition& part) {
    const std::uint32_t N = part.sets;
    std::vector<std::vector<std::uint32_t>> sets(N);
    for (std::uint32_t v = 0; v < P_; ++v) sets[part.set[v]].push_back(v);
    const bool singletons = N == P_;
    // one flow per set; for single processors one per orbit (the symmetries keep the speeds)
    SetTerms out{std::vector<TimeTerm>(N), std::vector<TimeTerm>(N)};
    std::vector<TimeTerm>&enter = out.enter, &leave = out.leave;
    std::vector<char> done(N, 0);
    for (std::uint32_t s = 0; s < N; ++s) {
        const std::uint32_t rep = singletons ? orbits_.orbit[sets[s][0]] : s;
        if (!done[rep]) enter[rep] = region_term(sets[rep], true), leave[rep] = region_term(sets[rep], false), done[rep] = 1;
        if (rep != s) enter[s] = enter[rep], leave[s] = leave[rep], enter[s].inside = leave[s].inside = sets[s];
    }
    return out;
}

/// The one-way gossip on the sets of one partition (docs/time.md, "Lower bounds on time"): per byte
/// 2(N-1) transfers enter the sets' regions, and each set at least one.
void Bounds::gossip(const Partition& part, const SetTerms& terms, const char* note) {
    const std::uint32_t N = part.sets;
    const bool singletons = N == P_;
    std::vector<TimeTerm> enter = terms.enter, leave = terms.leave;
    const bool copies = router_copies();  // the leaving side does not hold
    for (bool entering : {true, false}) {
        if (!entering && (copies || note)) continue;
        std::vector<TimeTerm>& side = entering ? enter : leave;
        TimeTerm sum;
        sum.name = singletons ? "gossip per processor (Patarasuk and Yuan)" : "gossip between sets: " + part.name;
        sum.demand = 2.0 * (N - 1);
        for (const TimeTerm& x : side) sum.arcs.insert(sum.arcs.end(), x.arcs.begin(), x.arcs.end());
        const TimeTerm& least = *std::min_element(side.begin(), side.end(), [](const TimeTerm& a, const TimeTerm& b) { return a.bandwidth() < b.bandwidth(); });
        sum.crossing = least.crossing;
        sum.inside = least.inside;
        sum.detail = fmt::format("every byte of the buffer is a one-way gossip among the {} sets ({}): at least 2(N-1) = {} transfers {} the sets' "
                                 "regions, at least one {} each; what can {} them is {} in all (the least region {} {}: {} = {})",
                                 N, singletons ? "single processors" : part.name, 2 * (N - 1), entering ? "enter" : "leave",
                                 entering ? "into" : "out of", entering ? "enter" : "leave", support::format_bandwidth(sum.bandwidth()),
                                 runs_text(least.inside), entering ? "enters by" : "leaves by", fmt::join(least.crossing, " + "),
                                 support::format_bandwidth(least.bandwidth()));
        if (note) sum.detail += note;
        TimeTerm one = least;
        one.name = sum.name + ", one set";
        out_.terms.push_back(std::move(sum));
        one.demand = 1;
        one.detail = fmt::format("every byte of the buffer must {} the set {} once at least ({}): {} = {}", entering ? "enter" : "leave",
                                 runs_text(least.inside), part.name, fmt::join(least.crossing, " + "), support::format_bandwidth(least.bandwidth()));
        out_.terms.push_back(std::move(one));
    }
}

void Bounds::crossings() {
    if (P_ < 2) return;
    const std::vector<Partition> parts = single_and_partitions();
    const bool copies = router_copies();
    for (const Partition& part : parts) {
        const SetTerms terms = set_terms(part);
        for (bool entering : {true, false}) {
            if (!entering && copies) continue;
            const std::vector<TimeTerm>& side = entering ? terms.enter : terms.leave;
            TimeTerm sum;
            sum.name = fmt::format("crossings {} the sets: {}", entering ? "into" : "out of", part.sets == P_ ? "single processors" : part.name);
            sum.demand = part.sets - 1.0;
            for (const TimeTerm& x : side) sum.arcs.insert(sum.arcs.end(), x.arcs.begin(), x.arcs.end());
            const TimeTerm& least = *std::min_element(side.begin(), side.end(), [](const TimeTerm& a, const TimeTerm& b) { return a.bandwidth() < b.bandwidth(); });
            sum.crossing = least.crossing;
            sum.detail = fmt::format("every byte of the buffer {} at least N-1 = {} of the {} sets ({}) from another: N-1 transfers {} the sets' regions; "
                                     "what can {} them is {} in all (the least region {} {}: {} = {})",
                                     c_.kind == CollectiveKind::allgather ? "enters" : "needs a partial in", part.sets - 1, part.sets,
                                     part.sets == P_ ? "single processors" : part.name, entering ? "enter" : "leave", entering ? "enter" : "leave",
                                     support::format_bandwidth(sum.bandwidth()), runs_text(least.inside), entering ? "enters by" : "leaves by",
                                     fmt::join(least.crossing, " + "), support::format_bandwidth(least.bandwidth()));
            out_.terms.push_back(std::move(sum));
        }
    }
}

void Bounds::allreduce() {
    if (P_ < 2) return;
    std::vector<Partition> parts = single_and_partitions();
    // the allgather's densest cut as a partition of two
    densest(false);
    if (!cut_set_.empty() && cut_set_.size() < P_) {
        out_.terms.pop_back();  // an allgather's bound, not an allreduce's
        Partition two{fmt::format("the allgather's densest cut {} and the rest", runs_text(cut_set_)), std::vector<std::uint32_t>(P_, 1), 2};
        for (std::uint32_t v : cut_set_) two.set[v] = 0;
        parts.push_back(std::move(two));
    } else if (!cut_set_.empty()) {
        out_.terms.pop_back();
    }
    const SetTerms apart = set_terms(parts[0]);
    gossip(parts[0], apart);
    for (std::size_t i = 1; i < parts.size(); ++i) {
        const SetTerms terms = set_terms(parts[i]);
        gossip(parts[i], terms);
        refined(parts[i], terms, apart);
    }
}

/// The gossip on a partition with some of its sets taken processor by processor: a partition too (the
/// argument holds for any), of N + the sets' sizes - 1 each. A set whose processors together have little
/// more way in than the set (a box of a GPU with slow links in it: 2 x DGX A100 with GPU 0's NVLink at
/// half, 16 transfers into box 0's GPUs or box 1 against 30 into every GPU) raises the demand more than the
/// arcs. Taken in order of the arcs each such processor adds; the densest prefix, where it is denser than
/// both ends (the partition itself and single processors, already terms).
void Bounds::refined(const Partition& part, const SetTerms& terms, const SetTerms& single) {
    const std::uint32_t N = part.sets;
    std::vector<std::vector<std::uint32_t>> sets(N);
    for (std::uint32_t v = 0; v < P_; ++v) sets[part.set[v]].push_back(v);
    for (bool entering : {true, false}) {
        const std::vector<TimeTerm>&whole = entering ? terms.enter : terms.leave, &one = entering ? single.enter : single.leave;
        double base = 0;
        std::vector<std::pair<double, std::uint32_t>> order;  // per set of several, the arcs its processors add per processor
        for (std::uint32_t s = 0; s < N; ++s) {
            base += whole[s].bandwidth();
            if (sets[s].size() < 2) continue;
            double apart = 0;
            for (std::uint32_t v : sets[s]) apart += one[v].bandwidth();
            order.emplace_back((apart - whole[s].bandwidth()) / (sets[s].size() - 1.0), s);
        }
        std::stable_sort(order.begin(), order.end());
        auto density = [](double demand, double bw) { return bw > 0 ? demand / bw : 0.0; };
        double demand = 2.0 * (N - 1), bw = base, best = 0, all_apart = 0;
        for (const TimeTerm& x : one) all_apart += x.bandwidth();
        const double ends = std::max(density(demand, base), density(2.0 * (P_ - 1), all_apart));
        std::size_t best_k = 0;
        for (std::size_t k = 0; k + 1 < order.size(); ++k) {
            const std::uint32_t s = order[k].second;
            demand += 2.0 * (sets[s].size() - 1.0), bw += order[k].first * (sets[s].size() - 1.0);
            if (density(demand, bw) > std::max(best, ends * (1 + 1e-9))) best = density(demand, bw), best_k = k + 1;
        }
        if (best_k == 0) continue;
        std::vector<char> is_apart(P_, 0);
        for (std::size_t k = 0; k < best_k; ++k)
            for (std::uint32_t v : sets[order[k].second]) is_apart[v] = 1;
        std::vector<std::uint32_t> apart;
        Partition mixed{"", std::vector<std::uint32_t>(P_), 0};
        SetTerms mixed_terms;
        std::vector<std::uint32_t> id_of(N, ~0u);  // the sets kept whole, renumbered in order of their least processor
        for (std::uint32_t v = 0; v < P_; ++v) {
            const std::uint32_t s = part.set[v];
            if (!is_apart[v] && id_of[s] != ~0u) {
                mixed.set[v] = id_of[s];
                continue;
            }
            mixed.set[v] = mixed.sets++;
            if (is_apart[v]) apart.push_back(v);
            else id_of[s] = mixed.set[v];
            mixed_terms.enter.push_back(is_apart[v] ? single.enter[v] : terms.enter[s]);
            mixed_terms.leave.push_back(is_apart[v] ? single.leave[v] : terms.leave[s]);
        }
        mixed.name = fmt::format("{}, but the processors of {} each a set", part.name, runs_text(apart));
        gossip(mixed, mixed_terms);
    }
}

void Bounds::alltoall() {
    // message m(s,d) has M/P bytes: |V| |P \ V| M/P leave V and as many enter it
    std::vector<std::vector<std::uint32_t>> sets;
    for (std::uint32_t r : orbits_.representatives) sets.push_back({r});
    for (const Partition& p : partitions(t_, speeds_)) {
        std::vector<std::vector<std::uint32_t>> members(p.sets);
        for (std::uint32_t v = 0; v < P_; ++v) members[p.set[v]].push_back(v);
        sets.push_back(members[0]);
        std::vector<std::uint32_t> half;
        for (std::uint32_t s = 0; s < p.sets / 2; ++s) half.insert(half.end(), members[s].begin(), members[s].end());
        if (!half.empty()) sets.push_back(half);
    }
    // the first half of the processors by number (machines number their GPUs by place: the DGX-1's
    // two quads, joined by 6 links of its 24 each way, 16 messages each way: 2.67 times a message
    // over a link, where every channel of the machine gives 1.67)
    std::vector<std::uint32_t> first_half(P_ / 2);
    for (std::uint32_t v = 0; v < P_ / 2; ++v) first_half[v] = v;
    sets.push_back(std::move(first_half));
    for (bool entering : {false, true}) {
        std::optional<TimeTerm> best;
        for (const auto& set : sets) {
            if (set.empty() || set.size() >= P_) continue;
            TimeTerm term = region_term(set, entering);
            term.demand = static_cast<double>(set.size()) * static_cast<double>(P_ - set.size()) / P_;
            if (!best || term.demand / term.bandwidth() > best->demand / best->bandwidth()) best = std::move(term);
        }
        if (!best) continue;
        best->name = "cut (max flow on link speeds)";
        best->detail = fmt::format("the {} x {} messages (M/P bytes each) between the set {} and the rest must {} it; what {} it is {} = {} (the "
                                   "densest of the sets tried: single processors, boxes, halves of the boxes, the first half of the processors)",
                                   best->inside.size(), P_ - best->inside.size(), runs_text(best->inside), entering ? "enter" : "leave",
                                   entering ? "enters" : "leaves", fmt::join(best->crossing, " + "), support::format_bandwidth(best->bandwidth()));
        out_.terms.push_back(std::move(*best));
    }
    // hops: m(s,d) crosses at least hops(s,d) channels
    TimeTerm hops;
    hops.name = "hops";
    double total = 0;  // one source per orbit, times the orbit's size (the symmetries keep hops)
    std::vector<double> orbit_size(P_, 0);
    for (std::uint32_t v = 0; v < P_; ++v) orbit_size[orbits_.orbit[v]] += 1;
    for (std::uint32_t r : orbits_.representatives) {
        limits_.check("the hops term");
        const std::vector<std::uint32_t> d = hop_distances(t_, r);
        for (std::uint32_t v = 0; v < P_; ++v)
            if (v != r && d[v] != std::numeric_limits<std::uint32_t>::max()) total += orbit_size[r] * d[v];
    }
    for (std::uint32_t ch = 0; ch < t_.channels().size(); ++ch) {
        hops.arcs.push_back({channel_speed(t_, ChannelId{ch}, speeds_).bandwidth, channel_delay(t_, ChannelId{ch}, speeds_)});
    }
    hops.demand = total / P_;
    hops.detail = fmt::format("every message m(s,d) (M/P bytes) crosses at least hops(s,d) channels, {} hops in all, over every channel "
                              "of the machine ({} in all)",
                              total, support::format_bandwidth(hops.bandwidth()));
    out_.terms.push_back(std::move(hops));
}

}  // namespace

std::optional<TimeBounds> time_bounds(const Topology& t, const Collective& c, const Model& m, const std::optional<LinkSpeed>& uniform,
                                      const RunLimits& limits) {
    return time_bounds(t, c, m, TimeOptions{0, uniform}, limits);
}

std::optional<TimeBounds> time_bounds(const Topology& t, const Collective& c, const Model& m, const TimeOptions& speeds, const RunLimits& limits,
                                      bool asynchronous) {
    if (m.timing != Timing::hop || pairs_of(c.kind) == Pairs::none || t.processors() < 2) return std::nullopt;
    return Bounds(t, c, m, with_network_class(t, speeds), limits, asynchronous).run();
}

TimeBound evaluate(const TimeBounds& b, double size) {
    TimeBound r;
    r.size = size;
    for (std::size_t i = 0; i < b.terms.size(); ++i) {
        const double s = b.terms[i].seconds(size);
        if (!std::isfinite(s)) continue;
        if (b.terms[i].demand <= 0) r.latency_s = std::max(r.latency_s, s);
        else r.bandwidth_s = std::max(r.bandwidth_s, s);
        if (s > r.seconds) r.seconds = s, r.best = i;
    }
    return r;
}

std::string bound_violation(const TimeBound& bound, const TimeBounds& b, double predicted, std::string_view what) {
    if (bound.seconds <= predicted * (1 + 1e-9)) return "";
    return fmt::format("the proved lower bound on time {} ({} s, {}) is above the predicted time {} ({} s) of {} at {} bytes: a bound or the "
                       "prediction is wrong",
                       support::format_seconds(bound.seconds), bound.seconds, b.terms[bound.best].name, support::format_seconds(predicted),
                       predicted, what, bound.size);
}

std::string bound_text(const TimeBounds& b, const TimeBound& at) {
    if (b.terms.empty()) return fmt::format("none: {}\n", b.stopped.empty() ? std::string("no term") : fmt::format("{}", fmt::join(b.stopped, "; ")));
    const TimeTerm& best = b.terms[at.best];
    std::string s = fmt::format("{} ({}): {}\n", support::format_seconds(at.seconds), best.name, best.detail);
    s += fmt::format("  latency part {}, bandwidth part {}; the bound is the larger (max is always sound; a term adds latencies only "
                     "where docs/time.md proves it)\n",
                     support::format_seconds(at.latency_s), at.bandwidth_s > 0 ? support::format_seconds(at.bandwidth_s) : std::string("none"));
    s += fmt::format("  model: {}; assumes {}\n", b.model, fmt::join(b.assumptions, "; "));
    if (!b.stopped.empty()) s += fmt::format("  not computed (the bound above holds without them): {}\n", fmt::join(b.stopped, "; "));
    return s;
}

}  // namespace collsched
