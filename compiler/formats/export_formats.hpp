/** \file
 * One entry point for every format a send table can be written in, so that `convert`,
 * `compile` and any later command accept the same `--format` names: `json` and `csv`
 * (compiler/io/table_io.hpp), `ranks` (compiler/io/export_ranks.hpp), `msccl`
 * (compiler/interop/export_msccl.hpp), `mscclpp` (compiler/interop/export_mscclpp.hpp), `dot`, `svg` and `html` (compiler/interop/export_svg.hpp).
 *
 * `output_formats` is the one list of them: to add a format, add a line there (name, file
 * extension, one-line description, writer); the `--format` checks, the help texts and the choice
 * of a format from `-o FILE.ext` all read it.
 */
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

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
    /// file of the topology relative to its directory (spec_written_at).
    std::string file;
};

/// One output format of a send table.
struct OutputFormat {
    std::string_view name;         ///< the `--format` value
    std::string_view extension;    ///< the file extension that selects it (".json")
    std::string_view description;  ///< for --help
    void (*write)(const SendTable&, const ExportOptions&, fmt::memory_buffer&, const Flush&);
};

/// Every format, in the order the help lists them.
std::span<const OutputFormat> output_formats();
/// The names of output_formats(), for CLI11's IsMember.
std::vector<std::string> output_format_names();
/// "json, csv, ranks, msccl, dot, svg or html".
std::string output_format_list();
/// The format whose extension `path` ends with, or null.
const OutputFormat* format_of_path(std::string_view path);

/// Writes `t` in `format` (a name of output_formats()). Throws InputError for an unknown format
/// and for tables the format cannot express; the writers check everything before their first byte.
void write_table_as(const SendTable& t, std::string_view format, const ExportOptions& options, fmt::memory_buffer& out,
                    const Flush& flush);

}  // namespace collsched
