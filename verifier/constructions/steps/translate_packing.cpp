// Allgather by translates of one labelled tree set under a checked group Z_B x Z_K.
//
// The greedy over the quotient (moved from docs/synthesis.md; the user's summary stays there):
//
// **Translates of one tree set** (`translate_packing.cpp`, allgather). If Z_B x Z_K acts on x = B b +
// i by adding to box b and index i (B = P: a ring; B = 8: the multibox, rail and H100 machines; tori
// a x b: B = b) and both generators pass `AutomorphismCheck` (`translation_box`), every datum follows
// the same C trees moved by its origin. Channel u->w then carries in step s one chunk per tree edge of
// step s with difference w - u, so the table is valid iff per step (a) the edges of each difference d
// number at most cap(d), (b) the edges whose differences lie in a link group (or port) at most its
// capacity, with multiplicity: a broadcast of C chunks in a quotient of P elements. A greedy fills it
// step by step (scarcest class of differences first; within it the (tree, node) fewest classes can
// reach, then the tree with most left, then seeded); restarts until the cut's least steps or 64
// without improvement. Multibox and rail 2x8 .. 128x8: S = N-1 with C = 2, R/C = (N-1)/2, the cut
// around one GPU: **proved bandwidth-optimal**.
#include "verifier/constructions/steps/translate_packing.hpp"

#include <algorithm>
#include <map>
#include <numeric>
#include <span>

#include <fmt/format.h>

#include "compiler/table/builder.hpp"
#include "verifier/synth/symmetry/processor_orbits.hpp"
#include "support/assert.hpp"
#include "support/hash.hpp"

namespace collsched {

namespace {

/// One per-step budget: the tree edges whose differences it lists (with multiplicity) number at
/// most `cap` (a link group, a port, or one difference's channel capacity).
struct Budget {
    std::uint32_t cap;
    std::vector<std::pair<std::uint32_t, std::uint32_t>> diffs;  // (difference index, multiplicity)
};

/// The quotient problem: differences (one per channel leaving processor 0), the budgets, and the
/// classes of differences that take part in the same budgets (interchangeable but for their
/// channel capacity).
struct Quotient {
    Translations tr;
    std::uint32_t P;
    std::vector<std::uint32_t> diff;      // element of difference j
    std::vector<std::int32_t> diff_index;  // per element: its difference index or -1
    std::vector<Budget> budgets;
    std::vector<std::vector<std::pair<std::uint32_t, std::uint32_t>>> budgets_of;  // per difference: (budget, mult)
    std::vector<std::uint32_t> class_of;                                          // per difference
    std::vector<std::vector<std::uint32_t>> class_diffs;
    std::vector<std::uint32_t> class_order;  // scarcest first
    std::vector<std::uint64_t> class_room;   // the most a class may add in one step
};

Quotient quotient(const Topology& t, const Model& model, std::uint32_t B) {
    Quotient q{{B, t.processors() / B}, t.processors(), {}, {}, {}, {}, {}, {}, {}, {}};
    q.diff_index.assign(q.P, -1);
    for (ChannelId c : t.out_channels(Node{0})) {
        const std::uint32_t d = idx(t.channel(c).to);
        q.diff_index[d] = static_cast<std::int32_t>(q.diff.size());
        q.diff.push_back(d);
        q.budgets.push_back({t.channel(c).cap, {{static_cast<std::uint32_t>(q.diff.size() - 1), 1}}});
    }
    // Link groups, one budget per orbit (equal difference multisets and capacities).
    std::map<std::pair<std::uint32_t, std::vector<std::pair<std::uint32_t, std::uint32_t>>>, bool> seen;
    auto add_budget = [&](std::uint32_t cap, std::vector<std::uint32_t> ds) {
        std::sort(ds.begin(), ds.end());
        std::vector<std::pair<std::uint32_t, std::uint32_t>> m;
        for (std::uint32_t d : ds) {
            if (!m.empty() && m.back().first == d) ++m.back().second;
            else m.push_back({d, 1});
        }
        if (seen.emplace(std::pair{cap, m}, true).second) q.budgets.push_back({cap, std::move(m)});
    };
    for (const LinkGroup& g : t.groups()) {
        std::vector<std::uint32_t> ds;
        for (ChannelId c : g.channels) {
            const Channel& ch = t.channel(c);
            ds.push_back(static_cast<std::uint32_t>(q.diff_index[q.tr.sub(idx(ch.to), idx(ch.from))]));
        }
        add_budget(g.cap, std::move(ds));
    }
    if (model.ports == Ports::single) {  // a port: every channel out of (or into) a processor, capacity 1
        std::vector<std::uint32_t> all(q.diff.size());
        std::iota(all.begin(), all.end(), 0u);
        add_budget(1, all);
    }
    q.budgets_of.resize(q.diff.size());
    for (std::uint32_t b = 0; b < q.budgets.size(); ++b)
        for (auto [d, m] : q.budgets[b].diffs) q.budgets_of[d].push_back({b, m});
    // Classes: differences in the same group budgets.
    std::map<std::vector<std::uint32_t>, std::uint32_t> classes;
    q.class_of.resize(q.diff.size());
    for (std::uint32_t d = 0; d < q.diff.size(); ++d) {
        std::vector<std::uint32_t> key;
        for (auto [b, m] : q.budgets_of[d])
            if (q.budgets[b].diffs.size() > 1 || q.budgets[b].diffs[0].first != d) key.push_back(b);
        auto [it, fresh] = classes.emplace(key, static_cast<std::uint32_t>(q.class_diffs.size()));
        if (fresh) q.class_diffs.emplace_back();
        q.class_of[d] = it->second;
        q.class_diffs[it->second].push_back(d);
    }
    // Scarcest first: the least capacity a class may use per step (its tightest budget, or the
    // sum of its channels' capacities when no group limits it).
    std::vector<std::uint64_t> room(q.class_diffs.size(), 0);
    for (std::uint32_t k = 0; k < q.class_diffs.size(); ++k) {
        std::uint64_t chans = 0, tight = std::uint64_t(-1);
        for (std::uint32_t d : q.class_diffs[k]) {
            chans += t.channel(t.out_channels(Node{0})[d]).cap;
            for (auto [b, m] : q.budgets_of[d])
                if (q.budgets[b].diffs.size() > 1) tight = std::min<std::uint64_t>(tight, q.budgets[b].cap);
        }
        room[k] = std::min(chans, tight);
    }
    q.class_room = room;
    q.class_order.resize(q.class_diffs.size());
    std::iota(q.class_order.begin(), q.class_order.end(), 0u);
    std::stable_sort(q.class_order.begin(), q.class_order.end(), [&](auto a, auto b) { return room[a] < room[b]; });
    return q;
}

/// One seeded greedy run: the labelled edges of C trees rooted at 0, or nullopt when a step
/// added nothing, `max_steps` passed or the deadline (checked every step).
std::optional<std::vector<QuotientEdge>> grow(const Quotient& q, std::uint32_t C, Step max_steps, std::uint64_t seed,
                                              std::chrono::steady_clock::time_point deadline) {
    const std::uint32_t P = q.P, nk = static_cast<std::uint32_t>(q.class_diffs.size());
    constexpr Step never = ~Step{0};
    std::vector<Step> reach(std::size_t{C} * P, never);
    std::vector<std::uint32_t> cnt(std::size_t{C} * P * nk, 0), left(C, P - 1);
    std::vector<char> pending(std::size_t{C} * P, 0);
    auto reached = [&](std::uint32_t t, std::uint32_t x) {
        for (std::uint32_t d = 0; d < q.diff.size(); ++d) ++cnt[(std::size_t{t} * P + q.tr.add(x, q.diff[d])) * nk + q.class_of[d]];
    };
    for (std::uint32_t t = 0; t < C; ++t) {
        reach[std::size_t{t} * P] = 0;
        reached(t, 0);
    }
    std::uint64_t remaining = std::uint64_t{C} * (P - 1);
    std::vector<QuotientEdge> edges;
    edges.reserve(remaining);
    std::vector<std::int64_t> budget(q.budgets.size());
    struct Cand {
        std::uint64_t key;
        std::uint32_t t, y;
    };
    std::vector<Cand> cands;
    std::vector<std::uint32_t> added;
    const std::vector<std::uint64_t>& room_of = q.class_room;
    for (Step s = 1; remaining > 0; ++s) {
        if (s > max_steps || std::chrono::steady_clock::now() > deadline) return std::nullopt;
        for (std::size_t b = 0; b < budget.size(); ++b) budget[b] = q.budgets[b].cap;
        added.clear();
        std::vector<std::uint32_t> order = q.class_order;
        // Classes of equal scarcity in a seeded order.
        for (std::size_t i = 1; i < order.size(); ++i)
            if (murmur3_fmix64(seed * 31 + s * 7 + i) & 1) std::swap(order[i - 1], order[i]);
        for (std::uint32_t k : order) {
            cands.clear();
            for (std::uint32_t t = 0; t < C; ++t)
                for (std::uint32_t y = 1; y < P; ++y) {
                    const std::size_t ty = std::size_t{t} * P + y;
                    if (reach[ty] != never || pending[ty] || cnt[ty * nk + k] == 0) continue;
                    std::uint32_t serve = 0;
                    for (std::uint32_t j = 0; j < nk; ++j) serve += cnt[ty * nk + j] > 0;
                    // Served by fewest classes first, then the tree with the most left, then seeded.
                    const std::uint64_t key = std::uint64_t{serve} << 56 | std::uint64_t{P - left[t]} << 32 | (murmur3_fmix64(seed ^ (ty * 0x9E3779B97F4A7C15ULL) ^ s) & 0xffffffffu);
                    cands.push_back({key, t, y});
                }
            // Only the first few are usually taken (a class adds at most its budget per step):
            // sort a prefix, and the rest only when the prefix runs out.
            const auto by_key = [](const Cand& a, const Cand& b) { return a.key < b.key; };
            const std::size_t head = std::min(cands.size(), std::size_t{4} * room_of[k] + 8);
            std::partial_sort(cands.begin(), cands.begin() + static_cast<std::ptrdiff_t>(head), cands.end(), by_key);
            for (std::size_t ci = 0; ci < cands.size(); ++ci) {
                if (ci == head) std::sort(cands.begin() + static_cast<std::ptrdiff_t>(head), cands.end(), by_key);
                const Cand& c = cands[ci];
                // A difference of this class from a holder of the tree, within every budget.
                bool room = false;
                for (std::uint32_t d : q.class_diffs[k]) {
                    bool fits = true;
                    for (auto [b, m] : q.budgets_of[d]) fits = fits && budget[b] >= static_cast<std::int64_t>(m);
                    if (fits) room = true;
                    else continue;
                    const std::uint32_t x = q.tr.sub(c.y, q.diff[d]);
                    if (reach[std::size_t{c.t} * P + x] >= s) continue;
                    for (auto [b, m] : q.budgets_of[d]) budget[b] -= m;
                    pending[std::size_t{c.t} * P + c.y] = 1;
                    edges.push_back({s, c.t, x, c.y});
                    added.push_back(c.t * P + c.y);
                    break;
                }
                if (!room) break;  // the class's budgets are spent
            }
        }
        if (added.empty()) return std::nullopt;
        for (std::uint32_t ty : added) {
            reach[ty] = s;
            pending[ty] = 0;
            --left[ty / P];
            --remaining;
            reached(ty / P, ty % P);
        }
    }
    return edges;
}

}  // namespace

std::optional<QuotientTrees> grow_translates(const SynthInstance& in, std::uint32_t chunks, Step target_steps,
                                             std::chrono::steady_clock::time_point deadline) {
    const Topology& t = *in.topology;
    if (in.collective.kind != CollectiveKind::allgather || in.model.ports == Ports::half || in.model.timing != Timing::hop || in.model.inject_once)
        return std::nullopt;
    // The deadline stops the group's check too (nothing found: no trees).
    std::optional<std::uint32_t> B;
    try {
        B = translation_box(t, RunLimits{Deadline::at(deadline), {}});
    } catch (const LimitReached&) {
        return std::nullopt;
    }
    if (!B) return std::nullopt;
    const Quotient q = quotient(t, in.model, *B);
    std::optional<std::vector<QuotientEdge>> best;
    Step best_steps = ~Step{0};
    // Seeded runs until one reaches the target, 64 in a row find nothing better, or the deadline.
    for (std::uint64_t seed = 0, misses = 0; best_steps > target_steps && misses < 64; ++seed) {
        if (seed > 0 && std::chrono::steady_clock::now() > deadline) break;
        std::optional<std::vector<QuotientEdge>> e =
            grow(q, chunks, best_steps == ~Step{0} ? 8 * target_steps + 64 : best_steps - 1, seed, deadline);
        if (!e) {
            ++misses;
            continue;
        }
        misses = 0;
        best_steps = e->back().step;
        best = std::move(e);
    }
    if (!best) return std::nullopt;
    return QuotientTrees{q.tr, chunks, std::move(*best)};
}

PackedSchedule expand_translates(const SynthInstance& in, const QuotientTrees& trees, const RunLimits& limits) {
    // Lower: datum g follows every tree moved by g.
    const Topology& t = *in.topology;
    const std::uint32_t P = t.processors(), chunks = trees.chunks;
    Collective coll = in.collective;
    coll.chunks = chunks;
    const Messages ms = coll.messages(P);
    std::vector<std::uint16_t> depth(std::size_t{chunks} * P, 0);
    PackedSchedule out;
    for (const QuotientEdge& e : trees.edges) {
        depth[std::size_t{e.tree} * P + e.to] = static_cast<std::uint16_t>(depth[std::size_t{e.tree} * P + e.from] + 1);
        out.depth = std::max<std::uint32_t>(out.depth, depth[std::size_t{e.tree} * P + e.to]);
    }
    const std::uint64_t transfers = mul_sat(trees.edges.size(), P);
    limits.reserve(mul_sat(transfers, bytes_per_transfer), fmt::format("the table of {} transfers (the translates)", transfers));
    std::vector<Transfer>& xs = out.table.transfers;
    xs.reserve(trees.edges.size() * P);
    // Step by step (the edges are in step order), each step sorted as it is written: no sort of
    // the whole table (67 million transfers on torus:64x64 took seconds past the limit, with a
    // second copy of the table), and the limits polled every step and every 65,536 transfers.
    COLLSCHED_ASSERT(std::is_sorted(trees.edges.begin(), trees.edges.end(),
                                    [](const QuotientEdge& a, const QuotientEdge& b) { return a.step < b.step; }));
    StepSorter sorter;
    for (std::size_t i0 = 0; i0 < trees.edges.size();) {
        std::size_t i1 = i0;
        while (i1 < trees.edges.size() && trees.edges[i1].step == trees.edges[i0].step) ++i1;
        const std::size_t first = xs.size();
        for (std::uint32_t g = 0; g < P; ++g) {
            if (g % 64 == 0 || (i1 - i0) * 64 > 65536) limits.check("writing the translates");
            for (std::size_t i = i0; i < i1; ++i) {
                const QuotientEdge& e = trees.edges[i];
                const auto c = t.find_channel(Node{trees.group.add(g, e.from)}, Node{trees.group.add(g, e.to)});
                COLLSCHED_ASSERT(c.has_value());
                xs.push_back({e.step, *c, ms.broadcast(g, e.tree)});
            }
        }
        sorter.sort(std::span<Transfer>(xs.data() + first, xs.size() - first), t.channels().size());
        i0 = i1;
    }
    out.chunks = chunks;
    out.table.topology = in.topology;
    out.table.model = in.model;
    out.table.collective = coll;
    out.steps = out.table.steps();
    out.rounds = out.steps;
    return out;
}

std::optional<PackedSchedule> pack_translates(const SynthInstance& in, std::uint32_t chunks, Step target_steps,
                                              std::chrono::steady_clock::time_point deadline, const RunLimits& limits) {
    std::optional<QuotientTrees> trees = grow_translates(in, chunks, target_steps, std::min(deadline, limits.deadline.when()));
    if (!trees) return std::nullopt;
    RunLimits until = limits;
    until.deadline = limits.deadline.min(Deadline::at(deadline));
    return expand_translates(in, *trees, until);
}

namespace {

/// Processor 0's messages in the quotient: per destination d, its shortest paths as sequences of
/// difference indices (at most `max_paths`, in a fixed order), found on the BFS layers of the
/// Cayley graph.
std::vector<std::vector<std::vector<std::uint32_t>>> shortest_paths(const Quotient& q, std::size_t max_paths) {
    const std::uint32_t P = q.P;
    constexpr std::uint32_t far = ~std::uint32_t{0};
    std::vector<std::uint32_t> dist(P, far), order{0};
    dist[0] = 0;
    // A difference some budget cannot take even alone (a group holding several channels of it
    // with a smaller capacity) is never used: a hop of it would not fit in any step.
    std::vector<char> usable(q.diff.size(), 1);
    for (std::uint32_t d = 0; d < q.diff.size(); ++d)
        for (auto [b, m] : q.budgets_of[d]) usable[d] = usable[d] && m <= q.budgets[b].cap;
    for (std::size_t i = 0; i < order.size(); ++i)
        for (std::uint32_t d = 0; d < q.diff.size(); ++d) {
            if (!usable[d]) continue;
            const std::uint32_t y = q.tr.add(order[i], q.diff[d]);
            if (dist[y] == far) {
                dist[y] = dist[order[i]] + 1;
                order.push_back(y);
            }
        }
    std::vector<std::vector<std::vector<std::uint32_t>>> paths(P);
    if (order.size() != P) return {};  // not strongly connected
    paths[0].push_back({});
    for (std::uint32_t y : order)  // BFS order: every predecessor's paths are complete
        for (std::uint32_t d = 0; d < q.diff.size() && y != 0; ++d) {
            if (!usable[d]) continue;
            const std::uint32_t x = q.tr.sub(y, q.diff[d]);
            if (dist[x] + 1 != dist[y]) continue;
            for (const auto& p : paths[x]) {
                if (paths[y].size() == max_paths) break;
                paths[y].push_back(p);
                paths[y].back().push_back(d);
            }
        }
    return paths;
}

/// Per-step budgets left, steps added on demand.
class StepBudgets {
public:
    explicit StepBudgets(const Quotient& q) : q_(q) {}
    bool fits(Step s, std::uint32_t d) {
        grow(s);
        for (auto [b, m] : q_.budgets_of[d])
            if (left_[std::size_t{s - 1} * q_.budgets.size() + b] < static_cast<std::int64_t>(m)) return false;
        return true;
    }
    void take(Step s, std::uint32_t d) {
        for (auto [b, m] : q_.budgets_of[d]) left_[std::size_t{s - 1} * q_.budgets.size() + b] -= m;
    }
    /// The earliest step after `after` at which difference d fits.
    Step earliest(Step after, std::uint32_t d) {
        Step s = after + 1;
        while (!fits(s, d)) ++s;
        return s;
    }

private:
    void grow(Step s) {
        while (left_.size() < std::size_t{s} * q_.budgets.size())
            for (const Budget& b : q_.budgets) left_.push_back(b.cap);
    }
    const Quotient& q_;
    std::vector<std::int64_t> left_;
};

struct Hop {
    Step step;
    std::uint32_t diff;
};

/// One seeded first-fit run: per destination its hops, or nullopt past `max_steps`.
std::optional<std::vector<std::vector<Hop>>> place_messages(const Quotient& q, const std::vector<std::vector<std::vector<std::uint32_t>>>& paths,
                                                            Step max_steps, std::uint64_t seed) {
    const std::uint32_t P = q.P;
    std::vector<std::uint32_t> order(P - 1);
    std::iota(order.begin(), order.end(), 1u);
    // Longest paths first; among equals, a seeded order (seed 0: ascending destinations).
    std::stable_sort(order.begin(), order.end(), [&](std::uint32_t a, std::uint32_t b) {
        const auto la = paths[a].front().size(), lb = paths[b].front().size();
        if (la != lb) return la > lb;
        return seed != 0 && murmur3_fmix64(seed ^ a) < murmur3_fmix64(seed ^ b);
    });
    StepBudgets budgets(q);
    std::vector<std::vector<Hop>> plan(P);
    std::vector<Hop> trial, best;
    for (std::uint32_t y : order) {
        best.clear();
        const std::size_t n = paths[y].size();
        for (std::size_t k = 0; k < n; ++k) {
            const auto& path = paths[y][(k + seed) % n];
            trial.clear();
            Step at = 0;
            for (std::uint32_t d : path) trial.push_back({at = budgets.earliest(at, d), d});
            if (best.empty() || trial.back().step < best.back().step) best = trial;
        }
        if (best.back().step > max_steps) return std::nullopt;
        for (const Hop& h : best) budgets.take(h.step, h.diff);
        plan[y] = best;
    }
    return plan;
}

}  // namespace

std::optional<SendTable> translate_alltoall(const SynthInstance& in, Step target_steps, std::chrono::steady_clock::time_point deadline,
                                            const RunLimits& limits) {
    const Topology& t = *in.topology;
    if (in.collective.kind != CollectiveKind::alltoall || in.collective.chunks != 1 || in.model.ports == Ports::half ||
        in.model.timing != Timing::hop || t.processors() > 4096)
        return std::nullopt;
    const std::optional<std::uint32_t> B = translation_box(t, limits);
    if (!B) return std::nullopt;
    const Quotient q = quotient(t, in.model, *B);
    const auto paths = shortest_paths(q, 8);
    if (paths.empty()) return std::nullopt;
    std::optional<std::vector<std::vector<Hop>>> best;
    Step best_steps = ~Step{0};
    for (std::uint64_t seed = 0, misses = 0; best_steps > target_steps && misses < 16; ++seed) {
        if (seed > 0 && std::chrono::steady_clock::now() > deadline) break;
        auto plan = place_messages(q, paths, best_steps == ~Step{0} ? best_steps : best_steps - 1, seed);
        if (!plan) {
            ++misses;
            continue;
        }
        misses = 0;
        best_steps = 0;
        for (const auto& hops : *plan)
            if (!hops.empty()) best_steps = std::max(best_steps, hops.back().step);
        best = std::move(plan);
    }
    if (!best) return std::nullopt;
    std::uint64_t hops = 0;
    for (const auto& h : *best) hops += h.size();
    const std::uint64_t transfers = mul_sat(hops, q.P);
    limits.reserve(mul_sat(transfers, bytes_per_transfer), fmt::format("the table of {} transfers (the translates)", transfers));
    // Lower: processor g's message to g + y follows y's hops moved by g.
    TableBuilder b(in.topology, in.model, in.collective);
    const Messages ms(q.P);
    for (std::uint32_t g = 0; g < q.P; ++g) {
        limits.check("writing the translates");
        for (std::uint32_t y = 1; y < q.P; ++y) {
            std::uint32_t at = g;
            for (const Hop& h : (*best)[y]) {
                const std::uint32_t next = q.tr.add(at, q.diff[h.diff]);
                const auto c = t.find_channel(Node{at}, Node{next});
                COLLSCHED_ASSERT(c.has_value());
                b.hop(h.step, *c, ms.personal(g, q.tr.add(g, y)));
                at = next;
            }
        }
    }
    return std::move(b).finish();
}

}  // namespace collsched
