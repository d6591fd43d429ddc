//
// Why the optimum is the dual's (moved from docs/synthesis.md, "Reductions by duality"; reduce_scatter; reduce is C = 1):
//
// - *Lower bound.* In a reduce-scatter of T steps under the buffer rule every contribution a(p, c)
//   reaches c along a chain of transfers of partials containing it, steps increasing. Reverse each
//   chain in time (t -> T + 1 - t) and direction: b(c) goes from c to every p. The reversed chains use
//   a subset of the reversed transfers, one chunk each, so capacities and single or half ports (sends
//   and receives swap) hold: an allgather of T steps on the same (symmetric) network.
// - *Upper bound.* Keep the allgather witness's first arrival of every b(c) at every processor (an
//   arborescence from c) and reverse it: v sends its partial of c once, after every partial of its
//   subtree arrived (children received later, so send earlier), every combine of disjoint sets. The
//   driver verifies the result.
// - *Routers that forward* (replicate=no, combine=processors; docs/synthesis.md, "Routers that forward"):
//   in the reduce-scatter a router matches each departure to one arrival of the same partial (FIFO),
//   so a chain passes a router as one copy in and its matched copy out. Chains may share copies
//   (a({p, q}) carries both contributions) but a copy's matched partner is unique, so the union of
//   the chains' transfers holds, at every router, arrivals and departures in matched pairs; reversed,
//   each pair is one copy in and one out later (consecutive steps under queues=none): an allgather
//   under replicate=no. Back, the allgather's first-arrival chains are disjoint in copies (a router
//   forwards each copy once), so reversed every router forwards each partial once and combines
//   nothing. The reversal is a bijection between the two sets of first-arrival schedules, step for
//   step: the optima are equal under the same model. Under replicate=yes a router's copies reverse
//   into a router combining partials, which the buffer rule does not give it (refused).
#include "verifier/synth/search/duality.hpp"

#include <algorithm>
#include <chrono>
#include <stdexcept>

#include <fmt/format.h>

#include "compiler/table/duality.hpp"
#include "support/assert.hpp"
#include "support/error.hpp"
#include "verifier/check/direct.hpp"
#include "verifier/constructions/steps/known.hpp"
#include "verifier/synth/problem/internal.hpp"

namespace collsched {

namespace {

/// The collective's C.
std::uint32_t reduction_chunks(const Collective& c) { return c.chunks; }

}  // namespace

std::string reduction_duality_problem(const SynthInstance& in) {
    const CollectiveKind k = in.collective.kind;
    if (k != CollectiveKind::reduce && k != CollectiveKind::reduce_scatter && k != CollectiveKind::allreduce)
        return "optimize by duality covers reduce, reduce_scatter and allreduce";
    const std::uint32_t P = in.topology->processors(), C = reduction_chunks(in.collective);
    if (k != CollectiveKind::reduce && C != P)
        return fmt::format("optimize by duality takes C = P chunks (chunk p reduced to processor p): {} chunks on {} processors", C, P);
    if (k == CollectiveKind::reduce && C != 1) return fmt::format("optimize by duality takes reduce with one chunk, not {}", C);
    return duality_problem(*in.topology, in.model);
}

ReductionOptimum optimize_reduction(const SynthInstance& in, const OptimizeOptions& opt) {
    if (std::string why = reduction_duality_problem(in); !why.empty()) throw InputError(why);
    ReductionOptimum r;
    // The whole run's deadline: the dual's search, the reversal and its check.
    const auto t0 = std::chrono::steady_clock::now();
    const Deadline until = Deadline::at(std::min(
        opt.synth.deadline, opt.timeout > 0 ? t0 + std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(opt.timeout))
                                            : std::chrono::steady_clock::time_point::max()));
    const bool rooted = in.collective.kind == CollectiveKind::reduce;
    Collective ag;
    ag.kind = rooted ? CollectiveKind::broadcast : CollectiveKind::allgather;
    ag.root = in.collective.root;
    r.allgather_instance = SynthInstance{in.topology, in.model, ag, in.routes};
    r.allgather = optimize(r.allgather_instance, opt);
    const bool all = in.collective.kind == CollectiveKind::allreduce;
    const Step k = all ? 2 : 1;
    r.status = r.allgather.status;
    if (r.allgather.optimum) r.optimum = k * *r.allgather.optimum;
    r.lower_bound = k * r.allgather.lower_bound;
    if (r.allgather.witness) {
        try {
            SendTable w = all      ? allreduce_from_allgather(*r.allgather.witness, until)
                          : rooted ? reduce_from_broadcast(*r.allgather.witness)
                                   : reduce_scatter_from_allgather(*r.allgather.witness, until);
            VerifyOptions vo;
            vo.deadline = until;
            VerifyReport check = verify_direct(w, vo);
            if (check.verdict() == "unknown") throw LimitReached("time limit (verifying the reversed schedule)");
            if (!check.holds()) throw std::logic_error(fmt::format("the reversed allgather does not verify: {}", format_report(check, w)));
            r.witness = std::move(w);
        } catch (const LimitReached& e) {
            // No verified schedule of the reduction: its lower bound only.
            r.stopped = e.what();
            r.status = OptStatus::timeout;
            r.optimum.reset();
        }
    }
    const std::string model = search_space(r.allgather_instance);
    if (all)
        r.space = fmt::format(
            "every allreduce that is a reduce-scatter of C = {} chunks (chunk p reduced to processor p) followed by an allgather of "
            "the reduced chunks, under the buffer rule, one chunk per channel and unit of capacity per step (SCCL's Allreduce); "
            "each half is optimal by duality with the allgather, whose optimum is proved over {}. Allreduces outside this space "
            "(C = 1, recursive doubling) may take fewer steps and move more data per step",
            in.topology->processors(), model);
    else if (rooted)
        r.space = fmt::format(
            "every reduce to {} of one chunk under the buffer rule, one partial per channel and unit of capacity per step: reversing "
            "time and direction maps its schedules onto the broadcast's from {} on {} (a network whose channels have reverses of "
            "the same capacity and whose routers, if any, forward) and back (first arrivals only), step for step, so its optimum is the broadcast's, "
            "proved over {}",
            idx(in.collective.root), idx(in.collective.root), in.topology->spec(), model);
    else
        r.space = fmt::format(
            "every reduce-scatter of C = {} chunks (chunk p reduced to processor p) under the buffer rule, one chunk per channel and "
            "unit of capacity per step: reversing time and direction maps its schedules onto the allgather's on {} (a network "
            "whose channels have reverses of the same capacity and whose routers, if any, forward) and back (first arrivals "
            "only), step for step, so its optimum is the allgather's, proved over {}",
            in.topology->processors(), in.topology->spec(), model);
    return r;
}

ReductionPareto pareto_reduction(const SynthInstance& in, const ParetoOptions& opt) {
    const CollectiveKind k = in.collective.kind;
    if (k != CollectiveKind::reduce && k != CollectiveKind::reduce_scatter && k != CollectiveKind::allreduce)
        throw InputError("pareto by duality covers reduce, reduce_scatter and allreduce");
    if (std::string why = duality_problem(*in.topology, in.model); !why.empty()) throw InputError(why);
    ReductionPareto r;
    const bool rooted = k == CollectiveKind::reduce, all = k == CollectiveKind::allreduce;
    Collective dual;
    dual.kind = rooted ? CollectiveKind::broadcast : CollectiveKind::allgather;
    dual.root = in.collective.root;
    r.dual = SynthInstance{in.topology, in.model, dual, in.routes};
    r.dual_result = pareto(r.dual, opt);
    r.result = r.dual_result;
    // Every point (the rows' and the packed bandwidth end) reversed, and verified again.
    auto reverse_point = [&](ParetoPoint& p) {
        SendTable w = all ? allreduce_from_allgather(p.table) : rooted ? reduce_from_broadcast(p.table) : reduce_scatter_from_allgather(p.table);
        VerifyReport check = verify_direct(w);
        if (!check.holds()) throw std::logic_error(fmt::format("the reversed frontier point does not verify: {}", format_report(check, w)));
        p.chunks = w.collective.chunks;  // the table's chunks per buffer (P * K for reduce_scatter and allreduce)
        p.steps = w.steps();
        p.rounds = static_cast<Step>(w.total_rounds());
        p.step_rounds.clear();
        for (Step t = 1; t <= p.steps; ++t) p.step_rounds.push_back(w.rounds(t));
        p.table = std::move(w);
    };
    for (ParetoRow& row : r.result.rows) {
        row.steps *= all ? 2 : 1;
        row.excluded = fmt::format("(the {}) {}", dual.to_string(), row.excluded);
        if (row.best) reverse_point(*row.best);
    }
    if (r.result.packed) {
        reverse_point(*r.result.packed);
        r.result.packed_note = fmt::format("(the {}) {}", dual.to_string(), r.result.packed_note);
    }
    const std::string dual_space = fmt::format("{}; C = 1..{} chunks per datum, any rounds per step", search_space(r.dual), opt.max_chunks);
    if (all)
        r.space = fmt::format(
            "allreduces that are a reduce-scatter of C chunks per block followed by an allgather of the reduced chunks (the composed "
            "space; not every allreduce: --method direct searches every one), each half a point of the allgather's frontier over {}",
            dual_space);
    else
        r.space = fmt::format("every {} under the buffer rule with C = 1..{} chunks per {}, any rounds per step: reversing time and "
                              "direction maps its schedules onto the {}'s, step for step and round for round, whose frontier is proved "
                              "over {}",
                              in.collective.to_string(), opt.max_chunks, rooted ? "buffer" : "block", dual.to_string(), dual_space);
    return r;
}

std::optional<KnownSchedule> known_schedule(const SynthInstance& in, const ConstructionRows& registry, bool constructions,
                                            std::chrono::steady_clock::time_point deadline, const MemoryBudget& memory) {
    if (encoding_for(in) != EncodingKind::combining) return constructed_schedule(in, registry, constructions, deadline, memory);
    // The duality's schedule where it applies (docs/synthesis.md, "Reductions by duality"):
    // reduce(r) of one chunk, reduce_scatter and the composed allreduce of C = P chunks.
    if (!reduction_duality_problem(in).empty()) return std::nullopt;
    OptimizeOptions o{registry};
    const double left = deadline == std::chrono::steady_clock::time_point::max()
                            ? 30.0
                            : std::chrono::duration<double>(deadline - std::chrono::steady_clock::now()).count();
    if (left <= 0.05) return std::nullopt;
    o.timeout = std::min(30.0, left / 2);
    ReductionOptimum r = optimize_reduction(in, o);
    if (!r.witness || !synth_internal::holds(*r.witness, in, false, deadline)) return std::nullopt;
    const char* what = in.collective.kind == CollectiveKind::allreduce ? "reduce-scatter then allgather"
                       : in.collective.kind == CollectiveKind::reduce  ? "the broadcast reversed"
                                                                       : "the allgather reversed";
    std::string source = fmt::format("duality: {} ({} of C = {} chunks)", what, to_string(r.status), in.collective.chunks);
    return KnownSchedule{std::move(*r.witness), std::move(source)};
}

}  // namespace collsched
