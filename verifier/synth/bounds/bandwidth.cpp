// The cut bound on rounds per chunk by max flow and Newton's method on the ratio.
//
// The network and the search (moved from docs/synthesis.md; the user's summary stays there):
//
// **The network of one round.** Vertices: nodes, plus one per link group and port. A group whose
// channels all leave u is a vertex G behind u (arc u -> G, the group's capacity); all entering v, a
// vertex H in front of v; a single port is its processor's outermost group; nested groups chain.
// Channel u->v is one arc between the innermost group vertices (or nodes), with its capacity. So
// flows are exactly the per-round loads within channel, group and port limits, and a cut's capacity
// is what can cross it per round. Relaxed (the bound stays a bound; the certificate says `"exact":
// false` and lists them): a group of several senders and receivers becomes a switch vertex Gi -> Go;
// overlapping non-nesting groups keep a laminar part; `ports=half` counts as single. All files in
// schedules/machines are exact.
//
//
// The search is Dinkelbach's: from the best single-processor cut, x = p/q; a flow that falls short
// gives by its minimum cut a set with a larger ratio, the next x; when none falls short x is the
// maximum and the last S its certificate (integers throughout). Allgather's sinks are one processor
// per **orbit**, from permutations of generated machines' shapes (rotation in blocks of B, shift by
// B, XOR with a power of two) that pass `AutomorphismCheck` before merging orbits. A multibox or rail
// machine is one orbit: two or three max flows at any size.
#include "verifier/synth/bounds/bandwidth.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "support/assert.hpp"
#include "support/text.hpp"
#include "verifier/synth/bounds/capacity_network.hpp"
#include "verifier/synth/symmetry/processor_orbits.hpp"

namespace collsched {

namespace {

using support::runs_text;

/// The question a flow answers for one collective, on a network (reversed for the duals).
struct Problem {
    enum class Kind { all_sources, one_source_each_sink, one_source_all_sinks } kind;
    std::uint32_t root = 0;
    std::vector<std::uint32_t> members;  // the processors that must receive (or, reversed, send)
    bool reversed = false;
    std::string data_word = "data";
};

std::optional<Problem> problem_of(const SynthInstance& in) {
    const std::uint32_t P = in.topology->processors();
    Problem p;
    p.root = idx(in.collective.root);
    std::vector<std::uint32_t> all(P);
    for (std::uint32_t v = 0; v < P; ++v) all[v] = v;
    switch (in.collective.kind) {
        case CollectiveKind::allgather: p.kind = Problem::Kind::all_sources; p.members = all; return p;
        case CollectiveKind::reduce_scatter:
            p.kind = Problem::Kind::all_sources, p.members = all, p.reversed = true, p.data_word = "blocks";
            return p;
        case CollectiveKind::broadcast: p.kind = Problem::Kind::one_source_each_sink; p.members = all; return p;
        case CollectiveKind::reduce:
            p.kind = Problem::Kind::one_source_each_sink, p.members = all, p.reversed = true, p.data_word = "values";
            return p;
        case CollectiveKind::multicast:
            p.kind = Problem::Kind::one_source_each_sink;
            for (Node m : in.collective.members) p.members.push_back(idx(m));
            return p;
        case CollectiveKind::scatter: p.kind = Problem::Kind::one_source_all_sinks; p.members = all; p.data_word = "messages"; return p;
        case CollectiveKind::gather:
            p.kind = Problem::Kind::one_source_all_sinks, p.members = all, p.reversed = true, p.data_word = "messages";
            return p;
        default: return std::nullopt;
    }
}

class Search {
public:
    Search(const SynthInstance& in, const Problem& pr, const RunLimits& limits)
        : limits_(limits), in_(in), pr_(pr), net_(pr.reversed ? reversed(capacity_network(*in.topology, in.model)) : capacity_network(*in.topology, in.model)),
          flow_(net_), P_(in.topology->processors()) {}

    std::optional<BandwidthBound> run() {
        switch (pr_.kind) {
            case Problem::Kind::all_sources: return all_sources();
            case Problem::Kind::one_source_each_sink: return one_source();
            case Problem::Kind::one_source_all_sinks: return scatter();
        }
        return std::nullopt;
    }

private:
    /// The demand of a network vertex set S: what starts inside and must leave.
    std::uint64_t demand(const std::vector<char>& side) const {
        std::uint64_t in = 0, out = 0;
        for (std::uint32_t v : pr_.members) (side[v] ? in : out) += 1;
        switch (pr_.kind) {
            case Problem::Kind::all_sources: return out > 0 ? in : 0;
            case Problem::Kind::one_source_each_sink: return side[pr_.root] && out > 0 ? 1 : 0;
            case Problem::Kind::one_source_all_sinks: return side[pr_.root] ? out : 0;
        }
        return 0;
    }

    /// The best of the cuts around the given single processors (and their complements): a start
    /// for Newton's method (any set gives a valid start; a good one saves flows).
    /// (One set at least; then the limits are polled between sets: 2,048 orbits of mesh:128x128
    /// cost seconds.)
    std::optional<std::pair<Ratio, std::vector<char>>> start(const std::vector<std::uint32_t>& around) {
        std::optional<std::pair<Ratio, std::vector<char>>> best;
        std::vector<char> side(net_.vertices, 0);
        for (std::uint32_t v : around)
            for (bool complement : {false, true}) {
                if (best && stop()) return best;
                std::fill(side.begin(), side.end(), complement ? 1 : 0);
                side[v] = complement ? 0 : 1;
                if (complement)  // v's receiving gadget stays with v
                    for (const CapacityArc& a : net_.arcs)
                        if (a.to == v && a.from >= net_.topology_nodes) side[a.from] = 0;
                const std::uint64_t d = demand(side), c = cut_capacity(net_, side);
                if (d == 0 || c == 0) continue;
                Ratio r = Ratio::of(d, c);
                if (!best || best->first < r) best = std::pair{r, side};
            }
        return best;
    }

    /// allgather: x = p/q holds for sink t when the flow from a source giving every member q,
    /// arcs times p, reaches q |M| at t. Sinks are the orbit representatives; Newton's method
    /// restarts from the sink that failed.
    std::optional<BandwidthBound> all_sources() {
        const ProcessorOrbits orbits = processor_orbits(*in_.topology);
        auto st = start(orbits.representatives);
        if (!st) return std::nullopt;
        auto [x, side] = *st;
        const std::vector<std::uint32_t>& sinks = orbits.representatives;
        sinks_ = static_cast<std::uint32_t>(sinks.size());
        std::size_t at = 0, clean = 0;
        while (clean < sinks.size()) {
            if (flows_ > 0 && stop()) break;
            const std::uint32_t t = sinks[at];
            std::vector<std::int64_t> src(P_, 0);
            for (std::uint32_t v : pr_.members) src[v] = static_cast<std::int64_t>(x.den);
            const std::int64_t f = flow_.max_flow(x.num, src, {}, t);
            ++flows_;
            if (f < static_cast<std::int64_t>(x.den * pr_.members.size())) {
                std::vector<char> s = flow_.source_side();
                const std::uint64_t d = demand(s), c = cut_capacity(net_, s);
                COLLSCHED_ASSERT(c > 0 && x < Ratio::of(d, c));
                x = Ratio::of(d, c);
                side = std::move(s);
                clean = 0;
            } else {
                ++clean;
                at = (at + 1) % sinks.size();
            }
        }
        return finish(x, side, orbits.automorphisms);
    }

    /// broadcast, multicast, reduce: 1 / the least max flow from the root to a member.
    std::optional<BandwidthBound> one_source() {
        std::optional<std::pair<std::int64_t, std::vector<char>>> least;
        std::vector<std::int64_t> src(P_, 0);
        src[pr_.root] = FlowSolver::unbounded;
        for (std::uint32_t t : pr_.members) {
            if (t == pr_.root) continue;
            if (flows_ > 0 && stop()) break;
            const std::int64_t f = flow_.max_flow(1, src, {}, t);
            ++flows_;
            ++sinks_;
            if (!least || f < least->first) least = std::pair{f, flow_.source_side()};
        }
        if (!least || least->first <= 0) return std::nullopt;
        return finish(Ratio::of(1, static_cast<std::uint64_t>(least->first)), least->second, 0);
    }

    /// scatter, gather: the flow from the root to a super sink taking q from every other
    /// member, arcs times p, must reach q (|M| - 1).
    std::optional<BandwidthBound> scatter() {
        auto st = start({pr_.root});
        if (!st) return std::nullopt;
        auto [x, side] = *st;
        std::vector<std::int64_t> src(P_, 0);
        src[pr_.root] = FlowSolver::unbounded;
        for (;;) {
            if (flows_ > 0 && stop()) break;
            std::vector<std::int64_t> snk(P_, 0);
            std::int64_t need = 0;
            for (std::uint32_t v : pr_.members)
                if (v != pr_.root) snk[v] = static_cast<std::int64_t>(x.den), need += static_cast<std::int64_t>(x.den);
            const std::int64_t f = flow_.max_flow(x.num, src, snk, FlowSolver::super_sink);
            ++flows_;
            sinks_ = 1;
            if (f >= need) break;
            std::vector<char> s = flow_.source_side();
            const std::uint64_t d = demand(s), c = cut_capacity(net_, s);
            COLLSCHED_ASSERT(c > 0 && x < Ratio::of(d, c));
            x = Ratio::of(d, c);
            side = std::move(s);
        }
        return finish(x, side, 0);
    }

    BandwidthBound finish(Ratio x, const std::vector<char>& side, std::uint32_t automorphisms) const {
        const Topology& t = *in_.topology;
        CutCertificate cert;
        for (std::uint32_t v = 0; v < P_; ++v)
            if (side[v]) cert.inside.push_back(v);
        for (std::uint32_t v = P_; v < t.nodes(); ++v)
            if (side[v]) cert.routers.push_back(v);
        for (const CapacityArc& a : net_.arcs)
            if (side[a.from] && !side[a.to]) cert.crossing.push_back(net_.arc_text(t, a));
        cert.demand = demand(side);
        cert.capacity = cut_capacity(net_, side);
        COLLSCHED_ASSERT(Ratio::of(cert.demand, cert.capacity) == x);
        cert.reversed = pr_.reversed;
        cert.exact = net_.exact();
        cert.relaxations = net_.relaxations;
        cert.flows = flows_;
        cert.sinks = sinks_;
        cert.stopped = stopped_;
        std::vector<std::uint32_t> outside;
        for (std::uint32_t v = 0; v < P_; ++v)
            if (!side[v]) outside.push_back(v);
        std::vector<std::string> shown = cert.crossing;
        if (shown.size() > 8) {
            const std::size_t more = shown.size() - 8;
            shown.resize(8);
            shown.push_back(fmt::format("... ({} more)", more));
        }
        const char* leave = pr_.reversed ? "enter" : "leave";
        const char* start = pr_.reversed ? "end" : "start";
        std::string where = fmt::format("the set S of processors {}{}", runs_text(cert.inside),
                                        cert.routers.empty() ? std::string() : fmt::format(" and {} routers", cert.routers.size()));
        BandwidthBound b;
        b.rounds_per_chunk = x;
        b.name = "cut (max flow)";
        b.detail = fmt::format("{} {} {} inside {} (outside: {}) and must {} it; what {}s it per round is {} = {}: R/C >= {}/{}; "
                               "the largest such ratio over every set of nodes ({} max flows, {} {}{}){}",
                               cert.demand, pr_.data_word, start, where, runs_text(outside), leave, leave, fmt::join(shown, " + "),
                               cert.capacity, cert.demand, cert.capacity, flows_, sinks_, sinks_ == 1 ? "sink" : "sinks",
                               automorphisms ? fmt::format(", one per orbit of {} verified symmetries", automorphisms) : std::string(),
                               cert.exact ? std::string() : fmt::format("; a lower bound on a relaxed network: {}", fmt::join(cert.relaxations, "; ")));
        if (!stopped_.empty())
            b.detail += fmt::format("; the search stopped at the {} after {} max flows: the bound holds (the set is a cut), a larger "
                                    "ratio may exist",
                                    stopped_, flows_);
        b.certificate = std::move(cert);
        return b;
    }

    /// Whether a limit has been reached (then remembered in stopped_).
    bool stop() {
        if (stopped_.empty()) stopped_ = limits_.why();
        return !stopped_.empty();
    }

    const RunLimits& limits_;
    std::string stopped_;
    const SynthInstance& in_;
    const Problem& pr_;
    CapacityNetwork net_;
    FlowSolver flow_;
    std::uint32_t P_;
    std::uint32_t flows_ = 0, sinks_ = 0;
};

}  // namespace

std::optional<BandwidthBound> flow_bandwidth_bound(const SynthInstance& in, const RunLimits& limits) {
    if (in.model.timing != Timing::hop) return std::nullopt;
    std::optional<Problem> pr = problem_of(in);
    if (!pr || in.topology->processors() < 2) return std::nullopt;
    // The network's arcs: one per channel, and per group and port a few more; each arc costs
    // about 300 bytes in all (measured: complete:1024, 1.05 million channels, 314 MB peak).
    const Topology& t = *in.topology;
    std::uint64_t arcs = t.channels().size() + 2 * std::uint64_t{t.nodes()};
    for (const LinkGroup& g : t.groups()) arcs += 1 + g.channels.size();
    limits.reserve(mul_sat(arcs, 300), fmt::format("the flow network of {} arcs", arcs));
    limits.check("the flow bound");
    Search s(in, *pr, limits);
    return s.run();
}

}  // namespace collsched
