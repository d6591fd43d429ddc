// Alltoall on many shortest paths, balanced by the links' seconds (alltoall.hpp).
#include "verifier/constructions/compose/alltoall.hpp"

#include <algorithm>
#include <limits>
#include <queue>

#include <fmt/format.h>

#include "runtime/timing.hpp"
#include "support/error.hpp"
#include "verifier/constructions/compose/plan.hpp"

namespace collsched::compose {

namespace {

/// A path: the processors it visits, s first and d last.
using Path = std::vector<std::uint32_t>;

/// Processor hops: u -> v when the topology's route from u to v passes through no other processor
/// (a channel, or routers only); its channels.
struct Hops {
    std::vector<std::vector<std::uint32_t>> out;    ///< per processor, the processors one hop away
    std::vector<std::vector<ChannelId>> route;      ///< per (u, v), u * P + v: the channels (empty: no hop)
};

Hops processor_hops(const Topology& t) {
    const std::uint32_t P = t.processors();
    Hops h;
    h.out.resize(P);
    h.route.resize(std::size_t{P} * P);
    for (std::uint32_t u = 0; u < P; ++u)
        for (std::uint32_t v = 0; v < P; ++v) {
            if (u == v) continue;
            std::vector<ChannelId> r = t.route(Node{u}, Node{v});
            bool through = r.empty();
            for (std::size_t i = 0; i + 1 < r.size() && !through; ++i) through = t.is_processor(t.channel(r[i]).to);
            if (through) continue;
            h.out[u].push_back(v);
            h.route[std::size_t{u} * P + v] = std::move(r);
        }
    return h;
}

/// Up to `most` shortest paths (in processor hops) from s to every d: breadth first from s, then
/// every way back from d along distances that fall by one.
std::vector<std::vector<Path>> shortest_paths(const Hops& h, std::uint32_t s, std::size_t most) {
    const std::uint32_t P = static_cast<std::uint32_t>(h.out.size()), far = std::numeric_limits<std::uint32_t>::max();
    std::vector<std::uint32_t> dist(P, far);
    std::vector<std::vector<std::uint32_t>> into(P);
    std::queue<std::uint32_t> q;
    dist[s] = 0;
    q.push(s);
    while (!q.empty()) {
        const std::uint32_t u = q.front();
        q.pop();
        for (std::uint32_t v : h.out[u]) {
            if (dist[v] == far) dist[v] = dist[u] + 1, q.push(v);
            if (dist[v] == dist[u] + 1) into[v].push_back(u);
        }
    }
    std::vector<std::vector<Path>> paths(P);
    for (std::uint32_t d = 0; d < P; ++d) {
        if (d == s || dist[d] == far) continue;
        Path back{d};
        auto walk = [&](auto&& self, std::uint32_t v) -> void {
            if (paths[d].size() >= most) return;
            if (v == s) {
                paths[d].emplace_back(back.rbegin(), back.rend());
                return;
            }
            for (std::uint32_t u : into[v]) {
                back.push_back(u);
                self(self, u);
                back.pop_back();
            }
        };
        walk(walk, d);
    }
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
    if (P > 256) return fail("more than 256 processors (a route per pair of processors is computed)");
    const Hops hops = processor_hops(t);
    bool some_far = false;
    for (std::uint32_t u = 0; u < P && !some_far; ++u) some_far = hops.out[u].size() + 1 < P;
    if (!some_far) return fail("every two processors are joined by a channel or through routers only: one path each (the direct exchange)");
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
        for (std::size_t i = 0; i + 1 < p.size(); ++i)
            for (ChannelId c : hops.route[std::size_t{p[i]} * P + p[i + 1]]) {
                worst = std::max(worst, load_c[idx(c)] + inv_c[idx(c)]);
                for (std::uint32_t g : t.groups_of(c)) worst = std::max(worst, load_g[g] + inv_g[g]);
            }
        return worst;
    };
    std::vector<std::vector<Path>> paths(std::size_t{P} * P);
    for (std::uint32_t s = 0; s < P; ++s) {
        std::vector<std::vector<Path>> from = shortest_paths(hops, s, 64);
        for (std::uint32_t d = 0; d < P; ++d)
            if (s != d) {
                if (from[d].empty()) return fail(fmt::format("no path from {} to {} through processors and routers", t.node_name(Node{s}), t.node_name(Node{d})));
                paths[std::size_t{s} * P + d] = std::move(from[d]);
            }
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
    // Every path ends at the last logical step (hop h of a path of n hops is step longest - n + h + 1): transfers ready at
    // once go in table order, step first (docs/time.md, "Asynchronous time"), so those with more hops to go leave first.
    // Paths from step 1 sent a link's last chunks for a further hop behind those that end there: TE-CCL's DGX-2 x 2 at
    // 16 kB 4.856 us against 4.328 us.
    const std::size_t longest = paths[std::size_t{pairs[0].first} * P + pairs[0].second][0].size() - 1;
    for (std::uint32_t c = 0; c < chunks; ++c)
        for (auto [s, d] : pairs) {
            const std::vector<Path>& choice = paths[std::size_t{s} * P + d];
            std::size_t best = 0;
            double best_cost = std::numeric_limits<double>::infinity();
            for (std::size_t i = 0; i < choice.size(); ++i)
                if (double x = cost(choice[(i + c) % choice.size()]); x < best_cost) best_cost = x, best = (i + c) % choice.size();
            const Path& p = choice[best];
            for (std::size_t h = 0; h + 1 < p.size(); ++h) {
                for (ChannelId ch : hops.route[std::size_t{p[h]} * P + p[h + 1]]) {
                    load_c[idx(ch)] += inv_c[idx(ch)];
                    for (std::uint32_t g : t.groups_of(ch)) load_g[g] += inv_g[g];
                }
                plan.send(static_cast<std::uint32_t>(longest - (p.size() - 1) + h + 1), Node{p[h]}, Node{p[h + 1]}, static_cast<std::uint32_t>(idx(ms.personal(s, d, c))));
            }
        }
    return plan.lower(why);
}

}  // namespace collsched::compose
