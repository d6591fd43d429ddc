// A lower bound on a table's asynchronous time without its timing plan (candidates.hpp, table_time_bound): the loads of
// its channels and link groups, and the earliest each transfer can start along its chains of data and program order.
#include <algorithm>
#include <limits>

#include "verifier/time/candidates.hpp"

namespace collsched {

namespace {

/// At most this many (node, chunk) entries for the chains (one double each): larger tables get the loads' bound only.
constexpr std::uint64_t most_entries = std::uint64_t{1} << 23;

/// What the bound reads of the table once, whatever the size and speeds: per transfer its chunks moved, per channel and
/// group the chunks.
struct Loads {
    std::vector<std::uint32_t> moved;  // per transfer
    std::vector<double> load;          // per channel, then per group
};

Loads loads_of(const SendTable& t, const Messages& ms) {
    const Topology& topo = *t.topology;
    const std::size_t E = topo.channels().size(), G = topo.groups().size();
    Loads l{{}, std::vector<double>(E + G, 0.0)};
    l.moved.reserve(t.transfers.size());
    for (const Transfer& x : t.transfers) {
        const std::uint32_t n = ms.part_count(x.message);
        l.moved.push_back(n);
        l.load[idx(x.channel)] += n;
        for (std::uint32_t g : topo.groups_of(x.channel)) l.load[E + g] += n;
    }
    return l;
}

/// The speeds a run is timed at (no executor: the network's share; else one protocol's): per channel its bandwidth and
/// latency, and its message cost (an executor's transfer holds its connection or channel that long beyond its bytes,
/// so it arrives at least that much after its bytes left: docs/time.md, "The bound on an executor"); per group its
/// bandwidth; the launch before the first transfer; the grain. `alpha`: per channel its latency (with the message where
/// a connection, not the channel, holds it), per group the least latency of its channels that the table uses.
struct Speeds {
    std::vector<LinkSpeed> channel;
    std::vector<double> message, group, alpha;
    double launch = 0;
    double grain = 0;  // a smaller transfer holds its resources as one of this many bytes
    bool one_connection = true;  // the message holds the channel, not a connection of it: every transfer's, in turn
    bool in_turn = false;        // some channel holds messages in turn
};

Speeds speeds_of(const SendTable& t, TimeOptions opt) {
    const Topology& topo = *t.topology;
    const std::size_t E = topo.channels().size(), G = topo.groups().size();
    opt = with_network_class(topo, opt);
    Speeds s{std::vector<LinkSpeed>(E), std::vector<double>(E, 0.0), std::vector<double>(G), std::vector<double>(E + G, std::numeric_limits<double>::infinity()),
             opt.executor ? opt.executor->launch : 0.0, opt.executor ? opt.executor->grain : 0.0,
             !opt.executor || connections_per_channel(*opt.executor) <= 1};
    for (std::uint32_t c = 0; c < E; ++c) {
        s.channel[c] = channel_speed(topo, ChannelId{c}, opt);
        s.message[c] = message_cost(topo, ChannelId{c}, opt);
        // the last transfer arrives its message after the channel's bytes (on one connection the message is in the hold)
        s.alpha[c] = s.channel[c].alpha + (s.one_connection ? 0.0 : s.message[c]);
        s.in_turn = s.in_turn || (s.one_connection && s.message[c] > 0);
    }
    for (std::uint32_t g = 0; g < G; ++g) s.group[g] = group_speed(topo, g, opt);
    for (const Transfer& x : t.transfers)
        for (std::uint32_t g : topo.groups_of(x.channel)) s.alpha[E + g] = std::min(s.alpha[E + g], s.channel[idx(x.channel)].alpha);
    return s;
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
/// arrives its hold and its channel's latency later. From a router that cuts through (cuts_through) it starts no earlier
/// than the first packet of such an arrival is in (its start, message, latency and a packet at its channel's speed) and
/// arrives no earlier than its message and latency after that arrival. Base parts (a datum) are not followed: no wait is
/// assumed for them.
double chain_bound(const SendTable& t, const Messages& ms, const Loads& l, const Speeds& sp, double chunk) {
    const std::vector<LinkSpeed>& speed = sp.channel;
    const std::vector<double>& group_bw = sp.group;
    const Topology& topo = *t.topology;
    const std::size_t N = topo.nodes(), C = t.collective.chunks;
    const double never = std::numeric_limits<double>::infinity();
    std::vector<double> held(N * C, never);  // per (node, chunk): the earliest arrival of a part of it, in the steps before
    std::vector<double> head(N * C, never);  // and the earliest its first packet was in
    std::vector<double> in_order(topo.channels().size(), 0.0);  // per in-order channel: when the next may start, at the earliest
    std::vector<char> ordered(topo.channels().size(), 0);
    for (std::uint32_t c = 0; c < ordered.size(); ++c) {
        const Channel& ch = topo.channel(ChannelId{c});
        const SwitchFunctions f = topo.is_processor(ch.to) ? SwitchFunctions{} : topo.switch_functions(ch.to);
        ordered[c] = topo.is_processor(ch.from) && (f.reduce || f.multicast);
    }
    struct Arrival {
        std::size_t at;
        double head, arrive;
    };
    std::vector<Arrival> arrivals;  // of the step being read, applied after it
    double last = 0;
    Step step = 0;
    for (std::size_t j = 0; j < t.transfers.size(); ++j) {
        const Transfer& x = t.transfers[j];
        if (x.step != step) {
            for (const Arrival& a : arrivals) held[a.at] = std::min(held[a.at], a.arrive), head[a.at] = std::min(head[a.at], a.head);
            arrivals.clear(), step = x.step;
        }
        const std::uint32_t c = idx(x.channel);
        const Channel& ch = topo.channel(x.channel);
        double start = ordered[c] ? in_order[c] : 0.0, tail = 0.0;
        const bool cuts = cuts_through(topo, t.model, ch.from);
        ms.for_each_part(x.message, [&](MessageId p) {
            auto v = value_part(ms, p, topo, ch.from);
            if (!v || !v->second || v->first >= C || held[idx(ch.from) * C + v->first] == never) return;
            const std::size_t k = idx(ch.from) * C + v->first;
            start = std::max(start, cuts ? head[k] : held[k]);
            if (cuts) tail = std::max(tail, held[k] + sp.message[c] + speed[c].alpha);
        });
        // the bytes (an executor's grain only lengthens a holding) on the channel, beside its message on the channel or its
        // connection; on an in-order channel the next starts no earlier than the bytes left
        const double bytes = std::max(chunk * l.moved[j], sp.grain), d = bytes / speed[c].bandwidth;
        double hold = d + sp.message[c];
        for (std::uint32_t g : topo.groups_of(x.channel)) hold = std::max(hold, bytes / group_bw[g]);
        if (ordered[c]) in_order[c] = start + d + (sp.one_connection ? sp.message[c] : 0.0);
        const double arrive = std::max(start + hold + speed[c].alpha, tail);
        last = std::max(last, arrive);
        const double first = start + sp.message[c] + speed[c].alpha + std::min(bytes, router_packet_bytes) / speed[c].bandwidth;
        ms.for_each_part(x.message, [&](MessageId p) {
            if (auto v = value_part(ms, p, topo, ch.to); v && v->first < C) arrivals.push_back({idx(ch.to) * C + v->first, first, arrive});
        });
    }
    return last;
}

}  // namespace

/// Per channel, then group, how long its transfers hold it in all (one after the other): each its bytes (at least the
/// grain) over the bandwidth, and on a channel of one connection its message too (runtime/timing.cpp, AsyncRun::start).
std::vector<double> holds(const SendTable& t, const Loads& l, const Speeds& sp, double chunk) {
    const Topology& topo = *t.topology;
    const std::size_t E = topo.channels().size(), G = topo.groups().size();
    std::vector<double> held(E + G, 0.0);
    if (sp.grain <= chunk && !sp.in_turn) {  // every transfer at least a chunk, no message in turn
        for (std::size_t r = 0; r < E + G; ++r)
            if (l.load[r] > 0) held[r] = chunk * l.load[r] / (r < E ? sp.channel[r].bandwidth : sp.group[r - E]);
        return held;
    }
    for (std::size_t j = 0; j < t.transfers.size(); ++j) {
        const std::uint32_t c = idx(t.transfers[j].channel);
        const double bytes = std::max(chunk * l.moved[j], sp.grain);
        held[c] += bytes / sp.channel[c].bandwidth + (sp.one_connection ? sp.message[c] : 0.0);
        for (std::uint32_t g : topo.groups_of(t.transfers[j].channel)) held[E + g] += bytes / sp.group[g];
    }
    return held;
}

std::vector<double> table_time_bound(const SendTable& t, const std::vector<double>& sizes, const TimeBasis& basis) {
    const Topology& topo = *t.topology;
    const std::size_t E = topo.channels().size(), G = topo.groups().size();
    const Messages ms = t.messages();
    const Loads l = loads_of(t, ms);
    const bool chains = std::uint64_t{topo.nodes()} * t.collective.chunks <= most_entries;
    std::vector<double> out(sizes.size(), std::numeric_limits<double>::infinity());
    // the executor runs the table in its fastest protocol: the least over them (of the launch and the bound on its speeds)
    for (Protocol p : basis.protocols()) {
        // the speeds do not depend on the size
        const Speeds sp = speeds_of(t, basis.at(sizes.empty() ? 0.0 : sizes.front(), p));
        for (std::size_t i = 0; i < sizes.size(); ++i) {
            const double chunk = datum_bytes(t.collective.kind, topo.processors(), sizes[i]) / t.collective.chunks;
            double most = 0;
            const std::vector<double> held = holds(t, l, sp, chunk);
            for (std::size_t r = 0; r < E + G; ++r)
                if (l.load[r] > 0) most = std::max(most, held[r] + sp.alpha[r]);
            if (chains) most = std::max(most, chain_bound(t, ms, l, sp, chunk));
            out[i] = std::min(out[i], sp.launch + most);
        }
    }
    return out;
}

std::vector<double> table_time_bound(const SendTable& t, const std::vector<double>& sizes, const std::optional<LinkSpeed>& link) {
    return table_time_bound(t, sizes, TimeBasis{link});
}

}  // namespace collsched
