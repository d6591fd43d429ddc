// The collsched command line: registers the subcommands and maps failures to exit codes.
#include <cstdio>
#include <exception>
#include <iostream>
#include <string>
#include <string_view>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "compiler/interop/msccl_import.hpp"
#include "support/assert.hpp"
#include "support/teardown.hpp"
#include "support/budget.hpp"
#include "support/error.hpp"
#include "tools/app.hpp"
#include "cli/input.hpp"
#include "cli/output.hpp"
#ifdef COLLSCHED_WITH_MPI
#include "cli/mpi_share.hpp"
#endif

namespace {

/// CLI11 prints help and the version to std::cout: `collsched --help > /dev/full` is exit 2 too.
int help_written(int code) {
    std::cout.flush();
    if (std::cout) return code;
    std::fprintf(stderr, "collsched: error: standard output: write failed\n");
    return 2;
}

/// Parses the command line and runs the command; the exit code.
int run(int argc, char** argv, collsched::tools::Context& ctx) {
    using namespace collsched;
    CLI::App app{"collsched: compile, verify, simulate and synthesize collective communication schedules"};
    tools::add_commands(app, ctx);
    // Under --json every error is one JSON object on standard output (cli/input.hpp).
    bool json = false;
    for (int i = 1; i < argc; ++i) json = json || std::string_view(argv[i]) == "--json";
    if (auto unknown = tools::unknown_subcommand(app, std::vector<std::string>(argv + 1, argv + argc))) {
        tools::print_error(InputError(*unknown), json);
        return 2;
    }
    try {
        app.parse(argc, argv);
        tools::check_stdout();  // output lost to a full disk or a closed descriptor is an error, not exit 0
    } catch (const CLI::CallForHelp& e) {
        return help_written(app.exit(e));
    } catch (const CLI::CallForAllHelp& e) {
        return help_written(app.exit(e));
    } catch (const CLI::CallForVersion& e) {
        return help_written(app.exit(e));
    } catch (const CLI::ParseError& e) {
        if (!json) {
            app.exit(e);  // CLI11's message, long values quoted in part (tools/app.cpp)
            return 2;
        }
        tools::print_error(InputError(tools::usage_message(app, e)), json);
        return 2;
    } catch (const ProgramViolation& e) {
        // an MSCCL-IR program that does not hold, read by convert or simulate: its counterexamples
        std::fflush(stdout);
        std::fprintf(stderr, "%s", e.what());
        return 1;
    } catch (const InputError& e) {
        tools::print_error(e, json);
        return 2;
    } catch (const LimitReached& e) {
        // a limit that stopped a command before it had anything to report (reading a large machine)
        tools::print_stopped(e, json);
        return 3;
    } catch (const std::bad_alloc&) {
        std::fprintf(stderr, "collsched: error: out of memory (the input is too large for this machine)\n");
        return 2;
    }
    return ctx.exit_code;
}

}  // namespace

int main(int argc, char** argv) {
    collsched::skip_teardown();  // a command's machine is left to the operating system (support/teardown.hpp)
    collsched::tools::Context ctx;
#ifdef COLLSCHED_WITH_MPI
    // Started by mpirun with several ranks: they share pareto's solver calls, rank 0 prints.
    auto ranks = collsched::tools::MpiRanks::from_environment();
    ctx.sharing = ranks;
    const int code = run(argc, argv, ctx);
    return ranks ? ranks->finish(code) : code;
#else
    return run(argc, argv, ctx);
#endif
}
