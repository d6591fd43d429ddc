/** \file
 * Loading what the user names on the command line: a table file (JSON, CSV, per-rank JSON), an
 * MSCCL-IR program (XML, checked and levelled by compiler/msccl_import.hpp) or, for `.sched`
 * files, a schedule compiled in memory with `-D name=value` overrides.
 */
#pragma once

#include <string>
#include <vector>

#include "compiler/msccl_import.hpp"
#include "compiler/send_table.hpp"

namespace collsched::tools {

/// Reads a table or compiles a schedule, recording which `send` or `hop` made each transfer
/// (SendTable::transfer_origins) so that counterexamples can name it. Throws InputError (exit 2) on bad input; DSL
/// diagnostics are printed to stderr before the InputError that stops the command.
/// `msccl` applies to MSCCL-IR files (a file whose first non-blank character is '<'); a
/// `--topology` given for any other input is refused.
SendTable load_input(const std::string& path, const std::vector<std::string>& defines, const MscclImportOptions& msccl = {});

}  // namespace collsched::tools
