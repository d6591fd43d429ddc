#include "compiler/formats/export_formats.hpp"

#include "compiler/formats/export_nccl_graph.hpp"

#include <fmt/format.h>

#include "compiler/interop/export_msccl.hpp"
#include "compiler/io/export_ranks.hpp"
#include "compiler/io/table_printer.hpp"
#include "support/assert.hpp"
#include "support/error.hpp"

namespace collsched {

namespace {

constexpr OutputFormat formats[] = {
    {"json", ".json", "the table file, docs/formats.md",
     [](const SendTable& t, const ExportOptions& o, fmt::memory_buffer& out, const Flush& flush) { write_table_json(t, out, flush, o.file); }},
    {"csv", ".csv", "the table as CSV rows step,from,to,message",
     [](const SendTable& t, const ExportOptions& o, fmt::memory_buffer& out, const Flush& flush) { write_table_csv(t, out, flush, o.file); }},
    {"ranks", ".ranks.json", "per-rank sends and receives",
     [](const SendTable& t, const ExportOptions& o, fmt::memory_buffer& out, const Flush& flush) { write_table_ranks(t, out, flush, o.file); }},
    {"msccl", ".xml", "MSCCL-IR XML",
     [](const SendTable& t, const ExportOptions& o, fmt::memory_buffer& out, const Flush& flush) {
         write_table_msccl(t, o.msccl, out, flush);
     }},
    {"mscclpp", ".mscclpp.json", "an MSCCL++ execution plan, verified before it is written",
     [](const SendTable& t, const ExportOptions& o, fmt::memory_buffer& out, const Flush& flush) {
         write_table_mscclpp(t, o.mscclpp, out, flush);
     }},
    {"dot", ".dot", "the topology with capacities and traffic, for Graphviz",
     [](const SendTable& t, const ExportOptions&, fmt::memory_buffer& out, const Flush& flush) { write_table_dot(t, out, flush); }},
    {"svg", ".svg", "a timeline of link use",
     [](const SendTable& t, const ExportOptions& o, fmt::memory_buffer& out, const Flush& flush) {
         write_table_svg(t, o.timeline, out, flush);
     }},
    {"html", ".html", "the timeline with hover details",
     [](const SendTable& t, const ExportOptions& o, fmt::memory_buffer& out, const Flush& flush) {
         write_table_html(t, o.timeline, out, flush);
     }},
    {"dsl", ".sched", "the table as a schedule of hops",
     [](const SendTable& t, const ExportOptions& o, fmt::memory_buffer& out, const Flush& flush) { write_table_dsl(t, out, flush, o.file); }},
    {"nccl-graph", "",
     "an NCCL graph file (NCCL_GRAPH_FILE) of the table's rings, a channel per share of the data (a ring carrying k shares is k channels)",
     [](const SendTable& t, const ExportOptions&, fmt::memory_buffer& out, const Flush& flush) { write_table_nccl_graph(t, out, flush); }},
    {"chakra", "", "Chakra traces per rank for ASTRA-sim, -o DIR/PREFIX; --bytes per message", nullptr,
     [](const SendTable& t, const ExportOptions& o) { return table_to_chakra(t, {o.file, o.bytes}); }, "PREFIX.0.et, PREFIX.1.et, ..."},
};

}  // namespace

std::span<const OutputFormat> output_formats() { return formats; }

std::vector<std::string> output_format_names() {
    std::vector<std::string> names;
    for (const OutputFormat& f : formats) names.emplace_back(f.name);
    return names;
}

std::string output_format_list() {
    std::string out;
    for (std::size_t i = 0; i < std::size(formats); ++i)
        out += fmt::format("{}{}", i == 0 ? "" : i + 1 == std::size(formats) ? " or " : ", ", formats[i].name);
    return out;
}

std::string output_format_descriptions() {
    std::string out;
    for (std::size_t i = 0; i < std::size(formats); ++i)
        out += fmt::format("{}{} ({})", i == 0 ? "" : ", ", formats[i].name, formats[i].description);
    return out;
}

const OutputFormat* format_named(std::string_view name) {
    for (const OutputFormat& f : formats)
        if (f.name == name) return &f;
    return nullptr;
}

const OutputFormat* format_of_path(std::string_view path) {
    const OutputFormat* best = nullptr;  // the longest matching extension: x.ranks.json is ranks
    for (const OutputFormat& f : formats)
        if (!f.extension.empty() && path.size() > f.extension.size() && path.ends_with(f.extension) &&
            (!best || f.extension.size() > best->extension.size()))
            best = &f;
    return best;
}

void write_table_as(const SendTable& t, std::string_view format, const ExportOptions& options, fmt::memory_buffer& out,
                    const Flush& flush) {
    const OutputFormat* f = format_named(format);
    if (!f) throw InputError(fmt::format("unknown output format '{}' (expected {})", format, output_format_list()));
    if (!f->write) throw InputError(fmt::format("--format {} writes several files ({}), not one text", f->name, f->files));
    f->write(t, options, out, flush);
}

}  // namespace collsched
