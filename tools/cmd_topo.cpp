// `collsched topo SPEC [--format json|dot|svg]`: prints a topology (svg: the machine view, compiler/topology/machine_view.hpp).
#include <cstdio>

#include "compiler/topology/machine_view.hpp"
#include "compiler/topology/topology.hpp"
#include "tools/commands.hpp"

namespace collsched::tools {

void add_topo_command(CLI::App& app, Context& ctx) {
    auto* cmd = app.add_subcommand("topo", "Print a topology: processors, routers and channels with capacities.\nExit code: 0 printed, 2 bad spec.");
    auto spec = std::make_shared<std::string>();
    auto format = std::make_shared<std::string>("json");
    cmd->add_option("SPEC", *spec, "Topology spec, e.g. ebft:8, bft:8:1,2,2, torus:3x5, product:ring:3*ring:5")->required();
    cmd->add_option("--format", *format,
                    "Output format: json (nodes, channels, groups, speeds), dot (Graphviz, one node per processor) or svg (the machine "
                    "view: boxes of processors joined by fast channels, the fabric between them summarized; readable up to thousands "
                    "of processors)")
        ->check(CLI::IsMember({"json", "dot", "svg"}));
    cmd->callback([&ctx, spec, format] {
        auto topo = Topology::parse(*spec);
        std::string out = *format == "dot" ? topo->to_dot() : *format == "svg" ? machine_svg(*topo) : topo->to_json();
        ctx.print(out);
        ctx.exit_code = 0;
    });
}

}  // namespace collsched::tools
