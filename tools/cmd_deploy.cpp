// `collsched deploy --topology M --sizes 1K..16G [--collectives ...] [--executor nccl] -o DIR`: one
// folder with what stock NCCL reads at start-up for the machine (the tuner file of `collsched tune`,
// NCCL's own rings and trees as a graph file where they win; with --mscclpp, MSCCL++ allreduce plans where
// collsched's tables win on that executor), and a README.md generated for it.
// docs/gpu-guide.md, "Deploy".
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <system_error>
#include <thread>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "compiler/formats/nccl_graph_read.hpp"
#include "support/budget.hpp"
#include "support/error.hpp"
#include "support/units.hpp"
#include "tools/commands.hpp"
#include "cli/options.hpp"
#include "cli/size_options.hpp"
#include "cli/tune_args.hpp"
#include "cli/verify_nccl_graph.hpp"
#include "verifier/constructions/nccl/nccl_graph_check.hpp"
#include "cli/winner_files.hpp"
#include "verifier/synth/problem/instance.hpp"
#include "verifier/time/nccl_tuner.hpp"
#include "verifier/time/objective.hpp"
#include "verifier/time/objective_report.hpp"

namespace collsched::tools {

namespace {

namespace fs = std::filesystem;

struct DeployArgs {
    std::string topology, collectives, output;
    std::vector<double> sizes;
    std::optional<ExecutorModel> executor;
    double timeout = 0;
    bool force = false;
    /// --mscclpp: MSCCL++ allreduce plans where collsched's tables win on the mscclpp executor, chosen on this grid
    bool mscclpp = false;
    std::vector<double> mscclpp_sizes;
};

/// The MSCCL++ plans of the folder: allreduce's winners on the mscclpp executor at each size of the grid
/// (`optimize --sizes G --executor mscclpp --format mscclpp`), one plan per run of sizes a table of
/// collsched's wins, its min and max_message_size the sizes it wins at; a size stock NCCL wins gets no
/// plan and a line saying which of NCCL's algorithms wins there.
struct MscclppPlans {
    std::vector<std::pair<std::string, std::string>> files;  ///< name in the folder (mscclpp/...), text
    std::vector<std::string> lines;                          ///< the README's, one per size
};

MscclppPlans mscclpp_plans(const std::shared_ptr<const Topology>& topo, const DeployArgs& a, const RunLimits& limits) {
    const SynthInstance in{topo, topo->default_model(), Collective::parse("allreduce", *topo)};
    TimeObjectiveOptions t;
    t.sizes = a.mscclpp_sizes;
    t.executor = builtin_executor(ExecutorKind::mscclpp);
    t.deadline = limits.deadline.when();
    t.timeout = a.timeout > 0 ? a.timeout : 60;
    t.jobs = std::max(1u, std::thread::hardware_concurrency());
    t.memory = limits.memory;
    const TimeObjective r = time_objective(in, t);
    MscclppPlans plans;
    if (r.candidates.empty()) return plans;
    for (auto& [path, text] : render_winners(r, "mscclpp/allreduce.json", "mscclpp")) plans.files.emplace_back(path, std::move(text));
    for (std::size_t i = 0; i < t.sizes.size(); ++i) {
        const std::string size = support::format_bytes(t.sizes[i]), name = r.winner(i).name;
        const std::string seconds = support::format_seconds(r.comparison.seconds[r.comparison.winner[i]][i]);
        const std::string file = time_witness_path(r, "mscclpp/allreduce.json", i, true);  // empty: stock NCCL wins
        if (file.empty()) {
            plans.lines.push_back(fmt::format("| {} | {} as stock NCCL runs it | {} | none: run NCCL as it is |", size, name, seconds));
            continue;
        }
        const auto [lo, hi] = winning_range(r, i);
        plans.lines.push_back(fmt::format("| {} | {} | {} | `{}` ({}..{} bytes) |", size, name, seconds, file, lo, hi));
    }
    return plans;
}

/// The NCCL source the readers were checked against (docs/exports.md).
constexpr const char* nccl_version = "NCCL 2.30.7 (NVIDIA/nccl 5067397c)";

/// The folder's files, written into a temporary folder beside DIR and renamed onto it only when
/// all of them are written and read back; any failure removes the temporary folder.
class Staging {
public:
    explicit Staging(const fs::path& dir) : dir_(dir) {
        tmp_ = dir.parent_path() / fmt::format(".{}.deploy.{}", dir.filename().string(), ::getpid());
        std::error_code ec;
        fs::remove_all(tmp_, ec);
        if (fs::create_directories(tmp_, ec); ec) {
            tmp_.clear();
            throw InputError(fmt::format("{}: cannot make a folder beside it: {}", dir.string(), ec.message()));
        }
    }
    ~Staging() {
        std::error_code ec;
        if (!tmp_.empty()) fs::remove_all(tmp_, ec);
    }
    void write(const std::string& name, const std::string& text) {
        std::error_code ec;
        fs::create_directories((tmp_ / name).parent_path(), ec);
        std::ofstream f(tmp_ / name, std::ios::binary);
        f << text;
        if (!f.flush()) throw InputError(fmt::format("{}: cannot write {}", dir_.string(), name));
    }
    std::string read(const std::string& name) const {
        std::ifstream f(tmp_ / name, std::ios::binary);
        std::stringstream text;
        text << f.rdbuf();
        return text.str();
    }
    std::string path(const std::string& name) const { return (tmp_ / name).string(); }
    void publish() {
        std::error_code ec;
        fs::remove_all(dir_, ec);
        fs::rename(tmp_, dir_, ec);
        if (ec) throw InputError(fmt::format("{}: cannot rename {} onto it: {}", dir_.string(), tmp_.string(), ec.message()));
        tmp_.clear();
    }

private:
    fs::path dir_, tmp_;
};

/// DIR must be absent or an empty folder, unless --force (then a folder is replaced, never a file).
void check_target(const fs::path& dir, bool force) {
    std::error_code ec;
    if (!fs::exists(dir, ec)) return;
    if (!fs::is_directory(dir, ec)) throw InputError(fmt::format("{}: exists and is not a folder; deploy writes a folder", dir.string()));
    if (!fs::is_empty(dir, ec) && !force)
        throw InputError(fmt::format("{}: the folder exists and is not empty; --force replaces it, or name another with -o", dir.string()));
}

/// The tuner file read back as plugin.c reads it (8 comma-separated fields a line, # comments):
/// exactly the ranges with a line, in order. A difference is a bug in collsched.
void check_tuner_file(const std::string& text, const TunerConfig& cfg) {
    std::vector<std::string> want, have;
    for (const TunerCollective& c : cfg.collectives)
        for (const TunerRange& r : c.ranges)
            if (r.line)
                want.push_back(fmt::format("{},{},{},{},{},{},{},{}", tuner_collective_name(c.kind), r.min_bytes, r.max_bytes, r.line->algorithm,
                                           tuner_protocol_name(r.line->protocol), r.line->channels, cfg.nodes, cfg.ranks));
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);)
        if (!line.empty() && line[0] != '#') {
            if (std::count(line.begin(), line.end(), ',') != 7)
                throw InputError(fmt::format("nccl_tuner.conf: line \"{}\" has not the 8 fields plugin.c reads (a bug in collsched)", line));
            have.push_back(line);
        }
    if (have != want)
        throw InputError(fmt::format("nccl_tuner.conf reads back as {} lines, not the {} ranges chosen (a bug in collsched)", have.size(), want.size()));
}

/// The NCCL algorithms with a graph (ring: graph 0, tree: graph 1) that a line of the file picks.
std::string winning_graphs(const TunerConfig& cfg) {
    std::set<std::string_view> won;
    for (const TunerCollective& c : cfg.collectives)
        for (const TunerRange& r : c.ranges)
            if (r.line && (r.line->algorithm == "ring" || r.line->algorithm == "tree")) won.insert(r.line->algorithm);
    return won.size() == 2 ? "*" : won.empty() ? "" : std::string(*won.begin());
}

/// The folder's graph files: NCCL's own graphs the tuner file picks, in one file every node reads (nccl_graphs.xml). Where
/// the boxes number their nets differently (a NIC down) NCCL's own rings, net c in every node, cross rails and no graph file
/// holds them: NCCL searches them itself, as the tuner file timed them (search.cc:1111-1121 searches a graph the file
/// lacks), and the trees, kept on rails by each node's own net ids, go one file per node (nccl_graphs.node0.xml, ...;
/// docs/exports.md, "One file per node").
struct GraphFiles {
    std::string algorithms;                                  ///< written: "ring", "tree", "*" (both) or ""
    bool rings_searched = false;                             ///< the tuner file picks rings that no file holds
    std::string why_searched;                                ///< why no file holds them
    std::vector<std::pair<std::string, std::string>> files;  ///< name in the folder, text
    bool per_node() const { return files.size() > 1; }
};

GraphFiles graph_files(const std::string& won, const Topology& topo, const fs::path& dir) {
    GraphFiles g;
    g.algorithms = won;
    // rings no graph file holds (boxes that number their nets differently; a NIC that only sends, which NCCL's ring of its
    // rail enters a box by): NCCL searches them itself
    if (!won.empty() && won != "tree") try {
            nccl_algorithm_graph_xmls("ring", topo, (dir / "nccl_graphs.xml").string());
        } catch (const InputError& e) {
            g.rings_searched = true, g.why_searched = e.what();
            if (const std::size_t at = g.why_searched.rfind("; nothing written"); at != std::string::npos) g.why_searched.erase(at);
            g.algorithms = won == "*" ? "tree" : "";
        }
    if (g.algorithms.empty()) return g;
    const std::vector<std::string> xmls = nccl_algorithm_graph_xmls(g.algorithms, topo, (dir / "nccl_graphs.xml").string());
    for (std::size_t k = 0; k < xmls.size(); ++k)
        g.files.emplace_back(xmls.size() == 1 ? "nccl_graphs.xml" : nccl_graph_node_path("nccl_graphs.xml", std::uint32_t(k)), xmls[k]);
    return g;
}

/// The README's table of predicted times: per collective and size, the fastest and NCCL's own pick.
std::string readme_times(const TunerConfig& cfg) {
    std::string out = "| collective | size | fastest (predicted) | time | NCCL's own pick | its time | the file says |\n|---|---|---|---|---|---|---|\n";
    auto choice = [](const TunerChoice& c) { return fmt::format("{} {} {}", c.algorithm, tuner_protocol_name(c.protocol), c.channels); };
    for (const TunerCollective& c : cfg.collectives)
        for (const TunerPoint& p : c.points)
            out += fmt::format("| {} | {} | {} | {} | {} | {} | {} |\n", tuner_collective_name(c.kind), support::format_bytes(p.size), choice(p.best),
                               support::format_seconds(p.best_seconds), p.nccl ? choice(*p.nccl) : "-", p.nccl_seconds > 0 ? support::format_seconds(p.nccl_seconds) : "-",
                               p.line ? fmt::format("{} ({:.2f}x)", choice(p.best), p.gain()) : "nothing (a tie)");
    return out;
}

/// Where the boxes number their NICs differently (a NIC down, a box with fewer NICs: NCCL numbers a node's nets in PCI
/// order), how a launcher gives each node its own graph file (docs/exports.md, "One file per node"); else "".
std::string per_node_text(const Topology& topo, const std::string& dir) {
    const NcclBoxes b = nccl_graph_boxes(topo);
    std::uint32_t box = 0;
    for (std::uint32_t k = 1; k < b.count && !box; ++k)
        for (std::uint32_t i = 0; i < b.per_box && !box; ++i)
            if (b.nic[idx(b.members[k][i])] != b.nic[idx(b.members[0][i])]) box = k;
    if (!box) return "";
    return fmt::format(
        "\n## One graph file per node\n\nBox 0 and box {box} of this machine number their NICs differently ({n0} and {nk} NICs; NCCL "
        "numbers a node's nets in PCI order), so one graph file read by every node cannot keep a ring on one rail. "
        "`collsched optimize --topology {machine} --collective allgather --sizes 1G --executor nccl --format nccl-graph -o "
        "{dir}/rings.xml` writes the fastest rings NCCL runs, where they are one file per node, as {dir}/rings.node0.xml to "
        "rings.node{last}.xml (`collsched verify {dir}/rings.xml --topology {machine}` checks the set); NCCL reads "
        "NCCL_GRAPH_FILE per process, so a launcher gives node k (ranks {g} k to {g} k + {g1}) its own:\n\n```sh\n"
        "mpirun -np {ranks} sh -c 'NCCL_GRAPH_FILE={dir}/rings.node$((OMPI_COMM_WORLD_RANK / {g})).xml exec ./build/all_gather_perf -b 1K "
        "-e 16G -f 2 -g 1'\n```\n\n",
        fmt::arg("box", box), fmt::arg("n0", b.nics[0].size()), fmt::arg("nk", b.nics[box].size()), fmt::arg("machine", topo.spec()),
        fmt::arg("dir", dir), fmt::arg("last", b.count - 1), fmt::arg("g", b.per_box), fmt::arg("g1", b.per_box - 1),
        fmt::arg("ranks", topo.processors()));
}

std::string readme(const std::string& dir, const TunerConfig& cfg, const GraphFiles& gf, const MscclppPlans& plans, bool asked,
                   const std::string& per_node) {
    const std::string& graphs = gf.algorithms;
    const std::uint32_t G = cfg.nodes > 0 ? cfg.ranks / cfg.nodes : 1;
    std::string out = fmt::format(
        "# NCCL configuration for {machine}\n\n"
        "Written by `collsched deploy --topology {machine} -o {dir}` ({nodes} nodes, {ranks} ranks). The files were checked against "
        "the readers of {version}: the tuner file is the CSV of NCCL's example tuner plugin (plugins/tuner/example/plugin.c), the graph "
        "file what NCCL_GRAPH_FILE reads (src/graph/search.cc, ncclTopoCompute).\n\n"
        "## Files\n\n"
        "- `nccl_tuner.conf`: per collective and size range, the algorithm, protocol and channels the executor model ({executor}) predicts "
        "fastest, where it beats NCCL's own pick by more than the model's error ({error:.0f} %); elsewhere no line, and NCCL's own choice "
        "stays. Set `NCCL_TUNER_PLUGIN=/path/to/libnccl-tuner-example.so` (built by `make` in NCCL's plugins/tuner/example) and "
        "`NCCL_TUNER_CONFIG_FILE={dir}/nccl_tuner.conf`.\n",
        fmt::arg("machine", cfg.machine), fmt::arg("dir", dir), fmt::arg("nodes", cfg.nodes), fmt::arg("ranks", cfg.ranks),
        fmt::arg("version", nccl_version), fmt::arg("executor", cfg.executor), fmt::arg("error", cfg.error * 100));
    if (gf.per_node())
        out += fmt::format("- `nccl_graphs.node0.xml` to `nccl_graphs.node{}.xml`: NCCL's trees (graph 1), one file per node (`collsched convert "
                           "nccl:tree --topology {} -o nccl_graphs.xml`): the boxes number their NICs differently, so each node names the rail "
                           "of its trees' channels by its own net ids (docs/exports.md, \"One file per node\"). Node k (ranks {} k to {} k + {}) "
                           "sets `NCCL_GRAPH_FILE={}/nccl_graphs.nodek.xml` (the Run line below).\n",
                           gf.files.size() - 1, cfg.machine, G, G, G - 1, dir);
    else if (!graphs.empty())
        out += fmt::format("- `nccl_graphs.xml`: NCCL's own {} for this machine (`collsched convert nccl:{} --topology {} --format nccl-graph`), "
                           "as its search finds them, so every run uses the channels the times below assume. Set "
                           "`NCCL_GRAPH_FILE={}/nccl_graphs.xml`.\n",
                           graphs == "*" ? "rings (graph 0) and trees (graph 1)" : graphs == "ring" ? "rings (graph 0)" : "trees (graph 1)", graphs,
                           cfg.machine, dir);
    else if (!gf.rings_searched)
        out += "- No graph file: no line of the tuner file picks NCCL's rings or trees.\n";
    if (gf.rings_searched)
        out += fmt::format("- NCCL's rings: no graph file. No graph file holds NCCL's own rings here ({}), so NCCL searches them itself (a graph the "
                           "file lacks is searched, src/graph/search.cc:932, :1121), as the predicted times assume.\n",
                           gf.why_searched);
    if (!asked)
        out += "- No MSCCL++ plans: `deploy` without `--mscclpp` writes NCCL's files only (`MSCCLPP_EXECUTION_PLAN_DIR` is not needed); "
               "`collsched deploy --mscclpp` adds allreduce plans where collsched's tables win on the MSCCL++ executor.\n\n";
    else
        out += fmt::format("- `mscclpp/`: {} MSCCL++ execution plan{} of allreduce, where a table of collsched's is predicted fastest on the "
                           "MSCCL++ executor (`collsched optimize --executor mscclpp --format mscclpp`), each with the sizes it wins at as its "
                           "min_message_size and max_message_size; every plan was checked by collsched (the executor's rules, deadlock, races, "
                           "its result) before it was written. Set `MSCCLPP_EXECUTION_PLAN_DIR={}/mscclpp` for MSCCL++'s executor to select "
                           "them by size. Per size:\n\n| size | fastest on MSCCL++ | time | plan |\n|---|---|---|---|\n{}\n\n",
                           plans.files.size(), plans.files.size() == 1 ? "" : "s", dir, fmt::join(plans.lines, "\n"));
    // one file every node reads, or each rank its node's (node k is ranks G k to G k + G - 1)
    const std::string run = gf.per_node() ? fmt::format("mpirun -np {} sh -c 'NCCL_GRAPH_FILE={}/nccl_graphs.node$((OMPI_COMM_WORLD_RANK / {})).xml "
                                                        "exec ./build/all_reduce_perf -b 1K -e 16G -f 2 -g 1'",
                                                        cfg.ranks, dir, G)
                                          : fmt::format("mpirun -np {} ./build/all_reduce_perf -b 1K -e 16G -f 2 -g 1", cfg.ranks);
    out += fmt::format(
        "## Run\n\n```sh\nexport NCCL_TUNER_PLUGIN=/path/to/libnccl-tuner-example.so\nexport NCCL_TUNER_CONFIG_FILE={dir}/nccl_tuner.conf\n{graph}"
        "export NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,ENV,TUNING,GRAPH\n{run}    # nccl-tests: the bus bandwidth per size\n```\n\n",
        fmt::arg("dir", dir), fmt::arg("run", run),
        fmt::arg("graph", graphs.empty() || gf.per_node() ? "" : fmt::format("export NCCL_GRAPH_FILE={}/nccl_graphs.xml\n", dir)));
    out += "## Confirm that NCCL read each file\n\nWith `NCCL_DEBUG=INFO` and `NCCL_DEBUG_SUBSYS` holding TUNING and GRAPH (the default is "
           "INIT,BOOTSTRAP,ENV), rank 0 prints:\n\n"
           "- `NCCL_TUNER_PLUGIN set by environment to ...` and `Successfully loaded external tuner plugin ...` (src/plugin/tuner.cc);\n"
           "- `TUNER/ExamplePlugin: Loaded N tuning configurations from .../nccl_tuner.conf`, N the lines of the file, and per call it "
           "changes `TUNER/ExamplePlugin: Applied config for collType=...` (plugin.c; `Config file ... not found, using defaults` means "
           "the path is wrong);\n";
    if (gf.per_node())
        out += "- `NCCL_GRAPH_FILE set by environment to .../nccl_graphs.nodeK.xml` (K the node) and `Search 1 : C channels loaded from XML "
               "graph` for the trees; the file has no graph 0, so NCCL searches the rings itself (src/graph/search.cc:932, :1121).\n";
    else if (!graphs.empty())
        out += "- `NCCL_GRAPH_FILE set by environment to .../nccl_graphs.xml` and `Search 0 : C channels loaded from XML graph` (and "
               "`Search 1 : ...` for the trees) (src/graph/search.cc).\n";
    out += fmt::format("\n## Predicted times ({}, {} nodes, {} ranks)\n\n", cfg.executor, cfg.nodes, cfg.ranks) + readme_times(cfg);
    out += fmt::format("\n## Check\n\n```sh\n{}collsched tune --topology {} -o - | diff - {}/nccl_tuner.conf   # the same file (with the same --sizes, --collectives, --executor)\n```\n\n",
                       graphs.empty() ? "" : fmt::format("collsched verify {}/nccl_graphs.xml --topology {}\n", dir, cfg.machine), cfg.machine, dir);
    if (!per_node.empty()) out += per_node;
    out += "The graph file names GPUs by their index in a box and NICs by their index: NCCL matches them to the machine it finds, so "
           "the GPU-to-NIC order of the real machine must be the machine file's (`nvidia-smi topo -m` shows which NIC is next to which GPU; "
           "`NCCL_IB_HCA` lists the NICs in that order).\n";
    return out;
}

void run_deploy(const DeployArgs& a, Context& ctx) {
    const fs::path dir = fs::absolute(a.output).lexically_normal();
    check_target(dir, a.force);
    const RunLimits limits{Deadline::after(a.timeout), MemoryBudget::standard()};
    std::shared_ptr<const Topology> topo = read_machine(a.topology);
    TunerOptions o;
    if (!a.collectives.empty()) o.collectives = parse_collectives(a.collectives);
    o.sizes = a.sizes;
    o.executor = a.executor ? *a.executor : builtin_executor(ExecutorKind::nccl);
    o.limits = limits;
    TunerConfig cfg;
    try {
        cfg = nccl_tuner_config(topo, o);
    } catch (const LimitReached& e) {
        throw LimitReached(fmt::format("{}: nothing written (stopped while timing NCCL's algorithms for the tuner file)", e.what()));
    }
    limits.check("deploy: the tuner file is chosen; nothing written");
    const GraphFiles graphs = graph_files(winning_graphs(cfg), *topo, dir);
    limits.check("deploy: the tuner file and the graph file are made; nothing written");
    MscclppPlans plans;
    if (a.mscclpp) {
        try {
            plans = mscclpp_plans(topo, a, limits);
        } catch (const LimitReached& e) {
            throw LimitReached(fmt::format("{}: nothing written (stopped while choosing the MSCCL++ plans)", e.what()));
        }
        limits.check("deploy: the MSCCL++ plans are made; nothing written");
    }
    Staging out(dir);
    out.write("nccl_tuner.conf", tuner_file(cfg));
    for (const auto& [name, text] : graphs.files) out.write(name, text);
    for (const auto& [name, text] : plans.files) out.write(name, text);
    out.write("README.md", readme(dir.string(), cfg, graphs, plans, a.mscclpp, per_node_text(*topo, dir.string())));
    // every file read back from the disk by collsched's own checker before the folder is published
    check_tuner_file(out.read("nccl_tuner.conf"), cfg);
    if (!graphs.files.empty()) {
        std::vector<NcclGraphFile> files;
        std::vector<nccl::NcclGraphSource> set;
        files.reserve(graphs.files.size());
        for (const auto& [name, text] : graphs.files) files.push_back(read_nccl_graph(out.read(name), out.path(name)));
        for (std::size_t k = 0; k < files.size(); ++k) set.push_back({&files[k], out.path(graphs.files[k].first)});
        const nccl::GraphCheck g = nccl::check_nccl_graphs(set, *topo);
        if (!g.holds())
            throw InputError(fmt::format("{}: the graph file{} written {} not hold on the machine ({}; a bug in collsched)", out.path(graphs.files[0].first),
                                         graphs.per_node() ? "s" : "", graphs.per_node() ? "do" : "does", g.findings.front().what));
    }
    limits.check("deploy: the folder is written and checked but not published; nothing written");
    out.publish();
    const std::string graph_names = graphs.files.empty() ? ""
                                    : graphs.per_node()  ? fmt::format(", nccl_graphs.node0.xml to {}", graphs.files.back().first)
                                                         : ", nccl_graphs.xml";
    ctx.print(fmt::format("{}: nccl_tuner.conf{}{}, README.md for {} ({} nodes, {} ranks)\n", dir.string(), graph_names,
                          a.mscclpp ? fmt::format(", {} MSCCL++ plan{} in mscclpp/", plans.files.size(), plans.files.size() == 1 ? "" : "s") : "",
                          topo->spec(), cfg.nodes, cfg.ranks));
    ctx.exit_code = 0;
}

}  // namespace

void add_deploy_command(CLI::App& app, Context& ctx) {
    auto a = std::make_shared<DeployArgs>();
    auto* cmd = app.add_subcommand(
        "deploy",
        "Write one folder with what stock NCCL reads at start-up for a machine: nccl_tuner.conf (the tuner file of `collsched tune`, "
        "for NCCL's example tuner plugin), nccl_graphs.xml (NCCL's own rings and trees as `convert nccl:*` writes them, where a line of "
        "the tuner file picks them; NCCL_GRAPH_FILE), with --mscclpp MSCCL++ allreduce plans where collsched's tables win on the MSCCL++ executor (mscclpp/, MSCCLPP_EXECUTION_PLAN_DIR), and a README.md for the machine: the environment variables, the NCCL_DEBUG=INFO "
        "lines that confirm each file was read, the predicted times per size and how to check each file. Every file is read back by "
        "collsched's own checker first; the folder appears whole or not at all. docs/gpu-guide.md, \"Deploy\".\n"
        "Exit code: 0 written, 2 bad input (machine, collective, sizes, executor; DIR exists and is not empty without --force), "
        "3 a limit (--timeout, the memory budget) stopped it (no folder written).");
    cmd->add_option("--topology", a->topology, "The machine: a spec or graph:FILE (e.g. graph:schedules/machines/h100rail4x8.json)")
        ->required();
    a->sizes = parse_sizes("1K..16G");
    add_size_option(cmd, a->sizes, "--sizes", "The grid of sizes (NCCL's nBytes): 1K..16G (doubling, the default), 1K..16G:4, or a list");
    add_executor_options(cmd, a->executor);
    cmd->add_option("--collectives", a->collectives,
                    "Comma-separated: allreduce, allgather, reduce_scatter, broadcast, reduce (default: all five)");
    cmd->add_option("-o,--output", a->output, "The folder to write (absent or empty, unless --force)")->required();
    cmd->add_flag("--force", a->force, "Replace DIR when it exists and is not empty");
    cmd->add_flag("--mscclpp", a->mscclpp,
                  "Also write MSCCL++ allreduce plans (mscclpp/, MSCCLPP_EXECUTION_PLAN_DIR) where collsched's tables win on the MSCCL++ "
                  "executor, chosen on the grid of --mscclpp-sizes; a size stock NCCL wins gets none");
    a->mscclpp_sizes = parse_sizes("1K,64K,1M,16M,256M,1G");
    cmd->add_option_function<std::string>("--mscclpp-sizes", [a](const std::string& s) { a->mscclpp_sizes = parse_sizes(s); },
                                          "With --mscclpp: the grid the plans are chosen on, e.g. 1K,64K,1M,16M,256M,1G (the default); each "
                                          "plan serves the sizes it wins at")
        ->type_name("SIZES");
    cmd->add_option("--timeout", a->timeout, "Seconds for the whole run (exit 3, no folder written, once past); 0 means no limit")
        ->check(seconds_option(true));
    cmd->callback([&ctx, a] { run_deploy(*a, ctx); });
}

}  // namespace collsched::tools
