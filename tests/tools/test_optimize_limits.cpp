// `optimize` under its limits (docs/synthesis.md, "Limits"): --timeout ends the whole run, every
// solver call gets at most what is left, --memory refuses or stops an encoding before the limit;
// the run ends with the best bounds and schedule so far, status found or timeout, exit 3. The
// tests assert statuses, exit codes and the memory the run reports; wall times are measured in
// the benchmark of docs/performance.md, not here.
#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "support/budget.hpp"
#include "tests/tools/cli_run.hpp"

using collsched::test::run;
using collsched::test::source;

namespace {

nlohmann::json optimize_json(const std::string& args, int expect_code) {
    auto r = run("optimize " + args + " --json");
    INFO(args);
    INFO(r.err);
    REQUIRE(r.code == expect_code);
    return nlohmann::json::parse(r.out);
}

const std::string multibox4 = "--topology graph:" + source("schedules/machines/multibox4x8.json");
// Two DGX-1 (hybrid cube-mesh boxes): no translation group, so alltoall is left to the greedy
// and the solver, whose formula for T = 16 takes about 300 MB and seconds to encode.
const std::string dgx1x2 = "--topology graph:" + source("schedules/machines/dgx1x2.json");

}  // namespace

TEST_CASE("limits of optimize: a memory limit below the encoding refuses it and ends with the known schedule's 17 steps") {
#if defined(__SANITIZE_ADDRESS__)
    // Under AddressSanitizer (scripts/sanitize.sh) the resident memory the limit is measured on
    // holds the sanitizer's shadow and quarantine (170 MB at the start of this run), so a limit
    // of 60 or 150 MB cannot mean what it means in a normal build. The plain build runs it.
    MESSAGE("skipped under AddressSanitizer: resident memory includes its shadow memory");
    return;
#endif
    // The formula for T = 16 needs more than 150 MB: it is not built. Found, exit 3, under the limit.
    for (const char* limit : {"60M", "150M"}) {
        auto j = optimize_json(dgx1x2 + " --collective alltoall --timeout 120 --memory " + std::string(limit), 3);
        CHECK(j["status"] == "found");
        CHECK(j["upper_bound"] == 17);  // greedy first fit over any route
        CHECK(j["lower_bound"] == 16);
        REQUIRE(j["attempts"].size() == 1);
        CHECK(j["attempts"][0]["answer"] == "unknown");
        CHECK(j["attempts"][0]["reason"].get<std::string>().starts_with("memory limit"));
        CHECK(j["limits"]["memory"] == collsched::parse_bytes(limit));
        CHECK(j["limits"]["peak_memory"].get<std::uint64_t>() <= collsched::parse_bytes(limit));
    }
    auto r = run("optimize " + dgx1x2 + " --collective alltoall --timeout 120 --memory 150M");
    CHECK(r.code == 3);
    CHECK(r.out.find("best found: 17 steps, not proved optimal (the memory limit ended the search)") != std::string::npos);
    CHECK(r.out.find("limits: time 120 s, memory 150 MiB;") != std::string::npos);
}

TEST_CASE("limits of optimize: a short time limit ends the run with what it found") {
    // dgx1x2 alltoall: the greedy gives 17, the formula for 16 is not encoded in 2 s.
    auto j = optimize_json(dgx1x2 + " --collective alltoall --timeout 2", 3);
    CHECK(j["status"] == "found");
    CHECK(j["upper_bound"] == 17);
    CHECK(j["lower_bound"] == 16);
    CHECK(j["limits"]["timeout"] == 2);
    CHECK(j["limits"]["solve_timeout"].is_null());
    for (const auto& a : j["attempts"])
        if (a["answer"] == "unknown") CHECK(a["reason"].get<std::string>().find("time limit") != std::string::npos);
    // A run stopped while loading (fattree:4:64 alltoall: a formula that cannot be loaded in time).
    auto f = optimize_json("--topology fattree:4:64:1,4,16 --collective alltoall --timeout 3", 3);
    CHECK(f["status"] == "found");
    CHECK(f["lower_bound"] == 68);
    CHECK(f["upper_bound"] == 83);
}

TEST_CASE("limits of optimize: --solve-timeout bounds each call within --timeout") {
    auto j = optimize_json(dgx1x2 + " --collective alltoall --timeout 60 --solve-timeout 0.5", 3);
    CHECK(j["status"] == "found");
    CHECK(j["limits"]["solve_timeout"] == 0.5);
    bool stopped = false;
    for (const auto& a : j["attempts"])
        if (a["answer"] == "unknown") stopped = stopped || a["reason"] == "time limit";
    CHECK(stopped);
    // Proved instances are untouched by the limits.
    auto p = optimize_json("--topology ring:6 --collective alltoall --timeout 5 --solve-timeout 1 --memory 1G", 0);
    CHECK(p["status"] == "proved");
    CHECK(p["optimum"] == 5);
}

TEST_CASE("limits of optimize: a malformed size is bad input") {
    auto r = run("optimize --topology ring:4 --collective allgather --memory 12Q");
    CHECK(r.code == 2);
    CHECK(r.out.empty());
    CHECK(r.err.find("'12Q' is not a size") != std::string::npos);
}

TEST_CASE("optimize --greedy: the greedy's verified schedule with the best lower bound and the gap, no solver") {
    auto j = optimize_json(dgx1x2 + " --collective allgather --greedy", 3);
    CHECK(j["status"] == "found");
    CHECK(j["lower_bound"] == 4);
    CHECK(j["upper_bound"] == 6);
    CHECK(j["attempts"].empty());
    CHECK(j["greedy"]["steps"] == 6);
    CHECK(j["greedy"]["only"] == true);
    auto r = run("optimize " + dgx1x2 + " --collective allgather --greedy");
    CHECK(r.code == 3);
    CHECK(r.out.find("greedy: 6 steps in") != std::string::npos);
    CHECK(r.out.find("(greedy only, no solver); proven lower bound 4") != std::string::npos);
    CHECK(r.out.find("gap 2 steps, 50.0% of the bound") != std::string::npos);
    // On a machine with a translation group the greedy in the quotient (the translates of one
    // spanning tree) comes first; where it meets the bound the matching greedy is not run.
    auto t = optimize_json(multibox4 + " --collective allgather --greedy", 0);
    CHECK(t["status"] == "proved");
    CHECK(t["optimum"] == 16);
    CHECK(t["upper_bound_source"] == "translates of one spanning tree under Z_8 x Z_4 (collsched construction, docs/synthesis.md)");
    CHECK(!t.contains("greedy"));
    // Where the greedy meets the bound the optimum is proved without a solver.
    auto p = optimize_json("--topology ring:8 --collective reduce_scatter --greedy", 0);
    CHECK(p["status"] == "proved");
    CHECK(p["optimum"] == 4);
    // Instances it does not take are bad input with the reason.
    auto bad = run("optimize --topology ebft:8 --collective alltoall --greedy");
    CHECK(bad.code == 2);
    CHECK(bad.err.find("networks of processors only") != std::string::npos);
}

TEST_CASE("optimize --hierarchical: a time limit stops the compositions with the best so far, exit 3") {
    // rail 32 x 8 alltoall (256 GPUs): the 40 compositions take about 17 s on an idle machine
    // (rail 16 x 8's take 2.2 s, and a fast machine finished them inside the limit: stop 47's CI).
    // With 2 s the run keeps what it finished and says which limit stopped it. The translates of
    // one processor's messages prove 248 first, so the run ends proved, exit 0, while the
    // compositions stop at the limit.
    collsched::test::Scratch scratch("optimize_hierarchical_limit");
    std::string rail32 = scratch.file("rail32x8.json");
    auto m = run("machine dgx-a100 --boxes 32 --network rail --units gpu -o " + rail32);
    REQUIRE(m.code == 0);
    auto j = optimize_json("--topology graph:" + rail32 + " --collective alltoall --hierarchical --timeout 2", 0);
    CHECK(j["status"] == "proved");
    CHECK(j["upper_bound"] == 248);
    CHECK(j["lower_bound"] == 248);
    REQUIRE(j["hierarchical"].is_object());
    CHECK(j["hierarchical"]["compositions"].size() < 40);
    CHECK(j["hierarchical"]["reason"].get<std::string>().starts_with("time limit"));
    CHECK(j["limits"]["timeout"] == 2);
    // Without a limit that stops it: proved, exit 0 (docs/synthesis.md, "Hierarchical synthesis").
    auto p = optimize_json("--topology graph:" + source("schedules/machines/rail4x8.json") + " --collective alltoall --hierarchical", 0);
    CHECK(p["status"] == "proved");
    CHECK(p["optimum"] == 28);
    CHECK(p["hierarchical"]["space"] == 40);
    CHECK(p["hierarchical"]["phases"][0]["steps"] == 7);
    CHECK(p["hierarchical"]["phases"][1]["steps"] == 3);
    // --jobs: the compositions on threads, the same report.
    auto q = optimize_json("--topology graph:" + source("schedules/machines/rail4x8.json") + " --collective alltoall --hierarchical --jobs 2", 0);
    CHECK(q["hierarchical"]["compositions"] == p["hierarchical"]["compositions"]);
    CHECK(q["hierarchical"]["best"] == p["hierarchical"]["best"]);
    // Machines it does not take: bad input with the reason.
    auto bad = run("optimize --topology torus:4x4 --collective alltoall --hierarchical");
    CHECK(bad.code == 2);
    CHECK(bad.err == "collsched: error: torus:4x4 states no link speeds; hierarchical synthesis finds the boxes as the components of the "
                     "fastest channels of a graph file with \"link_types\" (docs/topologies.md)\n");
}

// Every command holds --timeout and the memory budget on instances too large to finish (issue
// 41, section 3): each run below ends within its limit plus a margin for CI's loaded 2-core
// machine (three times the limit and 2 s more), with the best bounds and schedule it has.
namespace {

struct Timed {
    collsched::test::Run r;
    double seconds = 0;
};

Timed timed(const std::string& command_line) {
    const auto t0 = std::chrono::steady_clock::now();
    Timed t{collsched::test::run_shell(command_line), 0};
    t.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return t;
}
Timed timed_run(const std::string& args) { return timed(std::string(COLLSCHED_BINARY) + " " + args); }

/// The latest end allowed for a run with a time limit of `limit` seconds.
double margin(double limit) { return 3 * limit + 2; }

}  // namespace

TEST_CASE("limits: bandwidth's --timeout covers the whole run, the cut search included") {
    // torus:64x64 allgather: the cut in a second; the packing of 16.7 million deliveries does
    // not finish in 1 s (it ran 45 s at --timeout 10 before issue 41).
    auto t = timed_run("bandwidth --topology torus:64x64 --collective allgather --timeout 1 --json");
    INFO(t.r.err);
    CHECK(t.r.code == 3);
    CHECK(t.seconds < margin(1));
    CHECK(nlohmann::json::parse(t.r.out)["schedule"].contains("none"));
    CHECK(t.r.out.find("time limit") != std::string::npos);
    // ring:16384 broadcast: one max flow per processor; the search stops with the least flow so
    // far, a proved bound (1/2: two disjoint paths reach every processor), and says so.
    auto b = timed_run("bandwidth --topology ring:16384 --collective broadcast:0 --timeout 1 --json");
    INFO(b.r.err);
    CHECK(b.r.code == 3);
    CHECK(b.seconds < margin(1));
    auto k = nlohmann::json::parse(b.r.out);
    CHECK(k["bound"]["rounds_per_chunk"] == "1/2");
    CHECK(k["bound"]["certificate"]["stopped"] == "time limit");
    CHECK(k["bound"]["detail"].get<std::string>().find("a larger ratio may exist") != std::string::npos);
}

TEST_CASE("limits: bandwidth holds the memory budget and refuses a malformed one") {
    for (const char* env : {"abc", "0"}) {
        auto r = collsched::test::run_shell("COLLSCHED_MAX_MEMORY_MB=" + std::string(env) + " " + COLLSCHED_BINARY +
                                            " bandwidth --topology ring:8 --collective allgather");
        CHECK(r.code == 2);
        CHECK(r.out.empty());
        CHECK(r.err.find("COLLSCHED_MAX_MEMORY_MB must be a whole number of MiB from 1 to 2^40") != std::string::npos);
    }
    // complete:1024: a flow network of a million arcs (about 300 MiB) does not fit in 200 MiB:
    // refused before it is built, exit 3, with the estimate. (The process holds about 36 MiB before
    // that point here; at 64 MiB the case failed once on CI, where the resident size before the
    // estimate is not the same: it depends on the allocator and on the kernel's huge-page policy.)
    auto t = timed("COLLSCHED_MAX_MEMORY_MB=200 " + std::string(COLLSCHED_BINARY) + " bandwidth --topology complete:1024 --collective allgather");
    INFO(t.r.err);
    INFO(t.r.out);
    CHECK(t.r.code == 3);
    CHECK(t.r.out.find("bound: none (memory limit: the flow network of") != std::string::npos);
}

TEST_CASE("limits: optimize --greedy and the least steps on machines too large to finish end at --timeout") {
    // (torus:64x64: listing its 16.7 million goal pairs for the bounds takes a second that no
    // poll divides, hence 2 s there.)
    for (auto [args, limit] : {std::pair{"--greedy --topology torus:64x64 --collective allgather", 2.0},
                               std::pair{"--topology linear:65534 --collective broadcast:0", 1.0}}) {
        auto t = timed_run("optimize " + std::string(args) + " --timeout " + std::to_string(limit) + " --json");
        INFO(args);
        INFO(t.r.err);
        CHECK(t.r.code == 3);
        CHECK(t.seconds < margin(limit));
        auto j = nlohmann::json::parse(t.r.out);
        CHECK((j["status"] == "found" || j["status"] == "timeout"));
    }
}

TEST_CASE("limits: pareto refuses a size it cannot take before any work, and ends at --timeout") {
    // hypercube:12 alltoall: 2^24 goal pairs, refused at once (it came after 40 s of counting).
    auto t = timed_run("pareto --topology hypercube:12 --collective alltoall --timeout 10");
    CHECK(t.r.code == 2);
    CHECK(t.r.err.find("16773120 goal pairs") != std::string::npos);
    CHECK(t.seconds < margin(0));
}

namespace {

/// A machine of `boxes` DGX boxes on rails (scripts/machines.py's "rail" or "h100rail") written
/// into `s`: 128 boxes are 1,024 GPUs, a 5 MB file.
std::string rail_machine(const collsched::test::Scratch& s, const std::string& family, int boxes) {
    const std::string path = s.file(fmt::format("{}{}x8.json", family, boxes));
    const std::string box = family == "rail" ? "dgx-a100 --network rail --units gpu" : "dgx-h100 --network rail";
    auto r = run(fmt::format("machine {} --boxes {} -o {}", box, boxes, path));
    REQUIRE(r.code == 0);
    return path;
}

/// A run of `args` with a time limit of `limit` s: it ends within margin(limit), with `codes`.
nlohmann::json ends_in_time(const std::string& args, double limit, std::initializer_list<int> codes = {3}) {
    auto t = timed_run(args + fmt::format(" --timeout {} --json", limit));
    INFO(args);
    INFO(t.r.err);
    INFO(t.r.out.substr(0, 2000));
    CHECK(std::find(codes.begin(), codes.end(), t.r.code) != codes.end());
    CHECK(t.seconds < margin(limit));
    return t.r.out.empty() ? nlohmann::json() : nlohmann::json::parse(t.r.out);
}

}  // namespace

TEST_CASE("limits: a graph file is read under the time limit, and a run stopped there says so with exit 3") {
    // Reading 1,024 GPUs (5 MB, 2 million values) takes longer than 0.05 s: the reader polls the
    // deadline (a 4,096-GPU machine took 17 s to read before it did, past any --timeout).
    collsched::test::Scratch s("limits_read");
    const std::string m = rail_machine(s, "rail", 128);
    auto r = run("optimize --topology graph:" + m + " --collective allgather --hierarchical --timeout 0.05");
    CHECK(r.code == 3);
    CHECK(r.out == "collsched: stopped before any result: time limit (reading " + m + ")\n");
    auto j = run("optimize --topology graph:" + m + " --collective allgather --timeout 0.05 --json");
    CHECK(j.code == 3);
    auto o = nlohmann::json::parse(j.out);
    CHECK(o["status"] == "timeout");
    CHECK(o["stopped"].get<std::string>().starts_with("time limit (reading"));
    CHECK(o["exit_code"] == 3);
    // bandwidth and pareto read it under their limits too.
    auto b = run("bandwidth --topology graph:" + m + " --collective allgather --timeout 0.05");
    CHECK(b.code == 3);
    CHECK(b.out.starts_with("collsched: stopped before any result: time limit (reading"));
    auto p = run("pareto --topology graph:" + m + " --collective alltoall --timeout 0.05");
    CHECK(p.code == 3);
    CHECK(p.out.starts_with("collsched: stopped before any result: time limit (reading"));
}

TEST_CASE("limits: a size refused by the processor count alone is refused before the graph file is read") {
    // The file states 4,096 processors first and is cut off after: were it read, the answer
    // would be "malformed JSON"; the refusal comes first.
    collsched::test::Scratch s("limits_header");
    const std::string f = s.file("cut.json", "{\"note\": \"4,096 GPUs\", \"processors\": 4096, \"routers\": 0,\n \"edges\": [[0, 1, 1], [1, 2");
    auto a = run("optimize --topology graph:" + f + " --collective allgather --timeout 10");
    CHECK(a.code == 2);
    CHECK(a.err == "collsched: error: allgather on graph:" + f + " has 16773120 goal pairs; the synthesizer handles at most 4194304 (its "
                   "bounds and schedules walk every pair, its encodings hold variables per pair and step)\n");
    auto rs = run("optimize --topology graph:" + f + " --collective reduce_scatter --hierarchical --timeout 10");
    CHECK(rs.code == 2);
    CHECK(rs.err.find("chunks 4096: 4096 processors with 4096 chunks make 68753031168 messages") != std::string::npos);
    auto p = run("pareto --topology graph:" + f + " --collective allgather --timeout 10");
    CHECK(p.code == 2);
    CHECK(p.err.find("has 16773120 goal pairs") != std::string::npos);
    // What the header does not decide is left to the reading: --greedy takes any size.
    auto g = run("optimize --topology graph:" + f + " --collective allgather --greedy --timeout 10");
    CHECK(g.code == 2);
    CHECK(g.err.find("malformed JSON graph") != std::string::npos);
}

TEST_CASE("limits: optimize --hierarchical on 1,024 GPUs ends at --timeout with the best so far") {
    // rail 128 x 8 and h100rail 128 x 8: the reading, the checks of every box and rail, the
    // translation group's check, the compositions and the reversal of reduce_scatter each poll
    // the deadline (16 to 40 s at --timeout 10 before issue 41's fixes).
    collsched::test::Scratch s("limits_hierarchical");
    for (const char* family : {"rail", "h100rail"}) {
        const std::string m = rail_machine(s, family, 128);
        for (const char* c : {"alltoall", "reduce_scatter"}) {
            INFO(family << " " << c);
            auto j = ends_in_time(fmt::format("optimize --topology graph:{} --collective {} --hierarchical --jobs 64", m, c), 2, {0, 3});
            if (j.contains("status")) CHECK(j["status"] != "error");
        }
    }
}

TEST_CASE("limits: reduce_scatter on 1,024 GPUs ends at --timeout, by duality and by rings") {
    // By duality the allgather's schedule is reversed (a million partials) and checked within the
    // limit; without the duality the rings' table is built and checked within it (40 s at --timeout
    // 10 before). A proved answer needs the reversed table verified: stopped before, no optimum.
    collsched::test::Scratch s("limits_reduce_scatter");
    const std::string m = rail_machine(s, "h100rail", 128);
    auto d = ends_in_time("optimize --topology graph:" + m + " --collective reduce_scatter", 2, {0, 3});
    if (d["status"] != "proved") CHECK(d["optimum"].is_null());
    ends_in_time("optimize --topology graph:" + m + " --collective reduce_scatter --method direct", 2, {0, 3});
}

TEST_CASE("limits: optimize --size on 128 GPUs ends at --timeout: the providers, NCCL's algorithms and the checks of their tables hold it") {
    // h100rail 16 x 8 allreduce at 16 MiB took 19 to 21 s at --timeout 5: the rings took the whole limit, NCCL's ring
    // and tree were built after it (12 s) and every table was checked after that. The run ends with what was built
    // and checked in time; NCCL's column then says why it is empty.
    collsched::test::Scratch s("limits_size");
    const std::string m = rail_machine(s, "h100rail", 16);
    auto j = ends_in_time("optimize --topology graph:" + m + " --collective allreduce --size 16MiB", 1, {0, 3});  // 6.4 s before (load 5)
    if (!j.is_null() && j.contains("notes")) {
        bool nccl_said = false;
        for (const auto& n : j["notes"]) nccl_said = nccl_said || n.get<std::string>().starts_with("nccl: ");
        CHECK(nccl_said);
    }
}

TEST_CASE("limits: the phase total exchange of ebft:1024 stops at --timeout") {
    // 20 million transfers written without a deadline took 27 s at --timeout 5.
    auto j = ends_in_time("optimize --topology ebft:1024 --collective alltoall", 2);
    CHECK((j["status"] == "found" || j["status"] == "timeout"));
}

TEST_CASE("limits: the memory budget holds in optimize's bounds and in bandwidth's flow network") {
    // torus:32x32 alltoall under 200 MiB: the bounds' goal pairs and distances stop at the budget
    // (746 MB before issue 41); the run ends with what it has, exit 3, below the budget.
    auto t = timed("COLLSCHED_MAX_MEMORY_MB=200 " + std::string(COLLSCHED_BINARY) +
                   " optimize --topology torus:32x32 --collective alltoall --timeout 10 --json");
    INFO(t.r.err);
    CHECK(t.r.code == 3);
    CHECK(t.seconds < margin(10));
    auto j = nlohmann::json::parse(t.r.out);
    CHECK(j["limits"]["memory"] == 200 << 20);
    CHECK(j["limits"]["peak_memory"].get<std::uint64_t>() <= std::uint64_t{200} << 20);
    // complete:4096: a flow network of 16.8 million arcs is refused by its estimate, not built
    // (it passed 2.8 GB before).
    auto b = timed_run("bandwidth --topology complete:4096 --collective allgather --timeout 10 --json");
    INFO(b.r.err);
    CHECK(b.r.code == 3);
    CHECK(b.seconds < margin(10));
    CHECK(nlohmann::json::parse(b.r.out)["stopped"].get<std::string>().starts_with("memory limit: the flow network of 16781312 arcs"));
    // Under 300 MiB the topology itself (16.8 million channels, 395 MB) is refused by its
    // estimate before it is built, exit 3.
    auto c = timed("COLLSCHED_MAX_MEMORY_MB=300 " + std::string(COLLSCHED_BINARY) +
                   " bandwidth --topology complete:4096 --collective allgather --timeout 10");
    CHECK(c.r.code == 3);
    CHECK(c.r.out.starts_with("collsched: stopped before any result: memory limit: the list of 16773120 channels of complete:4096 needs about"));
    CHECK(c.seconds < margin(0));
    // A product of complete graphs likewise (11.6 million channels; 331 MB under 200 MiB before its estimate), and the
    // products the mesh, torus and hypercube families are.
    auto p = timed("COLLSCHED_MAX_MEMORY_MB=200 " + std::string(COLLSCHED_BINARY) +
                   " optimize --topology 'product:complete:180*complete:180' --collective broadcast:0 --timeout 10");
    CHECK(p.r.code == 3);
    CHECK(p.r.out.starts_with("collsched: stopped before any result: memory limit: the list of 11599200 channels of "
                              "product:complete:180*complete:180 needs about"));
    CHECK(p.seconds < margin(0));
}

TEST_CASE("limits: greedy and translates on torus:64x64 write their tables under the limit") {
    // The goal pairs (16.7 million) are listed under the limits, the greedy's goals too, and the
    // translates are written and sorted step by step (the whole table's sort ran past the limit).
    // On an idle machine the greedy run finishes in about 2.1 s (exit 0), so either ending is
    // right; what is asserted is the end within the limit.
    for (const char* args : {"optimize --greedy --topology torus:64x64 --collective allgather --timeout 3 --json",
                             "bandwidth --topology torus:64x64 --collective allgather --timeout 3 --json"}) {
        auto t = timed_run(args);
        INFO(args);
        INFO(t.r.err);
        CHECK((t.r.code == 3 || t.r.code == 0));
        CHECK(t.seconds < margin(3));
    }
}

TEST_SUITE("slow") {
TEST_CASE("limits: 4096 GPUs (h100rail 512 x 8) end at --timeout 10 in every method" * doctest::skip()) {
    // The machine is 85 MB of JSON; reading it polls the limits, and the hierarchical, the greedy
    // and the bandwidth bound each end at the limit with what they have (issue 41: 16 to over 30
    // s at --timeout 10 before).
    collsched::test::Scratch s("limits_4096");
    const std::string m = rail_machine(s, "h100rail", 512);
    for (const char* args : {"--collective allgather --hierarchical", "--collective alltoall --hierarchical",
                             "--collective allgather --greedy"}) {
        auto t = timed_run(fmt::format("optimize --topology graph:{} {} --timeout 10", m, args));
        INFO(args);
        INFO(t.r.err);
        CHECK((t.r.code == 0 || t.r.code == 3));
        CHECK(t.seconds < margin(10));
    }
    auto b = timed_run(fmt::format("bandwidth --topology graph:{} --collective allgather --timeout 10", m));
    INFO(b.r.err);
    CHECK((b.r.code == 0 || b.r.code == 3));
    CHECK(b.seconds < margin(10));
    auto t = timed_run("bandwidth --topology torus:64x64 --collective allgather --timeout 10");
    CHECK((t.r.code == 0 || t.r.code == 3));
    CHECK(t.seconds < margin(10));
}
}
