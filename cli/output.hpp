/** \file
 * Where the output of `compile`, `convert`, `optimize --witness` and the other writers goes
 * (docs/fuzzing.md, "Output"). A regular file (or a path that does not exist yet, or a symbolic
 * link to a regular file) is written atomically: to a temporary beside it, renamed over it when
 * complete, so a failed or interrupted run leaves neither a partial file nor the temporary.
 * Character devices and pipes (`/dev/null`, a FIFO, `/dev/stdout`) are written into directly and
 * never replaced; directories, block devices and sockets are refused. Every write is checked:
 * a failure throws InputError naming the path and the reason (exit code 2).
 */
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "compiler/formats/export_formats.hpp"
#include "compiler/io/table_io.hpp"

namespace collsched::tools {

/// Writes `path` (standard output when path is "-") through `produce`, which appends to the
/// buffer and calls the flush it is given whenever the buffer is full, and once at the end.
void write_output(const std::string& path, const std::function<void(const Flush&, fmt::memory_buffer&)>& produce);

/// Flushes standard output and throws InputError when anything written to it was lost (a full
/// disk, a closed descriptor). main() calls it after every command, so no command exits 0 with
/// its output missing.
void check_stdout();

/// Every format `compile` and `convert` write: the rows of compiler/formats/export_formats.hpp.
std::vector<std::string> table_output_formats();

/// The --format help of `compile` and `convert`, from the rows.
std::string table_output_formats_help();

/// Writes `table` to `output` in `format` (one of table_output_formats()): a format of several
/// files (chakra: OUTPUT.0.et, OUTPUT.1.et, ... and OUTPUT.json, `options.bytes` per message)
/// writes all or none; the others write one file (or standard output for "-") through
/// write_output.
void write_table_output(const SendTable& table, const std::string& format, const std::string& output, const ExportOptions& options);
/// The text formats of write_table_output into `buf` through `flush`: the text written to
/// `options.file` ("" or "-": standard output, or memory; the Python module's Table.dumps).
void write_table_text(const SendTable& table, const std::string& format, const ExportOptions& options, fmt::memory_buffer& buf,
                      const Flush& flush);

}  // namespace collsched::tools
