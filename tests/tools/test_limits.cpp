// Resource limits (issue 8): sizes that would exceed memory and work that would run for hours are
// refused with exit code 2, one clear message, and nothing written; output files appear whole or
// not at all, even when the run is interrupted.
#include <doctest/doctest.h>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "compiler/table/collective.hpp"
#include "compiler/io/table_io.hpp"
#include "compiler/topology/topology.hpp"
#include "dsl/diagnostics.hpp"
#include "tests/tools/cli_run.hpp"
#include "cli/output.hpp"

using namespace collsched;
using collsched::test::run;

namespace {

/// This file's scratch directories.
struct LimitsScratch : collsched::test::Scratch {
    LimitsScratch() : collsched::test::Scratch("limits") {}
};

std::string table(const std::string& topology, const std::string& collective) {
    return R"({"format": "collsched.table/1", "topology": ")" + topology + R"(", "collective": ")" + collective +
           R"J(", "transfers": [{"step": 1, "from": "0", "to": "1", "msg": "b(0)"}]})J";
}

/// Exit 2, the message on stderr, and no output file (`out` is passed with -o).
void refused_leaving_nothing(const test::Run& r, const std::string& message, const LimitsScratch& s, std::size_t inputs) {
    INFO(r.err);
    CHECK(r.code == 2);
    CHECK(r.err.find(message) != std::string::npos);
    CHECK(r.out.empty());
    CHECK(s.entries() == inputs);
}

}  // namespace

TEST_CASE("limits: compile stops runaway schedules and writes nothing") {
    LimitsScratch s;
    std::string out = s.file("out.json");
    std::string many = s.file("many.sched", "topology ring(8)\nfor s in 1 .. 100 { step s { for k in 0 .. 7 { send k -> (k + 1) % 8 } } }\n");
    refused_leaving_nothing(run("compile " + many + " --max-transfers 500 -o " + out), "error[E050]: this loop makes more than 500 transfers", s, 1);
    refused_leaving_nothing(run("compile " + many + " --max-iterations 50 -o " + out), "error[E051]: this loop runs more than 50 iterations", s, 1);

    std::string reqs = s.file("reqs.sched", "topology ring(8)\nfor i in 0 .. 1000 { require m(0, 1) at 1 }\n");
    auto r = run("compile " + reqs + " --max-transfers 500 -o " + out);
    refused_leaving_nothing(r, "error[E050]: this loop makes more than 500 transfers", s, 2);
    CHECK(r.err.find("note: requirements count toward the limit too; they come from here") != std::string::npos);

    std::string deep = s.file("deep.sched", "topology ring(8)\nlet x = " + std::string(200, '(') + "1" + std::string(200, ')') + "\n");
    refused_leaving_nothing(run("compile " + deep + " -o " + out), "error[E052]: more than 128 brackets and blocks are open here", s, 3);

    std::string goals = s.file("goals.sched", "topology ring(20000)\ncollective alltoall\n");
    refused_leaving_nothing(run("compile " + goals + " -o " + out),
            "goals.sched:2:1: error[E053]: collective alltoall on ring:20000 has 399980000 goal pairs (message, processor); "
            "collsched checks at most 268435456 (alltoall and allgather up to 16384 processors)",
            s, 4);
    // verify and simulate compile in memory with the same limits
    refused_leaving_nothing(run("verify " + goals), "error[E053]", s, 4);
}

TEST_CASE("limits: collectives with more than 2^28 goal pairs are refused, not enumerated for half an hour") {
    CHECK(max_goal_pairs == 268435456u);
    LimitsScratch s;
    std::string big = s.file("big.json", table("ring:65534", "alltoall"));
    const std::string msg =
        "collective alltoall on ring:65534 has 4294639622 goal pairs (message, processor); collsched checks at most 268435456";
    refused_leaving_nothing(run("verify " + big), msg, s, 1);
    refused_leaving_nothing(run("simulate " + big), msg, s, 1);
    std::string out = s.file("out.ranks.json");
    refused_leaving_nothing(run("convert " + big + " --format ranks -o " + out), msg, s, 1);
    std::string csv = s.file("big.csv", "# format=collsched.table/1\n# topology=ring:65534\n# collective=allgather\nstep,from,to,message\n");
    refused_leaving_nothing(run("verify " + csv), "collective allgather on ring:65534 has 4294639622 goal pairs", s, 2);
    // 16,384 processors are still fine (the checkers enumerate 268 million pairs; not run here),
    // and so is a huge topology with a small collective.
    auto t = Topology::parse("ring:16384");
    CHECK_NOTHROW(Collective::parse("alltoall", *t));
    std::string small = s.file("small.json", table("ring:65534", "broadcast:0"));
    auto r = run("verify " + small);
    CHECK(r.code == 1);  // incomplete: 65,533 processors miss b(0)
    CHECK(r.out.starts_with("verdict: violated (1 step, 1 transfer;"));
}

TEST_CASE("limits: the per-rank export of a huge custom table is refused before the first byte") {
    LimitsScratch s;
    // custom: every m(s,d) is initial data at s, so the ranks would list 4.3e9 messages
    std::string big = s.file("custom.json", table("ring:65534", "custom"));
    std::string out = s.file("out.ranks.json");
    refused_leaving_nothing(run("convert " + big + " --format ranks -o " + out),
            "cannot write the per-rank view of custom on ring:65534: its ranks would list 4294770690 initial messages, more "
            "than the 268435456 collsched writes",
            s, 1);
    CHECK(run("convert " + big + " --format json -o " + out).code == 0);  // the table itself is small
}

TEST_CASE("limits: initial_count counts the messages initial() accepts") {
    for (std::uint32_t P : {1u, 2u, 5u}) {
        auto t = Topology::parse(P == 1 ? "linear:2" : "ring:" + std::to_string(P));
        P = t->processors();
        Messages ms(P);
        for (std::string c : {"alltoall", "allgather", "broadcast:1", "scatter:0", "gather:1", "multicast:0:1", "custom"}) {
            CAPTURE(P);
            CAPTURE(c);
            Collective col = Collective::parse(c, *t);
            std::uint64_t n = 0;
            for (std::uint64_t m = 0; m < ms.size(); ++m) n += col.initial(ms, MessageId{static_cast<std::uint32_t>(m)});
            CHECK(col.initial_count(P) == n);
        }
    }
}

TEST_CASE("limits: topologies, graph files and JSON nesting") {
    CHECK(max_channels == (1u << 24));
    LimitsScratch s;
    auto r = run("topo complete:4097");
    CHECK(r.code == 2);
    CHECK(r.err == "collsched: error: topology 'complete:4097': 16781312 channels is more than collsched supports (16777216)\n");
    CHECK(run("topo complete:4096 --format dot").code == 0);
    r = run("topo ebft:131072");
    CHECK(r.code == 2);
    CHECK(r.err.find("131072 processors is more than collsched supports (65534)") != std::string::npos);

    // graph:/dev/zero used to read until memory ran out; devices are not read at all now, and a
    // pipe stops at 256 MiB (tests/tools/test_hostile.cpp)
    r = run("topo graph:/dev/zero");
    CHECK(r.code == 2);
    CHECK(r.err == "collsched: error: topology 'graph:/dev/zero': graph file '/dev/zero': is a character device, not a graph "
                   "file (only regular files and pipes are read)\n");

    std::string deep = s.file("deep.json", R"({"format": "collsched.table/1", "topology": "ring:4", "collective": "custom", "x": )" +
                                               std::string(5000, '[') + std::string(5000, ']') + R"(, "transfers": []})");
    std::string out = s.file("out.json");
    refused_leaving_nothing(run("convert " + deep + " --format json -o " + out), "deep.json:1:183: JSON nested more than 100 levels deep", s, 1);
}

TEST_CASE("limits: an interrupted write leaves neither the output nor a temporary") {
    LimitsScratch s;
    std::string out = s.file("out.json");
    // doctest catches signals to report crashes; the children start from the default actions.
    auto default_actions = [] {
        for (int sig : {SIGINT, SIGTERM, SIGHUP}) ::signal(sig, SIG_DFL);
    };
    for (int sig : {SIGINT, SIGTERM, SIGHUP}) {
        CAPTURE(sig);
        pid_t child = ::fork();
        REQUIRE(child >= 0);
        if (child == 0) {
            default_actions();
            tools::write_output(out, [&](const Flush& flush, fmt::memory_buffer& buf) {
                buf.append(std::string_view("{\"half\": "));
                flush(buf);  // the temporary now holds a partial file
                ::raise(sig);
                buf.append(std::string_view("\"written\"}\n"));
                flush(buf);
            });
            ::_exit(0);
        }
        int status = 0;
        REQUIRE(::waitpid(child, &status, 0) == child);
        CHECK(WIFSIGNALED(status));
        if (WIFSIGNALED(status)) CHECK(WTERMSIG(status) == sig);
        CHECK(s.entries() == 0);
    }
    // A signal the caller ignores stays ignored, the write completes, and afterwards the actions
    // are what they were.
    pid_t child = ::fork();
    REQUIRE(child >= 0);
    if (child == 0) {
        default_actions();
        ::signal(SIGHUP, SIG_IGN);
        tools::write_output(out, [&](const Flush& flush, fmt::memory_buffer& buf) {
            ::raise(SIGHUP);
            buf.append(std::string_view("{}\n"));
            flush(buf);
        });
        struct sigaction interrupt {}, hangup {};
        ::sigaction(SIGINT, nullptr, &interrupt);
        ::sigaction(SIGHUP, nullptr, &hangup);
        ::_exit(interrupt.sa_handler == SIG_DFL && hangup.sa_handler == SIG_IGN ? 0 : 1);
    }
    int status = 0;
    REQUIRE(::waitpid(child, &status, 0) == child);
    CHECK(WIFEXITED(status));
    if (WIFEXITED(status)) CHECK(WEXITSTATUS(status) == 0);
    CHECK(std::filesystem::exists(out));
    CHECK(s.entries() == 1);
}
