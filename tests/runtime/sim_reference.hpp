/** \file
 * A slow reference for the simulator's property test (tests/runtime/test_simulator.cpp): it
 * replays a table the obvious way (maps keyed by node and message, every queue count recomputed
 * from the table at every boundary) with the conventions of runtime/simulator.hpp, and reports
 * what the random tables compare: status, rule, step, deliveries, holes and queue high-water
 * marks.
 */
#pragma once

#include <cstdint>
#include <vector>

#include "compiler/table/send_table.hpp"
#include "runtime/simulator.hpp"

namespace collsched::testing {

struct RefResult {
    SimStatus status = SimStatus::completed;
    SimRule rule = SimRule::completeness;
    Step step = 0;
    std::uint64_t done = 0, required = 0;
    std::vector<std::uint32_t> holes, high_water;
};

/// The reference's replay of `t`.
RefResult reference(const SendTable& t);

}  // namespace collsched::testing
