/** \file
 * `optimize` for reduce, reduce_scatter and allreduce through duality (docs/synthesis.md, "Reductions
 * by duality"): the broadcast or allgather on the same topology is optimized (with its proof), and its
 * witness reversed (compiler/table/duality.hpp) gives the reduction's witness, re-verified by the
 * direct checker. The space each optimum is proved over is spelled out in `space`.
 */
#pragma once

#include <optional>
#include <string>

#include "verifier/synth/problem/pareto.hpp"
#include "verifier/synth/problem/instance.hpp"

namespace collsched {

struct ReductionOptimum {
    SynthInstance allgather_instance;  ///< the dual: broadcast:r for reduce:r, else allgather
    OptimizeResult allgather;      ///< the allgather's optimization, with its proof status
    OptStatus status = OptStatus::timeout;
    std::optional<Step> optimum;   ///< proved (or best found) steps of the reduction
    Step lower_bound = 0;
    std::optional<SendTable> witness;
    std::string space;             ///< the schedules the optimum is proved over
    /// The limit that stopped the reversal of the dual's schedule or its check ("" when none): then
    /// no witness and no optimum, only the lower bound (status timeout).
    std::string stopped;
};

/// The Pareto frontier of a reduction through its dual (docs/synthesis.md, "Pareto frontiers of
/// reductions"): the broadcast's or allgather's frontier with K = 1..max_chunks chunks per
/// datum, every point reversed (reduce: K chunks; reduce_scatter: K chunks per block, P*K in
/// all) or, for allreduce, reversed then followed by itself (2S steps, 2R rounds: the composed
/// space). Every point re-verified by the direct checker.
struct ReductionPareto {
    SynthInstance dual;
    ParetoResult dual_result;  ///< the dual's frontier, as pareto() gave it
    ParetoResult result;       ///< the same rows with the reductions' points
    std::string space;         ///< what the frontier's points are optimal over
};
/// `in` without chunks (pareto searches them). Throws InputError where the duality does not apply.
ReductionPareto pareto_reduction(const SynthInstance& in, const ParetoOptions&);

/// Why optimize_reduction does not apply ("" when it does).
std::string reduction_duality_problem(const SynthInstance&);

/// reduce(r) (C = 1): T* = the broadcast's optimum from r.
/// reduce_scatter (C = P chunks, chunk p to processor p): T* = the allgather's optimum.
/// allreduce: 2 T*, the least over reduce-scatter-then-allgather schedules (SCCL's Allreduce).
/// Throws InputError when reduction_duality_problem says so.
ReductionOptimum optimize_reduction(const SynthInstance&, const OptimizeOptions&);

}  // namespace collsched
