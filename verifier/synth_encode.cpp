// The encodings of "a schedule completes by step T" but combining's (EncodingKind in
// verifier/synth.hpp: personal, free_route, dissemination, end_to_end; the combining encoding is
// verifier/synth_combine.cpp; docs/synthesis.md has the same text with the arguments for every
// reduction). All of them are built once for a largest horizon H; completion by T <= H is the
// assumption deadline[T].
#include "verifier/synth_encode.hpp"

#include <algorithm>
#include <chrono>
#include <deque>
#include <limits>
#include <map>
#include <memory>
#include <tuple>
#include <cstdlib>

#include <fmt/format.h>

#include "dsl/diagnostics.hpp"
#include "support/assert.hpp"

namespace collsched::synth {

// ---------------------------------------------------------------- Formula

void Formula::clause(std::span<const int> lits) {
    scratch_.clear();
    for (int l : lits) {
        if (l == top) return;
        if (l == -top) continue;
        scratch_.push_back(l);
    }
    if (scratch_.empty()) unsat_ = true;
    clauses_.insert(clauses_.end(), scratch_.begin(), scratch_.end());
    clauses_.push_back(0);
    ++clause_count_;
}

void Formula::at_most(std::vector<int> lits, std::int64_t k) {
    std::erase(lits, -top);
    k -= std::erase(lits, top);
    if (k < 0) {
        clause({});
        return;
    }
    if (static_cast<std::size_t>(k) >= lits.size()) return;
    if (k == 0) {
        for (int l : lits) clause({-l});
        return;
    }
    if (k == 1 && lits.size() == 2) {
        clause({-lits[0], -lits[1]});
        return;
    }
    cards_.push_back({std::move(lits), static_cast<std::uint32_t>(k), false});
}

void Formula::at_least(std::vector<int> lits, std::int64_t k) {
    std::erase(lits, -top);
    k -= std::erase(lits, top);
    if (k <= 0) return;
    if (static_cast<std::size_t>(k) > lits.size()) {
        clause({});
        return;
    }
    if (k == 1) {
        clause(lits);
        return;
    }
    if (static_cast<std::size_t>(k) == lits.size()) {
        for (int l : lits) clause({l});
        return;
    }
    cards_.push_back({std::move(lits), static_cast<std::uint32_t>(k), true});
}

int Formula::and_of(int a, int b) {
    if (a == -top || b == -top) return -top;
    if (a == top) return b;
    if (b == top) return a;
    int v = new_var();
    clause({-v, a});
    clause({-v, b});
    clause({-a, -b, v});
    return v;
}

int Formula::or_of(std::span<const int> lits) {
    std::vector<int> ls;
    for (int l : lits) {
        if (l == top) return top;
        if (l != -top) ls.push_back(l);
    }
    if (ls.empty()) return -top;
    if (ls.size() == 1) return ls[0];
    int v = new_var();
    std::vector<int> big{-v};
    for (int l : ls) {
        big.push_back(l);
        clause({-l, v});
    }
    clause(big);
    return v;
}

std::vector<std::uint32_t> bfs_distances(const Topology& t, Node from) {
    constexpr std::uint32_t inf = std::numeric_limits<std::uint32_t>::max();
    std::vector<std::uint32_t> d(t.nodes(), inf);
    std::deque<Node> q{from};
    d[idx(from)] = 0;
    while (!q.empty()) {
        Node u = q.front();
        q.pop_front();
        for (ChannelId c : t.out_channels(u)) {
            Node v = t.channel(c).to;
            if (d[idx(v)] == inf) {
                d[idx(v)] = d[idx(u)] + 1;
                q.push_back(v);
            }
        }
    }
    return d;
}

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

std::vector<std::uint32_t> bfs_distances_to(const Topology& t, Node to) {
    constexpr std::uint32_t inf = std::numeric_limits<std::uint32_t>::max();
    std::vector<std::uint32_t> d(t.nodes(), inf);
    std::deque<Node> q{to};
    d[idx(to)] = 0;
    while (!q.empty()) {
        Node v = q.front();
        q.pop_front();
        for (ChannelId c : t.in_channels(v)) {
            Node u = t.channel(c).from;
            if (d[idx(u)] == inf) {
                d[idx(u)] = d[idx(v)] + 1;
                q.push_back(u);
            }
        }
    }
    return d;
}

bool routers_hold(const SynthInstance& in, EncodingKind kind) {
    if (in.model.queues != QueueKind::unbounded) return false;
    return kind == EncodingKind::free_route || in.model.replicate;
}

std::uint64_t estimate_variables(const SynthInstance& in, EncodingKind kind, Step H) {
    const Topology& t = *in.topology;
    const std::uint64_t goals = in.collective.goal_count(t.processors()) * std::max<std::uint32_t>(1, in.collective.chunks);
    const std::uint64_t steps = std::uint64_t{H} + 1;
    switch (kind) {
        case EncodingKind::personal: {
            // Segments per message: one under queues=none on a tree, else up to the route length.
            std::uint64_t hops = 2 * std::uint64_t{t.tree_levels()} + 2;
            if (!t.is_tree()) hops = steps;
            std::uint64_t segs = t.is_tree() && in.model.queues == QueueKind::none ? 1 : std::min<std::uint64_t>(hops, steps);
            return goals * segs * 2 * steps;
        }
        case EncodingKind::free_route:
            return goals * (t.nodes() + t.channels().size()) * steps;
        case EncodingKind::dissemination: {
            std::uint64_t msgs = std::min<std::uint64_t>(goals, std::uint64_t{t.processors()} * std::max<std::uint32_t>(1, in.collective.chunks));
            return msgs * (t.nodes() + t.channels().size()) * steps;
        }
        case EncodingKind::end_to_end: {
            std::uint64_t msgs = std::min<std::uint64_t>(goals, t.processors());
            return msgs * std::uint64_t{t.processors()} * t.processors() * steps;
        }
        case EncodingKind::combining: return combining_variables(in, H);
    }
    return 0;
}

void check_deadline(const SynthOptions& opt) {
    // The deadline less the time the kernel needs to take back what is resident (release_seconds).
    if (passed_reserving_release(Deadline::at(opt.deadline))) throw EncodeStopped{"time limit (during encoding)"};
    if (opt.memory.exceeded(memory_stop)) throw EncodeStopped{memory_reason(opt, "during encoding")};
}

std::string memory_reason(const SynthOptions& opt, std::string_view during) {
    return fmt::format("memory limit ({}): {} resident, limit {}", during, format_bytes(resident_memory()), format_bytes(opt.memory.limit()));
}

namespace {

constexpr std::uint32_t unreachable = std::numeric_limits<std::uint32_t>::max();

bool personal_kind(CollectiveKind k) { return collective_row(k).personalized(); }

/// Buckets of literals per (resource, step): the literals whose truth puts one unit of load on
/// the resource in that step.
struct Buckets {
    std::uint32_t steps;  // H + 1
    std::vector<std::vector<int>> b;
    Buckets(std::size_t resources, Step horizon) : steps(horizon + 1), b(resources * (horizon + 1)) {}
    std::vector<int>& at(std::size_t r, Step t) { return b[r * steps + t]; }
};

// ---------------------------------------------------------------- personal

/// One segment of a message's route: hops [j0, j0+len) cross their channels in consecutive
/// steps, starting at a step in [lo, hi]. order[t-lo] (t < hi) means "started by step t";
/// at_[t-lo] means "started exactly at step t".
struct Segment {
    std::uint32_t goal;
    std::uint32_t j0, len;
    Step lo, hi;
    std::vector<int> order;
    std::vector<int> at_;
    int by(std::int64_t t) const {
        if (t < lo) return -Formula::top;
        if (t >= hi) return Formula::top;
        return order[t - lo];
    }
    int at(std::int64_t t) const {
        if (t < lo || t > hi) return -Formula::top;
        return at_[t - lo];
    }
};

/// A load on a resource: segment s crosses it `off` steps after the segment starts.
struct Use {
    std::uint32_t seg;
    std::uint32_t off;
};

struct Resource {
    std::uint32_t cap;
    std::vector<Use> uses;
};

struct Tree {
    std::vector<std::vector<Node>> children;  // per node, sorted by smallest leaf below
    std::vector<std::vector<std::uint32_t>> leaves;
};

Tree tree_shape(const Topology& t) {
    Tree tr;
    tr.children.resize(t.nodes());
    tr.leaves.resize(t.nodes());
    for (const Channel& c : t.channels())
        if (t.level(c.to) < t.level(c.from)) tr.children[idx(c.from)].push_back(c.to);
    // Leaves bottom-up by level.
    std::vector<Node> order;
    for (std::uint32_t v = 0; v < t.nodes(); ++v) order.push_back(Node{v});
    std::sort(order.begin(), order.end(), [&](Node a, Node b) { return t.level(a) < t.level(b); });
    for (Node v : order) {
        if (t.is_processor(v)) {
            tr.leaves[idx(v)] = {idx(v)};
            continue;
        }
        auto& ch = tr.children[idx(v)];
        std::sort(ch.begin(), ch.end(), [&](Node a, Node b) { return tr.leaves[idx(a)].front() < tr.leaves[idx(b)].front(); });
        for (Node c : ch) {
            const auto& l = tr.leaves[idx(c)];
            tr.leaves[idx(v)].insert(tr.leaves[idx(v)].end(), l.begin(), l.end());
        }
        std::sort(tr.leaves[idx(v)].begin(), tr.leaves[idx(v)].end());
    }
    return tr;
}

void encode_personal(const SynthInstance& in, Step H, const SynthOptions& opt, Encoding& e) {
    const Topology& topo = *in.topology;
    const Model& model = in.model;
    Formula& f = e.f;
    e.fixed_routes = true;

    struct Goal {
        MessageId m;
        Node src, dst;
        std::vector<ChannelId> route;
        std::uint32_t first_seg, segs;
    };
    std::vector<Goal> goals;
    Messages ms = in.collective.messages(topo.processors());
    in.collective.for_each_goal(topo.processors(), [&](MessageId m, Node d) {
        goals.push_back({m, ms.origin(m), d, topo.route(ms.origin(m), d), 0, 0});
    });
    check_deadline(opt);
    Step longest = 0;
    for (const Goal& g : goals) longest = std::max<Step>(longest, static_cast<Step>(g.route.size()));
    e.min_horizon = longest;
    if (H < longest) {
        f.clause({});
        return;
    }

    // Segments: a new one starts at every hop leaving a node where the message may wait.
    std::vector<Segment> segs;
    for (std::uint32_t gi = 0; gi < goals.size(); ++gi) {
        if (gi % 256 == 0) check_deadline(opt);
        Goal& g = goals[gi];
        const std::uint32_t k = static_cast<std::uint32_t>(g.route.size());
        g.first_seg = static_cast<std::uint32_t>(segs.size());
        std::uint32_t j0 = 0;
        for (std::uint32_t j = 1; j <= k; ++j) {
            bool cut = j == k;
            if (!cut) {
                Node at = topo.channel(g.route[j]).from;
                cut = topo.is_processor(at) || model.queues != QueueKind::none;
            }
            if (!cut) continue;
            Segment s{gi, j0, j - j0, j0 + 1, H - (k - 1 - j0), {}, {}};
            segs.push_back(std::move(s));
            j0 = j;
        }
        g.segs = static_cast<std::uint32_t>(segs.size()) - g.first_seg;
    }

    // Order encoding of each segment's start, and the exact "starts at t" literals.
    std::size_t seen = 0;
    for (Segment& s : segs) {
        if (++seen % 1024 == 0) check_deadline(opt);
        for (Step t = s.lo; t < s.hi; ++t) s.order.push_back(f.new_var());
        for (std::size_t i = 0; i + 1 < s.order.size(); ++i) f.clause({-s.order[i], s.order[i + 1]});
        for (Step t = s.lo; t <= s.hi; ++t) {
            int now = s.by(t), before = s.by(static_cast<std::int64_t>(t) - 1);
            int x = f.and_of(now, -before);
            s.at_.push_back(x);
        }
    }
    // Segments of one message in order: the next starts after the previous has ended.
    for (const Goal& g : goals)
        for (std::uint32_t i = 1; i < g.segs; ++i) {
            const Segment& a = segs[g.first_seg + i - 1];
            const Segment& b = segs[g.first_seg + i];
            for (Step t = b.lo; t <= b.hi; ++t) f.clause({-b.by(t), a.by(static_cast<std::int64_t>(t) - a.len)});
        }

    // Resources: channels, then processor ports.
    std::vector<Resource> res(topo.channels().size());
    for (std::size_t c = 0; c < res.size(); ++c) res[c].cap = topo.channels()[c].cap;
    const std::size_t P = topo.processors();
    std::size_t send0 = res.size(), recv0 = res.size();
    if (model.ports == Ports::single) {
        send0 = res.size();
        recv0 = send0 + P;
        res.resize(res.size() + 2 * P, Resource{1, {}});
    } else if (model.ports == Ports::half) {
        send0 = recv0 = res.size();
        res.resize(res.size() + P, Resource{1, {}});
    }
    for (std::uint32_t si = 0; si < segs.size(); ++si) {
        const Segment& s = segs[si];
        const Goal& g = goals[s.goal];
        for (std::uint32_t j = s.j0; j < s.j0 + s.len; ++j) {
            const Channel& ch = topo.channel(g.route[j]);
            res[idx(g.route[j])].uses.push_back({si, j - s.j0});
            if (model.ports != Ports::multi) {
                // A single-port limit equal to a single channel of capacity 1 adds nothing.
                auto same = [&](std::span<const ChannelId> cs) {
                    return model.ports == Ports::single && cs.size() == 1 && topo.channel(cs[0]).cap <= 1;
                };
                if (topo.is_processor(ch.from) && !same(topo.out_channels(ch.from)))
                    res[send0 + idx(ch.from)].uses.push_back({si, j - s.j0});
                if (topo.is_processor(ch.to) && !same(topo.in_channels(ch.to)))
                    res[recv0 + idx(ch.to)].uses.push_back({si, j - s.j0});
            }
        }
    }
    std::size_t implied = 0;
    for (const Resource& r : res) {
        check_deadline(opt);
        if (r.uses.size() <= r.cap) continue;
        std::vector<std::vector<int>> per_step(H + 1);
        Step emin = H, lmax = 0;
        for (const Use& u : r.uses) {
            const Segment& s = segs[u.seg];
            for (Step t = s.lo; t <= s.hi; ++t) per_step[t + u.off].push_back(s.at(t));
            emin = std::min<Step>(emin, s.lo + u.off);
            lmax = std::max<Step>(lmax, s.hi + u.off);
        }
        for (Step t = 1; t <= H; ++t) f.at_most(std::move(per_step[t]), r.cap);
        if (!opt.implied) continue;
        // Cumulative counting: by step t at most cap*(t-emin+1) uses are done, and at most
        // cap*(lmax-t) are still to come.
        // Each constraint costs about n * min(k, n - k) clauses in CNF: skip resources where the
        // counters would dwarf the rest of the formula (they are implied, so leaving them out is safe).
        if (r.uses.size() * std::min<std::size_t>(r.uses.size(), 64) > 4096) continue;
        for (Step t = emin; t < lmax; ++t) {
            std::vector<int> done, todo;
            for (const Use& u : r.uses) {
                int b = segs[u.seg].by(static_cast<std::int64_t>(t) - u.off);
                done.push_back(b);
                todo.push_back(-b);
            }
            std::size_t before = f.cards().size();
            f.at_most(std::move(done), static_cast<std::int64_t>(r.cap) * (t - emin + 1));
            f.at_most(std::move(todo), static_cast<std::int64_t>(r.cap) * (lmax - t));
            implied += f.cards().size() - before;
        }
    }
    if (opt.implied) e.notes.push_back(fmt::format("implied: {} cumulative counting constraints", implied));

    // Symmetry breaking (docs/synthesis.md, "Symmetry"). Time shift: a schedule without a
    // transfer in step 1 can be moved one step earlier, so some first hop happens in step 1.
    if (opt.symmetry) {
        std::vector<int> first;
        bool tree = topo.is_tree() && topo.family() != Family::graph;
        CollectiveKind ck = in.collective.kind;
        // On trees, alltoall: any leaf can be mapped onto processor 0 by an automorphism.
        for (const Goal& g : goals)
            if (!(tree && ck == CollectiveKind::alltoall) || idx(g.src) == 0) first.push_back(segs[g.first_seg].at(1));
        if (!first.empty()) {
            f.clause(first);
            e.notes.push_back("symmetry: some first hop in step 1 (time shift)");
        }
        if (tree) {
            // Pivot p: processor 0 (alltoall) or the root of scatter/gather. For every router v
            // whose subtree does not contain p, the messages tied to the leaves of v's children
            // leave their source in child order (first departures non-decreasing).
            Node pivot = ck == CollectiveKind::alltoall ? Node{0} : in.collective.root;
            std::vector<int> seg_of_leaf(P, -1);
            for (const Goal& g : goals) {
                if (ck == CollectiveKind::gather) {
                    if (g.dst == pivot) seg_of_leaf[idx(g.src)] = static_cast<int>(g.first_seg);
                } else if (g.src == pivot) {
                    seg_of_leaf[idx(g.dst)] = static_cast<int>(g.first_seg);
                }
            }
            Tree tr = tree_shape(topo);
            std::size_t rules = 0;
            for (std::uint32_t v = P; v < topo.nodes(); ++v) {
                const auto& lv = tr.leaves[v];
                if (std::binary_search(lv.begin(), lv.end(), idx(pivot))) continue;
                const auto& ch = tr.children[v];
                for (std::size_t i = 0; i + 1 < ch.size(); ++i) {
                    for (Step t = 1; t <= H; ++t) {
                        std::vector<int> left;
                        for (std::uint32_t d : tr.leaves[idx(ch[i])]) left.push_back(segs[seg_of_leaf[d]].by(t));
                        int any_left = f.or_of(left);
                        for (std::uint32_t d : tr.leaves[idx(ch[i + 1])]) f.clause({-segs[seg_of_leaf[d]].by(t), any_left});
                    }
                    ++rules;
                }
            }
            e.notes.push_back(fmt::format("symmetry: {} child-order rules around processor {}", rules, idx(pivot)));
        }
    }

    // Deadlines: the last segment of every message ends by T.
    e.deadline.assign(H + 1, 0);
    for (Step T = longest; T < H; ++T) {
        int d = f.new_var();
        e.deadline[T] = d;
        for (const Goal& g : goals) {
            const Segment& s = segs[g.first_seg + g.segs - 1];
            f.clause({-d, s.by(static_cast<std::int64_t>(T) - s.len + 1)});
        }
    }

    // Decoding: a segment starting at t puts its hops in steps t, t+1, ...
    for (const Segment& s : segs) {
        const Goal& g = goals[s.goal];
        for (Step t = s.lo; t <= s.hi; ++t) {
            Candidate c{s.at(t), static_cast<std::uint32_t>(e.pool.size()), s.len, t + s.len - 1};
            for (std::uint32_t j = 0; j < s.len; ++j) e.pool.push_back({t + j, g.route[s.j0 + j], g.m});
            e.candidates.push_back(c);
        }
    }
}

// ---------------------------------------------------------------- dissemination

struct Dissem {
    std::vector<MessageId> msgs;
    std::vector<Node> origin;
    std::vector<std::vector<Node>> goals;  // per message
    std::vector<std::uint32_t> chunk;      // per message: its chunk index (0 when unsplit)
};

/// The messages with their origins and goals. With C > 1 chunks the collective's goals are
/// already per chunk (Collective::for_each_goal), the chunks of a datum adjacent.
Dissem dissemination_goals(const SynthInstance& in) {
    Dissem d;
    const std::uint32_t P = in.topology->processors();
    Messages ms = in.collective.messages(P);
    std::map<std::uint32_t, std::size_t> at;
    in.collective.for_each_goal(P, [&](MessageId m, Node p) {
        auto [it, fresh] = at.try_emplace(idx(m), d.msgs.size());
        if (fresh) {
            d.msgs.push_back(m);
            d.origin.push_back(ms.origin(m));
            d.goals.emplace_back();
            d.chunk.push_back(ms.chunk(m));
        }
        d.goals[it->second].push_back(p);
    });
    return d;
}

/// The goals as horizons: every goal holds at H, and for each earlier horizon T >= far a
/// deadline variable (e.deadline[T]) that, assumed true, makes every goal hold at T.
template <class Index>
void add_deadlines(Encoding& e, const Dissem& dm, const std::vector<int>& hold, Index hidx, Step far, Step H) {
    Formula& f = e.f;
    e.deadline.assign(H + 1, 0);
    for (Step T = far; T <= H; ++T) {
        if (T == H) {
            for (std::size_t i = 0; i < dm.msgs.size(); ++i)
                for (Node g : dm.goals[i]) f.clause({hold[hidx(i, idx(g), H)]});
            continue;
        }
        int d = f.new_var();
        e.deadline[T] = d;
        for (std::size_t i = 0; i < dm.msgs.size(); ++i)
            for (Node g : dm.goals[i]) f.clause({-d, hold[hidx(i, idx(g), T)]});
    }
}

void encode_dissemination(const SynthInstance& in, Step H, const SynthOptions& opt, Encoding& e) {
    const Topology& topo = *in.topology;
    const Model& model = in.model;
    Formula& f = e.f;
    Dissem dm = dissemination_goals(in);
    const std::uint32_t N = topo.nodes(), P = topo.processors();
    const bool hold_in_routers = routers_hold(in, e.kind);
    auto holder = [&](Node v) { return topo.is_processor(v) || hold_in_routers; };
    // free_route (personalized messages, one goal each): a copy is useful at node v in step t
    // only if it can still reach its goal by H, and never leaves its goal (windows below).
    const bool personal = e.kind == EncodingKind::free_route;

    std::map<std::uint32_t, std::shared_ptr<const std::vector<std::uint32_t>>> from_cache, to_cache;
    auto cached = [&](auto& cache, Node v, bool forward) {
        auto [it, fresh] = cache.try_emplace(idx(v));
        if (fresh)
            it->second = std::make_shared<const std::vector<std::uint32_t>>(forward ? bfs_distances(topo, v) : bfs_distances_to(topo, v));
        return it->second;
    };
    std::vector<std::span<const std::uint32_t>> dist, to;
    Step far = 0;
    for (std::size_t i = 0; i < dm.msgs.size(); ++i) {
        dist.push_back(*cached(from_cache, dm.origin[i], true));
        if (personal) to.push_back(*cached(to_cache, dm.goals[i].front(), false));
    }
    check_deadline(opt);
    // Steps still needed from node v to message i's goal (0 for dissemination: no window).
    auto to_goal = [&](std::size_t i, std::uint32_t v) -> std::uint32_t { return personal ? to[i][v] : 0; };
    for (std::size_t i = 0; i < dm.msgs.size(); ++i) {
        for (Node g : dm.goals[i]) {
            if (dist[i][idx(g)] == unreachable)
                throw InputError(fmt::format("{} cannot reach processor {} from {}: no schedule exists",
                                             in.collective.messages(P).name(dm.msgs[i]), idx(g), idx(dm.origin[i])));
            far = std::max<Step>(far, dist[i][idx(g)]);
        }
    }
    e.min_horizon = far;
    if (H < far) {
        f.clause({});
        return;
    }
    const std::size_t C = topo.channels().size();
    // hold[i][v][t], cross[i][c][t] (0 where the variable does not exist: false).
    auto hidx = [&](std::size_t i, std::uint32_t v, Step t) { return (i * N + v) * (H + 1) + t; };
    auto xidx = [&](std::size_t i, std::size_t c, Step t) { return (i * C + c) * (H + 1) + t; };
    std::vector<int> hold(dm.msgs.size() * N * (H + 1), -Formula::top);
    std::vector<int> cross(dm.msgs.size() * C * (H + 1), -Formula::top);
    for (std::size_t i = 0; i < dm.msgs.size(); ++i) {
        check_deadline(opt);
        for (std::uint32_t v = 0; v < N; ++v) {
            if (!holder(Node{v}) || dist[i][v] == unreachable) continue;
            if (personal && (to_goal(i, v) == unreachable || dist[i][v] + to_goal(i, v) > H)) continue;
            for (Step t = dist[i][v]; t <= H; ++t) hold[hidx(i, v, t)] = Node{v} == dm.origin[i] ? Formula::top : f.new_var();
        }
        for (std::size_t c = 0; c < C; ++c) {
            const Channel& ch = topo.channels()[c];
            if (ch.to == dm.origin[i] || dist[i][idx(ch.from)] == unreachable) continue;
            Step last = H;
            if (personal) {
                // Never leave the goal; arrive at v no later than H - dist(v, goal).
                if (ch.from == dm.goals[i].front() || to_goal(i, idx(ch.to)) == unreachable || to_goal(i, idx(ch.to)) > H) continue;
                last = H - to_goal(i, idx(ch.to));
            }
            for (Step t = dist[i][idx(ch.from)] + 1; t <= last; ++t) cross[xidx(i, c, t)] = f.new_var();
        }
    }
    if (!opt.invariant.empty()) {
        // Invariance under node permutations (SynthOptions::invariant): message i's variables
        // equal those of its image at the image node or channel.
        std::map<std::tuple<std::uint32_t, std::uint32_t, std::uint32_t>, std::size_t> entry;  // (origin, first goal, chunk)
        for (std::size_t i = 0; i < dm.msgs.size(); ++i)
            entry[{idx(dm.origin[i]), personal ? idx(dm.goals[i].front()) : 0u, dm.chunk[i]}] = i;
        std::size_t n = 0;
        for (const auto& g : opt.invariant) {
            for (std::size_t i = 0; i < dm.msgs.size(); ++i) {
                auto it = entry.find({g[idx(dm.origin[i])], personal ? g[idx(dm.goals[i].front())] : 0u, dm.chunk[i]});
                COLLSCHED_ASSERT(it != entry.end());
                const std::size_t j = it->second;
                for (std::uint32_t v = 0; v < N; ++v)
                    for (Step t = 0; t <= H; ++t) {
                        int a = hold[hidx(i, v, t)], b = hold[hidx(j, g[v], t)];
                        f.clause({-a, b});
                        f.clause({a, -b});
                    }
                for (std::size_t c = 0; c < C; ++c) {
                    const Channel& ch = topo.channels()[c];
                    auto gc = topo.find_channel(Node{g[idx(ch.from)]}, Node{g[idx(ch.to)]});
                    COLLSCHED_ASSERT(gc.has_value());
                    for (Step t = 1; t <= H; ++t) {
                        int a = cross[xidx(i, c, t)], b = cross[xidx(j, idx(*gc), t)];
                        f.clause({-a, b});
                        f.clause({a, -b});
                        ++n;
                    }
                }
            }
        }
        e.notes.push_back(fmt::format("restriction: invariant under {} automorphisms ({} tied transfers)", opt.invariant.size(), n));
    }
    Rounds rounds(f, H, in.rounds);
    e.round_lits.assign(H + 1, {});
    for (Step t = 1; t <= H; ++t) e.round_lits[t] = rounds.extra(t);
    if (opt.symmetry && in.collective.chunks > 1 && opt.invariant.empty()) {
        // Chunk order (docs/synthesis.md, "Chunks and rounds"): the chunks of one datum are
        // interchangeable, so relabel them by their arrival at one goal (the farthest).
        std::size_t n = 0;
        for (std::size_t i = 0; i + 1 < dm.msgs.size(); ++i) {
            if (dm.chunk[i + 1] != dm.chunk[i] + 1) continue;
            Node g = dm.goals[i].front();
            for (Node q : dm.goals[i])
                if (dist[i][idx(q)] > dist[i][idx(g)]) g = q;
            for (Step t = 1; t <= H; ++t) {
                f.clause({-hold[hidx(i + 1, idx(g), t)], hold[hidx(i, idx(g), t)]});
                ++n;
            }
        }
        e.notes.push_back(fmt::format("symmetry: chunks of a datum arrive in order at its farthest goal ({} clauses)", n));
    }
    if (personal && opt.symmetry) {
        // Time shift (docs/synthesis.md, "Symmetry"): some transfer happens in step 1.
        std::vector<int> first;
        for (std::size_t i = 0; i < dm.msgs.size(); ++i)
            for (std::size_t c = 0; c < C; ++c)
                if (cross[xidx(i, c, 1)] != -Formula::top) first.push_back(cross[xidx(i, c, 1)]);
        if (!first.empty()) {
            f.clause(first);
            e.notes.push_back("symmetry: some transfer in step 1 (time shift)");
        }
    }
    for (std::size_t i = 0; i < dm.msgs.size(); ++i) {
        check_deadline(opt);
        for (std::size_t c = 0; c < C; ++c) {
            const Channel& ch = topo.channels()[c];
            for (Step t = 1; t <= H; ++t) {
                int x = cross[xidx(i, c, t)];
                if (x == -Formula::top) continue;
                // Causality: the sender holds m, or (a queue-free replicating router) received it
                // in the step before.
                if (holder(ch.from)) {
                    f.clause({-x, hold[hidx(i, idx(ch.from), t - 1)]});
                } else {
                    std::vector<int> cl{-x};
                    for (ChannelId in_c : topo.in_channels(ch.from)) cl.push_back(cross[xidx(i, idx(in_c), t - 1)]);
                    f.clause(cl);
                }
                if (holder(ch.to)) {
                    f.clause({-x, hold[hidx(i, idx(ch.to), t)]});
                    // Dominance: never send m to a holder that already has it (drop such a transfer).
                    f.clause({-x, -hold[hidx(i, idx(ch.to), t - 1)]});
                }
            }
        }
        for (std::uint32_t v = 0; v < N; ++v) {
            if (!holder(Node{v}) || Node{v} == dm.origin[i]) continue;
            for (Step t = 1; t <= H; ++t) {
                int h = hold[hidx(i, v, t)];
                if (h == -Formula::top) continue;
                f.clause({-hold[hidx(i, v, t - 1)], h});
                std::vector<int> cl{-h, hold[hidx(i, v, t - 1)]};
                for (ChannelId in_c : topo.in_channels(Node{v})) cl.push_back(cross[xidx(i, idx(in_c), t)]);
                f.clause(cl);
            }
        }
    }
    // Capacity per channel and step; ports per processor and step.
    for (std::size_t c = 0; c < C; ++c) {
        if (c % 16 == 0) check_deadline(opt);
        for (Step t = 1; t <= H; ++t) {
            std::vector<int> ls;
            for (std::size_t i = 0; i < dm.msgs.size(); ++i) ls.push_back(cross[xidx(i, c, t)]);
            rounds.at_most(std::move(ls), topo.channels()[c].cap, t, t);
        }
    }
    if (model.inject_once)  // one transfer out of the origin; every other one moves away from it
        for (std::size_t i = 0; i < dm.msgs.size(); ++i) {
            std::vector<int> ls;
            for (std::size_t c = 0; c < C; ++c) {
                const Channel& ch = topo.channels()[c];
                const bool out = ch.from == dm.origin[i];
                const bool away = dist[i][idx(ch.to)] == dist[i][idx(ch.from)] + 1;
                for (Step t = 1; t <= H; ++t) {
                    int x = cross[xidx(i, c, t)];
                    if (x == -Formula::top) continue;
                    if (out) ls.push_back(x);
                    else if (!away) f.clause({-x});
                }
            }
            f.at_most(std::move(ls), 1);
        }
    // Link groups (SCCL's switches): the channels of a group carry at most its capacity per
    // round together.
    for (const LinkGroup& g : topo.groups())
        for (Step t = 1; t <= H; ++t) {
            std::vector<int> ls;
            for (ChannelId c : g.channels)
                for (std::size_t i = 0; i < dm.msgs.size(); ++i) ls.push_back(cross[xidx(i, idx(c), t)]);
            rounds.at_most(std::move(ls), g.cap, t, t);
        }
    port_limits(rounds, topo, model.ports, H, dm.msgs.size(), [&](std::size_t i, ChannelId c, Step t) { return cross[xidx(i, idx(c), t)]; },
                [&](std::uint32_t) { check_deadline(opt); });
    if (opt.implied) {
        // A processor gains at most (its receive capacity per step) messages per step.
        std::size_t n = 0;
        for (std::uint32_t p = 0; p < P; ++p) {
            std::int64_t per_step = 0;
            if (model.ports != Ports::multi) per_step = 1;
            else
                for (ChannelId c : topo.in_channels(Node{p})) per_step += topo.channel(c).cap;
            // Personalized: only the messages p is the goal of (a subset of a valid count).
            std::vector<std::size_t> mine;
            for (std::size_t i = 0; i < dm.msgs.size(); ++i)
                if (dm.origin[i] != Node{p} && (!personal || dm.goals[i].front() == Node{p})) mine.push_back(i);
            check_deadline(opt);
            for (Step t = 1; t <= H; ++t) {
                std::vector<int> ls;
                for (std::size_t i : mine) ls.push_back(hold[hidx(i, p, t)]);
                std::size_t before = f.cards().size();
                rounds.at_most(std::move(ls), per_step, 1, t);
                n += f.cards().size() - before;
            }
            if (in.rounds) {
                // With rounds the horizon is exact: what p still lacks after step t must arrive
                // in steps t+1..H, at most per_step per round.
                std::vector<std::size_t> goal_of_p;
                for (std::size_t i : mine)
                    if (std::find(dm.goals[i].begin(), dm.goals[i].end(), Node{p}) != dm.goals[i].end()) goal_of_p.push_back(i);
                for (Step t = 1; t < H; ++t) {
                    std::vector<int> ls;
                    for (std::size_t i : goal_of_p) ls.push_back(hold[hidx(i, p, t)]);
                    std::size_t before = f.cards().size();
                    rounds.at_least_minus(std::move(ls), static_cast<std::int64_t>(goal_of_p.size()), per_step, t + 1, H);
                    n += f.cards().size() - before;
                }
            }
        }
        e.notes.push_back(fmt::format("implied: {} per-processor reception counts", n));
        check_deadline(opt);
        if (personal && in.rounds) {
            // Departures (docs/synthesis.md, "Chunks, rounds and the Pareto frontier"): every
            // message leaves its origin at least once, and the origin sends at most its
            // out-capacity per round. left[i][t]: message i has crossed a channel out of its
            // origin by step t. By t at most out * rounds(1..t) have left, and at least
            // |own| - out * rounds(t+1..H).
            std::size_t d = 0;
            for (std::uint32_t p = 0; p < P; ++p) {
                std::int64_t out_cap = 0;
                if (model.ports != Ports::multi) out_cap = 1;
                else
                    for (ChannelId c : topo.out_channels(Node{p})) out_cap += topo.channel(c).cap;
                std::vector<std::size_t> own;
                for (std::size_t i = 0; i < dm.msgs.size(); ++i)
                    if (dm.origin[i] == Node{p}) own.push_back(i);
                if (own.empty() || out_cap == 0) continue;
                std::vector<std::vector<int>> left(own.size(), std::vector<int>(H + 1, -Formula::top));
                for (std::size_t k = 0; k < own.size(); ++k)
                    for (Step t = 1; t <= H; ++t) {
                        std::vector<int> now{left[k][t - 1]};
                        for (ChannelId c : topo.out_channels(Node{p})) now.push_back(cross[xidx(own[k], idx(c), t)]);
                        left[k][t] = f.or_of(now);
                    }
                for (Step t = 1; t <= H; ++t) {
                    std::vector<int> ls;
                    for (std::size_t k = 0; k < own.size(); ++k) ls.push_back(left[k][t]);
                    std::size_t before = f.cards().size();
                    if (t < H) rounds.at_least_minus(ls, static_cast<std::int64_t>(own.size()), out_cap, t + 1, H);
                    rounds.at_most(std::move(ls), out_cap, 1, t);
                    d += f.cards().size() - before;
                }
            }
            e.notes.push_back(fmt::format("implied: {} per-processor departure counts", d));
            // Wasted hops (docs/synthesis.md): a chain table's walks make at least sum dist
            // hops, and the channels carry at most (sum of capacities) * R in all, so at most
            // slack = that minus sum dist hops fail to bring a message closer to its goal.
            std::int64_t cap_total = 0, need = 0;
            for (const Channel& ch : topo.channels()) cap_total += ch.cap;
            for (std::size_t i = 0; i < dm.msgs.size(); ++i) need += dist[i][idx(dm.goals[i].front())];
            const std::int64_t slack = cap_total * static_cast<std::int64_t>(*in.rounds) - need;
            std::vector<int> waste;
            for (std::size_t i = 0; i < dm.msgs.size(); ++i)
                for (std::size_t c = 0; c < C; ++c) {
                    const Channel& ch = topo.channels()[c];
                    if (to[i][idx(ch.to)] < to[i][idx(ch.from)]) continue;
                    for (Step t = 1; t <= H; ++t)
                        if (cross[xidx(i, c, t)] != -Formula::top) waste.push_back(cross[xidx(i, c, t)]);
                }
            if (slack < 0) f.clause({});
            else if (slack <= 512) f.at_most(std::move(waste), slack);
            e.notes.push_back(fmt::format("implied: at most {} hops away from the goal", slack));
        }
        if (model.ports == Ports::half && topo.routers() == 0) {
            // Every transfer joins a sending and a receiving processor, and under half duplex
            // each processor does one of the two per step: at most floor(P/2) new holdings per step.
            std::size_t g = 0;
            for (Step t = 1; t <= H; ++t) {
                std::vector<int> ls;
                for (std::size_t i = 0; i < dm.msgs.size(); ++i)
                    for (std::uint32_t p = 0; p < P; ++p)
                        if (dm.origin[i] != Node{p} && (!personal || dm.goals[i].front() == Node{p})) ls.push_back(hold[hidx(i, p, t)]);
                std::size_t before = f.cards().size();
                rounds.at_most(std::move(ls), static_cast<std::int64_t>(P / 2), 1, t);
                g += f.cards().size() - before;
            }
            e.notes.push_back(fmt::format("implied: {} half-duplex pairing counts", g));
        }
    }
    add_deadlines(e, dm, hold, hidx, far, H);
    for (std::size_t i = 0; i < dm.msgs.size(); ++i)
        for (std::size_t c = 0; c < C; ++c)
            for (Step t = 1; t <= H; ++t) {
                int x = cross[xidx(i, c, t)];
                if (x == -Formula::top) continue;
                e.candidates.push_back({x, static_cast<std::uint32_t>(e.pool.size()), 1, t});
                e.pool.push_back({t, ChannelId{static_cast<std::uint32_t>(c)}, dm.msgs[i]});
            }
}

// ---------------------------------------------------------------- end to end

void encode_end_to_end(const SynthInstance& in, Step H, const SynthOptions& opt, Encoding& e) {
    const Topology& topo = *in.topology;
    const Model& model = in.model;
    Formula& f = e.f;
    Dissem dm = dissemination_goals(in);
    const std::uint32_t P = topo.processors();
    std::vector<std::uint32_t> len(P * P);
    std::vector<std::vector<ChannelId>> routes(P * P);
    for (std::uint32_t p = 0; p < P; ++p)
        for (std::uint32_t q = 0; q < P; ++q) {
            routes[p * P + q] = topo.route(Node{p}, Node{q});
            len[p * P + q] = static_cast<std::uint32_t>(routes[p * P + q].size());
        }
    Step far = 0;
    for (std::size_t i = 0; i < dm.msgs.size(); ++i)
        for (Node g : dm.goals[i]) far = std::max<Step>(far, len[idx(dm.origin[i]) * P + idx(g)]);
    e.min_horizon = far;
    if (H < far) {
        f.clause({});
        return;
    }
    auto hidx = [&](std::size_t i, std::uint32_t p, Step t) { return (i * P + p) * (H + 1) + t; };
    std::vector<int> hold(dm.msgs.size() * P * (H + 1), -Formula::top);
    for (std::size_t i = 0; i < dm.msgs.size(); ++i)
        for (std::uint32_t p = 0; p < P; ++p)
            for (Step t = len[idx(dm.origin[i]) * P + p]; t <= H; ++t)
                hold[hidx(i, p, t)] = Node{p} == dm.origin[i] ? Formula::top : f.new_var();

    struct Send {
        std::uint32_t msg, p, q;
        Step s;
        int lit;
    };
    std::vector<Send> sends;
    // arrivals[i][q][t]: sends of message i arriving at q in step t.
    std::vector<std::vector<int>> arrivals(dm.msgs.size() * P * (H + 1));
    const std::size_t C = topo.channels().size();
    std::vector<std::vector<int>> load(C * (H + 1));
    std::vector<std::vector<int>> out_port(P * (H + 1)), in_port(P * (H + 1));
    for (std::uint32_t i = 0; i < dm.msgs.size(); ++i)
        for (std::uint32_t p = 0; p < P; ++p) {
            Step first = len[idx(dm.origin[i]) * P + p] + 1;
            for (std::uint32_t q = 0; q < P; ++q) {
                if (q == p || Node{q} == dm.origin[i]) continue;
                const std::uint32_t L = len[p * P + q];
                for (Step s = first; s + L - 1 <= H; ++s) {
                    int x = f.new_var();
                    Step a = s + L - 1;
                    sends.push_back({i, p, q, s, x});
                    f.clause({-x, hold[hidx(i, p, s - 1)]});
                    f.clause({-x, hold[hidx(i, q, a)]});
                    // Dominance: a copy that reaches a processor already holding m is dropped.
                    f.clause({-x, -hold[hidx(i, q, a - 1)]});
                    arrivals[hidx(i, q, a)].push_back(x);
                    for (std::uint32_t k = 0; k < L; ++k) load[idx(routes[p * P + q][k]) * (H + 1) + s + k].push_back(x);
                    out_port[p * (H + 1) + s].push_back(x);
                    in_port[q * (H + 1) + a].push_back(x);
                }
            }
        }
    for (std::size_t i = 0; i < dm.msgs.size(); ++i)
        for (std::uint32_t q = 0; q < P; ++q) {
            if (Node{q} == dm.origin[i]) continue;
            for (Step t = 1; t <= H; ++t) {
                int h = hold[hidx(i, q, t)];
                if (h == -Formula::top) continue;
                f.clause({-hold[hidx(i, q, t - 1)], h});
                std::vector<int> cl{-h, hold[hidx(i, q, t - 1)]};
                const auto& arr = arrivals[hidx(i, q, t)];
                cl.insert(cl.end(), arr.begin(), arr.end());
                f.clause(cl);
            }
        }
    for (std::size_t c = 0; c < C; ++c)
        for (Step t = 1; t <= H; ++t) f.at_most(std::move(load[c * (H + 1) + t]), topo.channels()[c].cap);
    if (model.ports != Ports::multi)
        for (std::uint32_t p = 0; p < P; ++p)
            for (Step t = 1; t <= H; ++t) {
                auto& o = out_port[p * (H + 1) + t];
                auto& r = in_port[p * (H + 1) + t];
                if (model.ports == Ports::half) {
                    o.insert(o.end(), r.begin(), r.end());
                    f.at_most(std::move(o), 1);
                } else {
                    f.at_most(std::move(o), 1);
                    f.at_most(std::move(r), 1);
                }
            }
    if (opt.implied && model.ports != Ports::multi) {
        std::size_t n = 0;
        for (std::uint32_t p = 0; p < P; ++p)
            for (Step t = 1; t <= H; ++t) {
                std::vector<int> ls;
                for (std::size_t i = 0; i < dm.msgs.size(); ++i)
                    if (dm.origin[i] != Node{p}) ls.push_back(hold[hidx(i, p, t)]);
                std::size_t before = f.cards().size();
                f.at_most(std::move(ls), t);
                n += f.cards().size() - before;
            }
        e.notes.push_back(fmt::format("implied: {} per-processor reception counts", n));
    }
    add_deadlines(e, dm, hold, hidx, far, H);
    for (const Send& s : sends) {
        const auto& r = routes[s.p * P + s.q];
        e.candidates.push_back({s.lit, static_cast<std::uint32_t>(e.pool.size()), static_cast<std::uint32_t>(r.size()),
                                s.s + static_cast<Step>(r.size()) - 1});
        for (std::uint32_t k = 0; k < r.size(); ++k) e.pool.push_back({s.s + k, r[k], dm.msgs[s.msg]});
    }
}

}  // namespace

Encoding encode(const SynthInstance& in, Step max_horizon, const SynthOptions& opt) {
    Encoding e;
    e.kind = encoding_for(in);
    if (opt.force_free_route && e.kind == EncodingKind::personal) e.kind = EncodingKind::free_route;
    e.max_horizon = max_horizon;
    if (opt.max_variables > 0) {
        std::uint64_t est = estimate_variables(in, e.kind, max_horizon);
        if (est > opt.max_variables)
            throw EncodeStopped{fmt::format("the {} encoding for T = {} would need about {} variables (limit {}); not built",
                                            to_string(e.kind), max_horizon, est, opt.max_variables)};
    }
    // The formula alone takes about 100 bytes per variable (multibox4x8 allgather, T = 30: 0.92
    // million variables, 96 MB); the solver takes many times more, checked before loading.
    if (!opt.memory.none()) {
        const std::uint64_t need = 100 * estimate_variables(in, e.kind, max_horizon);
        if (!opt.memory.fits(need))
            throw EncodeStopped{fmt::format("memory limit: the {} encoding for T = {} would need about {}, {} of the limit {} is left; not built",
                                            to_string(e.kind), max_horizon, format_bytes(need), format_bytes(opt.memory.left()),
                                            format_bytes(opt.memory.limit()))};
    }
    switch (e.kind) {
        case EncodingKind::personal: encode_personal(in, max_horizon, opt, e); break;
        case EncodingKind::free_route:
        case EncodingKind::dissemination: encode_dissemination(in, max_horizon, opt, e); break;
        case EncodingKind::end_to_end: encode_end_to_end(in, max_horizon, opt, e); break;
        case EncodingKind::combining: encode_combining(in, max_horizon, opt, e); break;
    }
    if (e.deadline.size() < max_horizon + 1u) e.deadline.resize(max_horizon + 1, 0);
    return e;
}

}  // namespace collsched::synth

namespace collsched {

std::string_view to_string(RouteSpace r) { return r == RouteSpace::any ? "any" : "fixed"; }

std::string_view to_string(EncodingKind k) {
    switch (k) {
        case EncodingKind::personal: return "personal";
        case EncodingKind::free_route: return "free_route";
        case EncodingKind::dissemination: return "dissemination";
        case EncodingKind::end_to_end: return "end_to_end";
        case EncodingKind::combining: return "combining";
    }
    return "?";
}

EncodingKind encoding_for(const SynthInstance& in) {
    const Topology& t = *in.topology;
    const Model& m = in.model;
    if (m.timing != Timing::hop)
        throw InputError("the synthesizer encodes hop timing only (timing=hop); wormhole rounds are not supported");
    if (m.queues == QueueKind::bounded)
        throw InputError(fmt::format("the synthesizer encodes queues=none and queues=unbounded; a queue bound ({}) is not supported",
                                     m.queue_bound));
    if (m.combine_routers)
        throw InputError("the synthesizer does not encode in-network reduction (combine=routers): its optima would not cover "
                         "the schedules where routers combine; check such schedules with verify --engine direct or simulate");
    const CollectiveRow& row = in.collective.row();
    if (row.data == coll::Data::any)
        throw InputError("the synthesizer needs a named collective (alltoall, allgather, broadcast:R, scatter:R, gather:R, multicast:R:...)");
    if (row.has_partials()) {
        if (std::string why = combining_problem(in); !why.empty()) throw InputError(why);
        return EncodingKind::combining;
    }
    if (in.collective.combines())
        throw InputError(fmt::format("the synthesizer does not encode combining collectives ({}): values that combine at processors "
                                     "are checked by verify and simulate, not searched for",
                                     in.collective.to_string()));
    if (in.chunked()) {
        // Chunks and rounds are encoded in the hold/cross encodings only (docs/synthesis.md).
        if (in.collective.chunks == 0) throw InputError("--chunks must be at least 1");
        if (in.rounds && *in.rounds == 0) throw InputError("--rounds must be at least 1");
        if (in.routes == RouteSpace::fixed && row.personalized())
            throw InputError("chunks and rounds are searched over any route; --routes fixed is not supported with them");
        if (m.inject_once) throw InputError("inject=once is not encoded with chunks or rounds");
        if (row.personalized()) return EncodingKind::free_route;
        if (t.routers() == 0 || m.replicate) return EncodingKind::dissemination;
        throw InputError(fmt::format("{} on {} with chunks or rounds: copies through routers need replicate=yes or a topology "
                                     "without routers",
                                     in.collective.to_string(), t.spec()));
    }
    if (!t.groups().empty()) {
        // Link groups are encoded in the hold/cross encodings only.
        if (row.personalized()) {
            if (in.routes == RouteSpace::fixed)
                throw InputError("link groups are encoded for any route only; --routes fixed is not supported on a topology with groups");
            if (m.inject_once) throw InputError("inject=once is not encoded on a topology with link groups");
            return EncodingKind::free_route;
        }
        if (t.routers() == 0 || m.replicate) return EncodingKind::dissemination;
        throw InputError(fmt::format("{} on {}: copies through routers need replicate=yes on a topology with link groups",
                                     in.collective.to_string(), t.spec()));
    }
    if (row.personalized()) {
        if (in.routes == RouteSpace::fixed || fixed_routes_exact(in)) return EncodingKind::personal;
        if (m.inject_once)
            throw InputError("inject=once is not encoded for personalized messages on any route (a walk may turn back); use "
                             "--routes fixed");
        return EncodingKind::free_route;
    }
    if (t.routers() == 0 || m.replicate) return EncodingKind::dissemination;
    if (t.family() == Family::ideal && m.queues == QueueKind::none) {
        if (m.inject_once)
            throw InputError("inject=once is encoded for the personal and dissemination encodings, not for the ideal fat tree's "
                             "end-to-end sends");
        return EncodingKind::end_to_end;
    }
    throw InputError(fmt::format(
        "{} on {} with replicate=no: copies through routers are encoded only on the ideal fat tree (end-to-end sends, "
        "queues=none); use --model replicate=yes, a topology without routers, or ideal:N",
        in.collective.to_string(), t.spec()));
}

}  // namespace collsched

namespace collsched {

bool fixed_routes_exact(const SynthInstance& in) {
    const Topology& t = *in.topology;
    // Unique routes: the fat trees (every walk between two leaves contains the tree path) and
    // the linear array. Waiting: processors always may; routers only with unbounded queues.
    bool unique = t.is_tree() || t.family() == Family::linear;
    return unique && (t.routers() == 0 || in.model.queues == QueueKind::unbounded);
}

RouteSpace searched_routes(const SynthInstance& in) {
    if (!synth::personal_kind(in.collective.kind)) return RouteSpace::any;
    if (in.routes == RouteSpace::fixed && !fixed_routes_exact(in)) return RouteSpace::fixed;
    return RouteSpace::any;
}

std::string encoding_label(const SynthInstance& in, EncodingKind k) {
    switch (k) {
        case EncodingKind::personal:
            if (fixed_routes_exact(in)) {
                const char* why = in.topology->routers() == 0 ? "exact: routes are unique on a linear array"
                                                               : "exact: routes are unique on trees and queues are unbounded";
                return fmt::format("personal (fixed routes; {})", why);
            }
            return "personal (fixed routes, as requested)";
        case EncodingKind::free_route: return "free_route (any route)";
        case EncodingKind::dissemination: return "dissemination (any route)";
        case EncodingKind::end_to_end: return "end_to_end (processor-to-processor sends along the routes, the ideal fat tree's model)";
        case EncodingKind::combining: return "combining (partials under the buffer rule, any route)";
    }
    return "?";
}

std::string search_space(const SynthInstance& in) {
    std::string model = to_string(in.model);
    const EncodingKind kind = encoding_for(in);
    if (kind == EncodingKind::combining)
        return fmt::format("every {} of {} chunk{} under the buffer rule (docs/semantics.md, \"Reductions\": a processor sends what its "
                           "buffer holds, combines what arrives disjoint from its buffer, copies what covers it) in model {}, any "
                           "route, one partial per chunk, channel and step{}",
                           in.collective.to_string(), in.collective.chunks, in.collective.chunks == 1 ? "" : "s", model,
                           in.rounds ? fmt::format(", at most {} rounds in all", *in.rounds) : std::string());
    if (kind == EncodingKind::end_to_end)
        return fmt::format("every schedule of model {} in which processors send copies to processors along the routes", model);
    if (searched_routes(in) == RouteSpace::fixed)
        return fmt::format("every schedule of model {} on the topology's fixed routes", model);
    std::string extra;
    if (in.collective.chunks > 1) extra += fmt::format(", {} chunks per datum", in.collective.chunks);
    if (in.rounds) extra += fmt::format(", at most {} rounds in all (a step of r rounds carries r times every capacity)", *in.rounds);
    return fmt::format("every schedule of model {} with any route{}", model, extra);
}

}  // namespace collsched
