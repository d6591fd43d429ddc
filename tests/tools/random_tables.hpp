/** \file
 * Seeded random tables for the agreement tests (tests/tools/test_agreement.cpp): a topology of
 * the list, a random model and collective, a schedule placed greedily without contention, then
 * injected faults of every kind; and tables of combined values and bundles. The same seed makes
 * the same table on every run (COLLSCHED_SEED reruns one).
 */
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "compiler/table/send_table.hpp"

namespace collsched::testing {

struct Instance {
    SendTable table;
    bool fixed_routes = false;
    std::string description;
};

/// A random instance: topology, model, collective, a schedule built by greedy placement of
/// endpoint sends (cut-through, with occasional waits where the model allows them) or of
/// flooding trees (replicate=yes), relay shapes, then zero, one or two injected faults.
Instance make_instance(std::uint64_t seed, const std::vector<std::string>& topologies);

/// A random table with composite messages (docs/semantics.md, "Combined values and bundles").
Instance make_composite_instance(std::uint64_t seed, const std::vector<std::string>& topologies);

/// A random table through switches that reduce and multicast (docs/semantics.md, "Switches that
/// reduce and multicast") on one of the graph files `machines` (paths the graph: spec takes).
Instance make_switch_instance(std::uint64_t seed, const std::vector<std::string>& machines);

}  // namespace collsched::testing
