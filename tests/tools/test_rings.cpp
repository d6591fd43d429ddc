// Rings (docs/synthesis.md, "Rings run at once"): NCCL's ring algorithms on the Hamiltonian cycles a
// machine runs at once. The tables hold in the three witnesses (direct checker, Z3 engine,
// simulator); on the machines of boxes the rings use every GPU's NVSwitch and NIC limits, so
// allgather of C = 2 chunks per datum meets the receptions bound and allreduce of C = 2P the
// transfers bound: optimize proves them without a solver.
#include <doctest/doctest.h>

#include <fmt/format.h>

#include "runtime/simulator.hpp"
#include "tests/tools/cli_run.hpp"
#include "verifier/check/direct.hpp"
#include "verifier/check/z3_engine.hpp"
#include "verifier/synth/problem/instance.hpp"
#include "verifier/time/constructions.hpp"

using namespace collsched;
using collsched::test::machine;
using collsched::test::never;
using collsched::test::source;

namespace {

SynthInstance instance_with_chunks(const std::string& spec, const char* coll, std::uint32_t chunks) {
    auto topo = Topology::parse(spec);
    SynthInstance in{topo, topo->default_model(), Collective::parse(coll, *topo), RouteSpace::any};
    in.collective.set_chunks(chunks, *topo);
    return in;
}


}  // namespace

TEST_CASE("rings: the ring tables hold in the direct checker, the Z3 engine and the simulator") {
    struct Row {
        std::string topology;
        const char* collective;
        std::uint32_t chunks;
        Step steps;      // k rings of P processors: allgather (P-1) ceil(C / k), reduce_scatter (P-1) ceil(C / (kP)), allreduce twice that
        const char* on;  // "on k rings"
    };
    for (const Row& row : {Row{machine("multibox2x8"), "allgather", 2, 15, "on 2 rings"}, Row{machine("multibox2x8"), "allreduce", 32, 30, "on 2 rings"},
                           Row{machine("multibox2x8"), "reduce_scatter", 32, 15, "on 2 rings"}, Row{machine("rail2x8"), "allreduce", 32, 30, "on 2 rings"},
                           Row{"ring:5", "allreduce", 10, 8, "on 2 rings"}, Row{"ring:5", "allgather", 3, 8, "on 2 rings"}}) {
        CAPTURE(row.topology);
        CAPTURE(row.collective);
        SynthInstance in = instance_with_chunks(row.topology, row.collective, row.chunks);
        std::optional<KnownSchedule> k = ring_schedule(in, never);
        REQUIRE(k);
        CHECK(k->source.find(row.on) != std::string::npos);
        CHECK(k->table.steps() == row.steps);
        CHECK(verify_direct(k->table).holds());
        CHECK(verify_z3(k->table).holds());
        CHECK(simulate(k->table).status == SimStatus::completed);
    }
}

TEST_CASE("rings: optimize proves allgather and allreduce with chunks on machines of boxes and tori without a solver") {
    struct Row {
        std::string machine;
        const char* collective;
        std::uint32_t chunks;
        Step optimum;
        const char* bound;
    };
    for (const Row& row : {Row{"multibox4x8", "allgather", 2, 31, "receptions"}, Row{"rail4x8", "allgather", 2, 31, "receptions"},
                           Row{"multibox4x8", "allreduce", 64, 62, "transfers"}, Row{"rail4x8", "allreduce", 64, 62, "transfers"},
                           Row{"multibox8x8", "allreduce", 128, 126, "transfers"}, Row{"rail4x8", "reduce_scatter", 64, 31, "departures"},
                           Row{"torus:8x8", "allreduce", 256, 126, "transfers"}, Row{"torus:5x7", "allgather", 4, 34, "receptions"}}) {
        CAPTURE(row.machine);
        CAPTURE(row.collective);
        // tori: an undirected Hamiltonian cycle and its complement, each run both ways (4 rings)
        SynthInstance in = instance_with_chunks(row.machine.rfind("torus", 0) == 0 ? row.machine : machine(row.machine), row.collective, row.chunks);
        OptimizeOptions o{constructions()};
        o.timeout = 60;
        OptimizeResult r = optimize(in, o);
        REQUIRE(r.status == OptStatus::proved);
        CHECK(*r.optimum == row.optimum);
        CHECK_FALSE(r.solver_unsat);
        CHECK(r.upper_bound_source.find("rings run at once (NCCL's ring algorithm") != std::string::npos);
        CHECK(r.lower_bound_reason.rfind(row.bound, 0) == 0);
    }
}

TEST_CASE("rings: refused where the model does not take them") {
    for (const char* model : {"ports=half", "timing=wormhole", "inject=once"}) {
        CAPTURE(model);
        SynthInstance in = instance_with_chunks("ring:5", "allgather", 2);
        in.model = apply_model_options(in.model, model);
        CHECK_FALSE(ring_schedule(in, never));
    }
    CHECK_FALSE(ring_schedule(instance_with_chunks("ring:5", "alltoall", 1), never));
    CHECK_FALSE(ring_schedule(instance_with_chunks("cbft:4", "allgather", 1), never));  // routers
}

TEST_CASE("rings: on every small topology and model they are built for, the three witnesses agree") {
    // Independent witnesses of the construction: the direct checker accepted each table inside
    // ring_schedule; the Z3 engine and the simulator must agree, and the steps follow the formula.
    int built = 0;
    for (const std::string& spec : {std::string("ring:3"), std::string("ring:6"), std::string("torus:3x3"), std::string("hypercube:3"),
                                    std::string("complete:5"), std::string("mesh:2x3"), machine("dgx1"), machine("nvswitch8"), machine("amd4")})
        for (const char* ports : {"ports=multi", "ports=single"})
            for (auto [coll, per] : {std::pair{"allgather", 1u}, std::pair{"allgather", 3u}, std::pair{"allreduce", 0u}, std::pair{"reduce_scatter", 0u}}) {
                CAPTURE(spec);
                CAPTURE(ports);
                CAPTURE(coll);
                auto topo = Topology::parse(spec);
                const std::uint32_t P = topo->processors(), C = per ? per : 2 * P;
                SynthInstance in = instance_with_chunks(spec, coll, C);
                in.model = apply_model_options(in.model, ports);
                std::optional<KnownSchedule> k = ring_schedule(in, never);
                if (!k) continue;
                ++built;
                const std::size_t at = k->source.find(" on ") + 4;
                const std::uint32_t rings = static_cast<std::uint32_t>(std::stoul(k->source.substr(at)));
                auto ceil_div = [](std::uint32_t a, std::uint32_t b) { return (a + b - 1) / b; };
                const std::string name = coll;
                const Step steps = name == "allgather"   ? (P - 1) * ceil_div(C, rings)
                                   : name == "allreduce" ? 2 * (P - 1) * ceil_div(ceil_div(C, rings), P)
                                                         : (P - 1) * ceil_div(C / P, rings);
                CHECK(k->table.steps() == steps);
                CHECK(verify_z3(k->table).holds());
                CHECK(simulate(k->table).status == SimStatus::completed);
            }
    CHECK(built == 72);  // every topology here has a Hamiltonian cycle; single ports take one ring
}
