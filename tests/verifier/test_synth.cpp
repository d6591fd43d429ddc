// The synthesizer: cardinality encodings checked exhaustively, lower bounds and known schedules,
// and optima of small instances whose answer is known by hand or pinned here, each decided by
// both backends (which must agree) and each witness re-verified by the direct checker.
// Longer runs are in test_synth_slow.cpp (ctest label `slow`).
#include <doctest/doctest.h>

#include <bit>
#include <chrono>
#include <filesystem>
#include <fstream>

#include <fmt/format.h>

#include "compiler/table/builder.hpp"
#include "dsl/diagnostics.hpp"
#include "verifier/synth/sat/cardinality.hpp"
#include "verifier/check/direct.hpp"
#include "verifier/synth/sat/encode.hpp"
#include "verifier/synth/problem/instance.hpp"
#include "verifier/constructions/steps/known.hpp"
#include "tests/verifier/synth_fixtures.hpp"
#include "verifier/time/constructions.hpp"

using namespace collsched;
using collsched::test::inst;
using collsched::test::machine;

namespace {

SynthInstance inst_routes(const std::string& spec, const char* coll, const char* model, RouteSpace routes) {
    auto topo = Topology::parse(spec);
    return {topo, apply_model_options(topo->default_model(), model), Collective::parse(coll, *topo), routes};
}

bool verifies(const SendTable& t, bool fixed_routes) {
    VerifyOptions o;
    o.fixed_routes = fixed_routes;
    return verify_direct(t, o).holds();
}

/// Optimizes with both backends; both must prove the same optimum, with verified witnesses.
Step proved_optimum(const SynthInstance& in, bool symmetry = true) {
    Step found = 0;
    for (SatBackend b : {SatBackend::cadical, SatBackend::z3}) {
        OptimizeOptions o{constructions()};
        o.synth.backend = b;
        o.synth.symmetry = symmetry;
        o.timeout = 60;
        OptimizeResult r = optimize(in, o);
        CAPTURE(to_string(b));
        REQUIRE(r.status == OptStatus::proved);
        REQUIRE(r.witness.has_value());
        CHECK(r.witness->steps() == *r.optimum);
        CHECK(verifies(*r.witness, r.encoding == EncodingKind::personal));
        if (found == 0) found = *r.optimum;
        CHECK(*r.optimum == found);
    }
    return found;
}

}  // namespace

TEST_SUITE("synth") {

TEST_CASE("cardinality encodings agree with counting on every assignment (n <= 7)") {
    using namespace collsched::sat;
    for (CardEncoding enc : {CardEncoding::sequential, CardEncoding::totalizer})
        for (int n = 1; n <= 7; ++n)
            for (int k = 0; k <= n + 1; ++k)
                for (int kind = 0; kind < 3; ++kind) {
                    Cnf cnf(n);
                    std::vector<int> xs;
                    for (int i = 1; i <= n; ++i) xs.push_back(i);
                    if (kind == 0) at_most(cnf, xs, k, enc);
                    else if (kind == 1) at_least(cnf, xs, k, enc);
                    else exactly(cnf, xs, k, enc);
                    for (unsigned bits = 0; bits < (1u << n); ++bits) {
                        std::vector<int> as;
                        for (int i = 0; i < n; ++i) as.push_back(bits >> i & 1 ? i + 1 : -(i + 1));
                        int c = std::popcount(bits);
                        bool want = kind == 0 ? c <= k : kind == 1 ? c >= k : c == k;
                        CAPTURE(n);
                        CAPTURE(k);
                        CAPTURE(kind);
                        CAPTURE(bits);
                        CHECK(satisfiable(cnf, as) == want);
                    }
                }
}

TEST_CASE("cardinality encodings propagate: k true inputs force the others false") {
    using namespace collsched::sat;
    // With inputs 1..k assumed true, "x_{k+1} true" must be refuted; without it, satisfiable.
    for (CardEncoding enc : {CardEncoding::sequential, CardEncoding::totalizer})
        for (int n = 3; n <= 9; ++n)
            for (int k = 1; k < n; ++k) {
                Cnf cnf(n);
                std::vector<int> xs;
                for (int i = 1; i <= n; ++i) xs.push_back(i);
                at_most(cnf, xs, k, enc);
                std::vector<int> as;
                for (int i = 1; i <= k; ++i) as.push_back(i);
                CHECK(satisfiable(cnf, as));
                as.push_back(n);
                CHECK_FALSE(satisfiable(cnf, as));
            }
}

TEST_CASE("lower bounds: the papers' counting arguments") {
    // Scatter on a binary tree: n + 1 (Dimakopoulos & Dimopoulos, Table 1).
    CHECK(lower_bounds(inst("cbft:8", "scatter:0", "queues=none")).front().steps == 9);
    CHECK(lower_bounds(inst("cbft:16", "gather:5")).front().steps == 17);
    // Total exchange on the EBFT: the paper's max(n + 1, n^2 / 4 c_L) = n + 1 by channel counting,
    // and n + 2 log n - 3 by the send/receive sums (docs/findings.md).
    auto eb = lower_bounds(inst("ebft:8", "alltoall", "queues=none"));
    CHECK(eb.front().steps == 11);
    CHECK(eb.front().name == "send/receive sums");
    for (const Bound& b : eb)
        if (b.name == "processor channels") CHECK(b.steps == 9);
    CHECK(lower_bounds(inst("ebft:4", "alltoall")).front().steps == 6);
    CHECK(lower_bounds(inst("ebft:16", "alltoall")).front().steps == 21);
    CHECK(lower_bounds(inst("ebft:32", "alltoall", "queues=none")).front().steps == 39);
    // Total exchange on the CBFT: the root channel carries n^2/4 messages each way.
    CHECK(lower_bounds(inst("cbft:8", "alltoall")).front().steps >= 16);
    // Half-duplex multinode broadcast on an odd torus: 2n (single-port paper, eq. 3).
    CHECK(lower_bounds(inst("torus:3x3", "allgather", "ports=half")).front().steps == 18);
    CHECK(lower_bounds(inst("ring:6", "allgather", "ports=half")).front().steps == 10);
    // Broadcast by replication: the diameter 2 log n.
    CHECK(lower_bounds(inst("ebft:8", "broadcast:0", "replicate=yes")).front().steps == 6);
}

TEST_CASE("known schedules are verified: the paper's algorithm and the XOR-invariant construction") {
    auto paper = known_schedule(inst("ebft:8", "alltoall", "queues=none"), constructions(), false);
    REQUIRE(paper.has_value());
    CHECK(paper->table.steps() == 12);  // n + 2 log n - 2
    CHECK(verifies(paper->table, true));
    for (std::uint32_t n : {8u, 16u, 32u}) {
        auto in = inst(fmt::format("ebft:{}", n).c_str(), "alltoall", "queues=none");
        auto k = known_schedule(in, constructions());
        REQUIRE(k.has_value());
        CHECK(k->table.steps() == n + 2 * std::bit_width(n - 1) - 3);  // n + 2 log n - 3
        CHECK(verifies(k->table, true));
    }
    for (auto in : {inst("cbft:8", "scatter:0", "queues=none"), inst("torus:3x3", "allgather", "ports=half"),
                    inst("ideal:16", "broadcast:0"), inst("cbft:8", "allgather", "queues=none,replicate=yes"),
                    inst("ring:6", "alltoall", "ports=single,queues=none")}) {
        auto g = known_schedule(in, constructions());
        REQUIRE(g.has_value());
        CHECK(verifies(g->table, in.collective.kind == CollectiveKind::alltoall || in.collective.kind == CollectiveKind::scatter));
    }
}

TEST_CASE("optima known by hand") {
    // Scatter: n + 1, farthest first (Theorem 1), with and without queues.
    CHECK(proved_optimum(inst("cbft:4", "scatter:0", "queues=none")) == 5);
    CHECK(proved_optimum(inst("cbft:8", "gather:3")) == 9);
    // Broadcast with replication at routers: the diameter.
    CHECK(proved_optimum(inst("ebft:8", "broadcast:0", "replicate=yes,queues=none")) == 6);
    // Half-duplex multinode broadcast on the 5-ring: 2n.
    CHECK(proved_optimum(inst("ring:5", "allgather", "ports=half")) == 10);
    // Full-duplex single port on a ring: n - 1.
    CHECK(proved_optimum(inst("ring:6", "allgather", "ports=single")) == 5);
}

TEST_CASE("total exchange on ebft:4 takes 6 steps (= n + 2 log n - 2), queues or not") {
    CHECK(proved_optimum(inst("ebft:4", "alltoall", "queues=none")) == 6);
    CHECK(proved_optimum(inst("ebft:4", "alltoall", "queues=unbounded")) == 6);
    CHECK(proved_optimum(inst("ebft:4", "alltoall", "queues=none"), false) == 6);
    CHECK(proved_optimum(inst("cbft:4", "alltoall", "queues=none")) == proved_optimum(inst("cbft:4", "alltoall", "queues=none"), false));
}

TEST_CASE("EBFT total exchange is settled by counting and construction: n + 2 log n - 3") {
    for (const char* spec : {"ebft:8", "ebft:16", "ebft:32"}) {
        OptimizeResult r = optimize(inst(spec, "alltoall", "queues=none"), OptimizeOptions{constructions()});
        CHECK(r.status == OptStatus::proved);
        CHECK(r.attempts.empty());  // no solver needed
        CHECK(*r.optimum == r.lower_bound);
    }
}

TEST_CASE("total exchange on ebft:8 in 11 steps, and not in 10 (CaDiCaL, both solvers in the slow suite)") {
    auto in = inst("ebft:8", "alltoall", "queues=none");
    SynthOptions o;
    SynthResult sat = synthesize(in, 11, o);
    REQUIRE(sat.answer == Answer::sat);
    CHECK(sat.witness->steps() <= 11);
    CHECK(verifies(*sat.witness, true));
    CHECK(synthesize(in, 10, o).answer == Answer::unsat);
}

TEST_CASE("ideal fat tree broadcast: end-to-end sends") {
    // N = 8, w = 1: the farthest half is 2 log N = 6 away, and single ports slow the doubling.
    CHECK(proved_optimum(inst("ideal:8", "broadcast:0")) == 8);
    CHECK(proved_optimum(inst("ideal:16:w=n", "broadcast:0")) == 12);
}

TEST_CASE("multinode broadcast on cbft:4 without queueing") {
    CHECK(proved_optimum(inst("cbft:4", "allgather", "queues=none,replicate=yes")) == 5);
}

TEST_CASE("multinode broadcast on cbft:8 without queueing, single injection: 13 steps (9 without the restriction)") {
    // docs/findings.md, section 3: each source injects its datum once and copies only move away.
    CHECK(proved_optimum(inst("cbft:8", "allgather", "queues=none,replicate=yes,inject=once")) == 13);
    CHECK(proved_optimum(inst("cbft:4", "allgather", "queues=none,replicate=yes,inject=once")) == 5);
    // The ideal fat tree's end-to-end encoding does not take the restriction.
    OptimizeOptions o{constructions()};
    CHECK_THROWS_WITH_AS(optimize(inst("ideal:8", "broadcast:0", "inject=once"), o),
                         "inject=once is encoded for the personal and dissemination encodings, not for the ideal fat tree's "
                         "end-to-end sends",
                         InputError);
}

TEST_CASE("both backends and both modes agree horizon by horizon") {
    struct Q {
        SynthInstance in;
        Step lo, hi;
    };
    std::vector<Q> qs{{inst("ebft:4", "alltoall", "queues=none"), 4, 7},
                      {inst("cbft:4", "alltoall", "queues=unbounded,ports=single"), 6, 10},
                      {inst("ring:4", "alltoall", "ports=half"), 3, 8},
                      {inst("ring:5", "allgather", "ports=half"), 8, 11},
                      {inst("ebft:8", "broadcast:0", "replicate=yes,ports=single"), 5, 8},
                      {inst("ideal:8", "broadcast:0"), 6, 9},
                      {inst("hypercube:3", "allgather", "ports=single"), 5, 8}};
    for (const Q& q : qs) {
        CAPTURE(q.in.topology->spec());
        CAPTURE(q.in.collective.to_string());
        SynthOptions inc;
        Synthesizer session(q.in, q.hi, inc);
        for (Step T = q.lo; T <= q.hi; ++T) {
            CAPTURE(T);
            SynthOptions c, z;
            z.backend = SatBackend::z3;
            Answer a = synthesize(q.in, T, c).answer;
            CHECK(a != Answer::unknown);
            CHECK(synthesize(q.in, T, z).answer == a);
            CHECK(session.solve(T).answer == a);
        }
    }
}

TEST_CASE("dissemination witnesses carry no useless transfers") {
    // Broadcast from a leaf of ebft:8 by replication, with a horizon that leaves room for detours.
    for (SatBackend b : {SatBackend::cadical, SatBackend::z3}) {
        SynthOptions o;
        o.backend = b;
        SynthResult r = synthesize(inst("ebft:8", "broadcast:0", "replicate=yes,queues=none"), 8, o);
        REQUIRE(r.witness.has_value());
        // Every processor but the root receives b(0) exactly once, and nothing else is kept
        // that does not lead to one of those receptions.
        std::size_t into = 0;
        for (const Transfer& t : r.witness->transfers) into += r.witness->topology->is_processor(r.witness->topology->channel(t.channel).to);
        CHECK(into == 7);
        CHECK(r.witness->transfers.size() <= 7 * 6);
    }
}

TEST_CASE("unsupported requests are bad input with a clear message, never a loop") {
    CHECK_THROWS_AS(encoding_for(inst("ebft:8", "alltoall", "timing=wormhole")), InputError);
    CHECK_THROWS_AS(encoding_for(inst("ebft:8", "alltoall", "queues=2")), InputError);
    CHECK(encoding_for(inst("cbft:8", "broadcast:0", "replicate=no")) == EncodingKind::dissemination);  // copies through routers counted
    CHECK_THROWS_AS(encoding_for(inst("cbft:8", "broadcast:0", "replicate=no,combine=routers")), InputError);
    CHECK_THROWS_AS(encoding_for(inst("cbft:8", "custom")), InputError);
    // A collective with nothing to deliver is settled at 0 steps.
    OptimizeResult r = optimize(inst("cbft:4", "multicast:1:1", "replicate=yes"), OptimizeOptions{constructions()});
    CHECK(r.status == OptStatus::proved);
    CHECK(*r.optimum == 0);
}

TEST_CASE("a time limit ends the search with the bounds so far") {
    // Without collsched's constructions (the translates prove 32 at once). Half a second: the
    // bounds poll the same deadline, and at 0.05 s a loaded machine (load 11 on 2 cores) ended
    // before the first bound (lower bound 0); the search itself is still open at 3 s.
    OptimizeOptions o{constructions()};
    o.timeout = 0.5;
    o.constructions = false;
    OptimizeResult r = optimize(inst("torus:4x4", "alltoall", "ports=single"), o);
    CHECK(r.status == OptStatus::found);
    CHECK(r.lower_bound >= 30);
    REQUIRE(r.upper_bound.has_value());
    CHECK(*r.upper_bound > r.lower_bound);
    CHECK(r.witness.has_value());
    CHECK(r.seconds < 5);
}

TEST_CASE("any route by default, fixed routes on request: ring:6 5/6, DGX-1 3/4, torus:4x4 8/12 (issue 12)") {
    struct Case {
        std::string spec;
        const char* model;
        Step any, fixed;
    };
    for (const Case& c : {Case{"ring:6", "ports=multi", 5, 6}, Case{machine("dgx1"), "", 3, 4}, Case{"torus:4x4", "", 8, 12}}) {
        CAPTURE(c.spec);
        OptimizeOptions o{constructions()};
        o.timeout = 60;
        auto any = inst_routes(c.spec, "alltoall", c.model, RouteSpace::any);
        OptimizeResult r = optimize(any, o);
        REQUIRE(r.status == OptStatus::proved);
        CHECK(*r.optimum == c.any);
        CHECK(r.encoding == EncodingKind::free_route);
        CHECK(r.routes == RouteSpace::any);
        CHECK(search_space(any).ends_with("with any route"));
        REQUIRE(r.witness.has_value());
        CHECK(verifies(*r.witness, false));
        // The proof used only bounds that hold for any route.
        for (const Bound& b : r.bounds)
            if (b.steps > c.any) CHECK_FALSE(bound_applies(b, any));
        auto fixed = inst_routes(c.spec, "alltoall", c.model, RouteSpace::fixed);
        OptimizeResult f = optimize(fixed, o);
        REQUIRE(f.status == OptStatus::proved);
        CHECK(*f.optimum == c.fixed);
        CHECK(f.encoding == EncodingKind::personal);
        CHECK(f.routes == RouteSpace::fixed);
        CHECK(search_space(fixed).ends_with("on the topology's fixed routes"));
        CHECK(verifies(*f.witness, true));
    }
    // The solver itself, without constructions: 5 on ring:6 (4 UNSAT), and DGX-1's 2 UNSAT.
    for (SatBackend b : {SatBackend::cadical, SatBackend::z3}) {
        SynthOptions so;
        so.backend = b;
        auto ring = inst_routes("ring:6", "alltoall", "", RouteSpace::any);
        SynthResult five = synthesize(ring, 5, so);
        REQUIRE(five.answer == Answer::sat);
        CHECK(verifies(*five.witness, false));
        CHECK_FALSE(verifies(*five.witness, true));  // it needs both directions for some m(s, s+3)
        CHECK(synthesize(ring, 4, so).answer == Answer::unsat);
        CHECK(synthesize(inst_routes(machine("dgx1"), "alltoall", "", RouteSpace::any), 2, so).answer == Answer::unsat);
    }
}

TEST_CASE("total exchange on rings, tori and hypercubes meets the channel-counting bound (constructions)") {
    // Odd rings (n^2-1)/8 (translation invariant), even rings n^2/8 (mirrored), torus:4x4 and
    // hypercubes P/2 (sum of distances / channels); torus:3x5 is 9, its longer dimension's
    // directions carry 9 moves per source (cut counting). Proved without the solver.
    struct Case {
        const char* spec;
        Step steps;
    };
    for (const Case& c : {Case{"ring:9", 10}, Case{"ring:12", 18}, Case{"ring:14", 25}, Case{"ring:16", 32}, Case{"torus:4x4", 8},
                          Case{"torus:3x5", 9}, Case{"hypercube:5", 16}}) {
        CAPTURE(c.spec);
        OptimizeResult r = optimize(inst(c.spec, "alltoall"), OptimizeOptions{constructions()});
        REQUIRE(r.status == OptStatus::proved);
        CHECK(*r.optimum == c.steps);
        CHECK(r.attempts.empty());
        CHECK(verifies(*r.witness, false));
    }
}

TEST_CASE("fixed routes are exact on trees with queues and on the linear array, the label says so") {
    auto tree = inst_routes("ebft:8", "alltoall", "", RouteSpace::any);
    CHECK(fixed_routes_exact(tree));
    CHECK(encoding_for(tree) == EncodingKind::personal);
    CHECK(encoding_label(tree, EncodingKind::personal) == "personal (fixed routes; exact: routes are unique on trees and queues are unbounded)");
    CHECK(searched_routes(inst_routes("ebft:8", "alltoall", "", RouteSpace::fixed)) == RouteSpace::any);
    // Without queues a message can wait on a detour through a processor: not exact, so any route
    // takes the free-route encoding.
    auto nq = inst_routes("ebft:8", "alltoall", "queues=none", RouteSpace::any);
    CHECK_FALSE(fixed_routes_exact(nq));
    CHECK(encoding_for(nq) == EncodingKind::free_route);
    CHECK(encoding_for(inst_routes("linear:5", "alltoall", "", RouteSpace::any)) == EncodingKind::personal);
    // The send/receive sums hold for any route on the EBFT (they use leaf channels only).
    for (const Bound& b : lower_bounds(nq))
        if (b.name == "send/receive sums") {
            CHECK(b.steps == 11);
            CHECK(b.routes == RouteSpace::any);
            CHECK(bound_applies(b, nq));
        }
}

TEST_CASE("free-route encoding and fixed-route encoding agree where fixed routes are exact") {
    // Trees with unbounded queues (routers hold messages in the free-route encoding): the two
    // encodings must answer alike horizon by horizon, with both backends.
    struct Q {
        SynthInstance in;
        Step lo, hi;
    };
    for (const Q& q : {Q{inst("cbft:4", "alltoall"), 5, 8}, Q{inst("ebft:4", "alltoall", "ports=single"), 5, 8},
                       Q{inst("cbft:8", "scatter:3"), 7, 10}, Q{inst("ebft:8", "gather:0", "ports=half"), 7, 10}}) {
        CAPTURE(q.in.topology->spec());
        CAPTURE(q.in.collective.to_string());
        REQUIRE(encoding_for(q.in) == EncodingKind::personal);
        for (Step T = q.lo; T <= q.hi; ++T) {
            CAPTURE(T);
            SynthOptions fixed, free, free_z3;
            free.force_free_route = free_z3.force_free_route = true;
            free_z3.backend = SatBackend::z3;
            Answer a = synthesize(q.in, T, fixed).answer;
            SynthResult f = synthesize(q.in, T, free);
            CHECK(f.answer == a);
            CHECK(synthesize(q.in, T, free_z3).answer == a);
            if (f.witness) CHECK(verifies(*f.witness, false));
        }
    }
    // Trees with unbounded queues: the free-route encoding runs when asked for queues=none; on
    // the same trees with queues, both encodings must give the same optimum. Compare the
    // free-route optimum under queues=none with the fixed one under queues=none: free <= fixed.
    for (const char* spec : {"cbft:4", "ebft:4"}) {
        CAPTURE(spec);
        Step free = proved_optimum(inst_routes(spec, "alltoall", "queues=none", RouteSpace::any));
        Step fixed = proved_optimum(inst_routes(spec, "alltoall", "queues=none", RouteSpace::fixed));
        CHECK(free <= fixed);
    }
    // Scatter and gather on a ring: both directions around.
    CHECK(proved_optimum(inst_routes("ring:7", "scatter:2", "", RouteSpace::any)) == 3);
    CHECK(proved_optimum(inst_routes("ring:6", "gather:0", "ports=single", RouteSpace::any)) == 5);
}

// SCCL (msccl-tools, `least-steps`, one chunk, rounds = steps) on its own topologies, and the
// same instances in collsched's hop model: graphs of processors, capacities = link counts,
// ports=multi, any route; HubAndSpoke = complete:n with ports=single. Expected optima from SCCL
// 2.x runs recorded in docs/synthesis.md ("Parity with SCCL"); the closed forms where there is one.
TEST_CASE("parity with SCCL: least steps of the non-combining collectives on SCCL's topologies") {
    auto dir = std::filesystem::temp_directory_path() / "collsched_test_star";
    std::filesystem::create_directories(dir);
    auto star = [&](int n) {
        auto path = dir / fmt::format("star{}.json", n);
        std::ofstream f(path);
        f << "{\"processors\": " << n << ", \"routers\": 0, \"edges\": [";
        for (int i = 1; i < n; ++i) f << (i > 1 ? ", " : "") << "[0, " << i << "]";
        f << "]}\n";
        return "graph:" + path.string();
    };
    struct Row {
        std::string spec;
        const char* model;
        Step broadcast, scatter, gather, allgather, alltoall;
    };
    const std::vector<Row> rows{
        {"ring:4", "", 2, 2, 2, 2, 2},          {"ring:5", "", 2, 2, 2, 2, 3},
        {"ring:6", "", 3, 3, 3, 3, 5},          {"ring:7", "", 3, 3, 3, 3, 6},
        {"linear:4", "", 3, 3, 3, 3, 4},        {"linear:5", "", 4, 4, 4, 4, 6},
        {"linear:6", "", 5, 5, 5, 5, 9},        {"complete:4", "", 1, 1, 1, 1, 1},
        {"complete:6", "", 1, 1, 1, 1, 1},      {"complete:8", "", 1, 1, 1, 1, 1},
        {"complete:4", "ports=single", 2, 3, 3, 3, 3},
        {"complete:6", "ports=single", 3, 5, 5, 5, 5},
        {star(4), "", 1, 1, 1, 3, 3},           {star(6), "", 1, 1, 1, 5, 5},
        {machine("dgx1"), "", 2, 2, 2, 2, 3},   {machine("amd4"), "", 2, 2, 2, 2, 2},
        {machine("amd8"), "", 1, 1, 1, 1, 1},
    };
    for (const Row& r : rows) {
        const std::pair<const char*, Step> colls[] = {
            {"broadcast:0", r.broadcast}, {"scatter:0", r.scatter}, {"gather:0", r.gather}, {"allgather", r.allgather}, {"alltoall", r.alltoall}};
        for (auto [coll, want] : colls) {
            CAPTURE(r.spec);
            CAPTURE(r.model);
            CAPTURE(coll);
            OptimizeOptions o{constructions()};
            o.timeout = 30;
            OptimizeResult res = optimize(inst_routes(r.spec, coll, r.model, RouteSpace::any), o);
            CHECK(res.status == OptStatus::proved);
            CHECK(res.optimum == want);
            CHECK(res.routes == RouteSpace::any);
        }
    }
}

TEST_CASE("link groups bound receptions and injections: switch boxes proved without a solver") {
    // dgx2.json: 16 GPUs, every pair joined, but one chunk out and one in per GPU and step
    // (groups gpuN.out and gpuN.in of capacity 1). Counting the 15 channels into a GPU gives 1
    // step; its in-group gives 15, which the ring meets (allgather) and the edge-coloured
    // direct exchange meets (alltoall).
    OptimizeOptions o{constructions()};
    o.timeout = 20;
    OptimizeResult ag = optimize(inst_routes(machine("dgx2"), "allgather", "", RouteSpace::any), o);
    CHECK(ag.status == OptStatus::proved);
    CHECK(ag.optimum == Step{15});
    CHECK(ag.lower_bound_reason == "receptions: processor 0 must receive 15 messages, 1 per step (its link groups), each no earlier "
                                   "than its distance");
    REQUIRE(!ag.bounds.empty());
    CHECK(ag.bounds.front().assumes.back() == "link groups");
    OptimizeResult aa = optimize(inst_routes(machine("dgx2"), "alltoall", "", RouteSpace::any), o);
    CHECK(aa.status == OptStatus::proved);
    CHECK(aa.optimum == Step{15});
    CHECK(aa.known_source == "translates of one processor's messages under Z_16 (collsched construction, docs/synthesis.md)");
    CHECK(aa.attempts.empty());
    REQUIRE(aa.witness);
    CHECK(verifies(*aa.witness, false));
    OptimizeResult nv = optimize(inst_routes(machine("nvswitch8"), "alltoall", "", RouteSpace::any), o);
    CHECK(nv.status == OptStatus::proved);
    CHECK(nv.optimum == Step{7});
    // Without the groups (the same graph, its channels alone) a GPU receives 15 per step.
    auto topo = Topology::parse(machine("dgx2"));
    CHECK(synth::step_capacity(*topo, Ports::multi, topo->in_channels(Node{0})).hops == 1);
    CHECK(synth::step_capacity(*topo, Ports::multi, topo->in_channels(Node{0})).by_groups);
    CHECK(synth::step_capacity(*topo, Ports::single, topo->in_channels(Node{0})).hops == 1);
    CHECK(!synth::step_capacity(*topo, Ports::single, topo->in_channels(Node{0})).by_groups);
}

TEST_CASE("hostile sizes: the time limit covers the set-up, and sizes beyond reach are refused") {
    // Broadcast along 65,534 processors: no greedy over all pairs (N^2 distances), bounds only.
    OptimizeOptions o{constructions()};
    o.timeout = 5;
    auto t0 = std::chrono::steady_clock::now();
    OptimizeResult r = optimize(inst("linear:65534", "broadcast:0"), o);
    CHECK(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() < 10);
    CHECK(r.status != OptStatus::proved);
    CHECK(r.lower_bound == 65533);
    // More goal pairs than the limit: bad input before any work.
    OptimizeOptions small{constructions()};
    small.max_goals = 100;
    CHECK_THROWS_WITH_AS(optimize(inst("complete:16", "alltoall"), small),
                         "alltoall on complete:16 has 240 goal pairs; the synthesizer handles at most 100 (its bounds and schedules "
                         "walk every pair, its encodings hold variables per pair and step)",
                         InputError);
    // An encoding estimated beyond the variable limit is not built: unknown, with the reason.
    SynthOptions so;
    so.max_variables = 1000;
    SynthResult big = synthesize(inst("torus:4x4", "alltoall"), 9, so);
    CHECK(big.answer == Answer::unknown);
    CHECK(big.reason.find("would need about") != std::string::npos);
    // A deadline in the past stops the encoding.
    SynthOptions late;
    late.deadline = std::chrono::steady_clock::now();
    SynthResult stopped = synthesize(inst("ebft:16", "alltoall", "queues=none"), 22, late);
    CHECK(stopped.answer == Answer::unknown);
    CHECK(stopped.reason == "time limit (during encoding)");
}

}  // TEST_SUITE

TEST_CASE("the direct total exchange polls its deadline (issue 41, section 3), and without one its table holds") {
    // complete:256 single-port: 65,280 sends coloured with 255 matchings, one a step
    const SynthInstance in = inst("complete:256", "alltoall", "ports=single");
    CHECK_THROWS_AS(direct_alltoall(in, Deadline::at(Deadline::Clock::now())), LimitReached);
    const std::optional<SendTable> t = direct_alltoall(in, Deadline::after(60));
    REQUIRE(t.has_value());
    CHECK(t->steps() == 255);
    CHECK(verify_direct(*t).holds());
}
