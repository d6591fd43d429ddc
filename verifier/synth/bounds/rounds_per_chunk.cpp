// Lower bounds on rounds per chunk by counting (rounds_per_chunk.hpp): cuts, hops, and for
// reductions what must reach and leave each processor.
#include "verifier/synth/bounds/rounds_per_chunk.hpp"

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "support/budget.hpp"
#include "verifier/synth/bounds/bandwidth.hpp"
#include "verifier/synth/problem/network.hpp"

namespace collsched {

namespace {

/// One datum of the unsplit collective: where it starts and where it must end.
struct Datum {
    Node origin;
    std::vector<Node> goals;
};

std::vector<Datum> data_of(const SynthInstance& in) {
    const std::uint32_t P = in.topology->processors();
    Collective whole = in.collective;
    whole.chunks = 1;
    Messages ms = whole.messages(P);
    std::vector<Datum> out;
    std::optional<MessageId> cur;
    whole.for_each_goal(P, [&](MessageId m, Node d) {
        if (cur != m) out.push_back({ms.origin(m), {}});
        cur = m;
        out.back().goals.push_back(d);
    });
    return out;
}

/// "{0, 1, 5}" for a set of processors.
std::string set_text(const std::vector<std::uint32_t>& xs) { return fmt::format("{{{}}}", fmt::join(xs, ", ")); }

/// The capacity per round across a cut (into X, or out of it): synth::step_capacity of the
/// crossing channels (ports at both ends, link groups).
std::uint64_t cut_capacity(const SynthInstance& in, const std::vector<char>& inside, bool into) {
    return synth::step_capacity(*in.topology, in.model.ports, synth::crossing_channels(*in.topology, inside, into)).hops;
}

}  // namespace

std::optional<BandwidthBound> enumerated_cut_bound(const SynthInstance& in, Clock::time_point deadline) {
    const Topology& t = *in.topology;
    const std::uint32_t P = t.processors();
    const std::vector<Datum> data = data_of(in);
    if (data.empty()) return std::nullopt;
    const bool personal = in.collective.row().personalized();

    // Cuts: every set of processors when P <= 16, else each processor, each complement of one,
    // and the balls around each processor.
    std::vector<std::vector<std::uint32_t>> sets;
    if (P <= 16) {
        for (std::uint32_t mask = 1; mask + 1 < (1u << P); ++mask) {
            std::vector<std::uint32_t> xs;
            for (std::uint32_t p = 0; p < P; ++p)
                if (mask >> p & 1u) xs.push_back(p);
            sets.push_back(std::move(xs));
        }
    } else {
        for (std::uint32_t p = 0; p < P && Clock::now() < deadline; ++p) {
            sets.push_back({p});
            std::vector<std::uint32_t> rest;
            for (std::uint32_t q = 0; q < P; ++q)
                if (q != p) rest.push_back(q);
            sets.push_back(std::move(rest));
            std::vector<std::uint32_t> d = synth::bfs_distances(t, Node{p});
            for (std::uint32_t r = 1; r <= 4; ++r) {
                std::vector<std::uint32_t> ball;
                for (std::uint32_t q = 0; q < P; ++q)
                    if (d[q] <= r) ball.push_back(q);
                if (ball.size() < P) sets.push_back(std::move(ball));
            }
        }
    }
    std::optional<BandwidthBound> best_cut;
    std::vector<char> inside(t.nodes(), 0);
    for (const auto& xs : sets) {
        if (Clock::now() >= deadline) break;  // the cuts counted so far still prove their bounds
        std::fill(inside.begin(), inside.end(), 0);
        for (std::uint32_t p : xs) inside[p] = 1;
        for (bool into : {true, false}) {
            std::uint64_t demand = 0;
            for (const Datum& d : data) {
                const bool from_inside = inside[idx(d.origin)] != 0;
                if (into == from_inside) continue;
                bool needed = false;
                for (Node g : d.goals)
                    if ((inside[idx(g)] != 0) == into) needed = true;
                demand += needed ? 1 : 0;
            }
            if (demand == 0) continue;
            const std::uint64_t cap = cut_capacity(in, inside, into);
            if (cap == 0) continue;  // no schedule at all; the step bounds say so
            Ratio r = Ratio::of(demand, cap);
            if (best_cut && r <= best_cut->rounds_per_chunk) continue;
            best_cut = BandwidthBound{
                r, "cut",
                fmt::format("{} {} start {} the processor set {} and must {} it; the channels {} it carry {} chunks per round{}: "
                            "R/C >= {}/{}",
                            demand, personal ? (demand == 1 ? "message" : "messages") : (demand == 1 ? "datum" : "data"),
                            into ? "outside" : "inside", set_text(xs), into ? "enter" : "leave", into ? "into" : "out of", cap,
                            in.model.ports != Ports::multi ? " (at most one per processor under its port limit)" : "", demand, cap)};
        }
    }
    return best_cut;
}

std::vector<BandwidthBound> bandwidth_bounds(const SynthInstance& in, Clock::time_point deadline) {
    const Topology& t = *in.topology;
    const std::uint32_t P = t.processors();
    std::vector<BandwidthBound> out;
    if (encoding_for(in) == EncodingKind::combining) {
        // Reductions (docs/synthesis.md, "The direct encoding of combining"): every chunk a
        // processor must complete arrives there at least once, and every chunk whose
        // contribution another processor needs leaves its source at least once; a round
        // carries at most the cut's capacity into (out of) the processor.
        Collective whole = in.collective;
        whole.chunks = 1;
        std::vector<char> needs(P, 0), gives(P, 0);
        whole.for_each_partial_goal(P, 1, [&](std::uint32_t, std::uint32_t hi, Node p) {
            if (hi > 0 || idx(p) != 0) needs[idx(p)] = 1;
            for (std::uint32_t s = 0; s <= hi; ++s)
                if (s != idx(p)) gives[s] = 1;
        });
        std::optional<BandwidthBound> best;
        std::vector<char> inside(t.nodes(), 0);
        for (std::uint32_t p = 0; p < P; ++p)
            for (bool into : {true, false}) {
                if (!(into ? needs[p] : gives[p])) continue;
                std::fill(inside.begin(), inside.end(), 0);
                inside[p] = 1;
                const std::uint64_t cap = cut_capacity(in, inside, into);
                if (cap == 0) continue;
                Ratio r = Ratio::of(1, cap);
                if (best && r <= best->rounds_per_chunk) continue;
                best = BandwidthBound{r, into ? "receptions" : "departures",
                                      fmt::format("every chunk must {} processor {} at least once as a partial and at most {} {} it "
                                                  "per round: R/C >= 1/{}",
                                                  into ? "reach" : "leave", p, cap, into ? "enter" : "leave", cap)};
            }
        if (best) out.push_back(*best);
        return out;
    }
    const std::vector<Datum> data = data_of(in);
    if (data.empty()) return out;
    const bool personal = in.collective.row().personalized();
    // The largest cut bound over every node set by max flow where the demand is a flow
    // (verifier/synth/bounds/bandwidth.hpp); alltoall keeps the enumerated processor sets.
    // (At the deadline the flows stop with the best cut so far, still a proved bound.)
    std::optional<BandwidthBound> flow;
    try {
        flow = flow_bandwidth_bound(in, RunLimits{Deadline::at(deadline), {}});
    } catch (const LimitReached&) {
    }
    if (flow) out.push_back(std::move(*flow));
    else if (auto cut = enumerated_cut_bound(in, deadline)) out.push_back(std::move(*cut));

    if (personal) {
        // Hops: every chunk of m(s,d) makes at least dist(s,d) hops; a round carries at most
        // the sum of all capacities (and, without routers under port limits, one send per
        // processor, or P/2 transfers under half duplex).
        std::uint64_t hops = 0;
        for (const Datum& d : data) {
            std::vector<std::uint32_t> dist = synth::bfs_distances(t, d.origin);
            for (Node g : d.goals) hops += dist[idx(g)];
        }
        std::uint64_t cap = 0;
        for (const Channel& ch : t.channels()) cap += ch.cap;
        if (t.routers() == 0 && in.model.ports == Ports::single) cap = std::min<std::uint64_t>(cap, P);
        if (t.routers() == 0 && in.model.ports == Ports::half) cap = std::min<std::uint64_t>(cap, P / 2);
        if (cap > 0 && hops > 0)
            out.push_back({Ratio::of(hops, cap), "hops",
                           fmt::format("the messages need {} hops at least (sum of distances) and a round carries at most {}: R/C >= {}/{}",
                                       hops, cap, hops, cap)});
    }
    std::sort(out.begin(), out.end(), [](const BandwidthBound& a, const BandwidthBound& b) { return b.rounds_per_chunk < a.rounds_per_chunk; });
    return out;
}

}  // namespace collsched
