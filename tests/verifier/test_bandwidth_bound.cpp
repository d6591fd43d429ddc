// The cut bound by max flow (issue 27): the same bound as the enumeration of every processor set
// on every machine of at most 16 processors (no routers), the known values with their cuts
// (ring, DGX-1, multibox 2x8, routers, groups, ports), the certificate's own arithmetic, the
// orbits found from checked symmetries, and the tree packing that meets the bound, verified.
#include <doctest/doctest.h>

#include <filesystem>

#include <fmt/format.h>

#include "verifier/synth/bounds/bandwidth.hpp"
#include "verifier/synth/bounds/rounds_per_chunk.hpp"
#include "verifier/synth/bounds/capacity_network.hpp"
#include "verifier/check/direct.hpp"
#include "verifier/synth/symmetry/processor_orbits.hpp"
#include "verifier/constructions/steps/translate_packing.hpp"
#include "verifier/constructions/steps/tree_packing.hpp"
#include "tests/verifier/synth_fixtures.hpp"

using namespace collsched;
using collsched::test::inst;
using collsched::test::machine;

namespace {

Ratio flow(const SynthInstance& in) {
    auto b = flow_bandwidth_bound(in);
    REQUIRE(b);
    return b->rounds_per_chunk;
}

}  // namespace

namespace {

/// Every machine file of at most 16 processors without routers, and some built-in families.
std::vector<std::string> small_machines() {
    std::vector<std::string> specs = {"ring:5", "ring:8", "linear:6", "complete:6", "torus:3x4", "mesh:2x3", "hypercube:3", "hypercube:4"};
    for (const auto& e : std::filesystem::directory_iterator(std::string(COLLSCHED_SOURCE_DIR) + "/schedules/machines")) {
        if (e.path().extension() != ".json") continue;  // commands.txt: how the machines are made
        auto topo = Topology::parse("graph:" + e.path().string());
        if (topo->processors() <= 16 && topo->routers() == 0) specs.push_back("graph:" + e.path().string());
    }
    return specs;
}

}  // namespace

// The enumeration takes about a second per 16-processor instance, so the default suite checks
// allgather on every machine and the other collectives and single ports on those of at most 8;
// test_synth_slow.cpp checks every combination on every machine.
TEST_CASE("flow bound equals the enumeration of every processor set on every machine of at most 16 processors") {
    const auto specs = small_machines();
    CHECK(specs.size() >= 16);
    for (const auto& spec : specs) {
        const auto topo = Topology::parse(spec);
        std::vector<std::string> colls = {"allgather"};
        if (topo->processors() <= 8)
            for (const char* c : {"broadcast:0", "scatter:0", "gather:0"}) colls.push_back(c);
        for (const char* model : {"", "ports=single"}) {
            if (*model && topo->processors() > 8) continue;
            for (const auto& c : colls) {
                CAPTURE(spec);
                CAPTURE(c);
                CAPTURE(model);
                const SynthInstance in = inst(spec, c.c_str(), model);
                auto e = enumerated_cut_bound(in);
                REQUIRE(e);
                CHECK(flow(in) == e->rounds_per_chunk);
            }
        }
    }
}

TEST_CASE("flow bound values and cuts: ring, DGX-1, multibox 2x8, DGX-2, routers, single ports") {
    CHECK(flow(inst("ring:8", "allgather")) == Ratio::of(7, 2));
    CHECK(flow(inst("ring:8", "broadcast:3")) == Ratio::of(1, 2));
    CHECK(flow(inst("ring:8", "scatter:0")) == Ratio::of(7, 2));
    CHECK(flow(inst(machine("dgx1"), "allgather")) == Ratio::of(7, 6));
    CHECK(flow(inst(machine("dgx2"), "allgather")) == Ratio::of(15, 1));
    CHECK(flow(inst("complete:4", "allgather", "ports=single")) == Ratio::of(3, 1));
    // Reduce-scatter and reduce: the reversed network (the same value on symmetric links).
    CHECK(flow(inst(machine("dgx1"), "reduce_scatter")) == Ratio::of(7, 6));

    auto mb = flow_bandwidth_bound(inst(machine("multibox2x8"), "allgather"));
    REQUIRE(mb);
    CHECK(mb->rounds_per_chunk == Ratio::of(15, 2));
    REQUIRE(mb->certificate);
    const CutCertificate& c = *mb->certificate;
    CHECK(c.demand == 15);
    CHECK(c.capacity == 2);
    CHECK(c.exact);
    CHECK(c.inside.size() == 15);
    CHECK(c.crossing.size() == 2);  // the GPU's NVSwitch in-group and its NIC in-group
    CHECK(c.sinks == 1);            // every GPU in one orbit
    // Single ports on a crossbar: each GPU receives one per round.
    CHECK(flow(inst("complete:8", "allgather", "ports=single")) == Ratio::of(7, 1));
}

// A star of 4 through a router (capacity 1): the router and three leaves hold 3 data and one link
// leaves them, a set the enumeration of processor sets cannot name. Both router models: the bound
// counts crossings only.
TEST_CASE("flow bound with routers: a switch vertex's cut, under replicate=no and yes") {
    const std::string path = (std::filesystem::temp_directory_path() / "collsched_star4.json").string();
    {
        std::FILE* f = std::fopen(path.c_str(), "w");
        REQUIRE(f);
        std::fputs(R"({"processors": 4, "routers": 1, "edges": [[0, "r1.0"], [1, "r1.0"], [2, "r1.0"], [3, "r1.0"]]})", f);
        std::fclose(f);
    }
    for (const char* model : {"replicate=no", "replicate=yes"}) {
        auto b = flow_bandwidth_bound(inst("graph:" + path, "allgather", model));
        REQUIRE(b);
        CHECK(b->rounds_per_chunk == Ratio::of(3, 1));  // the router and three leaves hold 3 data; one link leaves
        CHECK(b->certificate->routers.size() == 1);
        auto e = enumerated_cut_bound(inst("graph:" + path, "allgather", model));
        REQUIRE(e);
        CHECK(e->rounds_per_chunk <= b->rounds_per_chunk);
    }
    std::filesystem::remove(path);
}

TEST_CASE("the certificate is a cut of the capacity network with the stated ratio") {
    for (const char* m : {"dgx1", "dgx1x2", "multibox4x8", "amd8"}) {
        CAPTURE(m);
        const SynthInstance in = inst(machine(m), "allgather");
        auto b = flow_bandwidth_bound(in);
        REQUIRE(b);
        const CutCertificate& c = *b->certificate;
        // Recount: the data inside S that must leave (allgather: every processor inside, some outside).
        CHECK(c.demand == c.inside.size());
        CHECK(c.inside.size() < in.topology->processors());
        CHECK(Ratio::of(c.demand, c.capacity) == b->rounds_per_chunk);
        CHECK(!c.crossing.empty());
    }
}

TEST_CASE("orbits come only from checked automorphisms") {
    CHECK(processor_orbits(*Topology::parse("ring:8")).representatives.size() == 1);
    CHECK(processor_orbits(*Topology::parse(machine("multibox2x8"))).representatives.size() == 1);
    CHECK(processor_orbits(*Topology::parse("linear:5")).representatives.size() == 5);  // no shift or rotation is one
    // A rotation that is no automorphism is refused.
    const auto lin = Topology::parse("linear:4");
    std::vector<std::uint32_t> rot = {1, 2, 3, 0};
    CHECK(!is_automorphism(*lin, rot));
    std::vector<std::uint32_t> flip = {3, 2, 1, 0};
    CHECK(is_automorphism(*lin, flip));
}

TEST_CASE("capacity network: groups become vertices, a group of several senders and receivers is a named relaxation") {
    const auto mb = Topology::parse(machine("multibox2x8"));
    CapacityNetwork n = capacity_network(*mb, mb->default_model());
    CHECK(n.exact());
    CHECK(n.vertices == 16 + 4 * 16);
    const auto dgx1 = Topology::parse(machine("dgx1"));
    CHECK(capacity_network(*dgx1, apply_model_options(dgx1->default_model(), "ports=half")).relaxations.size() == 1);
}

TEST_CASE("tree packing meets the bound on DGX-1, multibox 2x8, DGX-2 and NVSwitch, verified") {
    struct Case {
        const char* machine;
        Ratio bound;
    };
    for (const Case& k : {Case{"dgx1", Ratio::of(7, 6)}, Case{"multibox2x8", Ratio::of(15, 2)}, Case{"dgx2", Ratio::of(15, 1)},
                          Case{"nvswitch8", Ratio::of(7, 1)}, Case{"dgx1x2", Ratio::of(5, 2)}}) {
        CAPTURE(k.machine);
        const SynthInstance in = inst(machine(k.machine), "allgather");
        REQUIRE(flow(in) == k.bound);
        PackingOptions po;
        po.target = k.bound;
        po.chunks = chunks_for(k.bound, 256);
        auto p = pack_trees(in, po);
        REQUIRE(p);
        CHECK(p->rounds_per_chunk() == k.bound);
        const VerifyReport r = verify_direct(p->table);
        CHECK(r.holds());
        CHECK(p->table.collective.chunks == p->chunks);
        CHECK(p->steps == p->table.steps());
    }
    // Broadcast on a ring: at or above the bound 1/2, always verified.
    const SynthInstance bc = inst("ring:6", "broadcast:0");
    PackingOptions po;
    po.target = flow(bc);
    po.chunks = chunks_for(*po.target, 64);
    auto p = pack_trees(bc, po);
    REQUIRE(p);
    CHECK(verify_direct(p->table).holds());
    CHECK(*po.target <= p->rounds_per_chunk());
    // Not taken: routers, alltoall.
    CHECK(!packing_problem(inst("ebft:8", "allgather")).empty());
    CHECK(!packing_problem(inst("ring:4", "alltoall")).empty());
}

TEST_CASE("the drain rule: R >= b C + 1 - 1/m when the bound's cut leaves m >= 2 processors outside") {
    CHECK(least_rounds(Ratio::of(15, 2), 2, 1) == 15);
    CHECK(least_rounds(Ratio::of(15, 2), 3, 1) == 23);  // ceil(22.5)
    CHECK(least_rounds(Ratio::of(1, 1), 4, 8) == 5);    // 4 + 7/8
    CHECK(least_rounds(Ratio::of(1, 1), 4, 2) == 5);    // 4 + 1/2
    CHECK(least_rounds(Ratio::of(7, 2), 2, 2) == 8);    // 7 + 1/2
    CHECK(least_rounds(Ratio::of(7, 3), 1, 2) == 3);    // 7/3 + 1/2 = 2.83
    // h100rail2x8: the box is the cut (8 data leave through 8 NICs), 8 processors outside it.
    const SynthInstance in = inst(machine("h100rail2x8"), "allgather");
    auto b = flow_bandwidth_bound(in);
    REQUIRE(b);
    CHECK(b->rounds_per_chunk == Ratio::of(1, 1));
    CHECK(cut_outside(*b, 16) == 8);
    CHECK(chunks_for(b->rounds_per_chunk, 256, 8, 16) == std::vector<std::uint32_t>{1, 2, 3, 4, 8, 16, 32, 64, 128, 256});
    // A single-GPU cut has one processor outside: no drain.
    auto r = flow_bandwidth_bound(inst(machine("rail2x8"), "allgather"));
    REQUIRE(r);
    CHECK(cut_outside(*r, 16) == 1);
}

TEST_CASE("translation groups are found and checked: boxes of 8, rings, none with routers") {
    CHECK(translation_box(*Topology::parse(machine("rail2x8"))) == 8u);
    CHECK(translation_box(*Topology::parse(machine("multibox4x8"))) == 8u);
    CHECK(translation_box(*Topology::parse(machine("h100rail2x8"))) == 8u);
    CHECK(translation_box(*Topology::parse("ring:6")) == 6u);
    CHECK(translation_box(*Topology::parse("torus:3x4")) == 4u);
    CHECK(!translation_box(*Topology::parse("ebft:8")));
}

TEST_CASE("translates of one tree set meet the bound on rail and multibox machines, verified, and h100rail one drain above") {
    // R = (N-1) rounds with C = 2 (R/C the bound), merged into S steps of several rounds (S >= the depth).
    struct Case {
        const char* machine;
        Ratio bound;
        std::uint32_t chunks;
        Step rounds, steps;
    };
    for (const Case& k : {Case{"rail2x8", Ratio::of(15, 2), 2, 15, 9}, Case{"rail4x8", Ratio::of(31, 2), 2, 31, 9},
                          Case{"multibox4x8", Ratio::of(31, 2), 2, 31, 12}, Case{"rail8x8", Ratio::of(63, 2), 2, 63, 13},
                          Case{"multibox8x8", Ratio::of(63, 2), 2, 63, 12}, Case{"rail16x8", Ratio::of(127, 2), 2, 127, 23},
                          Case{"multibox16x8", Ratio::of(127, 2), 2, 127, 21}}) {
        CAPTURE(k.machine);
        const SynthInstance in = inst(machine(k.machine), "allgather");
        auto b = flow_bandwidth_bound(in);
        REQUIRE(b);
        REQUIRE(b->rounds_per_chunk == k.bound);
        PackingOptions po;
        po.target = k.bound;
        po.outside = cut_outside(*b, in.topology->processors());
        po.chunks = chunks_for(k.bound, 256, po.outside, in.topology->processors());
        auto p = pack_trees(in, po);
        REQUIRE(p);
        CHECK(p->rounds_per_chunk() == k.bound);
        CHECK(p->chunks == k.chunks);
        CHECK(p->rounds == k.rounds);
        CHECK(p->least_rounds == k.rounds);
        CHECK(p->steps == k.steps);
        CHECK(p->steps == p->table.steps());
        CHECK(p->table.total_rounds() == k.rounds);
        CHECK(p->depth <= p->steps);
        CHECK(p->method.rfind("translates", 0) == 0);
        CHECK(verify_direct(p->table).holds());
        // Unmerged: one round per step.
        po.merge = false;
        auto one = pack_trees(in, po);
        REQUIRE(one);
        CHECK(one->steps == k.rounds);
        CHECK(one->rounds == k.rounds);
        CHECK(one->table.step_rounds.empty());
    }
    // h100rail2x8: R >= C + 1 for every C (the drain rule); the translates reach it at C = 256.
    const SynthInstance in = inst(machine("h100rail2x8"), "allgather");
    PackingOptions po;
    po.target = Ratio::of(1, 1);
    po.outside = 8;
    po.chunks = chunks_for(*po.target, 256, 8, 16);
    auto p = pack_trees(in, po);
    REQUIRE(p);
    CHECK(p->chunks == 256);
    CHECK(p->rounds == 257);
    CHECK(p->steps == 162);
    CHECK(p->least_rounds == 257);
    CHECK(p->rounds_per_chunk() == Ratio::of(257, 256));
    CHECK(verify_direct(p->table).holds());
}
