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
/// (named in the report; the files of several sizes by time_witness_path).
std::string time_objective_report(const TimeObjective&, const std::vector<std::string>& witnesses, bool json);

/// 0 when the fastest meets the bound at every size; 3 when a gap remains or no schedule was built.
int time_objective_exit_code(const TimeObjective&);

/// The file the winner at size i is written to: `path` for one size, "out.1MiB.json" for
/// "out.json" among several.
std::string time_witness_path(const TimeObjective&, const std::string& path, std::size_t i);

/// The comment on top of the winner's file at size i: the instance, the size, the time, the name
/// and where it comes from.
std::string time_witness_comment(const TimeObjective&, std::size_t i);

}  // namespace collsched
