// `collsched compile` and `.sched` inputs of the other commands, through the executable:
// exit codes, diagnostics on stderr, output written only on success.
#include <doctest/doctest.h>

#include <unistd.h>

#include <filesystem>

#include "tests/tools/cli_run.hpp"

using collsched::test::run;
using collsched::test::source;

TEST_CASE("compile writes the table and verify accepts it (n = 16, 22 steps)") {
    std::string out = "/tmp/collsched_compile_" + std::to_string(::getpid()) + ".json";
    auto c = run("compile " + source("schedules/bft/ebft_alltoall.sched") + " -D n=16 -o " + out);
    CHECK(c.code == 0);
    CHECK(c.err.empty());
    auto v = run("verify " + out);
    CHECK(v.code == 0);
    CHECK(v.out.find("verdict: holds (22 steps") == 0);
    std::filesystem::remove(out);
}

TEST_CASE("verify compiles .sched files in memory with -D") {
    auto v = run("verify " + source("schedules/bft/ebft_alltoall.sched") + " -D n=8");
    CHECK(v.code == 0);
    CHECK(v.out.find("verdict: holds (12 steps") == 0);
}

TEST_CASE("errors go to stderr with exit code 2 and nothing is written") {
    std::string out = "/tmp/collsched_compile_err_" + std::to_string(::getpid()) + ".json";
    auto c = run("compile " + source("tests/golden/err/ring_without_modulo.sched") + " -o " + out);
    CHECK(c.code == 2);
    CHECK(c.out.empty());
    CHECK(c.err.find("ring_without_modulo.sched:7:37: error[E040]: processor 6 does not exist") != std::string::npos);
    CHECK(c.err.find("collsched: error: 1 error in ") != std::string::npos);
    CHECK_FALSE(std::filesystem::exists(out));
    auto v = run("verify " + source("schedules/bft/ebft_alltoall.sched") + " -D k=3");
    CHECK(v.code == 2);
    CHECK(v.err.find("error[E007]: -D k=3: the schedule has no param 'k' (its params: n)") != std::string::npos);
}

TEST_CASE("--max-transfers and --format dsl") {
    auto c = run("compile " + source("schedules/bft/ebft_alltoall.sched") + " --max-transfers 100");
    CHECK(c.code == 2);
    CHECK(c.err.find("error[E050]: this loop makes more than 100 transfers") != std::string::npos);
    auto d = run("compile " + source("schedules/bft/ebft_alltoall.sched") + " -D n=4 --format dsl");
    CHECK(d.code == 0);
    CHECK(d.out.find("topology \"ebft:4\"\nmodel hop(ports = multi, queues = none, replicate = no)\ncollective alltoall\n"
                     "cite \"Dimakopoulos & Dimopoulos, Communications in binary fat trees, sec. 5, equation (3) and Lemma 3\"\n"
                     "claim steps = 6\nbound lower = 5\nstep 1 {\n"
                     "  hop 0 -> r(1, 0) msg m(0,2)\n") != std::string::npos);
}
