// nccl_ring_time_bound: NCCL's ring's time bounded from its routes (verifier/time/nccl_bounds.hpp).
//
// The two terms (moved from docs/time.md; the statement stays there):
//
// - **Busiest resource.** Ring position i's route carries `span x pieces` transfers (span = 2(P - 1)
//   allreduce, P - 1 otherwise). A channel or group holds each of its n transfers b / B, one at a time (rule
//   3), so its last leaves n b / B after its first started and arrives alpha later; the first cannot start
//   before its sender can hold data (0 at a processor; at a router the least sum of leg times from a
//   processor, a leg into a router that cuts through its latency and a packet). Time >= first + n b / B + alpha.
// - **Longest chain.** In runRing a chunk moves from position q + 1 through `span` positions. A reduction's
//   partial leaves a position (and each relay: PXN's GPU, a rail switch) only when every value of its chunk
//   that reached the sender earlier and may be part of it has arrived, and the leg before carries a subset
//   (at a forwarding router its departure waits for its crossing's copy): the chain is the sum of its legs, where
//   a router that cuts through (runtime/timing.hpp cuts_through) sends on once the copy's first packet is in and
//   ends its leg no earlier than the copy's arrival and its own latency.
//   An allgather's datum leaves a processor once a copy arrived in an earlier step (the earliest; a node not
//   reached counts 0: weaker, still a bound), or where one reached it again in a later step than its first (PXN's
//   relay, a route through a GPU of the next box) that copy, as runtime/timing.cpp relays_copy pairs them. A replicate=no router forwards this crossing's copy: crossings of one router come in
//   step order, each departure before the next arrival, so FIFO pairs each with its own (a multicasting
//   switch shares copies within a step only, so the same holds). Under replicate=yes a router is a relay.
#include "verifier/time/nccl_bounds.hpp"

#include <algorithm>
#include <limits>
#include <queue>

#include <fmt/format.h>

#include "compiler/topology/topology.hpp"
#include "support/assert.hpp"
#include "support/error.hpp"
#include "support/units.hpp"

namespace collsched {

namespace {

/// Per channel: how long a transfer of b bytes holds it at the least (its own and its groups'
/// bandwidth), the leg's time to arrival (that plus alpha) and to its first packet in (alpha and a
/// packet at the channel's speed); per node whether it cuts through (a router that only forwards).
struct Legs {
    std::vector<double> hold, leg, alpha, bandwidth, first;
    std::vector<double> group_bandwidth;
    std::vector<char> cut;
};

Legs legs_of(const Topology& t, const Model& model, double b, const TimeOptions& opt) {
    Legs l;
    for (std::uint32_t v = 0; v < t.nodes(); ++v) l.cut.push_back(cuts_through(t, model, Node{v}));
    const std::size_t E = t.channels().size();
    l.hold.resize(E), l.leg.resize(E), l.alpha.resize(E), l.bandwidth.resize(E);
    for (std::uint32_t g = 0; g < t.groups().size(); ++g) l.group_bandwidth.push_back(group_speed(t, g, opt));
    for (std::uint32_t e = 0; e < E; ++e) {
        const LinkSpeed s = channel_speed(t, ChannelId{e}, opt);
        double least = s.bandwidth;
        for (std::uint32_t g : t.groups_of(ChannelId{e})) least = std::min(least, l.group_bandwidth[g]);
        l.alpha[e] = s.alpha, l.bandwidth[e] = s.bandwidth;
        l.hold[e] = b / least;
        l.leg[e] = l.hold[e] + s.alpha;
        l.first.push_back(s.alpha + std::min(b, router_packet_bytes) / s.bandwidth);
    }
    return l;
}

std::string channel_name(const Topology& t, std::uint32_t e) {
    const Channel& c = t.channel(ChannelId{e});
    return fmt::format("{}->{}", t.node_name(c.from), t.node_name(c.to));
}

/// Per node, the earliest it can send any data: 0 at a processor, at a router the least sum of legs
/// from a processor (a router holds nothing at the start; Dijkstra over the legs), a leg into a
/// router that cuts through till its first packet is in.
std::vector<double> earliest_holding(const Topology& t, const Legs& l) {
    std::vector<double> d(t.nodes(), std::numeric_limits<double>::infinity());
    using Item = std::pair<double, std::uint32_t>;
    std::priority_queue<Item, std::vector<Item>, std::greater<>> q;
    for (std::uint32_t p = 0; p < t.processors(); ++p) d[p] = 0, q.push({0.0, p});
    while (!q.empty()) {
        const auto [at, u] = q.top();
        q.pop();
        if (at > d[u]) continue;
        for (ChannelId e : t.out_channels(Node{u}))
            if (const std::uint32_t v = idx(t.channel(e).to), w = l.cut[v] ? l.first[idx(e)] : l.leg[idx(e)]; at + w < d[v]) d[v] = at + w, q.push({d[v], v});
    }
    return d;
}

/// The busiest channel or group: n transfers of b bytes, each holding it b / B, none before its
/// sender can hold data, the last arriving alpha later.
RingTimeBound busiest(const Topology& t, const nccl::RingRoutes& r, std::uint32_t span, double b, const Legs& l) {
    const std::size_t E = t.channels().size(), G = t.groups().size();
    std::vector<std::uint64_t> on(E, 0), on_group(G, 0);
    for (const nccl::Ring& ring : r.rings)
        for (const auto& hop : ring.hops)
            for (ChannelId e : hop) {
                on[idx(e)] += std::uint64_t{span} * r.pieces;
                for (std::uint32_t g : t.groups_of(e)) on_group[g] += std::uint64_t{span} * r.pieces;
            }
    const std::vector<double> head = earliest_holding(t, l);
    auto from_head = [&](ChannelId e) { return head[idx(t.channel(e).from)]; };
    auto why = [&](std::string what, std::uint64_t n, double bandwidth, double first, double alpha) {
        std::string s = fmt::format("{} serves {} transfers of {} ({} each at {})", what, n, support::format_bytes(b),
                                    support::format_seconds(b / bandwidth), support::format_bandwidth(bandwidth));
        if (first > 0) s += fmt::format(", the first not before {} (its sender holds nothing before)", support::format_seconds(first));
        return s + fmt::format(", the last arriving {} later", support::format_seconds(alpha));
    };
    RingTimeBound best;
    for (std::uint32_t e = 0; e < E; ++e) {
        if (!on[e]) continue;
        const double first = from_head(ChannelId{e}), s = first + static_cast<double>(on[e]) * b / l.bandwidth[e] + l.alpha[e];
        if (s > best.seconds) best = {s, why("channel " + channel_name(t, e), on[e], l.bandwidth[e], first, l.alpha[e])};
    }
    for (std::uint32_t g = 0; g < G; ++g) {
        if (!on_group[g]) continue;
        double alpha = std::numeric_limits<double>::infinity(), first = alpha;
        for (ChannelId e : t.groups()[g].channels)
            if (on[idx(e)]) alpha = std::min(alpha, l.alpha[idx(e)]), first = std::min(first, from_head(e));
        const double s = first + static_cast<double>(on_group[g]) * b / l.group_bandwidth[g] + alpha;
        if (s > best.seconds) best = {s, why("link group " + t.groups()[g].name, on_group[g], l.group_bandwidth[g], first, alpha)};
    }
    return best;
}

/// A route's time from its sender's start to the arrival at its end: each leg starts once the leg before
/// arrived, or, out of a router that cuts through, once its first packet was in, arriving no earlier than
/// the leg before's arrival and its own latency.
double route_time(const Topology& t, const std::vector<ChannelId>& hops, const Legs& l) {
    double arrive = 0, first = 0;
    for (std::size_t i = 0; i < hops.size(); ++i) {
        const std::uint32_t e = idx(hops[i]);
        const bool cut = i > 0 && l.cut[idx(t.channel(hops[i]).from)];
        const double start = i == 0 ? 0.0 : cut ? first : arrive;
        first = start + l.first[e];
        arrive = cut ? std::max(start + l.leg[e], arrive + l.alpha[e]) : start + l.leg[e];
    }
    return arrive;
}

/// Reductions: a chunk's partial leaves position i only once the partial of the leg before has
/// arrived there (it is among the values of the chunk that reached i before and may be part of
/// it), through every relay: the chain is the sum of its routes' times, over `span` consecutive positions.
RingTimeBound reduction_chain(const Topology& t, const nccl::RingRoutes& r, std::uint32_t span, const Legs& l) {
    RingTimeBound best;
    for (std::size_t k = 0; k < r.rings.size(); ++k) {
        const nccl::Ring& ring = r.rings[k];
        const std::size_t P = ring.hops.size();
        const std::size_t n = P + span;  // a chain from any position, around the ring as far as it goes
        std::vector<double> sum(n + 1, 0);  // prefix sums of the positions' legs
        std::vector<std::size_t> legs(n + 1, 0);
        for (std::size_t i = 0; i < n; ++i) {
            sum[i + 1] = sum[i] + route_time(t, ring.hops[i % P], l);
            legs[i + 1] = legs[i] + ring.hops[i % P].size();
        }
        for (std::size_t p = 0; p < P; ++p)
            if (const double s = sum[p + span] - sum[p]; s > best.seconds)
                best = {s, fmt::format("the chain of a chunk's partial along ring {} from position {}: {} legs one after the other", k, p,
                                       legs[p + span] - legs[p])};
    }
    return best;
}

/// Allgather: a datum leaves a processor as the timing plan lets it (runtime/timing.cpp): once a copy of it arrived in
/// an earlier step, or, where a copy reached it again in a later step than its first (a PXN relay's u -> d, or a route
/// through a GPU of the next box), that copy, each such once and in step order (relays_copy); the steps as ring_table
/// numbers them (hop k of position i's route in step i x L + k, L the longest route), the arrivals along the flow
/// from below. A router that keeps what it receives (replicate=yes) forwards its earliest copy; one that forwards each
/// copy once (replicate=no, multicasting or not) sends the copy of this crossing: the ring's crossings of a router come
/// in step order, each departure before the next crossing's arrival (that needs it), so first in, first out pairs each
/// departure with its own crossing's arrival.
RingTimeBound allgather_chain(const Topology& t, const nccl::RingRoutes& r, std::uint32_t span, const Legs& l,
                              bool routers_keep) {
    RingTimeBound best;
    constexpr double none = std::numeric_limits<double>::infinity();
    std::vector<double> arrived(t.nodes(), none);
    struct Copy {
        std::size_t step = 0;
        double at = 0;
    };
    std::vector<std::vector<Copy>> copies(t.nodes());
    std::vector<std::size_t> next(t.nodes(), 0);  // per processor: its next copy to relay (0: not yet found)
    std::vector<Node> touched;
    std::size_t L = 1;
    for (const nccl::Ring& ring : r.rings)
        for (const auto& h : ring.hops) L = std::max(L, h.size());
    // a processor's departure in step `step`: the copy it relays, else its earliest (0 if none: weaker, still a bound)
    auto held = [&](Node u, std::size_t step) {
        std::vector<Copy>& a = copies[idx(u)];
        if (a.empty()) return 0.0;
        std::size_t& n = next[idx(u)];
        if (n == 0)
            for (n = 1; n < a.size() && a[n].step == a.front().step;) ++n;
        if (n < a.size() && a[n].step < step) return a[n++].at;
        return arrived[idx(u)];
    };
    for (std::size_t k = 0; k < r.rings.size(); ++k) {
        const nccl::Ring& ring = r.rings[k];
        const std::size_t P = ring.hops.size();
        for (std::size_t p = 0; p < P; ++p) {
            const Node source = ring.order[p];
            double last = 0;
            for (std::size_t i = p; i < p + span; ++i) {
                double carried = 0, head = 0;  // this crossing's arrival at the node it leaves next, and its first packet's
                const std::vector<ChannelId>& hop = ring.hops[i % P];
                for (std::size_t h = 0; h < hop.size(); ++h) {
                    const ChannelId e = hop[h];
                    const Channel& c = t.channel(e);
                    const std::size_t step = (i - p) * L + h;
                    // ready: held at the start; at a router that forwards copies, this crossing's (cutting through: its
                    // first packet in, ending no earlier than it arrived); at a processor, what it may send (held)
                    const bool own = !t.is_processor(c.from) && !routers_keep, cut = own && l.cut[idx(c.from)];
                    const double ready = c.from == source ? 0
                                         : cut            ? head
                                         : own            ? carried
                                         : t.is_processor(c.from) ? held(c.from, step)
                                                                  : (arrived[idx(c.from)] == none ? 0 : arrived[idx(c.from)]);
                    const double at = cut ? std::max(ready + l.leg[idx(e)], carried + l.alpha[idx(e)]) : ready + l.leg[idx(e)];
                    head = ready + l.first[idx(e)];
                    carried = at;
                    if (arrived[idx(c.to)] == none) touched.push_back(c.to);
                    arrived[idx(c.to)] = std::min(arrived[idx(c.to)], at);
                    if (t.is_processor(c.to)) copies[idx(c.to)].push_back({step, at});
                    last = std::max(last, arrived[idx(c.to)]);
                }
            }
            if (last > best.seconds) best = {last, fmt::format("the first copies of a datum along ring {} from position {}", k, p)};
            for (Node n : touched) {
                arrived[idx(n)] = none;
                copies[idx(n)].clear();
                next[idx(n)] = 0;
            }
            touched.clear();
        }
    }
    return best;
}

}  // namespace

RingTimeBound nccl_ring_time_bound(const Topology& t, const Model& model, CollectiveKind kind, const nccl::RingRoutes& r,
                                   const TimeOptions& given) {
    const TimeOptions opt = with_network_class(t, given);  // as the prediction takes the speeds (a protocol's network latency)
    const std::uint32_t P = t.processors(), K = static_cast<std::uint32_t>(r.rings.size());
    if (kind != CollectiveKind::allreduce && kind != CollectiveKind::allgather && kind != CollectiveKind::reduce_scatter)
        throw InputError("NCCL's ring runs allreduce, allgather and reduce_scatter");
    COLLSCHED_ASSERT_MSG(K > 0 && r.pieces > 0, "a ring and a piece at least");
    const std::uint32_t span = kind == CollectiveKind::allreduce ? 2 * (P - 1) : P - 1;
    const double C = static_cast<double>(K) * r.pieces * (kind == CollectiveKind::allgather ? 1 : P);
    const double b = datum_bytes(kind, P, opt.size) / C;
    const Legs l = legs_of(t, model, b, opt);
    RingTimeBound load = busiest(t, r, span, b, l);
    // as the timing plan pairs a router's departures with copies (runtime/timing.cpp, takes_copy; a multicasting
    // switch shares a copy among the departures of one step only, and the ring's crossings are in different steps)
    RingTimeBound chain = kind == CollectiveKind::allgather ? allgather_chain(t, r, span, l, model.replicate) : reduction_chain(t, r, span, l);
    RingTimeBound bound = load.seconds >= chain.seconds ? load : chain;
    // rounded down: where the bound is exact (the busiest channel saturated from the start), summing
    // in another order than the prediction's may land a few ulps above the predicted time
    bound.seconds *= 1 - 1e-12;
    return bound;
}

}  // namespace collsched
