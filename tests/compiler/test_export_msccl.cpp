// MSCCL-IR XML: the output is read by a reader as strict as the executor's, checked against the
// executor's limits, and replayed (thread blocks in order, dependencies, FIFO matching per
// connection); the replay must implement the collective. What MSCCL cannot express is refused.
#include <doctest/doctest.h>

#include "compiler/interop/export_msccl.hpp"
#include "dsl/diagnostics.hpp"
#include "tests/compiler/export_fixtures.hpp"
#include "tests/compiler/msccl_replay.hpp"

using namespace collsched;
using namespace collsched::test;

namespace {

/// Exports, reads, checks the limits and replays `t`; checks the outputs against the collective.
void check_msccl(const SendTable& t, const MscclOptions& opt = {}) {
    std::string xml = table_to_msccl(t, opt);
    XmlNode algo;
    REQUIRE_NOTHROW(algo = MscclLexer(xml).parse());
    CHECK(msccl_limits(algo, opt.max_steps) == "");
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

std::string refusal(const SendTable& t, const MscclOptions& opt = {}) {
    try {
        table_to_msccl(t, opt);
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
    // paired and fused (the default): one thread block per GPU, s, 6 x rcs (each forward is the
    // receive it waits for), r; no dependency between thread blocks but on the local copy
    std::vector<std::string> types;
    for (const XmlNode& tb : g1.subs)
        if (tb.attr("send") == "2") {
            CHECK(tb.attr("recv") == "0");
            for (const XmlNode& st : tb.subs) types.push_back(st.attr("type"));
        }
    CHECK(types == std::vector<std::string>{"s", "rcs", "rcs", "rcs", "rcs", "rcs", "rcs", "r"});
    // unpaired: 7 sends, the first of its own b(1) from the input, 6 waiting on their receives
    XmlNode apart = MscclLexer(table_to_msccl(ring, {.pair = false, .fuse = false})).parse();
    int deps = 0;
    for (const XmlNode& tb : apart.subs[1].subs)
        for (const XmlNode& st : tb.subs) deps += st.num("depid") >= 0 ? 1 : 0;
    CHECK(deps == 6);
    check_msccl(ring, {.pair = false, .fuse = false});
    check_msccl(flood_allgather("cbft:8"));
}

/// Binomial broadcast from `root` on hypercube:3.
SendTable hypercube_broadcast(std::uint32_t root) {
    auto topo = Topology::parse("hypercube:3");
    TableBuilder b(topo, topo->default_model(), Collective{CollectiveKind::broadcast, Node{root}, {}});
    for (std::uint32_t d = 0; d < 3; ++d)
        for (std::uint32_t p = 0; p < 8; ++p)
            if (((p ^ root) >> d) == 0)
                b.hop(d + 1, *topo->find_channel(Node{p}, Node{p ^ (1u << d)}), b.messages().broadcast(root));
    return std::move(b).finish();
}

TEST_CASE("msccl: a broadcast on a hypercube, a root other than 0 is refused") {
    SendTable t = hypercube_broadcast(0);
    check_msccl(t);
    XmlNode algo = MscclLexer(table_to_msccl(t)).parse();
    CHECK(algo.attr("coll") == "broadcast");
    CHECK(algo.num("nchunksperloop") == 1);
    CHECK(algo.subs[0].num("i_chunks") == 1);
    CHECK(algo.subs[5].num("i_chunks") == 0);
    CHECK(refusal(hypercube_broadcast(5)) ==
          "cannot write MSCCL-IR for broadcast:5 on hypercube:3: the root is processor 5, but the executor picks an algorithm by "
          "collective, rank count and size only, never by root (msccl_lifecycle.cc), so the file would also serve ncclBroadcast "
          "with root 0 and deliver wrong data [broadcast root]; relabel the processors so that the root is 0");
}

TEST_CASE("msccl: in place where the program is correct in place (allgather, broadcast), out of place always") {
    auto flags = [](const SendTable& t) {
        XmlNode algo = MscclLexer(table_to_msccl(t)).parse();
        return algo.attr("inplace") + algo.attr("outofplace");
    };
    CHECK(flags(ring_allgather(4)) == "11");
    CHECK(flags(hypercube_broadcast(0)) == "11");
    // An alltoall whose every GPU sends input chunk s before it receives into output chunk s
    // serves in-place calls too: each such receive waits for that send (docs/exports.md).
    CHECK(flags(ebft_alltoall(4)) == "11");
    // complete:513: those waits would name thread blocks past the executor's int8_t ids, so the
    // program serves out-of-place calls only.
    CHECK(flags(complete_alltoall(513)) == "01");
}

TEST_CASE("msccl: the step limit (MSCCL_MAX_NUM_STEPS, default 64) at its boundary, --max-steps and --channels") {
    // ring:n allgather: every GPU receives n-1 chunks from its left neighbour in one thread block
    check_msccl(ring_allgather(65));  // 64 steps
    CHECK(refusal(ring_allgather(66)) ==
          "cannot write MSCCL-IR for allgather on ring:66: GPU 0, thread block 1 (receiving from 65) needs 65 steps; the executor "
          "allows at most 64 per thread block (s < 64) [MSCCL_MAX_NUM_STEPS]; --channels 2 spreads every connection over 2 "
          "thread blocks; --max-steps N if the executor is built with MSCCL_MAX_NUM_STEPS=N");
    check_msccl(ring_allgather(66), {.max_steps = 65});
    CHECK(refusal(ring_allgather(67), {.max_steps = 65}).find("needs 66 steps") != std::string::npos);
    // two instances: every connection's transfers alternate between channel 0 and channel 1
    MscclOptions two{.channels = 2};
    check_msccl(ring_allgather(66), two);
    XmlNode algo = MscclLexer(table_to_msccl(ring_allgather(66), two)).parse();
    CHECK(algo.num("nchannels") == 2);
    const XmlNode& g0 = algo.subs[0];
    REQUIRE(g0.subs.size() == 5);  // copy, receive from 65 on channels 0 and 1, send to 1 on channels 0 and 1
    CHECK(g0.subs[1].attr("recv") == "65");
    CHECK(g0.subs[1].attr("chan") == "0");
    CHECK(g0.subs[2].attr("chan") == "1");
    CHECK(g0.subs[1].subs.size() == 33);
    CHECK(g0.subs[2].subs.size() == 32);
    CHECK(refusal(ring_allgather(8), {.channels = 33}) == "--channels 33 is outside 1..32 (MAXCHANNELS)");
    CHECK(refusal(ring_allgather(8), {.max_steps = 0}) ==
          "--max-steps 0 is outside 1..32768 (the executor stores step numbers in an int16_t)");
}

TEST_CASE("msccl: elements loaded per rank (MAX_NODES 4096: at most 4095) at the boundary") {
    // complete:4 allgather in one step, plus k more copies of b(0) from 0 to 1 (to scratch):
    // GPU 1 loads 1 <algo> + 4 <gpu> + 7 <tb> + (7 + k) <step> = 19 + k elements
    auto with_copies = [](std::uint32_t k) {
        auto topo = Topology::parse("complete:4");
        TableBuilder b(topo, topo->default_model(), Collective{CollectiveKind::allgather, Node{0}, {}});
        for (std::uint32_t s = 0; s < 4; ++s)
            for (std::uint32_t d = 0; d < 4; ++d)
                if (s != d) b.hop(1, *topo->find_channel(Node{s}, Node{d}), b.messages().broadcast(s));
        for (std::uint32_t i = 0; i < k; ++i) b.hop(2 + i, *topo->find_channel(Node{0}, Node{1}), b.messages().broadcast(0));
        return std::move(b).finish();
    };
    MscclOptions many{.max_steps = 8192, .pair = false};
    check_msccl(with_copies(4076), many);  // 4095 elements
    CHECK(refusal(with_copies(4077), many) ==
          "cannot write MSCCL-IR for allgather on complete:4: GPU 0 loads 4096 XML elements (1 <algo>, 4 <gpu>, 7 <tb>, 4084 "
          "<step>); the executor's reader holds at most 4095 [MAX_NODES = 4096]");
}

TEST_CASE("msccl: thread blocks per GPU (1024) and per channel (32 sending, 32 receiving) at their boundaries") {
    // complete:P alltoall, unpaired: 1 copy + (P-1) receiving + (P-1) sending thread blocks per GPU
    const MscclOptions unpaired{.pair = false};
    SendTable fits = complete_alltoall(512);  // 1023 thread blocks, 16 channels
    XmlNode algo = MscclLexer(table_to_msccl(fits, unpaired)).parse();
    CHECK(msccl_limits(algo) == "");
    CHECK(algo.subs[0].subs.size() == 1023);
    CHECK(algo.num("nchannels") == 16);
    CHECK(refusal(complete_alltoall(513), unpaired) ==
          "cannot write MSCCL-IR for alltoall on complete:513: GPU 0 needs 1025 thread blocks; the executor allows at most 1024 "
          "per GPU [MSCCL_MAX_NUM_THREAD_BLOCKS]");
    // paired (the default): the send to q and the receive from q share a thread block
    XmlNode paired = MscclLexer(table_to_msccl(complete_alltoall(513))).parse();
    CHECK(msccl_limits(paired) == "");
    CHECK(paired.subs[0].subs.size() == 513);
    for (std::size_t k = 1; k < paired.subs[0].subs.size(); ++k) {
        CHECK(paired.subs[0].subs[k].num("send") >= 0);
        CHECK(paired.subs[0].subs[k].num("recv") >= 0);
    }
    // 32 sending thread blocks fit on one channel, the 33rd goes to channel 1
    check_msccl(complete_alltoall(33));
    CHECK(MscclLexer(table_to_msccl(complete_alltoall(33))).parse().num("nchannels") == 1);
    check_msccl(complete_alltoall(34));
    CHECK(MscclLexer(table_to_msccl(complete_alltoall(34))).parse().num("nchannels") == 2);
    // 16 channels for one instance, so 2 instances need 32 and 3 would need 48
    CHECK(refusal(complete_alltoall(512), {.channels = 3}) ==
          "cannot write MSCCL-IR for alltoall on complete:512: the connections need 48 channels of at most 32 sending and 32 "
          "receiving thread blocks per GPU [MSCCL_MAX_NUM_THREAD_BLOCKS_PER_CHANNEL], and the executor has 32 [MAXCHANNELS]");
}

TEST_CASE("msccl: what the executor cannot run is refused with the reason") {
    SUBCASE("collectives without an MSCCL buffer layout") {
        auto topo = Topology::parse("ebft:4");
        TableBuilder b(topo, topo->default_model(), Collective{CollectiveKind::scatter, Node{0}, {}});
        b.send_cut_through(1, Node{0}, Node{1}, b.messages().personal(0, 1));
        CHECK(refusal(std::move(b).finish()) ==
              "cannot write MSCCL-IR for scatter:0 on ebft:4: MSCCL-IR export covers alltoall, allgather, broadcast and the "
              "reductions allreduce, reduce_scatter and reduce with partials, the collectives whose buffer layout the MSCCL executor "
              "fixes; use --format ranks for this one");
    }
    SUBCASE("more than 64 steps in one thread block, also with --max-steps 256") {
        auto topo = Topology::parse("linear:40");
        TableBuilder b(topo, topo->default_model(), Collective{CollectiveKind::alltoall, Node{0}, {}});
        for (std::uint32_t s = 0; s < 40; ++s)
            for (std::uint32_t d = 0; d < 40; ++d)
                if (s != d) b.send_cut_through(1, Node{s}, Node{d}, b.messages().personal(s, d));
        SendTable t = std::move(b).finish();
        // coalesced (the default), the contiguous chunks of a step travel in steps of cnt > 1: it fits
        check_msccl(t, {.max_steps = 256});
        std::string why = refusal(t, {.max_steps = 256, .coalesce = false});
        INFO(why);
        CHECK(why == "cannot write MSCCL-IR for alltoall on linear:40: GPU 8, thread block 2 (receiving from 9) needs 279 steps; the "
                     "executor allows at most 256 per thread block (s < 256) [MSCCL_MAX_NUM_STEPS]; --channels 2 spreads every "
                     "connection over 2 thread blocks; --max-steps N if the executor is built with MSCCL_MAX_NUM_STEPS=N");
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
