/** \file
 * Loading what the user names on the command line: a table file (JSON, CSV, per-rank JSON), an
 * MSCCL-IR program (XML, checked and levelled by compiler/interop/msccl_import.hpp), Chakra traces
 * written by collsched (`PREFIX.0.et`, compiler/formats/export_chakra.hpp) or a schedule compiled in
 * memory with `-D name=value` overrides, from a file or from standard input (`-`); and the one
 * place that prints a schedule's diagnostics and stops the command.
 */
#pragma once

#include <exception>
#include <string>
#include <string_view>
#include <vector>

#include "compiler/formats/export_formats.hpp"
#include "compiler/lower/lower.hpp"
#include "compiler/interop/msccl_import.hpp"
#include "compiler/table/send_table.hpp"
#include "dsl/diagnostics.hpp"
#include "verifier/check/verify_run.hpp"

namespace collsched::tools {

/// Reads a table or compiles a schedule, recording (with `locations`) which `send` or `hop` made
/// each transfer (SendTable::transfer_origins) so that counterexamples can name it. `.sched` files are
/// schedules, `.json` and `.csv` files tables; anything else, and standard input ("-"), is told
/// apart by its content (compiler/io/table_io.hpp, looks_like_table). Throws InputError (exit 2) on
/// bad input; DSL diagnostics are printed to stderr before the InputError that stops the command.
/// A text whose first non-blank character is '<' is an MSCCL-IR program, read with `msccl`; a
/// `--topology` (msccl.topology) given for any other input is refused. A path ending in `.0.et`
/// names Chakra traces, read back from its prefix.
/// When the input is a schedule and `schedule` is given, it receives what compiled it, so that
/// the program can be run again (ScheduleSource: verifier/check/verify_run.hpp).
SendTable load_input(const std::string& path, const std::vector<std::string>& defines, bool locations = true, bool strict = false,
                     const MscclImportOptions& msccl = {}, ScheduleSource* schedule = nullptr);

/// Prints a compiled schedule's warnings (W001) to stderr, if it has any.
void print_warnings(const Diagnostics& diags);

/// Bad input with diagnostics against a source text: main() prints them (rendered with the
/// source lines, or as JSON under --json) before the one-line message.
class DiagnosticError : public InputError {
public:
    DiagnosticError(const Diagnostics& diags, const std::string& message)
        : InputError(message), file(diags.file()), list(diags.all()), rendered(diags.render()) {}
    std::string file;
    std::vector<Diagnostic> list;
    std::string rendered;
};

/// How main() reports bad input (exit code 2): the diagnostics, if any, then `collsched: error:
/// MESSAGE` on stderr; with `json`, one object on stdout instead: {"error": MESSAGE, "exit_code":
/// 2, "diagnostics": [{"file", "line", "column", "severity", "code", "message"}, ...]}.
void print_error(const InputError& e, bool json);

/// How main() reports a run that a limit stopped before it had any answer (exit code 3; a
/// LimitReached out of a command, e.g. while reading a machine of thousands of GPUs): `collsched:
/// stopped before any result: WHY` on stdout; with `json`, {"status": "timeout" or "memory",
/// "stopped": WHY, "exit_code": 3}.
void print_stopped(const std::exception& e, bool json);

/// Throws DiagnosticError "N errors in FILE<what>" with the diagnostics.
[[noreturn]] void fail_with_diagnostics(const Diagnostics& diags, std::string_view what = {});

/// The output format: `format` when given (--format), else the one `output`'s extension names
/// (`-o t.svg` is svg; `.sched` is dsl where `dsl` allows it), else json.
std::string output_format(const std::string& format, const std::string& output, bool dsl = false);

}  // namespace collsched::tools
