// `collsched mpirun` on reductions (docs/semantics.md, "Reductions"): every rank holds real
// buffers, performs the schedule's combining, and compares every element of its goal buffers
// with the MPI reduction (MPI_Allreduce, MPI_Scan, MPI_Reduce, MPI_Reduce_scatter_block) on the
// same input. The default suite runs a few n; COLLSCHED_MPI_SWEEP=1 (the `slow` test
// mpi_reduce_sweep) runs n = 2 .. 16 for every library allreduce.
#include <doctest/doctest.h>

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "tests/tools/cli_run.hpp"

using collsched::test::run;

namespace {

std::string lib(const std::string& file) { return std::string(COLLSCHED_SOURCE_DIR) + "/schedules/reduce/" + file; }

std::vector<int> sizes(std::vector<int> quick) {
    if (const char* s = std::getenv("COLLSCHED_MPI_SWEEP"); s && std::string(s) == "1") {
        std::vector<int> all;
        for (int n = 2; n <= 16; ++n) all.push_back(n);
        return all;
    }
    return quick;
}

/// `chunks`: the schedule's C; --bytes is per datum (a chunk is B/C bytes), so every goal
/// buffer (one chunk) holds 64 bytes, 8 elements.
void check_passes(const std::string& file, int n, const std::string& baseline, const std::string& dtype, std::size_t goals, int chunks = 1) {
    CAPTURE(file);
    CAPTURE(n);
    auto r = run(fmt::format("mpirun {} -D n={} --bytes {} --repeat 1 --dtype {} --timeout 120", lib(file), n, 64 * chunks, dtype));
    INFO(r.out << r.err);
    CHECK(r.code == 0);
    CHECK(r.out.find(fmt::format("element check: passed ({} goal buffers, {} elements identical to {})", goals, goals * 8, baseline)) !=
          std::string::npos);
    CHECK(r.out.find(baseline + ": ") != std::string::npos);
}

}  // namespace

TEST_CASE("mpirun reductions: recursive doubling and binomial allreduce equal MPI_Allreduce element for element") {
    for (int n : sizes({2, 3, 8})) {
        check_passes("allreduce_recursive_doubling.sched", n, "MPI_Allreduce", "int64", n);
        check_passes("allreduce_binomial.sched", n, "MPI_Allreduce", "double", n);
    }
}

TEST_CASE("mpirun reductions: the ring allreduce (n chunks) equals MPI_Allreduce, the ring reduce-scatter MPI_Reduce_scatter_block") {
    for (int n : sizes({2, 5, 8})) check_passes("allreduce_ring.sched", n, "MPI_Allreduce", n % 2 ? "double" : "int64", std::size_t(n) * n, n);
    check_passes("reduce_scatter_ring.sched", 6, "MPI_Reduce_scatter_block", "int64", 6, 6);
}

TEST_CASE("mpirun reductions: scan and reduce equal MPI_Scan and MPI_Reduce") {
    check_passes("scan_hillis_steele.sched", 5, "MPI_Scan", "int64", 5);
    check_passes("reduce_binomial.sched", 6, "MPI_Reduce", "double", 1);
}

TEST_CASE("mpirun reductions: a schedule that counts a contribution twice fails the element check") {
    const std::string path = "/tmp/collsched_mpi_twice_" + std::to_string(::getpid()) + ".sched";
    {
        std::FILE* f = std::fopen(path.c_str(), "w");
        REQUIRE(f);
        std::fputs("topology ring(3)\ncollective allreduce\n"
                   "step 1 { send 0 -> 1 msg partial(0)  send 1 -> 2 msg partial(1) }\n"
                   "step 2 { send 1 -> 2 msg partial(1)  send 2 -> 0 msg partial(2) }\n"
                   "step 3 { send 0 -> 1 msg partial(0) }\n",
                   f);
        std::fclose(f);
    }
    auto r = run(fmt::format("mpirun {} --bytes 16 --repeat 1 --timeout 120", path));
    std::remove(path.c_str());
    CHECK(r.code == 1);
    CHECK(r.out.find("rank 2: step 2: receives a({0,1}) from rank 1, which shares a contribution with its buffer of chunk 0 without "
                     "covering it (counted twice)") != std::string::npos);
}
