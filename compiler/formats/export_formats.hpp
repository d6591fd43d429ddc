/** \file
 * Every format a send table can be written in, one row each (`output_formats`), so that
 * `convert`, `compile`, the Python module and any later command accept the same `--format` names
 * and say the same things about them: `json` and `csv` (compiler/io/table_io.hpp), `ranks`
 * (compiler/io/export_ranks.hpp), `msccl` (compiler/interop/export_msccl.hpp), `mscclpp`
 * (compiler/interop/export_mscclpp.hpp), `dot`, `svg` and `html` (compiler/interop/export_svg.hpp),
 * `dsl` (compiler/io/table_printer.hpp) and `chakra` (compiler/formats/export_chakra.hpp: one file
 * per rank, the one format of several files).
 *
 * To add a format, add a row (name, file extension, one-line description, writer); the
 * `--format` checks, the help texts and the choice of a format from `-o FILE.ext` all read them.
 */
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "compiler/formats/export_chakra.hpp"
#include "compiler/interop/export_msccl.hpp"
#include "compiler/interop/export_mscclpp.hpp"
#include "compiler/interop/export_svg.hpp"
#include "compiler/table/send_table.hpp"
#include "compiler/io/table_io.hpp"

namespace collsched {

struct ExportOptions {
    TimelineOptions timeline;  ///< svg and html
    MscclOptions msccl;        ///< msccl
    MscclppOptions mscclpp;    ///< mscclpp
    /// The path being written ("" or "-": standard output): json, csv and ranks write a graph
    /// file of the topology relative to its directory (spec_written_at); for chakra, the prefix.
    std::string file;
    std::uint64_t bytes = 1024;  ///< chakra: bytes per message
};

/// A file of a format of several files.
using OutputFile = ChakraFile;

/// One output format of a send table: a text (`write`) or several files (`write_files`).
struct OutputFormat {
    std::string_view name;         ///< the `--format` value
    std::string_view extension;    ///< the file extension that selects it (".json"); empty: none does
    std::string_view description;  ///< for --help
    void (*write)(const SendTable&, const ExportOptions&, fmt::memory_buffer&, const Flush&);
    /// Several files: their names from the prefix `options.file` (an absolute path), all
    /// written or none (cli/output.cpp); `files` names them for messages.
    std::vector<OutputFile> (*write_files)(const SendTable&, const ExportOptions&) = nullptr;
    std::string_view files = {};
};

/// Every format, in the order the help lists them.
std::span<const OutputFormat> output_formats();
/// The names of output_formats(), for CLI11's IsMember.
std::vector<std::string> output_format_names();
/// "json, csv, ranks, msccl, mscclpp, dot, svg, html, dsl or chakra".
std::string output_format_list();
/// "json (the table file (docs/formats.md)), csv (...), ...": every row with its description.
std::string output_format_descriptions();
/// The format named `name`, or null.
const OutputFormat* format_named(std::string_view name);
/// The format whose extension `path` ends with, or null.
const OutputFormat* format_of_path(std::string_view path);

/// Writes `t` in the text format `format` (a name of output_formats()). Throws InputError for an
/// unknown format, for one of several files, and for tables the format cannot express; the
/// writers check everything before their first byte.
void write_table_as(const SendTable& t, std::string_view format, const ExportOptions& options, fmt::memory_buffer& out,
                    const Flush& flush);

}  // namespace collsched
