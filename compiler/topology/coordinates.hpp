/** \file
 * Processors by the names a schedule gives them: on meshes, tori and products a schedule writes
 * `(x, y)`, so messages about such a topology name its processors by their coordinates too (the
 * first coordinate varies slowest, as in the DSL's `(x, y, ...)`).
 */
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "compiler/topology/topology.hpp"

namespace collsched::compiler {

/// `(x, y)` of processor p on a topology with at least two dimensions (not a hypercube), else
/// nothing.
std::optional<std::string> coordinates(const Topology& t, std::uint32_t p);

/// `(x, y)` where coordinates() has them, else the processor's number.
std::string processor_text(const Topology& t, std::uint32_t p);

}  // namespace collsched::compiler
