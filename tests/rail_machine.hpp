// A DGX A100 rail network of K boxes with its switches as routers (as `collsched machine dgx-a100 --boxes K
// --network rail --units gpu --switches routers` writes it, and bench/time_vs_nccl.sh's railKx8), read back
// through a graph file as a user's would be.
#pragma once

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <string>

#include <fmt/format.h>

#include "compiler/machines/machine.hpp"
#include "compiler/topology/topology.hpp"

namespace collsched::test {

inline std::shared_ptr<const Topology> rail_routers(std::uint32_t boxes) {
    namespace mc = machines;
    mc::MachineOptions o;
    o.boxes = boxes, o.network = mc::parse_network("rail"), o.units = mc::Units::gpu, o.routers = true;
    const std::string dir = fmt::format("/tmp/collsched_rail{}.{}", boxes, ::getpid());
    std::filesystem::create_directories(dir);
    const std::string file = fmt::format("{}/rail{}x8.json", dir, boxes);
    std::ofstream(file) << mc::write_machine_json(mc::build_machine(mc::find_family("dgx-a100"), o));
    auto topo = Topology::parse("graph:" + file);
    std::filesystem::remove_all(dir);
    return topo;
}

}  // namespace collsched::test
