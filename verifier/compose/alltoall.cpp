// Alltoall on many shortest paths, balanced by the links' seconds (alltoall.hpp).
#include "verifier/compose/alltoall.hpp"

#include <algorithm>
#include <limits>
#include <queue>

#include <fmt/format.h>

#include "runtime/timing.hpp"
#include "support/error.hpp"
#include "verifier/compose/plan.hpp"

namespace collsched::compose {

namespace {

using Path = std::vector<ChannelId>;

/// Up to `most` shortest paths from s to d over channels between processors (breadth first from
/// s, then every way back from d along distances that fall by one).
std::vector<Path> shortest_paths(const Topology& t, Node s, Node d, const std::vector<std::vector<ChannelId>>& into, std::size_t most) {
    const std::uint32_t P = t.processors();
    std::vector<std::uint32_t> dist(P, std::numeric_limits<std::uint32_t>::max());
    std::queue<std::uint32_t> q;
    dist[idx(s)] = 0;
    q.push(idx(s));
    std::vector<std::vector<ChannelId>> out(P);
    for (std::uint32_t c = 0; c < t.channels().size(); ++c) {
        const Channel& ch = t.channel(ChannelId{c});
        if (t.is_processor(ch.from) && t.is_processor(ch.to)) out[idx(ch.from)].push_back(ChannelId{c});
    }
    while (!q.empty()) {
        const std::uint32_t u = q.front();
        q.pop();
        for (ChannelId c : out[u]) {
            const std::uint32_t v = idx(t.channel(c).to);
            if (dist[v] == std::numeric_limits<std::uint32_t>::max()) dist[v] = dist[u] + 1, q.push(v);
        }
    }
    std::vector<Path> paths;
    if (dist[idx(d)] == std::numeric_limits<std::uint32_t>::max()) return paths;
    Path back;  // channels from d backwards
    auto walk = [&](auto&& self, std::uint32_t v) -> void {
        if (paths.size() >= most) return;
        if (v == idx(s)) {
            paths.emplace_back(back.rbegin(), back.rend());
            return;
        }
        for (ChannelId c : into[v]) {
            const std::uint32_t u = idx(t.channel(c).from);
            if (dist[u] + 1 != dist[v]) continue;
            back.push_back(c);
            self(self, u);
            back.pop_back();
        }
    };
    walk(walk, idx(d));
    return paths;
}

}  // namespace

std::optional<SendTable> multipath_alltoall(const SynthInstance& in, std::uint32_t chunks, std::string* why) {
    auto fail = [&](std::string w) -> std::optional<SendTable> {
        if (why) *why = std::move(w);
        return std::nullopt;
    };
    const Topology& t = *in.topology;
    if (in.collective.kind != CollectiveKind::alltoall) return fail("multipath alltoall builds alltoall only");
    if (in.model.timing != Timing::hop || in.model.inject_once) return fail("hop timing only");
    const std::uint32_t P = t.processors();
    std::vector<std::vector<ChannelId>> into(P);
    for (std::uint32_t c = 0; c < t.channels().size(); ++c) {
        const Channel& ch = t.channel(ChannelId{c});
        if (t.is_processor(ch.from) && t.is_processor(ch.to)) into[idx(ch.to)].push_back(ChannelId{c});
    }
    bool some_far = false;
    for (std::uint32_t s = 0; s < P && !some_far; ++s)
        for (std::uint32_t d = 0; d < P && !some_far; ++d)
            if (s != d && !t.find_channel(Node{s}, Node{d})) some_far = true;
    if (!some_far) return fail("every two processors are joined by a channel: one path each (the direct exchange)");
    Collective coll = in.collective;
    try {
        coll.set_chunks(chunks, t);
    } catch (const InputError& e) {
        return fail(e.what());
    }
    // seconds per byte each channel and group has been given so far
    const TimeOptions opt{1, std::nullopt};
    std::vector<double> inv_c(t.channels().size()), inv_g(t.groups().size());
    for (std::uint32_t c = 0; c < inv_c.size(); ++c) inv_c[c] = 1 / channel_speed(t, ChannelId{c}, opt).bandwidth;
    for (std::uint32_t g = 0; g < inv_g.size(); ++g) inv_g[g] = 1 / group_speed(t, g, opt);
    std::vector<double> load_c(inv_c.size()), load_g(inv_g.size());
    auto cost = [&](const Path& p) {
        double worst = 0;
        for (ChannelId c : p) {
            worst = std::max(worst, load_c[idx(c)] + inv_c[idx(c)]);
            for (std::uint32_t g : t.groups_of(c)) worst = std::max(worst, load_g[g] + inv_g[g]);
        }
        return worst;
    };
    std::vector<std::vector<Path>> paths(std::size_t{P} * P);
    for (std::uint32_t s = 0; s < P; ++s)
        for (std::uint32_t d = 0; d < P; ++d)
            if (s != d) {
                paths[std::size_t{s} * P + d] = shortest_paths(t, Node{s}, Node{d}, into, 64);
                if (paths[std::size_t{s} * P + d].empty()) return fail(fmt::format("no path of channels between processors from {} to {}", s, d));
            }
    const Messages ms = Messages(P, nullptr, chunks);
    Plan plan(in.topology, in.model, coll);
    // chunk by chunk, every pair (the farthest first: they have the fewest choices per hop) gets its least loaded path
    std::vector<std::pair<std::uint32_t, std::uint32_t>> pairs;
    for (std::uint32_t s = 0; s < P; ++s)
        for (std::uint32_t d = 0; d < P; ++d)
            if (s != d) pairs.emplace_back(s, d);
    std::stable_sort(pairs.begin(), pairs.end(), [&](auto a, auto b) {
        return paths[std::size_t{a.first} * P + a.second][0].size() > paths[std::size_t{b.first} * P + b.second][0].size();
    });
    for (std::uint32_t c = 0; c < chunks; ++c)
        for (auto [s, d] : pairs) {
            const std::vector<Path>& choice = paths[std::size_t{s} * P + d];
            std::size_t best = 0;
            double best_cost = std::numeric_limits<double>::infinity();
            for (std::size_t i = 0; i < choice.size(); ++i)
                if (double x = cost(choice[(i + c) % choice.size()]); x < best_cost) best_cost = x, best = (i + c) % choice.size();
            const Path& p = choice[best];
            for (std::size_t h = 0; h < p.size(); ++h) {
                load_c[idx(p[h])] += inv_c[idx(p[h])];
                for (std::uint32_t g : t.groups_of(p[h])) load_g[g] += inv_g[g];
                const Channel& ch = t.channel(p[h]);
                plan.send(static_cast<std::uint32_t>(h + 1), ch.from, ch.to, static_cast<std::uint32_t>(idx(ms.personal(s, d, c))));
            }
        }
    return plan.lower(why);
}

}  // namespace collsched::compose
