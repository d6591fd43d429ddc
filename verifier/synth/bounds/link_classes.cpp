// Link-class counting (verifier/synth/bounds/link_classes.hpp).
#include "verifier/synth/bounds/link_classes.hpp"

#include <deque>
#include <limits>
#include <map>

#include <fmt/format.h>

#include "support/units.hpp"
#include "verifier/synth/problem/network.hpp"
#include "verifier/synth/symmetry/translations.hpp"

namespace collsched {

namespace {

/// 0-1 breadth-first search from `from`: the least number of channels with in_class set on any walk.
std::vector<std::uint32_t> class_distances(const Topology& t, Node from, const std::vector<char>& in_class) {
    constexpr std::uint32_t far = std::numeric_limits<std::uint32_t>::max();
    std::vector<std::uint32_t> d(t.nodes(), far);
    std::deque<Node> q;
    d[idx(from)] = 0;
    q.push_back(from);
    while (!q.empty()) {
        const Node u = q.front();
        q.pop_front();
        for (ChannelId c : t.out_channels(u)) {
            const Node v = t.channel(c).to;
            const std::uint32_t w = in_class[idx(c)] ? 1 : 0;
            if (d[idx(u)] + w < d[idx(v)]) {
                d[idx(v)] = d[idx(u)] + w;
                if (w) q.push_back(v);
                else q.push_front(v);
            }
        }
    }
    return d;
}

/// The most transfers the channels with in_class set carry per step, counted per sending node
/// (out = true) or per receiving node: for node u, its class channels' capacities summed, cut by
/// every link group g to cap(g) plus the capacities of u's class channels outside g, and to one
/// under single or half ports. Tighter than step_capacity's one group per channel where a
/// node's channels of the class all lie in one group of each end (a NIC's out- and in-group).
std::uint64_t node_capacity(const Topology& t, Ports ports, const std::vector<char>& in_class, bool out) {
    std::uint64_t total = 0;
    std::vector<std::uint64_t> in_group(t.groups().size(), 0);
    for (std::uint32_t u = 0; u < t.nodes(); ++u) {
        const auto chans = out ? t.out_channels(Node{u}) : t.in_channels(Node{u});
        std::uint64_t sum = 0;
        std::vector<std::uint32_t> touched;
        for (ChannelId c : chans) {
            if (!in_class[idx(c)]) continue;
            sum += t.channel(c).cap;
            for (std::uint32_t g : t.groups_of(c)) {
                if (in_group[g] == 0) touched.push_back(g);
                in_group[g] += t.channel(c).cap;
            }
        }
        std::uint64_t best = sum;
        for (std::uint32_t g : touched) {
            best = std::min(best, t.groups()[g].cap + (sum - in_group[g]));
            in_group[g] = 0;
        }
        if (ports != Ports::multi && t.is_processor(Node{u})) best = std::min<std::uint64_t>(best, 1);
        total += best;
    }
    return total;
}

}  // namespace

std::vector<Bound> class_bounds(const SynthInstance& in, const RunLimits& limits) {
    const Topology& t = *in.topology;
    std::vector<Bound> out;
    const EncodingKind k = encoding_for(in);
    if ((k != EncodingKind::personal && k != EncodingKind::free_route) || !t.has_speeds() || in.chunked()) return out;
    std::map<double, std::vector<ChannelId>> classes;  // by bandwidth per channel
    for (std::uint32_t c = 0; c < t.channels().size(); ++c) classes[t.speed(ChannelId{c}).bandwidth].push_back(ChannelId{c});
    if (classes.size() < 2) return out;
    const std::uint32_t P = t.processors();
    // Under a checked translation group every source's distances are processor 0's, moved.
    const std::optional<Translations> group = translation_group(t, limits);
    const std::uint64_t searches = group ? 1 : P;
    if (searches * (t.nodes() + t.channels().size()) * classes.size() > 200'000'000) return out;
    const Messages ms = in.collective.messages(P);
    for (const auto& [bandwidth, chans] : classes) {
        std::vector<char> in_class(t.channels().size(), 0);
        for (ChannelId c : chans) in_class[idx(c)] = 1;
        std::vector<std::vector<std::uint32_t>> dist(P);
        std::uint64_t sum = 0;
        bool unreachable = false;
        std::uint64_t goals = 0;
        in.collective.for_each_goal(P, [&](MessageId m, Node d) {
            if ((++goals & 0xffff) == 0) limits.check("class counting");
            std::uint32_t s = idx(ms.origin(m)), y = idx(d);
            if (group) {  // the distance from s to y is the distance from 0 to y - s
                y = group->sub(y, s);
                s = 0;
            }
            if (dist[s].empty()) dist[s] = class_distances(t, Node{s}, in_class);
            if (dist[s][y] == std::numeric_limits<std::uint32_t>::max()) unreachable = true;
            else sum += dist[s][y];
        });
        if (unreachable || sum == 0) continue;
        synth::StepCapacity cap = synth::step_capacity(t, in.model.ports, chans);
        if (const std::uint64_t per_node = std::min(node_capacity(t, in.model.ports, in_class, true), node_capacity(t, in.model.ports, in_class, false));
            per_node < cap.hops) {
            cap.hops = per_node;
            cap.by_groups = !t.groups().empty();
            cap.by_ports = in.model.ports != Ports::multi;
        }
        if (cap.hops == 0) continue;
        Bound b;
        b.steps = static_cast<Step>((sum + cap.hops - 1) / cap.hops);
        b.name = "class counting";
        b.detail = fmt::format("the messages cross channels of {} ({} channels) at least {} times (each its least number of them on "
                               "any walk) and those carry at most {} per step",
                               support::format_bandwidth(bandwidth), chans.size(), sum, cap.hops);
        b.routes = RouteSpace::any;
        b.assumes = {"link speeds as classes"};
        if (cap.by_groups) b.assumes.push_back("link groups");
        if (cap.by_ports) b.assumes.push_back(fmt::format("ports={}", in.model.ports == Ports::single ? "single" : "half"));
        out.push_back(std::move(b));
    }
    return out;
}

}  // namespace collsched
