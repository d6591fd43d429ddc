/** \file
 * Any send table printed back as a schedule: a header (`topology "SPEC"`, `model`,
 * `collective`, one `require` per custom goal), then one `step s { ... }` block per step
 * holding the step's transfers as `hop u -> v msg m`, in table order. Compiling the text gives
 * the same table (round trip; tests/dsl/test_roundtrip.cpp). The topology is written as its
 * spec string, so the channel numbering is the same; fields of a table file that collsched does
 * not interpret are not printed.
 */
#pragma once

#include <string>

#include "compiler/io/table_io.hpp"

namespace collsched {

/// Appends the table as schedule text to `out`, calling `flush` as the buffer grows.
/// `file`: the path being written; a graph file in the topology is written relative to its
/// directory, as the DSL reads it (spec_written_at).
void write_table_dsl(const SendTable&, fmt::memory_buffer& out, const Flush& flush, std::string_view file = {});
std::string table_to_dsl(const SendTable&, std::string_view file = {});

/// The DSL spelling of a node: `3` for processors, `r(1, 0)` for routers.
std::string dsl_node_name(const Topology&, Node);
/// The DSL spelling of a collective: `alltoall`, `broadcast(0)`, `multicast(0, {1, 2})`.
std::string dsl_collective(const Collective&);

}  // namespace collsched
