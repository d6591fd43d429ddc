// `collsched tune --topology M --sizes 1K..16G [--executor nccl] -o nccl_tuner.conf`: the CSV
// NCCL's example tuner plugin reads, from NCCL's algorithms timed by the executor model
// (verifier/time/nccl_tuner.hpp; docs/exports.md, "NCCL tuner configuration").

#include <fmt/format.h>

#include "support/error.hpp"
#include "tools/commands.hpp"
#include "cli/options.hpp"
#include "cli/output.hpp"
#include "cli/size_options.hpp"
#include "cli/tune_args.hpp"
#include "verifier/time/nccl_tuner.hpp"

namespace collsched::tools {

namespace {

struct TuneArgs {
    std::string topology, collectives, output;
    std::vector<double> sizes;
    std::optional<ExecutorModel> executor;
    double timeout = 0;
    bool json = false;
};

void run_tune(const TuneArgs& a, Context& ctx) {
    const Deadline deadline = Deadline::after(a.timeout);
    TunerOptions o;
    if (!a.collectives.empty()) o.collectives = parse_collectives(a.collectives);
    o.sizes = a.sizes;
    o.executor = a.executor ? *a.executor : builtin_executor(ExecutorKind::nccl);
    o.limits = RunLimits{deadline, MemoryBudget::standard()};
    const TunerConfig cfg = nccl_tuner_config(read_machine(a.topology), o);
    // everything is known before anything is written: a limit or bad input leaves no file
    const std::string file = tuner_file(cfg);
    write_output(a.output, [&](const Flush& flush, fmt::memory_buffer& buf) {
        buf.append(file.data(), file.data() + file.size());
        flush(buf);
    });
    if (a.output != "-") ctx.print(a.json ? tuner_json(cfg) : tuner_text(cfg));
    ctx.exit_code = 0;
}

}  // namespace

void add_tune_command(CLI::App& app, Context& ctx) {
    auto a = std::make_shared<TuneArgs>();
    auto* cmd = app.add_subcommand(
        "tune",
        "Write an NCCL tuner configuration: the CSV NCCL's example tuner plugin reads (NVIDIA/nccl plugins/tuner/example, "
        "NCCL_TUNER_CONFIG_FILE). For every collective NCCL's tuner covers and every size range, the NCCL algorithm, protocol and "
        "channels the executor model predicts fastest on the machine (NCCL's own algorithms generated for it and timed), with its "
        "nodes and ranks; beside each range NCCL's own pick (its tuning model, src/graph/tuning.cc) and the predicted gain. A range "
        "whose gain is within the model's error gets no line (a tie: NCCL's own choice stays). docs/exports.md.\n"
        "Exit code: 0 written, 2 bad input (machine, collective, sizes, executor), 3 a limit (--timeout, the memory budget) "
        "stopped it (nothing written).");
    cmd->add_option("--topology", a->topology, "The machine: a spec or graph:FILE (e.g. graph:schedules/machines/h100rail4x8.json)")
        ->required();
    a->sizes = parse_sizes("1K..16G");
    add_size_option(cmd, a->sizes, "--sizes",
                    "The grid of sizes (NCCL's nBytes): 1K..16G (doubling, the default), 1K..16G:4, or a list 1K,1M,1G; ranges are "
                    "merged where the same choice wins on neighbouring sizes and split at the crossovers");
    add_executor_options(cmd, a->executor);
    cmd->add_option("--collectives", a->collectives,
                    "Comma-separated: allreduce, allgather, reduce_scatter, broadcast, reduce (default: all five)")
        ->check(CLI::Validator([](std::string& s) { return s.empty() ? std::string("expected a list of collectives, not an empty one") : std::string(); },
                               "", "collectives"));
    cmd->add_option("-o,--output", a->output, "The tuner file to write (\"-\": standard output)")->required()->check(file_option());
    cmd->add_option("--timeout", a->timeout, "Seconds for the whole run (exit 3, nothing written, once past); 0 means no limit")
        ->check(seconds_option(true));
    cmd->add_flag("--json", a->json, "Print one JSON object (every grid point: the fastest, NCCL's pick, the gain; the ranges)");
    cmd->callback([&ctx, a] { run_tune(*a, ctx); });
}

}  // namespace collsched::tools
