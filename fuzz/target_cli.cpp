// The body of the `cli` harness (fuzz/targets.hpp run_cli).
#include <algorithm>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "dsl/excerpt.hpp"
#include "fuzz/targets.hpp"
#include "tools/app.hpp"

namespace collsched::fuzz {

namespace {

/// What main() would print for a failure must be short: the resource policy's message bound.
void check_message(std::string_view message) {
    if (message.size() > max_message + 40)
        invariant_failed(fmt::format("a {}-byte error message: {}", message.size(), excerpt(message, 200)));
    std::size_t run = 0;
    for (char c : message) {
        run = c == ' ' || c == '\t' || c == '\n' || c == '\r' ? 0 : run + 1;
        if (run > max_quote + 40) invariant_failed(fmt::format("an error message echoes a long value: {}", excerpt(message, 200)));
    }
}

/// Thrown by the app's parse-complete callback, which CLI11 runs after every option is parsed,
/// validated and assigned and before any subcommand's callback: so parsing alone runs. (Replacing
/// the subcommands' callbacks instead would free the option values they own.)
struct ParsedOnly {};

}  // namespace

void run_cli(std::string_view input) {
    std::vector<std::string> args;
    while (!input.empty() && args.size() < 64) {
        std::size_t nl = input.find('\n');
        std::string_view line = input.substr(0, nl);
        args.emplace_back(line.substr(0, 4096));
        input = nl == std::string_view::npos ? std::string_view{} : input.substr(nl + 1);
    }
    CLI::App app{"collsched"};
    tools::Context ctx;
    tools::add_commands(app, ctx);
    app.parse_complete_callback([] { throw ParsedOnly{}; });
    if (auto unknown = tools::unknown_subcommand(app, args)) {
        check_message(*unknown);
        return;
    }
    std::vector<std::string> reversed(args.rbegin(), args.rend());  // CLI11 takes them last first
    try {
        app.parse(reversed);
    } catch (const CLI::ParseError& e) {
        check_message(shorten_quotes(CLI::FailureMessage::simple(&app, e)));
    } catch (const ParsedOnly&) {
        // a valid command line: its work is not run here
    }
}

}  // namespace collsched::fuzz
