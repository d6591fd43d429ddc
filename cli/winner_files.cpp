#include "cli/winner_files.hpp"

#include <optional>
#include <tuple>

#include <fmt/format.h>

#include "compiler/formats/export_formats.hpp"
#include "compiler/formats/export_nccl_graph.hpp"
#include "verifier/time/objective_report.hpp"

namespace collsched::tools {

std::pair<std::uint64_t, std::uint64_t> winning_range(const TimeObjective& r, std::size_t i) {
    const std::vector<std::size_t>& w = r.comparison.winner;
    std::size_t a = i, b = i;
    while (a > 0 && w[a - 1] == w[i]) --a;
    while (b + 1 < w.size() && w[b + 1] == w[i]) ++b;
    auto crossing = [&](std::size_t below) -> std::optional<double> {  // between grid points below and below + 1
        for (const Crossover& x : r.comparison.crossovers)
            if (x.lo == r.options.sizes[below] && x.searched()) return x.size;
        return std::nullopt;
    };
    std::uint64_t lo = 0, hi = ~std::uint64_t{0};
    if (a > 0) lo = static_cast<std::uint64_t>(crossing(a - 1).value_or(r.options.sizes[a] - 1)) + 1;
    if (b + 1 < w.size()) hi = static_cast<std::uint64_t>(crossing(b).value_or(r.options.sizes[b]));
    return {lo, hi};
}

std::vector<std::pair<std::string, std::string>> render_winners(const TimeObjective& r, const std::string& path, const std::string& format,
                                                                std::vector<std::string>* per_node) {
    std::vector<std::pair<std::string, std::string>> rendered;
    for (const WitnessFile& f : time_witness_files(r, path, true)) {
        const std::size_t i = f.sizes.front();
        ExportOptions o;
        const Protocol p = r.winner_protocol(i);
        if (p != Protocol::none) o.msccl.proto = o.mscclpp.proto = std::string(to_string(p));
        std::tie(o.mscclpp.min_message_size, o.mscclpp.max_message_size) = winning_range(r, i);
        o.mscclpp.chains_a_block = r.winner(i).mscclpp_chains_a_block;
        o.file = f.path;
        if (format == "nccl-graph") {  // one file every node reads, or one per node (docs/exports.md, "One file per node")
            const std::vector<std::string> xmls = nccl_graph_files_xml(*r.winner(i).table);
            for (std::size_t k = 0; k < xmls.size(); ++k) {
                rendered.emplace_back(xmls.size() == 1 ? f.path : nccl_graph_node_path(f.path, std::uint32_t(k)), xmls[k]);
                if (xmls.size() > 1 && per_node) per_node->push_back(rendered.back().first);
            }
            continue;
        }
        std::string text;
        fmt::memory_buffer buf;
        auto keep = [&text](fmt::memory_buffer& b) {
            text.append(b.data(), b.size());
            b.clear();
        };
        write_table_as(*r.winner(i).table, format, o, buf, keep);
        keep(buf);
        rendered.emplace_back(f.path, std::move(text));
    }
    return rendered;
}

}  // namespace collsched::tools
