/** \file
 * Translation groups (issue 27; moved from constructions/translate_packing.hpp, issue 42): the
 * group Z_B x Z_K acting on the processors x = B b + i by adding to the box b and the local index
 * i, found and checked on a topology (both generators must be automorphisms that keep every
 * attribute the models and bounds read), and the labelled trees of the quotient by it, which the
 * translate packing grows and translate_check checks.
 */
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "compiler/topology/topology.hpp"
#include "support/budget.hpp"

namespace collsched {

/// The group Z_B x Z_K on the processors 0..P-1, x = B b + i: sums and differences of elements.
/// x -> x + g is an automorphism of the topology for every g when translation_group found it.
struct Translations {
    std::uint32_t B, K;
    std::uint32_t add(std::uint32_t x, std::uint32_t y) const { return B * ((x / B + y / B) % K) + (x % B + y % B) % B; }
    std::uint32_t sub(std::uint32_t y, std::uint32_t x) const { return B * ((y / B + K - x / B) % K) + (y % B + B - x % B) % B; }
};

/// The box size B of a checked translation group Z_B x Z_(P/B) of `t` (B = P: the cyclic group),
/// or nullopt when none is found (routers, or no B works). `limits` are polled in the checks
/// (AutomorphismCheck; seconds on 4,096 GPUs): LimitReached once reached.
std::optional<std::uint32_t> translation_box(const Topology& t, const RunLimits& limits = {});

/// The checked group of translation_box, or nullopt (LimitReached as there).
std::optional<Translations> translation_group(const Topology& t, const RunLimits& limits = {});

/// "Z_B x Z_K" for the translation group translation_box finds (the caller checked there is one).
std::string translation_group_name(const Topology& t, const RunLimits& limits = {});

/// One labelled tree edge of the quotient: in step `step`, chunk `tree` of the datum of element 0
/// crosses from element `from` to element `to`; datum g's crosses from g + from to g + to.
struct QuotientEdge {
    Step step;
    std::uint32_t tree, from, to;
};

/// C labelled spanning out-trees rooted at element 0, in step order: with the group, a whole
/// allgather of C chunks (every datum follows the trees moved by its origin).
struct QuotientTrees {
    Translations group;
    std::uint32_t chunks = 1;
    std::vector<QuotientEdge> edges;
    Step steps() const { return edges.empty() ? 0 : edges.back().step; }
};

}  // namespace collsched
