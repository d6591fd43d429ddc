/** \file
 * Send tables on disk. The interchange format is JSON (`"format": "collsched.table/1"`,
 * schema in schema/collsched.table.schema.json, described in docs/formats.md); CSV is an
 * export with the same content (`# collsched.table/1 ...` header lines, then
 * `step,from,to,message`). The reader streams through the file with a SAX parser, so a table
 * of 10^8 transfers never exists as a JSON tree, and it rejects bad input with one line that
 * says what, where and what was expected (InputError). The writers stream into a buffer and a
 * flush callback; where the bytes go (atomically to a file, or standard output) is tools/output.hpp.
 */
#pragma once

#include <functional>
#include <string>
#include <string_view>

#include <fmt/format.h>

#include "compiler/send_table.hpp"

namespace collsched {

inline constexpr std::string_view table_format = "collsched.table/1";

/// Reads a table from a JSON or CSV file (decided by its first non-blank character); a JSON file
/// whose "format" is "collsched.ranks/1" is a per-rank file (compiler/ranks_import.hpp). "-" is
/// standard input.
SendTable read_table(const std::string& path);
/// read_table() of text held in memory; `name` is used in messages.
SendTable parse_table(std::string_view text, std::string_view name);
/// The whole content of `path`, or of standard input when path is "-", under the input policy
/// (compiler/input_file.hpp: regular files and pipes, at most max_input_bytes()); `what` names the
/// kind of file in messages. Throws InputError.
std::string read_input_text(const std::string& path, std::string_view what = "table or schedule");
/// Whether `text` is a send table (a JSON document, or CSV with its `step,from,to,message` row or
/// `# collsched.table` header) rather than a schedule in the DSL: how inputs without a telling
/// extension (standard input, `.txt`) are told apart.
bool looks_like_table(std::string_view text);
/// Parses table JSON held in memory; `name` is used in messages.
SendTable parse_table_json(std::string_view text, std::string_view name);
SendTable parse_table_csv(std::string_view text, std::string_view name);

/// Appends the table as JSON or CSV to `out`, calling `flush` whenever the buffer grows large
/// (so a huge table streams to a file instead of sitting in memory twice).
using Flush = std::function<void(fmt::memory_buffer&)>;
void write_table_json(const SendTable&, fmt::memory_buffer& out, const Flush& flush);
void write_table_csv(const SendTable&, fmt::memory_buffer& out, const Flush& flush);

/// The whole text a streaming writer produces, in memory: `produce(buffer, flush)` writes into
/// the buffer and calls flush when it is full (as tools/output.hpp write_output's callers do).
template <class Produce>
std::string write_to_string(Produce&& produce) {
    std::string s;
    fmt::memory_buffer buf;
    produce(buf, Flush([&](fmt::memory_buffer& b) {
        s.append(b.data(), b.size());
        b.clear();
    }));
    return s;
}
std::string table_to_json(const SendTable&);
std::string table_to_csv(const SendTable&);

}  // namespace collsched
