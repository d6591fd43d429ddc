/** \file
 * The reports of the searches (issue 42: built here, printed by the commands): an optimization
 * result as the JSON object and the text of `optimize` and `probe`, the sentence that states it
 * and the search space it is proved over, each bound with what it assumes, the run's limits and
 * what it used, a witness file's comment, a reduction's report by duality, and the composition
 * of `optimize --hierarchical`. The Python module runs the commands in memory and gets the same.
 */
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "support/budget.hpp"
#include "verifier/synth/problem/instance.hpp"
#include "verifier/synth/search/duality.hpp"
#include "verifier/synth/search/hierarchical.hpp"

namespace collsched {

/// What a search ran under, as the reports name it: the solver and the limits.
struct SearchLimits {
    std::string solver = "cadical";
    double timeout = 0;        ///< seconds for the run; 0: none
    double solve_timeout = 0;  ///< seconds per solver call; 0: none but the run's
    MemoryBudget memory;
};

/// The run's limits and what it used: `timeout`, `solve_timeout` (seconds, null: none), `memory`
/// (bytes, null: none) and `peak_memory` (the process's largest resident set so far, bytes).
nlohmann::ordered_json limits_json(const SearchLimits&);
/// "limits: time 60 s, memory 12.3 GB; used 59.9 s, peak 6.7 GB resident\n"
std::string limits_line(const SearchLimits&, double seconds);
/// `optimize --json`'s object for one result.
nlohmann::ordered_json result_json(const SynthInstance&, const OptimizeResult&, const SearchLimits&);
/// `optimize`'s text for one result: the instance, the search space, the bounds, the known
/// schedule, the greedy, the composition, the solver's attempts, the status and the limits.
std::string result_text(const SynthInstance&, const OptimizeResult&, const SearchLimits&);
/// "optimum: 11 steps (proved over every schedule of model ... with any route; ...)" and the
/// like, one line.
std::string status_sentence(const SynthInstance&, const OptimizeResult&);
/// The search space in one line for text output: routes, encoding and why it is exact.
std::string search_line(const SynthInstance&, const OptimizeResult&);
/// One bound in text: "    11  send/receive sums: ... [any route; assumes ...]".
std::string bound_line(const SynthInstance&, const Bound&);
/// 0 proved, 3 found-only or timeout, 1 infeasible.
int exit_code(const OptimizeResult&);
/// The comment block of a witness: instance, steps, status and how it was checked.
std::string witness_comment(const SynthInstance&, const OptimizeResult&);
/// The collectives optimize and pareto take, from the rows (compiler/table/collective_kinds.hpp):
/// every named one but the ordered prefix ("alltoall, allgather, broadcast:R, ... and scan").
std::string synthesizable_collectives();

/// A reduction optimized by duality (verifier/synth/search/duality.hpp): the dual's own report,
/// then the reduction's optimum and the space it is proved over; `witnesses` the files written.
std::string reduction_report(const SynthInstance&, const ReductionOptimum&, const SearchLimits&, const std::vector<std::string>& witnesses,
                             bool json);
/// A witness file's comment for a reduction by duality.
std::string reduction_witness_comment(const SynthInstance&, const ReductionOptimum&);

/// `optimize --hierarchical`'s composition: the boxes, each phase with its sub-machine, steps,
/// status and search space, the compositions tried and the best, in text and as the
/// "hierarchical" object of `optimize --json`.
std::string hierarchical_text(const HierarchicalResult&);
nlohmann::ordered_json hierarchical_json(const HierarchicalResult&);

}  // namespace collsched
