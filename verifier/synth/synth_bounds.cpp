// Lower bounds proved by counting (no solver): each bound says what it assumes, and
// bound_applies matches those assumptions to the instance's search space. The schedules that
// are upper bounds are in verifier/synth/synth_known.cpp (constructions) and verifier/synth/synth_greedy.cpp
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
#include <queue>

#include <fmt/format.h>

#include "compiler/table/builder.hpp"
#include "support/assert.hpp"
#include "support/error.hpp"
#include "verifier/synth/class_bounds.hpp"
#include "verifier/check/direct.hpp"
#include "verifier/synth/synth_duality.hpp"
#include "verifier/synth/synth_encode.hpp"
#include "verifier/synth/synth_internal.hpp"

namespace collsched {

namespace synth_internal {

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

}  // namespace synth_internal

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
/// channel counting, cut counting (single processors, balls around processors, Voronoi halves)
/// and the send/receive sums with graph distances. One method per rule, in the order of all().
class FreeRouteBounds {
public:
    FreeRouteBounds(const SynthInstance& in, const std::vector<GoalPair>& goals)
        : in_(in), t_(*in.topology), model_(in.model), goals_(goals), P_(t_.processors()), N_(t_.nodes()), from_(P_), to_(P_) {}

    std::vector<Bound> all() {
        // Distances from and to every processor that is an endpoint.
        for (const GoalPair& g : goals_) {
            if (from_[idx(g.src)].empty()) from_[idx(g.src)] = synth::bfs_distances(t_, g.src);
            if (to_[idx(g.dst)].empty()) to_[idx(g.dst)] = synth::bfs_distances_to(t_, g.dst);
        }
        distance();
        send_receive();
        channel_counting();
        for (std::uint32_t i = 0; i < goals_.size(); ++i) {
            by_src_[idx(goals_[i].src)].push_back(i);
            by_dst_[idx(goals_[i].dst)].push_back(i);
            every_.push_back(i);
        }
        single_processors();
        balls();
        voronoi_halves();
        return std::move(out_);
    }

private:
    std::uint32_t d(const GoalPair& g) const { return from_[idx(g.src)][idx(g.dst)]; }

    /// The farthest goal; `hops_`, the sum of the distances. A goal no walk reaches is bad input.
    void distance() {
        Step far = 0;
        std::string far_what;
        for (const GoalPair& g : goals_) {
            if (d(g) == unreachable)
                throw InputError(fmt::format("{} cannot reach processor {} from {}: no schedule exists", in_.collective.messages(P_).name(g.m),
                                             idx(g.dst), idx(g.src)));
            hops_ += d(g);
            if (d(g) > far) {
                far = d(g);
                far_what = in_.collective.messages(P_).name(g.m);
            }
        }
        out_.push_back({far, "distance", fmt::format("{} is {} channels away", far_what, far), RouteSpace::any, {"shortest-path distances"}});
    }

    void send_receive() {
        if (auto b = send_receive_sums(in_, goals_, [&](const GoalPair& g) { return d(g); })) {
            b->assumes.insert(b->assumes.begin(),
                              {"shortest-path distances", "one injection and one arrival slot per message at its endpoints (holds with relays and copies)"});
            if (model_.ports != Ports::multi) b->assumes.push_back("at most one send and one receive per processor and step (ports)");
            out_.push_back(*b);
        }
    }

    /// Channel counting: every message makes at least its distance in hops, and a step has at
    /// most K hops in all (the channel capacities; without routers also the ports).
    void channel_counting() {
        std::uint64_t K = 0;
        for (const Channel& c : t_.channels()) K += c.cap;
        std::string what = fmt::format("the channels carry at most {} hops per step", K);
        std::vector<std::string> as{"shortest-path distances"};
        if (t_.routers() == 0 && model_.ports != Ports::multi) {
            std::uint64_t sends = 0, recvs = 0;
            for (std::uint32_t p = 0; p < P_; ++p) {
                std::uint64_t o = 0, i = 0;
                for (ChannelId c : t_.out_channels(Node{p})) o += t_.channel(c).cap;
                for (ChannelId c : t_.in_channels(Node{p})) i += t_.channel(c).cap;
                sends += std::min<std::uint64_t>(o, 1);
                recvs += std::min<std::uint64_t>(i, 1);
            }
            std::uint64_t k = std::min(sends, recvs);
            if (model_.ports == Ports::half) k = std::min<std::uint64_t>(k, P_ / 2);
            if (k < K) {
                K = k;
                what = fmt::format("every hop is a send and a receive by processors, at most {} per step ({})", K,
                                   model_.ports == Ports::half ? "half duplex" : "single port");
                as.push_back(model_.ports == Ports::half ? "ports=half" : "ports=single");
                as.push_back("no routers");
            }
        }
        if (!t_.groups().empty()) {
            std::vector<ChannelId> every(t_.channels().size());
            for (std::uint32_t c = 0; c < every.size(); ++c) every[c] = ChannelId{c};
            if (auto g = synth::step_capacity(t_, Ports::multi, every); g.by_groups && g.hops < K) {
                K = g.hops;
                what = fmt::format("the link groups carry at most {} hops per step", K);
                as = {"shortest-path distances", "link groups"};
            }
        }
        if (K > 0)
            out_.push_back({static_cast<Step>((hops_ + K - 1) / K), "channel counting",
                            fmt::format("the messages need {} hops at least (sum of distances) and {}", hops_, what), RouteSpace::any, as});
    }

    /// Cut counting: the messages from inside a node set S to outside must each cross a channel
    /// out of S; with c* the one crossed, in a step >= dist(src, from c*) + 1 and with dist(to
    /// c*, dst) hops after it. Unit jobs (release: least over the cut's channels; tail: least
    /// over them) on as many machines as the cut carries per step.
    void cut_bound(const std::vector<char>& inside, const std::vector<std::uint32_t>& which, std::uint64_t machines, const std::string& what,
                   std::vector<std::string> as) {
        std::vector<ChannelId> cut;
        for (std::size_t c = 0; c < t_.channels().size(); ++c) {
            const Channel& ch = t_.channels()[c];
            if (inside[idx(ch.from)] && !inside[idx(ch.to)]) cut.push_back(ChannelId{static_cast<std::uint32_t>(c)});
        }
        if (cut.empty() || machines == 0) return;
        std::vector<Job> jobs;
        for (std::uint32_t gi : which) {
            const GoalPair& g = goals_[gi];
            if (!(inside[idx(g.src)] && !inside[idx(g.dst)])) continue;
            Step rel = std::numeric_limits<Step>::max(), tail = rel;
            for (ChannelId c : cut) {
                const Channel& ch = t_.channel(c);
                std::uint32_t a = from_[idx(g.src)][idx(ch.from)], b = to_[idx(g.dst)][idx(ch.to)];
                if (a == unreachable || b == unreachable) continue;
                rel = std::min<Step>(rel, a + 1);
                tail = std::min<Step>(tail, b);
            }
            if (rel == std::numeric_limits<Step>::max()) continue;
            jobs.push_back({rel, tail});
        }
        if (jobs.empty()) return;
        as.insert(as.begin(), "shortest-path distances");
        keep_max(out_, {least_makespan(jobs, static_cast<std::uint32_t>(std::min<std::uint64_t>(machines, 1u << 30))), "cut counting",
                        fmt::format("{} messages must cross {} ({} per step), each no earlier than its distance to the cut "
                                    "and with its distance beyond it still to go",
                                    jobs.size(), what, machines),
                        RouteSpace::any, std::move(as)});
    }

    /// What a cut carries per step (ports and link groups) and the assumptions that uses.
    std::uint64_t cut_capacity(std::span<const ChannelId> cs, std::vector<std::string>& as) const {
        auto c = synth::step_capacity(t_, model_.ports, cs);
        if (c.by_ports) as.push_back(model_.ports == Ports::single ? "ports=single" : "ports=half");
        if (c.by_groups) as.push_back("link groups");
        return c.hops;
    }

    /// The cuts out of `inside_` and into it (out of its complement), named by `what`.
    void both_ways(const std::string& what) {
        std::vector<std::string> oas, ias;
        std::uint64_t out_cap = cut_capacity(synth::crossing_channels(t_, inside_, false), oas);
        std::uint64_t in_cap = cut_capacity(synth::crossing_channels(t_, inside_, true), ias);
        cut_bound(inside_, every_, out_cap, "out of " + what, oas);
        for (std::uint32_t v = 0; v < N_; ++v) inside_[v] = !inside_[v];
        cut_bound(inside_, every_, in_cap, "into " + what, ias);
    }

    /// Single processors: injection (out of {p}) and reception (into {p}, i.e. out of V \ {p}).
    void single_processors() {
        for (std::uint32_t p = 0; p < P_; ++p) {
            std::vector<std::string> as, ais;
            std::uint64_t o = cut_capacity(t_.out_channels(Node{p}), as), i = cut_capacity(t_.in_channels(Node{p}), ais);
            std::fill(inside_.begin(), inside_.end(), 0);
            inside_[p] = 1;
            cut_bound(inside_, by_src_[p], o, fmt::format("out of processor {}", p), as);
            std::fill(inside_.begin(), inside_.end(), 1);
            inside_[p] = 0;
            cut_bound(inside_, by_dst_[p], i, fmt::format("into processor {}", p), ais);
        }
    }

    /// Balls around processors (radius 1 .. eccentricity - 1) and their complements; bounded work.
    void balls() {
        const std::uint64_t work = goals_.size() * std::uint64_t{P_} * 8;
        if (work > 20'000'000) return;
        for (std::uint32_t p = 0; p < P_; ++p) {
            if (from_[p].empty()) from_[p] = synth::bfs_distances(t_, Node{p});
            std::uint32_t ecc = 0;
            for (std::uint32_t v = 0; v < N_; ++v)
                if (from_[p][v] != unreachable) ecc = std::max(ecc, from_[p][v]);
            for (std::uint32_t r = 1; r < ecc && r <= 8; ++r) {
                for (std::uint32_t v = 0; v < N_; ++v) inside_[v] = from_[p][v] <= r;
                both_ways(fmt::format("the ball of radius {} around node {}", r, p));
            }
        }
    }

    /// Voronoi halves: for two processors a, b the nodes at least as close to a as to b (the
    /// bisections of machines joined by a few links, e.g. two DGX-1s); bounded work.
    void voronoi_halves() {
        if (goals_.size() * std::uint64_t{P_} * P_ > 20'000'000) return;
        for (std::uint32_t p = 0; p < P_; ++p)
            if (from_[p].empty()) from_[p] = synth::bfs_distances(t_, Node{p});
        for (std::uint32_t a = 0; a < P_; ++a)
            for (std::uint32_t b = a + 1; b < P_; ++b) {
                for (std::uint32_t v = 0; v < N_; ++v) inside_[v] = from_[a][v] <= from_[b][v];
                both_ways(fmt::format("the nodes at least as close to {} as to {}", a, b));
            }
    }

    const SynthInstance& in_;
    const Topology& t_;
    const Model& model_;
    const std::vector<GoalPair>& goals_;
    const std::uint32_t P_, N_;
    std::vector<std::vector<std::uint32_t>> from_, to_;  ///< distances from and to processors (computed when needed)
    std::uint64_t hops_ = 0;                             ///< the sum of the goals' distances
    std::vector<std::vector<std::uint32_t>> by_src_ = std::vector<std::vector<std::uint32_t>>(P_);  ///< goal indices per source
    std::vector<std::vector<std::uint32_t>> by_dst_ = std::vector<std::vector<std::uint32_t>>(P_);  ///< per destination
    std::vector<std::uint32_t> every_;                                 ///< every goal index
    std::vector<char> inside_ = std::vector<char>(N_, 0);              ///< the node set of the cut at hand
    std::vector<Bound> out_;
};

std::vector<Bound> free_route_bounds(const SynthInstance& in, const std::vector<GoalPair>& goals) { return FreeRouteBounds(in, goals).all(); }

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

}  // namespace

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

std::vector<Bound> lower_bounds(const SynthInstance& in) {
    EncodingKind k = encoding_for(in);
    if (k == EncodingKind::combining) return synth::combining_bounds(in);
    bool personal = k == EncodingKind::personal || k == EncodingKind::free_route;
    std::vector<Bound> b = personal ? personal_bounds(in) : dissemination_bounds(in, k);
    if (personal) std::ranges::move(class_bounds(in), std::back_inserter(b));  // link classes (verifier/synth/class_bounds.hpp)
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

}  // namespace collsched
