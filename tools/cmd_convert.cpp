// `collsched convert FILE --format json|csv|ranks|msccl|mscclpp|dot|svg|html|dsl|chakra [-o OUT]`: rewrites a
// table (JSON, CSV, per-rank JSON, MSCCL-IR, Chakra traces, or a compiled schedule) in another
// format; the output files appear only when everything succeeded (docs/formats.md, docs/exports.md).
#include <unistd.h>

#include <cstdio>
#include <filesystem>

#include <fmt/format.h>

#include "compiler/formats/export_formats.hpp"
#include "compiler/interop/export_mscclpp.hpp"
#include "compiler/io/table_io.hpp"
#include "support/assert.hpp"
#include "support/budget.hpp"
#include "support/error.hpp"
#include "support/teardown.hpp"
#include "support/units.hpp"
#include "tools/commands.hpp"
#include "cli/options.hpp"
#include "cli/output.hpp"
#include "cli/input.hpp"
#include "cli/verify_nccl_graph.hpp"

namespace collsched::tools {

void add_convert_command(CLI::App& app, Context& ctx) {
    struct Args {
        std::string input, output = "-", format, rows = "auto";
        std::vector<std::string> defines;
        MscclOptions msccl;
        MscclppOptions mscclpp;
        std::string proto = "Simple";
        std::string topology;
        std::uint64_t bytes = 1024;
        double timeout = 0;
    };
    auto args = std::make_shared<Args>();
    auto* cmd = app.add_subcommand("convert",
                                   fmt::format("Rewrite a send table (JSON, CSV, per-rank JSON) or a compiled schedule (.sched) in another "
                                               "format: {}. Transfers come out sorted by (step, channel, message).\nExit code: 0 "
                                               "written, 2 bad input or a format that cannot hold the table (nothing written), 3 "
                                               "--timeout passed (nothing written).",
                                               output_format_descriptions()));
    cmd->add_option("FILE", args->input,
                    "Table file (.json, .csv, per-rank .json) or schedule (.sched); - reads standard input; nccl:ring, nccl:tree or nccl:* "
                    "(both): NCCL's own channels for --topology as an NCCL graph file (--format nccl-graph)")
        ->required();
    cmd->add_option("-D", args->defines, "Override a schedule parameter: -D n=16 (repeatable)");
    cmd->add_option("--format", args->format,
                    table_output_formats_help())
        ->check(CLI::IsMember(table_output_formats()));
    cmd->add_option("--rows", args->rows, "Timeline rows for svg and html: auto (channels up to 128, else a fat tree's router "
                                          "links up to 128, else processors), channels, routers or processors")
        ->check(CLI::IsMember({"auto", "channels", "routers", "processors"}));
    add_msccl_max_steps(cmd, args->msccl.max_steps);
    cmd->add_option("--channels", args->msccl.channels,
                    "msccl: thread blocks (each on its own channel) per connection, to fit the step limit (default 1)");
    cmd->add_option("--proto", args->proto,
                    "msccl: the protocol attribute, Simple, LL or LL128; mscclpp: Simple (puts, signals and waits) or LL "
                    "(packets with flags) (default Simple)")
        ->check(CLI::IsMember({"Simple", "LL", "LL128"}));
    cmd->add_option("--instances", args->mscclpp.instances,
                    "msccl, mscclpp: copies of the program over interleaved slices of every chunk, each with its own thread "
                    "blocks and channels (default 1; msccl: at most 32 channels in all)")
        ->check(CLI::Range(1, 64));
    cmd->add_option("--chains-a-block", args->mscclpp.chains_a_block,
                    "mscclpp: the chains (messages, or a reduction's chunks) dealt to the thread blocks this many consecutive ones "
                    "at a time, so that a block puts them one after another (default 1; optimize --executor mscclpp tries 4 too)")
        ->check(CLI::Range(1, 1024));
    cmd->add_flag("--out-of-place", args->mscclpp.out_of_place,
                  "mscclpp: write an out-of-place plan (allgather and allreduce are written in place by default)");
    cmd->add_option_function<std::string>(
           "--size-range",
           [args](const std::string& text) { parse_size_range(text, args->mscclpp); },
           "mscclpp: the sizes the plan is for, A..B (its min_message_size and max_message_size; default every size), e.g. "
           "the range in which `optimize --sizes` names this schedule the fastest")
        ->type_name("A..B");
    cmd->add_flag("--inplace", args->msccl.inplace,
                  "msccl: a program for in-place calls only (inplace=\"1\" outofplace=\"0\"): copies of a chunk onto itself "
                  "are left out");
    cmd->add_flag("!--no-pair", args->msccl.pair,
                  "msccl: a thread block per connection end instead of one per send and receive peer pair");
    cmd->add_flag("!--no-fuse", args->msccl.fuse, "msccl: write a receive and the send of what it wrote as two steps (no rcs, rrcs)");
    cmd->add_flag("!--no-coalesce", args->msccl.coalesce,
                  "msccl: one step per chunk, also where contiguous chunks go over one connection in one step (no cnt > 1)");
    cmd->add_option("--topology", args->topology,
                    "MSCCL-IR input: the topology the program runs on (default complete:P); nccl:ALGORITHM: the machine");
    cmd->add_option("--bytes", args->bytes, "chakra: bytes per message (default 1024)");
    cmd->add_option("--timeout", args->timeout,
                    "Seconds for the whole run, reading the table included (exit 3, nothing written, once past); the MSCCL++ writer "
                    "and the check of its plan stop at it; 0 (the default) means no limit")
        ->check(CLI::NonNegativeNumber);
    cmd->add_option("-o,--output", args->output, "Output file (default: standard output); written only on success")->check(file_option());
    cmd->callback([&ctx, args] {
        if (args->input.starts_with("nccl:")) {  // NCCL's own rings or trees for --topology, as a graph file
            if (!args->format.empty() && args->format != "nccl-graph")
                throw InputError(fmt::format("{}: NCCL's algorithms convert to --format nccl-graph (their tables: compare {} --topology M)",
                                             args->input, args->input));
            write_nccl_algorithm_graph(std::string_view(args->input).substr(5), args->topology, args->output);
            ctx.exit_code = 0;
            return;
        }
        const Deadline deadline = Deadline::after(args->timeout);
        const std::string format = output_format(args->format, args->output, true);
        // a table's own "at" fields stay
        MscclImportOptions msccl;
        msccl.topology = args->topology;
        msccl.max_steps = args->msccl.max_steps;
        SendTable t = load_input(args->input, args->defines, false, false, msccl);
        if (deadline.passed()) throw LimitReached(fmt::format("time limit (--timeout {}): the table is read, nothing written", args->timeout));
        ExportOptions options;
        options.timeline.rows = parse_timeline_rows(args->rows);
        options.msccl = args->msccl;
        options.mscclpp = args->mscclpp;
        options.mscclpp.deadline = deadline;
        options.msccl.proto = options.mscclpp.proto = args->proto;
        options.file = args->output;
        options.msccl.instances = args->mscclpp.instances;
        options.bytes = args->bytes;
        try {
            write_table_output(t, format, args->output, options);
        } catch (const LimitReached& e) {
            bury(std::make_shared<SendTable>(std::move(t)));  // the command ends: its table is left to the operating system
            throw LimitReached(fmt::format("--timeout {}: {}; nothing written", args->timeout, e.what()));
        }
        ctx.exit_code = 0;
    });
}

}  // namespace collsched::tools
