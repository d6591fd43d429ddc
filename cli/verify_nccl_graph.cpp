// `collsched verify GRAPH.xml --topology M`: an NCCL graph file on a machine (cli/verify_nccl_graph.hpp).
#include "cli/verify_nccl_graph.hpp"

#include <filesystem>
#include <fstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "compiler/formats/nccl_graph_read.hpp"
#include "compiler/io/table_io.hpp"
#include "support/error.hpp"
#include "support/units.hpp"
#include "cli/output.hpp"
#include "verifier/constructions/nccl/nccl_graph_check.hpp"

namespace collsched::tools {

namespace {

/// NCCL's rings as a table are built only up to this many transfers (verifier/constructions/nccl caps its
/// own tables at about 4 million).
constexpr std::uint64_t max_time_transfers = 4'000'000;

Collective ring_collective(const std::string& name, const Topology& topo) {
    const Collective c = Collective::parse(name.empty() ? "allreduce" : name, topo, false);
    if (c.kind != CollectiveKind::allreduce && c.kind != CollectiveKind::allgather && c.kind != CollectiveKind::reduce_scatter)
        throw InputError(fmt::format("--collective {}: NCCL runs its rings for allreduce, allgather and reduce_scatter", name));
    return c;
}

std::string status(const nccl::GraphCheck& g, int graph) {
    const bool given = graph == 0 ? bool(g.ring_graph) : bool(g.tree_graph);
    if (!given) return "not given";
    std::size_t n = 0;
    for (const nccl::GraphFinding& f : g.findings) n += f.graph == graph;
    return n == 0 ? "holds" : fmt::format("violated ({} finding{})", n, n == 1 ? "" : "s");
}

std::string channel_name(const Topology& t, ChannelId c) {
    const Channel& ch = t.channel(c);
    return t.node_name(ch.from) + "->" + t.node_name(ch.to);
}

/// The time of NCCL's ring `kind` on the file's rings, or why there is none.
struct Timed {
    std::optional<SendTable> table;
    std::string why;
};

Timed ring_time(const nccl::GraphCheck& g, std::shared_ptr<const Topology> topo, CollectiveKind kind) {
    if (!g.holds()) return {std::nullopt, "not computed (the file does not hold)"};
    const Model model = topo->default_model();
    if (g.rings.empty() && kind == CollectiveKind::allreduce && !g.trees.empty() && model.timing == Timing::hop)
        return {nccl::nccl_graph_tree_table(std::move(topo), model, g, 4), ""};  // NCCL's own tree's 4 pieces a tree (nccl.hpp)
    if (g.rings.empty()) return {std::nullopt, "none (the file gives no ring graph)"};
    if (model.timing != Timing::hop) return {std::nullopt, fmt::format("none ({} is timed as wormhole rounds; NCCL's rings are hop tables)", topo->spec())};
    const std::uint64_t n = nccl::nccl_graph_transfers(g, kind, topo->processors());
    if (n > max_time_transfers)
        return {std::nullopt, fmt::format("not computed (NCCL's rings would be a table of about {} transfers, above {})", n, max_time_transfers)};
    return {nccl::nccl_graph_table(std::move(topo), model, kind, g), ""};
}

std::string load_text(const nccl::GraphCheck& g, const Topology& t) {
    if (g.rings.empty()) return "";
    const nccl::GraphLoad& l = g.load;
    std::string s = fmt::format("load of the {} ring{} NCCL runs: the busiest channel {} carries {}", g.rings.size(), g.rings.size() == 1 ? "" : "s",
                                l.busiest_channel ? channel_name(t, *l.busiest_channel) : "-", l.channel_rings);
    if (l.busiest_group) s += fmt::format(", the busiest link group {} {}", t.groups()[*l.busiest_group].name, l.group_rings);
    s += fmt::format("; a ring gets {} inside a box", support::format_bandwidth(l.intra_Bps));
    if (g.boxes > 1) s += fmt::format(", {} between boxes", support::format_bandwidth(l.inter_Bps));
    s += fmt::format(" (the file says speedintra {:g}", g.ring_graph->speedintra);
    if (g.boxes > 1) s += fmt::format(", speedinter {:g}", g.ring_graph->speedinter);
    return s + " GB/s)\n";
}

std::string report_text(const nccl::GraphCheck& g, const NcclGraphArgs& a, const Topology& t, const std::string& verdict) {
    const std::string files = g.files.size() == 1 ? fmt::format("file {}", a.input)
                                                  : fmt::format("files {} to {}, one per node", g.files.front(), g.files.back());
    std::string s = fmt::format("verdict: {} (NCCL graph {} on {}: {} box{} of {} GPU{}{})\n", verdict, files, t.spec(), g.boxes,
                                g.boxes == 1 ? "" : "es", g.gpus_per_box, g.gpus_per_box == 1 ? "" : "s",
                                g.ring_graph ? fmt::format(", {} ring channel{} run", g.channels_run, g.channels_run == 1 ? "" : "s") : "");
    s += fmt::format("  rings  {}\n  trees  {}\n", status(g, 0), status(g, 1));
    if (!g.findings.empty()) {
        s += "counterexamples:\n";
        for (const nccl::GraphFinding& f : g.findings) s += fmt::format("  {}:{}:{}: {}\n", f.file, f.at.line, f.at.col, f.what);
    }
    s += load_text(g, t);
    if (!g.notes.empty()) {
        s += "notes:\n";
        for (const std::string& n : g.notes) s += "  " + n + "\n";
    }
    return s;
}

nlohmann::ordered_json report_json(const nccl::GraphCheck& g, const Topology& t, const std::string& verdict) {
    nlohmann::ordered_json j;
    j["verdict"] = verdict;
    j["format"] = "nccl-graph";
    j["topology"] = t.spec();
    j["files"] = g.files;
    j["boxes"] = g.boxes;
    j["gpus_per_box"] = g.gpus_per_box;
    j["channels_run"] = g.channels_run;
    j["properties"] = {{"rings", status(g, 0).substr(0, status(g, 0).find(' '))}, {"trees", status(g, 1).substr(0, status(g, 1).find(' '))}};
    nlohmann::ordered_json list = nlohmann::ordered_json::array();
    for (const nccl::GraphFinding& f : g.findings)
        list.push_back({{"file", f.file}, {"graph", f.graph}, {"line", f.at.line}, {"column", f.at.col}, {"message", f.what}});
    j["violations"] = list;
    j["notes"] = g.notes;
    if (!g.rings.empty()) {
        const nccl::GraphLoad& l = g.load;
        j["load"] = {{"busiest_channel", l.busiest_channel ? channel_name(t, *l.busiest_channel) : ""},
                     {"channel_rings", l.channel_rings},
                     {"busiest_group", l.busiest_group ? t.groups()[*l.busiest_group].name : ""},
                     {"group_rings", l.group_rings},
                     {"ring_intra_Bps", l.intra_Bps},
                     {"ring_inter_Bps", l.inter_Bps}};
    }
    return j;
}

}  // namespace

namespace {

bool graph_file_at(const std::string& path) {
    if (path == "-" || !std::filesystem::is_regular_file(path)) return false;
    std::ifstream in(path, std::ios::binary);
    std::string head(4096, '\0');
    in.read(head.data(), std::streamsize(head.size()));
    head.resize(std::size_t(in.gcount()));
    return looks_like_nccl_graph(head);
}

/// The files `input` names: itself, or where it is absent the set FILE.node0.xml, FILE.node1.xml, ... (docs/exports.md,
/// "One file per node"), which must hold one file per box of the machine.
std::vector<std::string> graph_set(const std::string& input, std::uint32_t boxes) {
    const bool one = std::filesystem::exists(input), set = input != "-" && std::filesystem::exists(nccl_graph_node_path(input, 0));
    if (one && set)
        throw InputError(fmt::format("{}: both it and {} exist: one file every node reads, or one per node; remove the one the nodes do "
                                     "not load",
                                     input, nccl_graph_node_path(input, 0)));
    if (!set) return {input};
    std::vector<std::string> files;
    while (std::filesystem::exists(nccl_graph_node_path(input, std::uint32_t(files.size()))))
        files.push_back(nccl_graph_node_path(input, std::uint32_t(files.size())));
    if (files.size() != boxes)
        throw InputError(fmt::format("{}: {} file{} ({} to {}) for a machine of {} boxes: NCCL's nodes load one each ({} {})", input,
                                     files.size(), files.size() == 1 ? "" : "s", files.front(), files.back(), boxes,
                                     files.size() < boxes ? "missing" : "one too many:",
                                     nccl_graph_node_path(input, std::uint32_t(std::min<std::size_t>(files.size(), boxes)))));
    return files;
}

}  // namespace

bool is_nccl_graph_file(const std::string& path) {
    return graph_file_at(path) || (path != "-" && !std::filesystem::exists(path) && graph_file_at(nccl_graph_node_path(path, 0)));
}

std::string nccl_algorithm_graph_xml(std::string_view algorithm, const Topology& topo, const std::string& name) {
    const std::string xml = nccl_graphs_xml(nccl::nccl_algorithm_graphs(topo, algorithm));
    const nccl::GraphCheck g = nccl::check_nccl_graph(read_nccl_graph(xml, name), name, topo);
    if (!g.holds())
        throw InputError(fmt::format("nccl:{} on {}: the graph file of NCCL's channels does not hold on the machine ({}:{}:{}: {}); "
                                     "nothing written",
                                     algorithm, topo.spec(), name, g.findings.front().at.line, g.findings.front().at.col, g.findings.front().what));
    return xml;
}

std::vector<std::string> nccl_algorithm_graph_xmls(std::string_view algorithm, const Topology& topo, const std::string& name) {
    const std::vector<std::vector<NcclGraphEntry>> nodes = nccl::nccl_algorithm_node_graphs(topo, algorithm);
    if (nodes.size() == 1) return {nccl_algorithm_graph_xml(algorithm, topo, name)};
    std::vector<std::string> xmls;
    std::vector<NcclGraphFile> files;
    std::vector<nccl::NcclGraphSource> set;
    for (std::size_t k = 0; k < nodes.size(); ++k) {
        xmls.push_back(nccl_graphs_xml(nodes[k]));
        files.push_back(read_nccl_graph(xmls.back(), nccl_graph_node_path(name, std::uint32_t(k))));
    }
    for (std::size_t k = 0; k < nodes.size(); ++k) set.push_back({&files[k], nccl_graph_node_path(name, std::uint32_t(k))});
    const nccl::GraphCheck g = nccl::check_nccl_graphs(set, topo);
    if (!g.holds())
        throw InputError(fmt::format("nccl:{} on {}: the graph files of NCCL's channels do not hold on the machine ({}:{}:{}: {}); nothing "
                                     "written",
                                     algorithm, topo.spec(), g.findings.front().file, g.findings.front().at.line, g.findings.front().at.col,
                                     g.findings.front().what));
    return xmls;
}

void write_nccl_algorithm_graph(std::string_view algorithm, const std::string& topology, const std::string& output) {
    if (topology.empty())
        throw InputError(fmt::format("nccl:{}: NCCL's algorithms are generated for a machine; give it with --topology", algorithm));
    std::shared_ptr<const Topology> topo = Topology::parse(topology);
    const std::vector<std::string> xmls = nccl_algorithm_graph_xmls(algorithm, *topo, output == "-" ? "<output>" : output);
    if (xmls.size() > 1 && output == "-")
        throw InputError(fmt::format("nccl:{} on {}: the boxes number their nets differently and each node loads its own file: give -o "
                                     "FILE.xml (FILE.node0.xml to FILE.node{}.xml are written)",
                                     algorithm, topo->spec(), xmls.size() - 1));
    for (std::size_t k = 0; k < xmls.size(); ++k)
        write_output(xmls.size() == 1 ? output : nccl_graph_node_path(output, std::uint32_t(k)), [&](const Flush& flush, fmt::memory_buffer& buf) {
            buf.append(xmls[k]);
            flush(buf);
        });
}

int verify_nccl_graph(const NcclGraphArgs& a, const Context& ctx) {
    if (a.topology.empty())
        throw InputError(fmt::format("{}: an NCCL graph file names no machine; give it with --topology graph:MACHINE.json", a.input));
    std::shared_ptr<const Topology> topo = Topology::parse(a.topology);
    const std::vector<std::string> names = graph_set(a.input, nccl_graph_boxes(*topo).count);
    std::vector<NcclGraphFile> files;
    for (const std::string& n : names) files.push_back(read_nccl_graph(read_input_text(n, "NCCL graph file"), n));
    std::vector<nccl::NcclGraphSource> set;
    for (std::size_t k = 0; k < names.size(); ++k) set.push_back({&files[k], names[k]});
    const Collective coll = ring_collective(a.collective, *topo);
    const CollectiveKind kind = coll.kind;
    const nccl::GraphCheck g = nccl::check_nccl_graphs(set, *topo);
    const std::string verdict = g.holds() ? "holds" : "violated";
    Timed timed;
    if (!a.ab.sizes.empty()) timed = ring_time(g, topo, kind);
    std::string out;
    if (a.json) {
        nlohmann::ordered_json j = report_json(g, *topo, verdict);
        j["collective"] = coll.to_string();
        if (timed.table) add_time_json(j, *timed.table, a.ab);
        else if (!a.ab.sizes.empty()) j["time"] = {{"none", timed.why}};
        out = j.dump() + "\n";
    } else {
        out = report_text(g, a, *topo, verdict);
        if (timed.table)
            out += (g.rings.empty() ? fmt::format("NCCL's tree allreduce on the file's {} tree channel{} ({} chunks, 4 a tree; "
                                                  "verifier/constructions/nccl tree_table_of)\n",
                                                  g.trees.size(), g.trees.size() == 1 ? "" : "s", timed.table->collective.chunks)
                                    : fmt::format("NCCL's ring {} on the file's {} ring{} ({} chunk{}, one per channel and position; "
                                                  "verifier/constructions/nccl ring_table)\n",
                                                  coll.to_string(), g.rings.size(), g.rings.size() == 1 ? "" : "s",
                                                  timed.table->collective.chunks, timed.table->collective.chunks == 1 ? "" : "s")) +
                   time_text(*timed.table, a.ab);
        else if (!a.ab.sizes.empty())
            out += "predicted time: " + timed.why + "\n";
    }
    ctx.print(out);
    return g.holds() ? 0 : 1;
}

}  // namespace collsched::tools
