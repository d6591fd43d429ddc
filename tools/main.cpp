// The collsched command line: registers the subcommands and maps failures to exit codes.
#include <cstdio>
#include <exception>
#include <string_view>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "dsl/diagnostics.hpp"
#include "tools/commands.hpp"
#include "tools/input.hpp"

int main(int argc, char** argv) {
    using namespace collsched;
    CLI::App app{"collsched: compile, verify, simulate and synthesize collective communication schedules"};
    app.require_subcommand(1);
    // Every option's --help shows its default ([16]); subcommands inherit this from the app.
    app.option_defaults()->always_capture_default();
    app.set_version_flag("--version", "collsched 0.1.0");
    tools::Context ctx;
    // Under --json every error is one JSON object on standard output (tools/input.hpp).
    bool json = false;
    for (int i = 1; i < argc; ++i) json = json || std::string_view(argv[i]) == "--json";
    tools::add_demo_command(app, ctx);
    tools::add_topo_command(app, ctx);
    tools::add_verify_command(app, ctx);
    tools::add_simulate_command(app, ctx);
    tools::add_convert_command(app, ctx);
    tools::add_mpirun_command(app, ctx);
    tools::add_compile_command(app, ctx);
    tools::add_optimize_command(app, ctx);
    tools::add_probe_command(app, ctx);
    tools::add_reproduce_command(app, ctx);
    tools::add_bench_command(app, ctx);
    tools::add_completion_command(app, ctx);
    try {
        app.parse(argc, argv);
    } catch (const CLI::CallForHelp& e) {
        return app.exit(e);
    } catch (const CLI::CallForAllHelp& e) {
        return app.exit(e);
    } catch (const CLI::CallForVersion& e) {
        return app.exit(e);
    } catch (const CLI::ParseError& e) {
        if (!json) {
            app.exit(e);
            return 2;
        }
        tools::print_error(InputError(e.what()), json);
        return 2;
    } catch (const InputError& e) {
        tools::print_error(e, json);
        return 2;
    } catch (const std::bad_alloc&) {
        std::fprintf(stderr, "collsched: error: out of memory (the input is too large for this machine)\n");
        return 2;
    }
    return ctx.exit_code;
}
