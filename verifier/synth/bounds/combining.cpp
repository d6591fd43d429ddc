// The lower bounds of combining and the buffer rule's infeasibility (bounds/combining.hpp;
// docs/synthesis.md, "The direct encoding of combining").
//
// Derivations (moved from docs/synthesis.md; the user's summary stays there):
//
// **When no schedule exists at all** (`buffer_rule_infeasible`, bounds/combining.cpp). A buffer only
// grows and must end as the goal, so it never holds a contribution its goal lacks, and a sent buffer
// includes the sender's own contribution. So a partial holding a(i) passes from k only to a processor
// whose goal holds a(i) and a(k) (one without a goal takes anything). `optimize` and `pareto` search
// these relay graphs (per contribution and distinct goal pattern) before any solve; an unreached goal
// processor means no schedule at any steps, chunks or rounds: `infeasible`, exit 1, naming the
// processor, the contribution and what was reached. Only scan can fail it: on tori, meshes and
// hypercubes it does (torus:3x3: a(1) cannot reach processor 3, whose neighbours are 0, goal a(0),
// and 4, 5, 6, whose contributions 3 may never hold); rings and complete graphs pass. The condition is
// necessary for any schedule; tests/tools/test_reduce_direct.cpp confirms it with the solver (without
// routers a step where no buffer grows can be cut, so a schedule exists iff one of at most sum_p
// (|goal_p| - 1) steps does: 36 on torus:3x3, 6 on hypercube:2, both UNSAT). Skipped above 4096
// processors or 2^30 relay-edge visits.
//
// The transfers bound (rule "receptions, departures and transfers"):
// - *transfers*: a chunk every processor must complete (allreduce) is a one-way gossip, which needs
//   2(P-1) transfers. Proof: order the chunk's transfers by step and let each carry all its sender has
//   seen. Let x be the first to have seen all P contributions, after transfer k: the n-1 others'
//   contributions left their sources in n-1 transfers from distinct senders up to k, and each of the
//   n-1 others still needs an arrival after k. Other chunks need max(sources a goal needs, goals
//   beyond their own contribution). The sum N over chunks is at most min(K_in, K_out) per step: T >=
//   ceil(N / min(K_in, K_out)). Processors only (a combining router would be a participant). Allreduce
//   with C = P and equal limits k: ceil(2C(P-1) / (P k)), Patarasuk and Yuan's 2(P-1)/P in steps.
#include "verifier/synth/bounds/combining.hpp"

#include <algorithm>
#include <limits>
#include <optional>
#include <set>

#include <fmt/format.h>

#include "support/error.hpp"
#include "support/assert.hpp"
#include "verifier/synth/bounds/boxes.hpp"
#include "verifier/synth/problem/network.hpp"

namespace collsched::synth {

namespace {

constexpr std::uint32_t unreachable = std::numeric_limits<std::uint32_t>::max();

/// "0, 1, 2 and 5": the processors a search reached.
std::string reached_list(const std::vector<bool>& reached) {
    std::vector<std::uint32_t> at;
    for (std::uint32_t p = 0; p < reached.size(); ++p)
        if (reached[p]) at.push_back(p);
    std::string out;
    for (std::size_t j = 0; j < at.size(); ++j) out += fmt::format("{}{}", j == 0 ? "" : j + 1 == at.size() ? " and " : ", ", at[j]);
    return out;
}

}  // namespace

Step combining_distance(const SynthInstance& in) {
    const Topology& t = *in.topology;
    const std::uint32_t P = t.processors();
    Step far = 0;
    in.collective.for_each_partial_goal(P, in.collective.chunks, [&](std::uint32_t, std::uint32_t hi, Node p) {
        const std::vector<std::uint32_t> to = bfs_distances_to(t, p);
        for (std::uint32_t s = 0; s <= hi; ++s) {
            if (to[s] == unreachable)
                throw InputError(fmt::format("a({}) cannot reach processor {} on {}: no schedule exists", s, idx(p), t.spec()));
            far = std::max<Step>(far, to[s]);
        }
    });
    return far;
}

std::vector<Bound> combining_distance_bounds(const SynthInstance& in) {
    const Step d = combining_distance(in);
    return {Bound{d, "distance",
                  fmt::format("every contribution must reach every processor whose goal needs it, one hop per step: the farthest is {} hop{}",
                              d, d == 1 ? "" : "s"),
                  RouteSpace::any,
                  {}}};
}

namespace {

/// Transfers in all (docs/synthesis.md, "The direct encoding of combining", Lower bounds): a
/// chunk every processor must complete with all P contributions (allreduce) is a one-way gossip
/// among the P processors, which takes at least 2(P-1) transfers; any other chunk at least one
/// transfer per goal processor that needs more than its own and one per source some other goal
/// needs, whichever is more. At most the sum of the processors' per-step limits arrive at
/// processors in a step, and leave them (networks of processors, as the encoding).
template <class Limit>
Bound total_transfers_bound(const SynthInstance& in, const std::vector<std::vector<bool>>& sends, Limit&& limit) {
    const Topology& t = *in.topology;
    const std::uint32_t P = t.processors(), C = in.collective.chunks;
    std::vector<std::uint32_t> complete(C, 0), receivers(C, 0);  // per chunk: goals of all P contributions, goals beyond one's own
    in.collective.for_each_partial_goal(P, C, [&](std::uint32_t c, std::uint32_t hi, Node p) {
        if (hi == P - 1) ++complete[c];
        if (hi > 0 || idx(p) != 0) ++receivers[c];
    });
    std::uint64_t need = 0, gossips = 0;
    for (std::uint32_t c = 0; c < C; ++c) {
        if (complete[c] == P) {
            need += 2 * std::uint64_t{P - 1};
            ++gossips;
            continue;
        }
        std::uint64_t senders = 0;
        for (std::uint32_t s = 0; s < P; ++s) senders += sends[s][c];
        need += std::max<std::uint64_t>(senders, receivers[c]);
    }
    std::uint64_t arrive = 0, leave = 0;
    for (std::uint32_t p = 0; p < P; ++p) arrive += limit(Node{p}, true), leave += limit(Node{p}, false);
    // Networks of processors only (as the combining encoding): a router that combines would take
    // part in the gossip itself (a star's router sums P partials and returns the total in P
    // arrivals, fewer than 2(P-1)).
    if (t.routers() > 0) return {};
    const std::uint64_t k = std::min(arrive, leave);
    if (need == 0 || k == 0 || gossips == 0) return {};  // printed where a chunk is a gossip (allreduce), the case it is for
    return Bound{static_cast<Step>((need + k - 1) / k), "transfers",
                 fmt::format("{} of the {} chunks must end at all {} processors with every contribution, a one-way gossip of at "
                             "least 2(P-1) = {} transfers each; {} transfers in all, at most {} per step arrive at and leave processors",
                             gossips, C, P, 2 * (P - 1), need, k),
                 RouteSpace::any,
                 {"a contribution spreads only in partials, and a partial carries only contributions its sender holds", "no routers"}};
}

/// The same gossip between sets of processors (docs/synthesis.md, Lower bounds, *transfers between
/// boxes*): contract each set to one participant (it has seen what any member has seen); a
/// transfer inside a set changes nothing, so each of `gossips` chunks needs 2(B-1) transfers
/// between the B sets, and at most the sum of the processors' per-step limits on channels from
/// (to) other sets cross per step. Any partition gives a bound; tried: the sets joined by links of
/// at least each bandwidth the machine has (its boxes, on a machine of boxes).
Bound box_gossip_bound(const SynthInstance& in, std::uint64_t gossips) {
    const Topology& t = *in.topology;
    Bound best;
    for (const BoxPartition& part : box_partitions(t)) {
        const std::uint64_t B = part.sets, need = gossips * 2 * (B - 1);
        const std::uint64_t k = std::min(cross_capacity(t, in.model.ports, part, true), cross_capacity(t, in.model.ports, part, false));
        if (k == 0) continue;
        const Step steps = static_cast<Step>((need + k - 1) / k);
        if (steps <= best.steps) continue;
        best = Bound{steps, "transfers between boxes",
                     fmt::format("{} chunks must end at all {} processors with every contribution; between the {} sets of processors "
                                 "joined by channels of at least {:g} GB/s each is a one-way gossip of at least 2(B-1) = {} transfers "
                                 "between sets; {} in all, at most {} per step cross between sets",
                                 gossips, t.processors(), B, part.speed / 1e9, 2 * (B - 1), need, k),
                     RouteSpace::any,
                     {"a contribution spreads only in partials, and a partial carries only contributions its sender holds", "no routers"}};
    }
    return best;
}

}  // namespace

std::vector<Bound> combining_count_bounds(const SynthInstance& in) {
    const Topology& t = *in.topology;
    const std::uint32_t P = t.processors(), C = in.collective.chunks;
    std::vector<Bound> out;
    // Transfers per chunk: a goal processor needs an arrival of every chunk it must complete
    // (its buffer starts with its own contribution only), and a source must send every chunk
    // whose contribution some other processor needs. At most K transfers enter (leave) p per
    // step, K = step_capacity of its in- (out-) channels (capacities, ports, link groups).
    auto limit = [&](Node p, bool incoming) {
        return step_capacity(t, in.model.ports, incoming ? t.in_channels(p) : t.out_channels(p)).hops;
    };
    std::vector<std::uint64_t> need_in(P, 0), need_out(P, 0);
    std::vector<std::vector<bool>> sends(P, std::vector<bool>(C, false));
    in.collective.for_each_partial_goal(P, C, [&](std::uint32_t c, std::uint32_t hi, Node p) {
        if (hi > 0 || idx(p) != 0) ++need_in[idx(p)];  // a goal of more than p's own contribution
        for (std::uint32_t s = 0; s <= hi; ++s)
            if (s != idx(p)) sends[s][c] = true;
    });
    for (std::uint32_t s = 0; s < P; ++s) need_out[s] = static_cast<std::uint64_t>(std::count(sends[s].begin(), sends[s].end(), true));
    if (Bound b = total_transfers_bound(in, sends, limit); b.steps > 0) {
        std::uint64_t gossips = 0;  // the chunks every processor completes with every contribution
        std::vector<std::uint32_t> complete(C, 0);
        in.collective.for_each_partial_goal(P, C, [&](std::uint32_t c, std::uint32_t hi, Node) { complete[c] += hi == P - 1; });
        for (std::uint32_t c = 0; c < C; ++c) gossips += complete[c] == P;
        out.push_back(std::move(b));
        if (Bound boxes = box_gossip_bound(in, gossips); boxes.steps > out.back().steps) out.push_back(std::move(boxes));
    }
    for (bool incoming : {true, false}) {
        Step best = 0;
        std::uint32_t at = 0;
        std::uint64_t need = 0, k = 0;
        for (std::uint32_t p = 0; p < P; ++p) {
            const std::uint64_t n = incoming ? need_in[p] : need_out[p], kp = limit(Node{p}, incoming);
            if (n == 0 || kp == 0) continue;
            const Step b = static_cast<Step>((n + kp - 1) / kp);
            if (b > best) best = b, at = p, need = n, k = kp;
        }
        if (best == 0) continue;
        out.push_back({best, incoming ? "receptions" : "departures",
                       incoming ? fmt::format("processor {} must receive each of {} chunks at least once, at most {} per step", at, need, k)
                                : fmt::format("processor {} must send each of {} chunks at least once, at most {} per step", at, need, k),
                       RouteSpace::any,
                       {incoming ? "a buffer starts with its own contribution only" : "a contribution leaves its source only in a partial"}});
    }
    return out;
}

}  // namespace collsched::synth

namespace collsched {

std::string buffer_rule_infeasible(const SynthInstance& in) {
    const Topology& t = *in.topology;
    const std::uint32_t P = t.processors(), C = in.collective.chunks;
    if (!in.collective.row().has_partials() || in.model.combine_routers || P > 4096 || std::uint64_t{C} * P > (std::uint64_t{1} << 24)) return {};
    // goal[c][p]: the prefix a(0..hi) processor p must end with in chunk c; -1: no goal. Only a goal
    // short of every contribution constrains the relays (otherwise the condition is connectivity).
    std::vector<std::vector<std::int64_t>> goal(C, std::vector<std::int64_t>(P, -1));
    bool short_goal = false;
    in.collective.for_each_partial_goal(P, C, [&](std::uint32_t c, std::uint32_t hi, Node p) {
        goal[c][idx(p)] = hi;
        short_goal = short_goal || hi + 1 < P;
    });
    if (!short_goal) return {};
    // A partial leaves a processor and arrives at the next processor through routers only.
    std::vector<std::vector<std::uint32_t>> next(P);
    std::uint64_t relay_edges = 0;
    for (std::uint32_t k = 0; k < P; ++k) {
        std::vector<bool> seen(t.nodes(), false);
        std::vector<Node> stack{Node{k}};
        seen[k] = true;
        while (!stack.empty()) {
            const Node v = stack.back();
            stack.pop_back();
            for (ChannelId e : t.out_channels(v)) {
                const Node w = t.channel(e).to;
                if (seen[idx(w)]) continue;
                seen[idx(w)] = true;
                if (t.is_processor(w)) next[k].push_back(idx(w));
                else stack.push_back(w);
            }
        }
        relay_edges += next[k].size();
    }
    if (relay_edges * P > (std::uint64_t{1} << 30)) return {};  // the proof is an extra: not at any cost
    auto holds = [](std::int64_t hi, std::uint32_t s) { return hi < 0 || std::int64_t{s} <= hi; };
    std::set<std::vector<std::int64_t>> done;
    for (std::uint32_t c = 0; c < C; ++c) {
        if (!done.insert(goal[c]).second) continue;
        const std::vector<std::int64_t>& g = goal[c];
        for (std::uint32_t i = 0; i < P; ++i) {
            // Processors that may ever hold a(i): those whose goal has it (or that have no goal).
            std::vector<bool> reached(P, false);
            std::vector<std::uint32_t> queue{i};
            reached[i] = true;
            for (std::size_t h = 0; h < queue.size(); ++h) {
                const std::uint32_t k = queue[h];
                for (std::uint32_t w : next[k])
                    if (!reached[w] && holds(g[w], i) && holds(g[w], k)) {
                        reached[w] = true;
                        queue.push_back(w);
                    }
            }
            for (std::uint32_t p = 0; p < P; ++p)
                if (g[p] >= 0 && !reached[p] && holds(g[p], i))
                    return fmt::format(
                        "the buffer rule (docs/semantics.md, \"Reductions\") forbids it: processor {} must end with a({}){} but no "
                        "chain of processors can carry it there. A buffer only grows (a combination or a copy that covers it) "
                        "and ends as its goal, and a processor sends its whole buffer, its own contribution included; so a partial "
                        "holding a({}) passes from processor k only to a processor whose goal holds both a({}) and a(k), and from {} "
                        "such steps reach processors {} only",
                        p, i, C > 1 ? fmt::format(" in chunk {}", c) : "", i, i, i, synth::reached_list(reached));
        }
    }
    return {};
}

}  // namespace collsched
