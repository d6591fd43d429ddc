// NCCL's rings on a mesh box as its search builds them (verifier/constructions/nccl/nccl_search.cpp,
// docs/time.md "NCCL's rings on a mesh"), and collsched's time of them beside NCCL's own model.
#include <doctest/doctest.h>

#include <fstream>
#include <map>
#include <utility>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "runtime/executor/executor.hpp"
#include "runtime/timing.hpp"
#include "support/budget.hpp"
#include "support/error.hpp"
#include "tests/approx.hpp"
#include "tests/tools/cli_run.hpp"
#include "verifier/constructions/nccl/nccl.hpp"

using namespace collsched;
using collsched::test::source;

namespace {

std::shared_ptr<const Topology> mesh_machine(const std::string& name) {
    return Topology::parse("graph:" + source("schedules/machines/" + name + ".json"));
}

/// TE-CCL's NDv2 x 4 written without its "boxes" (in `dir`): boxes inferred from link speeds.
std::shared_ptr<const Topology> one_box_ndv2x4(const test::Scratch& dir) {
    std::ifstream in(source("schedules/teccl/ndv2x4.json"));
    nlohmann::json j = nlohmann::json::parse(in);
    j.erase("boxes");
    return Topology::parse("graph:" + dir.file("ndv2x4_one_box.json", j.dump()));
}

}  // namespace

TEST_CASE("nccl mesh: the DGX-1 rings are the ones NCCL's search finds, 6 channels at 20 GB/s") {
    const auto t = mesh_machine("dgx1");
    const nccl::System s = nccl::nccl_system(*t);
    const nccl::Graph g = nccl::nccl_ring_graph(s);
    CHECK(g.channels == 6);
    CHECK(g.bw_intra == 20.0);
    // By hand from search.cc: at 40 GB/s the double NVLinks make one ring each way (80 < totalBw
    // 120); 30 finds no more; at 20 (0.5 of 40, above .49) the replayed ring twice, its reverse
    // twice, then the single NVLinks' own cycle each way: 6 x 20 = 120 = totalBw, done; 20 < 25,
    // no duplication; pass 2 finds 6 channels at neither 30 nor 40.
    const std::vector<std::vector<std::uint32_t>> expect = {{0, 1, 3, 2, 6, 7, 5, 4}, {0, 1, 3, 2, 6, 7, 5, 4},
                                                            {0, 4, 5, 7, 6, 2, 3, 1}, {0, 4, 5, 7, 6, 2, 3, 1},
                                                            {0, 2, 1, 5, 6, 4, 7, 3}, {0, 3, 7, 4, 6, 5, 1, 2}};
    CHECK(g.rings == expect);
    // every NVLink of every GPU, each way, carries one ring at 20 GB/s
    std::map<std::pair<std::uint32_t, std::uint32_t>, int> on;
    for (const auto& r : g.rings)
        for (std::size_t i = 0; i < r.size(); ++i) ++on[{r[i], r[(i + 1) % r.size()]}];
    for (std::uint32_t c = 0; c < t->channels().size(); ++c) {
        const Channel& ch = t->channel(ChannelId{c});
        CAPTURE(idx(ch.from));
        CAPTURE(idx(ch.to));
        CHECK(on[{idx(ch.from), idx(ch.to)}] == static_cast<int>(ch.cap));
    }
    // the tables are built on them
    const nccl::RingRoutes routes = nccl::nccl_ring_routes(*t, CollectiveKind::allreduce);
    REQUIRE(routes.rings.size() == 6);
    CHECK(routes.rings[4].order == std::vector<Node>{Node{0}, Node{2}, Node{1}, Node{5}, Node{6}, Node{4}, Node{7}, Node{3}});
}

TEST_CASE("nccl mesh: amd4's rings take every xGMI link each way, and a box on a switch has no mesh") {
    const nccl::System s = nccl::nccl_system(*mesh_machine("amd4"));
    const nccl::Graph g = nccl::nccl_ring_graph(s);
    CHECK(g.channels == 4);  // 2 x 40, duplicated to 4 x 20 (ncclTopoDupChannels)
    CHECK(g.bw_intra == 20.0);
    CHECK(g.rings == std::vector<std::vector<std::uint32_t>>{{0, 1, 3, 2}, {0, 2, 3, 1}, {0, 1, 3, 2}, {0, 2, 3, 1}});
    for (const char* m : {"dgx_a100", "nvswitch8", "dgx_h100_nvls"}) {
        CAPTURE(m);
        const nccl::System sw = nccl::nccl_system(*mesh_machine(m));
        CHECK(sw.mesh_bw.empty());
        CHECK(!sw.ring_search.has_value());
    }
}

TEST_CASE("nccl mesh: a ring search that spends its step budget gives up at once (TE-CCL's NDv2 x 4 read as one box)") {
    // A box order that found no ring in its 200,000 steps returned to callers that went on
    // searching: the budget wrapped past 0 and the search ran for hours (optimize --size on
    // schedules/teccl/ndv2x4.json past --timeout 120 for 18 minutes; the ring tables poll no deadline).
    // Without its "boxes" the file reads as one box of 32 GPUs (its links between boxes are half an
    // NVLink's speed), through which no ring over the GPUs' own links exists.
    const test::Scratch dir("nccl_mesh_budget");
    const auto t = one_box_ndv2x4(dir);
    nccl::BaselineOptions o;
    o.deadline = Deadline::after(20);
    const auto t0 = Clock::now();
    CHECK_THROWS_WITH_AS(nccl::nccl_baseline(t, Collective::parse("allgather", *t), t->default_model(), "ring", 0, o),
                         doctest::Contains("no ring through the GPUs of a box"), InputError);
    CHECK(seconds_since(t0) < 10);
}

TEST_CASE("nccl mesh: NCCL's ring routes stop at their deadline (the time objective's ring bounds and pipelined rings)") {
    // optimize --size asked for NCCL's rings' routes (their lower bounds before the providers, the
    // pipelined rings of broadcast and reduce) with no deadline: the ring search's 200,000 steps
    // ran whatever --timeout said. Past the deadline it stops at its next poll.
    const test::Scratch dir("nccl_mesh_deadline");
    const auto t = one_box_ndv2x4(dir);
    const auto t0 = Clock::now();
    CHECK_THROWS_AS(nccl::nccl_ring_routes(*t, CollectiveKind::allgather, 0, Deadline::at(Clock::now())), LimitReached);
    CHECK(seconds_since(t0) < 1);
    CHECK_THROWS_AS(nccl::nccl_ring_routes(*t, CollectiveKind::allgather), InputError);  // no deadline: the search ends, no ring
}

TEST_CASE("nccl mesh: a graph file's boxes are NCCL's nodes, whatever its link speeds (TE-CCL's NDv2 x 2 and x 4)") {
    // nccl_layout inferred boxes from link speeds alone: TE-CCL's NDv2 boxes, joined by one-way
    // links of 12.5 GB/s (a quarter of no NVLink pair's 50 GB/s), read as one box of 16 or 32 GPUs.
    for (const char* name : {"ndv2x2", "ndv2x4"}) {
        CAPTURE(name);
        const auto t = Topology::parse("graph:" + source(std::string("schedules/teccl/") + name + ".json"));
        const nccl::System s = nccl::nccl_system(*t);
        CHECK(s.nodes == t->declared_boxes());
        CHECK(s.gpus_per_node == 8);
        const nccl::RingRoutes r = nccl::nccl_ring_routes(*t, CollectiveKind::allgather);  // a ring per channel, box by box
        REQUIRE(!r.rings.empty());
    }
}

TEST_CASE("nccl mesh: NCCL's ring allreduce on the DGX-1 within 15 % of NCCL's own model from 16 MiB") {
    // Before the search (6 channels on one double-NVLink ring) the generated ring took 37.6 ms at
    // 1 GiB in the ideal model against NCCL's 15.7 ms.
    const auto t = mesh_machine("dgx1");
    const Collective coll = Collective::parse("allreduce", *t);
    const nccl::Baseline ring = nccl::nccl_baseline(t, coll, t->default_model(), "ring");
    const nccl::System s = nccl::nccl_system(*t);
    const ExecutorCosts nccl_exec = executor_costs(builtin_executor(ExecutorKind::nccl), Protocol::simple);
    auto mesh_async_at = [](const SendTable& table, double size, std::optional<ExecutorCosts> e) {
        TimeOptions o{size, std::nullopt};
        o.executor = e;
        return predict_time(table, o).asynchronous;
    };
    for (double m : {16.0 * (1 << 20), 256.0 * (1 << 20), 1024.0 * (1 << 20)}) {
        CAPTURE(m);
        const auto model = nccl::nccl_best_protocol(s, CollectiveKind::allreduce, nccl::Algorithm::ring, m);
        REQUIRE(model.has_value());
        const double under_nccl = mesh_async_at(ring.table, m, nccl_exec), ideal = mesh_async_at(ring.table, m, std::nullopt);
        MESSAGE(fmt::format("{:g} MiB: NCCL's model {:.4g} us, collsched under executor nccl {:.4g} us, ideal {:.4g} us", m / (1 << 20),
                            model->seconds * 1e6, under_nccl * 1e6, ideal * 1e6));
        CHECK(std::abs(under_nccl / model->seconds - 1) <= 0.15);
        // the ideal time is the links' share: at 1 GiB 14/48 GiB a ring at 25 GB/s, 12.5 ms
        if (m == 1024.0 * (1 << 20)) CHECK(ideal == test::rel(14.0 / 48 * m / 25e9).epsilon(0.01));
    }
}
