// `collsched reproduce [--json] [--max-n N] [--filter SUBSTR] [-j N] [--catalog FILE]`: every
// schedule of the algorithm library (schedules/catalog.json) compiled, verified, simulated and
// compared with its paper's claims, one row per (algorithm, size). See bench/reproduce.hpp and
// docs/reproduction.md.
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <mutex>
#include <thread>

#include <fmt/format.h>

#include "tools/commands.hpp"
#include "cli/options.hpp"
#include "bench/reproduce.hpp"

namespace collsched::tools {

using bench::ReproRow;
using bench::format_rows;
using bench::rows_to_json;
using bench::run_row;

void add_reproduce_command(CLI::App& app, Context& ctx) {
    struct Args {
        std::string catalog = "schedules/catalog.json";
        bool json = false;
        std::uint64_t max_n = 0;
        std::vector<std::string> filters;
        unsigned jobs = 1;
    };
    auto args = std::make_shared<Args>();
    auto* cmd = app.add_subcommand(
        "reproduce",
        "Check the algorithm library against the papers: every schedule of the catalog (schedules/catalog.json) at every "
        "size it lists is compiled, proved by the direct checker, replayed by the simulator and compared with the claims it "
        "states (claim steps, bound lower, claim queue, claim buffer). One row per (algorithm, size): claim, measured steps, "
        "lower bound, verdict (holds, violated, simulator-disagrees, below-lower-bound, claim-mismatch, queue-mismatch, "
        "buffer-mismatch, error). Rows under wormhole timing also show their cost, T ts + W tc (T rounds, W the sum of "
        "the rounds' largest payloads), beside the cost formulas the catalog gives for them. Every row can be recompiled "
        "with `collsched compile FILE -D name=value ...`.\n"
        "Exit code: 0 every row holds or is explained by a note of the catalog, 1 otherwise, 2 bad input.");
    cmd->add_option("--catalog", args->catalog, "The catalog file (default: schedules/catalog.json)");
    cmd->add_flag("--json", args->json, "Print a JSON list of rows instead of the table");
    cmd->add_option("--max-n", args->max_n, "Only rows of at most N processors (as the catalog counts them); CI uses 64")
        ->check(count_option(1, 65534));
    cmd->add_option("--filter", args->filters, "Only schedules whose file name contains SUBSTR (repeatable: any of them)");
    cmd->add_option("-j,--jobs", args->jobs, "Rows run on N threads (0: one per core)")->check(count_option(0, 1024));
    cmd->callback([&ctx, args] {
        auto t0 = std::chrono::steady_clock::now();
        Catalog catalog = read_catalog(args->catalog);
        struct Job {
            const CatalogEntry* entry;
            const std::vector<std::pair<std::string, std::int64_t>>* params;
        };
        std::vector<Job> jobs;
        for (const CatalogEntry& e : catalog.entries) {
            if (!args->filters.empty() &&
                std::none_of(args->filters.begin(), args->filters.end(), [&](const std::string& f) { return e.file.find(f) != std::string::npos; }))
                continue;
            for (const auto& r : e.rows) {
                std::uint64_t size = 1;
                for (const std::string& s : e.size)
                    for (const auto& [k, v] : r)
                        if (k == s) size *= static_cast<std::uint64_t>(std::max<std::int64_t>(v, 1));
                if (args->max_n != 0 && size > args->max_n) continue;
                jobs.push_back({&e, &r});
            }
        }
        unsigned threads = args->jobs == 0 ? std::max(1u, std::thread::hardware_concurrency()) : args->jobs;
        threads = std::min<unsigned>(threads, static_cast<unsigned>(std::max<std::size_t>(jobs.size(), 1)));
        std::vector<ReproRow> rows(jobs.size());
        std::atomic<std::size_t> next{0}, done{0};
        std::mutex progress;
        const bool tty = ::isatty(2) != 0;
        auto worker = [&] {
            for (std::size_t i = next++; i < jobs.size(); i = next++) {
                rows[i] = run_row(*jobs[i].entry, *jobs[i].params);
                std::size_t k = ++done;
                if (tty) {
                    std::lock_guard<std::mutex> lock(progress);
                    std::string params;
                    for (const auto& [name, v] : *jobs[i].params) params += fmt::format(" {}={}", name, v);
                    std::fprintf(stderr, "\r\033[Kcollsched reproduce: [%zu/%zu] %s%s", k, jobs.size(), jobs[i].entry->file.c_str(),
                                 params.c_str());
                }
            }
        };
        std::vector<std::thread> pool;
        for (unsigned t = 1; t < threads; ++t) pool.emplace_back(worker);
        worker();
        for (std::thread& t : pool) t.join();
        if (tty) std::fprintf(stderr, "\r\033[K");

        std::size_t bad = 0, explained = 0;
        for (const ReproRow& r : rows) {
            if (!r.ok()) ++bad;
            if (r.note) ++explained;
        }
        double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        std::string out;
        if (args->json) {
            out = rows_to_json(rows);
        } else {
            out = format_rows(catalog, rows);
            out += fmt::format("{} rows: {} hold, {} explained by a note, {} fail{} ({:.1f} s, {} thread{})\n", rows.size(),
                               rows.size() - bad - explained, explained, bad,
                               args->max_n ? fmt::format("; sizes up to {}", args->max_n) : std::string(), seconds, threads,
                               threads == 1 ? "" : "s");
        }
        ctx.print(out);
        ctx.exit_code = bad == 0 ? 0 : 1;
    });
}

}  // namespace collsched::tools
