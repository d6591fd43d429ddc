#include "tools/app.hpp"

#include <algorithm>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "dsl/excerpt.hpp"

namespace collsched::tools {

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

}  // namespace

// CLI11 alone would only say "A subcommand is required" for `collsched foo`.
std::optional<std::string> unknown_subcommand(const CLI::App& app, const std::vector<std::string>& args) {
    if (args.empty() || args[0].empty() || args[0][0] == '-') return std::nullopt;
    std::string_view word = args[0];
    std::string best;
    std::size_t best_d = 3;  // at most two edits away
    for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; })) {
        if (sub->check_name(std::string(word))) return std::nullopt;
        std::size_t d = distance(word, sub->get_name());
        if (d < best_d) best_d = d, best = sub->get_name();
    }
    return fmt::format("unknown subcommand '{}'{}; run `collsched --help` for the list", excerpt(word),
                       best.empty() ? std::string() : fmt::format(" (did you mean '{}'?)", best));
}

void add_commands(CLI::App& app, Context& ctx) {
    app.require_subcommand(1);
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
    add_reproduce_command(app, ctx);
    add_bench_command(app, ctx);
}

}  // namespace collsched::tools
