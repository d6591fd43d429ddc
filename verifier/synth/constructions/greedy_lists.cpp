// Greedy list schedules, the synthesizer's upper bounds where no construction applies: first
// fit per message (personal, free routes), flooding (dissemination), end-to-end sends. Each is
// verified by the direct checker before it is used (verifier/synth/constructions/known.cpp).
#include <algorithm>
#include <chrono>
#include <random>
#include <cmath>
#include <deque>
#include <functional>
#include <limits>
#include <map>
#include <queue>

#include <fmt/format.h>

#include "compiler/table/builder.hpp"
#include "support/assert.hpp"
#include "support/error.hpp"
#include "verifier/check/direct.hpp"
#include "verifier/synth/search/duality.hpp"
#include "verifier/synth/sat/encode.hpp"
#include "verifier/synth/problem/internal.hpp"

namespace collsched::synth_internal {

namespace {

// ---------------------------------------------------------------- greedy schedules

/// Capacity left per (resource, step), growing on demand.
class Ledger {
public:
    explicit Ledger(std::vector<std::uint32_t> caps) : caps_(std::move(caps)) {}
    bool free(std::size_t r, Step t) {
        grow(t);
        return used_[t * caps_.size() + r] < caps_[r];
    }
    void take(std::size_t r, Step t) {
        grow(t);
        ++used_[t * caps_.size() + r];
    }
    std::size_t resources() const { return caps_.size(); }

private:
    void grow(Step t) {
        if ((t + 1) * caps_.size() > used_.size()) used_.resize((t + 64) * caps_.size(), 0);
    }
    std::vector<std::uint32_t> caps_;
    std::vector<std::uint32_t> used_;
};

/// Resources a transfer on channel c uses: the channel, and processor ports.
struct PortMap {
    const Topology& t;
    Ports ports;
    std::size_t C, P;
    std::vector<std::uint32_t> caps() const {
        std::vector<std::uint32_t> v;
        for (const Channel& c : t.channels()) v.push_back(c.cap);
        v.resize(C + 2 * P, 1);
        return v;
    }
    template <class F>
    void each(ChannelId c, F&& f) const {
        f(idx(c));
        if (ports == Ports::multi) return;
        const Channel& ch = t.channel(c);
        if (ports == Ports::single) {
            if (t.is_processor(ch.from)) f(C + idx(ch.from));
            if (t.is_processor(ch.to)) f(C + P + idx(ch.to));
        } else {
            if (t.is_processor(ch.from)) f(C + idx(ch.from));
            if (t.is_processor(ch.to)) f(C + idx(ch.to));
        }
    }
};

}  // namespace

/// First fit, message by message, farthest first: each segment of the route (see synth.hpp)
/// starts at the earliest step where all its hops find capacity and free ports.
std::optional<SendTable> greedy_personal(const SynthInstance& in, std::chrono::steady_clock::time_point deadline) {
    const Topology& t = *in.topology;
    const std::uint32_t P = t.processors();
    PortMap pm{t, in.model.ports, t.channels().size(), P};
    Ledger led(pm.caps());
    auto goals = goal_pairs(in);
    std::vector<std::vector<ChannelId>> routes;
    for (const GoalPair& g : goals) routes.push_back(t.route(g.src, g.dst));
    std::vector<std::size_t> order(goals.size());
    for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
    auto rot = [&](const GoalPair& g) { return (idx(g.dst) + P - idx(g.src)) % P; };
    std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
        if (routes[a].size() != routes[b].size()) return routes[a].size() > routes[b].size();
        return rot(goals[a]) < rot(goals[b]);
    });
    TableBuilder b(in.topology, in.model, in.collective);
    std::size_t done = 0;
    for (std::size_t gi : order) {
        if (++done % 256 == 0 && std::chrono::steady_clock::now() >= deadline) return std::nullopt;
        const auto& r = routes[gi];
        Step earliest = 1;
        std::size_t j0 = 0;
        while (j0 < r.size()) {
            std::size_t j1 = j0 + 1;
            while (j1 < r.size()) {
                Node at = t.channel(r[j1]).from;
                if (t.is_processor(at) || in.model.queues != QueueKind::none) break;
                ++j1;
            }
            Step s = earliest;
            for (;; ++s) {
                bool ok = true;
                for (std::size_t j = j0; j < j1 && ok; ++j)
                    pm.each(r[j], [&](std::size_t res) { ok = ok && led.free(res, s + static_cast<Step>(j - j0)); });
                if (ok) break;
            }
            for (std::size_t j = j0; j < j1; ++j) {
                Step st = s + static_cast<Step>(j - j0);
                pm.each(r[j], [&](std::size_t res) { led.take(res, st); });
                b.hop(st, r[j], goals[gi].m);
            }
            earliest = s + static_cast<Step>(j1 - j0);
            j0 = j1;
        }
    }
    return std::move(b).finish();
}

/// First fit over any route: message by message, farthest first, each along a path of earliest
/// arrival in the time-expanded network of what capacity and ports are still free (waiting
/// where the model allows: processors, routers with unbounded queues). nullopt when a message
/// finds no path within the step cap or the deadline passes.
std::optional<SendTable> greedy_free_route(const SynthInstance& in, std::chrono::steady_clock::time_point deadline) {
    const Topology& t = *in.topology;
    const std::uint32_t P = t.processors(), N = t.nodes();
    PortMap pm{t, in.model.ports, t.channels().size(), P};
    Ledger led(pm.caps());
    auto goals = goal_pairs(in);
    const bool routers_wait = in.model.queues == QueueKind::unbounded;
    auto holder = [&](std::uint32_t v) { return v < P || routers_wait; };
    std::map<std::uint32_t, std::vector<std::uint32_t>> from;
    std::vector<std::uint32_t> len(goals.size());
    for (std::size_t i = 0; i < goals.size(); ++i) {
        auto it = from.find(idx(goals[i].src));
        if (it == from.end()) it = from.emplace(idx(goals[i].src), synth::bfs_distances(t, goals[i].src)).first;
        len[i] = it->second[idx(goals[i].dst)];
        if (len[i] == unreachable) return std::nullopt;
    }
    std::vector<std::size_t> order(goals.size());
    for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
    auto rot = [&](const GoalPair& g) { return (idx(g.dst) + P - idx(g.src)) % P; };
    std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
        if (len[a] != len[b]) return len[a] > len[b];
        return rot(goals[a]) < rot(goals[b]);
    });
    const Step cap_steps = 16 * (N + 8);
    constexpr std::int64_t unseen = -2, waited = -1;
    TableBuilder b(in.topology, in.model, in.collective);
    std::vector<std::vector<std::int64_t>> how;  // how[t][v]: channel taken into v in step t, or waited
    std::size_t done = 0;
    for (std::size_t gi : order) {
        if (++done % 64 == 0 && std::chrono::steady_clock::now() >= deadline) return std::nullopt;
        const GoalPair& g = goals[gi];
        how.assign(1, std::vector<std::int64_t>(N, unseen));
        how[0][idx(g.src)] = waited;
        std::vector<std::uint32_t> front{idx(g.src)};
        Step at = 0;
        while (how[at][idx(g.dst)] == unseen) {
            if (front.empty() || at >= cap_steps) return std::nullopt;
            std::vector<std::int64_t> next(N, unseen);
            std::vector<std::uint32_t> nf;
            const Step s = at + 1;
            for (std::uint32_t u : front) {
                if (holder(u) && next[u] == unseen) {
                    next[u] = waited;
                    nf.push_back(u);
                }
                for (ChannelId c : t.out_channels(Node{u})) {
                    std::uint32_t v = idx(t.channel(c).to);
                    if (next[v] != unseen) continue;
                    bool ok = true;
                    pm.each(c, [&](std::size_t r) { ok = ok && led.free(r, s); });
                    if (!ok) continue;
                    next[v] = idx(c);
                    nf.push_back(v);
                }
            }
            how.push_back(std::move(next));
            front = std::move(nf);
            ++at;
        }
        std::uint32_t v = idx(g.dst);
        for (Step s = at; s > 0; --s) {
            std::int64_t h = how[s][v];
            if (h == waited) continue;
            ChannelId c{static_cast<std::uint32_t>(h)};
            pm.each(c, [&](std::size_t r) { led.take(r, s); });
            b.hop(s, c, g.m);
            v = idx(t.channel(c).from);
        }
    }
    return std::move(b).finish();
}

struct Dissem {
    std::vector<MessageId> msgs;
    std::vector<Node> origin;
    std::vector<std::vector<bool>> goal;  // [message][processor]
};

Dissem dissem_of(const SynthInstance& in) {
    Dissem d;
    const std::uint32_t P = in.topology->processors();
    std::map<std::uint32_t, std::size_t> at;
    Messages ms = in.collective.messages(P);
    in.collective.for_each_goal(P, [&](MessageId m, Node p) {
        auto [it, fresh] = at.try_emplace(idx(m), d.msgs.size());
        if (fresh) {
            d.msgs.push_back(m);
            d.origin.push_back(ms.origin(m));
            d.goal.emplace_back(P, false);
        }
        d.goal[it->second][idx(p)] = true;
    });
    return d;
}

/// Step-by-step flooding under hop timing: in every step, every node offers the messages it
/// may send (held, or arrived in the previous step at a queue-free replicating router) to each
/// neighbour closer to a goal processor that still lacks them; capacities and ports are taken
/// first come first served, the oldest message first. Returns nullopt when it stalls.
std::optional<SendTable> greedy_flood(const SynthInstance& in, std::chrono::steady_clock::time_point deadline) {
    const Topology& t = *in.topology;
    const Model& model = in.model;
    const std::uint32_t N = t.nodes(), P = t.processors();
    Dissem dm = dissem_of(in);
    const std::size_t M = dm.msgs.size();
    const bool routers_hold = synth::routers_hold(in, EncodingKind::dissemination);
    auto holder = [&](std::uint32_t v) { return v < P || routers_hold; };
    // All-pairs distances and a per-step scan of every node: beyond this size the greedy is
    // not worth its memory and time (the search then starts without a known schedule).
    if (std::uint64_t{N} * N > 50'000'000) return std::nullopt;
    std::vector<std::vector<std::uint32_t>> dist(N);
    for (std::uint32_t v = 0; v < N; ++v) {  // N searches of the whole machine: the deadline between them
        if (std::chrono::steady_clock::now() >= deadline) return std::nullopt;
        dist[v] = synth::bfs_distances(t, Node{v});
    }
    constexpr Step never = std::numeric_limits<Step>::max();
    std::vector<Step> since(M * N, never);      // holders: step after which v holds m
    std::vector<Step> arrived(M * N, never);    // queue-free routers: last arrival step
    for (std::size_t i = 0; i < M; ++i) since[i * N + idx(dm.origin[i])] = 0;
    std::size_t missing = 0;
    for (std::size_t i = 0; i < M; ++i)
        for (std::uint32_t p = 0; p < P; ++p) missing += dm.goal[i][p];
    PortMap pm{t, model.ports, t.channels().size(), P};
    TableBuilder b(in.topology, model, in.collective);
    const Step cap_steps = 8 * (P + 8) * static_cast<Step>(M + 1);
    std::vector<std::uint8_t> pending(M * N, 0);  // copies arriving this step (for holders)
    for (Step s = 1; missing > 0; ++s) {
        if (s > cap_steps || std::chrono::steady_clock::now() >= deadline) return std::nullopt;
        Ledger led(pm.caps());
        std::vector<std::pair<std::size_t, std::uint32_t>> got;  // (message, node) receiving in step s
        std::fill(pending.begin(), pending.end(), 0);
        for (std::uint32_t k = 0; k < N; ++k) {
            std::uint32_t u = (k + s) % N;
            std::vector<std::pair<Step, std::size_t>> offer;
            for (std::size_t i = 0; i < M; ++i) {
                if (holder(u) ? since[i * N + u] < s : arrived[i * N + u] == s - 1) offer.push_back({holder(u) ? since[i * N + u] : 0, i});
            }
            std::stable_sort(offer.begin(), offer.end());
            for (auto [when, i] : offer) {
                for (ChannelId c : t.out_channels(Node{u})) {
                    std::uint32_t v = idx(t.channel(c).to);
                    if (holder(v) && (since[i * N + v] != never || pending[i * N + v])) continue;
                    // Useful: a goal processor lacking m that v is closer to than u.
                    bool useful = false;
                    for (std::uint32_t p = 0; p < P && !useful; ++p)
                        useful = dm.goal[i][p] && since[i * N + p] == never && !pending[i * N + p] && dist[v][p] < dist[u][p];
                    if (!useful) continue;
                    bool ok = true;
                    pm.each(c, [&](std::size_t r) { ok = ok && led.free(r, 0); });
                    if (!ok) continue;
                    pm.each(c, [&](std::size_t r) { led.take(r, 0); });
                    b.hop(s, c, dm.msgs[i]);
                    got.push_back({i, v});
                    if (holder(v)) pending[i * N + v] = 1;
                }
            }
        }
        for (auto [i, v] : got) {
            if (holder(v)) {
                if (since[i * N + v] == never) {
                    since[i * N + v] = s;
                    if (v < P && dm.goal[i][v]) --missing;
                }
            } else {
                arrived[i * N + v] = s;
            }
        }
    }
    return std::move(b).finish();
}

/// End-to-end sends (ideal fat tree): in every step every holder with a free send port sends a
/// message it holds to the nearest processor that lacks it and is not already being sent it,
/// when capacity along the route and the receiver's port at arrival allow.
std::optional<SendTable> greedy_end_to_end(const SynthInstance& in, std::chrono::steady_clock::time_point deadline) {
    const Topology& t = *in.topology;
    const Model& model = in.model;
    const std::uint32_t P = t.processors();
    Dissem dm = dissem_of(in);
    const std::size_t M = dm.msgs.size();
    constexpr Step never = std::numeric_limits<Step>::max();
    std::vector<Step> since(M * P, never);
    std::vector<std::uint8_t> targeted(M * P, 0);
    for (std::size_t i = 0; i < M; ++i) {
        since[i * P + idx(dm.origin[i])] = 0;
        targeted[i * P + idx(dm.origin[i])] = 1;
    }
    std::size_t missing = 0;
    for (std::size_t i = 0; i < M; ++i)
        for (std::uint32_t p = 0; p < P; ++p) missing += dm.goal[i][p];
    PortMap pm{t, model.ports, t.channels().size(), P};
    Ledger led(pm.caps());
    TableBuilder b(in.topology, model, in.collective);
    std::vector<std::tuple<Step, std::size_t, std::uint32_t>> inflight;  // arrival, message, processor
    const Step cap_steps = 8 * (P + 8) * static_cast<Step>(M + 1);
    for (Step s = 1; missing > 0; ++s) {
        if (s > cap_steps || std::chrono::steady_clock::now() >= deadline) return std::nullopt;
        for (std::uint32_t k = 0; k < P; ++k) {
            std::uint32_t p = (k + s) % P;
            bool sent = false;
            for (std::size_t i = 0; i < M && !sent; ++i) {
                if (since[i * P + p] >= s) continue;
                std::vector<std::pair<std::uint32_t, std::uint32_t>> cand;
                for (std::uint32_t q = 0; q < P; ++q)
                    if (!targeted[i * P + q] && dm.goal[i][q]) cand.push_back({t.distance(Node{p}, Node{q}), q});
                std::sort(cand.begin(), cand.end());
                for (auto [len, q] : cand) {
                    auto r = t.route(Node{p}, Node{q});
                    bool ok = true;
                    for (std::size_t j = 0; j < r.size() && ok; ++j)
                        pm.each(r[j], [&](std::size_t res) { ok = ok && led.free(res, s + static_cast<Step>(j)); });
                    if (!ok) continue;
                    for (std::size_t j = 0; j < r.size(); ++j) {
                        pm.each(r[j], [&](std::size_t res) { led.take(res, s + static_cast<Step>(j)); });
                        b.hop(s + static_cast<Step>(j), r[j], dm.msgs[i]);
                    }
                    targeted[i * P + q] = 1;
                    inflight.push_back({s + len - 1, i, q});
                    sent = true;
                    break;
                }
                if (model.ports == Ports::multi) sent = false;
            }
        }
        for (auto& [a, i, q] : inflight)
            if (a == s) {
                since[i * P + q] = s;
                --missing;
            }
    }
    return std::move(b).finish();
}

}  // namespace collsched::synth_internal
