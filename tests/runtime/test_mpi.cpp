// The MPI runner: the plan each rank reads, and `collsched mpirun` on real OpenMPI ranks
// (oversubscribed on one machine, small payloads so the suite stays quick): the EBFT total
// exchange for n = 8 and 16 and the ring multinode broadcast must pass their byte checks, a
// broken table must fail it.
#include <doctest/doctest.h>

#include <unistd.h>

#include <fstream>

#include <nlohmann/json.hpp>

#include "compiler/io/export_ranks.hpp"
#include "compiler/io/table_io.hpp"
#include "dsl/diagnostics.hpp"
#include "runtime/mpi_plan.hpp"
#include "tests/compiler/export_fixtures.hpp"
#include "tests/tools/cli_run.hpp"

using namespace collsched;
using collsched::test::run;

namespace {

/// Writes `t` as a table file for the command line; removed with the object.
struct TempTable {
    explicit TempTable(const SendTable& t, const std::string& tag)
        : path("/tmp/collsched_mpi_" + tag + "_" + std::to_string(::getpid()) + ".json") {
        std::ofstream(path) << table_to_json(t);
    }
    ~TempTable() { std::remove(path.c_str()); }
    std::string path;
};

}  // namespace

TEST_CASE("mpi plan: receives are grouped by the step the sender sends in") {
    mpi::Plan plan = mpi::read_plan(table_to_ranks(test::ebft_alltoall(4)), "p.json");
    CHECK(plan.processors == 4);
    CHECK(plan.steps == 6);
    CHECK(plan.endpoint_transfers == 12);
    CHECK(plan.collective == "alltoall");
    const mpi::RankPlan& r0 = plan.ranks[0];
    CHECK(r0.initial == std::vector<std::uint32_t>{1, 2, 3});
    CHECK(r0.final == std::vector<std::uint32_t>{4, 8, 12});
    REQUIRE(r0.steps.size() == 3);
    // step 1: 0 sends m(0,2) to 2 and (sent by 2 in step 1, arriving in step 4) receives m(2,0)
    CHECK(r0.steps[0].step == 1);
    CHECK(r0.steps[0].sends == std::vector<mpi::PeerMessage>{{2, 2}});
    CHECK(r0.steps[0].recvs == std::vector<mpi::PeerMessage>{{2, 8}});
    CHECK(plan.message_names[8] == "m(2,0)");
    CHECK(mpi::baseline_name("alltoall") == "MPI_Alltoall");
    CHECK(mpi::baseline_name("broadcast:3") == "MPI_Bcast");
    CHECK(mpi::baseline_name("custom") == "");
    CHECK_THROWS_AS(mpi::read_plan(R"J({"format": "collsched.table/1"})J", "p.json"), InputError);
}

TEST_CASE("mpi plan: the payload depends on the message and the byte") {
    // Pinned values: senders fill and receivers check with this function, in different processes
    // (collsched-rank of possibly another build), so a change to it must be deliberate.
    CHECK(static_cast<int>(mpi::payload_byte(0, 0)) == 92);
    CHECK(static_cast<int>(mpi::payload_byte(0, 1)) == 43);
    CHECK(static_cast<int>(mpi::payload_byte(3, 0)) == 179);
    CHECK(static_cast<int>(mpi::payload_byte(3, 3)) == 155);
    int same_msg = 0, same_byte = 0;
    for (std::uint64_t i = 0; i < 256; ++i) {
        same_msg += mpi::payload_byte(3, i) == mpi::payload_byte(3, i + 1);
        same_byte += mpi::payload_byte(3, i) == mpi::payload_byte(4, i);
    }
    CHECK(same_msg < 8);
    CHECK(same_byte < 8);
}

TEST_CASE("mpirun: the EBFT total exchange for n = 8 and 16 passes its byte checks and is compared with MPI_Alltoall") {
    for (std::uint32_t n : {8u, 16u}) {
        INFO("n = " << n);
        SendTable t = test::ebft_alltoall(n);
        TempTable file(t, "ebft" + std::to_string(n));
        auto r = run("mpirun " + file.path + " --bytes 256 --repeat 1 --timeout 120");
        INFO(r.out << r.err);
        CHECK(r.code == 0);
        CHECK(r.out.find(fmt::format("ebft:{} alltoall on {} MPI ranks: {} steps, {} endpoint sends, 256 bytes per message", n, n,
                                     t.steps(), n * (n - 1))) != std::string::npos);
        CHECK(r.out.find(fmt::format("byte check: passed ({} messages held where the collective needs them, {} bytes checked)",
                                     n * (n - 1), n * (n - 1) * 256)) != std::string::npos);
        CHECK(r.out.find("MPI_Alltoall: ") != std::string::npos);
    }
}

TEST_CASE("mpirun: the ring multinode broadcast passes its byte checks (JSON report)") {
    TempTable file(test::ring_allgather(8), "ring8");
    auto r = run("mpirun " + file.path + " --bytes 64 --repeat 2 --json --timeout 120");
    INFO(r.out << r.err);
    REQUIRE(r.code == 0);
    auto j = nlohmann::json::parse(r.out);
    CHECK(j["byte_check"] == "passed");
    CHECK(j["ranks"] == 8);
    CHECK(j["steps"] == 7);
    CHECK(j["step_seconds"].size() == 7);
    CHECK(j["step_sends"] == nlohmann::json({8, 8, 8, 8, 8, 8, 8}));
    CHECK(j["messages_checked"] == 56);
    CHECK(j["baseline"]["name"] == "MPI_Allgather");
    CHECK(j["total_seconds"].get<double>() > 0);
}

TEST_CASE("mpirun: a table that never delivers a message fails the byte check, and a wrong rank count is refused") {
    SendTable t = test::ring_allgather(4);
    t.transfers.pop_back();  // the last hop of step 3
    TempTable file(t, "broken");
    auto r = run("mpirun " + file.path + " --bytes 16 --repeat 1 --timeout 120");
    INFO(r.out << r.err);
    CHECK(r.code == 1);
    CHECK(r.out.find("byte check: FAILED (1 errors)") != std::string::npos);
    CHECK(r.out.find("rank 0: does not hold b(1) at the end") != std::string::npos);
    auto wrong = run("mpirun " + file.path + " --ranks 3");
    CHECK(wrong.code == 2);
    CHECK(wrong.err.find("--ranks 3: the table has 4 processors") != std::string::npos);
}

TEST_CASE("mpirun: a scatter on a fat tree passes its byte checks and is compared with MPI_Scatter") {
    auto topo = Topology::parse("ebft:8");
    TableBuilder b(topo, topo->default_model(), Collective{CollectiveKind::scatter, Node{3}, {}});
    Step s = 1;
    for (std::uint32_t d = 0; d < 8; ++d)
        if (d != 3) b.send_cut_through(s++, Node{3}, Node{d}, b.messages().personal(3, d));
    TempTable file(std::move(b).finish(), "scatter");
    auto r = run("mpirun " + file.path + " --bytes 32 --repeat 1 --timeout 120");
    INFO(r.out << r.err);
    CHECK(r.code == 0);
    CHECK(r.out.find("byte check: passed (7 messages") != std::string::npos);
    CHECK(r.out.find("MPI_Scatter: ") != std::string::npos);
}
