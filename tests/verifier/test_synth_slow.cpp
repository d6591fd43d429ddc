// Long synthesizer runs (ctest label `slow`, doctest suite "slow"; excluded from the default
// run `ctest -LE slow`): the EBFT total exchange for n = 8 settled by both backends within the
// 10-second target, the probes' instances for n = 4 and 8 and the odd tori, and the command line.
#include <doctest/doctest.h>

#include <chrono>
#include <filesystem>

#include <nlohmann/json.hpp>

#include "../tools/cli_run.hpp"
#include "verifier/direct.hpp"
#include "verifier/synth.hpp"

using namespace collsched;

namespace {

SynthInstance inst(const char* spec, const char* coll, const char* model = "") {
    auto topo = Topology::parse(spec);
    return {topo, apply_model_options(topo->default_model(), model), Collective::parse(coll, *topo)};
}

/// The solver on its own: no constructions, and optimum-1 must be shown UNSAT by the solver.
OptimizeResult settle(const SynthInstance& in, SatBackend b, double timeout = 120) {
    OptimizeOptions o;
    o.synth.backend = b;
    o.timeout = timeout;
    o.constructions = false;
    o.solver_proof = true;
    OptimizeResult r = optimize(in, o);
    REQUIRE(r.status == OptStatus::proved);
    REQUIRE(r.witness.has_value());
    VerifyOptions vo;
    vo.fixed_routes = r.encoding == EncodingKind::personal;
    CHECK(verify_direct(*r.witness, vo).holds());
    return r;
}

}  // namespace

TEST_SUITE("slow") {

TEST_CASE("EBFT total exchange n = 8 is settled by each solver alone in under 10 s: 11 steps, 10 UNSAT") {
    for (SatBackend b : {SatBackend::cadical, SatBackend::z3}) {
        CAPTURE(to_string(b));
        for (const char* q : {"queues=none", "queues=unbounded"}) {
            CAPTURE(q);
            OptimizeResult r = settle(inst("ebft:8", "alltoall", q), b);
            CHECK(*r.optimum == 11);
            CHECK(r.solver_unsat);
            CHECK(r.seconds < 10);
        }
    }
}

TEST_CASE("the solver alone beats the conjecture for n = 16: a 21-step schedule from the paper's 22") {
    SynthOptions o;
    o.timeout = 120;
    SynthResult r = synthesize(inst("ebft:16", "alltoall", "queues=none"), 21, o);
    REQUIRE(r.answer == Answer::sat);
    CHECK(r.witness->steps() <= 21);
    VerifyOptions vo;
    vo.fixed_routes = true;
    CHECK(verify_direct(*r.witness, vo).holds());
}

TEST_CASE("multinode broadcast without queueing on cbft:8: n + 1 = 9, the bound with queues") {
    for (SatBackend b : {SatBackend::cadical, SatBackend::z3}) CHECK(*settle(inst("cbft:8", "allgather", "queues=none,replicate=yes"), b).optimum == 9);
}

TEST_CASE("half-duplex multinode broadcast on the odd tori 3x3 and 3x5: 2n") {
    CHECK(*settle(inst("torus:3x3", "allgather", "ports=half"), SatBackend::cadical).optimum == 18);
    CHECK(*settle(inst("torus:3x3", "allgather", "ports=half"), SatBackend::z3).optimum == 18);
    CHECK(*settle(inst("torus:3x5", "allgather", "ports=half"), SatBackend::cadical).optimum == 30);
}

TEST_CASE("ideal fat tree broadcast, exact optima for N = 16") {
    CHECK(*settle(inst("ideal:16", "broadcast:0"), SatBackend::cadical).optimum ==
          *settle(inst("ideal:16", "broadcast:0"), SatBackend::z3).optimum);
}

TEST_CASE("every witness in schedules/found verifies, as a table and as a schedule") {
    std::size_t n = 0;
    for (const auto& e : std::filesystem::directory_iterator(test::source("schedules/found"))) {
        std::string path = e.path().string();
        if (!path.ends_with(".json") && !path.ends_with(".sched")) continue;
        CAPTURE(path);
        auto r = test::run("verify " + path + " --json");
        CHECK(r.code == 0);
        auto j = nlohmann::json::parse(r.out);
        CHECK(j["verdict"] == "holds");
        ++n;
    }
    CHECK(n >= 8);
}

TEST_CASE("collsched optimize and probe on the command line") {
    auto r = test::run("optimize --topology ebft:8 --collective alltoall --model queues=none --json");
    CHECK(r.code == 0);
    auto j = nlohmann::json::parse(r.out);
    CHECK(j["optimum"] == 11);
    CHECK(j["status"] == "proved");
    CHECK(j["lower_bound"] == 11);
    CHECK(j["upper_bound"] == 11);

    r = test::run("probe ebft-alltoall --n 4,8 --solver both --json");
    CHECK(r.code == 0);
    j = nlohmann::json::parse(r.out);
    CHECK(j["agree"] == true);
    REQUIRE(j["rows"].size() == 4);
    for (auto& row : j["rows"])
        for (auto& run : row["runs"]) CHECK(run["status"] == "proved");

    // A time limit is an answer: exit 3 with the best bounds so far.
    r = test::run("optimize --topology torus:4x4 --collective alltoall --model ports=single --timeout 2 --json");
    CHECK(r.code == 3);
    j = nlohmann::json::parse(r.out);
    CHECK(j["status"] == "found");
    CHECK(j["lower_bound"] >= 32);
    CHECK(j["upper_bound"] > j["lower_bound"]);
    CHECK(j["seconds"] < 4);
    // n = 16 is settled by counting and the construction, without the solver.
    r = test::run("optimize --topology ebft:16 --collective alltoall --model queues=none --json");
    CHECK(r.code == 0);
    j = nlohmann::json::parse(r.out);
    CHECK(j["optimum"] == 21);
    CHECK(j["attempts"].empty());
    // Unsupported models are bad input.
    r = test::run("optimize --topology cbft:8 --collective broadcast:0 --model replicate=no");
    CHECK(r.code == 2);
    CHECK(r.err.find("replicate=no") != std::string::npos);
}

}  // TEST_SUITE
