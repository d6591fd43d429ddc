// `optimize --start FILE` (docs/synthesis.md, "A start from the user"): the schedule is verified
// first (exit 1 with its counterexamples when it does not hold), must be for the optimized
// topology and collective (exit 2), and then is the upper bound and the solver's hint; the
// answers are those of a run without it.
#include <doctest/doctest.h>

#include <fstream>

#include <nlohmann/json.hpp>

#include "tests/tools/cli_run.hpp"

using collsched::test::run;
using collsched::test::Scratch;

TEST_CASE("optimize --start: upper bound, hint, and refusals") {
    Scratch dir("start");
    const std::string fixed = dir.file("ring6.json"), t8 = dir.file("torus.json"), bad = dir.file("bad.json");
    // ring:6 alltoall on fixed routes: 6 steps (valid over any route too, where 5 is the optimum).
    REQUIRE(run("optimize --topology ring:6 --collective alltoall --routes fixed -o " + fixed).code == 0);
    REQUIRE(run("optimize --topology torus:4x4 --collective alltoall -o " + t8).code == 0);

    // The start meets channel counting's 8 on torus:4x4: proved from it, no solver (without the
    // constructions the best known schedule has 10 steps).
    auto r = run("optimize --topology torus:4x4 --collective alltoall --no-constructions --json --start " + t8);
    REQUIRE(r.code == 0);
    auto j = nlohmann::json::parse(r.out);
    CHECK(j["status"] == "proved");
    CHECK(j["optimum"] == 8);
    CHECK(j["known_schedule"] == 10);
    CHECK(j["upper_bound_source"] == "the start schedule " + t8 + " (verified)");
    CHECK(j["attempts"].empty());

    // Below the start: the solver, hinted, finds 5 on ring:6; the same answers without the hint.
    for (const std::string& start : {std::string(" --start ") + fixed, std::string()}) {
        auto s = run("optimize --topology ring:6 --collective alltoall --no-constructions --json" + start);
        REQUIRE(s.code == 0);
        auto k = nlohmann::json::parse(s.out);
        CHECK(k["optimum"] == 5);
        CHECK(k["status"] == "proved");
        REQUIRE(k["attempts"].size() == 1);
        CHECK(k["attempts"][0]["horizon"] == 5);
        CHECK(k["attempts"][0]["answer"] == "sat");
    }

    // A start that does not hold: its counterexamples, exit 1, no search.
    {
        std::ifstream in(fixed);
        auto tab = nlohmann::json::parse(in);
        tab["transfers"].erase(tab["transfers"].size() - 1);
        std::ofstream(bad) << tab.dump();
    }
    auto b = run("optimize --topology ring:6 --collective alltoall --start " + bad);
    CHECK(b.code == 1);
    CHECK(b.out.starts_with("start schedule " + bad + " under model timing=hop,ports=multi,queues=unbounded,replicate=no:\nverdict: violated"));
    CHECK(b.out.find("completeness: processor 0: m(5,0) never reaches processor 0") != std::string::npos);
    CHECK(b.out.find("T = ") == std::string::npos);

    // Another topology or collective: bad input.
    auto w = run("optimize --topology ring:7 --collective alltoall --start " + fixed);
    CHECK(w.code == 2);
    CHECK(w.err == "collsched: error: " + fixed + ": the schedule is for ring:6, not for ring:7 (--start takes a schedule of the optimized topology)\n");
    auto c = run("optimize --topology ring:6 --collective allgather --start " + fixed);
    CHECK(c.code == 2);
    CHECK(c.err == "collsched: error: " + fixed + ": the schedule is for alltoall, not for allgather\n");
    CHECK(run("optimize --topology ring:6 --collective reduce_scatter --start " + fixed).err ==
          "collsched: error: --start is not supported by the duality method; use --method direct\n");
}
