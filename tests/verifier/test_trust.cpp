// Issue 41, sections 1 and 2: a symmetry must keep every attribute the models and the bounds read
// (a ring whose two edges at processor 0 are faster is not vertex-transitive for class counting),
// a lower bound never stands above a verified schedule, and the per-step tree packer holds the
// exact budgets where the flow network relaxes a link group (SCCL's distributed hub and spoke).
// A randomized property over small graph machines with mixed link types and groups: every bound
// at or below the optimum the solver proves, and every packing verified.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <set>

#include <fmt/format.h>

#include "compiler/core/model.hpp"
#include "compiler/topology/topology.hpp"
#include "verifier/check/direct.hpp"
#include "verifier/synth/problem/pareto.hpp"
#include "verifier/synth/symmetry/processor_orbits.hpp"
#include "verifier/synth/problem/instance.hpp"
#include "verifier/constructions/steps/translate_packing.hpp"
#include "verifier/constructions/steps/tree_packing.hpp"
#include "tests/verifier/synth_fixtures.hpp"
#include "verifier/time/constructions.hpp"

using namespace collsched;
using collsched::test::inst;

namespace {

/// Writes `json` to a graph file in a temporary folder and returns its spec.
std::string graph_file(const std::string& name, const std::string& json) {
    const auto dir = std::filesystem::temp_directory_path() / "collsched_test_trust";
    std::filesystem::create_directories(dir);
    const auto path = dir / (name + ".json");
    std::ofstream(path) << json;
    return "graph:" + path.string();
}

/// The issue's ring of 8: capacities all 1, the two edges at processor 0 of a faster type.
const std::string ring8_fast0 = R"({"processors": 8, "routers": 0,
 "link_types": {"fast": {"bandwidth": "300 GB/s"}, "slow": {"bandwidth": "25 GB/s"}},
 "edges": [[0,1,1,"fast"],[1,2,1,"slow"],[2,3,1,"slow"],[3,4,1,"slow"],[4,5,1,"slow"],[5,6,1,"slow"],[6,7,1,"slow"],[7,0,1,"fast"]]})";

/// The issue's SCCL distributed hub and spoke: one group over every channel leaving a box.
const std::string hub_and_spoke = R"({"processors": 4, "routers": 0, "edges": [[0,1,1],[2,3,1],[0,2,1],[0,3,1],[1,2,1],[1,3,1]],
 "groups": [{"name":"box0.nic.out","cap":1,"channels":[[0,2],[0,3],[1,2],[1,3]]},
            {"name":"box1.nic.out","cap":1,"channels":[[2,0],[3,0],[2,1],[3,1]]}]})";

/// Every applicable bound of `in` at or below `optimum`.
void bounds_at_most(const SynthInstance& in, Step optimum) {
    for (const Bound& b : lower_bounds(in)) {
        if (!bound_applies(b, in)) continue;
        CAPTURE(b.name);
        CAPTURE(b.detail);
        CHECK(b.steps <= optimum);
    }
}

}  // namespace

TEST_SUITE("trust") {

TEST_CASE("a ring whose edges at processor 0 are faster has no translation group, and its alltoall bound is ring:8's") {
    const std::string spec = graph_file("ring8_fast0", ring8_fast0);
    auto t = Topology::parse(spec);
    // The rotation keeps capacities but not speeds: neither the translation group nor any
    // rotation or reflection-free candidate of the orbits may be taken.
    CHECK_FALSE(translation_group(*t));
    std::vector<std::uint32_t> rotate(8);
    for (std::uint32_t u = 0; u < 8; ++u) rotate[u] = (u + 1) % 8;
    CHECK_FALSE(is_automorphism(*t, rotate));
    CHECK(is_automorphism(*Topology::parse("ring:8"), rotate));
    std::vector<std::uint32_t> reflect(8);  // x -> -x keeps processor 0 and both fast edges
    for (std::uint32_t u = 0; u < 8; ++u) reflect[u] = (8 - u) % 8;
    CHECK(is_automorphism(*t, reflect));
    // Speeds do not enter the step model: the optimum is ring:8's, 8 steps, and no bound exceeds it.
    const SynthInstance in = inst(spec, "alltoall");
    bounds_at_most(in, 8);
    OptimizeOptions o{constructions()};
    o.timeout = 20;
    const OptimizeResult r = optimize(in, o);
    REQUIRE(r.upper_bound.has_value());
    CHECK(r.lower_bound <= 8);
    CHECK(*r.upper_bound >= 8);
    if (r.status == OptStatus::proved) CHECK(r.optimum == 8);
}

TEST_CASE("the tree packer keeps a link group of several senders and receivers (SCCL's hub and spoke)") {
    for (const char* model : {"", "queues=none"}) {
        CAPTURE(model);
        const SynthInstance in = inst(graph_file("hub_and_spoke", hub_and_spoke), "allgather", model);
        PackingOptions po;
        po.chunks = {1, 2, 4};
        const std::optional<PackedSchedule> p = pack_trees(in, po);  // aborted before the fix
        REQUIRE(p.has_value());
        CHECK(verify_direct(p->table).holds());
        // Two data leave each box through a group of capacity 1: at least 2 steps per chunk.
        CHECK(p->rounds >= 2 * p->chunks);
    }
    // A 3-ring whose group spans 1->2 and 2->0 (two senders, two receivers), without queues.
    const std::string ring3 = graph_file("ring3_group", R"({"processors": 3, "routers": 0, "edges": [[0,1,1],[1,2,1],[2,0,1]],
        "groups": [{"name":"g","cap":1,"channels":[[1,2],[2,0]]}]})");
    const SynthInstance in = inst(ring3, "allgather", "queues=none");
    PackingOptions po;
    po.chunks = {1, 2, 3};
    const std::optional<PackedSchedule> p = pack_trees(in, po);
    REQUIRE(p.has_value());
    CHECK(verify_direct(p->table).holds());
    ParetoOptions pa{constructions()};
    pa.timeout = 10;
    pa.max_chunks = 2;
    const ParetoResult res = pareto(in, pa);  // aborted before the fix
    if (res.packed) CHECK(!(res.packed->rounds_per_chunk() < res.bandwidth_bound));
}

TEST_CASE("randomized: small machines with mixed link types and groups, every bound at or below the solver's optimum") {
    std::mt19937 rng(41);
    const char* collectives[] = {"allgather", "alltoall", "broadcast:0", "gather:0"};
    int proved = 0;
    for (int trial = 0; trial < 24; ++trial) {
        const std::uint32_t P = 3 + rng() % 3;  // 3 to 5 processors
        // A ring for connectivity, plus random chords; each edge of a random type and capacity.
        std::set<std::pair<std::uint32_t, std::uint32_t>> edges;
        for (std::uint32_t u = 0; u < P; ++u) edges.insert({std::min(u, (u + 1) % P), std::max(u, (u + 1) % P)});
        for (std::uint32_t k = rng() % 3; k > 0; --k) {
            const std::uint32_t u = rng() % P, v = rng() % P;
            if (u != v) edges.insert({std::min(u, v), std::max(u, v)});
        }
        std::string es;
        std::vector<std::pair<std::uint32_t, std::uint32_t>> channels;
        for (auto [u, v] : edges) {
            es += fmt::format("{}[{},{},{},\"{}\"]", es.empty() ? "" : ",", u, v, 1 + rng() % 2, rng() % 2 ? "fast" : "slow");
            channels.push_back({u, v});
            channels.push_back({v, u});
        }
        // Up to two groups of capacity 1 over random channels (several senders and receivers).
        std::string gs;
        for (std::uint32_t g = rng() % 3; g > 0; --g) {
            std::string cs;
            for (auto [u, v] : channels)
                if (rng() % 3 == 0) cs += fmt::format("{}[{},{}]", cs.empty() ? "" : ",", u, v);
            if (!cs.empty()) gs += fmt::format("{}{{\"name\":\"g{}\",\"cap\":1,\"channels\":[{}]}}", gs.empty() ? "" : ",", g, cs);
        }
        const std::string json = fmt::format(
            R"({{"processors": {}, "routers": 0, "link_types": {{"fast": {{"bandwidth": "300 GB/s"}}, "slow": {{"bandwidth": "25 GB/s"}}}},
               "edges": [{}], "groups": [{}]}})",
            P, es, gs);
        const std::string spec = graph_file(fmt::format("random{}", trial), json);
        const char* coll = collectives[trial % 4];
        CAPTURE(json);
        CAPTURE(coll);
        const SynthInstance in = inst(spec, coll);
        OptimizeOptions o{constructions()};
        o.timeout = 10;
        const OptimizeResult r = optimize(in, o);  // settle() aborts when a bound exceeds a schedule
        if (r.status != OptStatus::proved) continue;
        ++proved;
        bounds_at_most(in, *r.optimum);
        REQUIRE(r.witness.has_value());
        CHECK(verify_direct(*r.witness).holds());
        if (in.collective.kind == CollectiveKind::allgather) {
            PackingOptions po;
            po.chunks = {1, 2};
            if (const auto p = pack_trees(in, po)) CHECK(verify_direct(p->table).holds());
        }
    }
    CHECK(proved >= 20);  // the property is exercised, not skipped
}

}  // TEST_SUITE
