/** \file
 * The `collsched` command line as a value: every subcommand registered on one CLI11 app, and the
 * check that names an unknown subcommand. main() runs it; the `cli` fuzz harness
 * (fuzz/targets.hpp run_cli) parses mutated argument lists through exactly the same app, with
 * the subcommands' work switched off.
 */
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "tools/commands.hpp"

namespace collsched::tools {

/// Registers every subcommand on `app` (which must outlive nothing but `ctx`), requires one,
/// and makes CLI11's failure messages quote long values in part (dsl/excerpt.hpp).
void add_commands(CLI::App& app, Context& ctx);

/// The message for a first argument that is a word naming no subcommand ("unknown subcommand
/// 'foo' (did you mean 'topo'?)..."), or nothing when `args` starts with a subcommand or an option.
std::optional<std::string> unknown_subcommand(const CLI::App& app, const std::vector<std::string>& args);

/// The message for a command line CLI11 refused: for an unknown option, the option and the
/// closest option of the command ("unknown option --sise; did you mean --size?"); CLI11's own
/// message otherwise.
std::string usage_message(const CLI::App& app, const CLI::Error& e);

}  // namespace collsched::tools
