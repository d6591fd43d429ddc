// A lower bound on a table's asynchronous time without its timing plan (candidates.hpp, table_time_bound): the loads of
// its channels and link groups, and the earliest each transfer can start along its chains of data and program order.
#include <algorithm>
#include <limits>

#include "verifier/time/candidates.hpp"

namespace collsched {

namespace {

/// At most this many (node, chunk) entries for the chains (one double each): larger tables get the loads' bound only.
constexpr std::uint64_t most_entries = std::uint64_t{1} << 23;

/// What the bound reads of the table once, whatever the size: per transfer its chunks moved, per channel and group the
/// chunks and the least latency of their channels.
struct Loads {
    std::vector<std::uint32_t> moved;      // per transfer
    std::vector<double> load, alpha;       // per channel, then per group
};

Loads loads_of(const SendTable& t, const Messages& ms, const std::vector<LinkSpeed>& speed) {
    const Topology& topo = *t.topology;
    const std::size_t E = topo.channels().size(), G = topo.groups().size();
    Loads l{{}, std::vector<double>(E + G, 0.0), std::vector<double>(E + G, std::numeric_limits<double>::infinity())};
    l.moved.reserve(t.transfers.size());
    for (const Transfer& x : t.transfers) {
        std::uint32_t n = 0;
        ms.for_each_part(x.message, [&](MessageId) { ++n; });
        l.moved.push_back(n);
        const std::uint32_t c = idx(x.channel);
        l.load[c] += n, l.alpha[c] = std::min(l.alpha[c], speed[c].alpha);
        for (std::uint32_t g : topo.groups_of(x.channel)) l.load[E + g] += n, l.alpha[E + g] = std::min(l.alpha[E + g], speed[c].alpha);
    }
    return l;
}

/// The chunk of a value-like part (a value, a partial, a combined value; as the timing plan reads them), and whether the
/// node sending it must first have received some of it (a part of others' contributions: a router always, a processor
/// unless it is its own value alone). nullopt for other parts.
std::optional<std::pair<std::uint32_t, bool>> value_part(const Messages& ms, MessageId p, const Topology& topo, Node u) {
    const bool router = !topo.is_processor(u);
    if (ms.is_composite(p)) {
        const Composite& c = ms.composite(p);
        if (c.kind == MessageKind::partial) return std::pair{c.lo, router || c.sources.size() != 1 || c.sources.front() != idx(u)};
        if (c.kind == MessageKind::combined) return std::pair{0u, router || c.lo != idx(u) || c.hi != idx(u)};
        return std::nullopt;
    }
    const MessageKey k = ms.key(p);
    if (k.kind == MessageKind::value) return std::pair{k.chunk, router || k.src != idx(u)};
    return std::nullopt;
}

/// The last arrival of the table at one size, from below: a transfer starts no earlier than the earliest arrival, in an
/// earlier step, of a part of the chunk it sends at its sender where it needs one (the run waits for those, docs/time.md),
/// nor before the transfer before it on an in-order channel (into a switch that reduces or multicasts) has left it; it
/// arrives its hold and its channel's latency later. Base parts (a datum) are not followed: no wait is assumed for them.
double chain_bound(const SendTable& t, const Messages& ms, const Loads& l, const std::vector<LinkSpeed>& speed, const std::vector<double>& group_bw,
                   double chunk) {
    const Topology& topo = *t.topology;
    const std::size_t N = topo.nodes(), C = t.collective.chunks;
    const double never = std::numeric_limits<double>::infinity();
    std::vector<double> held(N * C, never);  // per (node, chunk): the earliest arrival of a part of it, in the steps before
    std::vector<double> in_order(topo.channels().size(), 0.0);  // per in-order channel: when the next may start, at the earliest
    std::vector<char> ordered(topo.channels().size(), 0);
    for (std::uint32_t c = 0; c < ordered.size(); ++c) {
        const Channel& ch = topo.channel(ChannelId{c});
        const SwitchFunctions f = topo.is_processor(ch.to) ? SwitchFunctions{} : topo.switch_functions(ch.to);
        ordered[c] = topo.is_processor(ch.from) && (f.reduce || f.multicast);
    }
    std::vector<std::pair<std::size_t, double>> arrivals;  // of the step being read, applied after it
    double last = 0;
    Step step = 0;
    for (std::size_t j = 0; j < t.transfers.size(); ++j) {
        const Transfer& x = t.transfers[j];
        if (x.step != step) {
            for (const auto& [k, a] : arrivals) held[k] = std::min(held[k], a);
            arrivals.clear(), step = x.step;
        }
        const std::uint32_t c = idx(x.channel);
        const Channel& ch = topo.channel(x.channel);
        double start = ordered[c] ? in_order[c] : 0.0;
        ms.for_each_part(x.message, [&](MessageId p) {
            auto v = value_part(ms, p, topo, ch.from);
            if (v && v->second && v->first < C && held[idx(ch.from) * C + v->first] < never) start = std::max(start, held[idx(ch.from) * C + v->first]);
        });
        const double bytes = chunk * l.moved[j], d = bytes / speed[c].bandwidth;
        double hold = d;
        for (std::uint32_t g : topo.groups_of(x.channel)) hold = std::max(hold, bytes / group_bw[g]);
        if (ordered[c]) in_order[c] = start + d;
        const double arrive = start + hold + speed[c].alpha;
        last = std::max(last, arrive);
        ms.for_each_part(x.message, [&](MessageId p) {
            if (auto v = value_part(ms, p, topo, ch.to); v && v->first < C) arrivals.emplace_back(idx(ch.to) * C + v->first, arrive);
        });
    }
    return last;
}

}  // namespace

std::vector<double> table_time_bound(const SendTable& t, const std::vector<double>& sizes, const std::optional<LinkSpeed>& link) {
    const Topology& topo = *t.topology;
    const std::size_t E = topo.channels().size(), G = topo.groups().size();
    const Messages ms = t.messages();
    // the speeds do not depend on the size (TimeOptions: no executor, as gather_candidates times the tables)
    const TimeOptions speeds = with_network_class(topo, TimeOptions{sizes.empty() ? 0.0 : sizes.front(), link});
    std::vector<LinkSpeed> speed(E);
    for (std::uint32_t c = 0; c < E; ++c) speed[c] = channel_speed(topo, ChannelId{c}, speeds);
    std::vector<double> group_bw(G);
    for (std::uint32_t g = 0; g < G; ++g) group_bw[g] = group_speed(topo, g, speeds);
    const Loads l = loads_of(t, ms, speed);
    const bool chains = std::uint64_t{topo.nodes()} * t.collective.chunks <= most_entries;
    std::vector<double> out;
    for (double size : sizes) {
        const double chunk = datum_bytes(t.collective.kind, topo.processors(), size) / t.collective.chunks;
        double most = 0;
        for (std::size_t r = 0; r < E + G; ++r)
            if (l.load[r] > 0) most = std::max(most, chunk * l.load[r] / (r < E ? speed[r].bandwidth : group_bw[r - E]) + l.alpha[r]);
        if (chains) most = std::max(most, chain_bound(t, ms, l, speed, group_bw, chunk));
        out.push_back(most);
    }
    return out;
}

}  // namespace collsched
