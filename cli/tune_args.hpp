/** \file
 * What `collsched tune` and `collsched deploy` read alike (tools/cmd_tune.cpp, tools/cmd_deploy.cpp): the machine, with
 * a did-you-mean among the machine files beside it, and `--collectives`.
 */
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "compiler/topology/topology.hpp"
#include "compiler/table/collective_kinds.hpp"

namespace collsched::tools {

/// The machine of --topology; InputError with "did you mean graph:...?" where a machine file is close.
std::shared_ptr<const Topology> read_machine(const std::string& spec);

/// `--collectives a,b,...`: the collectives NCCL's tuner covers, by collsched's names or plugin.c's.
std::vector<CollectiveKind> parse_collectives(const std::string& text);

}  // namespace collsched::tools
