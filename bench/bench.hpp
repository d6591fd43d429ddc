/** \file
 * The benchmark behind `collsched bench` and `collsched-bench` (docs/performance.md): for three
 * schedules of the library (the EBFT total exchange, the single-port allgather on a torus along a
 * Hamiltonian cycle, the single-port allgather on a ring) at sizes n, it times the stages of the
 * pipeline (compile in memory, direct verification, simulation) and reports per stage the wall
 * and CPU seconds, transfers per second of CPU time, the peak resident memory of the process
 * during the stage, and the verdict. Sizes whose table would not fit the memory budget run the
 * streaming pipeline instead (compiler/lower/stream.hpp, StreamSimulator in runtime/simulator.hpp):
 * steps produced, checked and replayed without the whole table. Benchmarks report figures; tests check only the verdicts and the shape.
 */
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace collsched::bench {

/// One schedule at one size: n processors (ebft:n, ring:n, torus:a x b with a b = n).
struct Case {
    std::string name;      ///< "ebft_alltoall", "torus_allgather", "ring_allgather"
    std::string topology;  ///< the spec it compiles to, e.g. "ebft:1024"
    std::uint32_t n = 0;
    const char* text = nullptr;         ///< the schedule's source (built into the binary)
    std::string file;                   ///< its path in the repository, for reports
    std::vector<std::string> defines;   ///< -D overrides, `name=value`
};

/// What one stage measured.
struct Stage {
    std::string name;          ///< compile, verify, simulate, or stream (compile and simulate at once)
    double seconds = 0;        ///< wall clock
    double cpu_seconds = 0;    ///< user + system CPU of the process
    std::uint64_t peak_rss = 0;  ///< bytes: the process's peak resident set during the stage
    std::string verdict;       ///< verify: holds/violated; simulate: completed/halted/incomplete; compile: ok
};

struct CaseResult {
    Case c;
    bool streamed = false;
    std::uint64_t transfers = 0;
    std::uint32_t steps = 0;
    std::vector<Stage> stages;
    bool ok() const;  ///< every verdict is the expected one (ok, holds, completed)
};

struct Options {
    std::vector<std::uint32_t> sizes{256, 1024, 4096};
    std::vector<std::string> schedules{"ebft_alltoall", "torus_allgather", "ring_allgather"};
    /// Tables above this many transfers are not materialized: the case runs streamed. The default,
    /// 10^8 (1.2 GB of transfers), keeps the materialized pipeline near 3 GB at the most.
    std::uint64_t stream_above = 100'000'000;
    bool force_stream = false;
};

/// The cases of `opt`, in schedule then size order. Throws InputError for an unknown schedule or
/// a size a schedule does not take (EBFT: a power of two >= 2; torus: n = a b with a, b >= 2).
std::vector<Case> cases(const Options& opt);

/// The number of transfers a case's table has, computed from the algorithm without compiling.
std::uint64_t expected_transfers(const Case&);

/// Runs one case; `progress` receives one line per stage as it starts (may be empty).
CaseResult run(const Case&, const Options&, const std::function<void(std::string_view)>& progress);

/// The results as one JSON object: machine, then one entry per case with its stages.
std::string to_json(const std::vector<CaseResult>&);
/// A plain-text table, one row per stage.
std::string to_text(const std::vector<CaseResult>&);

/// User + system CPU seconds of the process so far.
double cpu_seconds();

/// `lscpu` model name and core count, total memory, the compiler and build type.
std::string machine_summary();

}  // namespace collsched::bench
