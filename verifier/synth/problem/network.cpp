// Distances, step capacities and boundary channels of a network (problem/network.hpp): what the
// bounds, the encodings and the constructions all read off the topology.
#include "verifier/synth/problem/network.hpp"

#include <algorithm>
#include <deque>
#include <limits>

#include "support/assert.hpp"

namespace collsched::synth {

namespace {

/// Hops from `start` along channels (`forward`) or against them, by breadth-first search.
std::vector<std::uint32_t> bfs(const Topology& t, Node start, bool forward) {
    constexpr std::uint32_t inf = std::numeric_limits<std::uint32_t>::max();
    std::vector<std::uint32_t> d(t.nodes(), inf);
    std::deque<Node> q{start};
    d[idx(start)] = 0;
    while (!q.empty()) {
        Node u = q.front();
        q.pop_front();
        for (ChannelId c : forward ? t.out_channels(u) : t.in_channels(u)) {
            Node v = forward ? t.channel(c).to : t.channel(c).from;
            if (d[idx(v)] == inf) {
                d[idx(v)] = d[idx(u)] + 1;
                q.push_back(v);
            }
        }
    }
    return d;
}

}  // namespace

std::vector<std::uint32_t> bfs_distances(const Topology& t, Node from) { return bfs(t, from, true); }

std::vector<ChannelId> crossing_channels(const Topology& t, const std::vector<char>& inside, bool into) {
    std::vector<ChannelId> cs;
    for (std::uint32_t c = 0; c < t.channels().size(); ++c) {
        const Channel& ch = t.channels()[c];
        const bool from_in = inside[idx(ch.from)] != 0, to_in = inside[idx(ch.to)] != 0;
        if (from_in != to_in && to_in == into) cs.push_back(ChannelId{c});
    }
    return cs;
}

StepCapacity step_capacity(const Topology& t, Ports ports, std::span<const ChannelId> channels) {
    // Work proportional to the set (a processor's channels are called for one by one on
    // topologies of 65,534 nodes): sums per key by sorting (key, capacity) pairs.
    using Share = std::pair<std::uint32_t, std::uint64_t>;
    auto capped_sum = [](std::vector<Share>& v, auto cap_of) {
        std::sort(v.begin(), v.end());
        std::uint64_t total = 0;
        for (std::size_t i = 0; i < v.size();) {
            std::uint64_t s = 0;
            std::size_t j = i;
            for (; j < v.size() && v[j].first == v[i].first; ++j) s += v[j].second;
            total += std::min(s, cap_of(v[i].first));
            i = j;
        }
        return total;
    };
    constexpr std::uint64_t unlimited = std::numeric_limits<std::uint64_t>::max();
    auto port_cap = [&](std::uint32_t n) {
        return t.is_processor(Node{n}) && ports != Ports::multi ? std::uint64_t{1} : unlimited;
    };
    std::vector<Share> out_of, into;
    std::uint64_t sum = 0;
    for (ChannelId c : channels) {
        const Channel& ch = t.channel(c);
        out_of.emplace_back(idx(ch.from), ch.cap);
        into.emplace_back(idx(ch.to), ch.cap);
        sum += ch.cap;
    }
    StepCapacity r;
    r.hops = std::min(capped_sum(out_of, port_cap), capped_sum(into, port_cap));
    r.by_ports = r.hops < sum;
    if (t.groups().empty()) return r;
    // Each channel in the group holding most channels of the set.
    std::vector<Share> members;
    for (ChannelId c : channels)
        for (std::uint32_t g : t.groups_of(c)) members.emplace_back(g, 1);
    std::sort(members.begin(), members.end());
    auto count_in = [&](std::uint32_t g) {
        auto lo = std::lower_bound(members.begin(), members.end(), Share{g, 0});
        auto hi = std::upper_bound(members.begin(), members.end(), Share{g, unlimited});
        return hi - lo;
    };
    std::vector<Share> share;
    std::uint64_t grouped = 0;
    for (ChannelId c : channels) {
        auto gs = t.groups_of(c);
        if (gs.empty()) {
            grouped += t.channel(c).cap;
            continue;
        }
        std::uint32_t best = gs.front();
        for (std::uint32_t g : gs)
            if (count_in(g) > count_in(best)) best = g;
        share.emplace_back(best, t.channel(c).cap);
    }
    grouped += capped_sum(share, [&](std::uint32_t g) { return std::uint64_t{t.groups()[g].cap}; });
    if (grouped < r.hops) {
        r.hops = grouped;
        r.by_groups = true;
        r.by_ports = false;
    }
    return r;
}

std::vector<std::uint32_t> bfs_distances_to(const Topology& t, Node to) { return bfs(t, to, false); }

bool routers_hold(const SynthInstance& in, EncodingKind kind) {
    if (in.model.queues != QueueKind::unbounded) return false;
    return kind == EncodingKind::free_route || in.model.replicate;
}

}  // namespace collsched::synth
