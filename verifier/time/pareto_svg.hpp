/** \file
 * The picture of a Pareto frontier (`collsched pareto --svg FILE`, docs/synthesis.md, "The
 * frontier"): steps S across, rounds per chunk R/C up, one point per frontier schedule (filled
 * when the row is proved, hollow when the walk left it open), the staircase that joins them, the
 * bandwidth bound as a dashed line with the cut that proves it, and the distance bound (the least
 * steps any rounds allow) as a dashed line across.
 */
#pragma once

#include <string>

#include "verifier/synth/problem/pareto.hpp"

namespace collsched {

/// The SVG document (plain shapes and text, DejaVu Sans: the same in browsers and rsvg-convert).
std::string frontier_svg(const ParetoResult& result, const std::string& title);

}  // namespace collsched
