// Switches that reduce and multicast (issue 44): the graph files' "switches", the step model's
// multicast=routers and per-router combine, the NVLS constructions (verifier/compose/nvls.hpp)
// checked by the direct checker and the simulator, and the bounds with reduction in the network
// (verifier/time/innetwork_bounds.hpp) held to the constructions.
#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>

#include "compiler/table/builder.hpp"
#include "runtime/simulator.hpp"
#include "runtime/timing.hpp"
#include "support/error.hpp"
#include "verifier/check/direct.hpp"
#include "verifier/check/z3_engine.hpp"
#include "verifier/compose/nvls.hpp"
#include "verifier/time/innetwork_bounds.hpp"

namespace collsched {

namespace {

std::shared_ptr<const Topology> graph(const std::string& rel) {
    return Topology::parse("graph:" + std::string(COLLSCHED_SOURCE_DIR) + "/" + rel);
}

/// Both witnesses agree that the table holds (the direct checker, the simulator completes).
void holds_in_both(const SendTable& t) {
    VerifyReport r = verify_direct(t);
    INFO(r.violations.empty() ? std::string() : r.violations.front().detail);
    CHECK(r.holds());
    SimReport s = simulate(t);
    INFO(s.violation ? s.violation->message : std::string());
    CHECK_FALSE(s.violation.has_value());
    CHECK(s.deliveries_done == s.deliveries_required);
}

/// Both witnesses refuse the table.
void fails_in_both(const SendTable& t) {
    CHECK_FALSE(verify_direct(t).holds());
    CHECK(simulate(t).violation.has_value());
}

}  // namespace

TEST_CASE("nvls: graph files declare switches; the efficiency scales the switch's channels") {
    auto t = graph("schedules/machines/dgx_h100_nvls.json");
    CHECK(t->processors() == 8);
    CHECK(t->routers() == 1);
    const Node sw = *t->find_node("r1.0");
    CHECK(t->can_reduce(sw));
    CHECK(t->can_multicast(sw));
    CHECK(t->switch_functions(sw).efficiency == doctest::Approx(0.85));
    CHECK(t->speed(*t->find_channel(Node{0}, sw)).bandwidth == doctest::Approx(18 * 25e9 * 0.85));
    CHECK(t->speed(*t->find_channel(sw, Node{3})).bandwidth == doctest::Approx(18 * 25e9 * 0.85));
    CHECK(t->speed(*t->find_channel(Node{0}, Node{1})).bandwidth == doctest::Approx(18 * 25e9));  // direct NVLink: no efficiency
    const Model m = t->default_model();
    CHECK(m.combine_routers);
    CHECK(m.multicast_routers);
    CHECK(to_string(m) == "timing=hop,ports=multi,queues=unbounded,replicate=no,combine=routers,multicast=routers");
    CHECK(t->to_json().find("\"switches\": [\n  {\"router\": \"r1.0\", \"reduce\": true, \"multicast\": true, \"efficiency\": 0.85}]") !=
          std::string::npos);
    CHECK(t->to_dot().find("doublecircle") != std::string::npos);
    // a file without switches: the knobs reach every router, as before
    auto plain = graph("tests/data/nvls/star4_plain.json");
    CHECK(plain->can_reduce(*plain->find_node("r1.0")));
    CHECK_FALSE(plain->default_model().combine_routers);
    // a router without functions in a file that declares some
    auto two = graph("tests/data/nvls/two_switches.json");
    CHECK(two->can_reduce(*two->find_node("r1.0")));
    CHECK_FALSE(two->can_reduce(*two->find_node("r1.1")));
    CHECK_FALSE(two->can_multicast(*two->find_node("r1.1")));
    for (std::uint32_t k : {2u, 4u, 8u, 16u}) {
        auto r = graph("schedules/machines/h100nvls" + std::to_string(k) + "x8.json");
        CHECK(r->routers() == k);
        CHECK(compose::nvls_boxes(*r).size() == k);
    }
}

TEST_CASE("nvls: bad switches are refused with the file and the entry") {
    const std::string dir = std::string(COLLSCHED_SOURCE_DIR) + "/build/nvls_bad";
    std::filesystem::create_directories(dir);
    auto bad = [&](const std::string& switches, const std::string& expect) {
        const std::string f = dir + "/g.json";
        std::ofstream(f) << R"({"processors": 2, "routers": 1, "edges": [[0, "r1.0"], [1, "r1.0"]], "switches": )" << switches << "}";
        try {
            Topology::parse("graph:" + f);
            FAIL("accepted " << switches);
        } catch (const InputError& e) {
            INFO(e.what());
            CHECK(std::string(e.what()).find(expect) != std::string::npos);
        }
    };
    bad(R"([{"router": "r1.0", "reduce": "yes"}])", "switches[0]: \"reduce\" must be true or false");
    bad(R"([{"router": "r1.0", "efficiency": 1.5}])", "switches[0]: efficiency 1.5 must be a number in (0, 1]");
    bad(R"([{"router": "r1.0", "efficiency": 0}])", "efficiency 0 must be a number in (0, 1]");
    bad(R"([{"router": 0, "reduce": true}])", "switches[0]: 0 is not a router");
    bad(R"([{"router": "r1.0"}, {"router": "r1.0"}])", "switches[1]: router r1.0 is listed twice");
    bad(R"([{"router": "r1.0", "sharp": true}])", "unknown field \"sharp\"");
    bad(R"([])", "\"switches\" must be a non-empty list");
}

TEST_CASE("nvls: the constructions hold on 4 GPUs on one reducing switch, in both witnesses") {
    auto t = graph("tests/data/nvls/star4.json");
    for (std::uint32_t k : {1u, 2u, 5u}) {
        CAPTURE(k);
        holds_in_both(compose::nvls_allreduce(t, {k}));
        holds_in_both(compose::nvls_reduce_scatter(t, {k}));
        holds_in_both(compose::nvls_allgather(t, {k}));
        compose::NvlsPlan nccl{k};
        nccl.owner_through_switch = true;
        holds_in_both(compose::nvls_allreduce(t, nccl));
    }
    SendTable ar = compose::nvls_allreduce(t, {3});
    CHECK(ar.steps() == 3 + 3);  // pieces one step apart, 4 steps each
    // Z3 does not encode the switch's functions: it refuses instead of answering for another model
    CHECK_THROWS_AS(verify_z3(ar), InputError);
}

TEST_CASE("nvls: without its functions the switch cannot run the tables, in both witnesses") {
    auto t = graph("tests/data/nvls/star4.json");
    SendTable ar = compose::nvls_allreduce(t, {2});
    SendTable no_multicast = ar;
    no_multicast.model.multicast_routers = false;  // each of the 3 departures needs its own copy
    fails_in_both(no_multicast);
    CHECK(verify_direct(no_multicast).status[static_cast<std::size_t>(Property::replication)] == Status::violated);
    SendTable no_combine = ar;
    no_combine.model.combine_routers = false;
    fails_in_both(no_combine);
    // the same table on a switch declared without functions: the knobs reach no router there
    auto plain = graph("tests/data/nvls/two_switches.json");
    TableBuilder b(plain, plain->default_model(), Collective::parse("allreduce", *plain));
    const Messages ms = b.messages();
    auto hop = [&](Step s, const char* from, const char* to, MessageId m) {
        b.hop(s, *plain->find_channel(*plain->find_node(from), *plain->find_node(to)), m);
    };
    // r1.1 (no functions) forwards b-style copies: a multicast from it is a replication violation
    hop(1, "2", "r1.1", ms.value(2));
    hop(2, "r1.1", "3", ms.value(2));
    hop(2, "r1.1", "r1.0", ms.value(2));
    SendTable x = std::move(b).finish();
    CHECK(verify_direct(x).status[static_cast<std::size_t>(Property::replication)] == Status::violated);
    CHECK(simulate(x).violation.has_value());
}

TEST_CASE("nvls: a multicast shares one copy within a step only") {
    auto t = graph("tests/data/nvls/star4.json");
    TableBuilder b(t, t->default_model(), Collective::parse("allgather", *t));
    const Messages ms = b.messages();
    auto hop = [&](Step s, std::uint32_t from, std::uint32_t to, MessageId m) {
        const Node sw = *t->find_node("r1.0");
        b.hop(s, from == 9 ? *t->find_channel(sw, Node{to}) : *t->find_channel(Node{from}, sw), m);
    };
    hop(1, 0, 9, ms.broadcast(0));
    hop(2, 9, 1, ms.broadcast(0));
    hop(2, 9, 2, ms.broadcast(0));
    hop(3, 9, 3, ms.broadcast(0));  // a later step: the copy left in step 2
    SendTable x = std::move(b).finish();
    VerifyReport r = verify_direct(x);
    CHECK(r.status[static_cast<std::size_t>(Property::replication)] == Status::violated);
    SimReport s = simulate(x);
    REQUIRE(s.violation.has_value());
    CHECK(s.violation->step == 3);
}

TEST_CASE("nvls: bounds with reduction in the network, held to the constructions") {
    // 4 GPUs on one reducing switch, 1 link each way of 10 GB/s (the built-in speed)
    auto t = graph("tests/data/nvls/star4.json");
    const double M = 1 << 30, B = 10e9;
    auto bounds = time::allreduce_innetwork_bounds(*t, M, true);
    REQUIRE(bounds.size() == 2);
    CHECK(bounds[0].assumes_in_network);
    CHECK(bounds[0].valid);
    CHECK(bounds[0].seconds == doctest::Approx(M / B));
    CHECK_FALSE(bounds[1].valid);  // Patarasuk-Yuan does not hold where the switch adds
    CHECK(bounds[1].seconds == doctest::Approx(1.5 * M / B));
    CHECK(time::allreduce_innetwork_bound(*t, M, false) == doctest::Approx(1.5 * M / B));
    // step model: each GPU sends C chunks and receives C, one per round: R >= C; the
    // construction takes C + 3 rounds for C = 4k chunks at k pieces... (P rounds per step)
    for (std::uint32_t k : {1u, 4u, 16u}) {
        CAPTURE(k);
        SendTable ar = compose::nvls_allreduce(t, {k});
        const std::uint64_t C = 4 * k;
        CHECK(ar.total_rounds() >= C);
        CHECK(ar.total_rounds() == C + 3 * 4);  // k + 3 steps of 4 rounds
        TimePrediction p = predict_time(ar, {M});
        CHECK(p.asynchronous >= bounds[0].seconds);
        // the pipeline: (k + 3) pieces' worth of M / 4k over the busiest link, plus 2 latencies
        CHECK(p.asynchronous <= (1 + 3.0 / k) * M / B + 4e-6);
    }
    // the ratio to the bound at 16 pieces: within 20 %
    TimePrediction p16 = predict_time(compose::nvls_allreduce(t, {16}), {M});
    CHECK(p16.asynchronous / bounds[0].seconds < 1.2);
}

}  // namespace collsched
