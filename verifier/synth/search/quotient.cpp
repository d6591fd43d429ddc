// optimize() beyond the collective's limit of goal pairs, in the quotient of a translation group
// (verifier/synth/problem/instance.hpp, optimize_in_quotient; docs/synthesis.md, "A check in the quotient").
#include <chrono>

#include <fmt/format.h>

#include "compiler/table/collective.hpp"
#include "support/error.hpp"
#include "support/assert.hpp"
#include "verifier/synth/sat/encode.hpp"
#include "verifier/synth/problem/internal.hpp"
#include "verifier/synth/symmetry/translate_check.hpp"
#include "verifier/constructions/steps/translate_packing.hpp"

namespace collsched {

std::string quotient_problem(const SynthInstance& in) {
    const Topology& t = *in.topology;
    if (in.collective.kind != CollectiveKind::allgather || in.chunked())
        return "only allgather of one chunk and one round per step is taken there";
    if (in.model.timing != Timing::hop || in.model.ports == Ports::half || in.model.inject_once)
        return "only hop timing with multi or single ports (and not inject=once) is taken there";
    if (!translation_group(t)) return fmt::format("{} has no translation group collsched can check (routers, or no Z_B x Z_K maps it onto itself)", t.spec());
    return {};
}

void require_quotient(const SynthInstance& in) {
    if (std::string why = quotient_problem(in); !why.empty())
        throw InputError(fmt::format("{} on {} has {} goal pairs, more than the {} collsched lists; beyond that optimize works in the "
                                     "quotient of a translation group, and {} (docs/synthesis.md, \"A check in the quotient\")",
                                     in.collective.to_string(), in.topology->spec(), in.collective.goal_count(in.topology->processors()),
                                     max_goal_pairs, why));
}

namespace {

/// The counting bounds of processor 0, which stand for every processor: its receptions (each no
/// earlier than its distance, `cap` per step) and the farthest origin.
std::vector<Bound> quotient_bounds(const SynthInstance& in) {
    const Topology& t = *in.topology;
    const std::uint32_t P = t.processors();
    const std::vector<std::uint32_t> to0 = synth::bfs_distances_to(t, Node{0});
    std::vector<synth_internal::Job> jobs;
    jobs.reserve(P - 1);
    std::uint32_t far = 0, far_from = 0;
    for (std::uint32_t q = 1; q < P; ++q) {
        jobs.push_back({to0[q], 0});
        if (to0[q] > far) far = to0[q], far_from = q;
    }
    const synth::StepCapacity c = synth::step_capacity(t, in.model.ports, t.in_channels(Node{0}));
    const std::uint32_t cap = static_cast<std::uint32_t>(std::min<std::uint64_t>(std::max<std::uint64_t>(c.hops, 1), 1u << 30));
    const std::string ports = in.model.ports == Ports::multi ? "ports=multi (receive capacity = channel capacities)" : "ports=single";
    const std::string every = "every processor is processor 0 moved by the translation group";
    std::vector<Bound> out;
    Bound r{synth_internal::least_makespan(std::move(jobs), cap), "receptions",
            fmt::format("processor 0 must receive {} messages, {} per step{}, each no earlier than its distance", P - 1, cap,
                        c.by_groups ? " (its link groups)" : ""),
            RouteSpace::any, {"shortest-path distances", ports, every}};
    if (c.by_groups) r.assumes.push_back("link groups");
    out.push_back(std::move(r));
    out.push_back({far, "distance", fmt::format("b({}) to 0 is {} channels away", far_from, far), RouteSpace::any, {"shortest-path distances"}});
    std::stable_sort(out.begin(), out.end(), [](const Bound& a, const Bound& b) { return a.steps > b.steps; });
    return out;
}

}  // namespace

OptimizeResult optimize_in_quotient(const SynthInstance& in, const OptimizeOptions& opt) {
    using Clock = std::chrono::steady_clock;
    const auto t0 = Clock::now();
    require_quotient(in);
    OptimizeResult res;
    res.encoding = encoding_for(in);
    res.routes = RouteSpace::any;
    res.bounds = quotient_bounds(in);
    res.lower_bound = res.bounds.front().steps;
    res.lower_bound_reason = fmt::format("{}: {}", res.bounds.front().name, res.bounds.front().detail);
    const auto deadline = opt.timeout > 0 ? t0 + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(opt.timeout))
                                          : Clock::time_point::max();
    const std::optional<QuotientTrees> trees =
        opt.constructions ? grow_translates(in, 1, res.lower_bound, std::min(deadline, opt.synth.deadline)) : std::nullopt;
    res.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
    if (!trees) return res;  // timeout: the bounds only
    const QuotientVerdict v = check_translates(in, *trees);
    COLLSCHED_ASSERT_MSG(v.holds, fmt::format("the translates of one spanning tree fail the check in the quotient: {}", v.violation));
    res.upper_bound = res.known_steps = trees->steps();
    res.upper_bound_source = res.known_source =
        fmt::format("translates of one spanning tree under {} (collsched construction, docs/synthesis.md), checked in the quotient: "
                    "{} tree edges standing for a table of {} transfers, which is not built",
                    translation_group_name(*in.topology), trees->edges.size(), v.transfers);
    res.optimum = trees->steps();
    COLLSCHED_ASSERT_MSG(trees->steps() >= res.lower_bound,
                         bound_above_schedule(fmt::format("{} steps ({})", res.lower_bound, res.lower_bound_reason),
                                              fmt::format("{} steps ({})", trees->steps(), res.upper_bound_source)));
    res.status = trees->steps() == res.lower_bound ? OptStatus::proved : OptStatus::found;
    res.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
    return res;
}

}  // namespace collsched
