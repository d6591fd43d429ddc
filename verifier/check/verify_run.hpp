/** \file
 * A verify run as `collsched verify` and the Python module report it (issue 42: built here, printed
 * by the command): the direct checker or the Z3 engine, every counterexample that names a
 * transfer named back to the `send` or `hop` behind it and, for a schedule, to its loop values
 * (the program run once more, compiler/lower/lower.hpp transfer_contexts); and `--engine both`,
 * the two reports and their agreement. The cost lines and predicted times are the runtime's
 * (runtime/cost_report.hpp), added by the command after these.
 */
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "compiler/lower/lower.hpp"
#include "compiler/table/send_table.hpp"
#include "verifier/check/report.hpp"
#include "verifier/check/z3_engine.hpp"

namespace collsched {

/// What compiled a schedule (its text, name, -D defines and options), kept by the loader
/// (cli/input.hpp load_input) so that the program can be run again for the loop values of
/// counterexamples (compiler/lower/lower.hpp, transfer_contexts). Empty `text`: the input was a table.
struct ScheduleSource {
    std::string text, name;
    std::vector<std::string> defines;
    CompileOptions options;
};

/// The report of one engine (the direct checker, or Z3 with `z3`), its counterexamples named.
VerifyReport verify_table(const SendTable&, const ScheduleSource& source, bool z3, const VerifyOptions&, const Z3Options&);

/// `--engine both`: both engines' reports, named, and their agreement (a disagreement is a bug in
/// one of the engines; the command reports it on stderr and exits 1).
struct BothReports {
    VerifyReport direct, z3;
    Agreement both;
};
BothReports verify_both(const SendTable&, const ScheduleSource& source, const VerifyOptions&, const Z3Options&);
/// Its `--json` object up to the cost: verdict, per property the common status, the direct
/// checker's violations, the disagreements, both engines' objects and the seconds.
nlohmann::ordered_json both_json(const BothReports&, const SendTable&);
/// Its text before the cost lines ("engine direct", its report, "engine z3", its report) and its
/// last line ("both engines: holds").
std::string both_text(const BothReports&, const SendTable&);
std::string both_verdict_text(const BothReports&);

}  // namespace collsched
