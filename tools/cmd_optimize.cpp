// `collsched optimize`: the least completion time of a collective on a topology under a model,
// with its proof status, and the witness schedule.
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <stdexcept>
#include <thread>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "verifier/synth/bounds/bandwidth.hpp"
#include "verifier/constructions/steps/tree_packing.hpp"

#include "compiler/io/table_io.hpp"
#include "compiler/io/table_printer.hpp"
#include "support/assert.hpp"
#include "support/error.hpp"
#include "tools/commands.hpp"
#include "cli/winner_files.hpp"
#include "runtime/cost_report.hpp"
#include "compiler/lower/catalog.hpp"
#include "cli/size_options.hpp"
#include "cli/input.hpp"
#include "cli/machine_note.hpp"
#include "cli/output.hpp"
#include "verifier/check/direct.hpp"
#include "verifier/check/report.hpp"
#include "cli/synth_common.hpp"
#include "verifier/constructions/steps/greedy.hpp"
#include "verifier/synth/problem/instance.hpp"
#include "verifier/synth/search/duality.hpp"
#include "verifier/time/constructions.hpp"
#include "verifier/time/objective_report.hpp"

namespace collsched::tools {

namespace {

struct OptimizeArgs {
    InstanceArgs instance;
    SolverArgs solver;
    bool json = false;
    std::vector<std::string> outputs;
    std::uint32_t chunks = 0;  ///< 0: not given (1; C = P for reduce_scatter and allreduce)
    std::uint32_t rounds = 0;
    std::string method = "auto";
    bool greedy = false;
    bool hierarchical = false;
    std::string start;
    std::uint32_t jobs = 0;  ///< 0: not given (1 for --hierarchical, the hardware threads for --size)
    std::uint64_t seed = 1;
    TimeObjectiveOptions time;  ///< --size/--sizes: time as the objective (verifier/time/objective.hpp)
    bool library_given = false;  ///< --library named a file: it must be a catalog (exit 2 otherwise), not a note
    std::string time_kind = "async";  ///< --time
    std::string format;  ///< --format: the winners in an executor's format (with --size)
};

/// Which method optimizes a reduction (docs/synthesis.md, "The direct encoding of combining"):
/// "duality" or "direct". auto: allreduce directly (the composed space of the duality is not
/// every allreduce) but on machines with routers, reduce and reduce_scatter by duality where it
/// applies (the same optimum, proved over the same space, without a solver), else directly. On a
/// machine with routers the direct encoding names every partial in a router by its origin and grows
/// with the steps it may wait there (docs/synthesis.md, "Routers that forward").
std::string reduction_method(const SynthInstance& in, const std::string& asked) {
    if (asked != "auto") return asked;
    if ((in.collective.kind != CollectiveKind::allreduce || in.topology->routers() > 0) && reduction_duality_problem(in).empty())
        return "duality";
    const std::string direct = combining_problem(in);
    if (direct.empty()) return "direct";
    const std::string dual = reduction_duality_problem(in);
    if (dual.empty()) return "duality";
    throw InputError(fmt::format("neither method takes {} on {}: the direct encoding: {}; by duality: {}", in.collective.to_string(),
                                 in.topology->spec(), direct, dual));
}

/// reduce, reduce_scatter and allreduce: through duality with broadcast or allgather
/// (verifier/synth/search/duality.hpp); the dual's own report, then the reduction's optimum and the
/// space it is proved over.
void optimize_reduction_command(const SynthInstance& in, const OptimizeArgs& args, Deadline run, Context& ctx) {
    if (std::string why = reduction_duality_problem(in); !why.empty()) throw InputError(why);
    OptimizeOptions opt = args.solver.options();
    opt.synth.deadline = std::min(opt.synth.deadline, run.when());  // --timeout from the start of the command
    Progress progress;
    opt.progress = progress.callback();
    const ReductionOptimum r = progress.run([&] { return optimize_reduction(in, opt); });
    for (const std::string& path : args.outputs) {
        if (!r.witness) break;
        write_witness(path, *r.witness, reduction_witness_comment(in, r));
    }
    ctx.print(reduction_report(in, r, args.solver.limits(), args.outputs, args.json));
    ctx.exit_code = r.stopped.empty() ? exit_code(r.allgather) : 3;
}

/// `--start FILE`: the schedule is read, checked to be for the instance's topology and
/// collective (else bad input), re-stamped with the instance's model and verified; one that does
/// not hold is reported with its counterexamples (exit 1, returns false). Otherwise it becomes
/// the run's start (OptimizeOptions::start).
bool start_schedule(const SynthInstance& in, const std::string& path, bool json, OptimizeOptions& opt, Context& ctx) {
    SendTable t = load_input(path, {});
    const Topology& a = *t.topology;
    const Topology& b = *in.topology;
    if (a.processors() != b.processors() || a.routers() != b.routers() || !std::ranges::equal(a.channels(), b.channels()) ||
        a.groups() != b.groups())
        throw InputError(fmt::format("{}: the schedule is for {}, not for {} (--start takes a schedule of the optimized topology)", path,
                                     a.spec(), b.spec()));
    if (!(t.collective == in.collective))
        throw InputError(fmt::format("{}: the schedule is for {}{}, not for {}{}", path, t.collective.to_string(),
                                     t.collective.chunks > 1 ? fmt::format(" of {} chunks", t.collective.chunks) : std::string(),
                                     in.collective.to_string(),
                                     in.collective.chunks > 1 ? fmt::format(" of {} chunks", in.collective.chunks) : std::string()));
    if (!t.step_rounds.empty()) throw InputError(fmt::format("{}: --start takes a schedule of one round per step", path));
    if (t.has_composites() || !t.requirements.empty())
        throw InputError(fmt::format("{}: --start takes a schedule of the collective's own messages and goals", path));
    t.topology = in.topology;
    t.model = in.model;
    VerifyReport rep = verify_direct(t);
    if (!rep.holds()) {
        std::string out = json ? nlohmann::ordered_json{{"start", path}, {"start_verdict", report_to_json(rep, t)}}.dump() + "\n"
                               : fmt::format("start schedule {} under model {}:\n{}", path, to_string(in.model), format_report(rep, t));
        std::fwrite(out.data(), 1, out.size(), stdout);
        ctx.exit_code = 1;
        return false;
    }
    opt.start = std::make_shared<const SendTable>(std::move(t));
    opt.start_source = fmt::format("the start schedule {} (verified)", path);
    return true;
}

/// The refusals of collective() and of optimize()'s size that follow from the processor count
/// alone, before a graph file is read (InstanceArgs::refuse_before_reading); `a` itself.
const OptimizeArgs& refused_before_reading(const OptimizeArgs& a) {
    if (!a.format.empty() && a.time.sizes.empty())
        throw InputError("optimize: --format writes the fastest schedule at each --size; give --size (without it -o writes a table or .sched)");
    if (a.time.executor && a.time.sizes.empty())
        throw InputError("optimize: --executor and --calibration choose by predicted time: give --size (docs/time.md, \"Executors\")");
    if (!a.time.sizes.empty()) return a;
    a.instance.refuse_before_reading([&](Collective& c, const Topology& stand_in) {
        const std::uint32_t P = stand_in.processors();
        if (c.row().has_partials()) {  // as collective(): C = P chunks for reduce_scatter and allreduce
            const bool per_processor = c.kind == CollectiveKind::reduce_scatter || c.kind == CollectiveKind::allreduce;
            c.set_chunks(a.chunks > 0 ? a.chunks : per_processor ? P : 1, stand_in, false);
            return;
        }
        c.set_chunks(a.chunks > 0 ? a.chunks : 1, stand_in, false);
        // Beyond max_goal_pairs the quotient decides, which needs the machine; --greedy and
        // --hierarchical take any size (opt_.max_goals = 0).
        if (a.greedy || a.hierarchical || c.goal_count(P) > max_goal_pairs) return;
        refuse_goal_pairs(c, P, a.instance.topology, a.solver.options().max_goals);
    });
    return a;
}

/// One run of `optimize`, one method per stage, called in order by run(): the instance (a
/// reduction by duality hands over to optimize_reduction_command), the options and their
/// checks, the start schedule, the search, the witnesses, the bandwidth end, the report.
class OptimizeRun {
public:
    OptimizeRun(const OptimizeArgs& args, Context& ctx)
        : args_(refused_before_reading(args)), ctx_(ctx), run_(Deadline::after(args.solver.timeout)),
          in_(args.instance.instance(args.solver.route_space(), false, RunLimits{run_, args.solver.memory_budget()})) {}

    void run() {
        said_ = args_.instance.said;
        if (!args_.time.sizes.empty()) return by_time();
        // the steps objective on a machine with routers: replicate=yes unless --model says or the collective reduces (cli/machine_note.hpp)
        said_ = choose_router_model(*in_.topology, args_.instance.model, in_.collective.row().has_partials(), in_.model) + said_;
        if (!args_.json) ctx_.print(said_);
        if (!collective()) return;
        options();
        if (!args_.start.empty() && !start_schedule(in_, args_.start, args_.json, opt_, ctx_)) return;
        solve();
        for (const std::string& path : args_.outputs) {
            if (!r_.witness) break;
            write_witness(path, *r_.witness, witness_comment(in_, r_));
        }
        if (in_.collective.chunks == 1 && !in_.rounds) bandwidth_end();
        report();
        ctx_.exit_code = exit_code(r_);
    }

private:
    /// `--size`: the fastest verified schedule at each size, not the least steps.
    void by_time() {
        if (!args_.format.empty() && args_.outputs.empty()) throw InputError("optimize --format: give -o FILE (the winners are written there)");
        if (args_.chunks || args_.rounds || args_.method != "auto" || args_.greedy || args_.hierarchical || !args_.start.empty())
            throw InputError("--size chooses among every schedule collsched builds (their chunks are theirs): --chunks, --rounds, --method, "
                             "--greedy, --hierarchical and --start are not taken with it");
        TimeObjectiveOptions t = args_.time;
        t.time = args_.time_kind == "sync" ? TimeKind::synchronous : TimeKind::asynchronous;
        t.timeout = opt_timeout();
        t.deadline = run_.when();  // --timeout from the start of the command, the machine's reading included
        t.jobs = args_.jobs > 0 ? args_.jobs : std::max(1u, std::thread::hardware_concurrency());
        t.memory = args_.solver.memory_budget();
        // a catalog the user named is read before anything runs: a file that is missing or not a
        // catalog is bad input (exit 2); the default one, missing, is a note (run outside the tree)
        if (args_.library_given) read_catalog(t.library, RunLimits{run_, t.memory});
        const TimeObjective r = time_objective(in_, t);
        std::string per_node;  // NCCL graph files written one per node: the files under the witness's name
        if (!r.candidates.empty()) per_node = write_winners(r);
        ctx_.print((args_.json ? "" : said_) + time_objective_report(r, args_.outputs, args_.json, !args_.format.empty()) +
                   (args_.json || per_node.empty() ? "" : "witness files, one per node (docs/exports.md, \"One file per node\"): " + per_node + "\n"));
        ctx_.exit_code = time_objective_exit_code(r);
    }

    /// -o: each distinct winner once (time_witness_files), as a table or schedule, or with --format in that format
    /// (its protocol the one the executor runs it in, an MSCCL++ plan's sizes those it wins at); every file rendered
    /// before the first is written.
    std::string write_winners(const TimeObjective& r) const {
        const bool per_range = !args_.format.empty();
        if (!per_range) {
            for (const std::string& path : args_.outputs)
                for (const WitnessFile& f : time_witness_files(r, path))
                    write_witness(f.path, *r.winner(f.sizes.front()).table, time_witness_comment(r, f));
            return "";
        }
        // every file rendered once (its writer checks it before its first byte: a refusal here writes nothing), all of
        // them before the first is written
        std::vector<std::pair<std::string, std::string>> rendered;  // path, text
        std::vector<std::string> per_node;  // NCCL graph files one per node (docs/exports.md, "One file per node")
        for (const std::string& path : args_.outputs)
            for (auto& file : render_winners(r, path, args_.format, &per_node)) rendered.push_back(std::move(file));
        for (const auto& [path, text] : rendered)
            write_output(path, [&text](const Flush& flush, fmt::memory_buffer& buf) {
                buf.append(text.data(), text.data() + text.size());
                flush(buf);
            });
        return fmt::format("{}", fmt::join(per_node, ", "));
    }

    double opt_timeout() const { return args_.solver.options().timeout; }

    /// Chunks, rounds and the method; false when a reduction went by duality (reported there).
    bool collective() {
        const Topology& topo = *in_.topology;
        const CollectiveKind k = in_.collective.kind;
        if (k != CollectiveKind::allgather) in_.collective.check_goal_count(topo);  // allgather: below, the quotient
        const bool reduction = in_.collective.row().has_partials();
        if (args_.method != "auto" && !reduction)
            throw InputError(fmt::format("--method {} applies to reduce:R, reduce_scatter, allreduce and scan", args_.method));
        if (reduction) {
            // reduce_scatter and allreduce: C = P chunks unless --chunks says otherwise (chunk p reduced to processor p,
            // SCCL's ReduceScatter); reduce and scan: one chunk
            const bool per_processor = k == CollectiveKind::reduce_scatter || k == CollectiveKind::allreduce;
            in_.collective.set_chunks(args_.chunks > 0 ? args_.chunks : per_processor ? topo.processors() : 1, topo);
            if (!args_.greedy && !args_.hierarchical && reduction_method(in_, args_.method) == "duality") {
                if (!args_.start.empty()) throw InputError("--start is not supported by the duality method; use --method direct");
                if (args_.rounds > 0) throw InputError("--rounds is not supported by the duality method; use --method direct");
                optimize_reduction_command(in_, args_, run_, ctx_);
                return false;
            }
        } else {
            in_.collective.set_chunks(args_.chunks > 0 ? args_.chunks : 1, topo, false);  // the size: below
        }
        if (args_.rounds > 0) in_.rounds = args_.rounds;
        if (in_.rounds && args_.solver.incremental)
            throw InputError("--incremental is not supported with --rounds (every S is its own encoding)");
        encoding_for(in_);  // unsupported models are bad input, before any work
        if (in_.collective.goal_count(topo.processors()) > max_goal_pairs) {
            // Beyond the collective's limit only the quotient of a translation group is taken
            // (docs/synthesis.md, "A check in the quotient"): no table, so nothing to write.
            require_quotient(in_);
            if (!args_.outputs.empty() || args_.hierarchical || !args_.start.empty())
                throw InputError(fmt::format("{} on {} has {} goal pairs: optimize checks it in the quotient of a translation group and "
                                             "builds no table, so -o, --hierarchical and --start are not taken",
                                             in_.collective.to_string(), topo.spec(), in_.collective.goal_count(topo.processors())));
        }
        return true;
    }

    void options() {
        opt_ = args_.solver.options();
        // --timeout counts from the start of the command: reading a machine of 4,096 GPUs takes seconds.
        opt_.synth.deadline = std::min(opt_.synth.deadline, run_.when());
        opt_.greedy_only = args_.greedy;
        opt_.hierarchical = args_.hierarchical;
        opt_.jobs = std::max(args_.jobs, 1u);
        if (args_.greedy && args_.hierarchical)
            throw InputError("--greedy and --hierarchical exclude each other (--hierarchical runs the greedy too)");
        if (args_.hierarchical) {
            if (std::string why = hierarchical_problem(in_, RunLimits{run_, opt_.synth.memory}); !why.empty()) throw InputError(why);
            opt_.max_goals = 0;
        }
        // The greedy alone holds no per-pair encoding: the size is bounded by the collective's own
        // limit of goal pairs and by --memory (estimated before it runs).
        if (args_.greedy) opt_.max_goals = 0;
        opt_.seed = args_.seed;
        if (args_.greedy)
            if (std::string why = greedy_problem(in_); !why.empty()) throw InputError(why);
    }

    void solve() {
        Progress progress;
        opt_.progress = progress.callback();
        r_ = progress.run([&] { return optimize(in_, opt_); });
    }

    /// The other end (issue 27): the least rounds per chunk, proved by its cut, and whether a
    /// tree packing meets it. Only for the unchunked question (a chunked one has its own bound).
    /// It runs in what is left of --timeout (the search's share is not its own), under the memory budget.
    void bandwidth_end() {
        const SynthInstance& whole = in_;
        const RunLimits limits{run_, opt_.synth.memory};
        std::optional<BandwidthBound> b;
        try {
            b = flow_bandwidth_bound(whole, limits);
        } catch (const LimitReached& e) {
            bw_["stopped"] = e.what();
            bw_text_ = fmt::format("bandwidth: not computed ({})\n", e.what());
            return;
        }
        if (!b) return;
        bw_["rounds_per_chunk"] = b->rounds_per_chunk.text();
        bw_["detail"] = b->detail;
        bw_["crossing"] = b->certificate->crossing;
        bw_text_ = fmt::format("bandwidth: R/C >= {} over any steps and chunks ({})\n", b->rounds_per_chunk.text(), b->detail);
        if (!packing_problem(whole).empty()) return;
        const std::uint32_t P = whole.topology->processors();
        PackingOptions po;
        po.target = b->rounds_per_chunk;
        po.outside = whole.collective.kind == CollectiveKind::allgather ? cut_outside(*b, P) : 1;
        po.chunks = chunks_for(b->rounds_per_chunk, 256, po.outside, P);
        po.seconds = opt_.timeout > 0 ? std::min(10.0, opt_.timeout / 4) : 10.0;
        po.limits = limits;
        if (po.outside >= 2)
            bw_text_ += fmt::format("  not attained at any C: the cut leaves {} processors outside (R >= {} C + {}/{}, the drain rule)\n",
                                    po.outside, b->rounds_per_chunk.text(), po.outside - 1, po.outside);
        auto p = pack_trees(whole, po);
        if (!p) return;
        const bool optimal = p->rounds_per_chunk() == b->rounds_per_chunk;
        const bool optimal_c = p->rounds == p->least_rounds;
        bw_["packed"] = {{"steps", p->steps},
                         {"rounds", p->rounds},
                         {"chunks", p->chunks},
                         {"rounds_per_chunk", p->rounds_per_chunk().text()},
                         {"depth", p->depth},
                         {"bandwidth_optimal", optimal},
                         {"least_rounds_for_chunks", p->least_rounds},
                         {"optimal_for_chunks", optimal_c},
                         {"method", p->method}};
        bw_text_ += fmt::format("bandwidth end: a verified tree packing of {} steps, {} rounds, {} chunks has R/C = {}{} "
                                "(`collsched bandwidth -o` writes it)\n",
                                p->steps, p->rounds, p->chunks, p->rounds_per_chunk().text(),
                                optimal     ? std::string(": proved bandwidth-optimal by the cut above")
                                : optimal_c ? fmt::format(", above the bound; proved optimal for {} chunks (R >= {} by the cut)", p->chunks,
                                                          p->least_rounds)
                                            : ", above the bound");
    }

    void report() {
        if (args_.json) {
            nlohmann::ordered_json j = result_json(in_, r_, args_.solver.limits());
            j["bandwidth"] = bw_;
            if (r_.hierarchical) j["hierarchical"] = hierarchical_json(*r_.hierarchical);
            j["witness"] = args_.outputs.empty() || !r_.witness ? nlohmann::ordered_json() : nlohmann::ordered_json(args_.outputs);
            ctx_.print(j.dump() + "\n");
        } else {
            std::string out = result_text(in_, r_, args_.solver.limits()) + bw_text_;
            if (!args_.outputs.empty())
                out += r_.witness ? fmt::format("witness: {}\n", fmt::join(args_.outputs, ", ")) : "witness: none found, nothing written\n";
            ctx_.print(out);
        }
    }

    const OptimizeArgs& args_;
    std::string said_;  ///< the lines before the report (the model chosen, the machine's faults)
    Context& ctx_;
    const Deadline run_;  ///< --timeout from the start: the search and the bandwidth end after it
    SynthInstance in_;
    OptimizeOptions opt_{constructions()};
    OptimizeResult r_;
    nlohmann::ordered_json bw_;  ///< the bandwidth end, for --json
    std::string bw_text_;        ///< and in text
};

}  // namespace

void add_optimize_command(CLI::App& app, Context& ctx) {
    auto args = std::make_shared<OptimizeArgs>();
    auto* cmd = app.add_subcommand(
        "optimize",
        "Find the least number of steps in which a collective completes on a topology under a model: a proven lower bound, "
        "a known schedule, then SAT/UNSAT per horizon T downward. Every schedule found is re-verified by the direct "
        "checker.\nExit code: 0 optimum proved, 3 time limit (best bounds printed), 1 no schedule exists, 2 bad input or "
        "unsupported model.");
    args->instance.add_to(*cmd, "ebft:8, cbft:16, torus:3x5, ideal:16:w=n", synthesizable_collectives() + " (see --method; docs/synthesis.md)",
                          "queues=none,ports=half");
    cmd->add_option("--chunks", args->chunks, "Split every datum into C chunks (messages b(s,c), m(s,d,c)); default 1")
        ->check(CLI::Range(1u, max_chunks));
    cmd->add_option("--rounds", args->rounds,
                    "SCCL's rounds: the steps last R rounds in all, a step of r rounds carries r times every capacity; the least "
                    "steps S <= R with R rounds (default: one round per step)")
        ->check(CLI::Range(1u, 1u << 20));
    cmd->add_option("--method", args->method,
                    "Reductions: direct (the encoding of combining under the buffer rule: every schedule of C chunks), duality "
                    "(optimize the dual broadcast or allgather; allreduce over reduce-scatter then allgather only), auto (default: "
                    "allreduce and scan direct, reduce and reduce_scatter by duality where it applies)")
        ->check(CLI::IsMember({"auto", "direct", "duality"}));
    args->solver.add_to(*cmd);
    cmd->add_flag("--greedy", args->greedy,
                  "Only the greedy synthesizer (chunks matched to channels step by step; networks of processors) and the counting "
                  "bounds, no solver: a verified schedule with its gap to the best lower bound (docs/synthesis.md, \"At scale\")");
    cmd->add_flag("--hierarchical", args->hierarchical,
                  "Machines of boxes: exact phases on one box and one rail, composed (inter-box then intra-box, the reverse, "
                  "splits), compacted and verified whole; with the counting bounds and the greedy, no solver on the whole machine "
                  "(docs/synthesis.md, \"Hierarchical synthesis\")");
    cmd->add_option("--jobs", args->jobs,
                    "Threads for the hierarchical compositions (each laid out, compacted and verified on its own; default 1) and for "
                    "--size (its providers at once, the constructions' shapes, the timing plans, each table at each size, each crossover's "
                    "probes; default the hardware threads); the answers do not depend on it")
        ->check(CLI::Range(1u, 256u));
    cmd->add_option("--start", args->start,
                    "A schedule to start from (a table, or a .sched compiled with its defaults) for the same topology and "
                    "collective: verified first (exit 1 with its counterexamples when it does not hold), then the upper bound (the "
                    "search asks only for fewer steps) and the solver's initial phases");
    cmd->add_option("--seed", args->seed, "The greedy synthesizer's seed (default 1; machines of more than 64 processors start from it)");
    add_size_option(cmd, args->time.sizes, "--size,--sizes",
                    "Time as the objective: among every schedule collsched builds and verifies (rings, tree packings, the least-steps "
                    "schedule, the library's schedules for this machine) the fastest at each size M (NCCL's convention, docs/time.md "
                    "\"Sizes\"), with the proved lower bound on time, the gap, algbw, busbw and the speed-up over NCCL's best; 1M, 1K..1G, "
                    "1K,1M; exit 0 when the fastest meets the bound at every size, 3 otherwise");
    cmd->add_option("--time", args->time_kind, "With --size: which predicted time decides, async (default) or sync (docs/time.md)")
        ->check(CLI::IsMember({"async", "sync"}));
    add_link_option(cmd, args->time.link);
    add_executor_options(cmd, args->time.executor);
    cmd->add_option_function<std::string>(
           "--library",
           [a = args.get()](const std::string& s) {
               a->time.library = s;
               a->library_given = true;
           },
           "With --size: the catalog of library schedules to take candidates from (default schedules/catalog.json; a file named "
           "here must be a catalog, collsched.catalog/1)")
        ->type_name("FILE");
    cmd->add_option("--format", args->format,
                    "With --size and -o: write each size's fastest schedule in this format (" + output_format_list() +
                        "): msccl and mscclpp in the protocol the executor runs it in, an MSCCL++ plan for the sizes it is fastest at "
                        "(optimize --executor mscclpp --format mscclpp -o plan.json)")
        ->check(CLI::IsMember(table_output_formats()));
    cmd->add_flag("--json", args->json, "Print one JSON object instead of text");
    cmd->add_option("-o,--output", args->outputs,
                    "Write the best schedule found: FILE.sched as a schedule (DSL), anything else as a JSON table; repeatable");
    cmd->callback([&ctx, args] { OptimizeRun(*args, ctx).run(); });
}

}  // namespace collsched::tools
