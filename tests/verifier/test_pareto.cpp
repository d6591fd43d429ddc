// Chunks, rounds and the Pareto frontier (issue 15): the bandwidth bounds against SCCL's
// `analyze rounds`, single (steps, chunks, rounds) instances decided by both backends with their
// witnesses verified by the direct checker, the automorphisms and the invariance restriction
// (whose UNSAT is never a proof), optimize with chunks and rounds, and the DGX-1 Allgather
// frontier (2 steps at 3/2, 3 steps at 7/6, SCCL's published points) with every point proved.
#include <doctest/doctest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <fmt/format.h>

#include "dsl/diagnostics.hpp"
#include "support/parallel.hpp"
#include "verifier/check/direct.hpp"
#include "verifier/synth/bounds/rounds_per_chunk.hpp"
#include "verifier/synth/problem/pareto.hpp"
#include "verifier/synth/symmetry/automorphisms.hpp"
#include "verifier/synth/problem/instance.hpp"
#include "tests/verifier/synth_fixtures.hpp"
#include "verifier/time/constructions.hpp"

using namespace collsched;
using collsched::test::inst;
using collsched::test::machine;

namespace {

SynthOptions backend(SatBackend b) {
    SynthOptions o;
    o.backend = b;
    o.timeout = 60;
    return o;
}

}  // namespace

TEST_CASE("bandwidth bounds: DGX-1 allgather 7/6 and gather 7/6 (as SCCL's analyze rounds), alltoall 8/3 (SCCL: 5/3)") {
    auto ag = bandwidth_bounds(inst(machine("dgx1"), "allgather"));
    REQUIRE(!ag.empty());
    CHECK(ag.front().rounds_per_chunk == Ratio::of(7, 6));
    CHECK(ag.front().name == "cut (max flow)");
    CHECK(ag.front().detail.starts_with(
        "7 data start inside the set S of processors {1-7} (outside: {0}) and must leave it; what leaves it per round is channel 1->0 (2) "
        "+ channel 2->0 (1) + channel 3->0 (1) + channel 4->0 (2) = 6: R/C >= 7/6; the largest such ratio over every set of nodes"));
    // Alltoall: the 16 messages from one socket to the other cross 6 NVLinks per round. SCCL's
    // flow LP says 5/3 (the hops bound), as its relaxation lets a chunk's flow justify itself
    // around a cycle.
    auto a2a = bandwidth_bounds(inst(machine("dgx1"), "alltoall"));
    REQUIRE(a2a.size() == 2);
    CHECK(a2a[0].rounds_per_chunk == Ratio::of(8, 3));
    CHECK(a2a[0].detail ==
          "16 messages start outside the processor set {0, 1, 2, 3} and must enter it; the channels into it carry 6 chunks per round: "
          "R/C >= 16/6");
    CHECK(a2a[1].rounds_per_chunk == Ratio::of(5, 3));
    CHECK(a2a[1].name == "hops");
    CHECK(bandwidth_bounds(inst(machine("dgx1"), "gather:0")).front().rounds_per_chunk == Ratio::of(7, 6));
    CHECK(bandwidth_bounds(inst(machine("dgx1"), "scatter:0")).front().rounds_per_chunk == Ratio::of(7, 6));
    // Two DGX-1s: processor 1 has no link to the other box and receives 15 data over 6 per round.
    CHECK(bandwidth_bounds(inst(machine("dgx1x2"), "allgather")).front().rounds_per_chunk == Ratio::of(5, 2));
    // Single ports cut each processor's share to 1: ring allgather needs (n-1)/1.
    CHECK(bandwidth_bounds(inst("complete:4", "allgather", "ports=single")).front().rounds_per_chunk == Ratio::of(3, 1));
}

TEST_CASE("Ratio is exact and reduced") {
    CHECK(Ratio::of(8, 6).text() == "4/3");
    CHECK(Ratio::of(6, 3).text() == "2");
    CHECK(Ratio::of(7, 6) < Ratio::of(6, 5));
    CHECK(Ratio::of(7, 6).ceil_times(6) == 7);
    CHECK(Ratio::of(7, 6).ceil_times(5) == 6);
}

TEST_CASE("DGX-1 allgather in 2 steps: 3 rounds for 2 chunks, not 4 rounds for 3 (both backends, witnesses verified)") {
    const SynthInstance in = inst(machine("dgx1"), "allgather");
    for (SatBackend b : {SatBackend::cadical, SatBackend::z3}) {
        CAPTURE(to_string(b));
        SynthResult r = solve_rounds(in, 2, 2, 3, backend(b));
        REQUIRE(r.answer == Answer::sat);
        REQUIRE(r.witness);
        const SendTable& t = *r.witness;
        CHECK(t.collective.chunks == 2);
        CHECK(t.steps() == 2);
        CHECK(t.total_rounds() == 3);
        CHECK(r.step_rounds.size() == 2);
        CHECK(verify_direct(t).holds());
        CHECK(solve_rounds(in, 2, 3, 4, backend(b)).answer == Answer::unsat);
        CHECK(solve_rounds(in, 2, 4, 5, backend(b)).answer == Answer::unsat);
    }
}

TEST_CASE("automorphisms of the DGX-1, and the invariance restriction never proves UNSAT") {
    const SynthInstance in = inst(machine("dgx1"), "allgather");
    auto autos = automorphisms(in);
    // The hybrid cube-mesh with its NVLink counts: swap the two sockets, swap the two halves of
    // each, and both (SCCL's own commented-out symmetries of dgx1()).
    CHECK(autos.size() == 3);
    for (const auto& g : autos) {
        for (const Channel& ch : in.topology->channels()) {
            auto img = in.topology->find_channel(Node{g[idx(ch.from)]}, Node{g[idx(ch.to)]});
            REQUIRE(img);
            CHECK(in.topology->channel(*img).cap == ch.cap);
        }
    }
    CHECK(automorphisms(inst(machine("dgx1"), "gather:0")).empty());  // a root stays fixed: nothing moves 0 and keeps the caps
    SynthOptions o = backend(SatBackend::cadical);
    o.invariant = autos;
    SynthResult r = solve_rounds(in, 2, 3, 4, o);
    CHECK(r.answer == Answer::unknown);
    CHECK(r.reason == "no schedule invariant under the automorphisms (a restriction, not a proof)");
    SynthResult s = solve_rounds(in, 2, 2, 3, o);
    REQUIRE(s.answer == Answer::sat);
    CHECK(verify_direct(*s.witness).holds());
}

TEST_CASE("optimize with chunks and rounds: least steps, the search space named, infeasible below the bandwidth bound") {
    SynthInstance in = inst(machine("dgx1"), "allgather");
    in.collective.set_chunks(2, *in.topology);
    in.rounds = 3;
    OptimizeOptions o{constructions()};
    o.timeout = 60;
    OptimizeResult r = optimize(in, o);
    REQUIRE(r.status == OptStatus::proved);
    CHECK(*r.optimum == 2);
    CHECK(r.witness->total_rounds() <= 3);
    CHECK(verify_direct(*r.witness).holds());
    CHECK(search_space(in).find("2 chunks per datum, at most 3 rounds in all") != std::string::npos);

    in.collective.set_chunks(3, *in.topology);
    in.rounds = 4;  // 2 steps are UNSAT with 4 rounds for 3 chunks; 3 steps work (SCCL's (3, 4, 3))
    r = optimize(in, o);
    REQUIRE(r.status == OptStatus::proved);
    CHECK(*r.optimum == 3);
    CHECK(r.witness->total_rounds() == 4);

    in.collective.set_chunks(6, *in.topology);
    in.rounds = 6;  // below 7/6 * 6
    r = optimize(in, o);
    CHECK(r.status == OptStatus::infeasible);
    CHECK(r.note.find("R >= 7/6 * 6") != std::string::npos);

    // One round per step: S = R >= ceil(7/6 * 2) = 3 with 2 chunks.
    SynthInstance one = inst(machine("dgx1"), "allgather");
    one.collective.set_chunks(2, *one.topology);
    r = optimize(one, o);
    REQUIRE(r.status == OptStatus::proved);
    CHECK(*r.optimum == 3);
    CHECK(verify_direct(*r.witness).holds());
}

TEST_CASE("chunked synthesis refuses what it does not encode") {
    SynthInstance in = inst("ebft:8", "alltoall");
    in.collective.set_chunks(2, *in.topology);
    in.routes = RouteSpace::fixed;
    CHECK_THROWS_AS(encoding_for(in), InputError);
    SynthInstance w = inst("ideal:8", "broadcast:0");
    w.rounds = 3;
    w.model.inject_once = true;
    CHECK_THROWS_AS(encoding_for(w), InputError);
    // through routers that forward (replicate=no) the copies are counted, with rounds too
    w.model.inject_once = false;
    CHECK(encoding_for(w) == EncodingKind::dissemination);
}

TEST_CASE("the Pareto frontier of DGX-1 allgather: (2 steps, 3/2) and (3 steps, 7/6), every point proved") {
    ParetoOptions o{constructions()};
    o.max_chunks = 8;
    o.timeout = 120;
    ParetoResult r = pareto(inst(machine("dgx1"), "allgather"), o);
    REQUIRE(r.complete);
    CHECK(r.bandwidth_bound == Ratio::of(7, 6));
    CHECK(*r.least_steps.optimum == 2);
    std::vector<std::tuple<Step, Step, std::uint32_t>> frontier;
    for (const ParetoRow& row : r.rows) {
        CHECK(row.proved);
        if (!row.frontier) continue;
        frontier.push_back({row.best->steps, row.best->rounds, row.best->chunks});
        CHECK(verify_direct(row.best->table).holds());
        CHECK(row.best->table.total_rounds() == row.best->rounds);
        CHECK(row.best->table.collective.chunks == row.best->chunks);
    }
    CHECK(frontier == std::vector<std::tuple<Step, Step, std::uint32_t>>{{2, 3, 2}, {3, 7, 6}});
    // Row 2 refuted every pair below 3/2 with C <= 8 (SCCL assumes five of them without proof).
    REQUIRE(r.rows.size() == 2);
    std::size_t unsat = 0;
    for (const RoundsAttempt& a : r.rows[0].attempts) unsat += a.answer == Answer::unsat;
    CHECK(unsat == 10);
    CHECK(r.end == "the bandwidth bound 7/6 is met");
}

TEST_CASE("link groups are honored: SCCL's HubAndSpoke(4) as a graph file with groups is complete:4 with single ports") {
    // SCCL's hub_and_spoke(n): every pair linked, and per node one send and one receive per
    // round over all its links (its switches), written as link groups.
    const std::string path = (std::filesystem::temp_directory_path() / fmt::format("collsched_hub4.{}.json", ::getpid())).string();
    {
        std::ofstream f(path);
        f << R"({"processors": 4, "edges": [[0, 1], [0, 2], [0, 3], [1, 2], [1, 3], [2, 3]], "groups": [)";
        for (int p = 0; p < 4; ++p)
            f << fmt::format(R"({}{{"name": "n{}out", "cap": 1, "out_of": {}}}, {{"name": "n{}in", "cap": 1, "into": {}}})", p ? ", " : "", p, p,
                             p, p);
        f << "]}";
    }
    const SynthInstance hub = inst("graph:" + path, "allgather");
    REQUIRE(hub.topology->groups().size() == 8);
    CHECK(encoding_for(hub) == EncodingKind::dissemination);
    // The cut sees the groups: 3 data into {0} over one receive per round.
    CHECK(bandwidth_bounds(hub).front().rounds_per_chunk == Ratio::of(3, 1));
    OptimizeOptions o{constructions()};
    o.timeout = 60;
    OptimizeResult r = optimize(hub, o);
    REQUIRE(r.status == OptStatus::proved);
    CHECK(*r.optimum == 3);  // SCCL's least steps for HubAndSpoke(4) Allgather; without the groups it is 1
    CHECK(verify_direct(*r.witness).holds());
    OptimizeResult free = optimize(inst("complete:4", "allgather"), o);
    CHECK(*free.optimum == 1);
    // Two chunks, 6 rounds, 3 steps: the groups allow 2 chunks per 2-round step.
    SynthResult s = solve_rounds(hub, 3, 2, 6, backend(SatBackend::cadical));
    REQUIRE(s.answer == Answer::sat);
    CHECK(verify_direct(*s.witness).holds());
    CHECK(solve_rounds(hub, 3, 2, 5, backend(SatBackend::cadical)).answer == Answer::unsat);  // below 3 * 2
    // Automorphisms keep the groups: all 23 non-identity permutations of the 4 nodes.
    CHECK(automorphisms(hub).size() == 23);
    std::filesystem::remove(path);
}

TEST_CASE("pareto: with several rounds per step the rows start below the least one-round steps (nvswitch8: 1 step of 7 rounds)") {
    // nvswitch8 allgather: 7 one-round steps at least (one receive per GPU and round), the bound
    // R/C = 7, and the distance bound 1: a step of 7 rounds lets every GPU send its datum to its
    // 7 peers, one per round, so the whole frontier is the one point (1 step, R/C = 7). Before,
    // the rows started at the least one-round steps and called (7 steps, R/C 7) proved.
    ParetoOptions o{constructions()};
    o.max_chunks = 2;
    o.timeout = 60;
    ParetoResult r = pareto(inst(machine("nvswitch8"), "allgather"), o);
    CHECK(r.bandwidth_bound == Ratio::of(7, 1));
    CHECK(*r.least_steps.optimum == 7);
    CHECK(r.first_steps == 1);
    CHECK(r.complete);
    REQUIRE(r.rows.size() == 1);
    REQUIRE(r.rows.front().best);
    CHECK(r.rows.front().frontier);
    CHECK(r.rows.front().proved);
    CHECK(r.rows.front().steps == 1);
    CHECK(r.rows.front().best->rounds == 7);
    CHECK(r.rows.front().best->chunks == 1);
    CHECK(r.rows.front().best->step_rounds == std::vector<Step>{7});
    CHECK(verify_direct(r.rows.front().best->table).holds());
    CHECK(r.end == "the bandwidth bound 7 is met");
}

namespace {

/// Everything a pareto report prints about its rows except the times: per row the steps, the
/// proof, every attempt's (C, R, answer, reason) and the point with its table's transfers.
std::string rows_text(const ParetoResult& r) {
    std::string s = fmt::format("end: {}; complete {}\n", r.end, r.complete);
    for (const ParetoRow& row : r.rows) {
        s += fmt::format("S = {}: proved {}, frontier {}: {}\n", row.steps, row.proved, row.frontier, row.excluded);
        for (const RoundsAttempt& a : row.attempts)
            s += fmt::format("  C = {}, R = {}: {} {}\n", a.chunks, a.rounds, to_string(a.answer), a.reason);
        if (!row.best) continue;
        const ParetoPoint& p = *row.best;
        s += fmt::format("  point {} steps, {} rounds ({}), {} chunks:", p.steps, p.rounds, fmt::join(p.step_rounds, "+"), p.chunks);
        for (const Transfer& t : p.table.transfers) s += fmt::format(" {}/{}/{}", t.step, idx(t.channel), idx(t.message));
        s += "\n";
    }
    return s;
}

/// Processes in one: the leader's side of a JobSharing whose `followers` run their share of the
/// calls through the same text as MPI ranks do (the calls and answers serialized), here.
class LoopbackSharing final : public JobSharing {
public:
    explicit LoopbackSharing(unsigned processes) : processes_(processes) {}
    bool leader() const override { return true; }
    unsigned processes() const override { return processes_; }
    std::vector<std::string> share(const std::vector<std::string>& jobs, unsigned threads, const JobRunner& run) override {
        std::vector<std::string> out(jobs.size());
        run_indexed(jobs.size(), threads, [&](std::size_t i) {
            out[i] = run(jobs[i]);
            return true;
        });
        shared += jobs.size();
        return out;
    }
    void serve(unsigned, const JobRunner&) override { FAIL("a leader does not serve"); }
    std::size_t shared = 0;

private:
    unsigned processes_;
};

}  // namespace

TEST_CASE("pareto --jobs and shared calls: the DGX-1 allgather rows are the same for 1, 2 and 4 threads and through text") {
    // The walk decides a row's next N pairs at once and reads the answers in its own order, up
    // to the first SAT: the attempts, proofs and points (transfer for transfer) must not depend
    // on N, nor on the calls and answers crossing processes as text (docs/synthesis.md,
    // "Threads and MPI ranks").
    const SynthInstance in = inst(machine("dgx1"), "allgather");
    ParetoOptions o{constructions()};
    o.max_chunks = 8;
    o.timeout = 120;
    const std::string one = rows_text(pareto(in, o));
    CHECK(one.find("S = 2: proved true, frontier true") != std::string::npos);
    CHECK(one.find("C = 2, R = 3: sat") != std::string::npos);
    for (unsigned jobs : {2u, 4u}) {
        CAPTURE(jobs);
        o.jobs = jobs;
        CHECK(rows_text(pareto(in, o)) == one);
    }
    auto loop = std::make_shared<LoopbackSharing>(3);
    o.jobs = 2;
    o.sharing = loop;
    CHECK(rows_text(pareto(in, o)) == one);
    CHECK(loop->shared == 18);  // batches of 6 (3 processes of 2 threads): two for row 2 (11 pairs), one for row 3
}
