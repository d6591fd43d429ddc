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
#include "tools/size_options.hpp"
#include "tools/time_objective.hpp"
#include "tools/commands.hpp"
#include "tools/options.hpp"
#include "tools/output.hpp"
#include "tools/pareto_svg.hpp"
#include "tools/synth_common.hpp"
#include "compiler/table/duality.hpp"
#include "verifier/synth/problem/pareto.hpp"
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

/// The predicted times of a frontier point at every --size (docs/time.md).
nlohmann::ordered_json point_times(const ParetoPoint& p, const ParetoArgs& args) {
    nlohmann::ordered_json a = nlohmann::ordered_json::array();
    for (double m : args.sizes) {
        TimePrediction t = predict_time(p.table, TimeOptions{m, args.link});
        a.push_back({{"size", m}, {"synchronous_s", t.synchronous}, {"asynchronous_s", t.asynchronous}});
    }
    return a;
}

/// A proved bound on time above a verified frontier point's predicted time is a bug: stop loudly
/// with both numbers rather than print the bound (docs/time.md, "Lower bounds on time").
void check_time_bounds(const TimeBounds& tb, const ParetoResult& res, const ParetoArgs& args) {
    for (const ParetoRow& row : res.rows) {
        if (!row.frontier) continue;
        for (double m : args.sizes) {
            const TimePrediction t = predict_time(row.best->table, TimeOptions{m, args.link});
            const TimeBound b = evaluate(tb, m);
            for (double x : {t.asynchronous, t.synchronous}) {
                const std::string bad = bound_violation(b, tb, x, fmt::format("the frontier point of {} steps", row.steps));
                COLLSCHED_ASSERT_MSG(bad.empty(), bad);
            }
        }
    }
}

std::string point_name(const SynthInstance& in, const ParetoPoint& p) {
    std::string c = in.collective.to_string();
    for (char& ch : c)
        if (ch == ':' || ch == ',') ch = '-';
    return fmt::format("{}-S{}-R{}-C{}", c, p.steps, p.rounds, p.chunks);
}

std::string rounds_text(const std::vector<Step>& r) { return fmt::format("{}", fmt::join(r, "+")); }

std::string point_comment(const SynthInstance& in, const ParetoResult& res, const ParetoRow& row, const std::string& space) {
    const ParetoPoint& p = *row.best;
    std::string c = fmt::format("{} on {}, model {}: {} steps, {} rounds ({}), {} chunks: R/C = {}.\n", in.collective.to_string(),
                                in.topology->spec(), to_string(in.model), p.steps, p.rounds, rounds_text(p.step_rounds), p.chunks,
                                p.rounds_per_chunk().text());
    c += fmt::format("A point of the Pareto frontier of (steps, rounds per chunk) over {}.\n", space);
    c += fmt::format("Proof: {}.\n", row.excluded);
    if (!res.bounds.empty()) c += fmt::format("Bandwidth bound: R/C >= {} ({}).\n", res.bandwidth_bound.text(), res.bounds.front().detail);
    c += "Verified by collsched's direct checker before it was written. Written by collsched pareto (docs/synthesis.md).";
    return c;
}

nlohmann::ordered_json point_json(const ParetoPoint& p, const std::vector<std::string>& files) {
    nlohmann::ordered_json j{{"steps", p.steps},
                             {"rounds", p.rounds},
                             {"chunks", p.chunks},
                             {"rounds_per_chunk", p.rounds_per_chunk().text()},
                             {"rounds_per_chunk_value", p.rounds_per_chunk().value()},
                             {"step_rounds", p.step_rounds}};
    j["files"] = files;
    return j;
}

nlohmann::ordered_json certificate_json(const CutCertificate& c) {
    return {{"inside", c.inside},       {"routers_inside", c.routers}, {"crossing", c.crossing}, {"demand", c.demand},
            {"capacity", c.capacity},   {"reversed", c.reversed},      {"exact", c.exact},       {"relaxations", c.relaxations},
            {"max_flows", c.flows},     {"sinks", c.sinks}};
}

/// The run as the command set it up: the instance, how it is searched, and what the report names.
struct ParetoRun {
    SynthInstance in;
    bool reduction = false;   ///< a collective with partials
    bool by_duality = false;  ///< searched through its dual
    SynthInstance least;      ///< the instance whose least steps the report states (the dual's by duality)
    std::string space;        ///< the search space, one sentence
};

std::string report_json(const ParetoRun& run, const ParetoResult& res, const std::vector<std::vector<std::string>>& files, const ParetoArgs& args) {
    const SynthInstance& in = run.in;
    const SynthInstance& least = run.least;
    const std::string& space = run.space;
    const bool reduction = run.reduction, by_duality = run.by_duality;
    nlohmann::ordered_json j;
    j["topology"] = in.topology->spec();
    j["collective"] = in.collective.to_string();
    j["model"] = to_string(in.model);
    j["search"] = space;
    j["max_chunks"] = args.max_chunks;
    j["complete"] = res.complete;
    j["end"] = res.end;
    j["seconds"] = res.seconds;
    j["method"] = !reduction ? "" : by_duality ? "duality" : "direct";
    if (by_duality) j["dual"] = least.collective.to_string();
    j["least_steps"] = result_json(least, res.least_steps, args.solver);  // one round per step
    j["first_steps"] = res.first_steps;
    j["bandwidth_bound"] = res.bounds.empty()
                               ? nlohmann::ordered_json()
                               : nlohmann::ordered_json{{"rounds_per_chunk", res.bandwidth_bound.text()},
                                                        {"value", res.bandwidth_bound.value()},
                                                        {"name", res.bounds.front().name},
                                                        {"detail", res.bounds.front().detail}};
    if (!res.bounds.empty() && res.bounds.front().certificate) j["bandwidth_bound"]["certificate"] = certificate_json(*res.bounds.front().certificate);
    if (res.packed) {
        nlohmann::ordered_json pj = point_json(*res.packed, {});
        pj["depth"] = res.packed_depth;
        pj["bandwidth_optimal"] = res.packed_optimal;
        pj["note"] = res.packed_note;
        j["bandwidth_end"] = std::move(pj);
    } else {
        j["bandwidth_end"] = {{"note", res.packed_note}};
    }
    auto& bj = j["bounds"] = nlohmann::ordered_json::array();
    for (const BandwidthBound& b : res.bounds)
        bj.push_back({{"rounds_per_chunk", b.rounds_per_chunk.text()}, {"name", b.name}, {"detail", b.detail}});
    // Built apart and moved in at the end: a reference into an ordered_json object dangles
    // when a later key grows its vector (the crash of pareto --json on DGX-1 reduce_scatter).
    nlohmann::ordered_json fj = nlohmann::ordered_json::array(), rj = nlohmann::ordered_json::array();
    for (std::size_t i = 0; i < res.rows.size(); ++i) {
        const ParetoRow& row = res.rows[i];
        nlohmann::ordered_json x{{"steps", row.steps}, {"frontier", row.frontier}, {"proved", row.proved}, {"excluded", row.excluded}};
        x["best"] = row.best ? point_json(*row.best, files[i]) : nlohmann::ordered_json();
        auto& aj = x["attempts"] = nlohmann::ordered_json::array();
        for (const RoundsAttempt& a : row.attempts) {
            nlohmann::ordered_json y{{"chunks", a.chunks}, {"rounds", a.rounds}, {"answer", to_string(a.answer)}, {"seconds", a.seconds}};
            if (!a.reason.empty()) y["reason"] = a.reason;
            aj.push_back(std::move(y));
        }
        rj.push_back(std::move(x));
        if (row.frontier) {
            nlohmann::ordered_json pj = point_json(*row.best, files[i]);
            if (!args.sizes.empty()) pj["time"] = point_times(*row.best, args);
            fj.push_back(std::move(pj));
        }
    }
    j["frontier"] = std::move(fj);
    j["rows"] = std::move(rj);
    if (!args.sizes.empty())
        if (auto tb = time_bounds(*in.topology, in.collective, in.model, args.link)) {
            check_time_bounds(*tb, res, args);
            nlohmann::ordered_json bj2 = nlohmann::ordered_json::array();
            for (double m : args.sizes) bj2.push_back({{"size_bytes", m}, {"time_bound", bound_json(*tb, evaluate(*tb, m))}});
            j["time_lower_bounds"] = std::move(bj2);
        }
    return j.dump() + "\n";
}

std::string report_text(const ParetoRun& run, const ParetoResult& res, const std::vector<std::vector<std::string>>& files, const ParetoArgs& args) {
    const SynthInstance& in = run.in;
    const SynthInstance& least = run.least;
    const std::string& space = run.space;
    const bool by_duality = run.by_duality;
    const CollectiveKind kind = in.collective.kind;
    std::string s = fmt::format("pareto {} on {} ({}), chunks 1..{}, solver {}\n", in.collective.to_string(), in.topology->spec(),
                                to_string(in.model), args.max_chunks, args.solver.backend_name());
    s += fmt::format("search: {}\n", space);
    if (by_duality)
        s += fmt::format("by duality with {}: its least steps, bounds and frontier below, each point reversed{}\n",
                         least.collective.to_string(), kind == CollectiveKind::allreduce ? " and followed by itself" : "");
    s += "least steps of one round each: " + status_sentence(least, res.least_steps) + "\n";
    if (res.least_steps.optimum && res.first_steps > 0 && res.first_steps < *res.least_steps.optimum)
        s += fmt::format("with several rounds per step fewer steps can do: the rows start at {} (the distance bound: a chunk "
                         "crosses one channel per step, whatever its rounds)\n",
                         res.first_steps);
    if (res.bounds.empty()) s += "bandwidth bound: none\n";
    for (const BandwidthBound& b : res.bounds)
        s += fmt::format("bandwidth bound: R/C >= {} ({}: {})\n", b.rounds_per_chunk.text(), b.name, b.detail);
    for (const ParetoRow& row : res.rows)
        for (const RoundsAttempt& a : row.attempts)
            s += fmt::format("  S = {}, C = {}, R = {}: {} ({:.3f} s){}\n", a.steps, a.chunks, a.rounds, to_string(a.answer), a.seconds,
                             a.reason.empty() ? std::string() : ": " + a.reason);
    if (res.packed)
        s += fmt::format("bandwidth end (tree packing): {} steps, {} rounds, {} chunks, R/C = {}, trees at most {} deep: {}\n",
                         res.packed->steps, res.packed->rounds, res.packed->chunks, res.packed->rounds_per_chunk().text(),
                         res.packed_depth, res.packed_note);
    else
        s += fmt::format("bandwidth end (tree packing): none ({})\n", res.packed_note);
    s += "frontier (each point a schedule verified by the direct checker):\n";
    s += "  steps  rounds  chunks  R/C    rounds per step\n";
    for (std::size_t i = 0; i < res.rows.size(); ++i) {
        const ParetoRow& row = res.rows[i];
        if (!row.frontier) continue;
        const ParetoPoint& p = *row.best;
        s += fmt::format("  {:<5}  {:<6}  {:<6}  {:<5}  {}{}\n", p.steps, p.rounds, p.chunks, p.rounds_per_chunk().text(),
                         rounds_text(p.step_rounds), files[i].empty() ? "" : fmt::format("  ({})", fmt::join(files[i], ", ")));
    }
    if (!args.sizes.empty()) {
        s += fmt::format("predicted time of the frontier points (docs/time.md); {}:\n",
                         speeds_text(*in.topology, args.link));
        s += fmt::format("  {:<5}  {:<6}  {:<6}  {:<10}  {:>12}  {:>12}\n", "steps", "rounds", "chunks", "size", "synchronous", "asynchronous");
        for (const ParetoRow& row : res.rows) {
            if (!row.frontier) continue;
            const ParetoPoint& p = *row.best;
            for (const auto& x : point_times(p, args))
                s += fmt::format("  {:<5}  {:<6}  {:<6}  {:<10}  {:>12}  {:>12}\n", p.steps, p.rounds, p.chunks,
                                 support::format_bytes(x["size"].get<double>()), support::format_seconds(x["synchronous_s"].get<double>()),
                                 support::format_seconds(x["asynchronous_s"].get<double>()));
        }
    }
    if (!args.sizes.empty())
        if (auto tb = time_bounds(*in.topology, in.collective, in.model, args.link)) {
            check_time_bounds(*tb, res, args);
            s += bound_lines(*tb, args.sizes);
        }
    s += "proofs:\n";
    for (const ParetoRow& row : res.rows) s += fmt::format("  {} steps: {}{}\n", row.steps, row.excluded, "");
    s += fmt::format("end: {}; {} ({:.2f} s)\n", res.end, res.complete ? "every point proved" : "NOT complete", res.seconds);
    return s;
}

/// The instance and how it is searched, from the arguments; bad input and unsupported models are
/// refused here, before any work.
ParetoRun pareto_run(const ParetoArgs& args, const RunLimits& limits) {
    // pareto() refuses the size first of all; before a graph file is read when it states its count
    args.instance.refuse_before_reading([&](Collective& c, const Topology& stand_in) {
        if (!c.row().has_partials()) refuse_goal_pairs(c, stand_in.processors(), args.instance.topology, OptimizeOptions{}.max_goals);
    });
    ParetoRun run;
    run.in = args.instance.instance(RouteSpace::any, true, limits);
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
    ParetoOptions po;
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
            std::string base = (std::filesystem::path(args.dir) / point_name(run.in, *res.rows[i].best)).string();
            std::string comment = point_comment(run.in, res, res.rows[i], run.space);
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
        ctx.print(args->json ? report_json(run, res, files, *args) : report_text(run, res, files, *args));
        ctx.exit_code = res.least_steps.status == OptStatus::infeasible ? 1 : res.complete ? 0 : 3;
    });
}

}  // namespace collsched::tools
