/** \file
 * One entry point for every format a send table can be written in, so that `convert`,
 * `compile` and any later command accept the same `--format` names: `json` and `csv`
 * (compiler/table_io.hpp), `ranks` (compiler/export_ranks.hpp), `msccl`
 * (compiler/export_msccl.hpp), `dot`, `svg` and `html` (compiler/export_svg.hpp).
 */
#pragma once

#include <array>
#include <string_view>

#include "compiler/export_msccl.hpp"
#include "compiler/export_svg.hpp"
#include "compiler/send_table.hpp"
#include "compiler/table_io.hpp"

namespace collsched {

inline constexpr std::array<std::string_view, 7> table_formats = {"json", "csv", "ranks", "msccl", "dot", "svg", "html"};

struct ExportOptions {
    TimelineOptions timeline;  ///< svg and html
    MscclOptions msccl;        ///< msccl
};

/// Writes `t` in `format` (one of table_formats). Throws InputError for an unknown format and
/// for tables the format cannot express; the writers check everything before their first byte.
void write_table_as(const SendTable& t, std::string_view format, const ExportOptions& options, fmt::memory_buffer& out,
                    const Flush& flush);

}  // namespace collsched
