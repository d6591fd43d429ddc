// The endpoint view and the per-rank JSON: what each rank sends and receives per step, how copies
// through routers appear, the import rule (cut-through along the route, or listed hops) and the
// records it refuses.
#include <doctest/doctest.h>

#include <unistd.h>

#include <cstdio>
#include <map>

#include <nlohmann/json.hpp>

#include "compiler/io/export_ranks.hpp"
#include "compiler/io/ranks_import.hpp"
#include "compiler/io/table_io.hpp"
#include "dsl/diagnostics.hpp"
#include "tests/compiler/export_fixtures.hpp"

using namespace collsched;
using collsched::test::check_golden;
using collsched::test::ebft_alltoall;
using collsched::test::flood_allgather;
using collsched::test::ring_allgather;

namespace {

void check_same_table(const SendTable& a, const SendTable& b) {
    CHECK(a.topology->spec() == b.topology->spec());
    CHECK(a.model == b.model);
    CHECK(a.collective == b.collective);
    CHECK(a.requirements == b.requirements);
    CHECK(a.transfers == b.transfers);
}

std::string error_of(const std::string& text) {
    try {
        parse_ranks_json(text, "r.json");
    } catch (const InputError& e) {
        return e.what();
    }
    return "";
}

/// A small per-rank file as another tool would write it: ebft:4, 0 sends m(0,2) to 2 in step 1.
std::string tiny(const std::string& send, const std::string& recv) {
    return R"J({"format": "collsched.ranks/1", "topology": "ebft:4", "collective": "custom", "ranks": [
      {"rank": 0, "steps": [{"step": 1, "send": [)J" + send + R"J(]}]},
      {"rank": 2, "steps": [{"step": 4, "recv": [)J" + recv + R"J(]}]}]})J";
}

}  // namespace

TEST_CASE("ranks: the EBFT total exchange n=16 is n(n-1) endpoint transfers, each arriving 2h-1 steps after it leaves") {
    SendTable t = ebft_alltoall(16);
    EndpointView v = endpoint_view(t);
    CHECK(v.transfers.size() == 16u * 15u);
    CHECK(v.cut_through);
    CHECK(v.stranded == 0);
    CHECK(v.fanout == 0);
    std::map<std::pair<std::uint32_t, std::uint32_t>, int> pairs;
    Messages ms = t.messages();
    for (const EndpointTransfer& e : v.transfers) {
        ++pairs[{idx(e.src), idx(e.dst)}];
        CHECK(e.message == ms.personal(idx(e.src), idx(e.dst)));
        std::uint32_t x = idx(e.src) ^ idx(e.dst), h = 0;
        while (x >> h) ++h;  // height of the lowest common ancestor
        CHECK(e.arrived == e.sent + 2 * h - 1);
    }
    CHECK(pairs.size() == 240);
    CHECK(v.transfers.back().arrived == t.steps());
}

TEST_CASE("ranks: on a ring every hop is an endpoint transfer between neighbours, received in the step it is sent") {
    SendTable t = ring_allgather(8);
    EndpointView v = endpoint_view(t);
    CHECK(v.transfers.size() == t.transfers.size());
    CHECK(v.cut_through);
    for (const EndpointTransfer& e : v.transfers) {
        CHECK(e.sent == e.arrived);
        CHECK(idx(e.dst) == (idx(e.src) + 1) % 8);
    }
}

TEST_CASE("ranks: flooding through replicating routers gives one endpoint transfer per (source, receiver) and lists its hops") {
    SendTable t = flood_allgather("cbft:8");
    EndpointView v = endpoint_view(t);
    CHECK_FALSE(v.cut_through);
    CHECK(v.fanout > 0);
    CHECK(v.stranded == 0);
    Messages ms = t.messages();
    std::map<std::pair<std::uint32_t, std::uint32_t>, int> pairs;
    for (const EndpointTransfer& e : v.transfers) {
        CHECK(e.message == ms.broadcast(idx(e.src)));
        CHECK(e.arrived >= e.sent + 1);
        ++pairs[{idx(e.src), idx(e.dst)}];
    }
    CHECK(pairs.size() == 56);
    for (auto& [k, n] : pairs) CHECK(n == 1);
    auto j = nlohmann::json::parse(table_to_ranks(t));
    CHECK(j["hops"] == "listed");
    CHECK(j["transfers"].size() == t.transfers.size());
}

TEST_CASE("ranks: the JSON lists every rank's start, goal and active steps") {
    SendTable t = ebft_alltoall(4);
    std::string text = table_to_ranks(t);
    check_golden("tests/golden/export/ebft4_alltoall.ranks.json", text);
    auto j = nlohmann::json::parse(text);
    CHECK(j["format"] == "collsched.ranks/1");
    CHECK(j["hops"] == "cut-through");
    CHECK_FALSE(j.contains("transfers"));
    CHECK(j["processors"] == 4);
    CHECK(j["endpoint_transfers"] == 12);
    REQUIRE(j["ranks"].size() == 4);
    const auto& r0 = j["ranks"][0];
    CHECK(r0["initial"] == nlohmann::json({"m(0,1)", "m(0,2)", "m(0,3)"}));
    CHECK(r0["final"] == nlohmann::json({"m(1,0)", "m(2,0)", "m(3,0)"}));
    CHECK(r0["steps"][0] == nlohmann::json::parse(R"J({"step": 1, "send": [{"to": 2, "msg": "m(0,2)", "arrive": 4}], "recv": []})J"));
    // every send has its receive at the other end
    int sends = 0, recvs = 0;
    for (const auto& r : j["ranks"])
        for (const auto& s : r["steps"]) {
            sends += static_cast<int>(s["send"].size());
            recvs += static_cast<int>(s["recv"].size());
        }
    CHECK(sends == 12);
    CHECK(recvs == 12);
}

TEST_CASE("ranks: reading the per-rank JSON back gives the same table") {
    SUBCASE("cut-through EBFT n=4 and n=16") {
        for (std::uint32_t n : {4u, 16u}) {
            SendTable t = ebft_alltoall(n);
            check_same_table(parse_ranks_json(table_to_ranks(t), "r.json"), t);
        }
    }
    SUBCASE("ring") {
        SendTable t = ring_allgather(8);
        check_same_table(parse_ranks_json(table_to_ranks(t), "r.json"), t);
    }
    SUBCASE("flooding, with listed hops") {
        SendTable t = flood_allgather("cbft:8");
        check_same_table(parse_ranks_json(table_to_ranks(t), "r.json"), t);
    }
    SUBCASE("a copy that waits in a router is listed too") {
        auto topo = Topology::parse("cbft:4");
        TableBuilder b(topo, topo->default_model(), Collective{CollectiveKind::custom, Node{0}, {}});
        Messages ms = b.messages();
        b.hop(1, *topo->find_channel(Node{0}, *topo->find_node("r1.0")), ms.personal(0, 1));
        b.hop(3, *topo->find_channel(*topo->find_node("r1.0"), Node{1}), ms.personal(0, 1));
        b.require(ms.personal(0, 1), Node{1});
        SendTable t = std::move(b).finish();
        t.extra_fields.emplace_back("note", "\"made by hand\"");
        EndpointView v = endpoint_view(t);
        REQUIRE(v.transfers.size() == 1);
        CHECK(v.transfers[0] == EndpointTransfer{1, Node{0}, Node{1}, ms.personal(0, 1), 3});
        CHECK_FALSE(v.cut_through);
        SendTable back = parse_ranks_json(table_to_ranks(t), "r.json");
        check_same_table(back, t);
        CHECK(back.extra_fields == t.extra_fields);
    }
    SUBCASE("wormhole rounds: every hop of a copy in the round it is sent") {
        auto topo = Topology::parse("ebft:4");
        Model m = topo->default_model();
        m.timing = Timing::wormhole;
        TableBuilder b(topo, m, Collective{CollectiveKind::alltoall, Node{0}, {}});
        Messages ms = b.messages();
        Step round = 1;
        for (std::uint32_t s = 0; s < 4; ++s)
            for (std::uint32_t d = 0; d < 4; ++d)
                if (s != d)
                    for (ChannelId c : topo->route(Node{s}, Node{d})) b.hop(round + s, c, ms.personal(s, d));
        SendTable t = std::move(b).finish();
        EndpointView v = endpoint_view(t);
        CHECK(v.cut_through);
        for (const EndpointTransfer& e : v.transfers) CHECK(e.sent == e.arrived);
        check_same_table(parse_ranks_json(table_to_ranks(t), "r.json"), t);
    }
}

TEST_CASE("ranks: a file written by another tool is rebuilt along the topology's routes, cut-through") {
    SendTable t = parse_ranks_json(tiny(R"J({"to": 2, "msg": "m(0,2)", "arrive": 4})J", R"J({"from": 0, "msg": "m(0,2)", "sent": 1})J"),
                                   "r.json");
    REQUIRE(t.transfers.size() == 4);
    const Topology& topo = *t.topology;
    std::vector<std::string> hops;
    for (const Transfer& x : t.transfers)
        hops.push_back(fmt::format("{} {}->{}", x.step, topo.node_name(topo.channel(x.channel).from), topo.node_name(topo.channel(x.channel).to)));
    CHECK(hops == std::vector<std::string>{"1 0->r1.0", "2 r1.0->r2.0", "3 r2.0->r1.1", "4 r1.1->2"});
}

TEST_CASE("ranks: records that disagree are refused with their place") {
    CHECK(error_of(tiny(R"J({"to": 2, "msg": "m(0,2)", "arrive": 5})J", R"J({"from": 0, "msg": "m(0,2)", "sent": 1})J")).find("rank 0 lists no such send") !=
          std::string::npos);
    std::string late = tiny(R"J({"to": 2, "msg": "m(0,2)", "arrive": 5})J", "");
    late.replace(late.find("\"step\": 4"), 9, "\"step\": 5");
    late.replace(late.find("\"recv\": []"), 10, R"J("recv": [{"from": 0, "msg": "m(0,2)", "sent": 1}])J");
    CHECK(error_of(late) ==
          "r.json: ranks[0].steps[0].send[0]: m(0,2) sent by 0 to 2 in step 1 arrives in step 5, but cut-through along the route (4 "
          "channels) arrives in step 4; a file whose copies do not follow the cut-through rule must list its hops (\"hops\": "
          "\"listed\" with \"transfers\")");
    CHECK(error_of(tiny("", R"J({"from": 0, "msg": "m(0,2)", "sent": 1})J")) ==
          "r.json: ranks[1].steps[0].recv[0]: rank 2 receives m(0,2) from 0 (sent in step 1) to 2 (arriving in step 4), but rank 0 "
          "lists no such send");
    CHECK(error_of(tiny(R"J({"to": 9, "msg": "m(0,2)", "arrive": 4})J", "")) ==
          "r.json: ranks[0].steps[0].send[0]: \"to\" must be a processor 0..3 of ebft:4, got 9");
    CHECK(error_of(tiny(R"J({"to": 2, "msg": "x(0)", "arrive": 4})J", "")).find("unknown message \"x(0)\"") != std::string::npos);
    CHECK(error_of(tiny(R"J({"to": 2, "msg": "m(0,2)", "arrive": 0})J", "")).find("\"arrive\" must be an integer >= 1") != std::string::npos);
    CHECK(error_of(R"J({"format": "collsched.ranks/3", "topology": "ebft:4", "collective": "custom", "ranks": []})J") ==
          "r.json: unknown format version 'collsched.ranks/3': this collsched reads collsched.ranks/1 and collsched.ranks/2");
    CHECK(error_of("{\"format\": \"collsched.ranks/1\",\n \"ranks\": [}") .starts_with("r.json:2:"));
    CHECK(error_of(R"J({"format": "collsched.ranks/1", "topology": "ebft:4", "collective": "custom", "ranks": [{"rank": 0}, {"rank": 0}]})J") ==
          "r.json: ranks[1]: rank 0 appears twice");
    // listed hops that do not carry what the records say
    SendTable flood = flood_allgather("cbft:4");
    auto j = nlohmann::json::parse(table_to_ranks(flood));
    j["transfers"].erase(j["transfers"].size() - 1);
    CHECK(error_of(j.dump()).find("the listed transfers do not carry") != std::string::npos);
}

TEST_CASE("ranks: read_table recognises a per-rank file by its format") {
    std::string path = "/tmp/collsched_test_ranks_" + std::to_string(::getpid()) + ".json";
    SendTable t = ebft_alltoall(8);
    {
        std::FILE* f = std::fopen(path.c_str(), "wb");
        std::string text = table_to_ranks(t);
        std::fwrite(text.data(), 1, text.size(), f);
        std::fclose(f);
    }
    check_same_table(read_table(path), t);
    std::remove(path.c_str());
    CHECK(looks_like_ranks(R"J({"topology": "ebft:4", "format": "collsched.ranks/1"})J"));
    CHECK_FALSE(looks_like_ranks(R"J({"transfers": [], "format": "collsched.table/1"})J"));
    CHECK_FALSE(looks_like_ranks("{\"format\": "));
}

TEST_CASE("ranks: a router that sends what it never received has no endpoint view") {
    auto topo = Topology::parse("cbft:4");
    TableBuilder b(topo, topo->default_model(), Collective{CollectiveKind::custom, Node{0}, {}});
    b.hop(2, *topo->find_channel(*topo->find_node("r1.0"), Node{1}), b.messages().personal(0, 1));
    SendTable t = std::move(b).finish();
    CHECK_THROWS_WITH_AS(table_to_ranks(t),
                         "cannot build the endpoint view: router r1.0 sends m(0,1) in step 2 but has received no copy of it before "
                         "(the table breaks causality; `collsched verify` shows where)",
                         InputError);
}
