// The greedy schedules (verifier/constructions/steps/greedy.hpp), one file since issue 42 (the
// list schedules were synth_greedy.cpp): first the greedy synthesizer, chunks matched to channels
// step by step; then the greedy list schedules, the synthesizer's upper bounds where no
// construction applies: first fit per message (personal, free routes), flooding
// (dissemination), end-to-end sends, each verified by the direct checker before it is used
// (verifier/constructions/steps/known.cpp).
//
// How the greedy synthesizer runs (moved from docs/synthesis.md; the user's summary stays there):
//
// TACOS's idea (Won et al., MICRO'24) on collsched's model. Step by step on the time-expanded
// network: processors from a seeded offset, each one's out-channels from a seeded offset; every
// channel with room (capacity, link groups, both ends' ports: `StepResources`) takes the oldest chunk
// its sender held before the step that its receiver neither holds nor gets this step (allgather,
// broadcast). A per-channel cursor into the sender's holdings reads each holding about once per
// channel; a sender stops at its send budget. Alltoall: messages follow the topology's routes,
// waiting at processors, each channel sending from a FIFO of messages whose next hop it is (the
// channel towards u + s in step s; on a complete graph a shift). reduce_scatter and reduce are the
// greedy allgather and broadcast reversed. Processors only, hop timing, one round per step; else exit
// 2. Deterministic per seed; verified before reported.
#include "verifier/constructions/steps/greedy.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <queue>
#include <random>
#include <unordered_map>
#include <vector>

#include <fmt/format.h>

#include "compiler/table/builder.hpp"
#include "compiler/table/duality.hpp"
#include "support/assert.hpp"
#include "support/error.hpp"
#include "verifier/check/direct.hpp"
#include "verifier/synth/problem/internal.hpp"
#include "verifier/synth/problem/network.hpp"

namespace collsched {

namespace {

std::uint64_t splitmix64(std::uint64_t x) {  // splitmix64's finalizer: the seeded visiting orders
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

/// What one step may still carry: channel capacities, link groups and processor ports, each a
/// counter stamped with the step it counts (so nothing is cleared between steps).
class StepResources {
public:
    StepResources(const Topology& t, Ports ports)
        : t_(t), ports_(ports), chan_(t.channels().size()), group_(t.groups().size()), send_(t.nodes()), recv_(t.nodes()) {}

    void begin(Step s) { step_ = s; }
    bool room(ChannelId c) {
        const Channel& ch = t_.channel(c);
        if (use(chan_[idx(c)]) >= ch.cap) return false;
        for (std::uint32_t g : t_.groups_of(c))
            if (use(group_[g]) >= t_.groups()[g].cap) return false;
        if (ports_ == Ports::single) return use(send_[idx(ch.from)]) == 0 && use(recv_[idx(ch.to)]) == 0;
        if (ports_ == Ports::half)
            return use(send_[idx(ch.from)]) + use(recv_[idx(ch.from)]) == 0 && use(send_[idx(ch.to)]) + use(recv_[idx(ch.to)]) == 0;
        return true;
    }
    void take(ChannelId c) {
        const Channel& ch = t_.channel(c);
        add(chan_[idx(c)]);
        for (std::uint32_t g : t_.groups_of(c)) add(group_[g]);
        add(send_[idx(ch.from)]);
        add(recv_[idx(ch.to)]);
    }

private:
    struct Counter {
        Step step = 0;
        std::uint32_t n = 0;
    };
    std::uint32_t use(const Counter& k) const { return k.step == step_ ? k.n : 0; }
    void add(Counter& k) {
        if (k.step != step_) k = {step_, 0};
        ++k.n;
    }
    const Topology& t_;
    Ports ports_;
    std::vector<Counter> chan_, group_, send_, recv_;
    Step step_ = 0;
};

/// At most how many transfers processor u can send in one step: per out-channel its capacity
/// (cut to its smallest group), a group whose channels all leave u counted once at its capacity,
/// one under single or half ports. An upper bound: the step's scan of u stops there.
std::vector<std::uint32_t> send_budgets(const Topology& t, Ports ports) {
    const std::uint32_t N = t.nodes();
    std::vector<std::int64_t> owner(t.groups().size(), -1);  // the sender all of a group's channels leave, or -2
    for (std::size_t g = 0; g < t.groups().size(); ++g)
        for (ChannelId c : t.groups()[g].channels) {
            const std::int64_t u = idx(t.channel(c).from);
            owner[g] = owner[g] == -1 || owner[g] == u ? u : -2;
        }
    std::vector<std::uint32_t> budget(N, 0);
    std::vector<std::uint64_t> in_group(t.groups().size(), 0);
    for (std::uint32_t u = 0; u < N; ++u) {
        std::uint64_t b = 0;
        std::vector<std::uint32_t> own;
        for (ChannelId c : t.out_channels(Node{u})) {
            std::uint32_t cap = t.channel(c).cap;
            std::int64_t mine = -1;
            for (std::uint32_t g : t.groups_of(c)) {
                cap = std::min(cap, t.groups()[g].cap);
                if (owner[g] == u) mine = g;
            }
            if (mine < 0) {
                b += cap;
            } else {
                if (in_group[mine] == 0) own.push_back(static_cast<std::uint32_t>(mine));
                in_group[mine] += cap;
            }
        }
        for (std::uint32_t g : own) {
            b += std::min<std::uint64_t>(in_group[g], t.groups()[g].cap);
            in_group[g] = 0;
        }
        if (ports != Ports::multi) b = std::min<std::uint64_t>(b, 1);
        budget[u] = static_cast<std::uint32_t>(std::min<std::uint64_t>(b, std::numeric_limits<std::uint32_t>::max()));
    }
    return budget;
}

struct Stop {
    std::string reason;
};

void check_limits(const GreedyOptions& opt, Step s) {
    if (opt.deadline.passed()) throw Stop{fmt::format("time limit (greedy, at step {})", s)};
    if (opt.memory.exceeded(0.9))
        throw Stop{fmt::format("memory limit (greedy, at step {}): {} resident, limit {}", s, format_bytes(resident_memory_recent()),
                               format_bytes(opt.memory.limit()))};
}

void check_fits(const GreedyOptions& opt, std::uint64_t bytes, std::string_view what) {
    if (!opt.memory.fits(bytes))
        throw Stop{fmt::format("memory limit: the greedy {} would need about {}, {} of the limit {} is left; not run", what,
                               format_bytes(bytes), format_bytes(opt.memory.left()), format_bytes(opt.memory.limit()))};
}

/// Allgather and broadcast on a network of processors. Every holder keeps the messages it holds
/// in the order they arrived; every channel u -> v keeps a cursor into u's list below which v
/// holds everything, so over the whole run a channel reads each of u's messages about once. In
/// step s the processors are visited from a seeded offset, each one's channels from a seeded
/// offset, and every channel with room takes the oldest message its sender held before s that its
/// receiver neither holds nor gets in this step.
SendTable disseminate(const SynthInstance& in, const GreedyOptions& opt) {
    const Topology& t = *in.topology;
    const std::uint32_t P = t.processors();
    Messages ms = in.collective.messages(P);
    std::vector<MessageId> msgs;
    std::unordered_map<std::uint32_t, std::uint32_t> local;
    std::vector<std::pair<std::uint32_t, std::uint32_t>> goals;  // (local message, processor)
    // Reserved at once, the limits polled every 65,536 goals (16.7 million on torus:64x64), and
    // the map asked only when the message changes (the goals come message by message).
    const std::uint64_t n = in.collective.goal_count(P);
    check_fits(opt, mul_sat(n, sizeof(goals[0])), "list of goals");
    goals.reserve(static_cast<std::size_t>(n));
    std::uint32_t last = 0, last_local = 0;
    in.collective.for_each_goal(P, [&](MessageId m, Node p) {
        if ((goals.size() & 0xffff) == 0xffff) check_limits(opt, 0);
        if (goals.empty() || idx(m) != last) {
            auto [it, fresh] = local.try_emplace(idx(m), static_cast<std::uint32_t>(msgs.size()));
            if (fresh) msgs.push_back(m);
            last = idx(m);
            last_local = it->second;
        }
        goals.push_back({last_local, idx(p)});
    });
    const std::uint64_t M = msgs.size(), W = (M + 63) / 64;
    // held bits, per-holder lists, the table, and its verification (about as much again).
    check_fits(opt, P * W * 8 + goals.size() * (4 + 2 * sizeof(Transfer)) + t.channels().size() * 4, "dissemination");
    std::vector<std::uint64_t> held(P * W, 0);
    auto has = [&](std::uint32_t v, std::uint32_t m) { return (held[v * W + m / 64] >> (m % 64)) & 1; };
    auto set = [&](std::uint32_t v, std::uint32_t m) { held[v * W + m / 64] |= std::uint64_t{1} << (m % 64); };
    // Processors that are not goals of a message never receive it: marked as holding it, kept
    // out of its holders' lists (the greedy sends only to processors that need a message).
    std::vector<std::vector<std::uint32_t>> list(P);
    for (std::uint32_t m = 0; m < M; ++m) {
        std::uint32_t o = idx(ms.origin(msgs[m]));
        set(o, m);
        list[o].push_back(m);
    }
    {
        std::vector<std::uint64_t> goal(P * W, 0);
        for (auto [m, p] : goals) goal[p * W + m / 64] |= std::uint64_t{1} << (m % 64);
        for (std::uint64_t i = 0; i < held.size(); ++i) held[i] |= ~goal[i];  // padding bits past M too
    }
    std::uint64_t missing = goals.size();
    std::vector<std::uint32_t> usable(P), cursor(t.channels().size(), 0);
    const std::vector<std::uint32_t> budget = send_budgets(t, in.model.ports);
    StepResources res(t, in.model.ports);
    TableBuilder b(in.topology, in.model, in.collective);
    b.reserve(goals.size());
    for (Step s = 1; missing > 0; ++s) {
        check_limits(opt, s);
        res.begin(s);
        for (std::uint32_t u = 0; u < P; ++u) usable[u] = static_cast<std::uint32_t>(list[u].size());
        const std::uint64_t before = missing;
        const std::uint32_t first = static_cast<std::uint32_t>(splitmix64(opt.seed ^ (std::uint64_t{s} << 32)) % P);
        for (std::uint32_t k = 0; k < P; ++k) {
            const std::uint32_t u = (first + k) % P;
            if (usable[u] == 0 || budget[u] == 0) continue;
            auto out = t.out_channels(Node{u});
            if (out.empty()) continue;
            const std::size_t off = splitmix64(opt.seed * 31 + (std::uint64_t{s} << 32) + u) % out.size();
            std::uint32_t sent = 0;
            for (std::size_t j = 0; j < out.size() && sent < budget[u]; ++j) {
                const ChannelId c = out[(off + j) % out.size()];
                const std::uint32_t v = idx(t.channel(c).to);
                if (v >= P) continue;
                std::uint32_t& cur = cursor[idx(c)];
                while (cur < usable[u] && has(v, list[u][cur])) ++cur;
                // Several messages may cross one channel per step (capacity), each one v lacks.
                std::uint32_t at = cur;
                while (at < usable[u] && res.room(c)) {
                    const std::uint32_t m = list[u][at++];
                    if (has(v, m)) continue;
                    res.take(c);
                    b.hop(s, c, msgs[m]);
                    set(v, m);
                    list[v].push_back(m);
                    --missing;
                    ++sent;
                }
            }
        }
        if (missing == before)
            throw Stop{fmt::format("stalled at step {}: {} goals left and no channel can carry a message its receiver lacks", s, missing)};
    }
    return std::move(b).finish();
}

/// Alltoall on a network of processors: every message follows the topology's route, waiting at
/// processors; every channel keeps a queue of the messages whose next hop it is, in the order
/// they became ready, and in each step sends from its front while its capacity, groups and ports
/// allow (they are the same for every message on it). Messages enter their first queue by
/// rotation distance (d - s mod P), so the first steps are shifts.
SendTable exchange(const SynthInstance& in, const GreedyOptions& opt) {
    const Topology& t = *in.topology;
    const std::uint32_t P = t.processors();
    const std::uint64_t M = std::uint64_t{P} * (P - 1);
    check_fits(opt, M * (16 + 2 * sizeof(Transfer) * 2) + t.channels().size() * 80, "exchange");
    Messages ms = in.collective.messages(P);
    struct Waiting {
        std::uint32_t src, dst;
        Step ready;
    };
    // One FIFO per channel, a vector and the index of its front: an empty one allocates nothing.
    // (A std::deque allocates a map and a block when made: on 512 rail-optimized boxes, whose
    // switches are link groups over 2.1 million channels, making and freeing them took 1.4 s,
    // most of it after --timeout had passed.)
    struct Fifo {
        std::vector<Waiting> items;
        std::size_t head = 0;
        bool empty() const { return head == items.size(); }
        const Waiting& front() const { return items[head]; }
        void pop_front() {
            if (++head == items.size()) {
                items.clear();
                head = 0;
            } else if (head >= 4096 && 2 * head >= items.size()) {
                items.erase(items.begin(), items.begin() + static_cast<std::ptrdiff_t>(head));
                head = 0;
            }
        }
        void push_back(const Waiting& w) { items.push_back(w); }
    };
    std::vector<Fifo> queue(t.channels().size());
    std::vector<ChannelId> route;
    auto next = [&](std::uint32_t at, std::uint32_t d) {
        route.clear();
        t.route(Node{at}, Node{d}, route);
        COLLSCHED_ASSERT(!route.empty());
        return route.front();
    };
    for (std::uint32_t k = 1; k < P; ++k) {
        check_limits(opt, 0);  // P first hops per k (P^2 route lookups in all)
        for (std::uint32_t s = 0; s < P; ++s) {
            const std::uint32_t d = (s + k) % P;
            queue[idx(next(s, d))].push_back({s, d, 1});
        }
    }
    std::uint64_t missing = M;
    StepResources res(t, in.model.ports);
    TableBuilder b(in.topology, in.model, in.collective);
    const std::vector<std::uint32_t> budget = send_budgets(t, in.model.ports);
    for (Step s = 1; missing > 0; ++s) {
        check_limits(opt, s);
        res.begin(s);
        const std::uint32_t first = static_cast<std::uint32_t>(splitmix64(opt.seed ^ (std::uint64_t{s} << 32)) % P);
        std::vector<std::pair<ChannelId, Waiting>> moved;
        for (std::uint32_t k = 0; k < P; ++k) {
            const std::uint32_t u = (first + k) % P;
            auto out = t.out_channels(Node{u});
            std::uint32_t sent = 0;
            // From the channel towards u + s: on a complete graph every sender shifts by the same
            // amount, a matching of senders to receivers.
            const std::size_t off = out.empty() ? 0 : (u + s + opt.seed) % out.size();
            for (std::size_t j = 0; j < out.size() && sent < budget[u]; ++j) {
                const ChannelId c = out[(off + j) % out.size()];
                auto& q = queue[idx(c)];
                while (!q.empty() && q.front().ready <= s && res.room(c)) {
                    Waiting w = q.front();
                    q.pop_front();
                    res.take(c);
                    b.hop(s, c, ms.personal(w.src, w.dst));
                    moved.push_back({c, w});
                    ++sent;
                }
            }
        }
        for (auto [c, w] : moved) {
            const std::uint32_t v = idx(t.channel(c).to);
            if (v == w.dst) --missing;
            else queue[idx(next(v, w.dst))].push_back({w.src, w.dst, s + 1});
        }
        // Stalled only when nothing moved: a step whose messages are all still in transit delivers
        // none (torus:16x16 at step 73 was called stalled with 57,344 messages on their way).
        if (moved.empty()) throw Stop{fmt::format("stalled at step {}: {} messages undelivered", s, missing)};
    }
    return std::move(b).finish();
}

}  // namespace

std::string greedy_problem(const SynthInstance& in) {
    const Topology& t = *in.topology;
    const CollectiveKind k = in.collective.kind;
    if (in.model.timing != Timing::hop) return "the greedy synthesizer takes hop timing only";
    if (t.routers() > 0) return fmt::format("the greedy synthesizer takes networks of processors only; {} has routers", t.spec());
    if (in.rounds) return "the greedy synthesizer takes one round per step (no --rounds)";
    if (in.model.inject_once) return "the greedy synthesizer does not take inject=once";
    if (k == CollectiveKind::allgather || k == CollectiveKind::broadcast || k == CollectiveKind::alltoall) {
        if (in.collective.chunks != 1) return "the greedy synthesizer takes one chunk per datum for allgather, broadcast and alltoall";
        return "";
    }
    if (k == CollectiveKind::reduce_scatter || k == CollectiveKind::reduce) {
        const std::uint32_t want = k == CollectiveKind::reduce ? 1 : t.processors();
        if (in.collective.chunks != want)
            return fmt::format("the greedy synthesizer takes {} with {} chunks (the dual's)", in.collective.to_string(), want);
        if (std::string why = duality_problem(t, in.model); !why.empty()) return why;
        return "";
    }
    return fmt::format("the greedy synthesizer takes allgather, broadcast, alltoall, reduce_scatter and reduce, not {}",
                       in.collective.to_string());
}

GreedyResult greedy_synthesize(const SynthInstance& in, const GreedyOptions& opt) {
    if (std::string why = greedy_problem(in); !why.empty()) throw InputError(why);
    const auto t0 = Clock::now();
    GreedyResult r;
    const CollectiveKind k = in.collective.kind;
    r.source = fmt::format("greedy matching of chunks to channels (seed {})", opt.seed);
    try {
        check_limits(opt, 0);  // before the set-up, which allocates per channel and per goal
        SendTable table;
        if (k == CollectiveKind::alltoall) {
            table = exchange(in, opt);
        } else if (k == CollectiveKind::allgather || k == CollectiveKind::broadcast) {
            table = disseminate(in, opt);
        } else {
            // The dual dissemination, reversed in time and direction (compiler/table/duality.hpp).
            SynthInstance dual = in;
            dual.collective = Collective::parse(k == CollectiveKind::reduce ? fmt::format("broadcast:{}", idx(in.collective.root))
                                                                             : std::string("allgather"),
                                                *in.topology);
            SendTable forward = disseminate(dual, opt);
            check_limits(opt, forward.steps());  // the reversal has no poll of its own
            try {
                table = k == CollectiveKind::reduce ? reduce_from_broadcast(forward) : reduce_scatter_from_allgather(forward, opt.deadline);
            } catch (const LimitReached& e) {
                throw Stop{e.what()};
            }
            r.source += fmt::format(", the {} reversed", dual.collective.to_string());
        }
        check_limits(opt, table.steps());
        const auto v0 = Clock::now();
        VerifyOptions vo;
        vo.deadline = opt.deadline;
        VerifyReport rep = verify_direct(table, vo);
        r.verify_seconds = std::chrono::duration<double>(Clock::now() - v0).count();
        if (rep.verdict() == "unknown") throw Stop{"time limit (verifying the greedy schedule)"};
        COLLSCHED_ASSERT_MSG(rep.holds(), fmt::format("the greedy schedule for {} on {} does not verify: {}", in.collective.to_string(),
                                                      in.topology->spec(),
                                                      rep.violations.empty() ? std::string(rep.verdict()) : rep.violations.front().detail));
        r.transfers = table.transfers.size();
        r.table = std::move(table);
    } catch (const Stop& stop) {
        r.reason = stop.reason;
    }
    r.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
    return r;
}

}  // namespace collsched

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

/// The goal pairs of `in`, listed under `deadline`; nullopt when it passes first (the greedy then
/// has nothing to offer).
std::optional<std::vector<GoalPair>> goal_pairs_by(const SynthInstance& in, std::chrono::steady_clock::time_point deadline) {
    try {
        return goal_pairs(in, RunLimits{Deadline::at(deadline), {}});
    } catch (const LimitReached&) {
        return std::nullopt;
    }
}

}  // namespace

/// First fit, message by message, farthest first: each segment of the route (see synth.hpp)
/// starts at the earliest step where all its hops find capacity and free ports.
std::optional<SendTable> greedy_personal(const SynthInstance& in, std::chrono::steady_clock::time_point deadline) {
    const Topology& t = *in.topology;
    const std::uint32_t P = t.processors();
    PortMap pm{t, in.model.ports, t.channels().size(), P};
    Ledger led(pm.caps());
    std::optional<std::vector<GoalPair>> listed = goal_pairs_by(in, deadline);
    if (!listed) return std::nullopt;
    const std::vector<GoalPair>& goals = *listed;
    std::vector<std::vector<ChannelId>> routes;
    routes.reserve(goals.size());
    for (const GoalPair& g : goals) {
        if (routes.size() % 4096 == 0 && std::chrono::steady_clock::now() >= deadline) return std::nullopt;
        routes.push_back(t.route(g.src, g.dst));
    }
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
    std::optional<std::vector<GoalPair>> listed = goal_pairs_by(in, deadline);
    if (!listed) return std::nullopt;
    const std::vector<GoalPair>& goals = *listed;
    const bool routers_wait = in.model.queues == QueueKind::unbounded;
    auto holder = [&](std::uint32_t v) { return v < P || routers_wait; };
    std::map<std::uint32_t, std::vector<std::uint32_t>> from;
    std::vector<std::uint32_t> len(goals.size());
    for (std::size_t i = 0; i < goals.size(); ++i) {
        if (i % 4096 == 0 && std::chrono::steady_clock::now() >= deadline) return std::nullopt;
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
