// `collsched verify FILE`: proves a table (or a compiled schedule) against the model.
#include <cstdio>

#include <fmt/format.h>

#include "tools/commands.hpp"
#include "tools/input.hpp"
#include "verifier/direct.hpp"

namespace collsched::tools {

namespace {

struct VerifyArgs {
    std::string input;
    std::vector<std::string> defines;
    std::string engine = "direct";
    std::string routes = "any";
    bool json = false;
    std::size_t max_violations = 20;
};

}  // namespace

void add_verify_command(CLI::App& app, Context& ctx) {
    auto args = std::make_shared<VerifyArgs>();
    auto* cmd = app.add_subcommand(
        "verify",
        "Check a send table (JSON or CSV) or a schedule (.sched) against its model: capacity per channel and step, ports, "
        "queues, replication, causality, routes and completeness.\nExit code: 0 every property holds, 1 a property is "
        "violated (counterexamples printed), 2 bad input.");
    cmd->add_option("FILE", args->input, "Table file (.json, .csv) or schedule (.sched)")->required();
    cmd->add_option("-D", args->defines, "Override a schedule parameter: -D n=16 (repeatable)");
    cmd->add_option("--engine", args->engine, "Verification engine")->check(CLI::IsMember({"direct"}));
    cmd->add_option("--routes", args->routes,
                    "any: hops may take any channels; fixed: personalized messages must follow the topology's routes")
        ->check(CLI::IsMember({"any", "fixed"}));
    cmd->add_option("--max-violations", args->max_violations, "Counterexamples shown per property");
    cmd->add_flag("--json", args->json, "Print one JSON object instead of text");
    cmd->callback([&ctx, args] {
        SendTable table = load_input(args->input, args->defines);
        VerifyOptions opt;
        opt.fixed_routes = args->routes == "fixed";
        opt.max_violations = args->max_violations;
        VerifyReport r = verify_direct(table, opt);
        std::string out = args->json ? report_to_json(r, table) : format_report(r, table);
        std::fwrite(out.data(), 1, out.size(), stdout);
        ctx.exit_code = r.holds() ? 0 : r.verdict() == "unknown" ? 3 : 1;
    });
}

}  // namespace collsched::tools
