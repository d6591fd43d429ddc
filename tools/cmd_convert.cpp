// `collsched convert FILE --format json|csv [-o OUT]`: rewrites a table (or a compiled
// schedule) in another format; the output file appears only when everything succeeded.
#include "compiler/table_io.hpp"
#include "tools/commands.hpp"
#include "tools/input.hpp"

namespace collsched::tools {

void add_convert_command(CLI::App& app, Context& ctx) {
    struct Args {
        std::string input, output = "-", format = "json";
        std::vector<std::string> defines;
    };
    auto args = std::make_shared<Args>();
    auto* cmd = app.add_subcommand("convert",
                                   "Rewrite a send table (JSON, CSV) or a compiled schedule (.sched) as JSON or CSV. "
                                   "Transfers come out sorted by (step, channel, message); unknown fields are kept.");
    cmd->add_option("FILE", args->input, "Table file (.json, .csv) or schedule (.sched)")->required();
    cmd->add_option("-D", args->defines, "Override a schedule parameter: -D n=16 (repeatable)");
    cmd->add_option("--format", args->format, "Output format")->check(CLI::IsMember({"json", "csv"}));
    cmd->add_option("-o,--output", args->output, "Output file (default: standard output); written only on success");
    cmd->callback([&ctx, args] {
        SendTable t = load_input(args->input, args->defines);
        write_output(args->output, [&](const Flush& flush, fmt::memory_buffer& buf) {
            if (args->format == "csv") write_table_csv(t, buf, flush);
            else write_table_json(t, buf, flush);
        });
        ctx.exit_code = 0;
    });
}

}  // namespace collsched::tools
