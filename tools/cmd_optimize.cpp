// `collsched optimize`: the least completion time of a collective on a topology under a model,
// with its proof status, and the witness schedule.
#include <unistd.h>

#include <cstdio>
#include <stdexcept>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "compiler/table_io.hpp"
#include "compiler/table_printer.hpp"
#include "dsl/diagnostics.hpp"
#include "tools/commands.hpp"
#include "tools/synth_common.hpp"
#include "verifier/synth.hpp"

namespace collsched::tools {

namespace {

struct OptimizeArgs {
    std::string topology;
    std::string collective;
    std::string model;
    SolverArgs solver;
    bool json = false;
    std::vector<std::string> outputs;
    std::uint32_t chunks = 1;
    std::uint32_t rounds = 0;
};

std::string text_report(const SynthInstance& in, const OptimizeResult& r, const SolverArgs& sa) {
    std::string s = fmt::format("optimize {} on {} ({}), encoding {}, solver {}\n", in.collective.to_string(), in.topology->spec(),
                                to_string(in.model), to_string(r.encoding), sa.backend_name());
    s += "search: " + search_line(in, r) + "\n";
    s += "lower bounds (proved by counting):\n";
    for (const Bound& b : r.bounds) s += bound_line(in, b);
    s += r.known_steps ? fmt::format("known schedule: {} steps ({})\n", *r.known_steps, r.known_source)
                       : in.chunked() ? std::string("known schedule: none (the known schedules have one chunk and one round per step)\n")
                                      : std::string("known schedule: none (the greedy did not finish)\n");
    if (!r.attempts.empty())
        for (const Attempt& a : r.attempts)
            s += fmt::format("  T = {}: {} ({:.3f} s){}\n", a.horizon, to_string(a.answer), a.seconds,
                             a.reason.empty() ? std::string() : fmt::format(": {}", a.reason));
    s += status_sentence(in, r) + "\n";
    return s;
}

}  // namespace

void add_optimize_command(CLI::App& app, Context& ctx) {
    auto args = std::make_shared<OptimizeArgs>();
    auto* cmd = app.add_subcommand(
        "optimize",
        "Find the least number of steps in which a collective completes on a topology under a model: a proven lower bound, "
        "a known schedule, then SAT/UNSAT per horizon T downward. Every schedule found is re-verified by the direct "
        "checker.\nExit code: 0 optimum proved, 3 time limit (best bounds printed), 1 no schedule exists, 2 bad input or "
        "unsupported model.");
    cmd->add_option("--topology", args->topology, "Topology spec, e.g. ebft:8, cbft:16, torus:3x5, ideal:16:w=n")->required();
    cmd->add_option("--collective", args->collective, "alltoall, allgather, broadcast:R, scatter:R, gather:R, multicast:R:a,b")
        ->required();
    cmd->add_option("--model", args->model, "key=value pairs on top of the family's default, e.g. queues=none,ports=half");
    cmd->add_option("--chunks", args->chunks, "Split every datum into C chunks (messages b(s,c), m(s,d,c)); default 1")
        ->check(CLI::Range(1u, max_chunks));
    cmd->add_option("--rounds", args->rounds,
                    "SCCL's rounds: the steps last R rounds in all, a step of r rounds carries r times every capacity; the least "
                    "steps S <= R with R rounds (default: one round per step)")
        ->check(CLI::Range(1u, 1u << 20));
    args->solver.add_to(*cmd);
    cmd->add_flag("--json", args->json, "Print one JSON object instead of text");
    cmd->add_option("-o,--output", args->outputs,
                    "Write the best schedule found: FILE.sched as a schedule (DSL), anything else as a JSON table; repeatable");
    cmd->callback([&ctx, args] {
        auto topo = Topology::parse(args->topology);
        SynthInstance in{topo, apply_model_options(topo->default_model(), args->model), Collective::parse(args->collective, *topo),
                         args->solver.route_space()};
        in.collective.set_chunks(args->chunks, *topo);
        if (args->rounds > 0) in.rounds = args->rounds;
        if (in.rounds && args->solver.incremental) throw InputError("--incremental is not supported with --rounds (every S is its own encoding)");
        encoding_for(in);  // unsupported models are bad input, before any work
        OptimizeOptions opt = args->solver.options();
        Progress progress;
        opt.progress = progress.callback();
        OptimizeResult r;
        try {
            r = optimize(in, opt);
        } catch (const std::logic_error& e) {
            progress.finish();
            throw InputError(fmt::format("internal error (a bug, please report it): {}", e.what()));
        }
        progress.finish();
        for (const std::string& path : args->outputs) {
            if (!r.witness) break;
            write_witness(path, *r.witness, witness_comment(in, r));
        }
        if (args->json) {
            nlohmann::ordered_json j = result_json(in, r, args->solver);
            j["witness"] = args->outputs.empty() || !r.witness ? nlohmann::ordered_json() : nlohmann::ordered_json(args->outputs);
            std::string out = j.dump() + "\n";
            std::fwrite(out.data(), 1, out.size(), stdout);
        } else {
            std::string out = text_report(in, r, args->solver);
            if (!args->outputs.empty())
                out += r.witness ? fmt::format("witness: {}\n", fmt::join(args->outputs, ", ")) : "witness: none found, nothing written\n";
            std::fwrite(out.data(), 1, out.size(), stdout);
        }
        ctx.exit_code = exit_code(r);
    });
}

}  // namespace collsched::tools
