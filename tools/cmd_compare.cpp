// `collsched compare A.sched B.json ...`: every schedule's predicted time at every size, the
// winner per size, the crossover sizes and a plot (runtime/compare.hpp, verifier/time/compare_report.hpp, docs/time.md).
#include <cstdio>
#include <filesystem>
#include <map>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "support/text.hpp"
#include "support/units.hpp"
#include "runtime/cost_report.hpp"
#include "cli/size_options.hpp"
#include "tools/commands.hpp"
#include "runtime/compare.hpp"
#include "cli/input.hpp"
#include "cli/machine_note.hpp"
#include "cli/options.hpp"
#include "cli/output.hpp"
#include "verifier/constructions/nccl/nccl.hpp"
#include "verifier/check/direct.hpp"
#include "verifier/time/compare_report.hpp"
#include "verifier/time/constructions.hpp"

namespace collsched::tools {

namespace {

struct CompareArgs {
    std::vector<std::string> inputs;
    std::vector<std::string> defines;
    MscclImportOptions msccl;
    std::vector<double> sizes;
    std::optional<LinkSpeed> link;
    std::optional<ExecutorModel> executor;  ///< --executor, --calibration
    std::string time = "async";
    std::string baseline;
    std::string plot = "time";
    std::string svg;
    bool json = false;
    bool nccl = false;         ///< --nccl: add every NCCL algorithm for the machine and collective
    std::string collective;   ///< --collective, when every input is nccl:NAME
    double timeout = 0;       ///< --timeout: seconds for the whole run, 0 none
};

/// `nccl:ring`, `nccl:tree`, `nccl:pat`, `nccl:p2p`: NCCL's algorithm generated for the machine.
bool is_nccl(const std::string& in) { return in.starts_with("nccl:"); }

std::string stem(const std::string& path) {
    std::string s = std::filesystem::path(path).filename().string();
    for (const char* ext : {".sched", ".json", ".csv", ".xml"})
        if (s.ends_with(ext)) return s.substr(0, s.size() - std::string_view(ext).size());
    return s;
}

/// One run of `compare`, one method per stage, called in order by run(): the inputs (loaded and
/// verified), the baseline, the comparison, the plot, the report.
class CompareRun {
public:
    CompareRun(const CompareArgs& args, Context& ctx) : args_(args), ctx_(ctx), deadline_(Deadline::after(args.timeout)) {}

    /// Past --timeout: the generation of NCCL's tables, the checks and the predictions stop (LimitReached: exit 3,
    /// nothing printed but the reason); a crossover search it stops is left at its grid points.
    void run() {
        load();
        if (!all_hold()) return;
        const std::size_t base = baseline();
        const TimeKind kind = args_.time == "sync" ? TimeKind::synchronous : TimeKind::asynchronous;
        const Comparison cmp = compare(cs_, args_.sizes, TimeBasis{args_.link, args_.executor}, kind, base, 1, deadline_);
        const std::string kind_name = kind == TimeKind::asynchronous ? "asynchronous" : "synchronous";
        if (!args_.svg.empty()) plot(cmp, kind_name);
        ComparedSchedules set{cs_, nccl_, system_, args_.link, args_.svg, args_.executor};
        set.bounds = compare_bounds(set, cmp, RunLimits{deadline_, MemoryBudget::standard()});
        const std::string faults = tables_.empty() ? std::string() : faults_line(tables_.front().topology->spec());
        ctx_.print(args_.json ? compare_json(set, cmp) : faults + compare_text(set, cmp));
        ctx_.exit_code = 0;
    }

private:
    void load() {
        std::map<std::string, int> seen;
        std::vector<std::string> inputs = args_.inputs;
        if (args_.nccl) inputs.push_back("nccl:*");
        if (inputs.empty()) throw InputError("compare: no inputs (schedules, tables, nccl:NAME or --nccl)");
        const SendTable* first = nullptr;
        for (const std::string& in : inputs)
            if (!is_nccl(in)) {
                tables_.push_back(load_input(in, args_.defines, false, false, args_.msccl));
                first = &tables_.back();
                break;
            }
        std::shared_ptr<const Topology> topo;
        Collective coll;
        Model model;
        if (first) {
            topo = first->topology;
            coll = first->collective;
            model = first->model;
        } else {
            if (args_.msccl.topology.empty() || args_.collective.empty())
                throw InputError("compare: nccl:NAME inputs alone need --topology and --collective (or a schedule to take them from)");
            topo = Topology::parse(args_.msccl.topology);
            coll = Collective::parse(args_.collective, *topo);
            model = topo->default_model();
        }
        std::vector<SendTable> loaded;
        std::size_t next_file = 0;
        for (const std::string& in : inputs) {
            if (!is_nccl(in)) {
                if (next_file++ == 0) loaded.push_back(std::move(tables_.front()));
                else loaded.push_back(load_input(in, args_.defines, false, false, args_.msccl));
                names_.push_back(stem(in));
                files_.push_back(in);
                continue;
            }
            nccl::BaselineOptions bo;
            bo.deadline = deadline_;
            for (nccl::Baseline& b : compare_nccl(in.substr(5), topo, coll, model, bo)) {
                names_.push_back("nccl:" + b.name);
                files_.push_back(b.source);
                nccl_.push_back({loaded.size(), b.algorithm});
                loaded.push_back(std::move(b.table));
            }
        }
        tables_ = std::move(loaded);
        if (tables_.empty()) throw InputError("compare: NCCL has no algorithm for this collective; nothing to compare");
        for (std::size_t i = 0; i < tables_.size(); ++i) {
            std::string name = names_[i];
            if (int k = seen[name]++; k > 0) name += fmt::format("#{}", k + 1);
            cs_.push_back({name, files_[i], &tables_[i]});
        }
        if (!nccl_.empty()) system_ = nccl::nccl_system(*topo);
    }

    /// A schedule that breaks its model has no meaningful time: exit 1 naming them.
    bool all_hold() {
        std::string broken;
        for (const Contender& c : cs_) {
            VerifyOptions check;
            check.deadline = deadline_;
            VerifyReport r = verify_direct(*c.table, check);
            // a check a limit stopped (its deadline, less the time its memory takes to give back) is unknown, never broken
            if (deadline_.passed() || r.verdict() == "unknown")
                throw LimitReached(fmt::format("time limit (--timeout {}) while checking {}", args_.timeout, c.file));
            if (r.verdict() != "holds") broken += fmt::format("{}{}: {}", broken.empty() ? "" : "; ", c.file, r.verdict());
        }
        if (broken.empty()) return true;
        std::fprintf(stderr, "collsched: error: only tables that hold are compared: %s (collsched verify says why)\n", broken.c_str());
        ctx_.exit_code = 1;
        return false;
    }

    std::size_t baseline() const {
        if (args_.baseline.empty()) return 0;
        auto it = std::find_if(cs_.begin(), cs_.end(), [&](const Contender& c) { return c.name == args_.baseline; });
        if (it == cs_.end()) {
            std::string names;
            for (const Contender& c : cs_) names += (names.empty() ? "" : ", ") + c.name;
            throw InputError(fmt::format("--baseline {}: no input of that name (names: {})", args_.baseline, names));
        }
        return static_cast<std::size_t>(it - cs_.begin());
    }

    void plot(const Comparison& cmp, const std::string& kind_name) const {
        const SendTable& first = tables_.front();
        const std::string title =
            fmt::format("{} on {}: {}", first.collective.to_string(), std::filesystem::path(machine_name(*first.topology)).filename().string(),
                        args_.plot == "algbw" ? "algorithm bandwidth, " + kind_name : kind_name + " time");
        const std::string svg = comparison_svg(cs_, cmp, args_.plot == "algbw" ? PlotKind::algbw : PlotKind::time, title);
        write_output(args_.svg, [&](const Flush& flush, fmt::memory_buffer& buf) {
            buf.append(svg.data(), svg.data() + svg.size());
            flush(buf);
        });
    }

    const CompareArgs& args_;
    Context& ctx_;
    Deadline deadline_;  ///< --timeout, from the start of the run
    std::vector<std::string> names_, files_;  ///< per input table: its name (before #k) and file or source
    std::vector<std::pair<std::size_t, nccl::Algorithm>> nccl_;  ///< the NCCL contenders
    std::optional<nccl::System> system_;
    std::vector<SendTable> tables_;  ///< the inputs, in order (the contenders point into it)
    std::vector<Contender> cs_;
};

}  // namespace

void add_compare_command(CLI::App& app, Context& ctx) {
    auto args = std::make_shared<CompareArgs>();
    auto* cmd = app.add_subcommand(
        "compare",
        "Which schedule wins at which size: predicts every schedule's time on its topology's link speeds at every size of a grid "
        "(asynchronous by default: executors without barriers; docs/time.md), names the winner per size, finds the crossover "
        "sizes between neighbouring grid points (to 0.1 %), gives the speed-up of the winner over a baseline, and draws the "
        "times (or algorithm bandwidths) against size on log axes as SVG. Every input is verified first by the direct checker.\n"
        "Exit code: 0 done, 1 an input does not hold (named), 2 bad input (schedules of different collectives or sizes of "
        "machine, bad units), 3 --timeout came first.");
    cmd->add_option("FILES", args->inputs,
                    "Schedules (.sched), tables (.json, .csv) or MSCCL-IR programs to compare, and nccl:ring, nccl:tree, nccl:pat, "
                    "nccl:p2p: NCCL's algorithm generated for the first schedule's machine and collective (docs/time.md)");
    cmd->add_flag("--nccl", args->nccl,
                  "Add every NCCL algorithm that runs the collective on the machine (rings, the double binary tree, PAT, p2p "
                  "alltoall), generated for it, and print NCCL's own model (src/graph/tuning.cc) of each at every size");
    cmd->add_option("--collective", args->collective, "With only nccl:NAME inputs: the collective (and --topology the machine)");
    cmd->add_option("-D", args->defines, "Override a schedule parameter in every .sched input: -D n=16 (repeatable)");
    cmd->add_option("--topology", args->msccl.topology,
                    "Schedules (.sched): the machine that replaces their topology statement (a spec or graph:FILE); MSCCL-IR inputs: "
                    "the topology the program runs on (default complete:P); with only nccl:NAME inputs, the machine");
    args->sizes = parse_sizes("1K..1G");
    add_size_option(cmd, args->sizes, "--sizes",
                    "Sizes M as NCCL counts them (docs/time.md, \"Sizes\"): 1K..1G (doubling, the default), 1K..1G:4, or a list 1K,1M,1G (K, M, G are powers "
                    "of 1024; kB, MB, GB of 1000)");
    add_link_option(cmd, args->link);
    add_executor_options(cmd, args->executor);
    cmd->add_option("--time", args->time, "Which predicted time decides: async (default; executors without barriers) or sync (a "
                                          "barrier after every step)")
        ->check(CLI::IsMember({"async", "sync"}));
    cmd->add_option("--baseline", args->baseline, "The schedule speed-ups are measured against, by name (the file's stem; default "
                                                  "the first input)");
    cmd->add_option("-o,--svg", args->svg, "Write the plot as SVG to this file")->check(file_option());
    cmd->add_option("--plot", args->plot, "What the plot shows against size: time (default) or algbw (nccl-tests' algorithm "
                                          "bandwidth: P*M / time for allgather and alltoall, M / time otherwise)")
        ->check(CLI::IsMember({"time", "algbw"}));
    cmd->add_flag("--json", args->json,
                  "Print one JSON object: schedules, sizes, times (both kinds) per schedule, winners, crossovers, speed-ups");
    cmd->add_option("--timeout", args->timeout,
                    "Seconds for the whole run (default 0: none): past it NCCL's tables, the checks and the predictions stop (exit 3); a "
                    "crossover search still running is left at its grid points")
        ->check(seconds_option(true));
    cmd->callback([&ctx, args] { CompareRun(*args, ctx).run(); });
}

}  // namespace collsched::tools
