// `collsched tune --topology M --sizes 1K..16G [--executor nccl] -o nccl_tuner.conf`: the CSV
// NCCL's example tuner plugin reads, from NCCL's algorithms timed by the executor model
// (verifier/time/nccl_tuner.hpp; docs/exports.md, "NCCL tuner configuration").
#include <filesystem>
#include <system_error>

#include <fmt/format.h>

#include "support/edit_distance.hpp"
#include "support/error.hpp"
#include "tools/commands.hpp"
#include "cli/options.hpp"
#include "cli/output.hpp"
#include "cli/size_options.hpp"
#include "tools/tune_args.hpp"
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

/// The closest machine file to a spec that names none: among the .json files of its folder (a bare
/// name: of schedules/machines), within a third of its length. "" when none is close, and for a
/// file that is there (its own error is the answer, never a hint that names it again).
std::string machine_hint(const std::string& spec) {
    const bool graph = spec.starts_with("graph:");
    if (!graph && spec.find(':') != std::string::npos) return "";
    const std::filesystem::path path = graph ? spec.substr(6) : spec;
    std::error_code exists;
    if (graph && std::filesystem::exists(path, exists)) return "";
    const std::filesystem::path dir = graph ? (path.has_parent_path() ? path.parent_path() : ".") : "schedules/machines";
    const std::string want = path.stem().string();
    std::string best;
    std::size_t d = want.size() / 3 + 1;
    std::error_code ec;
    for (const auto& f : std::filesystem::directory_iterator(dir, ec))
        if (f.path().extension() == ".json")
            if (std::size_t e = support::edit_distance(want, f.path().stem().string()); e < d) d = e, best = (dir / f.path().filename()).string();
    return best.empty() ? "" : "graph:" + best;
}

}  // namespace

std::shared_ptr<const Topology> read_machine(const std::string& spec) {
    try {
        return Topology::parse(spec);
    } catch (const InputError& e) {
        const std::string hint = machine_hint(spec);
        if (hint.empty()) throw;
        throw InputError(fmt::format("--topology: {}; did you mean {}?", e.what(), hint));
    }
}

/// `--collectives a,b,...`: the collectives NCCL's tuner covers, by collsched's names or plugin.c's.
std::vector<CollectiveKind> parse_collectives(const std::string& text) {
    std::vector<CollectiveKind> out;
    std::size_t at = 0;
    while (at <= text.size()) {
        const std::size_t comma = std::min(text.find(',', at), text.size());
        const std::string name = text.substr(at, comma - at);
        at = comma + 1;
        std::optional<CollectiveKind> found;
        std::string best, names;
        std::size_t d = 3;
        for (CollectiveKind k : tuner_collectives) {
            const std::string_view ours = collective_row(k).name, theirs = tuner_collective_name(k);
            names += (names.empty() ? "" : ", ") + std::string(ours);
            if (name == ours || name == theirs) found = k;
            if (std::size_t e = support::edit_distance(name, ours); e < d) d = e, best = ours;
        }
        if (!found)
            throw InputError(fmt::format("--collectives: \"{}\" is not a collective NCCL's tuner covers{} ({})", name,
                                         best.empty() ? "" : fmt::format("; did you mean \"{}\"?", best), names));
        if (std::find(out.begin(), out.end(), *found) == out.end()) out.push_back(*found);
    }
    return out;
}

namespace {

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
