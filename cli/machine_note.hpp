/** \file
 * What a report says about the machine it ran on beyond its spec: the faults a machine file
 * names (`"faults"`, written by `collsched machine` for --nic-down, --slow-nic, --slow-gpu,
 * --slow-link, --link-down, --one-way; docs/topologies.md, "Faults") and the model chosen for a
 * machine with routers when the command line names none (`replicate=yes`).
 */
#pragma once

#include <string>
#include <string_view>

#include "compiler/core/model.hpp"

namespace collsched {
class Topology;
}

namespace collsched::tools {

/// "faults: NIC 3 down; ...\n" for a graph file (`graph:FILE`) whose head names its faults, else
/// "". Reads the first 64 KiB only (the note and the faults come before the edges).
std::string faults_line(std::string_view spec);

/// On a machine file (graph:FILE) with routers whose model copies nothing through them (replicate=no) and whose
/// `--model` does not name replicate, the synthesizing commands' default model is replicate=yes
/// (a router keeps what it receives and may send it on any later step; docs/topologies.md, "Routers
/// and the default model"), but for a `reduction` (partials: reduce, reduce_scatter, allreduce, scan),
/// which keeps replicate=no: by duality a router that copies would have to combine partials.
/// Sets the model and returns the report's line saying what was chosen; "" when nothing is.
std::string choose_router_model(const Topology& t, std::string_view model_options, bool reduction, Model& model);

}  // namespace collsched::tools
