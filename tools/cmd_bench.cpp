// `collsched bench [--json] [--sizes 256,1024,4096] [--schedules ...] [--quick] [--stream-above N]`:
// times compile, direct verification and simulation of library schedules (bench/bench.hpp).
#include <unistd.h>

#include <cstdio>

#include <fmt/format.h>

#include "bench/bench.hpp"
#include "tools/commands.hpp"
#include "cli/options.hpp"

namespace collsched::tools {

namespace {

struct BenchArgs {
    std::vector<std::uint32_t> sizes;
    std::vector<std::string> schedules;
    bool json = false;
    bool quick = false;
    bool stream = false;
    std::uint64_t stream_above = bench::Options{}.stream_above;
};

}  // namespace

void add_bench_command(CLI::App& app, Context& ctx) {
    auto args = std::make_shared<BenchArgs>();
    auto* cmd = app.add_subcommand(
        "bench",
        "Measure the pipeline on library schedules: compile (in memory), direct verification and simulation, each with wall "
        "and CPU seconds, transfers per CPU second and the peak resident memory during the stage. Schedules: the EBFT total "
        "exchange (schedules/bft/ebft_alltoall.sched, ebft:n), the single-port allgather along a Hamiltonian cycle of a "
        "torus (torus_hamiltonian_full_duplex.sched, a x b = n, closest to square) and on a ring (ring_full_duplex.sched, "
        "ring:n). Tables above --stream-above transfers (EBFT n = 4096: 369 million) run streamed: compiled step by step "
        "into the simulator, never held whole (docs/performance.md). Progress goes to stderr.\n"
        "Exit code: 0 every verdict holds, 1 some verdict does not, 2 bad input.");
    cmd->add_option("--sizes", args->sizes, "Processor counts n, comma-separated (default 256,1024,4096; --quick: 16)")
        ->delimiter(',')
        ->check(CLI::Range(2u, 65534u));
    cmd->add_option("--schedules", args->schedules,
                    "Which schedules, comma-separated: ebft_alltoall, ebft_alltoall_optimal, torus_allgather, ring_allgather (default: all but ebft_alltoall_optimal)")
        ->delimiter(',');
    cmd->add_flag("--quick", args->quick, "A tiny run (n = 16 unless --sizes is given), for tests and a first look");
    cmd->add_flag("--stream", args->stream, "Stream every case (compile into the simulator step by step)");
    cmd->add_option("--stream-above", args->stream_above, "Stream cases with more transfers than this (default 100000000)")
        ->check(count_option(0, std::uint64_t{1} << 62));
    cmd->add_flag("--json", args->json,
                  "Print one JSON object: machine, and per case schedule, file, n, topology, mode, transfers, steps, ok and "
                  "stages (stage, verdict, seconds, cpu_seconds, transfers_per_second, peak_rss_bytes)");
    cmd->callback([&ctx, args] {
        bench::Options opt;
        if (!args->sizes.empty()) opt.sizes = args->sizes;
        else if (args->quick) opt.sizes = {16};
        if (!args->schedules.empty()) opt.schedules = args->schedules;
        opt.stream_above = args->stream_above;
        opt.force_stream = args->stream;
        std::vector<bench::CaseResult> results;
        bool ok = true;
        for (const bench::Case& c : bench::cases(opt)) {
            results.push_back(bench::run(c, opt, [](std::string_view line) {
                std::fprintf(stderr, "%.*s\n", static_cast<int>(line.size()), line.data());
            }));
            ok = ok && results.back().ok();
        }
        std::string out = args->json ? bench::to_json(results) : bench::to_text(results);
        ctx.print(out);
        ctx.exit_code = ok ? 0 : 1;
    });
}

}  // namespace collsched::tools
