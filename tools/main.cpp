// The collsched command line: registers the subcommands and maps failures to exit codes.
#include <algorithm>
#include <cstdio>
#include <exception>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "dsl/diagnostics.hpp"
#include "dsl/excerpt.hpp"
#include "tools/commands.hpp"
#include "tools/output.hpp"

namespace {

/// Edit distance (insertions, deletions, substitutions) for the "did you mean" of an unknown subcommand.
std::size_t distance(std::string_view a, std::string_view b) {
    std::vector<std::size_t> row(b.size() + 1);
    for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
    for (std::size_t i = 1; i <= a.size(); ++i) {
        std::size_t diag = row[0];
        row[0] = i;
        for (std::size_t j = 1; j <= b.size(); ++j) {
            std::size_t up = row[j];
            row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
            diag = up;
        }
    }
    return row[b.size()];
}

/// The first argument when it is a word that names no subcommand: CLI11 would only say "A
/// subcommand is required". The message names it, and the closest subcommand when one is near.
std::optional<std::string> unknown_subcommand(const CLI::App& app, int argc, char** argv) {
    if (argc < 2 || argv[1][0] == '-' || argv[1][0] == '\0') return std::nullopt;
    std::string_view word = argv[1];
    std::string best;
    std::size_t best_d = 3;  // at most two edits away
    for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; })) {
        if (sub->check_name(std::string(word))) return std::nullopt;
        std::size_t d = distance(word, sub->get_name());
        if (d < best_d) best_d = d, best = sub->get_name();
    }
    return fmt::format("unknown subcommand '{}'{}; run `collsched --help` for the list", collsched::excerpt(word),
                       best.empty() ? std::string() : fmt::format(" (did you mean '{}'?)", best));
}

}  // namespace

int main(int argc, char** argv) {
    using namespace collsched;
    CLI::App app{"collsched: compile, verify, simulate and synthesize collective communication schedules"};
    app.require_subcommand(1);
    app.set_version_flag("--version", "collsched 0.1.0");
    // CLI11 echoes a bad value whole; a long one is quoted in part (dsl/excerpt.hpp).
    app.failure_message([](const CLI::App* a, const CLI::Error& e) { return shorten_quotes(CLI::FailureMessage::simple(a, e)); });
    tools::Context ctx;
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
    if (auto unknown = unknown_subcommand(app, argc, argv)) {
        std::fprintf(stderr, "collsched: error: %s\n", unknown->c_str());
        return 2;
    }
    try {
        app.parse(argc, argv);
        tools::check_stdout();  // output lost to a full disk or a closed descriptor is an error, not exit 0
    } catch (const CLI::CallForHelp& e) {
        return app.exit(e);
    } catch (const CLI::CallForAllHelp& e) {
        return app.exit(e);
    } catch (const CLI::CallForVersion& e) {
        return app.exit(e);
    } catch (const CLI::ParseError& e) {
        app.exit(e);
        return 2;
    } catch (const InputError& e) {
        std::fflush(stdout);
        std::fprintf(stderr, "collsched: error: %s\n", shorten_quotes(e.what()).c_str());
        return 2;
    } catch (const std::bad_alloc&) {
        std::fprintf(stderr, "collsched: error: out of memory (the input is too large for this machine)\n");
        return 2;
    }
    return ctx.exit_code;
}
