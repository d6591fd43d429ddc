/** \file
 * The lower bounds of combining (docs/synthesis.md, "The direct encoding of combining", Lower
 * bounds), rules of lower_bounds() (which adds what they assume), and the buffer rule's
 * infeasibility check. Moved from sat/combining.cpp (issue 42): the encoding reads the distance
 * bound, the bounds need nothing of the encoding. Not a public API.
 */
#pragma once

#include <vector>

#include "verifier/synth/problem/instance.hpp"

namespace collsched::synth {

/// The distance bound: the largest distance from a source to a processor whose goal needs it.
Step combining_distance(const SynthInstance&);
/// The lower bounds of combining (rules of lower_bounds(), which adds what they assume): the
/// distance, and (one round per step, P >= 2) receptions and departures.
std::vector<Bound> combining_distance_bounds(const SynthInstance&);
std::vector<Bound> combining_count_bounds(const SynthInstance&);

}  // namespace collsched::synth
