// `pareto --jobs N` on the command line (docs/synthesis.md, "Threads and MPI ranks"): the same
// report for 1, 2 and 4 threads but for the times, and the run's time limit shared by the threads.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include "tests/tools/cli_run.hpp"
#include "tests/tools/pareto_json.hpp"

using namespace collsched;

TEST_CASE("pareto --jobs 1, 2 and 4: the DGX-1 allgather report is the same but for its times") {
    const std::string args = "pareto --topology graph:schedules/machines/dgx1.json --collective allgather --json --jobs ";
    const test::Run one = test::run(args + "1");
    REQUIRE(one.code == 0);
    const nlohmann::json j = nlohmann::json::parse(one.out);
    CHECK(j["frontier"].size() == 2);
    CHECK(j["rows"][0]["attempts"].size() == 11);  // 10 UNSAT below 3/2, then (C = 2, R = 3)
    for (const char* n : {"2", "4"}) {
        CAPTURE(n);
        const test::Run r = test::run(args + n);
        CHECK(r.code == 0);
        CHECK(test::pareto_report(r.out) == test::pareto_report(one.out));
    }
    CHECK(test::run(args + "0").code == 2);
}

TEST_CASE("pareto --jobs 2 --timeout 2: the threads share the run's limit, and what was proved is reported, exit 3") {
    // With up to 16 chunks the walk needs about a minute of solver time (docs/synthesis.md).
    const test::Run r = test::run("pareto --topology graph:schedules/machines/dgx1.json --collective allgather --max-chunks 16 "
                                  "--timeout 2 --jobs 2 --json");
    CHECK(r.code == 3);
    const nlohmann::json j = nlohmann::json::parse(r.out);
    CHECK(j["complete"] == false);
    CHECK(j["end"] == "time limit");
    // The least steps (2, one round each) are a point; the packed schedule meets the bound.
    CHECK(j["least_steps"]["status"] == "proved");
    REQUIRE(j["frontier"].size() == 2);
    CHECK(j["frontier"][1]["rounds_per_chunk"] == "7/6");
    CHECK(j["rows"][0]["proved"] == false);
}
