// The synthesizer: cardinality encodings checked exhaustively, lower bounds and known schedules,
// and optima of small instances whose answer is known by hand or pinned here, each decided by
// both backends (which must agree) and each witness re-verified by the direct checker.
// Longer runs are in test_synth_slow.cpp (ctest label `slow`).
#include <doctest/doctest.h>

#include <bit>

#include <fmt/format.h>

#include "compiler/builder.hpp"
#include "dsl/diagnostics.hpp"
#include "verifier/cardinality.hpp"
#include "verifier/direct.hpp"
#include "verifier/synth.hpp"

using namespace collsched;

namespace {

SynthInstance inst(const char* spec, const char* coll, const char* model = "") {
    auto topo = Topology::parse(spec);
    return {topo, apply_model_options(topo->default_model(), model), Collective::parse(coll, *topo)};
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
        OptimizeOptions o;
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
    auto paper = known_schedule(inst("ebft:8", "alltoall", "queues=none"), false);
    REQUIRE(paper.has_value());
    CHECK(paper->table.steps() == 12);  // n + 2 log n - 2
    CHECK(verifies(paper->table, true));
    for (std::uint32_t n : {8u, 16u, 32u}) {
        auto in = inst(fmt::format("ebft:{}", n).c_str(), "alltoall", "queues=none");
        auto k = known_schedule(in);
        REQUIRE(k.has_value());
        CHECK(k->table.steps() == n + 2 * std::bit_width(n - 1) - 3);  // n + 2 log n - 3
        CHECK(verifies(k->table, true));
    }
    for (auto in : {inst("cbft:8", "scatter:0", "queues=none"), inst("torus:3x3", "allgather", "ports=half"),
                    inst("ideal:16", "broadcast:0"), inst("cbft:8", "allgather", "queues=none,replicate=yes"),
                    inst("ring:6", "alltoall", "ports=single,queues=none")}) {
        auto g = known_schedule(in);
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
        OptimizeResult r = optimize(inst(spec, "alltoall", "queues=none"), OptimizeOptions{});
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
    CHECK_THROWS_AS(encoding_for(inst("cbft:8", "broadcast:0", "replicate=no")), InputError);
    CHECK_THROWS_AS(encoding_for(inst("cbft:8", "custom")), InputError);
    // A collective with nothing to deliver is settled at 0 steps.
    OptimizeResult r = optimize(inst("cbft:4", "multicast:1:1", "replicate=yes"), OptimizeOptions{});
    CHECK(r.status == OptStatus::proved);
    CHECK(*r.optimum == 0);
}

TEST_CASE("a time limit ends the search with the bounds so far") {
    OptimizeOptions o;
    o.timeout = 0.05;
    OptimizeResult r = optimize(inst("torus:4x4", "alltoall", "ports=single"), o);
    CHECK(r.status == OptStatus::found);
    CHECK(r.lower_bound >= 30);
    REQUIRE(r.upper_bound.has_value());
    CHECK(*r.upper_bound > r.lower_bound);
    CHECK(r.witness.has_value());
    CHECK(r.seconds < 5);
}

}  // TEST_SUITE
