// collsched-bench: the plain benchmark harness (docs/performance.md). Runs the pipeline benchmark
// of `collsched bench` and, for one EBFT table, times the parts around it: sorting a shuffled
// table, writing and reading it as JSON and CSV, in memory and from a file.
// Usage: collsched-bench [N] [--parts] (N a power of two >= 4, default 256; --help).
#include <algorithm>
#include <bit>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>

#include <unistd.h>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "bench/bench.hpp"
#include "compiler/table/builder.hpp"
#include "compiler/io/table_io.hpp"
#include "support/assert.hpp"
#include "support/error.hpp"
#include "verifier/check/by_message.hpp"

namespace {

struct Time {
    double wall, cpu;
};

/// Wall and CPU seconds (user + system of the process) of f(): the machine is shared, so rates
/// are per CPU second.
template <class F>
Time seconds(F&& f) {
    const auto t0 = std::chrono::steady_clock::now();
    const double c0 = collsched::bench::cpu_seconds();
    f();
    return {std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), collsched::bench::cpu_seconds() - c0};
}

void row(const char* what, std::uint64_t transfers, Time t) {
    std::printf("%-34s %12llu transfers %9.3f s CPU %9.3f s wall %10.1f M transfers/CPU s\n", what,
                static_cast<unsigned long long>(transfers), t.cpu, t.wall, t.cpu > 0 ? static_cast<double>(transfers) / t.cpu / 1e6 : 0.0);
}

}  // namespace

int main(int argc, char** argv) {
    using namespace collsched;
    CLI::App app{"collsched-bench: the pipeline benchmark of `collsched bench` on the EBFT total exchange at one size, then the "
                 "parts around it (memory limits, sorting, JSON and CSV writing and reading, in memory and from a file). "
                 "Figures are per CPU second: the machine may be shared (docs/performance.md)."};
    std::uint32_t n = 256;
    bool parts_only = false;
    app.add_option("N", n, "EBFT size: processors, a power of two >= 4")->check(CLI::Range(4u, 1u << 20));
    app.add_flag("--parts", parts_only, "Only the parts, not the pipeline benchmark");
    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
        return app.exit(e) == 0 ? 0 : 2;
    }
    if (!std::has_single_bit(n)) {
        std::fprintf(stderr, "collsched-bench: error: N = %u is not a power of two (the EBFT total exchange needs ebft:N)\n", n);
        return 2;
    }
    try {
        bench::Options opt;
        opt.sizes = {n};
        std::vector<bench::CaseResult> results;
        if (!parts_only) {
            for (const bench::Case& c : bench::cases(opt))
                results.push_back(
                    bench::run(c, opt, [](std::string_view line) { std::fprintf(stderr, "%.*s\n", int(line.size()), line.data()); }));
            std::string text = bench::to_text(results);
            std::fwrite(text.data(), 1, text.size(), stdout);
        }

        SendTable t = bft_phase_alltoall(Topology::parse(fmt::format("ebft:{}", n)));
        const std::uint64_t N = t.transfers.size();
        std::printf("\nparts, on the built-in EBFT total exchange at n = %u\n", n);
        // The memory limits per transfer: one sequential pass over the 12-byte transfers (what a
        // by-step check costs at the least), and regrouping them by message with a counting sort
        // (one random write per transfer: what any per-message or per-(node, message) check pays).
        std::uint64_t sink = 0;
        row("limit: sequential read", N, seconds([&] {
                for (const Transfer& x : t.transfers) sink += x.step + idx(x.channel) + idx(x.message);
            }));
        row("limit: scatter by message", N, seconds([&] {
                std::vector<std::uint32_t> at(t.messages().size() + 1, 0);
                for (const Transfer& x : t.transfers) ++at[idx(x.message) + 1];
                for (std::size_t m = 1; m < at.size(); ++m) at[m] += at[m - 1];
                std::vector<std::uint64_t> grouped(N);
                for (const Transfer& x : t.transfers) grouped[at[idx(x.message)]++] = (std::uint64_t{x.step} << 32) | idx(x.channel);
                sink += grouped[N / 2];
            }));
        // The regroup the direct checker uses (verifier/check/by_message.hpp): two stable passes, into
        // at most 2048 buckets of consecutive message ids, then each bucket by message in L2;
        // here with its own counting pass (the checker counts during its by-step pass).
        row("limit: two-pass regroup by message", N, seconds([&] {
                detail::MessageGroups g;
                g.plan(t.messages().size(), N, t.steps(), t.topology->channels().size());
                if (!g.sort)
                    for (const Transfer& x : t.transfers) g.add(x.message);
                detail::for_each_message(t.transfers, g, [&](MessageId m, const detail::Hop* first, const detail::Hop*) {
                    sink += idx(m) + first->step;
                });
            }));
        if (sink == 42) std::printf(" ");
        std::vector<Transfer> shuffled = t.transfers;
        std::shuffle(shuffled.begin(), shuffled.end(), std::mt19937_64(1));
        SendTable u = t;
        u.transfers = shuffled;
        row("sort (counting, shuffled)", N, seconds([&] { u.sort(); }));
        u.transfers = shuffled;
        row("std::sort (shuffled)", N, seconds([&] { std::sort(u.transfers.begin(), u.transfers.end()); }));
        std::string json, csv;
        row("write JSON (in memory)", N, seconds([&] { json = table_to_json(t); }));
        row("read JSON (in memory)", N, seconds([&] { (void)parse_table_json(json, "bench.json"); }));
        if (N <= 20'000'000)  // the reference reader takes about 10 s at n = 1024
            row("read JSON, reference reader", N, seconds([&] { (void)parse_table_json_reference(json, "bench.json"); }));
        {
            std::string path = fmt::format("/tmp/collsched-bench-{}.json", ::getpid());
            std::FILE* f = std::fopen(path.c_str(), "wb");
            if (f) {
                std::fwrite(json.data(), 1, json.size(), f);
                std::fclose(f);
                row("read JSON file (read_table)", N, seconds([&] { (void)read_table(path); }));
                std::remove(path.c_str());
            }
        }
        json = std::string();
        row("write CSV (in memory)", N, seconds([&] { csv = table_to_csv(t); }));
        row("read CSV (in memory)", N, seconds([&] { (void)parse_table_csv(csv, "bench.csv"); }));
        {
            std::string path = fmt::format("/tmp/collsched-bench-{}.csv", ::getpid());
            std::FILE* f = std::fopen(path.c_str(), "wb");
            if (f) {
                std::fwrite(csv.data(), 1, csv.size(), f);
                std::fclose(f);
                csv = std::string();
                row("read CSV file (read_table)", N, seconds([&] { (void)read_table(path); }));
                std::remove(path.c_str());
            }
        }
        return 0;
    } catch (const InputError& e) {
        std::fprintf(stderr, "collsched-bench: error: %s\n", e.what());
        return 2;
    }
}
