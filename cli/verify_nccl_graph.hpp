/** \file
 * `collsched verify GRAPH.xml --topology M [--collective allreduce] [--size S]`: an NCCL graph
 * file (NCCL_GRAPH_FILE's `<graphs>`) checked on a machine by NCCL's semantics
 * (verifier/constructions/nccl/nccl_graph_check.hpp), the load its rings put on the links, and with --size
 * the time of NCCL's ring allreduce, allgather or reduce_scatter on those rings by the model of
 * `verify --size` (docs/time.md). docs/exports.md, "Reading an NCCL graph file".
 */
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "compiler/topology/topology.hpp"
#include "runtime/cost_report.hpp"
#include "cli/context.hpp"

namespace collsched::tools {

struct NcclGraphArgs {
    std::string input, topology, collective;
    bool json = false;
    AlphaBeta ab;
};

/// Whether `path` is a regular file whose first element is `<graphs` (standard input is not
/// probed: it is read once, by the table reader).
bool is_nccl_graph_file(const std::string& path);

/// NCCL's own graphs for the machine as a graph file's text, read back and checked by the checker of
/// `verify GRAPH.xml` (InputError naming `name` and the first finding when it finds anything).
std::string nccl_algorithm_graph_xml(std::string_view algorithm, const Topology& topo, const std::string& name);

/// The same per node: one text every node reads, or where the boxes number their nets differently one per box
/// (nccl::nccl_algorithm_node_graphs), checked as a set.
std::vector<std::string> nccl_algorithm_graph_xmls(std::string_view algorithm, const Topology& topo, const std::string& name);

/// `convert nccl:ALGORITHM --topology M --format nccl-graph [-o F]`: NCCL's own graphs for the
/// machine (nccl::nccl_algorithm_graphs), checked by the checker of `verify GRAPH.xml` before
/// anything is written (InputError, nothing written, when it finds anything).
void write_nccl_algorithm_graph(std::string_view algorithm, const std::string& topology, const std::string& output);

/// Verifies the file; the exit code (0 holds, 1 a finding, 2 bad input is thrown as InputError).
int verify_nccl_graph(const NcclGraphArgs& args, const Context& ctx);

}  // namespace collsched::tools
