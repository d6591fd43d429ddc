// `collsched pareto`: the Pareto frontier of (steps, rounds per chunk) of a collective on a
// topology, every point a verified schedule and every point below the frontier proved
// impossible (docs/synthesis.md, "Chunks, rounds and the Pareto frontier").
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <stdexcept>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "support/assert.hpp"
#include "support/error.hpp"
#include "support/units.hpp"
#include "runtime/cost_report.hpp"
#include "cli/size_options.hpp"
#include "tools/commands.hpp"
#include "cli/machine_note.hpp"
#include "cli/options.hpp"
#include "cli/output.hpp"
#include "verifier/time/pareto_svg.hpp"
#include "cli/synth_common.hpp"
#include "compiler/table/duality.hpp"
#include "verifier/synth/problem/pareto.hpp"
#include "verifier/time/pareto_report.hpp"
#include "verifier/synth/search/duality.hpp"

namespace collsched::tools {

namespace {

struct ParetoArgs {
    InstanceArgs instance;
    SolverArgs solver;
    std::uint32_t max_chunks = 8;
    std::uint32_t max_steps = 0;
    double solve_timeout = 0;
    bool no_automorphisms = false;
    bool json = false;
    std::string dir, svg;
    std::string method = "auto";
    std::vector<double> sizes;
    std::optional<LinkSpeed> link;
    unsigned jobs = 1;
};

/// The instance and how it is searched, from the arguments; bad input and unsupported models are
/// refused here, before any work.
ParetoRun pareto_run(const ParetoArgs& args, const RunLimits& limits) {
    // pareto() refuses the size first of all; before a graph file is read when it states its count
    args.instance.refuse_before_reading([&](Collective& c, const Topology& stand_in) {
        if (!c.row().has_partials()) refuse_goal_pairs(c, stand_in.processors(), args.instance.topology, default_max_goals);
    });
    ParetoRun run;
    run.in = args.instance.instance(RouteSpace::any, true, limits);
    // a machine with routers: replicate=yes unless --model says or the collective reduces (cli/machine_note.hpp)
    args.instance.said =
        choose_router_model(*run.in.topology, args.instance.model, run.in.collective.row().has_partials(), run.in.model) + args.instance.said;
    const CollectiveKind kind = run.in.collective.kind;
    run.reduction = run.in.collective.row().has_partials();
    if (args.method != "auto" && !run.reduction)
        throw InputError(fmt::format("--method {} applies to reduce:R, reduce_scatter, allreduce and scan", args.method));
    run.by_duality = run.reduction && (args.method == "duality" || (args.method == "auto" && kind != CollectiveKind::scan));
    if (run.by_duality) {
        if (kind == CollectiveKind::scan) throw InputError("scan has no dual collective; use --method direct");
        if (std::string why = duality_problem(*run.in.topology, run.in.model); !why.empty()) throw InputError(why);
    } else if (kind == CollectiveKind::reduce_scatter) {
        throw InputError("pareto searches C = 1..K chunks, and reduce_scatter takes a multiple of P: use --method duality");
    } else {
        SynthInstance probe = run.in;
        probe.collective.chunks = 2;
        encoding_for(probe);  // unsupported models are bad input, before any work
    }
    run.least = run.in;
    return run;
}

ParetoOptions pareto_options(const ParetoArgs& args) {
    const OptimizeOptions oo = args.solver.options();
    ParetoOptions po{oo.registry};
    po.synth = oo.synth;
    po.timeout = oo.timeout;
    po.max_chunks = args.max_chunks;
    po.max_steps = args.max_steps;
    po.solve_timeout = args.solve_timeout;
    po.use_automorphisms = !args.no_automorphisms;
    po.jobs = args.jobs;
    return po;
}

/// The frontier, directly or through the dual (then the least steps and the space are the dual's).
ParetoResult solve(ParetoRun& run, const ParetoOptions& po, std::uint32_t max_chunks) {
    if (run.by_duality) {
        ReductionPareto rp = pareto_reduction(run.in, po);
        run.space = std::move(rp.space);
        run.least = rp.dual;
        return std::move(rp.result);
    }
    ParetoResult res = pareto(run.in, po);
    std::string base = search_space(run.in);
    if (run.reduction)  // search_space names the one chunk of `in`; the frontier covers C = 1..K
        if (auto at = base.find(" of 1 chunk "); at != std::string::npos) base.erase(at, 11);
    run.space = fmt::format("{}; C = 1..{} chunks per datum, any rounds per step", base, max_chunks);
    return res;
}

/// -d and --svg, before the report so that it can name the files: every frontier point as
/// DIR/NAME.sched and .json (atomically, each), per row.
std::vector<std::vector<std::string>> write_points(const ParetoRun& run, const ParetoResult& res, const ParetoArgs& args) {
    std::vector<std::vector<std::string>> files(res.rows.size());
    if (!args.dir.empty()) {
        std::filesystem::create_directories(args.dir);
        for (std::size_t i = 0; i < res.rows.size(); ++i) {
            if (!res.rows[i].frontier) continue;
            std::string base = (std::filesystem::path(args.dir) / pareto_point_name(run.in, *res.rows[i].best)).string();
            std::string comment = pareto_point_comment(run.in, res, res.rows[i], run.space);
            for (const char* ext : {".sched", ".json"}) {
                write_witness(base + ext, res.rows[i].best->table, comment);
                files[i].push_back(base + ext);
            }
        }
    }
    if (!args.svg.empty()) {
        const std::string svg = frontier_svg(res, fmt::format("{} on {}: the Pareto frontier", run.in.collective.to_string(),
                                                              std::filesystem::path(run.in.topology->spec()).filename().string()));
        write_output(args.svg, [&](const Flush& flush, fmt::memory_buffer& buf) {
            buf.append(svg.data(), svg.data() + svg.size());
            flush(buf);
        });
    }
    return files;
}

}  // namespace

void add_pareto_command(CLI::App& app, Context& ctx) {
    auto args = std::make_shared<ParetoArgs>();
    auto* cmd = app.add_subcommand(
        "pareto",
        "The Pareto frontier of (steps, rounds per chunk) of a collective: the least steps, a proved lower bound on rounds per "
        "chunk (cut counting), then for each number of steps the least R/C with at most --max-chunks chunks per datum, until "
        "the bound is met. Every point is a schedule verified by the direct checker; every (chunks, rounds) below it is UNSAT "
        "or below the bound.\nExit code: 0 frontier proved, 1 no schedule exists, 3 time limit or a solve without answer (what "
        "was proved is printed), 2 bad input or unsupported model.");
    args->instance.add_to(*cmd, "graph:schedules/machines/dgx1.json, ring:8", synthesizable_collectives() + " (see --method)");
    cmd->add_option("--method", args->method,
                    "Reductions: duality (the dual broadcast's or allgather's frontier reversed; allreduce: reduce-scatter then "
                    "allgather, the composed space) or direct (the encoding of combining: every schedule). auto (default): scan "
                    "direct, the others by duality")
        ->check(CLI::IsMember({"auto", "direct", "duality"}));
    cmd->add_option("--max-chunks", args->max_chunks, "K: search C = 1..K chunks per datum (default 8)")->check(CLI::Range(1u, 4096u));
    cmd->add_option("--max-steps", args->max_steps, "Stop after this many steps (default: none; the walk ends by itself)")
        ->check(CLI::Range(1u, 1u << 20));
    cmd->add_option("--solve-timeout", args->solve_timeout,
                    "Seconds for one (steps, chunks, rounds) instance; one that ends without answer leaves its row unproved and "
                    "the walk goes on (default: what is left of --timeout)")
        ->check(seconds_option(true));
    cmd->add_flag("--no-automorphisms", args->no_automorphisms,
                  "Do not look for schedules among those invariant under the topology's automorphisms first");
    args->solver.timeout = 600;
    args->solver.add_to(*cmd, false, false);
    cmd->add_flag("--json", args->json, "Print one JSON object instead of text");
    add_size_option(cmd, args->sizes, "--size,--sizes",
                    "Also predict every frontier point's time at the collective's size M (NCCL's, docs/time.md \"Sizes\") on the topology's link speeds, "
                    "synchronous and asynchronous (docs/time.md): 1M, 1K..1G, 1K,1M");
    add_link_option(cmd, args->link);
    cmd->add_option("-d,--dir", args->dir, "Write every frontier point as DIR/NAME.sched (DSL) and DIR/NAME.json (table)");
    cmd->add_option("--svg", args->svg, "Draw the frontier (steps against R/C, the bounds, proved and open points) as SVG to this file")
        ->check(file_option());
    cmd->add_option("--jobs", args->jobs,
                    "Decide the next N (steps, chunks, rounds) instances of a row at once, on N threads; the frontier is the same "
                    "for every N. Under mpirun -n K the instances are shared among the K ranks too (docs/synthesis.md, \"Threads "
                    "and MPI ranks\")")
        ->check(CLI::Range(1u, 256u));
    cmd->callback([&ctx, args] {
        // --timeout counts from the start of the command: reading a machine of 4,096 GPUs takes seconds.
        const Deadline whole = Deadline::after(args->solver.timeout);
        ParetoRun run = pareto_run(*args, RunLimits{whole, args->solver.memory_budget()});
        ParetoOptions po = pareto_options(*args);
        if (po.timeout > 0) po.timeout = std::max(1e-3, whole.left());
        po.sharing = ctx.sharing;
        const bool follower = ctx.sharing && !ctx.sharing->leader();
        const bool tty = !follower && ::isatty(2) == 1;
        bool open = false;
        po.progress = [&](const RoundsAttempt& a, bool done, double elapsed) {
            if (!tty) return;
            std::string line = done ? fmt::format("pareto: S = {}, C = {}, R = {}: {}, {:.1f} s", a.steps, a.chunks, a.rounds,
                                                  to_string(a.answer), elapsed)
                                    : fmt::format("pareto: S = {}, C = {}, R = {} solving, {:.1f} s", a.steps, a.chunks, a.rounds, elapsed);
            std::fprintf(stderr, "\r\033[K%s", line.c_str());
            if (done) std::fputc('\n', stderr);
            open = !done;
            std::fflush(stderr);
        };
        ParetoResult res;
        try {
            res = solve(run, po, args->max_chunks);
        } catch (const std::logic_error& e) {
            if (open) std::fputc('\n', stderr);
            throw Progress::internal_error(e);
        }
        if (open) std::fputc('\n', stderr);
        if (follower) return;  // the leader writes and reports
        const std::vector<std::vector<std::string>> files = write_points(run, res, *args);
        ctx.print((args->json ? std::string() : args->instance.said) + pareto_report(run, res, files, ParetoReportOptions{args->max_chunks, args->solver.limits(), args->sizes, args->link, args->json}));
        ctx.exit_code = res.least_steps.status == OptStatus::infeasible ? 1 : res.complete ? 0 : 3;
    });
}

}  // namespace collsched::tools
