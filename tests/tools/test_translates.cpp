// Least steps by translates (issue 28; docs/synthesis.md, "Translates of one processor"): on a
// machine with a checked translation group, the allgather's spanning tree and the total
// exchange's messages of processor 0, moved to every processor, meet the counting bounds on the
// machines of boxes; the three witnesses (direct checker, Z3 engine, simulator) agree on the
// tables, and optimize proves the least steps without a solver.
#include <doctest/doctest.h>

#include <fmt/format.h>

#include "runtime/simulator.hpp"
#include "tests/tools/cli_run.hpp"
#include "verifier/direct.hpp"
#include "verifier/synth.hpp"
#include "verifier/translate_packing.hpp"
#include "verifier/z3_engine.hpp"

using namespace collsched;
using collsched::test::run;
using collsched::test::source;

namespace {

SynthInstance instance(const std::string& spec, const char* coll) {
    auto topo = Topology::parse(spec);
    return {topo, topo->default_model(), Collective::parse(coll, *topo), RouteSpace::any};
}

std::string machine(const std::string& name) { return "graph:" + source("schedules/machines/" + name + ".json"); }

constexpr auto never = std::chrono::steady_clock::time_point::max();

}  // namespace

TEST_CASE("translates: processor 0's messages moved to every processor meet the NIC and NVLink bounds") {
    // multibox 4 x 8: every message one hop (NVLink in the box, the NIC between boxes); 24 of
    // processor 0's 31 cross its NIC, one per step: 24 steps, 992 transfers.
    auto mb = translate_alltoall(instance(machine("multibox4x8"), "alltoall"), 24, never);
    REQUIRE(mb);
    CHECK(mb->steps() == 24);
    CHECK(mb->transfers.size() == 32u * 31u);
    CHECK(verify_direct(*mb).holds());
    // rail 4 x 8: 7 NVLink hops, 3 NIC hops and 21 two-hop messages (one of each): 28 NVLink
    // hops, one per step, 32 x 52 transfers.
    auto rail = translate_alltoall(instance(machine("rail4x8"), "alltoall"), 28, never);
    REQUIRE(rail);
    CHECK(rail->steps() == 28);
    CHECK(rail->transfers.size() == 32u * 52u);
    CHECK(verify_direct(*rail).holds());
    // The 4 x 4 torus: the channel counting bound 8, as the translation-invariant construction.
    auto torus = translate_alltoall(instance("torus:4x4", "alltoall"), 8, never);
    REQUIRE(torus);
    CHECK(torus->steps() == 8);
    // No translation group (two DGX-1 boxes), half ports, or another collective: none.
    CHECK(!translation_group(*Topology::parse(machine("dgx1x2"))));
    CHECK(!translate_alltoall(instance(machine("dgx1x2"), "alltoall"), 16, never));
    CHECK(!translate_alltoall(instance(machine("multibox4x8"), "allgather"), 16, never));
    CHECK(translation_group_name(*Topology::parse("ring:8")) == "Z_8");
    CHECK(translation_group_name(*Topology::parse(machine("rail4x8"))) == "Z_8 x Z_4");
}

TEST_CASE("translates: the direct checker, the Z3 engine and the simulator agree on the tables") {
    for (const char* coll : {"alltoall", "allgather"}) {
        INFO(coll);
        SynthInstance in = instance(machine("multibox2x8"), coll);
        auto k = translation_schedule(in, 8, never);
        REQUIRE(k);
        CHECK(k->table.steps() == 8);
        CHECK(verify_direct(k->table).holds());
        CHECK(verify_z3(k->table).holds());
        SimReport s = simulate(k->table);
        CHECK(s.status == SimStatus::completed);
        CHECK(s.simulated_steps == 8);
    }
}

TEST_CASE("translates: optimize proves the least steps of 32 and 64 GPUs without a solver") {
    struct Case {
        const char* machine;
        const char* coll;
        int steps;
        const char* bound;
    };
    for (const Case& c : {Case{"multibox4x8", "allgather", 16, "receptions"}, Case{"rail4x8", "allgather", 16, "receptions"},
                          Case{"multibox4x8", "alltoall", 24, "class counting"}, Case{"rail4x8", "alltoall", 28, "cut counting"},
                          Case{"multibox8x8", "alltoall", 56, "class counting"}, Case{"rail8x8", "allgather", 32, "receptions"}}) {
        INFO(c.machine, " ", c.coll);
        OptimizeResult r = optimize(instance(machine(c.machine), c.coll), OptimizeOptions{});
        CHECK(r.status == OptStatus::proved);
        CHECK(r.optimum == Step(c.steps));
        CHECK(r.attempts.empty());
        CHECK(r.lower_bound_reason.starts_with(c.bound));
        CHECK(r.upper_bound_source.starts_with("translates of one "));
    }
    // The command line says the same, exit 0.
    auto out = run("optimize --topology " + machine("rail4x8") + " --collective allgather");
    CHECK(out.code == 0);
    CHECK(out.out.find("known schedule: 16 steps (translates of one spanning tree under Z_8 x Z_4 (collsched construction, docs/synthesis.md))") !=
          std::string::npos);
    CHECK(out.out.find("optimum: 16 steps (proved over every schedule of model timing=hop,ports=multi,queues=unbounded,replicate=no with any route;") !=
          std::string::npos);
}
