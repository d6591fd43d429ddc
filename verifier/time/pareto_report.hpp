/** \file
 * `collsched pareto` as a report (issue 42: built here, printed by the command): the least steps,
 * the bandwidth bounds with their cut, every (steps, chunks, rounds) tried, the bandwidth end,
 * the frontier with the files written, the proofs, and with sizes each frontier point's
 * predicted time and the proved lower bound on time, checked against each other (a bound above
 * a verified point is a bug, stopped loudly). docs/synthesis.md, "Chunks, rounds and the Pareto
 * frontier"; docs/time.md.
 */
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "runtime/timing.hpp"
#include "verifier/synth/problem/pareto.hpp"
#include "verifier/synth/search/report.hpp"

namespace collsched {

/// The run as the command set it up: the instance, how it is searched, and what the report names.
struct ParetoRun {
    SynthInstance in;
    bool reduction = false;   ///< a collective with partials
    bool by_duality = false;  ///< searched through its dual
    SynthInstance least;      ///< the instance whose least steps the report states (the dual's by duality)
    std::string space;        ///< the search space, one sentence
};

/// What the report names besides the result: the search's bounds, limits and sizes.
struct ParetoReportOptions {
    std::uint32_t max_chunks = 8;
    SearchLimits limits;
    std::vector<double> sizes;      ///< predict every frontier point's time at each (--size)
    std::optional<LinkSpeed> link;  ///< --link
    bool json = false;              ///< one JSON object instead of text
};

/// The report, text or JSON, with its newline; `files[i]` the files written for row i.
std::string pareto_report(const ParetoRun&, const ParetoResult&, const std::vector<std::vector<std::string>>& files,
                          const ParetoReportOptions&);
/// A frontier point's file name: COLLECTIVE-S<steps>-R<rounds>-C<chunks>.
std::string pareto_point_name(const SynthInstance&, const ParetoPoint&);
/// A frontier point's comment in its file: the point, the space, its proof and the bound.
std::string pareto_point_comment(const SynthInstance&, const ParetoResult&, const ParetoRow&, const std::string& space);

}  // namespace collsched
