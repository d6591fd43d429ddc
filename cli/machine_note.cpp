#include "cli/machine_note.hpp"

#include <fmt/format.h>

#include "compiler/topology/graph_head.hpp"
#include "compiler/topology/topology.hpp"

namespace collsched::tools {

std::string faults_line(std::string_view spec) {
    const GraphHead head = read_graph_head(spec);
    return head.faults && !head.faults->empty() ? fmt::format("faults: {}\n", *head.faults) : std::string();
}

std::string choose_router_model(const Topology& t, std::string_view model_options, bool reduction, Model& model) {
    // a machine whose switches reduce or multicast (--nvls, --sharp) keeps its model: combine=routers needs replicate=no
    if (t.routers() == 0 || model.replicate || model.combine_routers || model.multicast_routers || t.family() != Family::graph ||
        model_options.find("replicate") != std::string_view::npos)
        return {};
    if (reduction)
        return "model: replicate=no kept for this machine (it has routers; a reduction needs routers that forward its "
               "partials, never copy or combine them: by duality the allgather or broadcast is searched with routers forwarding "
               "each copy once, and the direct encoding has each partial leave a router once, first in first out)\n";
    model.replicate = true;
    return "model: replicate=yes chosen for this machine (it has routers; a router keeps what it receives and may send it "
           "again; --model replicate=no for routers that forward each copy once)\n";
}

}  // namespace collsched::tools
