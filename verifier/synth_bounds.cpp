// Lower bounds proved by counting (no solver), and upper bounds from schedules: the known
// algorithms of the papers where one applies, and greedy list schedules otherwise. Every
// schedule returned here has been verified by the direct checker under the instance's model.
#include <algorithm>
#include <chrono>
#include <random>
#include <cmath>
#include <deque>
#include <functional>
#include <iterator>
#include <limits>
#include <map>
#include <queue>

#include <fmt/format.h>

#include "compiler/builder.hpp"
#include "dsl/diagnostics.hpp"
#include "verifier/class_bounds.hpp"
#include "verifier/direct.hpp"
#include "verifier/synth_duality.hpp"
#include "verifier/synth_encode.hpp"

namespace collsched {

namespace {

constexpr std::uint32_t unreachable = std::numeric_limits<std::uint32_t>::max();

/// One unit job of a resource: it may be processed in step `release` or later, and `tail` more
/// steps must follow it. With `cap` jobs per step, the least possible max(step + tail) is what
/// list scheduling by largest tail achieves (for unit jobs with integer releases on identical
/// machines this rule is optimal: an exchange argument moves any job with a larger tail into
/// an earlier slot without delaying the other).
struct Job {
    Step release;
    Step tail;
};

Step least_makespan(std::vector<Job> jobs, std::uint32_t cap) {
    if (jobs.empty()) return 0;
    std::sort(jobs.begin(), jobs.end(), [](const Job& a, const Job& b) { return a.release < b.release; });
    std::priority_queue<Step> ready;
    std::size_t next = 0;
    Step t = jobs.front().release, best = 0;
    while (next < jobs.size() || !ready.empty()) {
        if (ready.empty() && jobs[next].release > t) t = jobs[next].release;
        while (next < jobs.size() && jobs[next].release <= t) ready.push(jobs[next++].tail);
        for (std::uint32_t k = 0; k < cap && !ready.empty(); ++k) {
            best = std::max(best, t + ready.top());
            ready.pop();
        }
        ++t;
    }
    return best;
}

std::string channel_name(const Topology& t, ChannelId c) {
    return t.node_name(t.channel(c).from) + "->" + t.node_name(t.channel(c).to);
}

struct GoalPair {
    MessageId m;
    Node src, dst;
};

std::vector<GoalPair> goal_pairs(const SynthInstance& in) {
    std::vector<GoalPair> g;
    Messages ms = in.collective.messages(in.topology->processors());
    in.collective.for_each_goal(in.topology->processors(), [&](MessageId m, Node d) { g.push_back({m, ms.origin(m), d}); });
    return g;
}

void keep_max(std::vector<Bound>& out, Bound b) {
    for (Bound& x : out)
        if (x.name == b.name) {
            if (b.steps > x.steps) x = std::move(b);
            return;
        }
    out.push_back(std::move(b));
}

/// Whether every walk between two processors contains the topology's route (trees, the linear
/// array): then a bound that counts hops on routes holds for any route.
bool unique_routes(const Topology& t) { return t.is_tree() || t.family() == Family::linear; }

/// Send/receive sums (docs/synthesis.md): `dist` gives each goal's least number of hops.
std::optional<Bound> send_receive_sums(const SynthInstance& in, const std::vector<GoalPair>& goals,
                                       const std::function<std::uint32_t(const GoalPair&)>& dist) {
    const Topology& t = *in.topology;
    const Model& model = in.model;
    const std::uint32_t P = t.processors();
    // A processor starts at most c_out of its own messages per step, so the injection steps of
    // its k messages sum to at least sum_j (floor(j/c_out) + 1); a processor receives at most
    // c_in per step, so the arrival steps of its k messages sum to at most sum_j (T -
    // floor(j/c_in)); and every message arrives at least len-1 steps after its injection.
    // Summed over all messages: N*T - R - S >= sum (len - 1).
    std::vector<std::uint64_t> outs(P, 0), ins(P, 0);
    std::uint64_t lam = 0;
    for (const GoalPair& g : goals) {
        ++outs[idx(g.src)];
        ++ins[idx(g.dst)];
        lam += dist(g) - 1;
    }
    bool grouped = false;
    auto capacity = [&](std::span<const ChannelId> cs) {
        if (model.ports != Ports::multi) return std::uint64_t{1};
        auto c = synth::step_capacity(t, model.ports, cs);
        grouped |= c.by_groups;
        return std::max<std::uint64_t>(c.hops, 1);
    };
    std::uint64_t S = 0, R = 0;
    for (std::uint32_t p = 0; p < P; ++p) {
        std::uint64_t co = capacity(t.out_channels(Node{p})), ci = capacity(t.in_channels(Node{p}));
        for (std::uint64_t j = 0; j < outs[p]; ++j) S += j / co + 1;
        for (std::uint64_t j = 0; j < ins[p]; ++j) R += j / ci;
    }
    const std::uint64_t N = goals.size();
    if (N == 0) return std::nullopt;
    Step v = static_cast<Step>((lam + S + R + N - 1) / N);
    return Bound{v, "send/receive sums",
                 fmt::format("injections of each processor take distinct slots (sum >= {}), arrivals distinct slots "
                             "(sum <= {}*T - {}), and arrivals exceed injections by sum(len - 1) = {} in all: "
                             "T >= ({} + {} + {}) / {} = {:.2f}",
                             S, N, R, lam, lam, S, R, N, static_cast<double>(lam + S + R) / static_cast<double>(N)),
                 RouteSpace::any,
                 grouped ? std::vector<std::string>{"link groups"} : std::vector<std::string>{}};
}

/// Bounds that count hops on the topology's routes. They hold for any route where routes are
/// unique (every walk crosses every channel of the route, the j-th of them no earlier than step
/// j and with at least the route's remaining hops after it); elsewhere only on fixed routes.
std::vector<Bound> route_bounds(const SynthInstance& in, const std::vector<GoalPair>& goals) {
    const Topology& t = *in.topology;
    const Model& model = in.model;
    std::vector<Bound> out;
    const std::uint32_t P = t.processors();
    std::vector<std::vector<Job>> chan(t.channels().size()), send(P), recv(P), port(P);
    Step far = 0;
    std::string far_what;
    for (const GoalPair& g : goals) {
        auto r = t.route(g.src, g.dst);
        const Step k = static_cast<Step>(r.size());
        if (k > far) {
            far = k;
            far_what = in.collective.messages(P).name(g.m);
        }
        for (Step j = 0; j < k; ++j) {
            Job job{j + 1, k - 1 - j};
            chan[idx(r[j])].push_back(job);
            const Channel& c = t.channel(r[j]);
            if (t.is_processor(c.from)) {
                send[idx(c.from)].push_back(job);
                port[idx(c.from)].push_back(job);
            }
            if (t.is_processor(c.to)) {
                recv[idx(c.to)].push_back(job);
                port[idx(c.to)].push_back(job);
            }
        }
    }
    out.push_back({far, "distance", fmt::format("{} has a route of {} channels", far_what, far), RouteSpace::any, {}});
    if (auto b = send_receive_sums(in, goals, [&](const GoalPair& g) { return t.distance(g.src, g.dst); })) {
        b->assumes.insert(b->assumes.begin(), "one injection and one arrival slot per message at its endpoints (holds with relays and copies)");
        out.push_back(*b);
    }
    for (std::size_t c = 0; c < chan.size(); ++c) {
        if (chan[c].empty()) continue;
        const Channel& ch = t.channels()[c];
        Step v = least_makespan(chan[c], ch.cap);
        bool leaf = t.is_processor(ch.from) || t.is_processor(ch.to);
        keep_max(out, {v, leaf ? "processor channels" : "router channels",
                       fmt::format("{} messages cross {} (capacity {}) at the earliest in their hop's step and with their "
                                   "remaining hops after it",
                                   chan[c].size(), channel_name(t, ChannelId{static_cast<std::uint32_t>(c)}), ch.cap), RouteSpace::any, {}});
    }
    if (model.ports != Ports::multi)
        for (std::uint32_t p = 0; p < P; ++p) {
            if (model.ports == Ports::single) {
                keep_max(out, {least_makespan(send[p], 1), "ports",
                               fmt::format("processor {} sends {} hops, one per step (single port)", p, send[p].size()), RouteSpace::any, {}});
                keep_max(out, {least_makespan(recv[p], 1), "ports",
                               fmt::format("processor {} receives {} hops, one per step (single port)", p, recv[p].size()), RouteSpace::any, {}});
            } else {
                keep_max(out, {least_makespan(port[p], 1), "ports",
                               fmt::format("processor {} sends or receives {} hops, one per step (half duplex)", p,
                                           port[p].size()), RouteSpace::any, {}});
            }
        }
    const bool unique = unique_routes(t);
    for (Bound& b : out) {
        if (unique) {
            b.assumes.push_back(t.routers() == 0 ? "unique routes (linear array): every walk crosses each channel of the route"
                                                 : "unique routes (tree): every walk crosses each channel of the route");
        } else {
            b.routes = RouteSpace::fixed;
            b.assumes.push_back("fixed routes: every message crosses exactly the channels of its route");
            b.name += " (fixed routes)";
        }
        if (b.name.starts_with("ports")) b.assumes.push_back(fmt::format("ports={}", model.ports == Ports::single ? "single" : "half"));
    }
    return out;
}

/// Bounds over every walk (no route assumption), from shortest-path distances: distance,
/// channel counting, cut counting (single processors, balls around processors) and the
/// send/receive sums with graph distances.
std::vector<Bound> free_route_bounds(const SynthInstance& in, const std::vector<GoalPair>& goals) {
    const Topology& t = *in.topology;
    const Model& model = in.model;
    const std::uint32_t P = t.processors(), N = t.nodes();
    std::vector<Bound> out;
    // Distances from and to every processor that is an endpoint.
    std::vector<std::vector<std::uint32_t>> from(P), to(P);
    for (const GoalPair& g : goals) {
        if (from[idx(g.src)].empty()) from[idx(g.src)] = synth::bfs_distances(t, g.src);
        if (to[idx(g.dst)].empty()) to[idx(g.dst)] = synth::bfs_distances_to(t, g.dst);
    }
    auto d = [&](const GoalPair& g) { return from[idx(g.src)][idx(g.dst)]; };
    Step far = 0;
    std::string far_what;
    std::uint64_t hops = 0;
    for (const GoalPair& g : goals) {
        if (d(g) == unreachable)
            throw InputError(fmt::format("{} cannot reach processor {} from {}: no schedule exists", in.collective.messages(P).name(g.m), idx(g.dst), idx(g.src)));
        hops += d(g);
        if (d(g) > far) {
            far = d(g);
            far_what = in.collective.messages(P).name(g.m);
        }
    }
    out.push_back({far, "distance", fmt::format("{} is {} channels away", far_what, far), RouteSpace::any, {"shortest-path distances"}});
    if (auto b = send_receive_sums(in, goals, d)) {
        b->assumes.insert(b->assumes.begin(), {"shortest-path distances", "one injection and one arrival slot per message at its endpoints (holds with relays and copies)"});
        if (model.ports != Ports::multi) b->assumes.push_back("at most one send and one receive per processor and step (ports)");
        out.push_back(*b);
    }
    {
        // Channel counting: every message makes at least its distance in hops, and a step has
        // at most K hops in all (the channel capacities; without routers also the ports).
        std::uint64_t K = 0;
        for (const Channel& c : t.channels()) K += c.cap;
        std::string what = fmt::format("the channels carry at most {} hops per step", K);
        std::vector<std::string> as{"shortest-path distances"};
        if (t.routers() == 0 && model.ports != Ports::multi) {
            std::uint64_t sends = 0, recvs = 0;
            for (std::uint32_t p = 0; p < P; ++p) {
                std::uint64_t o = 0, i = 0;
                for (ChannelId c : t.out_channels(Node{p})) o += t.channel(c).cap;
                for (ChannelId c : t.in_channels(Node{p})) i += t.channel(c).cap;
                sends += std::min<std::uint64_t>(o, 1);
                recvs += std::min<std::uint64_t>(i, 1);
            }
            std::uint64_t k = std::min(sends, recvs);
            if (model.ports == Ports::half) k = std::min<std::uint64_t>(k, P / 2);
            if (k < K) {
                K = k;
                what = fmt::format("every hop is a send and a receive by processors, at most {} per step ({})", K,
                                   model.ports == Ports::half ? "half duplex" : "single port");
                as.push_back(model.ports == Ports::half ? "ports=half" : "ports=single");
                as.push_back("no routers");
            }
        }
        if (!t.groups().empty()) {
            std::vector<ChannelId> every(t.channels().size());
            for (std::uint32_t c = 0; c < every.size(); ++c) every[c] = ChannelId{c};
            if (auto g = synth::step_capacity(t, Ports::multi, every); g.by_groups && g.hops < K) {
                K = g.hops;
                what = fmt::format("the link groups carry at most {} hops per step", K);
                as = {"shortest-path distances", "link groups"};
            }
        }
        if (K > 0)
            out.push_back({static_cast<Step>((hops + K - 1) / K), "channel counting",
                           fmt::format("the messages need {} hops at least (sum of distances) and {}", hops, what), RouteSpace::any,
                           as});
    }
    // Cut counting: the messages from inside a node set S to outside must each cross a channel
    // out of S; with c* the one crossed, in a step >= dist(src, from c*) + 1 and with
    // dist(to c*, dst) hops after it. Unit jobs (release: least over the cut's channels; tail:
    // least over them) on as many machines as the cut carries per step.
    std::vector<std::vector<std::uint32_t>> by_src(P), by_dst(P), all(1);
    for (std::uint32_t i = 0; i < goals.size(); ++i) {
        by_src[idx(goals[i].src)].push_back(i);
        by_dst[idx(goals[i].dst)].push_back(i);
        all[0].push_back(i);
    }
    auto cut_bound = [&](const std::vector<char>& inside, const std::vector<std::uint32_t>& which, std::uint64_t machines,
                         const std::string& what, std::vector<std::string> as) {
        std::vector<ChannelId> cut;
        for (std::size_t c = 0; c < t.channels().size(); ++c) {
            const Channel& ch = t.channels()[c];
            if (inside[idx(ch.from)] && !inside[idx(ch.to)]) cut.push_back(ChannelId{static_cast<std::uint32_t>(c)});
        }
        if (cut.empty() || machines == 0) return;
        std::vector<Job> jobs;
        for (std::uint32_t gi : which) {
            const GoalPair& g = goals[gi];
            if (!(inside[idx(g.src)] && !inside[idx(g.dst)])) continue;
            Step rel = std::numeric_limits<Step>::max(), tail = rel;
            for (ChannelId c : cut) {
                const Channel& ch = t.channel(c);
                std::uint32_t a = from[idx(g.src)][idx(ch.from)], b = to[idx(g.dst)][idx(ch.to)];
                if (a == unreachable || b == unreachable) continue;
                rel = std::min<Step>(rel, a + 1);
                tail = std::min<Step>(tail, b);
            }
            if (rel == std::numeric_limits<Step>::max()) continue;
            jobs.push_back({rel, tail});
        }
        if (jobs.empty()) return;
        as.insert(as.begin(), "shortest-path distances");
        keep_max(out, {least_makespan(jobs, static_cast<std::uint32_t>(std::min<std::uint64_t>(machines, 1u << 30))), "cut counting",
                       fmt::format("{} messages must cross {} ({} per step), each no earlier than its distance to the cut "
                                   "and with its distance beyond it still to go",
                                   jobs.size(), what, machines),
                       RouteSpace::any, std::move(as)});
    };
    // What a cut carries per step (ports and link groups) and the assumptions that uses.
    auto cut_capacity = [&](std::span<const ChannelId> cs, std::vector<std::string>& as) {
        auto c = synth::step_capacity(t, model.ports, cs);
        if (c.by_ports) as.push_back(model.ports == Ports::single ? "ports=single" : "ports=half");
        if (c.by_groups) as.push_back("link groups");
        return c.hops;
    };
    auto crossing = [&](const std::vector<char>& inside, bool into) { return synth::crossing_channels(t, inside, into); };
    std::vector<char> inside(N, 0);
    // Single processors: injection (out of {p}) and reception (into {p}, i.e. out of V \ {p}).
    for (std::uint32_t p = 0; p < P; ++p) {
        std::vector<std::string> as, ais;
        std::uint64_t o = cut_capacity(t.out_channels(Node{p}), as), i = cut_capacity(t.in_channels(Node{p}), ais);
        std::fill(inside.begin(), inside.end(), 0);
        inside[p] = 1;
        cut_bound(inside, by_src[p], o, fmt::format("out of processor {}", p), as);
        std::fill(inside.begin(), inside.end(), 1);
        inside[p] = 0;
        cut_bound(inside, by_dst[p], i, fmt::format("into processor {}", p), ais);
    }
    // Balls around processors (radius 1 .. eccentricity - 1) and their complements; bounded work.
    const std::uint64_t work = goals.size() * std::uint64_t{P} * 8;
    if (work <= 20'000'000) {
        for (std::uint32_t p = 0; p < P; ++p) {
            if (from[p].empty()) from[p] = synth::bfs_distances(t, Node{p});
            std::uint32_t ecc = 0;
            for (std::uint32_t v = 0; v < N; ++v)
                if (from[p][v] != unreachable) ecc = std::max(ecc, from[p][v]);
            for (std::uint32_t r = 1; r < ecc && r <= 8; ++r) {
                for (std::uint32_t v = 0; v < N; ++v) inside[v] = from[p][v] <= r;
                std::vector<std::string> oas, ias;
                std::uint64_t out_cap = cut_capacity(crossing(inside, false), oas), in_cap = cut_capacity(crossing(inside, true), ias);
                cut_bound(inside, all[0], out_cap, fmt::format("out of the ball of radius {} around node {}", r, p), oas);
                for (std::uint32_t v = 0; v < N; ++v) inside[v] = !inside[v];
                cut_bound(inside, all[0], in_cap, fmt::format("into the ball of radius {} around node {}", r, p), ias);
            }
        }
    }
    // Voronoi halves: for two processors a, b the nodes at least as close to a as to b (the
    // bisections of machines joined by a few links, e.g. two DGX-1s); bounded work.
    if (goals.size() * std::uint64_t{P} * P <= 20'000'000) {
        for (std::uint32_t p = 0; p < P; ++p)
            if (from[p].empty()) from[p] = synth::bfs_distances(t, Node{p});
        for (std::uint32_t a = 0; a < P; ++a)
            for (std::uint32_t b = a + 1; b < P; ++b) {
                for (std::uint32_t v = 0; v < N; ++v) inside[v] = from[a][v] <= from[b][v];
                std::vector<std::string> oas, ias;
                std::uint64_t out_cap = cut_capacity(crossing(inside, false), oas), in_cap = cut_capacity(crossing(inside, true), ias);
                cut_bound(inside, all[0], out_cap, fmt::format("out of the nodes at least as close to {} as to {}", a, b), oas);
                for (std::uint32_t v = 0; v < N; ++v) inside[v] = !inside[v];
                cut_bound(inside, all[0], in_cap, fmt::format("into the nodes at least as close to {} as to {}", a, b), ias);
            }
    }
    return out;
}

std::vector<Bound> personal_bounds(const SynthInstance& in) {
    auto goals = goal_pairs(in);
    std::vector<Bound> out = route_bounds(in, goals);
    if (!unique_routes(*in.topology)) {
        auto free = free_route_bounds(in, goals);
        out.insert(out.end(), free.begin(), free.end());
    }
    return out;
}

std::vector<Bound> dissemination_bounds(const SynthInstance& in, EncodingKind kind) {
    const Topology& t = *in.topology;
    const Model& model = in.model;
    const std::uint32_t P = t.processors();
    std::vector<Bound> out;
    auto goals = goal_pairs(in);
    std::map<std::uint32_t, std::vector<std::uint32_t>> dist;  // per origin
    Step far = 0;
    std::string far_what;
    std::vector<std::vector<Job>> recv(P);
    bool dissem_grouped = false;  // a reception or copy count cut by link groups
    for (const GoalPair& g : goals) {
        auto it = dist.find(idx(g.src));
        if (it == dist.end()) it = dist.emplace(idx(g.src), synth::bfs_distances(t, g.src)).first;
        std::uint32_t d = it->second[idx(g.dst)];
        if (d == unreachable) continue;
        if (d > far) {
            far = d;
            far_what = fmt::format("{} to {}", in.collective.messages(P).name(g.m), idx(g.dst));
        }
        recv[idx(g.dst)].push_back({d, 0});
    }
    out.push_back({far, "distance", fmt::format("{} is {} channels away", far_what, far), RouteSpace::any, {}});
    for (std::uint32_t p = 0; p < P; ++p) {
        if (recv[p].empty()) continue;
        auto c = synth::step_capacity(t, model.ports, t.in_channels(Node{p}));
        const std::uint32_t cap = static_cast<std::uint32_t>(std::min<std::uint64_t>(std::max<std::uint64_t>(c.hops, 1), 1u << 30));
        dissem_grouped |= c.by_groups && cap > 0;
        keep_max(out, {least_makespan(recv[p], cap), "receptions",
                       fmt::format("processor {} must receive {} messages, {} per step{}, each no earlier than its distance",
                                   p, recv[p].size(), cap, c.by_groups ? " (its link groups)" : ""),
                       RouteSpace::any,
                       {}});
    }
    if (model.ports == Ports::half && t.routers() == 0 && P >= 2) {
        std::uint64_t per = P / 2;
        Step v = static_cast<Step>((goals.size() + per - 1) / per);
        out.push_back({v, "half-duplex pairing",
                       fmt::format("{} receptions are needed and a step has at most {} transfers (each uses a sender and a "
                                   "receiver, every processor does one of the two)",
                                   goals.size(), per), RouteSpace::any, {}});
    }
    // Informed processors of one message: each holder starts at most k copies per step, a copy
    // arrives at least dmin steps after it leaves; I(t) <= 1 + k * sum_{s <= t-dmin+1} I(s-1).
    bool router_free = t.routers() == 0;
    if (kind == EncodingKind::end_to_end || router_free) {
        std::uint32_t dmin = 1;
        if (kind == EncodingKind::end_to_end) {
            dmin = unreachable;
            for (std::uint32_t q = 1; q < P; ++q) dmin = std::min(dmin, t.distance(Node{0}, Node{q}));
        }
        std::uint32_t k = 1;
        if (model.ports == Ports::multi) {
            k = 0;
            for (std::uint32_t p = 0; p < P; ++p) {
                auto c = synth::step_capacity(t, model.ports, t.out_channels(Node{p}));
                dissem_grouped |= c.by_groups;
                k = std::max(k, static_cast<std::uint32_t>(std::min<std::uint64_t>(c.hops, 1u << 30)));
            }
        }
        std::map<std::uint32_t, std::size_t> need;  // per message: goal processors + its origin
        for (const GoalPair& g : goals) ++need[idx(g.m)];
        std::size_t most = 0;
        for (auto& [m, n] : need) most = std::max(most, n + 1);
        if (most > 1) {
            std::vector<double> I{1};
            Step T = 0;
            while (I.back() < static_cast<double>(most)) {
                ++T;
                double v = 1;
                for (Step s = 1; s + dmin <= T + 1; ++s) v += k * I[s - 1];
                I.push_back(v);
            }
            out.push_back({T, "informed growth",
                           fmt::format("a message must reach {} processors; every holder starts at most {} cop{} per step "
                                       "and a copy needs at least {} step{}, so at most {} hold it after {} steps",
                                       most, k, k == 1 ? "y" : "ies", dmin, dmin == 1 ? "" : "s",
                                       static_cast<std::uint64_t>(I[T - 1]), T - 1), RouteSpace::any, {}});
        }
    }
    // Assumptions (all hold for any route: they use shortest-path distances only).
    std::string ports = model.ports == Ports::multi ? "ports=multi (receive capacity = channel capacities)"
                                                    : fmt::format("ports={}", model.ports == Ports::single ? "single" : "half");
    for (Bound& b : out) {
        if (b.name == "distance") b.assumes = {"shortest-path distances"};
        else if (b.name == "receptions") b.assumes = {"shortest-path distances", ports};
        else if (b.name == "half-duplex pairing") b.assumes = {"ports=half", "no routers"};
        else if (b.name == "informed growth")
            b.assumes = {kind == EncodingKind::end_to_end ? "end-to-end sends (the ideal fat tree's model)" : "no routers", ports};
        if (dissem_grouped && (b.name == "receptions" || b.name == "informed growth")) b.assumes.push_back("link groups");
    }
    return out;
}

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
    for (std::uint32_t v = 0; v < N; ++v) dist[v] = synth::bfs_distances(t, Node{v});
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

/// Total exchange on a binary fat tree that is invariant under the translations s -> s ^ a
/// (each is an automorphism of the tree: it swaps children at some levels): processor s sends
/// m(s, s^k) in step f(k), for every s. A processor's injections are then distinct iff f is
/// injective, and its arrivals f(k) + len(k) - 1 (len(k), the distance from s to s^k, is the
/// same for every s) are distinct iff f + len - 1 is injective: a problem of n-1 items for one
/// processor, solved with CaDiCaL for T from its own sum bound up to max_T. Inner channels are
/// left to the verification (on the EBFT they cannot overflow: a subtree of s leaves has
/// channels of capacity s above it, and its leaves inject and receive one message per step).
/// Total exchange on a binary fat tree that is invariant under the translations s -> s ^ a
/// (each is an automorphism of the tree: it swaps children at some levels): processor s sends
/// m(s, s^k) in step f(k), for every s. A processor's injections are then distinct iff f is
/// injective, and its arrivals f(k) + len(k) - 1 (len(k), the distance from s to s^k, is the
/// same for every s) are distinct iff f + len - 1 is injective (half duplex: and no step holds
/// both a start and an end). That is a problem of n-1 items for one processor, solved here by
/// min-conflicts local search (fixed seed, so the result is reproducible) for T from its own
/// sum bound up to max_T. Inner channels are left to the verification: on the EBFT they cannot
/// overflow (a subtree of s leaves has channels of capacity s above it, and its leaves inject
/// and receive one message per step, all moving in lockstep).
std::optional<SendTable> xor_invariant_alltoall(const SynthInstance& in, Step max_T) {
    const Topology& t = *in.topology;
    const std::uint32_t n = t.processors();
    if (t.family() != Family::bft || in.collective.kind != CollectiveKind::alltoall || n < 4 || (n & (n - 1)) != 0) return std::nullopt;
    const std::uint32_t m = n - 1;
    std::vector<Step> len(n);
    std::uint64_t sum = 0;
    for (std::uint32_t k = 1; k < n; ++k) sum += (len[k] = t.distance(Node{0}, Node{k})) - 1;
    const bool half = in.model.ports == Ports::half;
    std::mt19937 rng(20240601);
    for (Step T = static_cast<Step>(m + (sum + m - 1) / m); T <= max_T; ++T) {
        // occupancy per step: starts in starts[], ends in ends[] (the same array under half duplex)
        std::vector<std::uint32_t> starts(T + 2, 0), ends_own(T + 2, 0);
        std::vector<std::uint32_t>& ends = half ? starts : ends_own;
        std::vector<Step> f(n, 0);
        bool room = true;
        for (std::uint32_t k = 1; k < n && room; ++k) {
            if (len[k] > T) room = false;
            else {
                f[k] = 1 + static_cast<Step>(rng() % (T - len[k] + 1));
                ++starts[f[k]];
                ++ends[f[k] + len[k] - 1];
            }
        }
        if (!room) continue;
        auto clash = [&](std::uint32_t k) { return starts[f[k]] > 1 || ends[f[k] + len[k] - 1] > 1; };
        std::vector<std::uint32_t> bad, best;
        for (std::uint64_t move = 0; move < 400000; ++move) {
            bad.clear();
            for (std::uint32_t k = 1; k < n; ++k)
                if (clash(k)) bad.push_back(k);
            if (bad.empty()) {
                TableBuilder b(in.topology, in.model, in.collective);
                Messages ms(n);
                for (std::uint32_t k = 1; k < n; ++k)
                    for (std::uint32_t p = 0; p < n; ++p) b.send_cut_through(f[k], Node{p}, Node{p ^ k}, ms.personal(p, p ^ k));
                return std::move(b).finish();
            }
            std::uint32_t k = bad[rng() % bad.size()];
            --starts[f[k]];
            --ends[f[k] + len[k] - 1];
            std::uint32_t low = std::numeric_limits<std::uint32_t>::max();
            best.clear();
            for (Step s = 1; s + len[k] - 1 <= T; ++s) {
                std::uint32_t c = starts[s] + ends[s + len[k] - 1];
                if (c < low) {
                    low = c;
                    best.clear();
                }
                if (c == low) best.push_back(s);
            }
            // Mostly the least-conflict step; now and then a random one, to leave plateaus.
            f[k] = rng() % 10 == 0 ? 1 + static_cast<Step>(rng() % (T - len[k] + 1)) : best[rng() % best.size()];
            ++starts[f[k]];
            ++ends[f[k] + len[k] - 1];
        }
    }
    return std::nullopt;
}

/// Edge colouring of a bipartite multigraph with `colors` >= its largest degree (Koenig's
/// theorem; alternating-path recolouring). edges[e] = (left, right); returns a colour per edge.
std::vector<std::uint32_t> bipartite_edge_coloring(std::uint32_t left, std::uint32_t right,
                                                   const std::vector<std::pair<std::uint32_t, std::uint32_t>>& edges,
                                                   std::uint32_t colors) {
    constexpr std::uint32_t none = std::numeric_limits<std::uint32_t>::max();
    // at[side][vertex * colors + c]: the edge of colour c at the vertex, or none.
    std::vector<std::uint32_t> atL(std::size_t{left} * colors, none), atR(std::size_t{right} * colors, none);
    std::vector<std::uint32_t> col(edges.size(), none);
    auto free_at = [&](std::vector<std::uint32_t>& at, std::uint32_t v) {
        for (std::uint32_t c = 0; c < colors; ++c)
            if (at[std::size_t{v} * colors + c] == none) return c;
        return none;
    };
    for (std::uint32_t e = 0; e < edges.size(); ++e) {
        auto [u, v] = edges[e];
        std::uint32_t a = free_at(atL, u), b = free_at(atR, v);
        if (atR[std::size_t{v} * colors + a] != none) {
            // Swap a and b along the path from v that alternates a, b, a, ... (it cannot reach u).
            std::vector<std::uint32_t> path;
            std::uint32_t x = v, want = a;
            bool on_right = true;
            for (;;) {
                std::uint32_t f = (on_right ? atR : atL)[std::size_t{x} * colors + want];
                if (f == none) break;
                path.push_back(f);
                x = on_right ? edges[f].first : edges[f].second;
                on_right = !on_right;
                want = want == a ? b : a;
            }
            for (std::uint32_t f : path) {
                atL[std::size_t{edges[f].first} * colors + col[f]] = none;
                atR[std::size_t{edges[f].second} * colors + col[f]] = none;
            }
            for (std::uint32_t f : path) {
                col[f] = col[f] == a ? b : a;
                atL[std::size_t{edges[f].first} * colors + col[f]] = f;
                atR[std::size_t{edges[f].second} * colors + col[f]] = f;
            }
        }
        col[e] = a;
        atL[std::size_t{u} * colors + a] = e;
        atR[std::size_t{v} * colors + a] = e;
    }
    return col;
}

/// Total exchange on a torus, ring or hypercube (a Cayley graph of Z_d1 x ... x Z_dk) that is
/// invariant under translations: every processor s sends m(s, s+k) along the same moves at the
/// same steps. Message k takes a shortest path: |k_i| moves in direction +-i (antipodal offsets
/// on even rings pick the direction with the smaller load so far). A channel in direction D
/// then carries, in step t, exactly the moves of direction D that the pattern puts in step t,
/// whatever its position; so the schedule is valid iff every (direction, step) holds at most
/// cap moves and every message moves at most once per step: an edge colouring of the bipartite
/// multigraph messages x directions (direction D split into cap copies), which exists with
/// max(largest direction load / cap, longest message) colours (Koenig). That is the channel
/// counting bound whenever the loads balance, e.g. torus:4x4 (8) and every hypercube (P/2).
std::optional<SendTable> translation_invariant_alltoall(const SynthInstance& in) {
    const Topology& t = *in.topology;
    if (in.collective.kind != CollectiveKind::alltoall || t.routers() != 0) return std::nullopt;
    std::vector<std::uint32_t> dims;
    if (t.family() == Family::ring) dims = {t.processors()};
    else if (t.family() == Family::torus || t.family() == Family::hypercube) dims = t.dims();
    else return std::nullopt;
    const std::uint32_t P = t.processors(), k = static_cast<std::uint32_t>(dims.size());
    if (P > 4096) return std::nullopt;
    std::vector<std::uint32_t> stride(k, 1);
    for (std::uint32_t i = k; i-- > 1;) stride[i - 1] = stride[i] * dims[i];
    auto coord = [&](std::uint32_t v, std::uint32_t i) { return v / stride[i] % dims[i]; };
    auto add = [&](std::uint32_t v, std::uint32_t i, std::uint32_t delta) {
        std::uint32_t c = coord(v, i);
        return v - c * stride[i] + (c + delta) % dims[i] * stride[i];
    };
    auto shift = [&](std::uint32_t v, std::uint32_t i, int sgn) { return add(v, i, sgn > 0 ? 1 : dims[i] - 1); };
    // Directions: (i, +1) for every i; (i, -1) where dims[i] > 2.
    std::vector<std::pair<std::uint32_t, int>> dirs;
    for (std::uint32_t i = 0; i < k; ++i) {
        dirs.push_back({i, 1});
        if (dims[i] > 2) dirs.push_back({i, -1});
    }
    // Channel of direction d at node v; all capacities equal.
    std::uint32_t cap = 0;
    std::vector<ChannelId> chan(std::size_t{P} * dirs.size());
    for (std::uint32_t v = 0; v < P; ++v)
        for (std::size_t d = 0; d < dirs.size(); ++d) {
            auto c = t.find_channel(Node{v}, Node{shift(v, dirs[d].first, dirs[d].second)});
            if (!c) return std::nullopt;
            if (cap == 0) cap = t.channel(*c).cap;
            if (t.channel(*c).cap != cap) return std::nullopt;
            chan[std::size_t{v} * dirs.size() + d] = *c;
        }
    // Moves of every offset (offset = node id of 0 + k).
    std::vector<std::vector<std::uint32_t>> moves(P);  // direction indices
    std::vector<std::uint64_t> load(dirs.size(), 0);
    std::vector<std::pair<std::uint32_t, std::uint32_t>> antipodal;  // (offset, dimension)
    auto dir_index = [&](std::uint32_t i, int sgn) {
        for (std::size_t d = 0; d < dirs.size(); ++d)
            if (dirs[d].first == i && (dirs[d].second == sgn || dims[i] == 2)) return static_cast<std::uint32_t>(d);
        return std::uint32_t{0};
    };
    for (std::uint32_t o = 1; o < P; ++o)
        for (std::uint32_t i = 0; i < k; ++i) {
            std::uint32_t c = coord(o, i), d = dims[i];
            if (c == 0) continue;
            if (d == 2) {
                moves[o].push_back(dir_index(i, 1));
            } else if (2 * c < d) {
                moves[o].insert(moves[o].end(), c, dir_index(i, 1));
            } else if (2 * c > d) {
                moves[o].insert(moves[o].end(), d - c, dir_index(i, -1));
            } else {
                antipodal.push_back({o, i});
                continue;
            }
        }
    for (std::uint32_t o = 1; o < P; ++o)
        for (std::uint32_t m : moves[o]) ++load[m];
    for (auto [o, i] : antipodal) {
        std::uint32_t plus = dir_index(i, 1), minus = dir_index(i, -1);
        std::uint32_t pick = load[plus] <= load[minus] ? plus : minus;
        moves[o].insert(moves[o].end(), dims[i] / 2, pick);
        load[pick] += dims[i] / 2;
    }
    // Bipartite multigraph: offsets x (direction, copy); copies spread round robin.
    std::vector<std::pair<std::uint32_t, std::uint32_t>> edges;
    std::vector<std::uint32_t> next_copy(dirs.size(), 0), deg(dirs.size() * cap, 0);
    std::uint32_t colors = 0;
    for (std::uint32_t o = 1; o < P; ++o) {
        colors = std::max<std::uint32_t>(colors, static_cast<std::uint32_t>(moves[o].size()));
        for (std::uint32_t d : moves[o]) {
            std::uint32_t r = d * cap + next_copy[d]++ % cap;
            edges.push_back({o, r});
            colors = std::max(colors, ++deg[r]);
        }
    }
    std::vector<std::uint32_t> col = bipartite_edge_coloring(P, static_cast<std::uint32_t>(dirs.size() * cap), edges, colors);
    // Per offset: its moves in step order.
    std::vector<std::vector<std::pair<Step, std::uint32_t>>> plan(P);
    for (std::size_t e = 0; e < edges.size(); ++e) plan[edges[e].first].push_back({col[e] + 1, edges[e].second / cap});
    TableBuilder b(in.topology, in.model, in.collective);
    Messages ms(P);
    for (std::uint32_t o = 1; o < P; ++o) {
        std::sort(plan[o].begin(), plan[o].end());
        for (std::uint32_t src = 0; src < P; ++src) {
            std::uint32_t dst = src;
            for (std::uint32_t i = 0; i < k; ++i) dst = add(dst, i, coord(o, i));
            std::uint32_t at = src;
            for (auto [step, d] : plan[o]) {
                b.hop(step, chan[std::size_t{at} * dirs.size() + d], ms.personal(src, dst));
                at = shift(at, dirs[d].first, dirs[d].second);
            }
        }
    }
    return std::move(b).finish();
}

/// Total exchange where every goal pair has a channel of its own (complete graphs, switch boxes
/// such as dgx2.json): colour the demand (a bipartite multigraph of senders and receivers,
/// degree D) with D matchings (Koenig), and send k colours per step, k the least per-step
/// capacity of any processor's out- and in-channels (ports, link groups). ceil(D / k) steps,
/// which meets the send/receive bound when every processor has the same k. The caller verifies
/// the result.
std::optional<SendTable> direct_alltoall(const SynthInstance& in) {
    const Topology& t = *in.topology;
    if (in.collective.kind != CollectiveKind::alltoall) return std::nullopt;
    const std::uint32_t P = t.processors();
    if (P > 4096) return std::nullopt;
    auto goals = goal_pairs(in);
    std::vector<std::pair<std::uint32_t, std::uint32_t>> edges;
    std::vector<ChannelId> chan;
    std::vector<std::uint32_t> out_deg(P, 0), in_deg(P, 0);
    for (const GoalPair& g : goals) {
        auto c = t.find_channel(g.src, g.dst);
        if (!c) return std::nullopt;
        chan.push_back(*c);
        edges.emplace_back(idx(g.src), idx(g.dst));
        ++out_deg[idx(g.src)];
        ++in_deg[idx(g.dst)];
    }
    if (edges.empty()) return std::nullopt;
    std::uint64_t k = std::numeric_limits<std::uint64_t>::max();
    std::uint32_t D = 0;
    for (std::uint32_t p = 0; p < P; ++p) {
        D = std::max({D, out_deg[p], in_deg[p]});
        if (out_deg[p]) k = std::min(k, synth::step_capacity(t, in.model.ports, t.out_channels(Node{p})).hops);
        if (in_deg[p]) k = std::min(k, synth::step_capacity(t, in.model.ports, t.in_channels(Node{p})).hops);
    }
    if (k == 0) return std::nullopt;
    auto colour = bipartite_edge_coloring(P, P, edges, D);
    TableBuilder b(in.topology, in.model, in.collective);
    for (std::size_t e = 0; e < edges.size(); ++e) b.hop(static_cast<Step>(colour[e] / k + 1), chan[e], goals[e].m);
    return std::move(b).finish();
}

/// Total exchange on an even ring invariant under translations by 2 and mirrored between the
/// two classes: an even source s sends m(s, s+k) along pattern A, an odd one along A mirrored
/// (directions swapped). A move of A in direction + from a relative position of parity p (or -
/// from parity 1-p) loads, in its step, the + channels out of nodes of parity p and the -
/// channels out of nodes of parity 1-p, once each (the odd sources' mirrored moves fill the
/// other parity), so the table is valid iff each step has at most one move of class X (+ from
/// even, - from odd) and one of class Y (the others). A message's moves alternate X, Y, ...
/// (+) or Y, X, ... (-): a two-machine problem of chains, scheduled greedily (longest remaining
/// chain first). The antipodal message takes the direction that balances X and Y. Meets the
/// counting bound n^2/8 when the greedy packs both machines.
std::optional<SendTable> mirrored_ring_alltoall(const SynthInstance& in) {
    const Topology& t = *in.topology;
    const std::uint32_t n = t.processors();
    if (t.family() != Family::ring || in.collective.kind != CollectiveKind::alltoall || n < 4 || n % 2 != 0 || n > 4096)
        return std::nullopt;
    struct Chain {
        std::uint32_t offset;
        int dir;              // +1 or -1
        std::uint32_t left;   // moves still to do
        std::uint32_t cls;    // class of the next move: 0 = X, 1 = Y
        Step ready = 1;       // earliest step of the next move
        std::vector<Step> steps;
    };
    std::vector<Chain> chains;
    std::uint64_t load[2] = {0, 0};
    for (std::uint32_t k = 1; k < n / 2; ++k) {
        chains.push_back({k, +1, k, 0, 1, {}});
        chains.push_back({n - k, -1, k, 1, 1, {}});
        load[0] += k;  // the two chains of length k have k moves of each class in all
        load[1] += k;
    }
    {
        // Antipodal: n/2 moves, starting with X (+) or Y (-); the odd one out goes to the lighter class.
        std::uint32_t h = n / 2;
        bool plus = h % 2 == 0 || load[0] <= load[1];
        chains.push_back({h, plus ? +1 : -1, h, plus ? 0u : 1u, 1, {}});
    }
    std::size_t pending = chains.size();
    const Step cap = static_cast<Step>(n) * n;
    for (Step s = 1; pending > 0; ++s) {
        if (s > cap) return std::nullopt;
        for (std::uint32_t cls : {0u, 1u}) {
            Chain* best = nullptr;
            for (Chain& c : chains)
                if (c.left > 0 && c.cls == cls && c.ready <= s && (!best || c.left > best->left)) best = &c;
            if (!best) continue;
            best->steps.push_back(s);
            best->ready = s + 1;
            best->cls ^= 1;
            if (--best->left == 0) --pending;
        }
    }
    TableBuilder b(in.topology, in.model, in.collective);
    Messages ms(n);
    for (const Chain& c : chains)
        for (std::uint32_t src = 0; src < n; ++src) {
            int dir = src % 2 == 0 ? c.dir : -c.dir;
            std::uint32_t off = src % 2 == 0 ? c.offset : n - c.offset;
            std::uint32_t at = src;
            for (Step st : c.steps) {
                std::uint32_t next = (at + n + static_cast<std::uint32_t>(dir + static_cast<int>(n))) % n;
                auto ch = t.find_channel(Node{at}, Node{next});
                if (!ch) return std::nullopt;
                b.hop(st, *ch, ms.personal(src, (src + off) % n));
                at = next;
            }
        }
    return std::move(b).finish();
}

/// A Hamiltonian cycle of a router-free topology (depth-first search, fewest onward choices
/// first, a bounded number of backtracking steps); empty when none is found.
std::vector<std::uint32_t> hamiltonian_cycle(const Topology& t) {
    const std::uint32_t P = t.processors();
    if (t.routers() != 0 || P < 3) return {};
    std::vector<std::vector<std::uint32_t>> adj(P);
    for (const Channel& c : t.channels()) adj[idx(c.from)].push_back(idx(c.to));
    std::vector<std::uint32_t> path{0};
    std::vector<char> used(P, 0);
    used[0] = 1;
    std::uint64_t budget = 2000000;
    auto closes = [&](std::uint32_t v) { return std::find(adj[v].begin(), adj[v].end(), 0u) != adj[v].end(); };
    std::function<bool()> dfs = [&]() -> bool {
        if (budget-- == 0) return false;
        std::uint32_t u = path.back();
        if (path.size() == P) return closes(u);
        std::vector<std::pair<std::size_t, std::uint32_t>> next;
        for (std::uint32_t v : adj[u])
            if (!used[v]) {
                std::size_t deg = 0;
                for (std::uint32_t w : adj[v]) deg += !used[w];
                next.push_back({deg, v});
            }
        std::sort(next.begin(), next.end());
        for (auto [deg, v] : next) {
            used[v] = 1;
            path.push_back(v);
            if (dfs()) return true;
            path.pop_back();
            used[v] = 0;
        }
        return false;
    };
    return dfs() ? path : std::vector<std::uint32_t>{};
}

/// Multinode broadcast along a Hamiltonian cycle, as in the single-port paper (Dimakopoulos,
/// section 3): messages rotate one way round the cycle through FIFO buffers, a message is
/// forwarded until it has made n-1 hops. Who transmits in step j (position i on the cycle):
/// everybody (full duplex), positions of the parity of j (half duplex, n even), positions
/// j, j+2, ..., j+n-3 (half duplex, n odd: position j-1 idles). 2n steps for odd n, 2(n-1) for
/// even n under half duplex, n-1 under full duplex, which are the lower bounds.
std::optional<SendTable> ring_allgather(const SynthInstance& in) {
    const Topology& t = *in.topology;
    if (in.collective.kind != CollectiveKind::allgather) return std::nullopt;
    std::vector<std::uint32_t> cyc = hamiltonian_cycle(t);
    if (cyc.empty()) return std::nullopt;
    const std::uint32_t n = static_cast<std::uint32_t>(cyc.size());
    const bool half = in.model.ports == Ports::half;
    Messages ms(n);
    struct Copy {
        std::uint32_t origin;
        std::uint32_t hops;
    };
    std::vector<std::deque<Copy>> fifo(n);
    for (std::uint32_t i = 0; i < n; ++i) fifo[i].push_back({cyc[i], 0});
    TableBuilder b(in.topology, in.model, in.collective);
    std::uint64_t pending = std::uint64_t{n} * (n - 1);
    for (Step j = 1; pending > 0; ++j) {
        if (j > 4 * n + 8) return std::nullopt;
        std::vector<std::pair<std::uint32_t, Copy>> moves;
        for (std::uint32_t i = 0; i < n; ++i) {
            bool sends = !half || (n % 2 == 0 ? (i + j) % 2 == 0 : ((i + n - j % n) % n) % 2 == 0 && (i + 1) % n != j % n);
            if (!sends || fifo[i].empty()) continue;
            moves.push_back({i, fifo[i].front()});
            fifo[i].pop_front();
        }
        for (auto [i, c] : moves) {
            std::uint32_t to = (i + 1) % n;
            b.hop(j, *t.find_channel(Node{cyc[i]}, Node{cyc[to]}), ms.broadcast(c.origin));
            --pending;
            if (c.hops + 1 < n - 1) fifo[to].push_back({c.origin, c.hops + 1});
        }
    }
    return std::move(b).finish();
}

bool holds(SendTable& table, const SynthInstance& in, bool fixed_routes) {
    table.model = in.model;
    VerifyOptions vo;
    vo.fixed_routes = fixed_routes;
    return verify_direct(table, vo).holds();
}

}  // namespace

std::vector<Bound> lower_bounds(const SynthInstance& in) {
    EncodingKind k = encoding_for(in);
    if (k == EncodingKind::combining) return synth::combining_bounds(in);
    bool personal = k == EncodingKind::personal || k == EncodingKind::free_route;
    std::vector<Bound> b = personal ? personal_bounds(in) : dissemination_bounds(in, k);
    if (personal) std::ranges::move(class_bounds(in), std::back_inserter(b));  // link classes (verifier/class_bounds.hpp)
    // Those that hold for the search first, each group by steps.
    std::stable_sort(b.begin(), b.end(), [&](const Bound& x, const Bound& y) {
        bool ax = bound_applies(x, in), ay = bound_applies(y, in);
        if (ax != ay) return ax;
        return x.steps > y.steps;
    });
    return b;
}

bool bound_applies(const Bound& b, const SynthInstance& in) {
    return b.routes == RouteSpace::any || searched_routes(in) == RouteSpace::fixed;
}

std::optional<KnownSchedule> known_schedule(const SynthInstance& in, bool constructions,
                                            std::chrono::steady_clock::time_point deadline) {
    EncodingKind k = encoding_for(in);
    if (k == EncodingKind::combining) {
        // The duality's schedule where it applies (docs/synthesis.md, "Reductions by duality"):
        // reduce(r) of one chunk, reduce_scatter and the composed allreduce of C = P chunks.
        if (!reduction_duality_problem(in).empty()) return std::nullopt;
        OptimizeOptions o;
        const double left = deadline == std::chrono::steady_clock::time_point::max()
                                ? 30.0
                                : std::chrono::duration<double>(deadline - std::chrono::steady_clock::now()).count();
        if (left <= 0.05) return std::nullopt;
        o.timeout = std::min(30.0, left / 2);
        ReductionOptimum r = optimize_reduction(in, o);
        if (!r.witness || !holds(*r.witness, in, false)) return std::nullopt;
        const char* what = in.collective.kind == CollectiveKind::allreduce ? "reduce-scatter then allgather"
                           : in.collective.kind == CollectiveKind::reduce  ? "the broadcast reversed"
                                                                           : "the allgather reversed";
        std::string source = fmt::format("duality: {} ({} of C = {} chunks)", what, to_string(r.status), in.collective.chunks);
        return KnownSchedule{std::move(*r.witness), std::move(source)};
    }
    std::vector<KnownSchedule> found;
    const Topology& t = *in.topology;
    if (k == EncodingKind::personal || k == EncodingKind::free_route) {
        if (in.collective.kind == CollectiveKind::alltoall && t.family() == Family::bft) {
            try {
                SendTable s = bft_phase_alltoall(in.topology);
                if (holds(s, in, true)) found.push_back({std::move(s), "bft_phase_alltoall (Dimakopoulos & Dimopoulos, section 5, eq. 2)"});
            } catch (const InputError&) {
                // capacity pattern not covered by the built-in algorithm: the greedy below applies
            }
        }
        Step cap = 4 * t.processors() + 4 * t.tree_levels() + 8;
        if (!found.empty()) cap = found.front().table.steps() - 1;
        if (!constructions) {
        } else if (auto x = xor_invariant_alltoall(in, cap); x && holds(*x, in, true)) {
            found.push_back({std::move(*x), "XOR-invariant total exchange (collsched construction, docs/synthesis.md)"});
        }
        if (constructions && k == EncodingKind::free_route) {
            if (auto x = translation_invariant_alltoall(in); x && holds(*x, in, false))
                found.push_back({std::move(*x), "translation-invariant total exchange (collsched construction, docs/synthesis.md)"});
            if (auto x = mirrored_ring_alltoall(in); x && holds(*x, in, false))
                found.push_back({std::move(*x), "mirrored ring total exchange (collsched construction, docs/synthesis.md)"});
            if (auto x = direct_alltoall(in); x && holds(*x, in, false))
                found.push_back({std::move(*x), "direct total exchange by edge colouring (collsched construction, docs/synthesis.md)"});
        }
        if (auto g = greedy_personal(in, deadline); g && holds(*g, in, true))
            found.push_back({std::move(*g), "greedy first fit, farthest first"});
        if (k == EncodingKind::free_route)
            if (auto f = greedy_free_route(in, deadline); f && holds(*f, in, false))
                found.push_back({std::move(*f), "greedy first fit over any route (earliest arrival), farthest first"});
    } else if (k == EncodingKind::dissemination) {
        if (auto r = ring_allgather(in); r && holds(*r, in, false))
            found.push_back({std::move(*r), "ring algorithm on a Hamiltonian cycle (Dimakopoulos, single-port paper, section 3)"});
        if (auto g = greedy_flood(in, deadline); g && holds(*g, in, false)) found.push_back({std::move(*g), "greedy flooding, oldest first"});
    } else {
        if (auto g = greedy_end_to_end(in, deadline); g && holds(*g, in, false)) found.push_back({std::move(*g), "greedy end-to-end sends, nearest first"});
    }
    if (found.empty()) return std::nullopt;
    std::size_t best = 0;
    for (std::size_t i = 1; i < found.size(); ++i)
        if (found[i].table.steps() < found[best].table.steps()) best = i;
    return std::move(found[best]);
}

}  // namespace collsched
