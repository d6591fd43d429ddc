// The formula (Formula: clauses and cardinality constraints), the helpers every encoding shares
// (deadlines and memory checks; distances and step capacities are problem/network.cpp's) and encode(), which picks the
// encoding of "a schedule completes by step T" (EncodingKind in verifier/synth/problem/instance.hpp) and builds it
// once for a largest horizon H; completion by T <= H is the assumption deadline[T]. The encodings
// are one class each, a method per constraint family: personal in verifier/synth/sat/personal.cpp,
// free_route, dissemination and end_to_end in verifier/synth/sat/dissemination.cpp, combining in
// verifier/synth/sat/combining.cpp; each file comment has its encoding's clauses and the arguments for every
// reduction.
#include "verifier/synth/sat/encode.hpp"
#include "verifier/synth/sat/router_copies.hpp"

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
            std::uint64_t bits = t.channels().size();
            if (t.routers() > 0 && !in.model.replicate) {  // copies through forwarding routers are counted (router_copies.hpp)
                const std::vector<std::uint32_t> reach = router_reach(t);
                bits = 0;
                for (std::uint32_t c = 0; c < t.channels().size(); ++c) bits += copy_width(t, reach, ChannelId{c}, 1);
            }
            return msgs * (t.nodes() + bits) * steps;
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

void assign_polled(std::vector<int>& v, std::size_t n, int value, const SynthOptions& opt) {
    constexpr std::size_t block = std::size_t{1} << 20;
    v.clear();
    v.shrink_to_fit();
    v.reserve(n);
    while (v.size() < n) {
        check_deadline(opt);
        v.insert(v.end(), std::min(block, n - v.size()), value);
    }
}

std::string memory_reason(const SynthOptions& opt, std::string_view during) {
    return fmt::format("memory limit ({}): {} resident, limit {}", during, format_bytes(resident_memory()), format_bytes(opt.memory.limit()));
}

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

