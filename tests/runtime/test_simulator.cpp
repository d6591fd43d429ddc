// The step-accurate simulator: the phase total exchanges take the paper's step counts, and every
// rule of the model halts the run at the right step, channel or node with the right messages.
#include <doctest/doctest.h>

#include "tests/approx.hpp"

#include <algorithm>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <tuple>
#include <string_view>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "compiler/table/builder.hpp"
#include "compiler/lower/lower.hpp"
#include "dsl/diagnostics.hpp"
#include "runtime/simulator.hpp"
#include "tests/runtime/sim_reference.hpp"

using namespace collsched;

namespace {

/// A hand-written table: hops given by node names and message names.
class Hand {
public:
    Hand(std::string_view spec, std::string_view model = "", std::string_view collective = "custom")
        : topo_(Topology::parse(spec)),
          builder_(topo_, apply_model_options(Model{}, model), Collective::parse(collective, *topo_)) {}

    Hand& hop(Step s, std::string_view from, std::string_view to, std::string_view msg) {
        builder_.hop(s, channel(from, to), message(msg));
        return *this;
    }
    Hand& require(std::string_view msg, std::string_view at) {
        builder_.require(message(msg), node(at));
        return *this;
    }
    SendTable table() { return TableBuilder(builder_).finish(); }
    SimReport run(const SimOptions& o = {}) {
        SendTable t = table();
        return simulate(t, o);
    }

    Node node(std::string_view name) const { return *topo_->find_node(name); }
    ChannelId channel(std::string_view from, std::string_view to) const { return *topo_->find_channel(node(from), node(to)); }
    MessageId message(std::string_view name) const { return *builder_.messages().parse(name); }

private:
    std::shared_ptr<const Topology> topo_;
    TableBuilder builder_;
};

bool starts_with(const std::string& s, std::string_view prefix) { return s.rfind(prefix, 0) == 0; }

}  // namespace

TEST_CASE("simulator: EBFT total exchange completes in n + 2 log n - 2 steps") {
    struct Case {
        std::uint32_t n, steps;
    };
    for (Case c : {Case{4, 6}, Case{8, 12}, Case{16, 22}, Case{64, 74}}) {
        CAPTURE(c.n);
        SendTable t = bft_phase_alltoall(Topology::parse(fmt::format("ebft:{}", c.n)));
        SimReport r = simulate(t);
        CHECK(r.status == SimStatus::completed);
        CHECK_FALSE(r.violation.has_value());
        CHECK(r.steps == c.steps);
        CHECK(r.simulated_steps == c.steps);
        CHECK(r.deliveries_required == std::uint64_t{c.n} * (c.n - 1));
        CHECK(r.deliveries_done == r.deliveries_required);
        CHECK(r.transfers_replayed == t.transfers.size());
        CHECK(r.max_high_water == 0);  // the table is built for queues=none
    }
}

TEST_CASE("simulator: EBFT n=4 total exchange in detail") {
    SendTable t = bft_phase_alltoall(Topology::parse("ebft:4"));
    SimReport r = simulate(t);
    CHECK(r.steps == 6);
    CHECK(r.deliveries_done == 12);
    CHECK(r.transfers == 40);  // 8 messages over 4 hops, 4 over 2 hops
    // Every processor receives in steps 4, 5 and 6 only: three holes each.
    CHECK(r.holes == std::vector<std::uint32_t>{3, 3, 3, 3});
    CHECK(r.total_holes == 12);
    CHECK(r.level_high_water == std::vector<std::uint32_t>{0, 0});
    // The leaf channel 0->r1.0 carries the 3 messages of processor 0 in 6 steps.
    const Topology& topo = *t.topology;
    ChannelId up = *topo.find_channel(Node{0}, *topo.find_node("r1.0"));
    CHECK(r.channel_transfers[idx(up)] == 3);
    CHECK(r.utilization(t, up) == collsched::test::rel(0.5));
}

TEST_CASE("simulator: CBFT n=8 phase total exchange takes (n^2-1)/3 + 2 log n - 1 = 26 steps") {
    SendTable t = bft_phase_alltoall(Topology::parse("cbft:8"));
    SimReport r = simulate(t);
    CHECK(r.status == SimStatus::completed);
    CHECK(r.steps == 26);
    CHECK(r.deliveries_done == 56);
    CHECK(r.deliveries_required == 56);
}

TEST_CASE("simulator: capacity violation halts at its step and channel") {
    SUBCASE("leaf channel in step 1") {
        SimReport r = Hand("ebft:4").hop(1, "0", "r1.0", "m(0,1)").hop(1, "0", "r1.0", "m(0,2)").run();
        REQUIRE(r.status == SimStatus::halted);
        CHECK(r.violation->rule == SimRule::capacity);
        CHECK(r.violation->step == 1);
        CHECK(r.violation->message == "step 1: channel 0->r1.0 carries 2 messages (m(0,1), m(0,2)) but its capacity is 1");
        CHECK(r.simulated_steps == 0);
    }
    SUBCASE("capacity 2 exceeded in step 3") {
        Hand h("ebft:4");
        h.hop(1, "0", "r1.0", "m(0,2)").hop(1, "1", "r1.0", "m(1,2)");
        h.hop(2, "0", "r1.0", "m(0,3)").hop(2, "r1.0", "r2.0", "m(0,2)");
        h.hop(3, "r1.0", "r2.0", "m(1,2)").hop(3, "r1.0", "r2.0", "m(0,3)").hop(3, "r1.0", "r2.0", "m(0,2)");
        SimReport r = h.run();
        REQUIRE(r.status == SimStatus::halted);
        CHECK(r.violation->rule == SimRule::capacity);
        CHECK(r.violation->step == 3);
        CHECK(r.violation->channel == h.channel("r1.0", "r2.0"));
        CHECK(r.violation->messages == std::vector{h.message("m(0,2)"), h.message("m(0,3)"), h.message("m(1,2)")});
        CHECK(r.simulated_steps == 2);
        CHECK(r.transfers_replayed == 4);
    }
}

TEST_CASE("simulator: inject=once halts at a second injection and at a relay") {
    SUBCASE("the source injects twice") {
        Hand h("cbft:4", "replicate=yes,queues=none,inject=once", "broadcast:0");
        SimReport r = h.hop(1, "0", "r1.0", "b(0)").hop(2, "r1.0", "1", "b(0)").hop(2, "0", "r1.0", "b(0)").run();
        REQUIRE(r.status == SimStatus::halted);
        CHECK(r.violation->rule == SimRule::replication);
        CHECK(r.violation->step == 2);
        CHECK(r.violation->node == h.node("0"));
        CHECK(r.violation->message == "step 2: processor 0 injects b(0) again on 0->r1.0 (first in step 1 on 0->r1.0); "
                                      "inject=once: each source injects its datum exactly once");
    }
    SUBCASE("another processor forwards the datum") {
        Hand h("cbft:4", "replicate=yes,queues=none,inject=once", "broadcast:0");
        SimReport r = h.hop(1, "0", "r1.0", "b(0)").hop(2, "r1.0", "1", "b(0)").hop(3, "1", "r1.0", "b(0)").run();
        REQUIRE(r.status == SimStatus::halted);
        CHECK(r.violation->rule == SimRule::replication);
        CHECK(r.violation->step == 3);
        CHECK(r.violation->node == h.node("1"));
        CHECK(r.violation->message == "step 3: 1 sends b(0) on 1->r1.0, back toward its source 0; inject=once: a datum is "
                                      "injected once and only moves away from its source");
    }
    SUBCASE("without the restriction both tables replay") {
        Hand h("cbft:4", "replicate=yes,queues=none", "broadcast:0");
        SimReport r = h.hop(1, "0", "r1.0", "b(0)").hop(2, "r1.0", "1", "b(0)").hop(3, "1", "r1.0", "b(0)").run();
        CHECK(r.status != SimStatus::halted);
    }
}

TEST_CASE("simulator: causality violation names the sender and the message") {
    SUBCASE("a router forwards in the step it receives") {
        Hand h("ebft:4");
        SimReport r = h.hop(1, "0", "r1.0", "m(0,1)").hop(1, "r1.0", "1", "m(0,1)").run();
        REQUIRE(r.status == SimStatus::halted);
        CHECK(r.violation->rule == SimRule::causality);
        CHECK(r.violation->step == 1);
        CHECK(r.violation->node == h.node("r1.0"));
        CHECK(r.violation->channel == h.channel("r1.0", "1"));
        CHECK(r.violation->message ==
              "step 1: router r1.0 sends m(0,1) on r1.0->1 but does not hold it at the end of step 0 (it receives it in step "
              "1, and what arrives in a step cannot be sent on in the same step)");
    }
    SUBCASE("a processor sends what it never has") {
        Hand h("ebft:4", "", "alltoall");
        SimReport r = h.hop(1, "0", "r1.0", "m(0,1)").hop(2, "1", "r1.0", "m(0,2)").run();
        REQUIRE(r.status == SimStatus::halted);
        CHECK(r.violation->rule == SimRule::causality);
        CHECK(r.violation->step == 2);
        CHECK(r.violation->node == h.node("1"));
        CHECK(r.violation->message ==
              "step 2: processor 1 sends m(0,2) on 1->r1.0 but does not hold it at the end of step 1 (it never receives it)");
    }
}

TEST_CASE("simulator: ports") {
    SUBCASE("single: two sends in one step") {
        auto make = [](std::string_view model) {
            Hand h("ring:4", model);
            h.hop(1, "0", "1", "m(0,1)").hop(1, "0", "3", "m(0,3)").require("m(0,1)", "1").require("m(0,3)", "3");
            return h.run();
        };
        CHECK(make("ports=multi").status == SimStatus::completed);
        SimReport r = make("ports=single");
        REQUIRE(r.status == SimStatus::halted);
        CHECK(r.violation->rule == SimRule::ports);
        CHECK(r.violation->step == 1);
        CHECK(r.violation->node == Node{0});
        CHECK(r.violation->message ==
              "step 1: processor 0 sends 2 messages (m(0,1) on 0->1, m(0,3) on 0->3) but ports=single allows one send per step");
    }
    SUBCASE("single: two receives in one step") {
        Hand h("ring:4", "ports=single");
        SimReport r = h.hop(1, "0", "1", "m(0,1)").hop(2, "1", "2", "m(1,2)").hop(2, "3", "2", "m(3,2)").run();
        REQUIRE(r.status == SimStatus::halted);
        CHECK(r.violation->rule == SimRule::ports);
        CHECK(r.violation->step == 2);
        CHECK(r.violation->node == Node{2});
        CHECK(r.violation->messages == std::vector{h.message("m(1,2)"), h.message("m(3,2)")});
    }
    SUBCASE("half duplex: a send and a receive in one step") {
        auto make = [](std::string_view model) {
            Hand h("ring:4", model);
            h.hop(1, "0", "1", "m(0,1)").hop(1, "1", "0", "m(1,0)").require("m(0,1)", "1").require("m(1,0)", "0");
            return h.run();
        };
        CHECK(make("ports=single").status == SimStatus::completed);
        SimReport r = make("ports=half");
        REQUIRE(r.status == SimStatus::halted);
        CHECK(r.violation->rule == SimRule::ports);
        CHECK(r.violation->node == Node{0});  // both break it; the lowest processor is named
        CHECK(r.violation->message ==
              "step 1: processor 0 sends 1 and receives 1 message (m(0,1) on 0->1, m(1,0) on 1->0) but ports=half allows one "
              "send or one receive per step");
    }
}

TEST_CASE("simulator: queues=none halts when a copy waits in a router") {
    auto make = [](std::string_view model, bool busy_step_2) {
        Hand h("ebft:4", model);
        h.hop(1, "0", "r1.0", "m(0,1)").hop(3, "r1.0", "1", "m(0,1)").require("m(0,1)", "1");
        if (busy_step_2) h.hop(2, "2", "r1.1", "m(2,3)").hop(3, "r1.1", "3", "m(2,3)").require("m(2,3)", "3");
        return h.run();
    };
    for (bool busy : {false, true}) {
        CAPTURE(busy);
        SimReport r = make("queues=none", busy);
        REQUIRE(r.status == SimStatus::halted);
        CHECK(r.violation->rule == SimRule::queues);
        CHECK(r.violation->step == 2);
        CHECK(r.violation->node == Node{4});  // r1.0
        CHECK(r.violation->message ==
              "step 2: m(0,1) entered router r1.0 in step 1 but does not leave it in step 2 (queues=none: a copy leaves a "
              "router in the step after it arrives)");
        CHECK(r.simulated_steps == 1);

        SimReport ok = make("queues=unbounded", busy);
        CHECK(ok.status == SimStatus::completed);
        CHECK(ok.steps == 3);
        CHECK(ok.router_high_water == std::vector<std::uint32_t>{1, 0, 0});  // r1.0, r1.1, r2.0
        CHECK(ok.level_high_water == std::vector<std::uint32_t>{1, 0});
    }
}

TEST_CASE("simulator: queues=none and a copy that enters a router in the last step") {
    auto make = [](std::string_view model) {
        Hand h("ebft:4", model);
        h.hop(1, "0", "r1.0", "m(0,1)").hop(2, "r1.0", "1", "m(0,1)").hop(2, "2", "r1.1", "m(2,3)").require("m(0,1)", "1");
        return h.run();
    };
    SimReport r = make("queues=none");
    REQUIRE(r.status == SimStatus::halted);
    CHECK(r.violation->rule == SimRule::queues);
    CHECK(r.violation->step == 3);
    CHECK(r.violation->node == Node{5});  // r1.1
    CHECK(r.violation->message ==
          "step 3: m(2,3) entered router r1.1 in step 2 but the table ends with step 2 (queues=none: a copy leaves a router "
          "in the step after it arrives)");
    CHECK(r.simulated_steps == 2);
    CHECK(r.deliveries_done == 1);
    // A bound counts boundaries 1..T-1 only, and with replicate=yes an unsent replica is dropped.
    CHECK(make("queues=0").status == SimStatus::completed);
    CHECK(make("queues=none,replicate=yes").status == SimStatus::completed);
}

TEST_CASE("simulator: an empty table") {
    SimReport none = Hand("ring:4", "", "broadcast:0").run();
    CHECK(none.status == SimStatus::incomplete);
    CHECK(none.steps == 0);
    CHECK(none.deliveries_required == 3);
    CHECK(none.missing_count == 3);
    CHECK(none.total_holes == 0);
    SimReport nothing_to_do = Hand("ring:4").run();
    CHECK(nothing_to_do.status == SimStatus::completed);
    CHECK(nothing_to_do.deliveries_required == 0);
}

TEST_CASE("simulator: a bounded queue halts at the boundary where it overflows") {
    auto make = [](std::string_view model) {
        Hand h("ebft:4", model);
        h.hop(1, "0", "r1.0", "m(0,1)").hop(2, "0", "r1.0", "m(0,2)");
        h.hop(4, "r1.0", "1", "m(0,1)").hop(4, "r1.0", "r2.0", "m(0,2)");
        h.hop(5, "r2.0", "r1.1", "m(0,2)").hop(6, "r1.1", "2", "m(0,2)");
        h.require("m(0,1)", "1").require("m(0,2)", "2");
        return h.run();
    };
    // r1.0 holds m(0,1) after step 1 and both copies after step 2 (they leave in step 4).
    SimReport r = make("queues=1");
    REQUIRE(r.status == SimStatus::halted);
    CHECK(r.violation->rule == SimRule::queues);
    CHECK(r.violation->step == 2);
    CHECK(r.violation->node == Node{4});
    CHECK(starts_with(r.violation->message,
                      "step 2: after step 2, router r1.0 has 2 copies waiting (m(0,1), m(0,2)) but queues=1 allows at most 1"));
    CHECK(r.simulated_steps == 2);
    CHECK(r.max_high_water == 2);
    CHECK(r.level_high_water == std::vector<std::uint32_t>{2, 0});

    SimReport ok = make("queues=2");
    CHECK(ok.status == SimStatus::completed);
    CHECK(ok.steps == 6);
    CHECK(ok.router_high_water == std::vector<std::uint32_t>{2, 0, 0});
    CHECK(ok.max_high_water == 2);
}

TEST_CASE("simulator: a bounded queue counts a departure without a copy, as the checker does") {
    // r1.0 receives two copies in step 1 and in step 2 sends m(0,3), which it never received.
    // After step 1: 2 arrivals - 1 departure by step 2 = 1 waiting, within queues=1; the run
    // halts on the causality violation of step 2 (it used to halt on queues after step 1).
    Hand h("ebft:4", "queues=1,replicate=no");
    h.hop(1, "0", "r1.0", "m(0,2)").hop(1, "1", "r1.0", "m(1,2)").hop(2, "r1.0", "r2.0", "m(0,3)");
    h.hop(3, "r1.0", "r2.0", "m(0,2)").hop(4, "r1.0", "r2.0", "m(1,2)");
    h.hop(3, "r2.0", "r1.1", "m(0,3)").hop(4, "r2.0", "r1.1", "m(0,2)").hop(5, "r2.0", "r1.1", "m(1,2)");
    h.hop(4, "r1.1", "3", "m(0,3)").hop(5, "r1.1", "2", "m(0,2)").hop(6, "r1.1", "2", "m(1,2)");
    SimReport r = h.run();
    REQUIRE(r.status == SimStatus::halted);
    CHECK(r.violation->rule == SimRule::causality);
    CHECK(r.violation->step == 2);
    CHECK(r.violation->node == h.node("r1.0"));
    CHECK(r.violation->channel == h.channel("r1.0", "r2.0"));
}

TEST_CASE("simulator: replication") {
    auto broadcast = [](std::string_view model) {
        Hand h("ebft:4", model, "broadcast:0");
        h.hop(1, "0", "r1.0", "b(0)");
        h.hop(2, "r1.0", "1", "b(0)").hop(2, "r1.0", "r2.0", "b(0)");
        h.hop(3, "r2.0", "r1.1", "b(0)");
        h.hop(4, "r1.1", "2", "b(0)").hop(4, "r1.1", "3", "b(0)");
        return std::pair(h, h.run());
    };
    SUBCASE("replicate=no: a router forwards one copy twice") {
        auto [h, r] = broadcast("replicate=no");
        REQUIRE(r.status == SimStatus::halted);
        CHECK(r.violation->rule == SimRule::replication);
        CHECK(r.violation->step == 2);
        CHECK(r.violation->node == h.node("r1.0"));
        CHECK(r.violation->channel == h.channel("r1.0", "r2.0"));
        CHECK(r.violation->message ==
              "step 2: router r1.0 forwards b(0) on r1.0->r2.0 but has no copy left: it received 1 copy by the end of step 1 "
              "and forwards 2 by step 2 (replicate=no: a router forwards each copy it receives exactly once)");
    }
    SUBCASE("replicate=yes: the same flood is legal") {
        auto [h, r] = broadcast("replicate=yes");
        CHECK(r.status == SimStatus::completed);
        CHECK(r.steps == 4);
        CHECK(r.deliveries_done == 3);
        CHECK(r.deliveries_required == 3);
        CHECK(r.max_high_water == 0);
    }
    SUBCASE("replicate=no: two copies received are two copies to forward, a third send is one too many") {
        Hand h("ebft:4", "replicate=no");
        h.hop(1, "0", "r1.0", "m(0,2)").hop(2, "0", "r1.0", "m(0,2)");
        h.hop(3, "r1.0", "r2.0", "m(0,2)").hop(3, "r1.0", "r2.0", "m(0,2)");  // a duplicate row: two copies
        h.hop(4, "r2.0", "r1.1", "m(0,2)").hop(4, "r2.0", "r1.1", "m(0,2)");
        h.hop(5, "r1.1", "2", "m(0,2)").hop(6, "r1.1", "2", "m(0,2)");
        h.require("m(0,2)", "2");
        SimReport ok = h.run();
        CHECK(ok.status == SimStatus::completed);
        CHECK(ok.steps == 6);
        CHECK(ok.router_high_water == std::vector<std::uint32_t>{1, 1, 0});  // r1.0 after step 1, r1.1 after step 4
        h.hop(7, "r1.1", "3", "m(0,2)");
        SimReport r = h.run();
        REQUIRE(r.status == SimStatus::halted);
        CHECK(r.violation->rule == SimRule::replication);
        CHECK(r.violation->step == 7);
        CHECK(r.violation->message.find("it received 2 copies by the end of step 6 and forwards 3 by step 7") != std::string::npos);
    }
}

TEST_CASE("simulator: an incomplete table names the missing delivery") {
    auto topo = Topology::parse("ebft:4");
    TableBuilder b(topo, Model{}, Collective{CollectiveKind::alltoall, Node{0}, {}});
    b.send_cut_through(1, Node{0}, Node{1}, b.messages().personal(0, 1));
    SendTable t = std::move(b).finish();
    SimReport r = simulate(t);
    CHECK(r.status == SimStatus::incomplete);
    CHECK(r.steps == 2);
    CHECK(r.deliveries_done == 1);
    CHECK(r.deliveries_required == 12);
    CHECK(r.missing_count == 11);
    REQUIRE(r.missing.size() == 10);
    CHECK(r.missing.front() == MissingDelivery{t.messages().personal(0, 2), Node{2}});
    REQUIRE(r.violation.has_value());
    CHECK(r.violation->rule == SimRule::completeness);
    CHECK(r.violation->message == "step 2: processor 2 does not hold m(0,2) at the end of step 2 (10 more deliveries are missing)");
}

TEST_CASE("simulator: holes are the steps in which a processor receives nothing") {
    Hand h("ring:4", "", "broadcast:0");
    h.hop(1, "0", "1", "b(0)").hop(1, "0", "3", "b(0)").hop(2, "1", "2", "b(0)");
    SimOptions o;
    o.trace = true;
    SendTable t = h.table();
    SimReport r = simulate(t, o);
    CHECK(r.status == SimStatus::completed);
    CHECK(r.deliveries_done == 3);
    CHECK(r.holes == std::vector<std::uint32_t>{2, 1, 1, 1});
    CHECK(r.total_holes == 5);
    CHECK(r.trace == std::vector<std::string>{"step 1: 0->1 b(0), 0->3 b(0)", "step 2: 1->2 b(0)"});
    CHECK(r.utilization(t, h.channel("0", "1")) == collsched::test::rel(0.5));
    CHECK(r.busiest.size() == 3);
    CHECK(r.busiest.front() == h.channel("0", "1"));
}

TEST_CASE("simulator: queue high-water mark of a flooding broadcast") {
    auto make = [](std::string_view model) {
        Hand h("ebft:4", model);
        h.hop(1, "0", "r1.0", "b(0)").hop(1, "1", "r1.0", "b(1)");
        h.hop(2, "r1.0", "0", "b(1)").hop(2, "r1.0", "1", "b(0)");
        h.hop(3, "r1.0", "r2.0", "b(0)");
        h.hop(4, "r1.0", "r2.0", "b(1)").hop(4, "r2.0", "r1.1", "b(0)");
        h.hop(5, "r2.0", "r1.1", "b(1)").hop(5, "r1.1", "2", "b(0)").hop(5, "r1.1", "3", "b(0)");
        h.hop(6, "r1.1", "2", "b(1)").hop(6, "r1.1", "3", "b(1)");
        for (const char* at : {"1", "2", "3"}) h.require("b(0)", at);
        for (const char* at : {"0", "2", "3"}) h.require("b(1)", at);
        return std::pair(h, h.run());
    };
    // r1.0 keeps b(0) until step 3 and b(1) until step 4: both wait after step 1, b(1) after step 2.
    auto [h, r] = make("replicate=yes");
    CHECK(r.status == SimStatus::completed);
    CHECK(r.steps == 6);
    CHECK(r.deliveries_done == 6);
    CHECK(r.deliveries_required == 6);
    CHECK(r.router_high_water == std::vector<std::uint32_t>{2, 0, 0});
    CHECK(r.level_high_water == std::vector<std::uint32_t>{2, 0});
    CHECK(r.max_high_water == 2);

    SimReport bounded = make("replicate=yes,queues=1").second;
    REQUIRE(bounded.status == SimStatus::halted);
    CHECK(bounded.violation->rule == SimRule::queues);
    CHECK(bounded.violation->step == 1);
    CHECK(bounded.violation->messages == std::vector{h.message("b(0)"), h.message("b(1)")});
    CHECK(starts_with(bounded.violation->message, "step 1: after step 1, router r1.0 has 2 messages waiting (b(0), b(1))"));

    SimReport none = make("replicate=yes,queues=none").second;
    REQUIRE(none.status == SimStatus::halted);
    CHECK(none.violation->rule == SimRule::queues);
    CHECK(none.violation->step == 3);
    CHECK(none.violation->channel == h.channel("r1.0", "r2.0"));
    CHECK(starts_with(none.violation->message, "step 3: router r1.0 sends b(0) on r1.0->r2.0 but b(0) did not arrive at r1.0 in step 2"));

    SimReport once = make("replicate=no").second;
    REQUIRE(once.status == SimStatus::halted);
    CHECK(once.violation->rule == SimRule::replication);
    CHECK(once.violation->step == 3);
}

TEST_CASE("simulator: wormhole rounds cross whole paths") {
    auto make = [](std::string_view model, bool with_first_hop) {
        Hand h("ebft:4", model);
        if (with_first_hop) h.hop(1, "0", "r1.0", "m(0,3)");
        h.hop(1, "r1.0", "r2.0", "m(0,3)").hop(1, "r2.0", "r1.1", "m(0,3)").hop(1, "r1.1", "3", "m(0,3)");
        h.require("m(0,3)", "3");
        return std::pair(h, h.run());
    };
    auto [h, r] = make("timing=wormhole,ts=2,tc=0.5", true);
    CHECK(r.status == SimStatus::completed);
    CHECK(r.steps == 1);
    CHECK(r.cost == collsched::test::rel(2.5));
    CHECK_FALSE(r.queues_apply);
    CHECK(make("timing=hop", true).second.violation->rule == SimRule::causality);  // hop: one channel per step

    SimReport bad = make("timing=wormhole", false).second;
    REQUIRE(bad.status == SimStatus::halted);
    CHECK(bad.violation->rule == SimRule::causality);
    CHECK(bad.violation->node == h.node("r1.0"));
    CHECK(bad.violation->message ==
          "round 1: router r1.0 sends m(0,3) on r1.0->r2.0 but neither holds it at the end of round 0 nor receives it in "
          "round 1 through a legal transfer");
    CHECK(bad.deliveries_done == 0);  // the broken round does not happen

    Hand flood("ebft:4", "timing=wormhole,replicate=no", "broadcast:0");
    flood.hop(1, "0", "r1.0", "b(0)").hop(1, "r1.0", "1", "b(0)").hop(1, "r1.0", "r2.0", "b(0)");
    SimReport once = flood.run();
    REQUIRE(once.status == SimStatus::halted);
    CHECK(once.violation->rule == SimRule::replication);
    CHECK(once.violation->channel == flood.channel("r1.0", "r2.0"));
}

TEST_CASE("simulator: wormhole, replicate=no: an extra copy is a replication violation, not causality downstream") {
    // r1.1 receives one copy of b(3) in round 1 and sends it to 2 and up to r2.0, whose worm goes
    // on to 0. The checker reports replication at r1.1; the simulator used to halt on the
    // first hop downstream that had no copy (causality at r2.0 or r1.0) when its channel came
    // first in the table.
    Hand h("ebft:4", "timing=wormhole,replicate=no", "broadcast:3");
    h.hop(1, "3", "r1.1", "b(3)").hop(1, "r1.1", "2", "b(3)").hop(1, "r1.1", "r2.0", "b(3)");
    h.hop(1, "r2.0", "r1.0", "b(3)").hop(1, "r1.0", "0", "b(3)");
    SimReport r = h.run();
    REQUIRE(r.status == SimStatus::halted);
    CHECK(r.violation->rule == SimRule::replication);
    CHECK(r.violation->step == 1);
    CHECK(r.violation->node == h.node("r1.1"));
    CHECK(r.violation->channel == h.channel("r1.1", "r2.0"));
    // (tests/verifier/test_direct.cpp checks that the direct checker reports replication at r1.1 too)
}

TEST_CASE("simulator: an unsorted table is replayed in step order") {
    Hand h("ring:4", "", "broadcast:0");
    h.hop(1, "0", "1", "b(0)").hop(1, "0", "3", "b(0)").hop(2, "1", "2", "b(0)");
    SendTable t = h.table();
    std::reverse(t.transfers.begin(), t.transfers.end());
    SimReport r = simulate(t);
    CHECK(r.status == SimStatus::completed);
    CHECK(r.steps == 2);
    CHECK(r.total_holes == 5);
}

TEST_CASE("simulator: a transfer in step 0 is bad input") {
    Hand h("ring:4");
    SendTable t = h.table();
    t.transfers.push_back({0, h.channel("0", "1"), h.message("m(0,1)")});
    CHECK_THROWS_AS(simulate(t), InputError);
}

TEST_CASE("simulator: JSON and text reports") {
    SendTable t = bft_phase_alltoall(Topology::parse("ebft:4"));
    SimReport r = simulate(t);
    auto j = nlohmann::json::parse(sim_report_to_json(r, t));
    CHECK(j["status"] == "completed");
    CHECK(j["rule"].is_null());
    CHECK(j["steps"] == 6);
    CHECK(j["transfers"] == 40);
    CHECK(j["deliveries"]["done"] == 12);
    CHECK(j["deliveries"]["required"] == 12);
    CHECK(j["halt"].is_null());
    CHECK(j["queue_high_water"]["max"] == 0);
    CHECK(j["queue_high_water"]["per_level"]["2"] == 0);
    CHECK(j["holes"]["total"] == 12);
    CHECK(j["holes"]["per_processor"].size() == 4);
    CHECK(j["channels"].size() == t.topology->channels().size());
    CHECK(j["channels"][0]["from"] == "0");
    CHECK(j["channels"][0]["utilization"] == 0.5);
    CHECK(sim_report_to_json(r, t).rfind("{\"status\": \"completed\", \"rule\": null, \"steps\": 6,", 0) == 0);

    std::string text = format_sim_report(r, t);
    CHECK(text.find("status: completed in 6 steps (40 transfers)") != std::string::npos);
    CHECK(text.find("deliveries: 12 of 12") != std::string::npos);
    CHECK(std::count(text.begin(), text.end(), '\n') <= 12);

    SimReport bad = Hand("ebft:4").hop(1, "0", "r1.0", "m(0,1)").hop(1, "0", "r1.0", "m(0,2)").run();
    SendTable bt = Hand("ebft:4").table();
    auto jb = nlohmann::json::parse(sim_report_to_json(bad, bt));
    CHECK(jb["status"] == "halted");
    CHECK(jb["rule"] == "capacity");
    CHECK(jb["halt"]["step"] == 1);
    CHECK(jb["halt"]["channel"]["from"] == "0");
    CHECK(jb["halt"]["channel"]["to"] == "r1.0");
    CHECK(jb["halt"]["messages"] == nlohmann::json::array({"m(0,1)", "m(0,2)"}));
    CHECK(format_sim_report(bad, bt).find("status: halted on rule 'capacity'") != std::string::npos);
}

// ---- a property test against a slow reference ------------------------------------------------
//
// The reference (tests/runtime/sim_reference.cpp) replays a table the obvious way with the
// conventions of simulator.hpp. Random tables made of random walks with random delays, plus some
// noise, on small topologies and under random models must get the same status, rule, step,
// deliveries, holes and queue high-water marks from both.

namespace {

using testing::RefResult;
using testing::reference;

/// A random table: a few messages walk from their origin along random channels with random
/// delays; some walks end at a processor, which then must hold the message; a little noise.
SendTable random_table(std::uint32_t seed) {
    std::mt19937 rng(seed);
    auto pick = [&](std::uint32_t n) { return static_cast<std::uint32_t>(rng() % n); };
    const char* specs[] = {"ebft:4", "cbft:8", "ring:4", "bft:8:1,2,2"};
    auto topo = Topology::parse(specs[pick(4)]);
    const char* ports[] = {"multi", "single", "half"};
    const char* queues[] = {"unbounded", "none", "0", "1", "2"};
    const bool wormhole = pick(5) == 0;
    Model model = apply_model_options(Model{}, fmt::format("ports={},queues={},replicate={},timing={}", ports[pick(3)],
                                                           queues[pick(5)], pick(2) ? "yes" : "no", wormhole ? "wormhole" : "hop"));
    TableBuilder b(topo, model, Collective{});
    const Messages ms = b.messages();
    const std::uint32_t P = topo->processors();
    const std::uint32_t walks = 1 + pick(5);
    for (std::uint32_t w = 0; w < walks; ++w) {
        const std::uint32_t src = pick(P);
        const MessageId m = pick(3) ? ms.personal(src, (src + 1 + pick(P - 1)) % P) : ms.broadcast(src);
        Node at{src};
        Step s = 1 + pick(3);
        const std::uint32_t len = 1 + pick(6);
        for (std::uint32_t k = 0; k < len; ++k) {
            auto out = topo->out_channels(at);
            ChannelId c = out[pick(static_cast<std::uint32_t>(out.size()))];
            b.hop(s, c, m);
            if (pick(8) == 0) b.hop(s, c, m);  // a duplicate copy
            at = topo->channel(c).to;
            s += wormhole ? pick(3) == 0 : pick(4) == 0 ? 2 + pick(2) : 1;
        }
        if (topo->is_processor(at) && pick(4) != 0) b.require(m, at);
        if (pick(6) == 0) b.require(m, Node{pick(P)});  // often not delivered
    }
    for (std::uint32_t k = pick(3); k > 0; --k)
        b.hop(1 + pick(8), ChannelId{pick(static_cast<std::uint32_t>(topo->channels().size()))}, ms.personal(pick(P), pick(P)));
    return std::move(b).finish();
}

}  // namespace

TEST_CASE("simulator: random tables agree with a slow reference") {
    std::map<std::string, int> seen;  // how often each outcome occurs, to show the test covers them
    for (std::uint32_t seed = 1; seed <= 5000; ++seed) {
        CAPTURE(seed);
        SendTable t = random_table(seed);
        SimReport r = simulate(t);
        RefResult ref = reference(t);
        CAPTURE(to_string(t.model));
        CAPTURE(r.violation ? r.violation->message : std::string("-"));
        REQUIRE(r.status == ref.status);
        ++seen[r.violation ? std::string(to_string(r.violation->rule)) : "completed"];
        if (t.model.timing == Timing::wormhole) ++seen["wormhole"];
        if (r.status == SimStatus::halted) {
            // Within a wormhole round a router's single copy may go either way: the run breaks in
            // that round either way, as replication or as causality further down the path.
            auto rule_class = [&](SimRule x) { return t.model.timing == Timing::wormhole && x == SimRule::replication ? SimRule::causality : x; };
            CHECK(rule_class(r.violation->rule) == rule_class(ref.rule));
            CHECK(r.violation->step == ref.step);
        }
        CHECK(r.deliveries_required == ref.required);
        CHECK(r.deliveries_done == ref.done);
        CHECK(r.holes == ref.holes);
        if (r.status != SimStatus::halted) CHECK(r.router_high_water == ref.high_water);
    }
    for (std::string outcome : {"completed", "completeness", "capacity", "ports", "queues", "replication", "causality", "wormhole"}) {
        CAPTURE(outcome);
        CHECK(seen[outcome] >= 20);
    }
}

TEST_CASE("simulator: an ideal fat tree halts at the step and channel where a round exceeds w(k)") {
    // Bilardi et al., sec. 2: "If capacity is exceeded, the system halts." On ideal:8 with
    // w(n) = log2(n) + 1 the channel above a subtree of 4 leaves carries 3 messages per step.
    // Sends in step 1 from leaves of the left half to the right half cross r2.0->r3.0 in step 3
    // (cut-through: hop k in step k): three fit, four halt there.
    auto run = [](int senders) {
        std::string text = "topology ideal(8, w = log2(n) + 1)\ncollective custom\nstep 1 {\n";
        for (int k = 0; k < senders; ++k) text += fmt::format("  send {} -> {}\n", k, k + 4);
        Diagnostics diags;
        auto t = compile_text(text + "}\n", "ideal.sched", {}, diags);
        REQUIRE_MESSAGE(t, diags.render());
        return std::pair{simulate(*t), *t};
    };
    auto [fits, fits_table] = run(3);
    CHECK(fits.status == SimStatus::completed);
    CHECK(fits.steps == 6);

    auto [over, table] = run(4);
    REQUIRE(over.status == SimStatus::halted);
    CHECK(over.violation->rule == SimRule::capacity);
    CHECK(over.violation->step == 3);
    const Topology& topo = *table.topology;
    CHECK(over.violation->channel == topo.find_channel(*topo.find_node("r2.0"), *topo.find_node("r3.0")));
    CHECK(over.violation->message == "step 3: channel r2.0->r3.0 carries 4 messages (b(0), b(1), b(2), b(3)) but its capacity is 3");
    CHECK(over.simulated_steps == 2);
    // Below the root the two-leaf channels (capacity 2) carry 2 each in step 2: no halt there.
    CHECK(over.transfers_replayed == 8);
}

TEST_CASE("simulator: a built allreduce table whose transfers carry no composite is replayed, not an assertion") {
    // TableBuilder::finish interned the goals a(0..p) only when the table already had composites;
    // an allreduce whose transfers move only original values (here none at all) reached the
    // simulator without them and stopped at an assertion (runtime/sim_finish.cpp).
    for (std::string_view coll : {"allreduce", "reduce:0", "scan"}) {
        CAPTURE(coll);
        Hand h("ring:3", "", coll);
        h.hop(1, "0", "1", "a(0)");
        SimReport r = h.run();
        CHECK(r.status != SimStatus::completed);
        CHECK(r.steps == 1);
        CHECK(r.missing_count > 0);
    }
}
