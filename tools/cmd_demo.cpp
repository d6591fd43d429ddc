// `collsched demo`: compiles the library's pipelined total exchange for an exponential binary
// fat tree, checks it against the built-in C++ generator of the same algorithm, verifies it and
// replays it on the simulator, printing a short report.
#include <cstdio>

#include <fmt/format.h>

#include "compiler/builder.hpp"
#include "compiler/lower.hpp"
#include "runtime/simulator.hpp"
#include "tools/commands.hpp"
#include "tools/options.hpp"
#include "tools/demo_schedule.hpp"
#include "verifier/direct.hpp"

namespace collsched::tools {

void add_demo_command(CLI::App& app, Context& ctx) {
    auto n = std::make_shared<std::uint32_t>(16);
    auto* cmd = app.add_subcommand("demo",
                                   "Compile, verify and simulate a built-in instance: the pipelined total exchange of "
                                   "Dimakopoulos & Dimopoulos on an exponential binary fat tree (n + 2 log n - 2 steps), "
                                   "from the schedule schedules/bft/ebft_alltoall.sched built into the binary.\n"
                                   "Exit code: 0 the schedule holds with the paper's step count, 1 it does not, 2 bad input.");
    cmd->add_option("-n", *n, "Number of processors (a power of two, at least 2)")->check(count_option(2, 65534));
    cmd->callback([&ctx, n] {
        CompileOptions options;
        options.defines.push_back({"n", *n});
        Diagnostics diags;
        std::optional<SendTable> compiled = compile_text(demo_schedule_text, demo_schedule_name, options, diags);
        if (!compiled) {
            std::string text = diags.render();
            std::fwrite(text.data(), 1, text.size(), stderr);
            throw InputError(fmt::format("the demo schedule does not compile for n = {}", *n));
        }
        const SendTable& table = *compiled;
        const Topology& topo = *table.topology;
        std::uint32_t claim = *n + 2 * topo.tree_levels() - 2;
        bool same = bft_phase_alltoall(table.topology).transfers == table.transfers;
        std::string out = fmt::format(
            "collsched demo: total exchange on {} ({} processors, {} routers, {} channels)\n"
            "schedule: {} -D n={}, the phase algorithm with pipelined phases\n"
            "compiled: {} transfers; {} the C++ reference generator transfer for transfer\n"
            "the paper claims n + 2 log n - 2 = {} steps\n\n",
            topo.spec(), topo.processors(), topo.routers(), topo.channels().size(), demo_schedule_name, *n,
            table.transfers.size(), same ? "equal to" : "DIFFERENT FROM", claim);
        VerifyReport v = verify_direct(table);
        out += "verify (direct checker)\n" + format_report(v, table) + "\n";
        SimReport s = simulate(table);
        out += "simulate\n" + format_sim_report(s, table) + "\n";
        bool witnesses = v.holds() == (s.status == SimStatus::completed) && v.steps == s.steps;
        bool ok = v.holds() && v.steps == claim && same && witnesses;
        out += ok ? fmt::format("result: the schedule holds and takes {} steps, as the paper claims; the checker and the "
                                "simulator agree\n",
                                v.steps)
                  : fmt::format("result: MISMATCH: verifier says {} in {} steps, simulator {} in {}, paper claims {}\n",
                                v.verdict(), v.steps, to_string(s.status), s.steps, claim);
        std::fwrite(out.data(), 1, out.size(), stdout);
        ctx.exit_code = ok ? 0 : 1;
    });
}

}  // namespace collsched::tools
