// `mpirun -n K collsched pareto` (cli/mpi_share.hpp, docs/synthesis.md "Threads and MPI
// ranks"): with 2 and 4 ranks, oversubscribed on this machine, rank 0 prints the report one
// process prints (but for the times), the other ranks nothing, and the exit code is the same.
#include <doctest/doctest.h>

#include <unistd.h>

#include <string>

#include <nlohmann/json.hpp>

#include "tests/tools/cli_run.hpp"
#include "tests/tools/pareto_json.hpp"

using namespace collsched;

namespace {

test::Run under_mpirun(int ranks, const std::string& args) {
    return test::run_shell(std::string("mpirun ") + (::geteuid() == 0 ? "--allow-run-as-root " : "") + "--oversubscribe -n " +
                           std::to_string(ranks) + " " + COLLSCHED_BINARY + " " + args);
}

}  // namespace

TEST_CASE("mpirun -n 2 and -n 4 collsched pareto: the DGX-1 allgather report of one process, printed once") {
    const std::string args = "pareto --topology graph:schedules/machines/dgx1.json --collective allgather --json";
    const test::Run one = test::run(args);
    REQUIRE(one.code == 0);
    for (int ranks : {2, 4}) {
        CAPTURE(ranks);
        const test::Run r = under_mpirun(ranks, args);
        CHECK(r.code == 0);
        CHECK(test::pareto_report(r.out) == test::pareto_report(one.out));  // one JSON object: printed by rank 0 alone
        const test::Run threads = under_mpirun(ranks, args + " --jobs 2");
        CHECK(threads.code == 0);
        CHECK(test::pareto_report(threads.out) == test::pareto_report(one.out));
    }
}

TEST_CASE("mpirun -n 2 collsched pareto: a time limit is exit 3 and bad input exit 2, as in one process") {
    const test::Run late = under_mpirun(2, "pareto --topology graph:schedules/machines/dgx1.json --collective allgather --max-chunks 16 "
                                           "--timeout 2 --json");
    CHECK(late.code == 3);
    const nlohmann::json j = nlohmann::json::parse(late.out);
    CHECK(j["complete"] == false);
    CHECK(j["end"] == "time limit");
    const test::Run bad = under_mpirun(2, "pareto --topology ring:x --collective allgather");
    CHECK(bad.code == 2);
    CHECK(bad.out.empty());
    // One error line from rank 0 (the others print nothing), then mpirun's own note.
    CHECK(bad.err.rfind("collsched: error: topology 'ring:x'", 0) == 0);
    CHECK(bad.err.find("collsched: error", 1) == std::string::npos);
}
