// `collsched simulate FILE [-D k=v]... [--json] [--trace]`: replays a table on the step-accurate
// simulator and prints what happened on the network.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "compiler/core/input_file.hpp"
#include "compiler/lower/lower.hpp"
#include "dsl/diagnostics.hpp"

#include "runtime/simulator.hpp"
#include "verifier/check/report.hpp"
#include "runtime/cost_report.hpp"
#include "cli/size_options.hpp"
#include "tools/commands.hpp"
#include "cli/options.hpp"
#include "cli/input.hpp"
#include "cli/runs.hpp"
#include "cli/output.hpp"

namespace collsched::tools {

namespace {

struct SimulateArgs {
    std::string input;
    std::vector<std::string> defines;
    MscclImportOptions msccl;
    bool json = false;
    bool trace = false;
    bool stream = false;
    std::uint64_t max_transfers = CompileOptions{}.max_transfers;
    AlphaBeta ab;
    std::string timeline;
};

/// `--stream`: compiles the schedule step by step into the streamed simulator (runtime/simulator.hpp).
SimReport simulate_streamed(const SimulateArgs& args, SendTable& header) {
    if (!args.input.ends_with(".sched")) throw InputError("--stream applies to .sched schedules, not to table files");
    std::string source = read_input_file(args.input, "schedule", max_input_bytes(), max_input_hint);
    Diagnostics diags(args.input, source);
    CompileOptions options;
    options.base_dir = std::filesystem::path(args.input).parent_path().string();
    options.max_transfers = args.max_transfers;
    options.topology = args.msccl.topology;
    StreamSimulator sim(SimOptions{.trace = args.trace});
    if (parse_defines(args.defines, options.defines, diags) && compile_stream(source, args.input, options, diags, sim)) {
        header = sim.header();
        return sim.report();
    }
    fail_with_diagnostics(diags);
}

/// A halt on a transfer of a schedule (on a channel or a link group) ends with the `send` or `hop` statement that made it,
/// " (at file:line:col)", as verify's counterexamples do (verifier/check/report.hpp transfer_origin).
void attach_origin(SimReport& r, const SendTable& table) {
    // a link group over its capacity has no channel: the transfer is found by the group (it was
    // printed without its statement)
    if (r.status != SimStatus::halted || !r.violation || !(r.violation->channel || r.violation->group) || r.violation->messages.empty())
        return;
    const SimViolation& v = *r.violation;
    Violation key{};
    key.step = v.step;
    key.channel = v.channel;
    key.group = v.group;
    key.messages = v.messages;
    auto i = violation_transfer(table, key);
    if (!i) return;
    std::string origin = transfer_origin(table, *i);
    if (!origin.empty()) r.violation->message += fmt::format(" (at {})", origin);
}

}  // namespace

SimReport simulate_table(const SendTable& table, bool trace) {
    SimOptions opt;
    opt.trace = trace;
    SimReport r = simulate(table, opt);
    attach_origin(r, table);
    return r;
}

std::string simulate_json(const SimReport& r, const SendTable& table, const AlphaBeta& ab, std::optional<Step> steps) {
    std::string out = sim_report_to_json(r, table);
    const bool completed = r.status == SimStatus::completed;
    if (shows_bandwidth(table, ab) || (completed && !ab.sizes.empty())) {
        nlohmann::ordered_json j = nlohmann::ordered_json::parse(out);
        add_bandwidth_json(j, table, ab, steps);
        if (completed) add_time_json(j, table, ab);
        out = j.dump() + "\n";
    }
    return out;
}

void add_simulate_command(CLI::App& app, Context& ctx) {
    auto args = std::make_shared<SimulateArgs>();
    auto* cmd = app.add_subcommand(
        "simulate",
        "Replay a send table (JSON or CSV) or a schedule (.sched) step by step on its topology, as an independent second "
        "witness to `verify`. The simulator moves every packet, enforces the table's model (channel capacity per step, "
        "ports, router queues, replication, and causality: a node sends only what it held at the end of the previous "
        "step) and halts at the first broken rule, naming the rule, the step, the channel or node and the messages. "
        "A run that breaks no rule is checked for completeness: every processor must hold its messages at the end.\n"
        "The report gives the completion step T, deliveries, per-channel utilization (transfers / (capacity * T)) with "
        "the busiest channels, queue high-water marks per router level, and the idle receive steps per processor "
        "(\"holes\").\n"
        "Exit code: 0 the collective completes with no rule broken, 1 the run halted on a broken rule or the collective "
        "is incomplete, 2 bad input.");
    cmd->add_option("FILE", args->input, "Table file (.json, .csv) or schedule (.sched)")->required();
    cmd->add_option("-D", args->defines, "Override a schedule parameter: -D n=16 (repeatable; .sched files only)");
    cmd->add_option("--topology", args->msccl.topology,
                    "Schedule (.sched): the machine that replaces its topology statement (a spec or graph:FILE); MSCCL-IR input: the "
                    "topology the program runs on (default complete:P)");
    add_msccl_max_steps(cmd, args->msccl.max_steps);
    cmd->add_flag("--json", args->json,
                  "Print one JSON object (status, rule, steps, deliveries, halt, missing, queue_high_water, holes, busiest, "
                  "channels) instead of text");
    cmd->add_flag("--trace", args->trace, "Also list the transfers of every step (one line per step; large for big tables)");
    cmd->add_flag("--stream", args->stream,
                  "Schedules only: replay each step as the compiler produces it, never holding the whole table (for tables "
                  "too large for memory; cut-through policy, hop timing, replicate=no). A halt names the rule, step and "
                  "place; its sentence says only what is known by that step (docs/performance.md)");
    cmd->add_option("--max-transfers", args->max_transfers,
                    fmt::format("With --stream: stop with an error when the schedule makes more transfers (default {}; the "
                                "streamed replay holds a few steps, so EBFT n = 8192 with 2.9 * 10^9 needs it raised)",
                                args->max_transfers));
    add_alpha_beta_options(cmd, args->ab);
    cmd->add_option("--timeline", args->timeline,
                    "Write the asynchronous run's per-link busy intervals for --size M as JSON to this file (collsched.timeline/1, "
                    "docs/time.md)")
        ->check(file_option());
    cmd->callback([&ctx, args] {
        args->ab.check();
        if (!args->timeline.empty() && args->ab.sizes.size() != 1) throw InputError("--timeline FILE needs one --size M");
        if (!args->timeline.empty() && args->stream) throw InputError("--timeline needs the whole table; simulate without --stream");
        if (!args->ab.sizes.empty() && args->stream) throw InputError("--size needs the whole table; simulate without --stream");
        SendTable table;
        SimReport r;
        if (args->stream) {
            try {
                r = simulate_streamed(*args, table);
            } catch (const NotStreamable& e) {
                throw InputError(fmt::format("{}: cannot stream: {}; simulate without --stream", args->input, e.what()));
            }
        } else {
            table = load_input(args->input, args->defines, true, false, args->msccl);
            r = simulate_table(table, args->trace);
        }
        // streamed, the header has no transfers: the completion step is the replay's
        const std::optional<Step> steps = args->stream ? std::optional<Step>(r.steps) : std::nullopt;
        const bool completed = r.status == SimStatus::completed;
        std::string out = args->json ? simulate_json(r, table, args->ab, steps)
                                     : format_sim_report(r, table) + bandwidth_text(table, args->ab, steps) +
                                           (args->ab.sizes.empty() ? ""
                                            : completed          ? time_text(table, args->ab)
                                                                 : "predicted time: not computed (the run did not complete)\n");
        if (!args->timeline.empty()) {
            if (!completed) throw InputError("--timeline: the run did not complete, so it has no time");
            const TimeOptions topt = args->ab.time_options(args->ab.sizes[0]);
            const std::string text = timeline_json(table, predict_time(table, topt), topt);
            write_output(args->timeline, [&](const Flush& flush, fmt::memory_buffer& buf) {
                buf.append(text.data(), text.data() + text.size());
                flush(buf);
            });
        }
        ctx.print(out);
        ctx.exit_code = r.status == SimStatus::completed ? 0 : 1;
    });
}

}  // namespace collsched::tools
