// The direct checker: the papers' step counts on generated tables, and for every property a
// broken table whose counterexample names the right step and channel, node or message.
#include <doctest/doctest.h>

#include "tests/approx.hpp"

#include <algorithm>
#include <chrono>
#include <random>

#include "compiler/table/builder.hpp"
#include "compiler/io/table_io.hpp"
#include "verifier/check/by_message.hpp"
#include "verifier/check/composite.hpp"
#include "support/budget.hpp"
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

TEST_CASE("direct: the hand-written EBFT n=4 total exchange holds in 6 steps") {
    SendTable t = load("ebft4_alltoall.json");
    VerifyReport r = verify_direct(t);
    CHECK(r.holds());
    CHECK(r.verdict() == "holds");
    CHECK(r.steps == 6);
    CHECK(r.transfers == 40);
    CHECK(status(r, Property::capacity) == Status::holds);
    CHECK(status(r, Property::queues) == Status::holds);
    CHECK(status(r, Property::completeness) == Status::holds);
    CHECK(status(r, Property::ports) == Status::skipped);
    CHECK(verify_direct(t, {.fixed_routes = true}).holds());
}

TEST_CASE("direct: a transfer moved onto an occupied leaf channel fails capacity at that step and channel") {
    SendTable t = load("ebft4_alltoall.json");
    move_transfer(t, "0", "r1.0", "m(0,3)", 2, 1);
    VerifyReport r = verify_direct(t);
    CHECK_FALSE(r.holds());
    CHECK(r.violation_count[static_cast<std::size_t>(Property::capacity)] == 1);
    const Violation& v = first(r, Property::capacity);
    CHECK(v.step == 1);
    CHECK(channel(t, v) == "0->r1.0");
    CHECK(v.detail == "2 messages (m(0,2), m(0,3)) but capacity 1");
    // The moved message now waits a step in r1.0, which queues=none forbids.
    const Violation& q = first(r, Property::queues);
    CHECK(q.step == 2);
    CHECK(t.topology->node_name(*q.node) == "r1.0");
    CHECK(format_report(r, t).find("capacity: step 1, channel 0->r1.0: 2 messages (m(0,2), m(0,3)) but capacity 1") !=
          std::string::npos);
}

TEST_CASE("direct: a table missing one delivery fails completeness naming the message") {
    SendTable t = load("ebft4_alltoall.json");
    auto c = *t.topology->find_channel(*t.topology->find_node("r1.0"), Node{1});
    std::erase_if(t.transfers, [&](const Transfer& x) { return x.channel == c && x.message == *t.messages().parse("m(0,1)"); });
    VerifyReport r = verify_direct(t);
    CHECK(r.verdict() == "violated");
    CHECK(r.violation_count[static_cast<std::size_t>(Property::completeness)] == 1);
    const Violation& v = first(r, Property::completeness);
    CHECK(v.detail == "m(0,1) never reaches processor 1");
    CHECK(*v.node == Node{1});
    CHECK(v.messages == std::vector<MessageId>{*t.messages().parse("m(0,1)")});
}

TEST_CASE("direct: the phase total exchange takes n + 2 log n - 2 steps on EBFTs") {
    for (std::uint32_t n : {2u, 4u, 8u, 16u, 32u, 64u, 128u, 256u}) {
        CAPTURE(n);
        std::uint32_t L = 0;
        while ((1u << L) < n) ++L;
        SendTable t = bft_phase_alltoall(Topology::parse("ebft:" + std::to_string(n)));
        VerifyReport r = verify_direct(t, {.fixed_routes = true});
        CHECK(r.holds());
        CHECK(r.steps == n + 2 * L - 2);
        CHECK(t.transfers.size() == [&] {
            std::uint64_t sum = 0;  // each message crosses 2h channels, h its LCA height
            for (std::uint32_t s = 0; s < n; ++s)
                for (std::uint32_t d = 0; d < n; ++d)
                    if (s != d) sum += t.topology->distance(Node{s}, Node{d});
            return sum;
        }());
    }
}

TEST_CASE("direct: the phase total exchange takes (n^2-1)/3 + 2 log n - 1 steps on CBFTs") {
    for (std::uint32_t n : {2u, 4u, 8u, 16u, 32u}) {
        CAPTURE(n);
        std::uint32_t L = 0;
        while ((1u << L) < n) ++L;
        VerifyReport r = verify_direct(bft_phase_alltoall(Topology::parse("cbft:" + std::to_string(n))));
        CHECK(r.holds());
        CHECK(r.steps == (n * n - 1) / 3 + 2 * L - 1);
    }
}

TEST_CASE("direct: ports") {
    // Processor 0 sends b(0) both ways round the ring in step 1.
    SendTable multi = scenario::both_ways("ports=multi");
    CHECK(verify_direct(multi).holds());
    SendTable single = scenario::both_ways("ports=single");
    VerifyReport r = verify_direct(single);
    CHECK(r.verdict() == "violated");
    const Violation& v = first(r, Property::ports);
    CHECK(v.step == 1);
    CHECK(*v.node == Node{0});
    CHECK(v.detail == "2 sends and 0 receives (b(0), b(0)) but single-port allows one of each per step");
    // Half duplex: processor 1 receives in step 1 and sends in step 2: fine; sending in step 1 too is not.
    SendTable half_ok = scenario::half_duplex_ok();
    CHECK(verify_direct(half_ok).holds());
    SendTable half = scenario::half_duplex_both();
    VerifyReport h = verify_direct(half);
    const Violation& hv = first(h, Property::ports);
    CHECK(hv.step == 1);
    CHECK(*hv.node == Node{1});
    CHECK(hv.detail == "1 sends and 1 receives (b(0), b(1)) but half-duplex allows one transfer per step");
}

TEST_CASE("direct: queues=none and queue bounds") {
    // m(0,1) waits one step in r1.0.
    SendTable t = scenario::one_waits("queues=none");
    VerifyReport r = verify_direct(t);
    CHECK(r.violation_count[static_cast<std::size_t>(Property::queues)] == 1);
    const Violation& v = first(r, Property::queues);
    CHECK(v.step == 2);
    CHECK(t.topology->node_name(*v.node) == "r1.0");
    CHECK(v.detail == "m(0,1) entered r1.0 in step 1 and leaves in step 3; with queues=none it must leave in step 2");
    t.model = apply_model_options(t.model, "queues=unbounded");
    CHECK(verify_direct(t).holds());
    t.model = apply_model_options(t.model, "queues=1");
    CHECK(verify_direct(t).holds());
    // Two copies wait in r1.0 after step 2: m(0,1) (arrived 1, leaves 4) and m(0,2) (arrived 2, leaves 4).
    SendTable b = scenario::two_wait("queues=1");
    VerifyReport br = verify_direct(b);
    CHECK(br.verdict() == "violated");
    const Violation& bv = first(br, Property::queues);
    CHECK(bv.step == 2);
    CHECK(b.topology->node_name(*bv.node) == "r1.0");
    CHECK(bv.detail == "2 messages wait in the router after step 2 but the queue bound is 1");
    b.model = apply_model_options(b.model, "queues=2");
    CHECK(verify_direct(b).holds());
}

TEST_CASE("direct: a bounded queue counts a departure without a copy") {
    // As the simulator's test: 2 arrivals at r1.0 by step 1, 1 departure (of a message it never
    // received) by step 2: 1 waiting, within queues=1; only the causality violation is reported.
    SendTable t = table("ebft:4", "queues=1,replicate=no", "custom",
                        {{1, "0", "r1.0", "m(0,2)"}, {1, "1", "r1.0", "m(1,2)"}, {2, "r1.0", "r2.0", "m(0,3)"},
                         {3, "r1.0", "r2.0", "m(0,2)"}, {4, "r1.0", "r2.0", "m(1,2)"}, {3, "r2.0", "r1.1", "m(0,3)"},
                         {4, "r2.0", "r1.1", "m(0,2)"}, {5, "r2.0", "r1.1", "m(1,2)"}, {4, "r1.1", "3", "m(0,3)"},
                         {5, "r1.1", "2", "m(0,2)"}, {6, "r1.1", "2", "m(1,2)"}});
    VerifyReport r = verify_direct(t);
    CHECK(status(r, Property::queues) == Status::holds);
    const Violation& v = first(r, Property::causality);
    CHECK(v.step == 2);
    CHECK(channel(t, v) == "r1.0->r2.0");
    CHECK(v.detail == "r1.0 forwards m(0,3) in step 2 but has not received it");
    VerifyReport z = verify_z3(t);  // the Z3 engine counts the same way
    CHECK(status(z, Property::queues) == Status::holds);
    CHECK(status(z, Property::causality) == Status::violated);
}

TEST_CASE("direct: replication and causality") {
    SendTable yes = scenario::copies_in_routers("replicate=yes,queues=none");
    VerifyReport ry = verify_direct(yes);
    CHECK(ry.holds());
    CHECK(ry.steps == 4);  // 2 log n
    SendTable no = scenario::copies_in_routers("replicate=no,queues=none");
    VerifyReport rn = verify_direct(no);
    CHECK(rn.violation_count[static_cast<std::size_t>(Property::replication)] == 2);
    const Violation& v = first(rn, Property::replication);
    CHECK(v.step == 2);
    CHECK(no.topology->node_name(*v.node) == "r1.0");
    CHECK(channel(no, v) == "r1.0->r2.0");
    // Processor 1 forwards m(0,2) in the step it receives it.
    SendTable c = scenario::forwards_on_arrival();
    VerifyReport rc = verify_direct(c);
    const Violation& cv = first(rc, Property::causality);
    CHECK(cv.step == 1);
    CHECK(channel(c, cv) == "1->2");
    CHECK(cv.detail == "1 sends m(0,2) in step 1 but holds it only from the end of step 1");
    // Sending data no one has: m(1,2) is not part of a scatter from 0.
    SendTable d = scenario::sends_what_no_one_has();
    CHECK(first(verify_direct(d), Property::causality).detail == "1 sends m(1,2) but never holds it");
    // A router forwarding before anything arrived.
    SendTable e = scenario::router_forwards_first();
    CHECK(first(verify_direct(e), Property::causality).detail == "r1.0 forwards m(0,1) in step 1 but has not received it");
}

TEST_CASE("direct: inject=once: the source sends its datum once, no other processor forwards it") {
    // b(0) on cbft:4: up to r1.0, which copies it to 1 and up; the root copies it down to r1.1.
    auto once = {std::tuple<Step, const char*, const char*, const char*>{1, "0", "r1.0", "b(0)"},
                 {2, "r1.0", "1", "b(0)"},
                 {2, "r1.0", "r2.0", "b(0)"},
                 {3, "r2.0", "r1.1", "b(0)"},
                 {4, "r1.1", "2", "b(0)"},
                 {4, "r1.1", "3", "b(0)"}};
    CHECK(verify_direct(table("cbft:4", "replicate=yes,queues=none,inject=once", "broadcast:0", once)).holds());
    // The source sends b(0) twice: once to reach 1, once more to reach 2 and 3.
    SendTable twice = table("cbft:4", "replicate=yes,queues=none,inject=once", "broadcast:0",
                            {{1, "0", "r1.0", "b(0)"}, {2, "r1.0", "1", "b(0)"}, {2, "0", "r1.0", "b(0)"},
                             {3, "r1.0", "r2.0", "b(0)"}, {4, "r2.0", "r1.1", "b(0)"}, {5, "r1.1", "2", "b(0)"},
                             {5, "r1.1", "3", "b(0)"}});
    VerifyReport r = verify_direct(twice);
    CHECK(r.violation_count[static_cast<std::size_t>(Property::replication)] == 1);
    const Violation& v = first(r, Property::replication);
    CHECK(v.step == 2);
    CHECK(channel(twice, v) == "0->r1.0");
    CHECK(v.detail == "processor 0 injects b(0) again in step 2 on 0->r1.0 (first in step 1 on 0->r1.0); inject=once: each "
                      "source injects its datum exactly once");
    // The same table without the restriction holds.
    twice.model.inject_once = false;
    CHECK(verify_direct(twice).holds());
    // Leaf 1 relays b(0) to 2 and 3.
    SendTable relay = table("cbft:4", "replicate=yes,queues=none,inject=once", "broadcast:0",
                            {{1, "0", "r1.0", "b(0)"}, {2, "r1.0", "1", "b(0)"}, {3, "1", "r1.0", "b(0)"},
                             {4, "r1.0", "r2.0", "b(0)"}, {5, "r2.0", "r1.1", "b(0)"}, {6, "r1.1", "2", "b(0)"},
                             {6, "r1.1", "3", "b(0)"}});
    VerifyReport rr = verify_direct(relay);
    CHECK(rr.violation_count[static_cast<std::size_t>(Property::replication)] == 1);
    const Violation& w = first(rr, Property::replication);
    CHECK(w.step == 3);
    CHECK(relay.topology->node_name(*w.node) == "1");
    CHECK(w.detail == "1 sends b(0) in step 3 on 1->r1.0, back toward its source 0; inject=once: a datum is injected once and "
                      "only moves away from its source");
}

TEST_CASE("direct: fixed routes") {
    // m(0,2) goes the long way round the ring: legal hops, but not its route.
    SendTable t = table("ring:5", "", "custom",
                        {{1, "0", "4", "m(0,2)"}, {2, "4", "3", "m(0,2)"}, {3, "3", "2", "m(0,2)"}});
    CHECK(verify_direct(t).holds());
    VerifyReport r = verify_direct(t, {.fixed_routes = true});
    CHECK(r.violation_count[static_cast<std::size_t>(Property::routes)] == 3);
    const Violation& v = first(r, Property::routes);
    CHECK(v.step == 1);
    CHECK(channel(t, v) == "0->4");
}

TEST_CASE("direct: fixed routes under wormhole timing") {
    // One worm of m(0,2) the long way round the ring in round 1: each of its channels is off the
    // route 0 -> 2 (before, wormhole tables were never checked against routes).
    SendTable t = table("ring:5", "timing=wormhole", "custom",
                        {{1, "0", "4", "m(0,2)"}, {1, "4", "3", "m(0,2)"}, {1, "3", "2", "m(0,2)"}});
    CHECK(verify_direct(t).holds());
    VerifyReport r = verify_direct(t, {.fixed_routes = true});
    CHECK(status(r, Property::routes) == Status::violated);
    CHECK(r.violation_count[static_cast<std::size_t>(Property::routes)] == 3);
    const Violation& v = first(r, Property::routes);
    CHECK(v.step == 1);
    CHECK(channel(t, v) == "0->4");
    CHECK(v.detail == "m(0,2) crosses 0->4, which is not on its route 0 -> 2");
    // The worm along the route holds.
    SendTable ok = table("ring:5", "timing=wormhole", "custom", {{1, "0", "1", "m(0,2)"}, {1, "1", "2", "m(0,2)"}});
    CHECK(status(verify_direct(ok, {.fixed_routes = true}), Property::routes) == Status::holds);
}

TEST_CASE("direct: wormhole, replicate=no: a worm from an extra copy is one replication violation") {
    // The same table as the simulator's test: r1.1 passes on two copies of the one it receives.
    SendTable t = table("ebft:4", "timing=wormhole,replicate=no", "broadcast:3",
                        {{1, "3", "r1.1", "b(3)"}, {1, "r1.1", "2", "b(3)"}, {1, "r1.1", "r2.0", "b(3)"},
                         {1, "r2.0", "r1.0", "b(3)"}, {1, "r1.0", "0", "b(3)"}});
    VerifyReport r = verify_direct(t);
    CHECK(r.violation_count[static_cast<std::size_t>(Property::replication)] == 1);
    CHECK(status(r, Property::causality) == Status::holds);
    const Violation& v = first(r, Property::replication);
    CHECK(v.step == 1);
    CHECK(t.topology->node_name(*v.node) == "r1.1");
}

TEST_CASE("direct: of two same-step departures from a router the one on the higher channel is the extra copy") {
    // b(2) circles between r1.1 and r2.0 for 40 steps, then reaches r1.0, which sends its one
    // copy on all three of its channels in the next step, twice up (capacity 2). The router
    // events are sorted by introsort, far from their table order (which is by step, theirs by
    // router first), which used to order equal (router, step) departures arbitrarily; now they
    // go by channel, so the three extra copies are those on the higher channels, in channel order.
    std::vector<std::tuple<Step, const char*, const char*, const char*>> hops = {{1, "2", "r1.1", "b(2)"}};
    for (Step s = 2; s < 42; s += 2) {
        hops.push_back({s, "r1.1", "r2.0", "b(2)"});
        hops.push_back({s + 1, "r2.0", "r1.1", "b(2)"});
    }
    for (auto h : std::initializer_list<std::tuple<Step, const char*, const char*, const char*>>{
             {42, "r1.1", "r2.0", "b(2)"}, {43, "r2.0", "r1.0", "b(2)"}, {44, "r1.0", "0", "b(2)"},
             {44, "r1.0", "1", "b(2)"}, {44, "r1.0", "r2.0", "b(2)"}, {44, "r1.0", "r2.0", "b(2)"}})
        hops.push_back(h);
    auto topo = Topology::parse("ebft:4");
    TableBuilder b(topo, apply_model_options(topo->default_model(), "replicate=no"), Collective::parse("broadcast:2", *topo));
    for (auto [s, from, to, m] : hops) b.hop(s, *topo->find_channel(*topo->find_node(from), *topo->find_node(to)), *b.messages().parse(m));
    SendTable t = std::move(b).finish();
    VerifyReport r = verify_direct(t);
    std::vector<std::uint32_t> out;  // r1.0's channels, by id
    for (const char* to : {"0", "1", "r2.0", "r2.0"}) out.push_back(idx(*topo->find_channel(*topo->find_node("r1.0"), *topo->find_node(to))));
    std::sort(out.begin(), out.end());
    std::vector<std::uint32_t> extra;
    for (const Violation& v : r.violations)
        if (v.property == Property::replication && v.step == 44 && topo->node_name(*v.node) == "r1.0") extra.push_back(idx(*v.channel));
    auto show = [](const std::vector<std::uint32_t>& xs) {
        std::string s;
        for (std::uint32_t x : xs) s += std::to_string(x) + " ";
        return s;
    };
    CHECK(show(extra) == show(std::vector<std::uint32_t>(out.begin() + 1, out.end())));
}

TEST_CASE("direct: wormhole rounds carry a message along its whole path") {
    SendTable t = table("linear:4", "timing=wormhole,ts=2,tc=0.5", "broadcast:0",
                        {{1, "0", "1", "b(0)"}, {1, "1", "2", "b(0)"}, {1, "2", "3", "b(0)"}});
    VerifyReport r = verify_direct(t);
    CHECK(r.holds());
    CHECK(r.steps == 1);
    CHECK(r.cost == collsched::test::rel(2.5));
    SendTable bad = table("linear:4", "timing=wormhole", "broadcast:0",
                          {{1, "0", "1", "b(0)"}, {1, "2", "3", "b(0)"}, {2, "1", "2", "b(0)"}});
    VerifyReport br = verify_direct(bad);
    const Violation& v = first(br, Property::causality);
    CHECK(v.step == 1);
    CHECK(channel(bad, v) == "2->3");
}

TEST_CASE("direct: counterexamples are capped but all are counted") {
    SendTable t = load("ebft4_alltoall.json");
    t.transfers.clear();
    VerifyReport r = verify_direct(t, {.max_violations = 5});
    CHECK(r.violation_count[static_cast<std::size_t>(Property::completeness)] == 12);
    CHECK(r.violations.size() == 5);
    CHECK(format_report(r, t).find("(7 more completeness violations not shown)") != std::string::npos);
}

TEST_CASE("direct: the two-pass regroup by message gives every message's transfers in table order") {
    // detail::for_each_message against the plain definition (each message's transfers, filtered
    // from the sorted table in order), on random tables whose message spaces take one bucket,
    // many buckets, and the sort (a sparse space, a forced sort).
    std::mt19937_64 rng(19);
    struct Case {
        std::uint64_t space, transfers;
        Step steps;
        std::uint32_t channels;
        bool force_sort;
    };
    for (const Case& c : {Case{5, 40, 7, 3, false}, Case{2048, 3000, 30, 50, false}, Case{2049, 3000, 30, 50, false},
                          Case{100'000, 20'000, 4000, 70'000, false}, Case{100'000, 20'000, 4000, 70'000, true},
                          Case{std::uint64_t{1} << 25, 1000, 9, 10, false}}) {
        CAPTURE(c.space);
        std::vector<Transfer> xs;
        for (std::uint64_t i = 0; i < c.transfers; ++i)
            xs.push_back({static_cast<Step>(1 + rng() % c.steps), ChannelId{static_cast<std::uint32_t>(rng() % c.channels)},
                          MessageId{static_cast<std::uint32_t>(rng() % std::min<std::uint64_t>(c.space, 3 * c.transfers))}});
        std::sort(xs.begin(), xs.end());
        detail::MessageGroups g;
        g.plan(c.space, xs.size(), xs.back().step, c.channels, c.force_sort);
        CHECK(g.sort == (c.force_sort || c.space > (1u << 24)));
        if (!g.sort)
            for (const Transfer& x : xs) g.add(x.message);
        std::vector<std::pair<MessageId, std::vector<detail::Hop>>> got, want;
        detail::for_each_message(xs, g, [&](MessageId m, const detail::Hop* first, const detail::Hop* last) {
            got.emplace_back(m, std::vector<detail::Hop>(first, last));
        });
        std::vector<MessageId> ms;
        for (const Transfer& x : xs) ms.push_back(x.message);
        std::sort(ms.begin(), ms.end(), [](MessageId a, MessageId b) { return idx(a) < idx(b); });
        ms.erase(std::unique(ms.begin(), ms.end()), ms.end());
        for (MessageId m : ms) {
            std::vector<detail::Hop> hops;
            for (const Transfer& x : xs)
                if (x.message == m) hops.push_back({x.step, x.channel});
            want.emplace_back(m, std::move(hops));
        }
        CHECK(got.size() == want.size());
        CHECK((got == want));
    }
}

TEST_CASE("direct: two threads give the single thread's report on EBFT n = 256, with violations in both halves") {
    // 918,016 transfers: verify_direct picks two threads for the per-message pass by itself. The
    // table is broken in both halves of the message ids (a message never sent in each, and a
    // transfer moved two steps early in each), so both threads find violations and the merge of
    // their counts and capped counterexamples is exercised.
    SendTable t = bft_phase_alltoall(Topology::parse("ebft:256"));
    REQUIRE(t.transfers.size() == 918'016);
    const Messages ms = t.messages();
    auto find = [&](MessageId m) {
        return std::find_if(t.transfers.begin(), t.transfers.end(), [&](const Transfer& x) { return x.message == m; });
    };
    for (auto [s, d] : {std::pair{3u, 200u}, std::pair{250u, 7u}}) {  // never sent: never delivered
        REQUIRE(find(ms.personal(s, d)) != t.transfers.end());
        std::erase_if(t.transfers, [&](const Transfer& x) { return x.message == ms.personal(s, d); });
    }
    for (auto [s, d] : {std::pair{10u, 11u}, std::pair{240u, 100u}}) {
        auto it = std::find_if(t.transfers.rbegin(), t.transfers.rend(), [&](const Transfer& x) { return x.message == ms.personal(s, d); });
        REQUIRE(it != t.transfers.rend());
        REQUIRE(it->step > 2);
        it->step -= 2;  // its last hop, the delivery, sent by a router before the message reached it
    }
    t.sort();
    for (std::size_t cap : {std::size_t{20}, std::size_t{1}, std::size_t{1} << 30}) {
        CAPTURE(cap);
        VerifyReport one = verify_direct(t, {.max_violations = cap, .threads = 1});
        VerifyReport two = verify_direct(t, {.max_violations = cap});
        CHECK_FALSE(one.holds());
        CHECK(count(one, Property::completeness) == 2);
        CHECK(count(one, Property::causality) >= 2);
        CHECK(one.status == two.status);
        CHECK(one.violation_count == two.violation_count);
        REQUIRE(one.violations.size() == two.violations.size());
        for (std::size_t i = 0; i < one.violations.size(); ++i) {
            CHECK(one.violations[i].detail == two.violations[i].detail);
            CHECK(one.violations[i].step == two.violations[i].step);
        }
    }
}

TEST_CASE("direct: the regroup by message polls the checker's limits every 2^20 transfers") {
    // the pass wrote 18.8 million transfers of ebft:1024's alltoall at random without a poll, past --timeout 10
    const std::uint64_t n = (std::uint64_t{1} << 21) + 5;
    std::vector<Transfer> xs;
    xs.reserve(n);
    for (std::uint64_t i = 0; i < n; ++i) xs.push_back({1, ChannelId{0}, MessageId{static_cast<std::uint32_t>(i)}});
    detail::MessageGroups g;
    g.plan(n, n, 1, 1, false);
    REQUIRE_FALSE(g.sort);
    for (const Transfer& x : xs) g.add(x.message);
    int polls = 0;
    detail::regroup(xs, g, [&] { ++polls; });
    CHECK(polls == 3);  // at 0, 2^20 and 2^21
    // and a limit reached inside it stops the check: a passed deadline is "not checked", not a verdict
    detail::MessageGroups h;
    h.plan(n, n, 1, 1, false);
    for (const Transfer& x : xs) h.add(x.message);
    CHECK_THROWS_AS(detail::regroup(xs, h, [&] { throw LimitReached("time limit"); }), LimitReached);
}

TEST_CASE("direct checker: only the counterexamples the report shows are written out, the rest are counted") {
    // A one-transfer allreduce on linear:65534: every processor ends without the full sum. The
    // report wrote every text (each naming what is missing of 65,534 sources) to print 20: 14.4 s.
    const SendTable t = parse_table_json(
        R"({"format": "collsched.table/1", "topology": "linear:65534", "collective": "allreduce", )"
        R"x("transfers": [{"step": 1, "from": "0", "to": "1", "msg": "a(0)"}]})x", "t.json");
    VerifyOptions o;
    o.max_violations = 4;
    const auto t0 = std::chrono::steady_clock::now();
    const VerifyReport r = verify_direct(t, o);
    CHECK(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() < 3.0);
    const auto i = static_cast<std::size_t>(Property::completeness);
    CHECK(r.status[i] == Status::violated);
    CHECK(r.violation_count[i] == 65534);
    CHECK(r.violations.size() == 4);
    CHECK(format_report(r, t).find("(65530 more completeness violations not shown)") != std::string::npos);
}

TEST_CASE("direct checker: the pass over combined values stops at the deadline (a limit it ignored: 14 s past optimize's --timeout 60)") {
    // optimize on rail 128 x 8 reduce_scatter checked a 6.3-million-transfer reduction past its limit: the composite
    // pass polled neither the deadline nor the memory budget (verifier/check/limit_poll.hpp)
    const SendTable t = parse_table_json(
        R"({"format": "collsched.table/1", "topology": "ring:4", "collective": "allreduce", )"
        R"x("transfers": [{"step": 1, "from": "0", "to": "1", "msg": "a(0)"}, {"step": 2, "from": "1", "to": "2", "msg": "a(0)"}]})x", "t.json");
    REQUIRE(detail::needs_composite_check(t));
    VerifyOptions o;
    o.deadline = Deadline::at(Clock::now() - std::chrono::seconds(1));
    VerifyReport r;
    CHECK_THROWS_AS(detail::check_composites(t, o, r), LimitReached);
    // verify_direct reads the stop as unknown, never as a verdict
    const VerifyReport v = verify_direct(t, o);
    CHECK(v.verdict() == "unknown");
}

TEST_CASE("direct checker: a check stops the time its memory takes to give back before the deadline (1.4 s past it on rail 128 x 8)") {
    // a reduction on rail 128 x 8 in 3 pieces (6.3 million transfers, 2.8 GB resident) saw its deadline in the pass over
    // combined values and then spent 1.4 s freeing its partial buffers: a check stops once what is left of the deadline
    // is what its resident memory takes to give back (release_seconds), as RunLimits::time_up does
    const SendTable t = parse_table_json(
        R"({"format": "collsched.table/1", "topology": "ring:4", "collective": "allreduce", )"
        R"x("transfers": [{"step": 1, "from": "0", "to": "1", "msg": "a(0)"}, {"step": 2, "from": "1", "to": "2", "msg": "a(0)"}]})x", "t.json");
    const double release = release_seconds(resident_memory_recent());
    REQUIRE(release > 0.002);  // a test process holds tens of megabytes: milliseconds to give back
    VerifyOptions o;
    o.deadline = Deadline::after(release / 2 + 60);  // a minute ahead: the check runs whole
    VerifyReport whole;
    CHECK_NOTHROW(detail::check_composites(t, o, whole));
    o.deadline = Deadline::after(release / 2);  // not yet passed, but within the release time
    REQUIRE(!o.deadline.passed());
    VerifyReport r;
    CHECK_THROWS_AS(detail::check_composites(t, o, r), LimitReached);
}
