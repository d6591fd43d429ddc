// What an instance is before any room works on it (problem/instance.hpp): the encoding its
// collective and model call for, the route space searched and how it is named, when the direct
// encoding of combining applies, and the names of the enums every room prints. Moved from
// sat/encode.cpp, sat/combining.cpp, sat/solve.cpp, search/optimize.cpp and search/pareto.cpp
// (issue 42) so that the bounds and the constructions need nothing of the solver.
#include "verifier/synth/problem/instance.hpp"

#include <numeric>

#include <fmt/format.h>

#include "support/assert.hpp"
#include "support/error.hpp"
#include "verifier/synth/problem/network.hpp"
#include "verifier/synth/problem/pareto.hpp"

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
        return EncodingKind::dissemination;  // under replicate=no, copies through routers are counted
    }
    if (!t.groups().empty()) {
        // Link groups are encoded in the hold/cross encodings only.
        if (row.personalized()) {
            if (in.routes == RouteSpace::fixed)
                throw InputError("link groups are encoded for any route only; --routes fixed is not supported on a topology with groups");
            if (m.inject_once) throw InputError("inject=once is not encoded on a topology with link groups");
            return EncodingKind::free_route;
        }
        return EncodingKind::dissemination;
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
    // replicate=no: routers forward, each copy through them counted (verifier/synth/sat/router_copies.hpp).
    return EncodingKind::dissemination;
}

bool fixed_routes_exact(const SynthInstance& in) {
    const Topology& t = *in.topology;
    // Unique routes: the fat trees (every walk between two leaves contains the tree path) and
    // the linear array. Waiting: processors always may; routers only with unbounded queues.
    bool unique = t.is_tree() || t.family() == Family::linear;
    return unique && (t.routers() == 0 || in.model.queues == QueueKind::unbounded);
}

RouteSpace searched_routes(const SynthInstance& in) {
    if (!collective_row(in.collective.kind).personalized()) return RouteSpace::any;
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
        case EncodingKind::dissemination:
            if (in.topology->routers() > 0 && !in.model.replicate) return "dissemination (any route; routers forward, copies through them counted)";
            return "dissemination (any route)";
        case EncodingKind::end_to_end: return "end_to_end (processor-to-processor sends along the routes, the ideal fat tree's model)";
        case EncodingKind::combining:
            if (in.topology->routers() > 0) return "combining (partials under the buffer rule, any route; routers forward, each partial named by its origin)";
            return "combining (partials under the buffer rule, any route)";
    }
    return "?";
}

std::string search_space(const SynthInstance& in) {
    std::string model = to_string(in.model);
    const EncodingKind kind = encoding_for(in);
    if (kind == EncodingKind::combining)
        return fmt::format("every {} of {} chunk{} under the buffer rule (docs/semantics.md, \"Reductions\": a processor sends what its "
                           "buffer holds, combines what arrives disjoint from its buffer, copies what covers it) in model {}, any "
                           "route, one partial per chunk, channel and step{}{}",
                           in.collective.to_string(), in.collective.chunks, in.collective.chunks == 1 ? "" : "s", model,
                           in.topology->routers() > 0 ? " between processors; routers forward each partial once, first in first out, "
                                                        "never combine or copy it, and carry as many partials of a chunk as their "
                                                        "channels' capacity"
                                                      : "",
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

std::string combining_problem(const SynthInstance& in) {
    const Topology& t = *in.topology;
    if (!in.collective.row().has_partials())
        return "the direct encoding of combining covers allreduce, reduce_scatter, reduce:R and scan";
    if (in.model.timing != Timing::hop) return "the direct encoding of combining is stated for hop timing (timing=hop)";
    if (t.routers() > 0 && in.model.replicate)
        return fmt::format("{} has routers; the direct encoding of combining takes routers that forward each partial once "
                           "(replicate=no), not routers that keep and copy it (replicate=yes)",
                           t.spec());
    if (in.model.inject_once) return "inject=once is not encoded for combining";
    if (in.routes == RouteSpace::fixed) return "combining is searched over any route; --routes fixed is not supported";
    if (in.collective.chunks == 0) return "--chunks must be at least 1";
    if (std::string why = in.collective.reduction_problem(t.processors(), in.collective.chunks); !why.empty())
        return fmt::format("{} takes a multiple of P = {} chunks, not {}", in.collective.row().name, t.processors(), in.collective.chunks);
    return "";
}

std::string_view to_string(SatBackend b) { return b == SatBackend::cadical ? "cadical" : "z3"; }

std::string_view to_string(Answer a) {
    switch (a) {
        case Answer::sat: return "sat";
        case Answer::unsat: return "unsat";
        case Answer::unknown: return "unknown";
    }
    return "?";
}

std::string_view to_string(OptStatus s) {
    switch (s) {
        case OptStatus::proved: return "proved";
        case OptStatus::found: return "found";
        case OptStatus::timeout: return "timeout";
        case OptStatus::infeasible: return "infeasible";
    }
    return "?";
}

Ratio Ratio::of(std::uint64_t n, std::uint64_t d) {
    COLLSCHED_ASSERT(d > 0);
    std::uint64_t g = std::gcd(n, d);
    if (g == 0) g = 1;
    return {n / g, d / g};
}

std::string Ratio::text() const { return den == 1 ? fmt::format("{}", num) : fmt::format("{}/{}", num, den); }

}  // namespace collsched
