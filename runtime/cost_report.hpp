/** \file
 * The cost of a table as `verify`, `simulate`, `pareto` and `compare` print it: S steps, R rounds,
 * C chunks and R/C rounds per chunk (docs/semantics.md, "Bandwidth: chunks, rounds and link
 * groups"), with `--alpha A --beta B --size M` the alpha-beta time S*A + R*(M/C)*B, and with
 * `--size M` (or a list or range of sizes) the predicted time on the topology's link speeds,
 * synchronous and asynchronous (docs/time.md). The runtime's (issue 42: it was tools/bandwidth.hpp);
 * the options that fill AlphaBeta are cli/size_options.hpp's.
 */
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "compiler/table/send_table.hpp"
#include "runtime/timing.hpp"

namespace collsched {

/// What cost is asked for: `--alpha`, `--beta`, `--size`, `--link` (cli/size_options.hpp reads them).
struct AlphaBeta {
    std::optional<double> alpha, beta;
    std::vector<double> sizes;  ///< `--size`: bytes per datum, one or more
    std::optional<LinkSpeed> link;  ///< `--link`: one alpha and bandwidth per unit of capacity for every channel
    /// The protocol the input declares (MSCCL-IR `proto`, an MSCCL++ plan's `protocol`); none for tables.
    Protocol protocol = Protocol::none;
    /// `--executor` (and `--calibration`): the executor whose costs the times include (docs/time.md,
    /// "Executors"); unset: the ideal one, the network's share.
    std::optional<ExecutorModel> executor;
    bool given() const { return alpha || beta || !sizes.empty(); }
    /// The alpha-beta time is asked for (all three given).
    bool alpha_beta() const { return alpha && beta && sizes.size() == 1; }
    /// Throws InputError when --alpha or --beta comes without the other two, or with several sizes.
    void check() const;
    TimeOptions time_options(double size) const;
    /// The executor's costs under the input's protocol (its default protocol for a table), if one was named.
    std::optional<ExecutorCosts> executor_costs() const;
};

/// Whether the cost lines are printed: the table has chunks or rounds, or a time was asked for.
bool shows_bandwidth(const SendTable& t, const AlphaBeta& ab);
/// "bandwidth: S = 3 steps, R = 6 rounds, C = 2 chunks, R/C = 3 rounds per chunk\n" and, when
/// asked, "alpha-beta time: S*alpha + R*(M/C)*beta = 3*1 + 6*(1024/2)*0.001 = 6.072\n"; "" when
/// shows_bandwidth is false.
std::string bandwidth_text(const SendTable& t, const AlphaBeta& ab, std::optional<Step> steps = std::nullopt);
/// Adds "bandwidth": {"steps", "rounds", "chunks", "rounds_per_chunk", ["alpha", "beta", "size",
/// "time"]} when shows_bandwidth.
void add_bandwidth_json(nlohmann::ordered_json& j, const SendTable& t, const AlphaBeta& ab, std::optional<Step> steps = std::nullopt);

/// nccl-tests' algorithm and bus bandwidth of a collective of `size` bytes (NCCL's size, docs/time.md
/// "Sizes") that takes `seconds`: size / seconds, and that times bus_factor (runtime/timing.hpp).
double algbw(double size, double seconds);
double busbw(const SendTable& t, double size, double seconds);
/// One line on where the speeds come from: "link speeds: graph file (alpha 0.7 .. 3 us,
/// 25 .. 300 GB/s per channel)".
std::string speeds_text(const Topology& topo, const std::optional<LinkSpeed>& link);
/// The predicted times for every size of `ab` (empty when no size was given):
/// "predicted time (docs/time.md) ...\n  size  synchronous  asynchronous  algbw  busbw\n ...".
std::string time_text(const SendTable& t, const AlphaBeta& ab);
/// Adds "time": {"link_speeds", "sizes": [{"size", "datum_bytes", "synchronous_s", "asynchronous_s",
/// "algbw_Bps", "busbw_Bps"}]} when a size was given.
void add_time_json(nlohmann::ordered_json& j, const SendTable& t, const AlphaBeta& ab);

}  // namespace collsched
