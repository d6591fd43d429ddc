/** \file
 * The command line's options for sizes, link speeds and the alpha-beta time (`--size`/`--sizes`,
 * `--link`, `--alpha`, `--beta`) and their readers; what they ask for is runtime/cost_report.hpp's
 * AlphaBeta (split from tools/bandwidth.hpp, issue 42).
 */
#pragma once

#include <optional>
#include <string_view>
#include <vector>

#include <CLI/CLI.hpp>

#include "runtime/cost_report.hpp"

namespace collsched::tools {

void add_alpha_beta_options(CLI::App* cmd, AlphaBeta& ab);
/// `--size`/`--sizes` alone (compare, pareto): the list of sizes and `--link`.
void add_size_option(CLI::App* cmd, std::vector<double>& sizes, std::string_view name, std::string_view help);
void add_link_option(CLI::App* cmd, std::optional<LinkSpeed>& link);
/// `--executor NAME` and `--calibration FILE` (docs/time.md, "Executors").
void add_executor_options(CLI::App* cmd, std::optional<ExecutorModel>& executor);

/// Sizes as `1M`, `1K..1G` (doubling; `1K..1G:4` multiplies by 4), or a comma-separated list of
/// both. Throws InputError saying what was expected.
std::vector<double> parse_sizes(std::string_view text);
/// `--link "500 ns, 50 GB/s"`: the alpha and bandwidth per unit of capacity. Throws InputError.
LinkSpeed parse_link(std::string_view text);

}  // namespace collsched::tools
