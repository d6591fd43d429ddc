// The bound on the rings an NCCL graph file holds (verifier/time/ring_bound.hpp; the proof:
// verifier/time/OBJECTIVE.md, "The rings of a graph file").
#include "verifier/time/ring_bound.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <numeric>
#include <queue>
#include <set>

#include <fmt/format.h>

#include "compiler/formats/export_nccl_graph.hpp"
#include "support/error.hpp"
#include "support/units.hpp"
#include "verifier/synth/symmetry/processor_orbits.hpp"
#include "verifier/time/weighted_network.hpp"

namespace collsched {

using time_internal::WeightedNetwork;

std::optional<RingFamily> ring_family(const Topology& t, CollectiveKind k) {
    const std::uint32_t P = t.processors();
    if (P < 2) return std::nullopt;
    RingFamily f;
    const double share = (P - 1.0) / P;
    switch (k) {
        case CollectiveKind::allgather:
        case CollectiveKind::reduce_scatter: f.demand = share, f.demand_text = fmt::format("(P-1)/P = {}/{}", P - 1, P); break;
        case CollectiveKind::allreduce:
            f.demand = 2 * share, f.demand_text = fmt::format("2(P-1)/P = {}/{}", 2 * (P - 1), P), f.passes = 2;
            break;
        default: return std::nullopt;
    }
    for (std::uint32_t g = 0; g < P; ++g) f.sets.push_back({g}), f.names.push_back(fmt::format("GPU {}", g));
    try {
        const NcclBoxes b = nccl_graph_boxes(t);
        if (b.count >= 2)
            for (std::uint32_t k2 = 0; k2 < b.count; ++k2) {
                std::vector<std::uint32_t> s;
                for (Node n : b.members[k2]) s.push_back(idx(n));
                f.names.push_back(fmt::format("box {} (GPUs {})", k2, support::runs_text(s)));
                f.sets.push_back(std::move(s));
            }
    } catch (const InputError&) {  // boxes of different sizes: no graph file, the processors' sets alone
    }
    return f;
}

namespace {

/// One message's transfers as a graph of the nodes they touch: per local node its arcs (local head, transfers on
/// that channel); `local` maps a node to its index.
struct MessageGraph {
    std::map<std::uint32_t, std::uint32_t> local;
    std::vector<std::uint32_t> node;                                          ///< per local index, the node
    std::vector<std::vector<std::pair<std::uint32_t, std::uint32_t>>> arcs;  ///< per local index: (head, transfers)
    std::uint32_t at(std::uint32_t n) {
        auto [it, fresh] = local.try_emplace(n, static_cast<std::uint32_t>(node.size()));
        if (fresh) node.push_back(n), arcs.emplace_back();
        return it->second;
    }
};

/// The most transfers of the message that any region holding the processors `in(v)` and no other processor must let
/// out: a max flow from those processors to the others, each arc the number of the message's transfers on it (every
/// path from one to another leaves the region by one of them: a cut of the flow). Augmenting paths by breadth first.
std::uint32_t transfers_out(const MessageGraph& g, const Topology& topo, const std::vector<char>& in) {
    const std::uint32_t N = static_cast<std::uint32_t>(g.node.size()), S = N, T = N + 1;
    constexpr std::uint32_t inf = 1u << 30;
    std::vector<std::vector<std::uint32_t>> adj(N + 2);  // indices into head/cap
    std::vector<std::uint32_t> head;
    std::vector<std::uint32_t> cap;
    auto arc = [&](std::uint32_t u, std::uint32_t v, std::uint32_t c) {
        adj[u].push_back(static_cast<std::uint32_t>(head.size())), head.push_back(v), cap.push_back(c);
        adj[v].push_back(static_cast<std::uint32_t>(head.size())), head.push_back(u), cap.push_back(0);
    };
    for (std::uint32_t u = 0; u < N; ++u) {
        for (auto [v, c] : g.arcs[u]) arc(u, v, c);
        if (topo.is_processor(Node{g.node[u]})) in[g.node[u]] ? arc(S, u, inf) : arc(u, T, inf);
    }
    std::uint32_t flow = 0;
    for (;;) {
        std::vector<std::int64_t> via(N + 2, -1);  // the arc that reached each node
        std::vector<std::uint32_t> queue{S};
        via[S] = -2;
        for (std::size_t k = 0; k < queue.size() && via[T] == -1; ++k)
            for (std::uint32_t a : adj[queue[k]])
                if (cap[a] > 0 && via[head[a]] == -1) via[head[a]] = a, queue.push_back(head[a]);
        if (via[T] == -1) return flow;
        std::uint32_t push = inf;
        for (std::uint32_t v = T; v != S; v = head[static_cast<std::size_t>(via[v]) ^ 1]) push = std::min(push, cap[static_cast<std::size_t>(via[v])]);
        for (std::uint32_t v = T; v != S; v = head[static_cast<std::size_t>(via[v]) ^ 1])
            cap[static_cast<std::size_t>(via[v])] -= push, cap[static_cast<std::size_t>(via[v]) ^ 1] += push;
        flow += push;
    }
}

/// "" when every copy of the message that reaches a router leaves it again (as many departures as arrivals at each
/// router): then a transfer a cut counts reaches a processor after its head, as the cut rule's onward latency
/// assumes (a verified table under replicate=no matches each departure with an arrival of its own). Else the router.
std::string copy_left_at_router(const MessageGraph& g, const Topology& topo, const std::string& message) {
    const std::size_t N = g.node.size();
    std::vector<std::uint64_t> arrivals(N, 0), departures(N, 0);
    for (std::size_t u = 0; u < N; ++u)
        for (auto [v, c] : g.arcs[u]) departures[u] += c, arrivals[v] += c;
    for (std::size_t u = 0; u < N; ++u)
        if (!topo.is_processor(Node{g.node[u]}) && arrivals[u] > departures[u])
            return fmt::format("{} copies of {} reach router {} and {} leave it (a copy a cut counts must go on to a processor)",
                               arrivals[u], message, topo.node_name(Node{g.node[u]}), departures[u]);
    return "";
}

}  // namespace

std::string ring_family_miss(const SendTable& t, const RingFamily& f) {
    const Topology& topo = *t.topology;
    const std::uint32_t P = topo.processors();
    const std::size_t N = f.sets.size();
    std::vector<std::vector<char>> member(N, std::vector<char>(P, 0));
    for (std::size_t s = 0; s < N; ++s)
        for (std::uint32_t v : f.sets[s]) member[s][v] = 1;
    const Messages ms = t.messages();
    // a message's bytes per byte of M: its chunks (a bundle its parts') of a datum / C (runtime/timing.cpp)
    const double unit = datum_bytes(t.collective.kind, P, 1.0) / ms.chunks();
    std::map<std::uint32_t, MessageGraph> graphs;  // per message
    for (const Transfer& x : t.transfers) {
        const Channel& c = topo.channel(x.channel);
        MessageGraph& g = graphs[idx(x.message)];
        const std::uint32_t u = g.at(idx(c.from)), v = g.at(idx(c.to));
        auto it = std::find_if(g.arcs[u].begin(), g.arcs[u].end(), [&](const auto& a) { return a.first == v; });
        if (it == g.arcs[u].end()) g.arcs[u].emplace_back(v, 1);
        else ++it->second;
    }
    std::vector<double> out(N, 0.0), in(N, 0.0);
    std::vector<char> inside(P, 0), outside(P, 0);
    for (const auto& [m, g] : graphs)
        if (std::string dead = copy_left_at_router(g, topo, ms.name(MessageId{m})); !dead.empty()) return dead;
    for (const auto& [m, g] : graphs) {
        const std::uint32_t parts = ms.part_count(MessageId{m});
        std::set<std::uint32_t> touched;  // the sets with a processor the message is sent from or to
        for (std::uint32_t n : g.node)
            if (n < P)
                for (std::size_t s = 0; s < N; ++s)
                    if (member[s][n]) touched.insert(static_cast<std::uint32_t>(s));
        for (std::uint32_t s : touched) {
            for (std::uint32_t v = 0; v < P; ++v) inside[v] = member[s][v], outside[v] = !member[s][v];
            out[s] += unit * parts * transfers_out(g, topo, inside);
            in[s] += unit * parts * transfers_out(g, topo, outside);
        }
    }
    for (std::size_t s = 0; s < N; ++s)
        for (bool leaving : {true, false})
            if (const double got = leaving ? out[s] : in[s]; got < f.demand * (1 - 1e-9))
                return fmt::format("messages of {:.6g} x M bytes {} {}, below the family's {} x M", got, leaving ? "leave" : "enter", f.names[s],
                                   f.demand_text);
    return "";
}

void add_ring_terms(TimeBounds& bounds, const Topology& t, const Model& m, const TimeOptions& speeds, const RingFamily& f, const RunLimits& limits) {
    const TimeOptions sp = with_network_class(t, speeds);
    limits.check("the flow network of the rings' cuts");
    WeightedNetwork n(t, m, sp, false);
    std::vector<double> onward = time_internal::alpha_to_processors(t, sp);
    // under replicate=yes or multicast=routers a departure needs only a router's first copy (of its step): a later one
    // a cut counts may stop there
    if (m.replicate || m.multicast_routers)
        for (std::uint32_t v = t.processors(); v < onward.size(); ++v) onward[v] = 0;
    const std::uint32_t P = t.processors();
    // a processor's cuts are those of its orbit's least processor (a verified symmetry keeps every speed): one each
    const ProcessorOrbits orbits = processor_orbits(t, limits);
    for (std::size_t s = 0; s < f.sets.size(); ++s) {
        if (f.sets[s].size() == 1 && orbits.orbit[f.sets[s][0]] != f.sets[s][0]) continue;
        std::vector<char> in(P, 0);
        for (std::uint32_t v : f.sets[s]) in[v] = 1;
        std::vector<std::uint32_t> rest;
        for (std::uint32_t v = 0; v < P; ++v)
            if (!in[v]) rest.push_back(v);
        if (rest.empty()) continue;
        for (bool leaving : {true, false}) {
            TimeTerm term;
            const std::vector<char> side = leaving ? n.region(f.sets[s], rest, bounds.max_flows, limits) : n.region(rest, f.sets[s], bounds.max_flows, limits);
            n.crossing(side, term, &onward);
            term.name = fmt::format("rings of a graph file: {} {}", leaving ? "out of" : "into", f.names[s]);
            term.demand = f.demand;
            term.inside = f.sets[s];
            term.detail = fmt::format("in every ring an NCCL graph file holds, messages of {} x M bytes {} {} (each channel's share passes every "
                                      "hop but one of its chunks'; verifier/time/OBJECTIVE.md, \"The rings of a graph file\"); the least cut "
                                      "(max flow) is {} = {}",
                                      f.demand_text, leaving ? "leave" : "enter", f.names[s], fmt::join(term.crossing, " + "),
                                      support::format_bandwidth(term.bandwidth()));
            bounds.terms.push_back(std::move(term));
        }
    }
    // NCCL's per-GPU cap (LL's llMaxBw): a resource of the sending GPU that every transfer out of it holds for its bytes at
    // the cap (AsyncRun::start; sync_time: a step lasts at least the bytes each GPU sends in it over the cap). Every path of
    // a message from a processor v to another starts on a channel out of v, so a table of F sends at least d x M bytes
    // out of every processor, one transfer after another through its cap (OBJECTIVE.md, "The rings of a graph file")
    if (const double cap = sp.executor ? sp.executor->caps.gpu : 0.0; cap > 0) {
        TimeTerm term;
        term.name = "rings of a graph file: every GPU's sends at NCCL's cap per GPU";
        term.demand = f.demand;
        term.arcs = {CutArc{cap, 0.0}};
        term.crossing = {fmt::format("NCCL's cap on what a GPU sends ({})", support::format_bandwidth(cap))};
        term.detail = fmt::format("in every ring an NCCL graph file holds, every GPU sends messages of {} x M bytes (every path out of it starts "
                                  "on one of its channels), each transfer holding the GPU's cap for its bytes ({}: NCCL's llMaxBw, "
                                  "src/graph/tuning.cc; verifier/time/OBJECTIVE.md, \"The rings of a graph file\")",
                                  f.demand_text, support::format_bandwidth(cap));
        bounds.terms.push_back(std::move(term));
    }
}

}  // namespace collsched

namespace collsched {

std::optional<TimeTerm> ring_chain_term(const Topology& t, const TimeOptions& speeds, const RingFamily& f) {
    const std::vector<double> w = chain_weights(t, speeds);
    const std::uint32_t P = t.processors(), N = t.nodes();
    constexpr double inf = std::numeric_limits<double>::infinity();
    std::vector<std::vector<std::pair<std::uint32_t, double>>> out(N);
    for (std::uint32_t c = 0; c < w.size(); ++c) {
        const Channel& ch = t.channel(ChannelId{c});
        out[idx(ch.from)].emplace_back(idx(ch.to), w[c]);
    }
    // the boxes of the family (after its P processors' sets): every ring crosses between them at least once a box
    std::vector<std::uint32_t> box(P, 0);
    const std::uint32_t boxes = f.sets.size() > P ? static_cast<std::uint32_t>(f.sets.size() - P) : 1;
    for (std::uint32_t k = 1; k < boxes; ++k)
        for (std::uint32_t v : f.sets[P + k]) box[v] = k;
    // h: the least route out of each processor to another, g: into it (Dijkstra from each processor, through any node);
    // hx, gx: the same to and from another box
    std::vector<double> h(P, inf), g(P, inf), hx(P, inf), gx(P, inf);
    for (std::uint32_t s = 0; s < P; ++s) {
        std::vector<double> d(N, inf);
        std::priority_queue<std::pair<double, std::uint32_t>, std::vector<std::pair<double, std::uint32_t>>, std::greater<>> q;
        d[s] = 0, q.emplace(0.0, s);
        while (!q.empty()) {
            const auto [at, u] = q.top();
            q.pop();
            if (at > d[u]) continue;
            for (const auto& [v, len] : out[u])
                if (at + len < d[v]) d[v] = at + len, q.emplace(d[v], v);
        }
        for (std::uint32_t v = 0; v < P; ++v) {
            if (v != s) h[s] = std::min(h[s], d[v]), g[v] = std::min(g[v], d[v]);
            if (box[v] != box[s]) hx[s] = std::min(hx[s], d[v]), gx[v] = std::min(gx[v], d[v]);
        }
    }
    if (std::ranges::any_of(h, [](double x) { return !std::isfinite(x); }) || std::ranges::any_of(g, [](double x) { return !std::isfinite(x); }))
        return std::nullopt;
    const double H = std::accumulate(h.begin(), h.end(), 0.0), G = std::accumulate(g.begin(), g.end(), 0.0);
    std::vector<double> hs = h, gs = g;
    std::ranges::sort(hs, std::greater<>()), std::ranges::sort(gs, std::greater<>());
    // a ring's cycle crosses between the boxes at least once a box, so a pass (the cycle less one hop) at least boxes - 1
    // times, each crossing out of (into) its own processor: at least the boxes - 1 least extras hx - h (gx - g) over it
    const auto least_extras = [&](const std::vector<double>& cross, const std::vector<double>& near) {
        std::vector<double> x;
        for (std::uint32_t v = 0; v < P; ++v) x.push_back(std::isfinite(cross[v]) ? cross[v] - near[v] : 0.0);
        std::ranges::sort(x);
        return std::accumulate(x.begin(), x.begin() + (boxes - 1), 0.0);
    };
    const double XO = least_extras(hx, h), XI = least_extras(gx, g);
    double latency = 0;
    std::string how;
    if (f.passes == 1) {
        latency = std::max(H - hs[0] + XO, G - gs[0] + XI);
        how = "the share of origin s (reduce_scatter: block s) passes every hop of its ring but one, so at least the sum of the least latencies "
              "out of every processor but one (into every processor but one), and at least boxes - 1 of those hops cross between boxes";
    } else {
        double hg = 0;
        for (std::uint32_t v = 0; v < P; ++v) hg = std::max(hg, h[v] + g[v]);
        latency = std::max({2 * H - hs[0] - hs[1] + 2 * XO, 2 * G - gs[0] - gs[1] + 2 * XI, H + G - hg + XO + XI});
        how = "block b's partials pass every hop of its ring but the one out of b, then its sum every hop but the one into b, each pass crossing "
              "between boxes at least boxes - 1 times";
    }
    TimeTerm term;
    term.name = fmt::format("rings of a graph file: a share's {} hops one after another", f.passes == 1 ? "P-1" : "2(P-1)");
    term.latency = latency;
    term.detail = fmt::format("in every ring an NCCL graph file holds {} (verifier/time/OBJECTIVE.md, \"The chain of a ring\"); the least latency of a "
                              "hop out of a processor sums to {} over the processors (the largest {}), into one to {} (the largest {}); "
                              "crossing to another of the {} boxes adds at least {} out of and {} into the {} least: {}; "
                              "each table of the run is checked to have a chain this long",
                              how, support::format_seconds(H), support::format_seconds(hs[0]), support::format_seconds(G), support::format_seconds(gs[0]),
                              boxes, support::format_seconds(XO), support::format_seconds(XI), boxes - 1, support::format_seconds(latency));
    return term;
}

}  // namespace collsched
