// `collsched demo`: the pipelined total exchange of Dimakopoulos & Dimopoulos on an exponential
// binary fat tree, compiled from the library's schedule, checked against the built-in C++
// generator, verified and replayed on the simulator; then the shorter schedule collsched found
// for the same instance (schedules/found, docs/findings.md) with the lower bound that proves it
// optimal. One screen of text, or one JSON object with --json.
#include <algorithm>
#include <cstdio>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "compiler/table/builder.hpp"
#include "compiler/lower/lower.hpp"
#include "runtime/simulator.hpp"
#include "support/text.hpp"
#include "tools/commands.hpp"
#include "cli/options.hpp"
#include "tools/demo_schedule.hpp"
#include "cli/input.hpp"
#include "verifier/check/direct.hpp"
#include "verifier/synth/problem/instance.hpp"

namespace collsched::tools {

namespace {

SendTable compile_demo(const char* text, const char* name, const std::vector<Define>& defines) {
    CompileOptions options;
    options.defines = defines;
    Diagnostics diags;
    std::optional<SendTable> table = compile_text(text, name, options, diags);
    if (!table) throw DiagnosticError(diags, fmt::format("the demo schedule {} does not compile", name));
    return std::move(*table);
}

/// One schedule's witnesses: the direct checker and the simulator.
struct Checked {
    VerifyReport verify;
    SimReport sim;
    bool agree() const { return verify.holds() == (sim.status == SimStatus::completed) && verify.steps == sim.steps; }
};

Checked check(const SendTable& t) { return {verify_direct(t), simulate(t)}; }

nlohmann::ordered_json witnesses_json(const Checked& c) {
    nlohmann::ordered_json j;
    j["verify"] = std::string(c.verify.verdict());
    j["steps"] = c.verify.steps;
    j["simulate"] = std::string(to_string(c.sim.status));
    j["simulated_steps"] = c.sim.steps;
    return j;
}

std::string witnesses_text(const Checked& c) {
    return fmt::format("verify (direct checker): {} in {}; simulate: {} in {}", c.verify.verdict(),
                       support::count_of(c.verify.steps, "step"), to_string(c.sim.status), support::count_of(c.sim.steps, "step"));
}

}  // namespace

void add_demo_command(CLI::App& app, Context& ctx) {
    struct Args {
        std::uint32_t n = 16;
        bool json = false;
    };
    auto args = std::make_shared<Args>();
    auto* cmd = app.add_subcommand("demo",
                                   "Compile, verify and simulate a built-in instance: the pipelined total exchange of "
                                   "Dimakopoulos & Dimopoulos on an exponential binary fat tree (n + 2 log n - 2 steps), "
                                   "from the schedule schedules/bft/ebft_alltoall.sched built into the binary; then, for n = "
                                   "4, 8, 16 and 32, the shorter schedule collsched found (schedules/found) and the lower bound "
                                   "that proves it optimal.\n"
                                   "Exit code: 0 the schedules hold with the claimed step counts, 1 they do not, 2 bad input.");
    cmd->add_option("-n", args->n, "Number of processors (a power of two, at least 2)")
        ->capture_default_str()
        ->check(count_option(2, 65534));
    cmd->add_flag("--json", args->json, "Print one JSON object instead of the report");
    cmd->callback([&ctx, args] {
        const std::uint32_t n = args->n;
        SendTable table = compile_demo(demo_schedule_text, demo_schedule_name, {{"n", n}});
        const Topology& topo = *table.topology;
        const std::uint32_t claim = n + 2 * topo.tree_levels() - 2;
        const bool same = bft_phase_alltoall(table.topology).transfers == table.transfers;
        const Checked paper = check(table);
        bool ok = paper.verify.holds() && paper.verify.steps == claim && same && paper.agree();

        // What collsched found for the same instance, and the bound that proves it optimal.
        const auto* found = std::find_if(std::begin(demo_found), std::end(demo_found), [&](const DemoFound& f) { return f.n == n; });
        std::optional<SendTable> better;
        std::optional<Checked> better_checked;
        std::optional<Bound> bound;
        if (found != std::end(demo_found)) {
            better = compile_demo(found->text, found->name, {});
            better_checked = check(*better);
            for (const Bound& b : lower_bounds({better->topology, better->model, better->collective}))
                if (!bound || b.steps > bound->steps) bound = b;
            ok = ok && better_checked->verify.holds() && better_checked->agree() && bound && bound->steps == better_checked->verify.steps;
        }

        std::string out;
        if (args->json) {
            nlohmann::ordered_json j;
            j["topology"] = topo.spec();
            j["collective"] = table.collective.to_string();
            nlohmann::ordered_json p = witnesses_json(paper);
            p["schedule"] = fmt::format("{} -D n={}", demo_schedule_name, n);
            p["transfers"] = table.transfers.size();
            p["equal_to_reference"] = same;
            p["claimed_steps"] = claim;
            j["paper"] = p;
            if (better) {
                nlohmann::ordered_json f = witnesses_json(*better_checked);
                f["schedule"] = found->name;
                f["transfers"] = better->transfers.size();
                if (bound) f["lower_bound"] = {{"steps", bound->steps}, {"name", bound->name}, {"detail", bound->detail}};
                f["proved_optimal"] = bound && bound->steps == better_checked->verify.steps;
                j["found"] = f;
            } else {
                j["found"] = nullptr;
            }
            j["ok"] = ok;
            out = j.dump(2) + "\n";
        } else {
            out = fmt::format("collsched demo: total exchange on {} ({} processors, {} routers, {} channels)\n\n", topo.spec(),
                              topo.processors(), topo.routers(), topo.channels().size());
            out += fmt::format("1. The paper's schedule: {} -D n={} (the phase algorithm, pipelined phases)\n", demo_schedule_name, n);
            out += fmt::format("   compiled: {}, {} the C++ reference generator transfer for transfer\n",
                               support::count_of(table.transfers.size(), "transfer"), same ? "equal to" : "DIFFERENT FROM");
            out += fmt::format("   {}\n", witnesses_text(paper));
            out += fmt::format("   the paper claims n + 2 log n - 2 = {} steps: {}\n\n", claim,
                               paper.verify.holds() && paper.verify.steps == claim ? "confirmed" : "NOT CONFIRMED");
            if (better) {
                const Step steps = better_checked->verify.steps;
                out += fmt::format("2. What collsched found: {}\n", found->name);
                out += fmt::format("   {}\n", witnesses_text(*better_checked));
                if (bound)
                    out += fmt::format("   optimal: no schedule takes fewer than {} ({}: {})\n", support::count_of(bound->steps, "step"),
                                       bound->name, bound->detail);
                out += steps < claim ? fmt::format("   {} fewer than the paper's schedule\n\n", support::count_of(claim - steps, "step"))
                                     : std::string("   the paper's schedule is already optimal here\n\n");
            } else {
                out += "2. (collsched's optimal schedules are built in for n = 4, 8, 16 and 32)\n\n";
            }
            out += ok ? fmt::format("result: the paper's schedule holds in {} steps as claimed{}; the checker and the simulator agree\n",
                                    paper.verify.steps,
                                    better ? fmt::format(", and {} steps is optimal", better_checked->verify.steps) : std::string())
                      : fmt::format("result: MISMATCH: verifier says {} in {} steps, simulator {} in {}, paper claims {}\n",
                                    paper.verify.verdict(), paper.verify.steps, to_string(paper.sim.status), paper.sim.steps, claim);
        }
        ctx.print(out);
        ctx.exit_code = ok ? 0 : 1;
    });
}

}  // namespace collsched::tools
