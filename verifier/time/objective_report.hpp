/** \file
 * The report of the time objective (objective.hpp, `optimize --size`; issue 43: built here,
 * printed by the command): per size the fastest verified schedule, its predicted time, the proved
 * lower bound and the gap, nccl-tests' algbw and busbw, the speed-up over the best of NCCL's
 * algorithms and NCCL's own tuner model; the crossovers, the candidates, the providers' notes and
 * the bound's argument. With no candidate, the bound at every size. Also the name and the
 * comment of each winner's file (`-o`) and the exit code.
 */
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "verifier/time/objective.hpp"

namespace collsched {

/// The report, text or `--json`'s object, with its newline; `witnesses` the files as given to -o
/// (the files written for each: time_witness_files with `per_range`).
std::string time_objective_report(const TimeObjective&, const std::vector<std::string>& witnesses, bool json, bool per_range = false);

/// 0 when the fastest meets the bound at every size; 3 when a gap remains or no schedule was built.
int time_objective_exit_code(const TimeObjective&);

/// A file `-o` writes, and the sizes (indices into options.sizes) it serves, in order.
struct WitnessFile {
    std::string path;
    std::vector<std::size_t> sizes;
};
/// The files `-o path` writes (docs/commands.md, "Files of `-o W.json` with several sizes"): one per distinct winner, so
/// no table is written twice. A distinct winner is a candidate; with `per_range` (an executor's
/// format: a plan holds one protocol and one size range) a run of sizes one candidate wins in a
/// row in one protocol. One file: `path` itself; several: `path` with the first size each serves
/// ("out.json" -> "out.1MiB.json"). With `per_range` on the MSCCL++ or MSCCL executor, a size that
/// one of NCCL's own algorithms wins gets no file: it won as stock NCCL runs it (NCCL's protocols and
/// channels), which a plan of that executor does not (stock_nccl_sizes).
std::vector<WitnessFile> time_witness_files(const TimeObjective&, const std::string& path, bool per_range = false);
/// The file of time_witness_files that serves size i; empty for a size stock NCCL wins.
std::string time_witness_path(const TimeObjective&, const std::string& path, std::size_t i, bool per_range = false);
/// The sizes (indices) whose winner is one of NCCL's own algorithms while the executor is MSCCL++ or
/// MSCCL: an executor's format (`per_range`) writes no file for them.
std::vector<std::size_t> stock_nccl_sizes(const TimeObjective&, bool per_range);

/// The comment on top of the winner's file at size i: the instance, the size, the time, the name
/// and where it comes from.
std::string time_witness_comment(const TimeObjective&, std::size_t i);
/// The comment on top of a file that serves several sizes: each size and its time.
std::string time_witness_comment(const TimeObjective&, const WitnessFile&);

}  // namespace collsched
