// `collsched compile FILE.sched [-D k=v]... [-o OUT] [--format json|csv|dsl|chakra|...] [--max-transfers N]
// [--max-iterations N] [--locations]`:
// compiles a schedule to a send table. Diagnostics go to stderr (exit code 2) and nothing is
// written; on success the table is written atomically (cli/output.hpp write_output).
#include <unistd.h>

#include <chrono>
#include <cstdio>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "compiler/formats/export_formats.hpp"
#include "compiler/interop/export_mscclpp.hpp"
#include "compiler/lower/lower.hpp"
#include "compiler/io/table_io.hpp"
#include "compiler/io/table_printer.hpp"
#include "tools/commands.hpp"
#include "cli/input.hpp"
#include "cli/options.hpp"
#include "cli/output.hpp"

namespace collsched::tools {

void add_compile_command(CLI::App& app, Context& ctx) {
    struct Args {
        std::string input, output = "-", format, topology;
        std::vector<std::string> defines;
        std::uint64_t max_transfers = CompileOptions{}.max_transfers;
        std::uint64_t max_iterations = CompileOptions{}.max_iterations;
        bool locations = false;
        bool strict = false;
        MscclppOptions mscclpp;
        std::string size_range;
        std::uint64_t bytes = 1024;
    };
    auto args = std::make_shared<Args>();
    auto* cmd = app.add_subcommand("compile",
                                   "Compile a schedule (.sched, docs/dsl.md) to a send table. Errors are printed as "
                                   "file:line:col: error[CODE]: message with the source line (docs/errors.md); the output is "
                                   "written only when compilation succeeded.\nExit code: 0 compiled, 2 errors.");
    cmd->add_option("FILE", args->input, "Schedule file (.sched, or - for standard input)")->required();
    cmd->add_option("-D", args->defines, "Override a param of the schedule: -D n=16 (repeatable)");
    cmd->add_option("--topology", args->topology,
                    "The machine, replacing the schedule's topology statement: a spec (torus:4x4) or graph:FILE (relative to the "
                    "working directory); give the schedule's params to match with -D (docs/dsl.md, \"topology\")");
    cmd->add_option("-o,--output", args->output, "Output file (default: standard output)")->check(file_option());
    cmd->add_option("--format", args->format, table_output_formats_help())->check(CLI::IsMember(table_output_formats()));
    cmd->add_option("--bytes", args->bytes, "chakra: bytes per message (default 1024)");
    cmd->add_option("--max-transfers", args->max_transfers,
                    fmt::format("Stop with an error when the schedule makes more transfers (default {})", args->max_transfers))
        ->check(count_option(1, max_compile_count));
    cmd->add_option("--max-iterations", args->max_iterations,
                    fmt::format("Stop with an error when the schedule's loops run more iterations (default {})", args->max_iterations))
        ->check(count_option(1, max_compile_count));
    cmd->add_flag("--locations", args->locations,
                  "Give every transfer of the JSON table an \"at\": \"file:line:col\" field naming the send or hop statement "
                  "that made it, so `collsched verify` of the table points counterexamples at the schedule (docs/formats.md)");
    cmd->add_option("--proto", args->mscclpp.proto, "msccl, mscclpp: Simple or LL (default Simple); see `collsched convert`")
        ->check(CLI::IsMember({"Simple", "LL"}));
    cmd->add_option("--instances", args->mscclpp.instances, "msccl, mscclpp: copies of the program over slices of every chunk (default 1)")
        ->check(CLI::Range(1, 64));
    cmd->add_option("--size-range", args->size_range,
                    "mscclpp: the message sizes the plan serves, A..B (1MiB..1GiB; either side may be left out), written as "
                    "min_message_size and max_message_size (default every size)");
    cmd->add_flag("--out-of-place", args->mscclpp.out_of_place, "mscclpp: an out-of-place plan (default in place for allgather and allreduce)");
    cmd->add_flag("--strict", args->strict,
                  "Treat warnings as errors: W001, a send whose destination already holds its data (docs/errors.md)");
    cmd->callback([&ctx, args] {
        args->format = output_format(args->format, args->output, true);
        if (!args->size_range.empty()) parse_size_range(args->size_range, args->mscclpp);
        if (args->locations && args->format != "json")
            throw InputError(fmt::format("--locations applies to --format json, not {}", args->format));
        CompileOptions options;
        options.record_locations = args->locations;  // the JSON writer writes the origins as "at"
        options.max_transfers = args->max_transfers;
        options.max_iterations = args->max_iterations;
        options.warnings_are_errors = args->strict;
        options.topology = args->topology;
        // Progress on a terminal only: large schedules take seconds to compile and to write.
        const bool tty = ::isatty(2) != 0;
        auto t0 = std::chrono::steady_clock::now();
        if (tty) std::fprintf(stderr, "collsched: compiling %s ...", args->input.c_str());
        Diagnostics diags;
        std::optional<SendTable> table = args->input == "-" ? compile_source(read_input_text("-"), "<stdin>", args->defines, options, diags)
                                                            : compile_file(args->input, args->defines, options, diags);
        if (tty) std::fprintf(stderr, "\r\033[K");
        if (!table) fail_with_diagnostics(diags, "; nothing written");
        print_warnings(diags);
        const bool progress = tty && args->output != "-" && table->transfers.size() >= 1'000'000;
        if (progress)
            std::fprintf(stderr, "collsched: compiled %zu transfers in %u steps (%.1f s); writing %s ...", table->transfers.size(),
                         table->steps(), std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(),
                         args->output.c_str());
        try {
            ExportOptions eo;
            eo.mscclpp = args->mscclpp;
            eo.msccl.proto = args->mscclpp.proto;
            eo.msccl.instances = args->mscclpp.instances;
            eo.file = args->output;
            eo.bytes = args->bytes;
            write_table_output(*table, args->format, args->output, eo);
        } catch (...) {
            if (progress) std::fprintf(stderr, "\r\033[K");
            throw;
        }
        if (progress) std::fprintf(stderr, "\r\033[K");
        ctx.exit_code = 0;
    });
}

}  // namespace collsched::tools
