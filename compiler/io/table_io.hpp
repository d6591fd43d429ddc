/** \file
 * Send tables on disk. The interchange format is JSON (`"format": "collsched.table/1"`,
 * schema in schema/collsched.table.schema.json, described in docs/formats.md); CSV is an
 * export with the same content (`# collsched.table/1 ...` header lines, then
 * `step,from,to,message`). JSON is read by two readers that accept the same language: a fast
 * one (simdjson On Demand, compiler/io/table_json_fast.cpp) for the common shape of a table, and
 * the reference reader (nlohmann SAX) for everything else and for every error, so that bad
 * input gets one line that says what, where (file:line:col for syntax) and what was expected
 * (InputError); neither builds a JSON tree of the transfers. A key given twice is an error.
 * The writers stream into a buffer and a flush callback; where the bytes go (atomically to a
 * file, or standard output) is cli/output.hpp.
 */
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "compiler/table/send_table.hpp"

namespace collsched {

/// The format versions: /1 (every table up to the bandwidth model) and /2 (adds "chunks" and
/// "rounds", docs/formats.md). The writers write /1 for a table of one chunk and one round per
/// step, so such tables stay readable by older collsched, and /2 otherwise; both are read.
inline constexpr std::string_view table_format = "collsched.table/1";
inline constexpr std::string_view table_format_2 = "collsched.table/2";
/// The version a table is written in.
inline std::string_view table_format_of(const SendTable& t) { return t.uses_bandwidth_model() ? table_format_2 : table_format; }

/// Reads a table from a JSON or CSV file (decided by its first non-blank character); a JSON file
/// whose "format" is "collsched.ranks/1" is a per-rank file (compiler/io/ranks_import.hpp). "-" is
/// standard input.
SendTable read_table(const std::string& path);
/// A table file's text as read_table reads it: mapped when it can be, else read, in both cases
/// followed by the padding the fast JSON reader needs, so that it reads the text in place (a
/// copy of a large table costs a page fault per 4 KiB). Throws InputError (the input policy of
/// compiler/core/input_file.hpp, with the messages of read_input_text).
class TableFile {
public:
    explicit TableFile(const std::string& path);  ///< not "-"
    ~TableFile();
    TableFile(const TableFile&) = delete;
    TableFile& operator=(const TableFile&) = delete;
    std::string_view text() const;
    SendTable parse() const;  ///< read_table(path)

private:
    std::string path_, buf_;
    std::size_t size_ = 0, map_size_ = 0;
    void* map_ = nullptr;
};
/// read_table() of text held in memory; `name` is used in messages.
SendTable parse_table(std::string_view text, std::string_view name);
/// The whole content of `path`, or of standard input when path is "-", under the input policy
/// (compiler/core/input_file.hpp: regular files and pipes, at most max_input_bytes()); `what` names the
/// kind of file in messages. Throws InputError.
std::string read_input_text(const std::string& path, std::string_view what = "table or schedule");
/// Whether `text` is a send table (a JSON document, or CSV with its `step,from,to,message` row or
/// `# collsched.table` header) rather than a schedule in the DSL: how inputs without a telling
/// extension (standard input, `.txt`) are told apart.
bool looks_like_table(std::string_view text);
/// Parses table JSON held in memory; `name` is used in messages.
SendTable parse_table_json(std::string_view text, std::string_view name);
/// The reference JSON reader alone (nlohmann SAX): what parse_table_json falls back to; the fuzz
/// harness checks that the two agree on every input.
SendTable parse_table_json_reference(std::string_view text, std::string_view name);
SendTable parse_table_csv(std::string_view text, std::string_view name);

/// The opening of a table's JSON document, up to the fields that differ by format: `{"format":
/// format, "topology", "model", "collective", "requirements" (if any), the extra fields, each on
/// its line and followed by a comma. Shared by the table and the per-rank writers.
/// `file` is the path being written ("" for none): graph files in the topology are written
/// relative to its directory (spec_written_at).
void write_json_header(const SendTable&, std::string_view format, fmt::memory_buffer& out, std::string_view file = {});
/// Every node's node_name(), by node id (the writers look names up once per table).
std::vector<std::string> node_names(const Topology&);

/// Appends the table as JSON or CSV to `out`, calling `flush` whenever the buffer grows large
/// (so a huge table streams to a file instead of sitting in memory twice).
using Flush = std::function<void(fmt::memory_buffer&)>;
/// The buffer size past which the table writers call `flush` (4 MiB).
inline constexpr std::size_t table_flush_at = 1 << 22;
/// `file`: the path being written, as for write_json_header.
void write_table_json(const SendTable&, fmt::memory_buffer& out, const Flush& flush, std::string_view file = {});
void write_table_csv(const SendTable&, fmt::memory_buffer& out, const Flush& flush, std::string_view file = {});

/// The whole text a streaming writer produces, in memory: `produce(buffer, flush)` writes into
/// the buffer and calls flush when it is full (as cli/output.hpp write_output's callers do).
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
