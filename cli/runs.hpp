/** \file
 * What the command line and the Python module (python/, docs/python.md) share, so that both
 * report the same thing from the same code: a command line run in memory (its report collected
 * instead of printed, bad input thrown as InputError), and the cores of `verify` and `simulate`
 * on a table already in memory, with the JSON objects their `--json` prints. A verify report is
 * verifier/check/verify_run.hpp's (verify_table); what is here adds the runtime's cost lines to it.
 */
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "compiler/table/send_table.hpp"
#include "runtime/simulator.hpp"
#include "runtime/cost_report.hpp"
#include "cli/input.hpp"
#include "verifier/check/direct.hpp"
#include "verifier/check/verify_run.hpp"
#include "verifier/check/z3_engine.hpp"

namespace collsched::tools {

/// Runs `collsched ARGS...` (args[0] is the subcommand) as main() does, but in memory: returns
/// the exit code and appends the report to `out`. Bad input and usage errors are thrown
/// (InputError; DiagnosticError with the diagnostics), as are an MSCCL-IR program's violations
/// (ProgramViolation), for the caller to report; `--help` is refused.
int run_command(const std::vector<std::string>& args, std::string& out);

/// `verify --json`'s object: the report, the bandwidth cost and, for a table that holds and a
/// size, the predicted times.
nlohmann::ordered_json verify_json(const VerifyReport&, const SendTable&, const AlphaBeta&);

/// `simulate` of a table: the replay, a halt named back to the statement that made its transfer.
SimReport simulate_table(const SendTable&, bool trace = false);
/// `simulate --json`'s object as text: the report, the bandwidth cost and, for a run that
/// completed and a size, the predicted times (`steps`: a streamed run's completion step).
std::string simulate_json(const SimReport&, const SendTable&, const AlphaBeta&, std::optional<Step> steps = std::nullopt);

}  // namespace collsched::tools
