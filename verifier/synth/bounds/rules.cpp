// Lower bounds proved by counting (no solver), as one flat list of rules (`bound_rules`: name,
// when it applies, what it assumes, what it computes); bound_applies matches a bound's route
// space to the instance's search. The schedules that
// are upper bounds are in verifier/constructions/steps/known.cpp (constructions) and verifier/constructions/steps/greedy.cpp
// (greedy list schedules).
#include <algorithm>
#include <chrono>
#include <random>
#include <cmath>
#include <deque>
#include <functional>
#include <iterator>
#include <limits>
#include <map>
#include <optional>
#include <queue>

#include <fmt/format.h>

#include "compiler/table/builder.hpp"
#include "support/assert.hpp"
#include "support/error.hpp"
#include "verifier/synth/bounds/boxes.hpp"
#include "verifier/synth/bounds/link_classes.hpp"
#include "verifier/check/direct.hpp"
#include "verifier/synth/bounds/combining.hpp"
#include "verifier/synth/problem/network.hpp"
#include "verifier/synth/problem/internal.hpp"

namespace collsched {

using synth_internal::Job;
using synth_internal::least_makespan;

namespace {

using synth_internal::GoalPair;
using synth_internal::goal_pairs;
using synth_internal::unreachable;

std::string channel_name(const Topology& t, ChannelId c) {
    return t.node_name(t.channel(c).from) + "->" + t.node_name(t.channel(c).to);
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

/// The unit jobs of the messages' hops on the topology's routes, per resource (channel, a
/// processor's sends, receives, and both), and the longest route.
struct RouteJobs {
    std::vector<std::vector<Job>> chan, send, recv, port;
    Step far = 0;
    std::string far_what;
};

/// What the rules read: the instance, its encoding and goals, and what more than one rule needs,
/// computed once when first asked for (distances from and to processors, the route jobs).
class BoundFacts {
public:
    BoundFacts(const SynthInstance& instance, const RunLimits& run_limits)
        : in(instance), t(*instance.topology), model(instance.model), kind(encoding_for(instance)), goals(goal_pairs(instance, run_limits)),
          P(t.processors()), N(t.nodes()), unique(unique_routes(t)), limits(run_limits), from_(P), to_(P) {}

    const SynthInstance& in;
    const Topology& t;
    const Model& model;
    const EncodingKind kind;
    const std::vector<GoalPair> goals;
    const std::uint32_t P, N;
    const bool unique;  ///< unique_routes(t)
    RunLimits limits;  ///< the rule's at hand (lower_bounds)
    std::vector<std::string> stopped;  ///< the rules a limit stopped, with the limit

    /// Throws LimitReached once a limit is reached; read every 4096 calls (rules call it per goal).
    void poll() {
        if ((++polls_ & 4095u) == 0) limits.check("the lower bounds");
    }

    bool personal() const { return kind == EncodingKind::personal || kind == EncodingKind::free_route; }
    bool disseminates() const { return kind == EncodingKind::dissemination || kind == EncodingKind::end_to_end; }
    std::string message_name(MessageId m) const { return in.collective.messages(P).name(m); }

    /// Hops from processor p to every node, and from every node to p.
    /// (Each list is kept: N entries per processor asked for, reserved from the memory budget.)
    const std::vector<std::uint32_t>& from(Node p) {
        if (from_[idx(p)].empty()) from_[idx(p)] = distances(p, false);
        return from_[idx(p)];
    }
    const std::vector<std::uint32_t>& to(Node p) {
        if (to_[idx(p)].empty()) to_[idx(p)] = distances(p, true);
        return to_[idx(p)];
    }
    std::uint32_t dist(const GoalPair& g) {
        poll();
        return from(g.src)[idx(g.dst)];
    }

    const RouteJobs& route_jobs() {
        if (route_jobs_) return *route_jobs_;
        RouteJobs& r = route_jobs_.emplace();
        r.chan.resize(t.channels().size());
        r.send.resize(P);
        r.recv.resize(P);
        r.port.resize(P);
        for (const GoalPair& g : goals) {
            poll();
            auto route = t.route(g.src, g.dst);
            const Step k = static_cast<Step>(route.size());
            if (k > r.far) {
                r.far = k;
                r.far_what = message_name(g.m);
            }
            for (Step j = 0; j < k; ++j) {
                Job job{j + 1, k - 1 - j};
                r.chan[idx(route[j])].push_back(job);
                const Channel& c = t.channel(route[j]);
                if (t.is_processor(c.from)) {
                    r.send[idx(c.from)].push_back(job);
                    r.port[idx(c.from)].push_back(job);
                }
                if (t.is_processor(c.to)) {
                    r.recv[idx(c.to)].push_back(job);
                    r.port[idx(c.to)].push_back(job);
                }
            }
        }
        return r;
    }

private:
    std::vector<std::uint32_t> distances(Node p, bool to_p) {
        limits.check("the lower bounds: distances");
        limits.reserve(std::uint64_t{N} * sizeof(std::uint32_t) * 4, "the lower bounds' distances");
        return to_p ? synth::bfs_distances_to(t, p) : synth::bfs_distances(t, p);
    }

    std::vector<std::vector<std::uint32_t>> from_, to_;
    std::optional<RouteJobs> route_jobs_;
    std::uint32_t polls_ = 0;
};

// ---- Assumptions that several rules state ----------------------------------------------------

/// What a bound on the topology's routes assumes of the routes: they are unique, or fixed.
std::vector<std::string> on_routes(const BoundFacts& f) {
    if (!f.unique) return {"fixed routes: every message crosses exactly the channels of its route"};
    return {f.t.routers() == 0 ? "unique routes (linear array): every walk crosses each channel of the route"
                               : "unique routes (tree): every walk crosses each channel of the route"};
}

std::string ports_fact(const Model& m) { return m.ports == Ports::single ? "ports=single" : "ports=half"; }

/// The ports model as the dissemination bounds count receptions.
std::string receive_ports(const Model& m) {
    return m.ports == Ports::multi ? "ports=multi (receive capacity = channel capacities)" : ports_fact(m);
}

std::vector<std::string> shortest_paths(const BoundFacts&) { return {"shortest-path distances"}; }
std::vector<std::string> nothing(const BoundFacts&) { return {}; }

// ---- Personalized collectives on the topology's routes --------------------------------------

/// Send/receive sums (docs/synthesis.md): `dist` gives each goal's least number of hops.
std::optional<Bound> send_receive_sums(const BoundFacts& f, const std::function<std::uint32_t(const GoalPair&)>& dist) {
    const Topology& t = f.t;
    // A processor starts at most c_out of its own messages per step, so the injection steps of
    // its k messages sum to at least sum_j (floor(j/c_out) + 1); a processor receives at most
    // c_in per step, so the arrival steps of its k messages sum to at most sum_j (T -
    // floor(j/c_in)); and every message arrives at least len-1 steps after its injection.
    // Summed over all messages: N*T - R - S >= sum (len - 1).
    std::vector<std::uint64_t> outs(f.P, 0), ins(f.P, 0);
    std::uint64_t lam = 0;
    for (const GoalPair& g : f.goals) {
        ++outs[idx(g.src)];
        ++ins[idx(g.dst)];
        lam += dist(g) - 1;
    }
    bool grouped = false;
    auto capacity = [&](std::span<const ChannelId> cs) {
        if (f.model.ports != Ports::multi) return std::uint64_t{1};
        auto c = synth::step_capacity(t, f.model.ports, cs);
        grouped |= c.by_groups;
        return std::max<std::uint64_t>(c.hops, 1);
    };
    std::uint64_t S = 0, R = 0;
    for (std::uint32_t p = 0; p < f.P; ++p) {
        f.limits.check("the lower bounds");  // a processor's link groups may take a while (4,096 GPUs)
        std::uint64_t co = capacity(t.out_channels(Node{p})), ci = capacity(t.in_channels(Node{p}));
        for (std::uint64_t j = 0; j < outs[p]; ++j) S += j / co + 1;
        for (std::uint64_t j = 0; j < ins[p]; ++j) R += j / ci;
    }
    const std::uint64_t N = f.goals.size();
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

constexpr std::string_view one_slot_each =
    "one injection and one arrival slot per message at its endpoints (holds with relays and copies)";

std::vector<Bound> route_distance(BoundFacts& f) {
    const RouteJobs& r = f.route_jobs();
    return {{r.far, "distance", fmt::format("{} has a route of {} channels", r.far_what, r.far), RouteSpace::any, {}}};
}

std::vector<Bound> route_sums(BoundFacts& f) {
    // Polled per goal: 16.7 million route walks on 4,096 GPUs ran 3 s past --timeout unpolled.
    auto b = send_receive_sums(f, [&](const GoalPair& g) {
        f.poll();
        return f.t.distance(g.src, g.dst);
    });
    if (!b) return {};
    b->assumes.insert(b->assumes.begin(), std::string(one_slot_each));
    return {*b};
}

/// Each channel carries at most its capacity per step, its messages no earlier than their hop's
/// step and with their remaining hops after it.
std::vector<Bound> route_channels(BoundFacts& f) {
    const RouteJobs& r = f.route_jobs();
    std::vector<Bound> out;
    for (std::size_t c = 0; c < r.chan.size(); ++c) {
        if (r.chan[c].empty()) continue;
        const Channel& ch = f.t.channels()[c];
        Step v = least_makespan(r.chan[c], ch.cap);
        bool leaf = f.t.is_processor(ch.from) || f.t.is_processor(ch.to);
        keep_max(out, {v, leaf ? "processor channels" : "router channels",
                       fmt::format("{} messages cross {} (capacity {}) at the earliest in their hop's step and with their "
                                   "remaining hops after it",
                                   r.chan[c].size(), channel_name(f.t, ChannelId{static_cast<std::uint32_t>(c)}), ch.cap),
                       RouteSpace::any, {}});
    }
    return out;
}

/// One send and one receive per processor and step (single port), or one of the two (half).
std::vector<Bound> route_ports(BoundFacts& f) {
    const RouteJobs& r = f.route_jobs();
    std::vector<Bound> out;
    const std::vector<std::string> as{ports_fact(f.model)};
    for (std::uint32_t p = 0; p < f.P; ++p) {
        if (f.model.ports == Ports::single) {
            keep_max(out, {least_makespan(r.send[p], 1), "ports",
                           fmt::format("processor {} sends {} hops, one per step (single port)", p, r.send[p].size()), RouteSpace::any, as});
            keep_max(out, {least_makespan(r.recv[p], 1), "ports",
                           fmt::format("processor {} receives {} hops, one per step (single port)", p, r.recv[p].size()), RouteSpace::any, as});
        } else {
            keep_max(out, {least_makespan(r.port[p], 1), "ports",
                           fmt::format("processor {} sends or receives {} hops, one per step (half duplex)", p, r.port[p].size()),
                           RouteSpace::any, as});
        }
    }
    return out;
}

// ---- Personalized collectives over every walk ------------------------------------------------

/// The farthest goal by shortest paths. A goal no walk reaches is bad input.
std::vector<Bound> free_distance(BoundFacts& f) {
    Step far = 0;
    std::string far_what;
    for (const GoalPair& g : f.goals) {
        const std::uint32_t d = f.dist(g);
        if (d == unreachable)
            throw InputError(fmt::format("{} cannot reach processor {} from {}: no schedule exists", f.message_name(g.m), idx(g.dst),
                                         idx(g.src)));
        if (d > far) {
            far = d;
            far_what = f.message_name(g.m);
        }
    }
    return {{far, "distance", fmt::format("{} is {} channels away", far_what, far), RouteSpace::any, {}}};
}

std::vector<Bound> free_sums(BoundFacts& f) {
    auto b = send_receive_sums(f, [&](const GoalPair& g) { return f.dist(g); });
    if (!b) return {};
    if (f.model.ports != Ports::multi) b->assumes.push_back("at most one send and one receive per processor and step (ports)");
    return {*b};
}

/// Channel counting: every message makes at least its distance in hops, and a step has at
/// most K hops in all (the channel capacities; without routers also the ports).
std::vector<Bound> channel_counting(BoundFacts& f) {
    const Topology& t = f.t;
    std::uint64_t hops = 0;
    for (const GoalPair& g : f.goals) hops += f.dist(g);
    std::uint64_t K = 0;
    for (const Channel& c : t.channels()) K += c.cap;
    std::string what = fmt::format("the channels carry at most {} hops per step", K);
    std::vector<std::string> as;
    if (t.routers() == 0 && f.model.ports != Ports::multi) {
        std::uint64_t sends = 0, recvs = 0;
        for (std::uint32_t p = 0; p < f.P; ++p) {
            std::uint64_t o = 0, i = 0;
            for (ChannelId c : t.out_channels(Node{p})) o += t.channel(c).cap;
            for (ChannelId c : t.in_channels(Node{p})) i += t.channel(c).cap;
            sends += std::min<std::uint64_t>(o, 1);
            recvs += std::min<std::uint64_t>(i, 1);
        }
        std::uint64_t k = std::min(sends, recvs);
        if (f.model.ports == Ports::half) k = std::min<std::uint64_t>(k, f.P / 2);
        if (k < K) {
            K = k;
            what = fmt::format("every hop is a send and a receive by processors, at most {} per step ({})", K,
                               f.model.ports == Ports::half ? "half duplex" : "single port");
            as = {ports_fact(f.model), "no routers"};
        }
    }
    if (!t.groups().empty()) {
        std::vector<ChannelId> every(t.channels().size());
        for (std::uint32_t c = 0; c < every.size(); ++c) every[c] = ChannelId{c};
        if (auto g = synth::step_capacity(t, Ports::multi, every); g.by_groups && g.hops < K) {
            K = g.hops;
            what = fmt::format("the link groups carry at most {} hops per step", K);
            as = {"link groups"};
        }
    }
    if (K == 0) return {};
    return {{static_cast<Step>((hops + K - 1) / K), "channel counting",
             fmt::format("the messages need {} hops at least (sum of distances) and {}", hops, what), RouteSpace::any, as}};
}

/// Cut counting over node sets: each processor alone, balls around processors and Voronoi
/// halves, both ways. One method per family of cuts, in the order of all().
class CutCounting {
public:
    explicit CutCounting(BoundFacts& f) : f_(f), t_(f.t), by_src_(f.P), by_dst_(f.P), inside_(f.N, 0) {
        for (std::uint32_t i = 0; i < f.goals.size(); ++i) {
            by_src_[idx(f.goals[i].src)].push_back(i);
            by_dst_[idx(f.goals[i].dst)].push_back(i);
            every_.push_back(i);
        }
    }

    /// Every cut bound counted before a limit: each is proved on its own.
    std::vector<Bound> all() {
        try {
            single_processors();
            balls();
            voronoi_halves();
        } catch (const LimitReached& e) {
            f_.stopped.push_back(fmt::format("cut counting (the cuts counted before it are kept): {}", e.what()));
        }
        return std::move(out_);
    }

private:
    /// The messages from inside a node set S to outside must each cross a channel out of S;
    /// with c* the one crossed, in a step >= dist(src, from c*) + 1 and with dist(to c*, dst)
    /// hops after it. Unit jobs (release: least over the cut's channels; tail: least over
    /// them) on as many machines as the cut carries per step.
    void cut_bound(const std::vector<std::uint32_t>& which, std::uint64_t machines, const std::string& what, std::vector<std::string> as) {
        std::vector<ChannelId> cut;
        for (std::size_t c = 0; c < t_.channels().size(); ++c) {
            const Channel& ch = t_.channels()[c];
            if (inside_[idx(ch.from)] && !inside_[idx(ch.to)]) cut.push_back(ChannelId{static_cast<std::uint32_t>(c)});
        }
        if (cut.empty() || machines == 0) return;
        std::vector<Job> jobs;
        for (std::uint32_t gi : which) {
            f_.poll();
            const GoalPair& g = f_.goals[gi];
            if (!(inside_[idx(g.src)] && !inside_[idx(g.dst)])) continue;
            Step rel = std::numeric_limits<Step>::max(), tail = rel;
            for (ChannelId c : cut) {
                const Channel& ch = t_.channel(c);
                std::uint32_t a = f_.from(g.src)[idx(ch.from)], b = f_.to(g.dst)[idx(ch.to)];
                if (a == unreachable || b == unreachable) continue;
                rel = std::min<Step>(rel, a + 1);
                tail = std::min<Step>(tail, b);
            }
            if (rel == std::numeric_limits<Step>::max()) continue;
            jobs.push_back({rel, tail});
        }
        if (jobs.empty()) return;
        keep_max(out_, {least_makespan(jobs, static_cast<std::uint32_t>(std::min<std::uint64_t>(machines, 1u << 30))), "cut counting",
                        fmt::format("{} messages must cross {} ({} per step), each no earlier than its distance to the cut "
                                    "and with its distance beyond it still to go",
                                    jobs.size(), what, machines),
                        RouteSpace::any, std::move(as)});
    }

    /// What a cut carries per step (ports and link groups) and the assumptions that uses.
    std::uint64_t cut_capacity(std::span<const ChannelId> cs, std::vector<std::string>& as) const {
        auto c = synth::step_capacity(t_, f_.model.ports, cs);
        if (c.by_ports) as.push_back(ports_fact(f_.model));
        if (c.by_groups) as.push_back("link groups");
        return c.hops;
    }

    /// The cuts out of `inside_` and into it (out of its complement), named by `what`.
    void both_ways(const std::string& what) {
        std::vector<std::string> oas, ias;
        std::uint64_t out_cap = cut_capacity(synth::crossing_channels(t_, inside_, false), oas);
        std::uint64_t in_cap = cut_capacity(synth::crossing_channels(t_, inside_, true), ias);
        cut_bound(every_, out_cap, "out of " + what, oas);
        for (std::uint32_t v = 0; v < f_.N; ++v) inside_[v] = !inside_[v];
        cut_bound(every_, in_cap, "into " + what, ias);
    }

    /// Single processors: injection (out of {p}) and reception (into {p}, i.e. out of V \ {p}).
    void single_processors() {
        for (std::uint32_t p = 0; p < f_.P; ++p) {
            std::vector<std::string> as, ais;
            std::uint64_t o = cut_capacity(t_.out_channels(Node{p}), as), i = cut_capacity(t_.in_channels(Node{p}), ais);
            std::fill(inside_.begin(), inside_.end(), 0);
            inside_[p] = 1;
            cut_bound(by_src_[p], o, fmt::format("out of processor {}", p), as);
            std::fill(inside_.begin(), inside_.end(), 1);
            inside_[p] = 0;
            cut_bound(by_dst_[p], i, fmt::format("into processor {}", p), ais);
        }
    }

    /// Balls around processors (radius 1 .. eccentricity - 1) and their complements; bounded work.
    void balls() {
        const std::uint64_t work = f_.goals.size() * std::uint64_t{f_.P} * 8;
        if (work > 20'000'000) return;
        for (std::uint32_t p = 0; p < f_.P; ++p) {
            const std::vector<std::uint32_t>& from = f_.from(Node{p});
            std::uint32_t ecc = 0;
            for (std::uint32_t v = 0; v < f_.N; ++v)
                if (from[v] != unreachable) ecc = std::max(ecc, from[v]);
            for (std::uint32_t r = 1; r < ecc && r <= 8; ++r) {
                for (std::uint32_t v = 0; v < f_.N; ++v) inside_[v] = from[v] <= r;
                both_ways(fmt::format("the ball of radius {} around node {}", r, p));
            }
        }
    }

    /// Voronoi halves: for two processors a, b the nodes at least as close to a as to b (the
    /// bisections of machines joined by a few links, e.g. two DGX-1s); bounded work.
    void voronoi_halves() {
        if (f_.goals.size() * std::uint64_t{f_.P} * f_.P > 20'000'000) return;
        for (std::uint32_t a = 0; a < f_.P; ++a)
            for (std::uint32_t b = a + 1; b < f_.P; ++b) {
                const std::vector<std::uint32_t>&fa = f_.from(Node{a}), &fb = f_.from(Node{b});
                for (std::uint32_t v = 0; v < f_.N; ++v) inside_[v] = fa[v] <= fb[v];
                both_ways(fmt::format("the nodes at least as close to {} as to {}", a, b));
            }
    }

    BoundFacts& f_;
    const Topology& t_;
    std::vector<std::vector<std::uint32_t>> by_src_, by_dst_;  ///< goal indices per source and per destination
    std::vector<std::uint32_t> every_;                         ///< every goal index
    std::vector<char> inside_;                                 ///< the node set of the cut at hand
    std::vector<Bound> out_;
};

std::vector<Bound> cut_counting(BoundFacts& f) { return CutCounting(f).all(); }

// ---- Disseminations (allgather, broadcast): every copy counts -------------------------------

/// The farthest goal by shortest paths (unreachable goals are the encoding's to refuse).
std::vector<Bound> dissemination_distance(BoundFacts& f) {
    Step far = 0;
    std::string far_what;
    for (const GoalPair& g : f.goals) {
        const std::uint32_t d = f.dist(g);
        if (d != unreachable && d > far) {
            far = d;
            far_what = fmt::format("{} to {}", f.message_name(g.m), idx(g.dst));
        }
    }
    return {{far, "distance", fmt::format("{} is {} channels away", far_what, far), RouteSpace::any, {}}};
}

/// A processor receives at most its in-capacity per step, each message no earlier than its
/// distance.
std::vector<Bound> receptions(BoundFacts& f) {
    std::vector<std::vector<Job>> recv(f.P);
    for (const GoalPair& g : f.goals)
        if (const std::uint32_t d = f.dist(g); d != unreachable) recv[idx(g.dst)].push_back({d, 0});
    std::vector<Bound> out;
    for (std::uint32_t p = 0; p < f.P; ++p) {
        if (recv[p].empty()) continue;
        f.limits.check("the lower bounds");
        auto c = synth::step_capacity(f.t, f.model.ports, f.t.in_channels(Node{p}));
        const std::uint32_t cap = static_cast<std::uint32_t>(std::min<std::uint64_t>(std::max<std::uint64_t>(c.hops, 1), 1u << 30));
        keep_max(out, {least_makespan(recv[p], cap), "receptions",
                       fmt::format("processor {} must receive {} messages, {} per step{}, each no earlier than its distance", p,
                                   recv[p].size(), cap, c.by_groups ? " (its link groups)" : ""),
                       RouteSpace::any,
                       c.by_groups && cap > 0 ? std::vector<std::string>{"link groups"} : std::vector<std::string>{}});
    }
    return out;
}

/// Half duplex without routers: a transfer takes a sender and a receiver, so at most P/2 a step.
std::vector<Bound> half_duplex_pairing(BoundFacts& f) {
    const std::uint64_t per = f.P / 2;
    const Step v = static_cast<Step>((f.goals.size() + per - 1) / per);
    return {{v, "half-duplex pairing",
             fmt::format("{} receptions are needed and a step has at most {} transfers (each uses a sender and a "
                         "receiver, every processor does one of the two)",
                         f.goals.size(), per),
             RouteSpace::any, {}}};
}

/// Informed processors of one message: each holder starts at most k copies per step, a copy
/// arrives at least dmin steps after it leaves; I(t) <= 1 + k * sum_{s <= t-dmin+1} I(s-1).
std::vector<Bound> informed_growth(BoundFacts& f) {
    const Topology& t = f.t;
    std::uint32_t dmin = 1;
    if (f.kind == EncodingKind::end_to_end) {
        dmin = unreachable;
        for (std::uint32_t q = 1; q < f.P; ++q) {
            f.poll();
            dmin = std::min(dmin, t.distance(Node{0}, Node{q}));
        }
    }
    std::uint32_t k = 1;
    bool grouped = false;
    if (f.model.ports == Ports::multi) {
        k = 0;
        for (std::uint32_t p = 0; p < f.P; ++p) {
            f.limits.check("the lower bounds");
            auto c = synth::step_capacity(t, f.model.ports, t.out_channels(Node{p}));
            grouped |= c.by_groups;
            k = std::max(k, static_cast<std::uint32_t>(std::min<std::uint64_t>(c.hops, 1u << 30)));
        }
    }
    std::map<std::uint32_t, std::size_t> need;  // per message: goal processors + its origin
    for (const GoalPair& g : f.goals) ++need[idx(g.m)];
    std::size_t most = 0;
    for (auto& [m, n] : need) most = std::max(most, n + 1);
    if (most <= 1) return {};
    std::vector<double> I{1};
    Step T = 0;
    while (I.back() < static_cast<double>(most)) {
        ++T;
        double v = 1;
        for (Step s = 1; s + dmin <= T + 1; ++s) v += k * I[s - 1];
        I.push_back(v);
    }
    return {{T, "informed growth",
             fmt::format("a message must reach {} processors; every holder starts at most {} cop{} per step "
                         "and a copy needs at least {} step{}, so at most {} hold it after {} steps",
                         most, k, k == 1 ? "y" : "ies", dmin, dmin == 1 ? "" : "s", static_cast<std::uint64_t>(I[T - 1]), T - 1),
             RouteSpace::any, grouped ? std::vector<std::string>{"link groups"} : std::vector<std::string>{}}};
}

// ---- The rules ---------------------------------------------------------------------------

/// One lower-bound argument (docs/synthesis.md, "Lower bounds"): its name, when it runs, what
/// it assumes of every instance it runs on, and what it computes. lower_bounds() gives each
/// computed bound the rule's assumptions first, then the facts the computation used (ports,
/// link groups). A rule `on_routes` counts hops on the topology's routes: where routes are not
/// unique its bounds hold on fixed routes only, and their names say so.
struct BoundRule {
    std::string_view name;
    bool on_routes;
    bool (*applies)(const BoundFacts&);
    std::vector<std::string> (*assumes)(const BoundFacts&);
    std::vector<Bound> (*compute)(BoundFacts&);
};

bool personal(const BoundFacts& f) { return f.personal(); }
bool personal_free(const BoundFacts& f) { return f.personal() && !f.unique; }
bool disseminates(const BoundFacts& f) { return f.disseminates(); }
bool combines(const BoundFacts& f) { return f.kind == EncodingKind::combining; }

/// Every rule, in the order their bounds are listed before lower_bounds() sorts them.
constexpr BoundRule bound_rules[] = {
    {"distance", true, personal, on_routes, route_distance},
    {"send/receive sums", true, personal, on_routes, route_sums},
    {"processor and router channels", true, personal, on_routes, route_channels},
    {"ports", true, [](const BoundFacts& f) { return f.personal() && f.model.ports != Ports::multi; }, on_routes, route_ports},
    {"distance", false, personal_free, shortest_paths, free_distance},
    {"send/receive sums", false, personal_free,
     [](const BoundFacts&) { return std::vector<std::string>{"shortest-path distances", std::string(one_slot_each)}; }, free_sums},
    {"channel counting", false, personal_free, shortest_paths, channel_counting},
    {"cut counting", false, personal_free, shortest_paths, cut_counting},
    {"class counting", false, personal, nothing, [](BoundFacts& f) { return class_bounds(f.in, f.limits); }},
    {"distance", false, disseminates, shortest_paths, dissemination_distance},
    {"receptions", false, disseminates,
     [](const BoundFacts& f) { return std::vector<std::string>{"shortest-path distances", receive_ports(f.model)}; }, receptions},
    {"box entries", false, [](const BoundFacts& f) { return f.kind == EncodingKind::dissemination && !f.in.rounds; }, nothing,
     [](BoundFacts& f) {
         Bound b = synth::box_entries(f.in, f.goals);
         return b.steps > 0 ? std::vector<Bound>{std::move(b)} : std::vector<Bound>{};
     }},
    {"half-duplex pairing", false,
     [](const BoundFacts& f) { return f.disseminates() && f.model.ports == Ports::half && f.t.routers() == 0 && f.P >= 2; },
     [](const BoundFacts&) { return std::vector<std::string>{"ports=half", "no routers"}; }, half_duplex_pairing},
    {"informed growth", false,
     [](const BoundFacts& f) { return f.disseminates() && (f.kind == EncodingKind::end_to_end || f.t.routers() == 0); },
     [](const BoundFacts& f) {
         return std::vector<std::string>{f.kind == EncodingKind::end_to_end ? "end-to-end sends (the ideal fat tree's model)" : "no routers",
                                         receive_ports(f.model)};
     },
     informed_growth},
    {"distance", false, combines,
     [](const BoundFacts&) {
         return std::vector<std::string>{"hop timing", "a partial received in step t is sent on in step t+1 at the earliest"};
     },
     [](BoundFacts& f) { return synth::combining_distance_bounds(f.in); }},
    // the counts are per step of one round
    {"receptions, departures and transfers", false, [](const BoundFacts& f) { return f.kind == EncodingKind::combining && !f.in.rounds && f.P >= 2; },
     [](const BoundFacts&) { return std::vector<std::string>{"one partial per chunk, channel and step"}; },
     [](BoundFacts& f) { return synth::combining_count_bounds(f.in); }},
};

}  // namespace

std::vector<Bound> lower_bounds(const SynthInstance& in, const RunLimits& limits, std::vector<std::string>* stopped) {
    // The goal pairs are listed once for every rule (12 bytes each).
    try {
        limits.reserve(mul_sat(in.collective.goal_count(in.topology->processors()), 3 * sizeof(GoalPair)), "the lower bounds' goal pairs");
    } catch (const LimitReached& e) {
        if (stopped) stopped->push_back(fmt::format("every rule: {}", e.what()));
        return {};
    }
    std::optional<BoundFacts> facts;
    try {
        facts.emplace(in, limits);  // lists the goal pairs, polling the limits
    } catch (const LimitReached& e) {
        if (stopped) stopped->push_back(fmt::format("every rule: {}", e.what()));
        return {};
    }
    BoundFacts& f = *facts;
    std::vector<Bound> b;
    // The rules whose bounds the search uses first, then those of fixed routes (listed, not used,
    // when the search is over any route): under a limit these must not starve those (torus:32x32
    // alltoall under 200 MiB: the routes' jobs took the budget and every bound was left out).
    // The sort below gives the same order either way.
    const bool fixed_search = searched_routes(in) == RouteSpace::fixed;
    std::vector<const BoundRule*> order;
    for (const BoundRule& rule : bound_rules)
        if (!(rule.on_routes && !f.unique) || fixed_search) order.push_back(&rule);
    for (const BoundRule& rule : bound_rules)
        if (rule.on_routes && !f.unique && !fixed_search) order.push_back(&rule);
    for (const BoundRule* rp : order) {
        const BoundRule& rule = *rp;
        if (!rule.applies(f)) continue;
        std::vector<Bound> computed;
        // A rule gets half of the time left, so that one long enumeration (cut counting on a
        // rail of 128 GPUs) leaves time to the rules after it (class counting).
        f.limits.deadline = limits.deadline.share(0.5);
        try {
            limits.check("the lower bounds");
            computed = rule.compute(f);
        } catch (const LimitReached& e) {
            f.stopped.push_back(fmt::format("{}: {}", rule.name, e.what()));
            continue;
        }
        for (Bound& x : computed) {
            std::vector<std::string> as = rule.assumes(f);
            as.insert(as.end(), x.assumes.begin(), x.assumes.end());
            x.assumes = std::move(as);
            if (rule.on_routes && !f.unique) {
                x.routes = RouteSpace::fixed;
                x.name += " (fixed routes)";
            }
            b.push_back(std::move(x));
        }
    }
    if (stopped) *stopped = std::move(f.stopped);
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

std::string inject_once_infeasible(const SynthInstance& in) {
    if (!in.model.inject_once || in.topology->processors() > 4096) return {};
    const Topology& t = *in.topology;
    const Messages ms = in.collective.messages(t.processors());
    std::map<std::uint32_t, std::vector<std::uint32_t>> goals;  // per broadcast datum's origin: its goal processors
    for (const GoalPair& g : goal_pairs(in))
        if (ms.key(g.m).kind == MessageKind::broadcast) goals[idx(g.src)].push_back(idx(g.dst));
    for (const auto& [s, dsts] : goals) {
        // Every transfer moves the datum one hop farther from s, and s sends it once: every
        // holder v lies on a shortest path from s through the first hop u, dist(s, v) = 1 + dist(u, v).
        const std::vector<std::uint32_t> from_s = synth::bfs_distances(t, Node{s});
        bool some = false;
        for (ChannelId c : t.out_channels(Node{s})) {
            const std::vector<std::uint32_t> from_u = synth::bfs_distances(t, t.channel(c).to);
            some = std::ranges::all_of(dsts, [&](std::uint32_t v) { return from_u[v] != unreachable && from_s[v] == from_u[v] + 1; });
            if (some) break;
        }
        if (!some)
            return fmt::format("no schedule exists under inject=once: processor {} injects its datum once and every transfer of it must "
                               "move it one hop farther from {}, so every processor that gets it lies on a shortest path from {} through "
                               "the first hop, and no neighbour of {} lies on shortest paths to all of its {} goals",
                               s, s, s, s, dsts.size());
    }
    return {};
}

std::string bound_above_schedule(std::string_view bound, std::string_view schedule) {
    return fmt::format("a lower bound is above a verified schedule, so the bound is wrong: bound {}; schedule {}", bound, schedule);
}

}  // namespace collsched
