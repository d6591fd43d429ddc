/** \file
 * The check of an allgather given as translates, without its table (issue 28; docs/synthesis.md,
 * "A check in the quotient"). Under a translation group (translate_packing.hpp) datum g follows
 * the labelled trees of datum 0 moved by g, so the table of P x E transfers holds exactly when
 * the E tree edges do: (1) the group is an automorphism of the topology (checked again here, by
 * translation_group); (2) every edge is a channel, its sender holds the chunk before the edge's
 * step, no element receives a chunk twice and every element receives every chunk (the trees
 * span); (3) per step, the edges of each difference d number at most the capacity of the channels
 * of difference d (each of them carries one chunk per such edge: the translate whose tree edge
 * lands on it), each link group carries the sum over the step's edges of how many of its channels
 * have the edge's difference, and under single ports each processor sends and receives as many
 * chunks as the step has edges. The code shares nothing with the construction (its budgets, its
 * classes): it reads the topology's channels and groups as the direct checker does, and
 * tests/tools/test_translates.cpp holds both to the same verdict on expanded tables, mutated ones
 * included.
 */
#pragma once

#include <cstdint>
#include <string>

#include "verifier/synth/problem/instance.hpp"
#include "verifier/synth/symmetry/translations.hpp"

namespace collsched {

struct QuotientVerdict {
    bool holds = false;
    std::string violation;        ///< the first rule broken, with step and channel; empty when it holds
    std::uint64_t transfers = 0;  ///< of the table the trees stand for: P times their edges
};

/// Checks `trees` as an allgather of `in` (its collective allgather with trees.chunks chunks, hop
/// timing, multi or single ports, no routers). Bad arguments (another collective or model) are a
/// violation naming what is not taken, never a verdict "holds".
QuotientVerdict check_translates(const SynthInstance& in, const QuotientTrees& trees);

}  // namespace collsched
