// `collsched verify FILE`: proves a table (or a compiled schedule) against the model, with the
// direct checker, the Z3 engine, or both (which must agree property by property).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>

#include <sys/mman.h>
#include <unistd.h>
#include <optional>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>

#include "compiler/interop/msccl_import.hpp"
#include "compiler/interop/mscclpp_check.hpp"
#include "compiler/io/table_io.hpp"
#include "runtime/cost_report.hpp"
#include "cli/size_options.hpp"
#include "tools/commands.hpp"
#include "cli/options.hpp"
#include "cli/input.hpp"
#include "cli/machine_note.hpp"
#include "cli/runs.hpp"
#include "cli/verify_nccl_graph.hpp"
#include "verifier/check/direct.hpp"
#include "verifier/check/verify_run.hpp"
#include "verifier/check/z3_engine.hpp"

namespace collsched::tools {

namespace {

struct VerifyArgs {
    std::string input;
    std::vector<std::string> defines;
    MscclImportOptions msccl;
    std::string expect;
    std::string collective;  ///< NCCL graph files: the collective whose time is predicted
    std::string engine = "direct";
    std::string routes = "any";
    bool json = false;
    bool strict = false;
    std::size_t max_violations = 20;
    double timeout = 60;
    AlphaBeta ab;
};

/// The text of `path` when it is an MSCCL++ execution plan (a JSON object whose top level has
/// "gpus" and "collective" and no "format"), told by its first 64 KB; standard input is not probed.
std::optional<std::string> mscclpp_plan_text(const std::string& path) {
    // pipes (/dev/stdin, <(gen)) are read once, by load_input
    if (path == "-" || path.ends_with(".sched") || !std::filesystem::is_regular_file(path)) return std::nullopt;
    std::ifstream in(path, std::ios::binary);
    if (!in) return std::nullopt;
    std::string head(65536, '\0');
    in.read(head.data(), std::streamsize(head.size()));
    head.resize(std::size_t(in.gcount()));
    const std::size_t first = head.find_first_not_of(" \t\r\n");
    if (first == std::string::npos || head[first] != '{' || head.find("\"format\"") != std::string::npos ||
        head.find("\"gpus\"") == std::string::npos || head.find("\"collective\"") == std::string::npos)
        return std::nullopt;
    return read_input_text(path, "MSCCL++ plan");
}

/// Why `verify PLAN.json --size M` predicts no time without a machine (issue 43, item 6).
constexpr const char* plan_time_why =
    "an MSCCL++ plan names no machine: give it with --topology graph:M.json, and its copies between GPUs are timed on that "
    "machine's links under the plan's protocol (docs/time.md, \"Protocols\")";

/// With --size: the plan's copies between GPUs as a table on --topology (mscclpp::plan_table), or why
/// there is none; the protocol the executor runs (every protocol but "LL" as Simple).
struct PlanTime {
    std::optional<SendTable> table;
    std::string why = plan_time_why;
    AlphaBeta ab;
};
PlanTime plan_time(const mscclpp::Plan& plan, const mscclpp::PlanReport& r, const VerifyArgs& args) {
    PlanTime t;
    t.ab = args.ab;
    t.ab.protocol = plan.packets() ? Protocol::ll : Protocol::simple;
    if (args.ab.sizes.empty() || args.msccl.topology.empty()) return t;
    std::shared_ptr<const Topology> topo = Topology::parse(args.msccl.topology);
    if (topo->processors() != plan.gpus.size())
        throw InputError(fmt::format("{}: the plan has {} GPUs but {} has {} processors", args.input, plan.gpus.size(), topo->spec(),
                                     topo->processors()));
    try {
        t.table = mscclpp::plan_table(plan, r, std::move(topo));
    } catch (const InputError& e) {
        t.why = e.what();
    }
    return t;
}

/// `verify PLAN.json`: the plan's verdict (docs/exports.md, "MSCCL++ execution plans").
int verify_mscclpp(const std::string& path, const std::string& text, const VerifyArgs& args, const Context& ctx) {
    std::vector<Expectation> expect;
    if (!args.expect.empty()) expect = read_expectations(read_input_text(args.expect, "expectation file"), args.expect);
    mscclpp::ReadResult read = mscclpp::read_plan(text, path);
    check_expectations(expect, args.expect, int(read.plan.gpus.size()), [&](int r, char buf) -> long long {
        const mscclpp::Gpu& g = read.plan.gpus[std::size_t(r)];
        return buf == 'i' ? g.input_chunks : buf == 'o' ? g.output_chunks : g.scratch_chunks;
    });
    mscclpp::PlanReport r = mscclpp::check_plan(read, expect);
    const PlanTime timed = plan_time(read.plan, r, args);
    std::string out;
    if (args.json) {
        nlohmann::ordered_json j;
        j["verdict"] = r.verdict();
        j["format"] = "mscclpp";
        j["name"] = read.plan.name;
        j["collective"] = read.plan.collective;
        j["gpus"] = read.plan.gpus.size();
        j["inplace"] = read.plan.inplace;
        j["protocol"] = read.plan.protocol;
        j["thread_blocks"] = r.thread_blocks;
        j["ops"] = r.ops;
        j["properties"] = {{"executor_rules", r.counts_other ? "violated" : "holds"},
                           {"deadlock", !r.modelled ? "unknown" : r.finishes && !r.counts_deadlock ? "holds" : "violated"},
                           {"data_races", !r.modelled || !r.race_checked ? "unknown" : r.counts_race ? "violated" : "holds"},
                           {"result", r.counts_result ? "violated" : r.result_checked ? "holds" : "unknown"}};
        nlohmann::ordered_json list = nlohmann::ordered_json::array();
        for (const mscclpp::Finding& f : r.findings)
            list.push_back({{"rule", f.rule}, {"path", f.path}, {"line", f.pos.line}, {"column", f.pos.col}, {"message", f.what}});
        j["violations"] = list;
        if (!r.result_note.empty()) j["note"] = r.result_note;
        if (timed.table) add_time_json(j, *timed.table, timed.ab);
        else if (!args.ab.sizes.empty()) j["time"] = {{"none", timed.why}};
        if (!r.race_note.empty()) j["races_note"] = "not checked: " + r.race_note;
        if (!r.nccl_verdict.empty()) {
            j["inplace_convention"] = "mscclpp: recvbuff == sendbuff (src/core/algorithm.cc:13-24)";
            j["nccl_inplace_convention"] = r.nccl_verdict;
        }
        out = j.dump() + "\n";
    } else {
        out = mscclpp::format_plan_report(r, read.plan, path);
        if (timed.table) out += time_text(*timed.table, timed.ab);
        else if (!args.ab.sizes.empty()) out += fmt::format("predicted time: none ({})\n", timed.why);
    }
    ctx.print(out);
    return r.holds() ? 0 : r.unknown() ? 3 : 1;
}

/// The predicted times, for a table that holds (a table that breaks the model has no meaningful time).
std::string time_or_why(const SendTable& t, const AlphaBeta& ab, std::string_view verdict) {
    if (ab.sizes.empty()) return "";
    if (verdict != "holds") return "predicted time: not computed (the table does not hold)\n";
    return time_text(t, ab);
}

int exit_code(std::string_view verdict) { return verdict == "holds" ? 0 : verdict == "unknown" ? 3 : 1; }

/// An MSCCL-IR program is judged as a program (compiler/interop/msccl_import.hpp), not by the table its
/// as-soon-as-possible run levels into: nullopt when `path` is no such file.
std::optional<int> verify_msccl(const VerifyArgs& a, const Context& ctx) {
    if (a.input.ends_with(".sched") || a.input.ends_with(".0.et") || a.input.ends_with(".csv")) return std::nullopt;
    // standard input is read once, by load_input (which levels an MSCCL-IR program into a table);
    // a file is probed by its first bytes, so a table too large to read is refused by load_input's rule
    if (a.input == "-" || !std::filesystem::is_regular_file(a.input)) return std::nullopt;
    {
        std::ifstream in(a.input, std::ios::binary);
        std::string head(4096, '\0');
        in.read(head.data(), std::streamsize(head.size()));
        head.resize(std::size_t(in.gcount()));
        if (!looks_like_xml(head)) return std::nullopt;
    }
    std::string text = read_input_text(a.input);
    if (!looks_like_xml(text)) {
        if (a.input == "-") {
            // standard input is read now: hand the same bytes to load_input on a fresh descriptor 0
            const int fd = ::memfd_create("collsched-stdin", 0);
            if (fd < 0 || ::write(fd, text.data(), text.size()) != ssize_t(text.size()) || ::lseek(fd, 0, SEEK_SET) != 0 ||
                ::dup2(fd, 0) < 0)
                throw InputError("<stdin>: cannot keep standard input for the table reader");
            ::close(fd);
        }
        return std::nullopt;
    }
    if (!a.defines.empty()) throw InputError("-D applies to .sched schedules only, not to MSCCL-IR files");
    MscclImportOptions opt = a.msccl;
    if (!a.expect.empty()) {
        opt.expect = read_input_text(a.expect, "expectation");
        opt.expect_name = a.expect;
    }
    // with --size: the levelled table's time under the program's protocol (docs/time.md, "Protocols")
    MscclTable timed;
    const std::string name = a.input == "-" ? "<stdin>" : a.input;
    MscclReport r = a.ab.sizes.empty() ? check_msccl_ir(text, name, opt) : check_msccl_ir(text, name, opt, timed);
    AlphaBeta ab = a.ab;
    ab.protocol = parse_protocol(r.proto).value_or(Protocol::none);
    std::string out;
    if (a.json) {
        nlohmann::ordered_json j;
        j["verdict"] = r.holds ? "holds" : r.violations == 0 && r.unknown ? "unknown" : "violated";
        j["program"] = r.summary;
        j["violations"] = r.violations;
        j["findings"] = r.findings;
        j["notes"] = r.notes;
        j["timing"] = r.timing;
        if (!r.chunk_map.empty()) j["chunk_map"] = r.chunk_map;
        if (timed.table) add_time_json(j, *timed.table, ab);
        else if (!ab.sizes.empty()) j["time"] = {{"none", timed.why}};
        out = j.dump() + "\n";
    } else {
        out = r.text();
        if (timed.table) out += time_text(*timed.table, ab);
        else if (!ab.sizes.empty()) out += "predicted time: none (" + timed.why + ")\n";
    }
    ctx.print(out);
    return r.holds ? 0 : r.violations == 0 && r.unknown ? 3 : 1;
}

/// `--engine both`: the two reports, then whether they agree. A disagreement is a bug in one of
/// the engines: it is printed on stderr, the verdict is "disagreement" and the exit code 1.
int run_both(const SendTable& table, const ScheduleSource& source, const VerifyOptions& opt, const Z3Options& zopt, bool json,
             const AlphaBeta& ab, const Context& ctx) {
    const BothReports b = verify_both(table, source, opt, zopt);
    const std::vector<Disagreement>& dis = b.both.disagreements;
    const std::string& verdict = b.both.verdict;
    std::string out;
    if (json) {
        nlohmann::ordered_json j = both_json(b, table);
        add_bandwidth_json(j, table, ab);
        if (verdict == "holds") add_time_json(j, table, ab);
        out = j.dump() + "\n";
    } else {
        out = both_text(b, table) + bandwidth_text(table, ab) + time_or_why(table, ab, verdict) + both_verdict_text(b);
    }
    ctx.print(out);
    if (!dis.empty()) {
        std::fflush(stdout);
        for (const Disagreement& x : dis)
            std::fprintf(stderr, "collsched: error: the engines disagree on %s: direct says %s, z3 says %s\n",
                         std::string(to_string(x.property)).c_str(), std::string(to_string(x.direct)).c_str(),
                         std::string(to_string(x.z3)).c_str());
        std::fprintf(stderr,
                     "collsched: error: this is a bug in collsched (one engine is wrong); please report it with the table\n");
        return 1;
    }
    return exit_code(verdict);
}

}  // namespace

nlohmann::ordered_json verify_json(const VerifyReport& r, const SendTable& table, const AlphaBeta& ab) {
    nlohmann::ordered_json j = report_to_json(r, table);
    add_bandwidth_json(j, table, ab);
    if (r.verdict() == "holds") add_time_json(j, table, ab);
    return j;
}

void add_verify_command(CLI::App& app, Context& ctx) {
    auto args = std::make_shared<VerifyArgs>();
    auto* cmd = app.add_subcommand(
        "verify",
        "Check a send table (JSON or CSV) or a schedule (.sched) against its model: capacity per channel and step, ports, "
        "queues, replication, causality, routes and completeness.\nEngines: direct (exact counting), z3 (each property an "
        "SMT/Horn query to Z3; unsat of its negation is the proof), both (the two must agree on every property).\nAn MSCCL++ "
        "execution plan (a JSON file with \"gpus\" and \"collective\") is checked for the executor's rules, deadlock, data races "
        "and its result instead (docs/exports.md). An NCCL graph file (<graphs>, NCCL_GRAPH_FILE) is checked on --topology: every "
        "ring a cycle through every rank, every hop on a link, every net one the box has; FILE.xml absent, the set FILE.node0.xml, "
        "FILE.node1.xml, ... one per node, checked as NCCL joins them (docs/exports.md, \"One file per node\").\nExit code: 0 "
        "every property holds, 1 a property is violated (counterexamples printed) or the engines disagree (--engine both; "
        "a bug, reported on stderr), 2 bad input, 3 unknown (Z3 time or resource limit).");
    cmd->add_option("FILE", args->input,
                    "Table file (.json, .csv) or schedule (.sched); - reads standard input; an NCCL graph file, or the stem F.xml of "
                    "F.node0.xml ... (a file per node)")
        ->required();
    cmd->add_option("-D", args->defines, "Override a schedule parameter: -D n=16 (repeatable)");
    cmd->add_option("--topology", args->msccl.topology,
                    "Schedule (.sched): the machine that replaces its topology statement (a spec or graph:FILE); MSCCL-IR input: the "
                    "topology the program runs on (default complete:P); NCCL graph file: the machine (required); MSCCL++ plan: the "
                    "machine --size times its copies on");
    cmd->add_option("--collective", args->collective,
                    "NCCL graph file: the collective whose time --size predicts on its rings: allreduce (default), allgather, "
                    "reduce_scatter");
    add_msccl_max_steps(cmd, args->msccl.max_steps);
    cmd->add_option("--expect", args->expect,
                    "MSCCL-IR program or MSCCL++ plan input: a JSON file naming what output chunks must hold, {\"outputs\": "
                    "[{\"rank\", \"chunk\", \"holds\": [[rank, input chunk], ...]}]} (docs/exports.md, \"--expect\"); "
                    "replaces the collective's postcondition, and gives a custom collective one");
    cmd->add_option("--engine", args->engine, "Verification engine: direct, z3 or both (default direct)")
        ->check(CLI::IsMember({"direct", "z3", "both"}));
    cmd->add_option("--timeout", args->timeout, "Time limit of the Z3 engine in seconds (default 60); past it, unknown (exit 3)")
        ->check(seconds_option(false));
    cmd->add_option("--routes", args->routes,
                    "any: hops may take any channels; fixed: personalized messages must follow the topology's routes")
        ->check(CLI::IsMember({"any", "fixed"}));
    cmd->add_option("--max-violations", args->max_violations, "Counterexamples shown per property")
        ->check(count_option(0, 1'000'000'000));
    cmd->add_flag("--strict", args->strict, "Treat a schedule's warnings as errors (W001, docs/errors.md)");
    cmd->add_flag("--json", args->json, "Print one JSON object instead of text");
    add_alpha_beta_options(cmd, args->ab);
    cmd->callback([&ctx, args] {
        args->ab.check();
        if (is_nccl_graph_file(args->input)) {
            if (!args->defines.empty() || !args->expect.empty())
                throw InputError("-D and --expect do not apply to NCCL graph files");
            ctx.exit_code = verify_nccl_graph({args->input, args->msccl.topology, args->collective, args->json, args->ab}, ctx);
            return;
        }
        if (!args->collective.empty()) throw InputError("--collective applies to NCCL graph files only");
        if (auto code = verify_msccl(*args, ctx)) {
            ctx.exit_code = *code;
            return;
        }
        if (auto plan = mscclpp_plan_text(args->input)) {
            if (!args->defines.empty()) throw InputError("-D applies to .sched schedules only, not to MSCCL++ plans");
            ctx.exit_code = verify_mscclpp(args->input, *plan, *args, ctx);
            return;
        }
        if (!args->expect.empty()) throw InputError("--expect applies to MSCCL-IR programs and MSCCL++ plans only");
        ScheduleSource source;
        SendTable table = load_input(args->input, args->defines, true, args->strict, args->msccl, &source);
        VerifyOptions opt;
        opt.fixed_routes = args->routes == "fixed";
        opt.max_violations = args->max_violations;
        Z3Options zopt;
        zopt.fixed_routes = opt.fixed_routes;
        zopt.max_violations = opt.max_violations;
        zopt.timeout_ms = static_cast<std::uint64_t>(std::ceil(std::min(args->timeout, 1e9) * 1000));
        if (args->engine == "both") {
            ctx.exit_code = run_both(table, source, opt, zopt, args->json, args->ab, ctx);
            return;
        }
        VerifyReport r = verify_table(table, source, args->engine == "z3", opt, zopt);
        std::string out;
        if (args->json) {
            out = verify_json(r, table, args->ab).dump() + "\n";
        } else {
            out = faults_line(table.topology->spec()) + format_report(r, table) + bandwidth_text(table, args->ab) +
                  time_or_why(table, args->ab, r.verdict());
        }
        ctx.print(out);
        ctx.exit_code = exit_code(r.verdict());
    });
}

}  // namespace collsched::tools
