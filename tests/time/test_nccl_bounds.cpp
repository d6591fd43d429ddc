// The lower bound on NCCL's ring's time from its routes alone (verifier/time/nccl_bounds.hpp):
// never above the predicted time of the ring's table, where the table is built (a bound above a
// schedule's time is a bug), and close to it where one resource or one chain decides, so that it
// says something on the machines where the table cannot be built; and how the time objective
// states NCCL's best from timed algorithms and such bounds (exact, "at least", "not shown").
#include <doctest/doctest.h>

#include "tests/approx.hpp"

#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "runtime/timing.hpp"
#include "tests/rail_machine.hpp"
#include "tests/tools/cli_run.hpp"
#include "verifier/constructions/nccl/nccl.hpp"
#include "verifier/time/nccl_bounds.hpp"
#include "verifier/time/objective.hpp"
#include "verifier/time/objective_report.hpp"

using namespace collsched;

TEST_CASE("NCCL's ring: the bound is at most the time of its table with more pieces, one link speed, and a protocol") {
    // an independent review ran 42,000 such cases (27 machines, pieces 1 to 4, ten speed and protocol variants): none above
    for (std::string machine : {"ndv2x4", "h100rail2x8", "dgx2"}) {
        auto topo = Topology::parse(fmt::format("graph:{}", test::source(fmt::format("schedules/machines/{}.json", machine))));
        for (std::string kind : {"allreduce", "allgather"}) {
            const Collective coll = Collective::parse(kind, *topo);
            nccl::BaselineOptions two;
            two.pieces = 2;
            const nccl::Baseline ring = nccl::nccl_baseline(topo, coll, topo->default_model(), "ring", 0, two);
            const nccl::RingRoutes routes = nccl::nccl_ring_routes(*topo, coll.kind, 2);
            REQUIRE(routes.pieces == 2);
            const TimingPlan plan(ring.table);
            for (double size : {1024.0, 16.0 * 1024 * 1024, 4096.0 * 1024 * 1024})
                for (int v = 0; v < 3; ++v) {
                    TimeOptions opt;
                    opt.size = size;
                    if (v == 1) opt.uniform_unit = LinkSpeed{1e-6, 1e10};
                    if (v == 2) opt.protocol = Protocol::simple;
                    const double exact = plan.predict(opt).asynchronous;
                    const RingTimeBound b = nccl_ring_time_bound(*topo, topo->default_model(), coll.kind, routes, opt);
                    INFO(machine, " ", kind, " at ", size, " variant ", v, ": bound ", b.seconds, " (", b.argument, "), time ", exact);
                    CHECK(b.seconds <= exact);  // rounded down: not even an ulp above
                    CHECK(b.seconds >= 0.5 * exact);
                }
        }
    }
}

TEST_CASE("NCCL's ring: the bound from its routes is at most the time of its table, and near it at both ends") {
    for (std::string machine : {"h100rail2x8", "multibox2x8", "rail2x8", "dgx1", "ndv2x4", "h100rail4x8"}) {
        auto topo = Topology::parse(fmt::format("graph:{}", test::source(fmt::format("schedules/machines/{}.json", machine))));
        for (std::string kind : {"allreduce", "allgather", "reduce_scatter"}) {
            const Collective coll = Collective::parse(kind, *topo);
            const nccl::Baseline ring = nccl::nccl_baseline(topo, coll, topo->default_model(), "ring");
            const nccl::RingRoutes routes = nccl::nccl_ring_routes(*topo, coll.kind);
            CHECK(routes.pieces == ring.pieces);
            const TimingPlan plan(ring.table);
            for (double size : {64.0 * 1024, 1024.0 * 1024, 16.0 * 1024 * 1024, 1024.0 * 1024 * 1024}) {
                TimeOptions opt;
                opt.size = size;
                const double exact = plan.predict(opt).asynchronous;
                const RingTimeBound b = nccl_ring_time_bound(*topo, topo->default_model(), coll.kind, routes, opt);
                INFO(machine, " ", kind, " at ", size, ": bound ", b.seconds, " (", b.argument, "), time ", exact);
                CHECK(b.seconds > 0);
                CHECK(b.seconds <= exact * (1 + 1e-9));
                // the busiest resource decides at 1 GiB; the chain of a partial at 64 KiB (reductions)
                if (size > 1e9) CHECK(b.seconds >= 0.9 * exact);
                if (size < 1e5 && coll.kind != CollectiveKind::allgather) CHECK(b.seconds >= 0.95 * exact);
            }
        }
    }
}

TEST_CASE("NCCL's ring through rail switches that forward each copy once: the chain counts every crossing") {
    // rail 2 x 8 with its switches as routers (replicate=no): each crossing of a rail switch forwards its own
    // copy (docs/time.md, "Routers and copies"), so the allgather's chain is every leg of the ring, as the
    // reductions' is: at 64 KiB it decides, within a few percent of the table's time, and never above it
    auto topo = test::rail_routers(2);
    REQUIRE(topo->processors() < topo->nodes());
    for (std::string kind : {"allgather", "allreduce", "reduce_scatter"}) {
        const Collective coll = Collective::parse(kind, *topo);
        const nccl::Baseline ring = nccl::nccl_baseline(topo, coll, topo->default_model(), "ring");
        const nccl::RingRoutes routes = nccl::nccl_ring_routes(*topo, coll.kind);
        const TimingPlan plan(ring.table);
        for (double size : {64.0 * 1024, 16.0 * 1024 * 1024, 1024.0 * 1024 * 1024}) {
            TimeOptions opt;
            opt.size = size;
            const double exact = plan.predict(opt).asynchronous;
            const RingTimeBound b = nccl_ring_time_bound(*topo, topo->default_model(), coll.kind, routes, opt);
            INFO(kind, " at ", size, ": bound ", b.seconds, " (", b.argument, "), time ", exact);
            CHECK(b.seconds <= exact * (1 + 1e-9));
            if (size < 1e5) CHECK(b.seconds >= 0.9 * exact);
            if (size > 1e9) CHECK(b.seconds >= 0.9 * exact);
        }
    }
}

namespace {

nlohmann::json size_row(const TimeObjective& r, std::size_t i) { return nlohmann::json::parse(time_objective_report(r, {}, true))["sizes"][i]; }

}  // namespace

TEST_CASE("time objective: NCCL's best from its timed algorithms and the bounds of those without a time") {
    auto topo = Topology::parse("graph:" + test::source("schedules/machines/h100rail2x8.json"));
    const SynthInstance in{topo, topo->default_model(), Collective::parse("allreduce", *topo)};
    TimeObjectiveOptions o;
    o.sizes = {65536, 1073741824};
    o.timeout = 60;
    TimeObjective r = time_objective(in, o);
    // every NCCL algorithm is timed here: the speed-up is exact
    REQUIRE(r.nccl_unbuilt.empty());
    for (std::size_t i = 0; i < 2; ++i) {
        const auto row = size_row(r, i);
        REQUIRE(row["speedup_over_nccl"].is_number());
        CHECK(row["speedup_over_nccl_at_least"] == row["speedup_over_nccl"]);
        CHECK(row.count("nccl_without_time") == 0);
    }
    const double t0 = r.winner_seconds(0), t1 = r.winner_seconds(1), nccl1 = size_row(r, 1)["nccl_best_s"].get<double>();
    // an algorithm without a time whose bound is above collsched's time at 64 KiB and below NCCL's timed best at
    // 1 GiB, and below collsched's time there: ">= r x" at 64 KiB (if below the timed best), "not shown" at 1 GiB
    r.nccl_unbuilt.push_back({"nccl extra", "a test", {1.5 * t0, 0.5 * t1}, {"a", "b"}});
    const NcclVersus v0 = r.nccl_versus(0), v1 = r.nccl_versus(1);
    CHECK(v1.bounded == std::size_t{0});
    CHECK(!v1.exact());
    CHECK(v1.least() == collsched::test::rel(0.5 * t1));
    CHECK(v0.least() == collsched::test::rel(std::min(1.5 * t0, v0.timed_s)));
    const auto row1 = size_row(r, 1);
    CHECK(row1["nccl_best"] == "nccl extra");
    CHECK(row1["speedup_over_nccl"].is_null());
    CHECK(row1["speedup_over_nccl_at_least"].get<double>() == collsched::test::rel(0.5));
    CHECK(row1["nccl_without_time"][0]["lower_bound_s"].get<double>() == collsched::test::rel(0.5 * t1));
    const std::string text = time_objective_report(r, {}, false);
    CHECK(text.find("not shown: nccl extra not timed, its lower bound") != std::string::npos);
    CHECK(text.find("nccl extra not timed (a test); its time at 1 GiB is at least") != std::string::npos);
    if (1.5 * t0 < v0.timed_s) CHECK(text.find(fmt::format(">= {:.2f}x over nccl extra", 1.5)) != std::string::npos);
    // a bound above NCCL's timed best: the timed one stays NCCL's best, exactly
    r.nccl_unbuilt[0].lower_bound_s = {1e9, 2 * nccl1};
    CHECK(r.nccl_versus(1).exact());
    CHECK(size_row(r, 1)["speedup_over_nccl"].get<double>() == collsched::test::rel(nccl1 / t1));
    // an algorithm with neither a time nor a bound: NCCL's best is not known, no speed-up is claimed
    r.nccl_unbuilt.push_back({"nccl other", "a test"});
    CHECK_FALSE(r.nccl_versus(1).exact());
    const auto row = size_row(r, 1);
    CHECK(row["speedup_over_nccl"].is_null());
    CHECK(row["speedup_over_nccl_at_least"].is_null());
    CHECK(row["nccl_best_s"].get<double>() == collsched::test::rel(nccl1));  // the fastest known, named
    CHECK(time_objective_report(r, {}, false).find("; nccl other not timed (NCCL's best not known)") != std::string::npos);
}
