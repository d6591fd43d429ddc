// `collsched convert FILE --format json|csv|ranks|msccl|dot|svg|html [-o OUT]`: rewrites a
// table (JSON, CSV, per-rank JSON, or a compiled schedule) in another format; the output file
// appears only when everything succeeded (docs/formats.md, docs/exports.md).
#include "compiler/export_formats.hpp"
#include "compiler/table_io.hpp"
#include "tools/commands.hpp"
#include "tools/output.hpp"
#include "tools/input.hpp"

namespace collsched::tools {

void add_convert_command(CLI::App& app, Context& ctx) {
    struct Args {
        std::string input, output = "-", format, rows = "auto";
        std::vector<std::string> defines;
    };
    auto args = std::make_shared<Args>();
    auto* cmd = app.add_subcommand("convert",
                                   "Rewrite a send table (JSON, CSV, per-rank JSON) or a compiled schedule (.sched) in another "
                                   "format: json, csv, ranks (per-rank sends and receives), msccl (MSCCL-IR XML), dot (the "
                                   "topology with capacities and traffic), svg (timeline of link use), html (the timeline "
                                   "with hover details). Transfers come out sorted by (step, channel, message).");
    cmd->add_option("FILE", args->input, "Table file (.json, .csv, per-rank .json) or schedule (.sched); - reads standard input")->required();
    cmd->add_option("-D", args->defines, "Override a schedule parameter: -D n=16 (repeatable)");
    cmd->add_option("--format", args->format,
                    fmt::format("Output format: {} (default: the one -o FILE's extension names, else json)", output_format_list()))
        ->check(CLI::IsMember(output_format_names()));
    cmd->add_option("--rows", args->rows, "Timeline rows for svg and html: auto (channels up to 128, else a fat tree's router "
                                          "links up to 128, else processors), channels, routers or processors")
        ->check(CLI::IsMember({"auto", "channels", "routers", "processors"}));
    cmd->add_option("-o,--output", args->output, "Output file (default: standard output); written only on success");
    cmd->callback([&ctx, args] {
        const std::string format = output_format(args->format, args->output);
        SendTable t = load_input(args->input, args->defines, false);  // a table's own "at" fields stay
        ExportOptions options;
        options.timeline.rows = parse_timeline_rows(args->rows);
        write_output(args->output,
                     [&](const Flush& flush, fmt::memory_buffer& buf) { write_table_as(t, format, options, buf, flush); });
        ctx.exit_code = 0;
    });
}

}  // namespace collsched::tools
