// The formula (Formula: clauses and cardinality constraints), the helpers every encoding shares
// (distances, step capacities, deadlines and memory checks) and encode(), which picks the
// encoding of "a schedule completes by step T" (EncodingKind in verifier/synth/problem/instance.hpp) and builds it
// once for a largest horizon H; completion by T <= H is the assumption deadline[T]. The encodings
// are one class each, a method per constraint family: personal in verifier/synth/sat/personal.cpp,
// free_route, dissemination and end_to_end in verifier/synth/sat/dissemination.cpp, combining in
// verifier/synth/sat/combining.cpp; docs/synthesis.md has the same text with the arguments for every
// reduction.
#include "verifier/synth/sat/encode.hpp"

#include <algorithm>
#include <chrono>
#include <deque>
#include <limits>
#include <map>
#include <memory>
#include <tuple>
#include <cstdlib>

#include <fmt/format.h>

#include "support/error.hpp"
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

namespace {

/// Hops from `start` along channels (`forward`) or against them, by breadth-first search.
std::vector<std::uint32_t> bfs(const Topology& t, Node start, bool forward) {
    constexpr std::uint32_t inf = std::numeric_limits<std::uint32_t>::max();
    std::vector<std::uint32_t> d(t.nodes(), inf);
    std::deque<Node> q{start};
    d[idx(start)] = 0;
    while (!q.empty()) {
        Node u = q.front();
        q.pop_front();
        for (ChannelId c : forward ? t.out_channels(u) : t.in_channels(u)) {
            Node v = forward ? t.channel(c).to : t.channel(c).from;
            if (d[idx(v)] == inf) {
                d[idx(v)] = d[idx(u)] + 1;
                q.push_back(v);
            }
        }
    }
    return d;
}

}  // namespace

std::vector<std::uint32_t> bfs_distances(const Topology& t, Node from) { return bfs(t, from, true); }

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

std::vector<std::uint32_t> bfs_distances_to(const Topology& t, Node to) { return bfs(t, to, false); }

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

bool personal_kind(CollectiveKind k) { return collective_row(k).personalized(); }

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
    if (m.combine_routers || (m.multicast_routers && !m.replicate))
        throw InputError(fmt::format("the synthesizer does not encode {} (a machine's switch functions turn it on): its optima "
                                     "would not cover the schedules that use it; check such schedules with verify --engine direct "
                                     "or simulate, or synthesize without it (--model combine=processors,multicast=no)",
                                     m.combine_routers ? "in-network reduction (combine=routers)" : "multicast at routers (multicast=routers)"));
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
