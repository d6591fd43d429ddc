// Switches that reduce and multicast (issue 44): the graph files' "switches", the step model's
// multicast=routers and per-router combine, the NVLS constructions (verifier/constructions/compose/nvls.hpp)
// checked by the direct checker and the simulator, and the bounds with reduction in the network
// (verifier/time/innetwork_bounds.hpp) held to the constructions.
#include <doctest/doctest.h>

#include "tests/approx.hpp"

#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "compiler/io/table_io.hpp"
#include "compiler/table/builder.hpp"
#include "runtime/simulator.hpp"
#include "runtime/timing.hpp"
#include "support/error.hpp"
#include "tests/tools/cli_run.hpp"
#include "verifier/check/direct.hpp"
#include "verifier/check/z3_engine.hpp"
#include "verifier/constructions/compose/nvls.hpp"
#include "verifier/time/innetwork_bounds.hpp"
#include "verifier/time/time_bound.hpp"

namespace collsched {

namespace {

std::shared_ptr<const Topology> graph(const std::string& rel) {
    return Topology::parse("graph:" + std::string(COLLSCHED_SOURCE_DIR) + "/" + rel);
}

/// Both witnesses agree that the table holds (the direct checker, the simulator completes).
void holds_in_both(const SendTable& t) {
    VerifyReport r = verify_direct(t);
    const std::string first = r.violations.empty() ? std::string() : r.violations.front().detail;
    INFO(first);
    CHECK(r.holds());
    SimReport s = simulate(t);
    const std::string why = s.violation ? s.violation->message : std::string();
    INFO(why);
    CHECK_FALSE(s.violation.has_value());
    CHECK(s.deliveries_done == s.deliveries_required);
}

TimeOptions opts(double M) {
    TimeOptions o;
    o.size = M;
    return o;
}

/// Both witnesses refuse the table.
void fails_in_both(const SendTable& t) {
    CHECK_FALSE(verify_direct(t).holds());
    CHECK(simulate(t).violation.has_value());
}

/// Adds a hop from `from` to `to` (node names: "3", "r1.0") in step `s` to `b`, on topology `t`.
void hop(TableBuilder& b, const Topology& t, Step s, const char* from, const char* to, MessageId m) {
    b.hop(s, *t.find_channel(*t.find_node(from), *t.find_node(to)), m);
}

}  // namespace

TEST_CASE("nvls: graph files declare switches, and the efficiency scales the switch's channels") {
    auto t = graph("schedules/machines/dgx_h100_nvls.json");
    CHECK(t->processors() == 8);
    CHECK(t->routers() == 1);
    const Node sw = *t->find_node("r1.0");
    CHECK(t->can_reduce(sw));
    CHECK(t->can_multicast(sw));
    CHECK(t->switch_functions(sw).efficiency == collsched::test::rel(0.85));
    CHECK(t->speed(*t->find_channel(Node{0}, sw)).bandwidth == collsched::test::rel(18 * 25e9 * 0.85));
    CHECK(t->speed(*t->find_channel(sw, Node{3})).bandwidth == collsched::test::rel(18 * 25e9 * 0.85));
    CHECK(t->speed(*t->find_channel(Node{0}, Node{1})).bandwidth == collsched::test::rel(18 * 25e9));  // direct NVLink: no efficiency
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
    // the Z3 engine encodes the switch's functions (verifier/check/z3_switch.cpp): it proves it too
    CHECK(verify_z3(ar).holds());
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
    TableBuilder b(plain, plain->default_model(), Collective::parse("allgather", *plain));
    const Messages ms = b.messages();
    // r1.1 (no functions) forwards b-style copies: a multicast from it is a replication violation
    hop(b, *plain, 1, "2", "r1.1", ms.broadcast(2));
    hop(b, *plain, 2, "r1.1", "3", ms.broadcast(2));
    hop(b, *plain, 2, "r1.1", "r1.0", ms.broadcast(2));
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
    REQUIRE(bounds.size() >= 2);  // each GPU is a box of its own here (no channel between processors)
    CHECK(bounds[0].assumes_in_network);
    CHECK(bounds[0].valid);
    CHECK(bounds[0].seconds == collsched::test::rel(M / B));
    CHECK_FALSE(bounds.back().valid);  // Patarasuk-Yuan does not hold where the switch adds
    CHECK(bounds.back().seconds == collsched::test::rel(1.5 * M / B));
    CHECK(time::allreduce_innetwork_bound(*t, M, false) == collsched::test::rel(1.5 * M / B));
    // step model: each GPU sends C chunks and receives C, one per round: R >= C; the
    // construction takes C + 3 rounds for C = 4k chunks at k pieces... (P rounds per step)
    for (std::uint32_t k : {1u, 4u, 16u}) {
        CAPTURE(k);
        SendTable ar = compose::nvls_allreduce(t, {k});
        const std::uint64_t C = 4 * k;
        CHECK(ar.total_rounds() >= C);
        CHECK(ar.total_rounds() <= C + 3 * 4);  // k + 3 steps of at most P = 4 rounds
        TimePrediction p = predict_time(ar, opts(M));
        CHECK(p.asynchronous >= bounds[0].seconds);
        CHECK(p.synchronous >= bounds[0].seconds);
        // step by step: (k + 3) pieces' worth of M / 4k over the busiest link, a latency per step
        CHECK(p.synchronous <= (1 + 3.0 / k) * M / B + (k + 3) * 1e-6);
    }
    // the ratio to the bound at 16 pieces, step by step: within 20 %
    TimePrediction p16 = predict_time(compose::nvls_allreduce(t, {16}), opts(M));
    CHECK(p16.synchronous / bounds[0].seconds < 1.2);
}

TEST_CASE("nvls: a channel into a switch that reduces or multicasts serves its transfers in program order") {
    // GPU 0 sends b(1) up in step 3 (it holds it from step 2) and its own b(0) in step 4. Ready
    // order (ASTRA-sim's link) would send b(0) first, at time 0; the GPU's program issues its
    // multimem ops in table order, so b(0) waits until b(1) has started (docs/time.md, "NVLS").
    const double M = 4.0 * (1 << 20), d = (1 << 20) / 10e9, alpha = 1e-6;  // a datum of 1 MiB at 10 GB/s, 1 us
    auto start_of_last = [&](const std::string& file) {
        auto t = graph(file);
        TableBuilder b(t, t->default_model(), Collective::parse("allgather", *t));
        const Messages ms = b.messages();
        hop(b, *t, 1, "1", "r1.0", ms.broadcast(1));
        hop(b, *t, 2, "r1.0", "0", ms.broadcast(1));
        hop(b, *t, 3, "0", "r1.0", ms.broadcast(1));
        hop(b, *t, 4, "0", "r1.0", ms.broadcast(0));
        SendTable x = std::move(b).finish();
        TimePrediction p = predict_time(x, opts(M));
        REQUIRE(p.transfers.size() == 4);
        return p.transfers[3].start;
    };
    CHECK(start_of_last("tests/data/nvls/star4.json") == collsched::test::rel(2 * (d + alpha) + d));
    // a router without declared functions forwards what it is sent: ready order, as before
    CHECK(start_of_last("tests/data/nvls/star4_plain.json") == 0.0);
}

TEST_CASE("nvls: the in-network bound reads the switch's efficiency, as the time model does") {
    // 4 GPUs whose only channels go through a switch at 0.85: B_gpu = 0.85 x 10 GB/s
    const std::string dir = std::string(COLLSCHED_SOURCE_DIR) + "/build/nvls";
    std::filesystem::create_directories(dir);
    std::ofstream(dir + "/star4_085.json") << R"({"processors": 4, "routers": 1,
 "switches": [{"router": "r1.0", "reduce": true, "multicast": true, "efficiency": 0.85}],
 "edges": [[0, "r1.0"], [1, "r1.0"], [2, "r1.0"], [3, "r1.0"]]})";
    auto t = Topology::parse("graph:" + dir + "/star4_085.json");
    const double M = 1 << 30;
    auto bounds = time::allreduce_innetwork_bounds(*t, M, true);
    REQUIRE_FALSE(bounds.empty());
    CHECK(bounds[0].seconds == collsched::test::rel(M / (0.85 * 10e9)));
    for (std::uint32_t k : {1u, 16u}) CHECK(predict_time(compose::nvls_allreduce(t, {k}), opts(M)).asynchronous >= bounds[0].seconds);
    // on a DGX H100 the GPU's direct NVLink channels run at the links' full speed, so its link
    // group (450 GB/s) and not the switch's port (0.85 x 450) limits what it can send
    auto h = graph("schedules/machines/dgx_h100_nvls.json");
    CHECK(time::allreduce_innetwork_bound(*h, M, true) == collsched::test::rel(M / 450e9));
}

TEST_CASE("nvls: one DGX H100 box, allreduce against NCCL's NVLS and the in-network bound") {
    // issue 44's mark: at 1 GiB at or below NCCL's NVLS generated for the same machine (same
    // time model), and within 10 % of the in-network bound; docs/time.md quotes these numbers.
    auto t = graph("schedules/machines/dgx_h100_nvls.json");
    const std::uint32_t period = compose::nvls_direct_period(*t);
    CHECK(period == 11);  // f = 0.908 of the pieces through the switch (nvls.hpp)
    const std::string dir = std::string(COLLSCHED_SOURCE_DIR) + "/build/nvls";
    std::filesystem::create_directories(dir);
    for (double M : {65536.0, 1048576.0, 16777216.0, 268435456.0, 1073741824.0}) {
        const std::uint32_t k = compose::nvls_pieces_for_size(8, M);
        compose::NvlsPlan ours{k, period}, pure{k}, nccl{k};
        nccl.owner_through_switch = true;
        SendTable a = compose::nvls_allreduce(t, ours), b = compose::nvls_allreduce(t, pure), c = compose::nvls_allreduce(t, nccl);
        CHECK(verify_direct(a).holds());
        CHECK(verify_direct(b).holds());
        CHECK(verify_direct(c).holds());
        const double ta = predict_time(a, opts(M)).asynchronous, tb = predict_time(b, opts(M)).asynchronous,
                     tc = predict_time(c, opts(M)).asynchronous;
        const double bound = time::allreduce_innetwork_bound(*t, M, true);
        MESSAGE(fmt::format("M = {} B, pieces {}: ours {:.4g} us (switch only {:.4g} us), NCCL's NVLS {:.4g} us, bound {:.4g} us, gap {:.1f} %",
                            M, k, ta * 1e6, tb * 1e6, tc * 1e6, bound * 1e6, 100 * (ta / bound - 1)));
        CHECK(ta <= tc);
        CHECK(tb <= tc);
        CHECK(bound <= ta);
        if (M == 1073741824.0) {
            // the switch's channels serve in program order (docs/time.md, "NVLS"): the switch-only
            // form runs at its ports' 0.85, M / (0.85 x 450 GB/s) = 2.807 ms, plus 1 % of pipeline
            // fill; in ready order it took 4.86 ms (every contribution before the first store)
            CHECK(tb <= 1.02 * M / (0.85 * 450e9));
            CHECK(tb / bound == collsched::test::rel(1.188).epsilon(0.01));
            std::ofstream(dir + "/dgx_h100_nvls_allreduce_1G.json") << table_to_json(a);
            std::ofstream(dir + "/dgx_h100_nccl_nvls_allreduce_1G.json") << table_to_json(c);
        }
    }
}

TEST_CASE("nvls: optimize --size picks the switch on one DGX H100 at 1 GiB, with NCCL's NVLS generated and modelled beside it") {
    // docs/gpu-guide.md, section 6, and docs/time.md, "NVLS against NCCL"
    auto r = test::run("optimize --topology graph:" + test::source("schedules/machines/dgx_h100_nvls.json") +
                       " --collective allreduce --size 1G --json");
    INFO(r.err);
    REQUIRE(r.code == 3);  // 18.7 % above the bound: the switch's 0.85
    const auto row = nlohmann::json::parse(r.out)["sizes"][0];
    CHECK(row["winner"].get<std::string>().rfind("nvls, ", 0) == 0);
    CHECK(row["nccl_best"].get<std::string>().rfind("nccl nvls, ", 0) == 0);
    CHECK(row["predicted_time_s"].get<double>() < row["nccl_best_s"].get<double>());
    CHECK(row["nccl_nvls_model"]["algorithm"] == "NVLS");
    CHECK(row["nccl_nvls_model"]["seconds"].get<double>() == collsched::test::rel((25 + 1073741824.0 / (1000 * 476.0 * 8 / 14)) * 1e-6));
}

TEST_CASE("nvls: collsched's NVLS tables keep to the constructions' transfer budget, NCCL's keep NCCL's pipelining") {
    // 256 pieces of "nvls + rail rings" on 4 x 8 are 573,440 transfers, past the 2^19 every construction for time keeps to
    // (on 16 x 8: 9.4 million transfers, 2.6 GB and most of two minutes of timing at five sizes, and never the fastest)
    auto r = test::run("optimize --topology graph:" + test::source("schedules/machines/h100nvls4x8.json") +
                       " --collective allreduce --size 1G --json --jobs 1");
    INFO(r.err);
    REQUIRE((r.code == 0 || r.code == 3));
    const auto j = nlohmann::json::parse(r.out);
    std::string notes;
    for (const auto& n : j["notes"]) notes += n.get<std::string>() + "\n";
    INFO(notes);
    CHECK(notes.find("nvls: pieces capped at 524288 transfers a table, as every construction for time: nvls + rail rings (256 pieces: "
                     "573440 transfers)") != std::string::npos);
    std::string names;  // the tables that hold, and those timed but not checked or left out by their bound (the notes)
    for (const auto& c : j["candidates"]) names += c["name"].get<std::string>() + "\n";
    names += notes;
    CHECK(names.find("nvls + rail rings, 234 pieces") != std::string::npos);  // the most within the budget: 2,240 transfers a piece
    CHECK(names.find("nvls + rail rings, 256 pieces") == std::string::npos);
    CHECK(names.find("nccl nvls_tree, 256 pieces") != std::string::npos);  // NCCL's baseline keeps its pieces
}

TEST_CASE("nvls: NVLS in the box, rings along the rails across boxes") {
    auto t = graph("schedules/machines/h100nvls2x8.json");
    SendTable a = compose::nvls_rail_allreduce(t, {2});
    holds_in_both(a);
    // NCCL's NVLS_TREE, the baseline across boxes: the heads on NCCL's double binary tree
    holds_in_both(compose::nvls_tree_allreduce(t, {2}));
    for (const char* m : {"h100nvls4x8", "h100nvls8x8", "h100nvls16x8"}) {  // trees of depth 2 to 4
        CAPTURE(m);
        CHECK(verify_direct(compose::nvls_tree_allreduce(graph(std::string("schedules/machines/") + m + ".json"), {1})).holds());
    }
    const double M = 1073741824.0;
    SendTable big = compose::nvls_rail_allreduce(t, {compose::nvls_pieces_for_size(8, M)});
    CHECK(verify_direct(big).holds());
    const double ta = predict_time(big, opts(M)).asynchronous;
    const auto bounds = time::allreduce_innetwork_bounds(*t, M, true);
    for (const auto& b : bounds) MESSAGE(fmt::format("{}: {:.4g} us ({}{})", b.name, b.seconds * 1e6, b.valid ? "valid" : "not valid here", ""));
    const double bound = time::allreduce_innetwork_bound(*t, M, true);
    MESSAGE(fmt::format("h100nvls2x8, 1 GiB: NVLS + rail rings {:.4g} us, bound {:.4g} us, gap {:.1f} %", ta * 1e6, bound * 1e6,
                        100 * (ta / bound - 1)));
    CHECK(bound <= ta);
    // the contracted box bound without SHARP between the boxes: 2 (N-1)/N M / (8 x 50 GB/s)
    CHECK(bound == collsched::test::rel(M / 400e9));
    // optimize's time bound has the box's cut too (a set's value of every byte leaves its region)
    auto tb = time_bounds(*t, Collective::parse("allreduce", *t), t->default_model());
    REQUIRE(tb.has_value());
    const TimeBound e = evaluate(*tb, M);
    CHECK(e.seconds >= M / 400e9);
    CHECK(e.seconds <= ta);
    CHECK(e.seconds <= predict_time(compose::nvls_tree_allreduce(t, {compose::nvls_pieces_for_size(8, M)}), opts(M)).asynchronous);
}

}  // namespace collsched


TEST_CASE("nvls: an NVLS table does not convert to MSCCL-IR, per-rank JSON or Chakra, which have no in-switch reduction (exit 2)") {
    // it said "the table breaks causality": the switch sends the sum it made of the partials it received
    const test::Scratch scratch("nvls_no_msccl");
    const std::string table = scratch.file("nvls.json");
    auto o = test::run("optimize --topology graph:" + test::source("schedules/machines/dgx_h100_nvls.json") +
                       " --collective allreduce --size 1G -o " + table);
    INFO(o.out, o.err);
    REQUIRE(o.out.find("witness: " + table + ": nvls, ") != std::string::npos);
    const struct {
        std::string format, file, want;
    } cases[] = {
        {"msccl", "nvls.xml", "MSCCL-IR has no in-switch reduction: router r1.0 sends a({1..7},0) in step 2, a value it combined from the "
                              "partials it received"},
        {"ranks", "nvls.ranks.json", "router r1.0 sends a({1..7},0) in step 2, a value it combined from the partials it received (in-switch "
                                     "reduction): endpoint transfers go from processor to processor"},
    };
    for (const auto& c : cases) {
        auto r = test::run(fmt::format("convert {} --format {} -o {}", table, c.format, scratch.file(c.file)));
        INFO(c.format, ": ", r.err);
        CHECK(r.code == 2);
        CHECK(r.err.find(c.want) != std::string::npos);
        CHECK(r.err.find("breaks causality") == std::string::npos);
        CHECK_FALSE(std::filesystem::exists(scratch.file(c.file)));
    }
}
