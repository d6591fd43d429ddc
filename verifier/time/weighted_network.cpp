// The capacity network on link speeds, its cuts by max flow, latency distances and partitions.
#include "verifier/time/weighted_network.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <numeric>
#include <queue>

#include <fmt/format.h>

#include "runtime/timing.hpp"
#include "support/assert.hpp"
#include "support/units.hpp"

namespace collsched::time_internal {

namespace {

/// a/b < c/d for non-negative integers, exactly (demands are at most P < 2^23 and capacities at
/// most 2^20 + 1 per arc, so the products stay below 2^63 for fewer than 2^19 arcs: asserted).
bool less_ratio(std::uint64_t a, std::uint64_t b, std::uint64_t c, std::uint64_t d) {
    COLLSCHED_ASSERT(a < (1u << 23) && c < (1u << 23) && b < (std::uint64_t{1} << 40) && d < (std::uint64_t{1} << 40));
    return a * d < c * b;
}

}  // namespace

double channel_delay(const Topology& t, ChannelId c, const TimeOptions& speeds) {
    return channel_speed(t, c, speeds).alpha + message_cost(t, c, speeds);
}

WeightedNetwork::WeightedNetwork(const Topology& t, const Model& m, const TimeOptions& speeds, bool reverse, bool asynchronous)
    : t_(t), speeds_(speeds), reverse_(reverse), asynchronous_(asynchronous), net_(reverse ? reversed(capacity_network(t, m)) : capacity_network(t, m)), flow_(net_) {
    const TimeOptions& opt = speeds_;
    bw_.resize(net_.arcs.size());
    alpha_.resize(net_.arcs.size());
    for (std::size_t i = 0; i < net_.arcs.size(); ++i) {
        const CapacityArc& a = net_.arcs[i];
        double bw = 0, al = std::numeric_limits<double>::infinity();
        // a channel (and a port, the sum of its channels) carries its bytes at least its delay before the
        // run's end; a group's holding ends at least group_delay before (the channel's alpha, and asynchronous the
        // message of a channel no faster than the group)
        auto channel = [&](ChannelId c) {
            al = std::min(al, channel_delay(t, c, opt));
            return channel_speed(t, c, opt).bandwidth;
        };
        switch (a.kind) {
            case CapacityArc::Kind::channel: bw = channel(ChannelId{a.what}); break;
            case CapacityArc::Kind::group:
                bw = group_speed(t, a.what, opt);
                for (ChannelId c : t.groups()[a.what].channels) al = std::min(al, group_delay(c, a.what));
                break;
            case CapacityArc::Kind::port:  // not counted: the sum of its channels (a relaxation)
                for (ChannelId c : a.out_port ? t.out_channels(Node{a.what}) : t.in_channels(Node{a.what})) bw += channel(c);
                break;
        }
        bw_[i] = bw;
        alpha_[i] = std::isfinite(al) ? al : 0;
    }
    const double top = bw_.empty() ? 1 : *std::max_element(bw_.begin(), bw_.end());
    const double unit = top > 0 ? top / (1 << 20) : 1;
    cap_.resize(bw_.size());
    for (std::size_t i = 0; i < bw_.size(); ++i) cap_[i] = std::max<std::int64_t>(1, static_cast<std::int64_t>(std::ceil(bw_[i] / unit)));
}

std::uint64_t WeightedNetwork::cut(const std::vector<char>& side) const {
    std::uint64_t c = 0;
    for (std::size_t i = 0; i < net_.arcs.size(); ++i)
        if (side[net_.arcs[i].from] && !side[net_.arcs[i].to]) c += static_cast<std::uint64_t>(cap_[i]);
    return c;
}

double WeightedNetwork::window_shift(const CapacityArc& a, const std::vector<double>* release, const std::vector<double>& onward) const {
    double ahead = std::numeric_limits<double>::infinity(), behind = std::numeric_limits<double>::infinity();
    // a group's holding: group_delay (without the message but asynchronous on channels no faster than the group)
    auto channel = [&](ChannelId c, bool group) {
        const Channel& ch = t_.channel(c);
        const double delay = group ? group_delay(c, a.what) : channel_delay(t_, c, speeds_);
        behind = std::min(behind, delay + onward[idx(ch.to)]);
        ahead = std::min(ahead, release ? (*release)[idx(ch.from)] : 0.0);
    };
    switch (a.kind) {
        case CapacityArc::Kind::channel: channel(ChannelId{a.what}, false); break;
        case CapacityArc::Kind::group:
            for (ChannelId c : t_.groups()[a.what].channels) channel(c, true);
            break;
        case CapacityArc::Kind::port:
            for (ChannelId c : a.out_port ? t_.out_channels(Node{a.what}) : t_.in_channels(Node{a.what})) channel(c, false);
            break;
    }
    return ahead + behind;
}

double WeightedNetwork::group_delay(ChannelId c, std::uint32_t g) const {
    const LinkSpeed sp = channel_speed(t_, c, speeds_);
    return asynchronous_ && sp.bandwidth <= group_speed(t_, g, speeds_) ? channel_delay(t_, c, speeds_) : sp.alpha;
}

std::vector<std::size_t> WeightedNetwork::leaving(const std::vector<char>& side) const {
    std::vector<std::size_t> out;
    for (std::size_t i = 0; i < net_.arcs.size(); ++i)
        if (side[net_.arcs[i].from] && !side[net_.arcs[i].to]) out.push_back(i);
    return out;
}

CutArc WeightedNetwork::arc(std::size_t i, const std::vector<double>* onward, const std::vector<double>* release) const {
    COLLSCHED_ASSERT(!release || (onward && !reverse_));
    double alpha = alpha_[i];
    if (onward && !reverse_) {
        const double with = window_shift(net_.arcs[i], release, *onward);
        if (!std::isfinite(with) && release) return {bw_[i], with};  // nothing over it reaches the far side (a window: useless)
        if (std::isfinite(with)) alpha = std::max(alpha, with);
    }
    return {bw_[i], alpha};
}

std::string WeightedNetwork::arc_text(std::size_t i, double alpha, const char* extra) const {
    std::string what = net_.arc_text(t_, net_.arcs[i]);
    what = what.substr(0, what.rfind(" ("));  // the count of links, replaced by the speed
    return alpha > alpha_[i] ? fmt::format("{} ({}, {}; {} {})", what, support::format_bandwidth(bw_[i]), support::format_seconds(alpha_[i]),
                                           support::format_seconds(alpha), extra)
                             : fmt::format("{} ({}, {})", what, support::format_bandwidth(bw_[i]), support::format_seconds(alpha_[i]));
}

void WeightedNetwork::crossing(const std::vector<char>& side, TimeTerm& term, const std::vector<double>* onward, const std::vector<double>* release) const {
    std::size_t shown = 0, more = 0;
    for (std::size_t i : leaving(side)) {
        const CutArc a = arc(i, onward, release);
        if (!std::isfinite(a.alpha)) continue;
        term.arcs.push_back(a);
        if (shown >= 12) ++more;
        else ++shown, term.crossing.push_back(arc_text(i, a.alpha, release ? "its window" : "on to a processor"));
    }
    if (more) term.crossing.push_back(fmt::format("... ({} more)", more));
}

void WeightedNetwork::before_flow(const RunLimits& limits, std::string_view what) const {
    limits.check(what);
    if (!limits.deadline.none() && last_flow_s_ > limits.deadline.left())
        throw LimitReached(fmt::format("time limit ({}: a max flow took {:.2f} s, {:.2f} s are left)", what, last_flow_s_,
                                       limits.deadline.left()));
}

std::vector<char> WeightedNetwork::densest_cut(const std::vector<std::uint32_t>& sinks, std::uint32_t& flows, const RunLimits& limits) {
    const std::uint32_t P = t_.processors();
    auto demand = [&](const std::vector<char>& side) {
        std::uint64_t in = 0;
        for (std::uint32_t v = 0; v < P; ++v) in += side[v] ? 1 : 0;
        return in < P ? in : 0;
    };
    // start: the best cut around a single sink (its complement: everything but the sink and its gadgets)
    std::vector<char> best;
    std::uint64_t d = 0, c = 1;
    for (std::uint32_t v : sinks) {
        std::vector<char> side(net_.vertices, 1);
        side[v] = 0;
        for (const CapacityArc& a : net_.arcs)
            if (a.to == v && a.from >= net_.topology_nodes) side[a.from] = 0;
        const std::uint64_t dd = demand(side), cc = cut(side);
        if (dd > 0 && cc > 0 && (best.empty() || less_ratio(d, c, dd, cc))) best = side, d = dd, c = cc;
    }
    if (best.empty()) return best;
    std::size_t at = 0, clean = 0;
    while (clean < sinks.size()) {
        std::vector<std::int64_t> caps(cap_.size()), src(P, static_cast<std::int64_t>(c));
        for (std::size_t i = 0; i < cap_.size(); ++i) caps[i] = cap_[i] * static_cast<std::int64_t>(d);
        before_flow(limits, "the densest cut");
        const std::int64_t f = timed([&] { return flow_.max_flow_arcs(caps, src, {}, sinks[at]); });
        ++flows;
        if (static_cast<std::uint64_t>(f) < c * P) {
            std::vector<char> s = flow_.source_side();
            const std::uint64_t dd = demand(s), cc = cut(s);
            COLLSCHED_ASSERT(cc > 0 && less_ratio(d, c, dd, cc));
            best = std::move(s), d = dd, c = cc, clean = 0;
        } else {
            ++clean;
            at = (at + 1) % sinks.size();
        }
    }
    return best;
}

std::vector<char> WeightedNetwork::region(const std::vector<std::uint32_t>& from, const std::vector<std::uint32_t>& to, std::uint32_t& flows,
                                          const RunLimits& limits) {
    const std::uint32_t P = t_.processors();
    std::vector<std::int64_t> src(P, 0), snk(P, 0);
    for (std::uint32_t v : from) src[v] = FlowSolver::unbounded;
    for (std::uint32_t v : to) snk[v] = FlowSolver::unbounded;
    before_flow(limits, "a region's cut");
    timed([&] { return flow_.max_flow_arcs(cap_, src, snk, FlowSolver::super_sink); });
    ++flows;
    return flow_.source_side();
}

std::vector<double> channel_delays(const Topology& t, const TimeOptions& opt) {
    std::vector<double> d(t.channels().size());
    for (std::uint32_t c = 0; c < d.size(); ++c) d[c] = channel_delay(t, ChannelId{c}, opt);
    return d;
}

std::vector<double> alpha_distances(const Topology& t, const TimeOptions& opt, std::uint32_t src, bool reversed) {
    return alpha_distances(t, channel_delays(t, opt), std::vector<std::uint32_t>{src}, reversed);
}

std::vector<double> alpha_distances(const Topology& t, const std::vector<double>& delays, const std::vector<std::uint32_t>& sources, bool reversed) {
    std::vector<double> dist(t.nodes(), std::numeric_limits<double>::infinity());
    using Item = std::pair<double, std::uint32_t>;
    std::priority_queue<Item, std::vector<Item>, std::greater<>> q;
    for (std::uint32_t src : sources) dist[src] = 0, q.push({0, src});
    while (!q.empty()) {
        auto [d, u] = q.top();
        q.pop();
        if (d > dist[u]) continue;
        for (ChannelId c : reversed ? t.in_channels(Node{u}) : t.out_channels(Node{u})) {
            const Channel& ch = t.channel(c);
            const std::uint32_t v = idx(reversed ? ch.from : ch.to);
            const double nd = d + delays[idx(c)];
            if (nd < dist[v]) dist[v] = nd, q.push({nd, v});
        }
    }
    return dist;
}

std::vector<double> alpha_to_processors(const Topology& t, const TimeOptions& opt) {
    std::vector<std::uint32_t> all(t.processors());
    std::iota(all.begin(), all.end(), 0u);
    return alpha_distances(t, channel_delays(t, opt), all, true);
}

std::vector<std::uint32_t> hop_distances(const Topology& t, std::uint32_t src) {
    std::vector<std::uint32_t> d(t.nodes(), std::numeric_limits<std::uint32_t>::max());
    std::vector<std::uint32_t> q{src};
    d[src] = 0;
    for (std::size_t i = 0; i < q.size(); ++i)
        for (ChannelId c : t.out_channels(Node{q[i]})) {
            const std::uint32_t v = idx(t.channel(c).to);
            if (d[v] == std::numeric_limits<std::uint32_t>::max()) d[v] = d[q[i]] + 1, q.push_back(v);
        }
    return d;
}

namespace {

struct UnionFind {
    std::vector<std::uint32_t> parent;
    explicit UnionFind(std::uint32_t n) : parent(n) { std::iota(parent.begin(), parent.end(), 0u); }
    std::uint32_t find(std::uint32_t x) {
        while (parent[x] != x) x = parent[x] = parent[parent[x]];
        return x;
    }
};

/// Sets numbered 0.. in the order of their least processor.
Partition numbered(std::string name, const std::vector<std::uint32_t>& key, std::uint32_t P) {
    Partition p{std::move(name), std::vector<std::uint32_t>(P), 0};
    std::map<std::uint32_t, std::uint32_t> ids;
    for (std::uint32_t v = 0; v < P; ++v) {
        auto [it, fresh] = ids.emplace(key[v], static_cast<std::uint32_t>(ids.size()));
        p.set[v] = it->second;
    }
    p.sets = static_cast<std::uint32_t>(ids.size());
    return p;
}

}  // namespace

std::vector<Partition> partitions(const Topology& t, const TimeOptions& opt) {
    const std::uint32_t P = t.processors();
    std::vector<double> speeds;
    for (std::uint32_t c = 0; c < t.channels().size(); ++c) speeds.push_back(channel_speed(t, ChannelId{c}, opt).bandwidth);
    std::sort(speeds.begin(), speeds.end(), std::greater<>());
    speeds.erase(std::unique(speeds.begin(), speeds.end()), speeds.end());
    std::vector<Partition> out;
    for (double b : speeds) {
        UnionFind uf(t.nodes());
        for (std::uint32_t c = 0; c < t.channels().size(); ++c)
            if (channel_speed(t, ChannelId{c}, opt).bandwidth >= b) {
                const Channel& ch = t.channel(ChannelId{c});
                uf.parent[uf.find(idx(ch.from))] = uf.find(idx(ch.to));
            }
        std::vector<std::uint32_t> key(P);
        for (std::uint32_t v = 0; v < P; ++v) key[v] = uf.find(v);
        Partition boxes = numbered(fmt::format("boxes (the components of the channels of at least {})", support::format_bandwidth(b)), key, P);
        if (boxes.sets < 2 || boxes.sets >= P) continue;
        bool seen = false;
        for (const Partition& q : out) seen = seen || q.set == boxes.set;
        if (seen) continue;
        // rails: the i-th processor of every box, when the boxes are of one size
        std::vector<std::uint32_t> size(boxes.sets, 0), rank(P);
        for (std::uint32_t v = 0; v < P; ++v) rank[v] = size[boxes.set[v]]++;
        const bool even = std::all_of(size.begin(), size.end(), [&](std::uint32_t s) { return s == size[0]; });
        out.push_back(std::move(boxes));
        if (even && size[0] >= 2)
            out.push_back(numbered(fmt::format("rails (the i-th processor of each of the boxes above, {} sets)", size[0]), rank, P));
    }
    return out;
}

}  // namespace collsched::time_internal
