// What NCCL runs, generated for the machine (verifier/constructions/nccl/nccl.hpp, docs/time.md "NCCL's
// algorithms and NCCL's model"): the tables hold in the direct checker on the shipped machines
// (rails, routers, the cube-mesh), the three witnesses agree on a small machine, and NCCL's model
// gives the numbers tuning.cc gives, computed here by hand from its constants.
#include <doctest/doctest.h>

#include "tests/approx.hpp"

#include <cmath>
#include <fstream>

#include <fmt/format.h>

#include "runtime/simulator.hpp"
#include "tests/tools/cli_run.hpp"
#include "verifier/constructions/nccl/nccl.hpp"
#include "verifier/check/direct.hpp"
#include "verifier/check/z3_engine.hpp"

using namespace collsched;
using collsched::test::source;

namespace {

std::shared_ptr<const Topology> machine_topology(const std::string& name) { return Topology::parse("graph:" + source("schedules/machines/" + name + ".json")); }

std::vector<nccl::Baseline> baselines(const std::shared_ptr<const Topology>& t, const char* coll, double size = 0) {
    return nccl::nccl_baselines(t, Collective::parse(coll, *t), t->default_model(), size);
}

/// Two boxes of two GPUs on a switch each (link groups), GPU i of each box on rail i.
std::shared_ptr<const Topology> tiny_rail() {
    const std::string path = "/tmp/collsched_test_nccl_rail2x2.json";
    std::ofstream(path) << R"({"processors": 4, "routers": 0,
 "link_types": {"nvlink": {"alpha": "0.6 us", "bandwidth": "300 GB/s"}, "ib": {"alpha": "2.7 us", "bandwidth": "25 GB/s"}},
 "edges": [[0, 1, 1, "nvlink"], [2, 3, 1, "nvlink"], [0, 2, 1, "ib"], [1, 3, 1, "ib"]]})";
    return Topology::parse("graph:" + path);
}

}  // namespace

TEST_CASE("nccl baselines: every table holds in the direct checker on the shipped machines") {
    struct Row {
        const char* machine;
        const char* collective;
        std::vector<std::string> names;
    };
    for (const Row& row : {Row{"multibox4x8", "allreduce", {"ring", "tree"}}, Row{"rail4x8", "allreduce", {"ring", "tree"}},
                           Row{"h100rail4x8", "allreduce", {"ring", "tree"}}, Row{"h100rail4x8", "allgather", {"ring"}},
                           Row{"h100rail4x8", "reduce_scatter", {"ring"}}, Row{"dgx1", "allreduce", {"ring", "tree"}},
                           Row{"ndv2x4", "allreduce", {"ring", "tree"}}, Row{"ndv2x4", "allgather", {"ring"}},
                           Row{"boxfattree8x8", "allreduce", {"ring", "tree"}}, Row{"h100rail2x8", "alltoall", {"p2p"}},
                           Row{"rail2x8", "alltoall", {"p2p"}}}) {
        CAPTURE(row.machine);
        CAPTURE(row.collective);
        const auto t = machine_topology(row.machine);
        const std::vector<nccl::Baseline> bs = baselines(t, row.collective);
        REQUIRE(bs.size() == row.names.size());
        for (std::size_t i = 0; i < bs.size(); ++i) {
            CAPTURE(bs[i].name);
            CHECK(bs[i].name == row.names[i]);
            const VerifyReport r = verify_direct(bs[i].table);
            CHECK(r.verdict() == "holds");
        }
    }
}

TEST_CASE("nccl baselines: the rings keep to the rails and use one channel per NIC") {
    const auto t = machine_topology("h100rail4x8");
    const nccl::Baseline ring = nccl::nccl_baseline(t, Collective::parse("allreduce", *t), t->default_model(), "ring");
    CHECK(ring.channels == 8);  // 8 NICs of 50 GB/s, 48 GB/s a channel (search.cc sm90SpeedArrayInter)
    // every transfer between boxes is on a rail: GPU i of a box to GPU i of another
    std::size_t between = 0;
    for (const Transfer& x : ring.table.transfers) {
        const Channel& ch = t->channel(x.channel);
        if (idx(ch.from) / 8 != idx(ch.to) / 8) {
            ++between;
            CHECK(idx(ch.from) % 8 == idx(ch.to) % 8);
        }
    }
    CHECK(between == 2 * 31 * 4 * 8);  // 2(P-1) steps, 4 box crossings a ring, 8 rings
}

TEST_CASE("nccl baselines: the direct checker, the Z3 engine and the simulator agree on a small machine") {
    const auto t = tiny_rail();
    int built = 0;
    for (const char* coll : {"allreduce", "allgather", "reduce_scatter", "alltoall"}) {
        CAPTURE(coll);
        for (const nccl::Baseline& b : baselines(t, coll)) {
            CAPTURE(b.name);
            ++built;
            CHECK(verify_direct(b.table).holds());
            CHECK(verify_z3(b.table).holds());
            CHECK(simulate(b.table).status == SimStatus::completed);
        }
    }
    CHECK(built == 5);
    // one GPU per box: PAT for allgather and reduce-scatter (tuning.cc:216-223)
    const std::string path = "/tmp/collsched_test_nccl_pat4.json";
    std::ofstream(path) << R"({"processors": 4, "routers": 1, "edges": [[0, "r1.0", 1], [1, "r1.0", 1], [2, "r1.0", 1], [3, "r1.0", 1]]})";
    const auto star = Topology::parse("graph:" + path);
    for (const char* coll : {"allgather", "reduce_scatter"}) {
        CAPTURE(coll);
        const std::vector<nccl::Baseline> bs = baselines(star, coll);
        REQUIRE(bs.size() == 2);
        CHECK(bs[1].name == "pat");
        for (const nccl::Baseline& b : bs) {
            CHECK(verify_direct(b.table).holds());
            CHECK(verify_z3(b.table).holds());
            CHECK(simulate(b.table).status == SimStatus::completed);
        }
    }
}

TEST_CASE("nccl model: one DGX H100 box, ring busBw 360 GB/s, from tuning.cc's constants by hand") {
    nccl::System s;
    s.arch = nccl::Arch::hopper;
    s.nodes = 1;
    s.gpus_per_node = 8;
    s.nvlink_bw = 18 * 20.6;  // topo.h:22 SM90_NVLINK_BW, 18 links
    s.pci_bw = 48;
    s.nvswitch = true;
    const nccl::Graph g = nccl::nccl_ring_graph(s);
    CHECK(g.channels == 12);  // 6 rings of 60 (sm90SpeedArrayIntra), duplicated: 12 of 30
    CHECK(g.bw_intra == collsched::test::rel(30.0));
    const double M = 1 << 30;
    // Simple: busBw 360, algBw 360 * 8 / 14; latency 8.4 + 14 * 3.4 (base and NVLink ring Simple)
    const double expect = (8.4 + 14 * 3.4 + M / (1000 * 360.0 * 8 / 14)) * 1e-6;
    CHECK(*nccl::nccl_model_time(s, CollectiveKind::allreduce, nccl::Algorithm::ring, nccl::Protocol::simple, M) == collsched::test::rel(expect));
    // LL: min(llMaxBw 141 (Hopper, one node), 360 * 0.5); latency 6.6 + 14 * 0.6
    const double ll = (6.6 + 14 * 0.6 + 4096 / (1000 * 141.0 * 8 / 14)) * 1e-6;
    CHECK(*nccl::nccl_model_time(s, CollectiveKind::allreduce, nccl::Algorithm::ring, nccl::Protocol::ll, 4096) == collsched::test::rel(ll));
    CHECK(nccl::nccl_best_protocol(s, CollectiveKind::allreduce, nccl::Algorithm::ring, 4096)->protocol == nccl::Protocol::ll);
    CHECK(nccl::nccl_best_protocol(s, CollectiveKind::allreduce, nccl::Algorithm::ring, M)->protocol == nccl::Protocol::simple);
    CHECK_FALSE(nccl::nccl_model_time(s, CollectiveKind::allgather, nccl::Algorithm::pat, nccl::Protocol::simple, M));  // 8 GPUs a box
}

TEST_CASE("nccl model: NVLS on one DGX H100 (busBw 476 GB/s) and NVLS_TREE on 2 and 4 boxes, from tuning.cc by hand") {
    const nccl::System one = nccl::nccl_system(*machine_topology("dgx_h100_nvls"));
    CHECK(one.nvls_efficiency == collsched::test::rel(0.85));
    const nccl::Graph g = nccl::nccl_nvls_graph(one);
    CHECK(g.channels == 8);                          // one head per GPU
    CHECK(g.bw_intra == collsched::test::rel(40.0));      // 9 x 40 <= 18 x 20.6 = 370.8 < 9 x 50
    CHECK(g.bw_inter == collsched::test::rel(60.0));      // pass 2: 50, then 60 (below 2 x 40)
    const double M = 1 << 30;
    // busBw 8 x min(40 x 0.85 x 7/8 x 2, 60) = 476, algBw 476 x 8 / 14; latency 25 us
    auto nv = nccl::nccl_nvls_model(one, CollectiveKind::allreduce, M);
    REQUIRE(nv.has_value());
    CHECK(nv->algorithm == "NVLS");
    CHECK(nv->seconds == collsched::test::rel((25 + M / (1000 * 476.0 * 8 / 14)) * 1e-6));
    // NVLS_TREE: the per-channel cap binds, 57.7 on 2 boxes and 45.5 on 4; + 2 log2(N) x 20.9 us
    const nccl::System two = nccl::nccl_system(*machine_topology("h100nvls2x8")), four = nccl::nccl_system(*machine_topology("h100nvls4x8"));
    CHECK(nccl::nccl_nvls_graph(two).bw_inter == collsched::test::rel(48.0));  // the NIC (50 GB/s) holds 48, not 60
    auto t2 = nccl::nccl_nvls_model(two, CollectiveKind::allreduce, M), t4 = nccl::nccl_nvls_model(four, CollectiveKind::allreduce, M);
    REQUIRE(t2.has_value());
    REQUIRE(t4.has_value());
    CHECK(t2->algorithm == "NVLS_TREE");
    CHECK(t2->seconds == collsched::test::rel((25 + 2 * 20.9 + M / (1000 * 8 * 57.7 * 16 / 30)) * 1e-6));
    CHECK(t4->seconds == collsched::test::rel((25 + 4 * 20.9 + M / (1000 * 8 * 45.5 * 32 / 62)) * 1e-6));
    // no switch that reduces: no NVLS; NVLS is an allreduce here
    CHECK_FALSE(nccl::nccl_nvls_model(nccl::nccl_system(*machine_topology("h100rail2x8")), CollectiveKind::allreduce, M));
    CHECK_FALSE(nccl::nccl_nvls_model(one, CollectiveKind::allgather, M));
}

TEST_CASE("nccl model: several H100 boxes on 8 NICs of 400 Gb/s, ring 8 x 48 = 384 GB/s") {
    const auto t = machine_topology("h100rail4x8");
    const nccl::System s = nccl::nccl_system(*t);
    CHECK(s.arch == nccl::Arch::hopper);
    CHECK(s.nodes == 4);
    CHECK(s.gpus_per_node == 8);
    CHECK(s.nics_per_node == 8);
    CHECK(s.nic_per_gpu);
    CHECK(s.nic_bw == collsched::test::rel(50.0));
    const nccl::Graph g = nccl::nccl_ring_graph(s);
    CHECK(g.channels == 8);
    CHECK(g.channels * g.bw_inter == collsched::test::rel(384.0));
    const double M = 1 << 30;
    // Simple ring allreduce on 32 ranks: algBw 384 * 32 / 62; latency 8.4 + 56 * max(3.4, 3 * 1.0)
    // + 6 * 14 (2(nNodes - 1) network steps), x 1.4 (the plateau, tuning.cc:647-650)
    const double lat = (8.4 + 56 * 3.4 + 6 * 14.0) * 1.4;
    const double expect = (lat + M / (1000 * 384.0 * 32 / 62)) * 1e-6;
    CHECK(*nccl::nccl_model_time(s, CollectiveKind::allreduce, nccl::Algorithm::ring, nccl::Protocol::simple, M) == collsched::test::rel(expect));
    // tree Simple: busBw min(384 * .92, 8 * 36.0) = 288 (perChMaxTreeBws Hopper, 3+ nodes), algBw / 2;
    // latency 8.4 + 2 (7 * 4.0 + log2(4) * 14)
    const double tree = (8.4 + 2 * (7 * 4.0 + 2 * 14.0) + M / (1000 * 288.0 * .5)) * 1e-6;
    CHECK(*nccl::nccl_model_time(s, CollectiveKind::allreduce, nccl::Algorithm::tree, nccl::Protocol::simple, M) == collsched::test::rel(tree));
}

TEST_CASE("nccl baselines: refused where they cannot be built") {
    const auto t = machine_topology("h100rail2x8");
    CHECK_THROWS_WITH_AS(nccl::nccl_baseline(t, Collective::parse("allgather", *t), t->default_model(), "tree"),
                         doctest::Contains("these are: nccl:ring"), InputError);
    CHECK(baselines(t, "gather:0").empty());  // broadcast and reduce run NCCL's ring (tests/time/test_nccl_rooted.cpp)
    Model wormhole = t->default_model();
    wormhole.timing = Timing::wormhole;
    CHECK_THROWS_AS(nccl::nccl_baselines(t, Collective::parse("allreduce", *t), wormhole), InputError);
}
