// The Z3 engine: the same hand-made broken tables as test_direct.cpp, each with the
// counterexample Z3 derives (right property, step, channel or node, messages), the proofs of
// the generated EBFT/CBFT total exchanges, and the engine's unknown and internal-error paths.
#include <doctest/doctest.h>

#include "tests/approx.hpp"

#include <fstream>
#include <sstream>

#include "compiler/table/builder.hpp"
#include "compiler/io/table_io.hpp"
#include "dsl/diagnostics.hpp"
#include "verifier/check/direct.hpp"
#include "verifier/check/z3_engine.hpp"
#include "tests/verifier/verify_tables.hpp"

using namespace collsched;
using collsched::test::channel;
using collsched::test::count;
using collsched::test::first;
using collsched::test::load;
using collsched::test::move_transfer;
using collsched::test::names;
using collsched::test::node;
using collsched::test::status;
using collsched::test::table;
namespace scenario = collsched::test::scenario;

namespace {

/// Z3's per-property statuses equal the direct checker's.
void agree(const SendTable& t, const VerifyReport& z, bool fixed_routes = false) {
    VerifyReport d = verify_direct(t, {.fixed_routes = fixed_routes});
    for (std::size_t i = 0; i < property_count; ++i) {
        CAPTURE(to_string(static_cast<Property>(i)));
        CHECK(z.status[i] == d.status[i]);
    }
}

}  // namespace

TEST_CASE("z3: the hand-written EBFT n=4 total exchange is proved") {
    SendTable t = load("ebft4_alltoall.json");
    VerifyReport r = verify_z3(t);
    CHECK(r.engine == "z3");
    CHECK(r.holds());
    CHECK(r.verdict() == "holds");
    CHECK(r.steps == 6);
    CHECK(r.transfers == 40);
    CHECK(status(r, Property::capacity) == Status::holds);
    CHECK(status(r, Property::queues) == Status::holds);
    CHECK(status(r, Property::replication) == Status::holds);
    CHECK(status(r, Property::causality) == Status::holds);
    CHECK(status(r, Property::completeness) == Status::holds);
    CHECK(status(r, Property::ports) == Status::skipped);
    CHECK(status(r, Property::routes) == Status::skipped);
    CHECK(r.notes.empty());
    VerifyReport f = verify_z3(t, {.fixed_routes = true});
    CHECK(f.holds());
    CHECK(status(f, Property::routes) == Status::holds);
}

TEST_CASE("z3: capacity: a transfer moved onto an occupied leaf channel names that step, channel and both messages") {
    SendTable t = load("ebft4_alltoall.json");
    move_transfer(t, "0", "r1.0", "m(0,3)", 2, 1);
    VerifyReport r = verify_z3(t);
    CHECK(r.verdict() == "violated");
    CHECK(count(r, Property::capacity) == 1);
    const Violation& v = first(r, Property::capacity);
    CHECK(v.step == 1);
    CHECK(channel(t, v) == "0->r1.0");
    CHECK(names(t, v) == std::vector<std::string>{"m(0,2)", "m(0,3)"});
    CHECK(v.detail == "2 messages (m(0,2), m(0,3)) but capacity 1");
    // The moved message now waits a step in r1.0, which queues=none forbids.
    const Violation& q = first(r, Property::queues);
    CHECK(q.step == 2);
    CHECK(node(t, q) == "r1.0");
    CHECK(names(t, q) == std::vector<std::string>{"m(0,3)"});
    CHECK(format_report(r, t).find("capacity: step 1, channel 0->r1.0: 2 messages (m(0,2), m(0,3)) but capacity 1") !=
          std::string::npos);
    agree(t, r);
}

TEST_CASE("z3: completeness: a table missing one delivery names the message and the processor") {
    SendTable t = load("ebft4_alltoall.json");
    auto c = *t.topology->find_channel(*t.topology->find_node("r1.0"), Node{1});
    std::erase_if(t.transfers, [&](const Transfer& x) { return x.channel == c && x.message == *t.messages().parse("m(0,1)"); });
    VerifyReport r = verify_z3(t);
    CHECK(r.verdict() == "violated");
    CHECK(count(r, Property::completeness) == 1);
    const Violation& v = first(r, Property::completeness);
    CHECK(v.detail == "m(0,1) never reaches processor 1");
    CHECK(*v.node == Node{1});
    CHECK(v.step == 0);
    CHECK(v.messages == std::vector<MessageId>{*t.messages().parse("m(0,1)")});
    // The copy that no longer leaves r1.0 is also a queue violation under queues=none.
    CHECK(status(r, Property::queues) == Status::violated);
    agree(t, r);
}

TEST_CASE("z3: the phase total exchanges are proved, with fixed routes") {
    for (std::string spec : {"ebft:2", "ebft:4", "ebft:8", "ebft:16", "cbft:4", "cbft:8", "cbft:16"}) {
        CAPTURE(spec);
        SendTable t = bft_phase_alltoall(Topology::parse(spec));
        VerifyReport r = verify_z3(t, {.fixed_routes = true});
        CHECK(r.holds());
        CHECK(r.notes.empty());
        agree(t, r, true);
    }
}

TEST_CASE("z3: ports") {
    CHECK(verify_z3(scenario::both_ways("ports=multi")).holds());
    SendTable single = scenario::both_ways("ports=single");
    VerifyReport r = verify_z3(single);
    CHECK(r.verdict() == "violated");
    CHECK(count(r, Property::ports) == 1);
    const Violation& v = first(r, Property::ports);
    CHECK(v.step == 1);
    CHECK(*v.node == Node{0});
    CHECK(v.detail == "2 sends and 0 receives (b(0), b(0)) but single-port allows one of each per step");
    agree(single, r);
    SendTable half_ok = scenario::half_duplex_ok();
    CHECK(verify_z3(half_ok).holds());
    SendTable half = scenario::half_duplex_both();
    VerifyReport h = verify_z3(half);
    const Violation& hv = first(h, Property::ports);
    CHECK(hv.step == 1);
    CHECK(*hv.node == Node{1});
    CHECK(hv.detail == "1 sends and 1 receives (b(0), b(1)) but half-duplex allows one transfer per step");
    agree(half, h);
    // Two receives in one step: processor 1 gets b(0) from 0 and b(2) from 2.
    SendTable two_in = table("ring:4", "ports=single", "allgather", {{1, "0", "1", "b(0)"}, {1, "2", "1", "b(2)"}});
    VerifyReport ti = verify_z3(two_in);
    const Violation& tv = first(ti, Property::ports);
    CHECK(tv.step == 1);
    CHECK(*tv.node == Node{1});
    CHECK(tv.detail == "0 sends and 2 receives (b(0), b(2)) but single-port allows one of each per step");
    agree(two_in, ti);
}

TEST_CASE("z3: queues=none and queue bounds") {
    // m(0,1) waits one step in r1.0.
    SendTable t = scenario::one_waits("queues=none");
    VerifyReport r = verify_z3(t);
    CHECK(count(r, Property::queues) == 1);
    const Violation& v = first(r, Property::queues);
    CHECK(v.step == 2);
    CHECK(node(t, v) == "r1.0");
    CHECK(names(t, v) == std::vector<std::string>{"m(0,1)"});
    CHECK(channel(t, v) == "0->r1.0");  // the copy entered here and did not leave in step 2
    agree(t, r);
    t.model = apply_model_options(t.model, "queues=unbounded");
    VerifyReport u = verify_z3(t);
    CHECK(u.holds());
    CHECK(status(u, Property::queues) == Status::skipped);
    t.model = apply_model_options(t.model, "queues=1");
    CHECK(verify_z3(t).holds());
    t.model = apply_model_options(t.model, "queues=0");
    VerifyReport zero = verify_z3(t);
    CHECK(first(zero, Property::queues).step == 1);  // m(0,1) arrives in step 1 and waits after it
    agree(t, zero);
    // Two copies wait in r1.0 after step 2: m(0,1) (arrived 1, leaves 4) and m(0,2) (arrived 2, leaves 4).
    SendTable b = scenario::two_wait("queues=1");
    VerifyReport br = verify_z3(b);
    CHECK(br.verdict() == "violated");
    const Violation& bv = first(br, Property::queues);
    CHECK(bv.step == 2);
    CHECK(node(b, bv) == "r1.0");
    CHECK(bv.detail == "more than 1 messages wait in the router after step 2 but the queue bound is 1");
    agree(b, br);
    b.model = apply_model_options(b.model, "queues=2");
    CHECK(verify_z3(b).holds());
}

TEST_CASE("z3: queues with replicate=yes") {
    // r1.0 holds b(0) from step 1 and sends it on in steps 2 and 4: fine without a queue rule,
    // a wait under queues=none, and with a bound it is resident after steps 1 and 2.
    auto hops = {std::tuple<Step, const char*, const char*, const char*>{1, "0", "r1.0", "b(0)"},
                 {2, "r1.0", "1", "b(0)"},
                 {4, "r1.0", "r2.0", "b(0)"},
                 {5, "r2.0", "r1.1", "b(0)"},
                 {6, "r1.1", "2", "b(0)"},
                 {6, "r1.1", "3", "b(0)"}};
    CHECK(verify_z3(table("ebft:4", "replicate=yes,queues=unbounded", "broadcast:0", hops)).holds());
    SendTable none = table("ebft:4", "replicate=yes,queues=none", "broadcast:0", hops);
    VerifyReport rn = verify_z3(none);
    const Violation& v = first(rn, Property::queues);
    CHECK(v.step == 4);
    CHECK(channel(none, v) == "r1.0->r2.0");
    CHECK(node(none, v) == "r1.0");
    agree(none, rn);
    SendTable zero = table("ebft:4", "replicate=yes,queues=0", "broadcast:0", hops);
    VerifyReport rz = verify_z3(zero);
    const Violation& z = first(rz, Property::queues);
    CHECK(z.step == 1);  // resident from its first arrival (1) to its last departure (4) minus 2
    CHECK(node(zero, z) == "r1.0");
    agree(zero, rz);
    CHECK(verify_z3(table("ebft:4", "replicate=yes,queues=1", "broadcast:0", hops)).holds());
}

TEST_CASE("z3: replication and causality") {
    SendTable yes = scenario::copies_in_routers("replicate=yes,queues=none");
    VerifyReport ry = verify_z3(yes);
    CHECK(ry.holds());
    CHECK(ry.steps == 4);
    SendTable no = scenario::copies_in_routers("replicate=no,queues=none");
    VerifyReport rn = verify_z3(no);
    CHECK(count(rn, Property::replication) == 2);  // r1.0 and r1.1 each send one copy too many
    const Violation& v = first(rn, Property::replication);
    CHECK(v.step == 2);
    CHECK(node(no, v) == "r1.0");
    CHECK(names(no, v) == std::vector<std::string>{"b(0)"});
    agree(no, rn);
    // Processor 1 forwards m(0,2) in the step it receives it.
    SendTable c = scenario::forwards_on_arrival();
    VerifyReport rc = verify_z3(c);
    CHECK(count(rc, Property::causality) == 1);
    const Violation& cv = first(rc, Property::causality);
    CHECK(cv.step == 1);
    CHECK(channel(c, cv) == "1->2");
    CHECK(node(c, cv) == "1");
    CHECK(names(c, cv) == std::vector<std::string>{"m(0,2)"});
    agree(c, rc);
    // Sending data no one has: m(1,2) is not part of a scatter from 0.
    SendTable d = scenario::sends_what_no_one_has();
    VerifyReport rd = verify_z3(d);
    const Violation& dv = first(rd, Property::causality);
    CHECK(dv.step == 1);
    CHECK(channel(d, dv) == "1->2");
    // A router forwarding before anything arrived.
    SendTable e = scenario::router_forwards_first();
    VerifyReport re = verify_z3(e);
    const Violation& ev = first(re, Property::causality);
    CHECK(ev.detail == "r1.0 forwards m(0,1) in step 1 but has not received it");
    agree(e, re);
}

TEST_CASE("z3: fixed routes") {
    // m(0,2) goes the long way round the ring: legal hops, but not its route; under hop timing
    // in three steps, under wormhole timing as one worm in round 1 (checked too, as by the checker).
    for (bool wormhole : {false, true}) {
        CAPTURE(wormhole);
        Step s2 = wormhole ? 1 : 2, s3 = wormhole ? 1 : 3;
        SendTable t = table("ring:5", wormhole ? "timing=wormhole" : "", "custom",
                            {{1, "0", "4", "m(0,2)"}, {s2, "4", "3", "m(0,2)"}, {s3, "3", "2", "m(0,2)"}});
        CHECK(verify_z3(t).holds());
        VerifyReport r = verify_z3(t, {.fixed_routes = true});
        CHECK(count(r, Property::routes) == 3);
        const Violation& v = first(r, Property::routes);
        CHECK(v.step == 1);
        CHECK(channel(t, v) == "0->4");
        CHECK(v.detail == "m(0,2) crosses 0->4, which is not on its route 0 -> 2");
        agree(t, r, true);
    }
}

TEST_CASE("z3: wormhole rounds carry a message along its whole path") {
    SendTable t = table("linear:4", "timing=wormhole,ts=2,tc=0.5", "broadcast:0",
                        {{1, "0", "1", "b(0)"}, {1, "1", "2", "b(0)"}, {1, "2", "3", "b(0)"}});
    VerifyReport r = verify_z3(t);
    CHECK(r.holds());
    CHECK(r.steps == 1);
    CHECK(r.cost == collsched::test::rel(2.5));
    CHECK(status(r, Property::queues) == Status::skipped);
    SendTable bad = table("linear:4", "timing=wormhole", "broadcast:0", {{1, "0", "1", "b(0)"}, {1, "2", "3", "b(0)"}, {2, "1", "2", "b(0)"}});
    VerifyReport br = verify_z3(bad);
    const Violation& v = first(br, Property::causality);
    CHECK(v.step == 1);
    CHECK(channel(bad, v) == "2->3");
    // The illegal transfer delivers nothing: 3 never holds b(0).
    const Violation& c = first(br, Property::completeness);
    CHECK(node(bad, c) == "3");
    agree(bad, br);
    // A router that passes on two worms of one message in a round but received one.
    SendTable rep = table("ebft:4", "timing=wormhole", "broadcast:0",
                          {{1, "0", "r1.0", "b(0)"}, {1, "r1.0", "1", "b(0)"}, {1, "r1.0", "r2.0", "b(0)"}, {1, "r2.0", "r1.1", "b(0)"},
                           {1, "r1.1", "2", "b(0)"}, {1, "r1.1", "3", "b(0)"}});
    VerifyReport rr = verify_z3(rep);
    CHECK(count(rr, Property::replication) == 2);
    const Violation& rv = first(rr, Property::replication);
    CHECK(rv.step == 1);
    CHECK(!rv.channel.has_value());
    agree(rep, rr);
    rep.model = apply_model_options(rep.model, "replicate=yes");
    CHECK(verify_z3(rep).holds());
}

TEST_CASE("z3: every violation is counted, the first few are kept") {
    SendTable t = load("ebft4_alltoall.json");
    t.transfers.clear();
    VerifyReport r = verify_z3(t, {.max_violations = 5});
    CHECK(count(r, Property::completeness) == 12);
    CHECK(r.violations.size() == 5);
    CHECK(format_report(r, t).find("(7 more completeness violations not shown)") != std::string::npos);
}

TEST_CASE("z3: custom goals and duplicated transfers") {
    // A requirement nobody meets, and a transfer listed twice on a capacity-1 channel.
    auto topo = Topology::parse("ring:4");
    TableBuilder b(topo, Model{}, Collective::parse("custom", *topo));
    ChannelId c01 = *topo->find_channel(Node{0}, Node{1});
    b.hop(1, c01, b.messages().broadcast(0));
    b.hop(1, c01, b.messages().broadcast(0));
    b.require(b.messages().broadcast(0), Node{1});
    b.require(b.messages().personal(2, 3), Node{3});
    SendTable t = std::move(b).finish();
    VerifyReport r = verify_z3(t);
    CHECK(first(r, Property::capacity).detail == "2 messages (b(0), b(0)) but capacity 1");
    const Violation& g = first(r, Property::completeness);
    CHECK(g.detail == "m(2,3) never reaches processor 3");
    CHECK(count(r, Property::completeness) == 1);
    agree(t, r);
}

TEST_CASE("z3: a time limit is an unknown answer, not a hang") {
    SendTable t = bft_phase_alltoall(Topology::parse("ebft:32"));
    VerifyReport r = verify_z3(t, {.timeout_ms = 1});
    CHECK(r.verdict() == "unknown");
    CHECK_FALSE(r.holds());
    bool any_unknown = false;
    for (Status s : r.status) any_unknown = any_unknown || s == Status::unknown;
    CHECK(any_unknown);
    REQUIRE_FALSE(r.notes.empty());
    CHECK(r.notes.front().find("time limit of 1 ms") != std::string::npos);
    CHECK(report_to_json(r, t).dump().find("\"notes\":[") != std::string::npos);
}

TEST_CASE("z3: steps far apart cost nothing (no table over all steps)") {
    // Two hops of m(0,2) around r1.0 in steps 2^31 - 1 and 2^31: a copy waits 0 steps.
    Step big = Step{1} << 31;
    SendTable t = table("ebft:4", "queues=none", "custom", {{big - 1, "0", "r1.0", "m(0,1)"}, {big, "r1.0", "1", "m(0,1)"}});
    VerifyReport r = verify_z3(t);
    CHECK(r.holds());
    CHECK(r.seconds < 5);
    t.transfers.back().step = big - 1 + 3;
    t.sort();
    VerifyReport late = verify_z3(t);
    CHECK(first(late, Property::queues).step == big);
    agree(t, late);
}

TEST_CASE("z3: a transfer in step 0 is bad input") {
    SendTable t = table("ring:4", "", "broadcast:0", {{0, "0", "1", "b(0)"}});
    CHECK_THROWS_WITH_AS(verify_z3(t), "a transfer in step 0: steps are numbered from 1 (time 0 is the initial state)", InputError);
}

TEST_CASE("z3: JSON report") {
    SendTable t = load("ebft4_alltoall.json");
    move_transfer(t, "0", "r1.0", "m(0,3)", 2, 1);
    std::string j = report_to_json(verify_z3(t), t).dump();
    CHECK(j.find("\"verdict\":\"violated\",\"engine\":\"z3\"") != std::string::npos);
    CHECK(j.find("\"capacity\":\"violated\"") != std::string::npos);
    CHECK(j.find("{\"property\":\"capacity\",\"step\":1,\"channel\":{\"from\":\"0\",\"to\":\"r1.0\"},\"node\":null,"
                 "\"messages\":[\"m(0,2)\",\"m(0,3)\"]") != std::string::npos);
    CHECK(j.find("\"seconds\":") != std::string::npos);
}

TEST_CASE("z3: violation_transfer points a counterexample at its transfer") {
    SendTable t = load("ebft4_alltoall.json");
    move_transfer(t, "0", "r1.0", "m(0,3)", 2, 1);
    VerifyReport r = verify_z3(t);
    auto i = violation_transfer(t, first(r, Property::capacity));
    REQUIRE(i.has_value());
    CHECK(t.transfers[*i].step == 1);
    CHECK(t.transfers[*i].message == *t.messages().parse("m(0,2)"));
    CHECK_FALSE(violation_transfer(t, Violation{Property::completeness, 0, std::nullopt, Node{1}, {}, ""}).has_value());
}
