// `collsched topo SPEC [--format json|dot]`: prints a topology.
#include <cstdio>

#include "compiler/topology.hpp"
#include "tools/commands.hpp"

namespace collsched::tools {

void add_topo_command(CLI::App& app, Context& ctx) {
    auto* cmd = app.add_subcommand("topo", "Print a topology: processors, routers and channels with capacities.\nExit code: 0 printed, 2 bad spec.");
    auto spec = std::make_shared<std::string>();
    auto format = std::make_shared<std::string>("json");
    cmd->add_option("SPEC", *spec, "Topology spec, e.g. ebft:8, bft:8:1,2,2, torus:3x5, product:ring:3*ring:5")->required();
    cmd->add_option("--format", *format, "Output format")->check(CLI::IsMember({"json", "dot"}));
    cmd->callback([&ctx, spec, format] {
        auto topo = Topology::parse(*spec);
        std::string out = *format == "dot" ? topo->to_dot() : topo->to_json();
        ctx.print(out);
        ctx.exit_code = 0;
    });
}

}  // namespace collsched::tools
