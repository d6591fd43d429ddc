/** \file
 * The bandwidth cost of a table as `verify`, `simulate` and `reproduce` print it
 * (docs/semantics.md, "Bandwidth: chunks, rounds and link groups"): S steps, R rounds, C chunks,
 * R/C rounds per chunk, and with `--alpha A --beta B --size M` the alpha-beta time
 * S*A + R*(M/C)*B.
 */
#pragma once

#include <optional>
#include <string>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "compiler/send_table.hpp"

namespace collsched::tools {

/// `--alpha`, `--beta`, `--size`: all three or none.
struct AlphaBeta {
    std::optional<double> alpha, beta, size;
    bool given() const { return alpha || beta || size; }
    /// Throws InputError unless all three or none are given.
    void check() const;
};

void add_alpha_beta_options(CLI::App* cmd, AlphaBeta& ab);

/// Whether the cost lines are printed: the table has chunks or rounds, or the time was asked for.
bool shows_bandwidth(const SendTable& t, const AlphaBeta& ab);
/// "bandwidth: S = 3 steps, R = 6 rounds, C = 2 chunks, R/C = 3 rounds per chunk\n" and, when
/// asked, "alpha-beta time: S*alpha + R*(M/C)*beta = 3*1 + 6*(1024/2)*0.001 = 6.072\n"; "" when
/// shows_bandwidth is false.
std::string bandwidth_text(const SendTable& t, const AlphaBeta& ab, std::optional<Step> steps = std::nullopt);
/// Adds "bandwidth": {"steps", "rounds", "chunks", "rounds_per_chunk", ["alpha", "beta", "size",
/// "time"]} when shows_bandwidth.
void add_bandwidth_json(nlohmann::ordered_json& j, const SendTable& t, const AlphaBeta& ab, std::optional<Step> steps = std::nullopt);

}  // namespace collsched::tools
