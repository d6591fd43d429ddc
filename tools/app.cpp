#include "tools/app.hpp"
#include "tools/runs.hpp"

#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "dsl/excerpt.hpp"
#include "support/edit_distance.hpp"

namespace collsched::tools {

// CLI11 alone would only say "A subcommand is required" for `collsched foo`.
std::optional<std::string> unknown_subcommand(const CLI::App& app, const std::vector<std::string>& args) {
    if (args.empty() || args[0].empty() || args[0][0] == '-') return std::nullopt;
    std::string_view word = args[0];
    std::string best;
    std::size_t best_d = 3;  // at most two edits away
    for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; })) {
        if (sub->check_name(std::string(word))) return std::nullopt;
        std::size_t d = support::edit_distance(word, sub->get_name());
        if (d < best_d) best_d = d, best = sub->get_name();
    }
    return fmt::format("unknown subcommand '{}'{}; run `collsched --help` for the list", excerpt(word),
                       best.empty() ? std::string() : fmt::format(" (did you mean '{}'?)", best));
}

void add_commands(CLI::App& app, Context& ctx) {
    app.require_subcommand(1);
    // Every option's --help shows its default ([16]); subcommands inherit this from the app.
    app.option_defaults()->always_capture_default();
    app.set_version_flag("--version", "collsched 0.1.0");
    // CLI11 echoes a bad value whole; a long one is quoted in part (dsl/excerpt.hpp).
    app.failure_message([](const CLI::App* a, const CLI::Error& e) { return shorten_quotes(CLI::FailureMessage::simple(a, e)); });
    add_demo_command(app, ctx);
    add_topo_command(app, ctx);
    add_verify_command(app, ctx);
    add_simulate_command(app, ctx);
    add_convert_command(app, ctx);
    add_mpirun_command(app, ctx);
    add_compile_command(app, ctx);
    add_optimize_command(app, ctx);
    add_probe_command(app, ctx);
    add_pareto_command(app, ctx);
    add_bandwidth_command(app, ctx);
    add_reproduce_command(app, ctx);
    add_bench_command(app, ctx);
    add_compare_command(app, ctx);
    add_machine_command(app, ctx);
    add_completion_command(app, ctx);
}

int run_command(const std::vector<std::string>& args, std::string& out) {
    CLI::App app{"collsched"};
    Context ctx;
    ctx.out = [&out](std::string_view text) { out.append(text); };
    add_commands(app, ctx);
    if (auto unknown = unknown_subcommand(app, args)) throw InputError(*unknown);
    std::vector<std::string> reversed(args.rbegin(), args.rend());  // CLI11 takes the arguments last first
    try {
        app.parse(reversed);
    } catch (const CLI::Success&) {
        throw InputError("--help and --version print to the terminal: run `collsched --help`");
    } catch (const CLI::ParseError& e) {
        throw InputError(shorten_quotes(e.what()));
    }
    return ctx.exit_code;
}

}  // namespace collsched::tools
