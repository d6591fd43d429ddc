#include "compiler/export_formats.hpp"

#include "compiler/export_msccl.hpp"
#include "compiler/export_ranks.hpp"
#include "dsl/diagnostics.hpp"

namespace collsched {

void write_table_as(const SendTable& t, std::string_view format, const ExportOptions& options, fmt::memory_buffer& out,
                    const Flush& flush) {
    if (format == "json") return write_table_json(t, out, flush);
    if (format == "csv") return write_table_csv(t, out, flush);
    if (format == "ranks") return write_table_ranks(t, out, flush);
    if (format == "msccl") return write_table_msccl(t, options.msccl, out, flush);
    if (format == "dot") return write_table_dot(t, out, flush);
    if (format == "svg") return write_table_svg(t, options.timeline, out, flush);
    if (format == "html") return write_table_html(t, options.timeline, out, flush);
    throw InputError(fmt::format("unknown output format '{}' (expected json, csv, ranks, msccl, dot, svg or html)", format));
}

}  // namespace collsched
