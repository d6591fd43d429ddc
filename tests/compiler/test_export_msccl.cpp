// MSCCL-IR XML: the output is read by a reader as strict as the executor's, checked against the
// executor's limits, and replayed (thread blocks in order, dependencies, FIFO matching per
// connection); the replay must implement the collective. What MSCCL cannot express is refused.
#include <doctest/doctest.h>

#include "compiler/export_msccl.hpp"
#include "dsl/diagnostics.hpp"
#include "tests/compiler/export_fixtures.hpp"
#include "tests/compiler/msccl_replay.hpp"

using namespace collsched;
using namespace collsched::test;

namespace {

/// Exports, reads, checks the limits and replays `t`; checks the outputs against the collective.
void check_msccl(const SendTable& t) {
    std::string xml = table_to_msccl(t);
    XmlNode algo;
    REQUIRE_NOTHROW(algo = MscclLexer(xml).parse());
    CHECK(msccl_limits(algo) == "");
    const int P = static_cast<int>(t.topology->processors());
    CHECK(algo.num("ngpus") == P);
    const CollectiveKind kind = t.collective.kind;
    const int root = static_cast<int>(idx(t.collective.root));
    std::vector<std::vector<long>> out;
    REQUIRE_NOTHROW(out = msccl_replay(algo, [&](int g, int k) -> long {
        if (kind == CollectiveKind::alltoall) return long(g) * P + k;  // chunk k of g is m(g,k)
        if (kind == CollectiveKind::allgather) return g;
        return 1000 + g;  // broadcast: only the root has input
    }));
    for (int g = 0; g < P; ++g) {
        INFO("gpu " << g);
        if (kind == CollectiveKind::alltoall) {
            REQUIRE(out[g].size() == std::size_t(P));
            for (int s = 0; s < P; ++s) CHECK(out[g][s] == long(s) * P + g);
        } else if (kind == CollectiveKind::allgather) {
            REQUIRE(out[g].size() == std::size_t(P));
            for (int s = 0; s < P; ++s) CHECK(out[g][s] == s);
        } else {
            REQUIRE(out[g].size() == 1);
            CHECK(out[g][0] == 1000 + root);
        }
    }
}

std::string refusal(const SendTable& t) {
    try {
        table_to_msccl(t);
    } catch (const InputError& e) {
        return e.what();
    }
    return "";
}

}  // namespace

TEST_CASE("msccl: the EBFT total exchange for n = 4, 8, 16, 32 replays to an alltoall within the executor's limits") {
    for (std::uint32_t n : {4u, 8u, 16u, 32u}) {
        INFO("n = " << n);
        check_msccl(ebft_alltoall(n));
    }
    check_golden("tests/golden/export/ebft4_alltoall.msccl.xml", table_to_msccl(ebft_alltoall(4)));
}

TEST_CASE("msccl: ring and flooding multinode broadcasts replay to an allgather, and relayed data waits on its receive") {
    SendTable ring = ring_allgather(8);
    check_msccl(ring);
    XmlNode algo = MscclLexer(table_to_msccl(ring)).parse();
    CHECK(algo.attr("coll") == "allgather");
    CHECK(algo.num("nchunksperloop") == 8);
    // GPU 1 receives b(0) from 0 in step 1 into output chunk 0 and forwards it to 2 in step 2
    const XmlNode& g1 = algo.subs[1];
    CHECK(g1.num("i_chunks") == 1);
    CHECK(g1.num("o_chunks") == 8);
    int deps = 0;
    for (const XmlNode& tb : g1.subs)
        for (const XmlNode& st : tb.subs) deps += st.num("depid") >= 0 ? 1 : 0;
    CHECK(deps == 6);  // 7 sends, the first of its own b(1) from the input
    check_msccl(flood_allgather("cbft:8"));
}

TEST_CASE("msccl: a broadcast on a hypercube") {
    auto topo = Topology::parse("hypercube:3");
    TableBuilder b(topo, topo->default_model(), Collective{CollectiveKind::broadcast, Node{5}, {}});
    for (std::uint32_t d = 0; d < 3; ++d)
        for (std::uint32_t p = 0; p < 8; ++p)
            if (((p ^ 5) >> d) == 0) b.hop(d + 1, *topo->find_channel(Node{p}, Node{p ^ (1u << d)}), b.messages().broadcast(5));
    SendTable t = std::move(b).finish();
    check_msccl(t);
    XmlNode algo = MscclLexer(table_to_msccl(t)).parse();
    CHECK(algo.attr("coll") == "broadcast");
    CHECK(algo.num("nchunksperloop") == 1);
    CHECK(algo.subs[5].num("i_chunks") == 1);
    CHECK(algo.subs[0].num("i_chunks") == 0);
}

TEST_CASE("msccl: what the executor cannot run is refused with the reason") {
    SUBCASE("collectives without an MSCCL buffer layout") {
        auto topo = Topology::parse("ebft:4");
        TableBuilder b(topo, topo->default_model(), Collective{CollectiveKind::scatter, Node{0}, {}});
        b.send_cut_through(1, Node{0}, Node{1}, b.messages().personal(0, 1));
        CHECK(refusal(std::move(b).finish()) ==
              "cannot write MSCCL-IR for scatter:0 on ebft:4: MSCCL-IR export covers alltoall, allgather and broadcast, the "
              "collectives whose buffer layout the MSCCL executor fixes; use --format ranks for this one");
    }
    SUBCASE("more than 256 steps in one thread block") {
        auto topo = Topology::parse("linear:40");
        TableBuilder b(topo, topo->default_model(), Collective{CollectiveKind::alltoall, Node{0}, {}});
        for (std::uint32_t s = 0; s < 40; ++s)
            for (std::uint32_t d = 0; d < 40; ++d)
                if (s != d) b.send_cut_through(1, Node{s}, Node{d}, b.messages().personal(s, d));
        std::string why = refusal(std::move(b).finish());
        INFO(why);
        CHECK(why == "cannot write MSCCL-IR for alltoall on linear:40: GPU 8, thread block 2 (receiving from 9) needs 279 steps; the "
                     "executor allows at most 256 per thread block (s < 256)");
    }
    SUBCASE("a copy that comes back to its sender") {
        SendTable t = ebft_alltoall(4);
        const Topology& topo = *t.topology;
        Node r = *topo.find_node("r1.0");
        t.transfers.push_back({7, *topo.find_channel(Node{0}, r), t.messages().personal(0, 1)});
        t.transfers.push_back({8, *topo.find_channel(r, Node{0}), t.messages().personal(0, 1)});
        t.sort();
        CHECK(refusal(t).find("processor 0 sends m(0,1) in step 7 and it comes back to itself through routers; in MSCCL a peer is "
                              "never the GPU itself") != std::string::npos);
    }
    SUBCASE("data sent before it is held") {
        SendTable t = ring_allgather(4);
        t.transfers.push_back({1, *t.topology->find_channel(Node{0}, Node{1}), t.messages().broadcast(2)});
        t.sort();
        CHECK(refusal(t) == "cannot write MSCCL-IR for allgather on ring:4: GPU 0 sends b(2) in step 1 but receives it only in step 2 "
                            "(the table breaks causality)");
    }
    SUBCASE("extra requirements") {
        SendTable t = ebft_alltoall(4);
        t.requirements.push_back({t.messages().broadcast(0), Node{1}});
        CHECK(refusal(t).find("extra requirements") != std::string::npos);
    }
}
