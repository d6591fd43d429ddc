// Lower bounds on time (verifier/time/time_bound.hpp, docs/time.md "Lower bounds on time"): at or
// below the predicted time of every verified library schedule on its machine, equal to the known
// optimum where one is known, the closed forms on symmetric machines, the consistency rule, and
// optimize --size (the fastest candidate, its bound and gap, NCCL's sizes and busbw).
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "compiler/io/table_io.hpp"
#include "compiler/lower/lower.hpp"
#include "dsl/diagnostics.hpp"
#include "runtime/executor/executor.hpp"
#include "runtime/timing.hpp"
#include "tests/tools/catalog_rows.hpp"
#include "tests/tools/cli_run.hpp"
#include "verifier/check/direct.hpp"
#include "verifier/time/time_bound.hpp"

using namespace collsched;

namespace {

bool near(double a, double b, double rel = 1e-9) { return std::abs(a - b) <= rel * std::max(std::abs(a), std::abs(b)) + 1e-15; }

SendTable compile(const std::string& text) {
    Diagnostics diags("t.sched", text);
    auto t = compile_text(text, "t.sched", CompileOptions{}, diags);
    INFO(diags.render());
    REQUIRE(t.has_value());
    return std::move(*t);
}

TimeBounds bounds_of(const SendTable& t, std::optional<LinkSpeed> link = {}) {
    auto b = time_bounds(*t.topology, t.collective, t.model, link);
    REQUIRE(b.has_value());
    return *b;
}

/// 3 GPUs on a switch that multicasts, 10 GB/s up and 20 GB/s down, and a verified table of `collective` on it under
/// multicast=routers: in step k + 1 each GPU sends chunk k of its datum up ("a" or "b" message `kind`), in step k + 2 the
/// switch copies it to the other two (64 chunks).
SendTable multicast3_table(const test::Scratch& dir, const char* collective, char kind) {
    const std::string machine = dir.file("mc3.json");
    {
        std::ofstream f(machine);
        f << R"({"processors": 3, "routers": 1, "alpha": "1 us", "switches": [{"router": "r1.0", "multicast": true}], "edges": [)";
        for (int g = 0; g < 3; ++g)
            f << (g ? "," : "") << fmt::format(R"({{"from": {0}, "to": "r1.0", "bandwidth": "10 GB/s", "one_way": true}},)"
                                               R"({{"from": "r1.0", "to": {0}, "bandwidth": "20 GB/s", "one_way": true}})", g);
        f << "]}";
    }
    const int C = 64;
    nlohmann::json t{{"format", "collsched.table/2"}, {"topology", "graph:" + machine}, {"collective", collective}, {"chunks", C},
                     {"model", {{"multicast", "routers"}, {"ports", "multi"}, {"queues", "unbounded"}, {"replicate", false}, {"timing", "hop"}}}};
    t["rounds"] = std::vector<int>(C + 1, 2);
    for (int k = 0; k < C; ++k)
        for (int g = 0; g < 3; ++g) {
            const std::string m = fmt::format("{}({},{})", kind, g, k);
            t["transfers"].push_back({{"step", k + 1}, {"from", std::to_string(g)}, {"to", "r1.0"}, {"msg", m}});
            for (int h = 0; h < 3; ++h)
                if (h != g) t["transfers"].push_back({{"step", k + 2}, {"from", "r1.0"}, {"to", std::to_string(h)}, {"msg", m}});
        }
    const std::string file = dir.file(std::string(collective) + ".json");
    std::ofstream(file) << t.dump();
    SendTable table = read_table(file);
    REQUIRE(verify_direct(table).holds());
    return table;
}

}  // namespace

TEST_CASE("time bounds: at or below every verified catalog schedule's times (up to 64 processors, 1 KiB .. 1 GiB)") {
    // a bound above a verified schedule's predicted time is a bug (in the bound or the prediction)
    std::size_t checked = 0;
    std::map<std::string, TimeBounds> cache;  // per machine and collective
    test::for_each_catalog_table(64, [&](const SendTable& t, const std::string& name) {
        if (t.model.timing != Timing::hop || !verify_direct(t).holds()) return;
        const std::string key = t.topology->spec() + "|" + t.collective.to_string() + "|" + to_string(t.model);
        if (!cache.count(key)) {
            auto b = time_bounds(*t.topology, t.collective, t.model);
            if (!b) return;
            cache.emplace(key, std::move(*b));
        }
        const TimeBounds& b = cache.at(key);
        for (double m : {1024.0, 1048576.0, 1073741824.0}) {
            const TimePrediction p = predict_time(t, TimeOptions{m, std::nullopt});
            const TimeBound at = evaluate(b, m);
            INFO(name << " at " << m << ": bound " << at.seconds << " (" << b.terms[at.best].name << ") sync " << p.synchronous << " async "
                      << p.asynchronous);
            CHECK(bound_violation(at, b, p.asynchronous, name).empty());
            CHECK(bound_violation(at, b, p.synchronous, name).empty());
            CHECK(at.seconds > 0);
            ++checked;
        }
    });
    CHECK(checked > 300);
}

TEST_CASE("time bounds: the one-step allgather on complete:8 meets the cut exactly (a known optimum)") {
    // each processor receives 7 pieces of M/8 over 7 channels of B: alpha + M/(8B), and the cut around
    // one processor proves it (7 M/8 bytes enter over 7 B, the last arrives alpha after it leaves)
    std::string text = "topology complete(8)\ncollective allgather\nstep 1 { for p in 0 .. 7 { for q in 0 .. 7 { if p != q { send p -> q msg b(p) } } } }\n";
    SendTable t = compile(text);
    REQUIRE(verify_direct(t).holds());
    const TimeBounds b = bounds_of(t);
    for (double m : {8.0 * 1024, 8.0 * 1048576}) {
        const double time = predict_time(t, TimeOptions{m, std::nullopt}).asynchronous;
        CHECK(near(time, default_alpha + m / 8 / default_unit_bandwidth));
        CHECK(near(evaluate(b, m).seconds, time));
    }
}

TEST_CASE("time bounds: Patarasuk and Yuan's 2(P-1)/P M/B per processor and the box cut, in closed form") {
    // ring:8 with one speed: each processor takes 2 channels of B in, 2(P-1)/P M / (2B) + alpha
    const LinkSpeed s{1e-6, 10e9};
    std::string text = "topology ring(8)\ncollective allreduce\n";
    auto topo = Topology::parse("ring:8");
    Collective c = Collective::parse("allreduce", *topo);
    auto b = time_bounds(*topo, c, Model{}, s);
    REQUIRE(b.has_value());
    const double M = 1 << 30;
    const TimeBound at = evaluate(*b, M);
    CHECK(at.seconds >= 2.0 * 7 / 8 * M / (2 * s.bandwidth) + s.alpha - 1e-12);
    // multibox 4 x 8: the boxes contracted, 2 (N-1)/N M over 8 NICs of 25 GB/s per box (2.7 us): 8.05 ms + 2.7 us
    auto mb = Topology::parse("graph:" + test::source("schedules/machines/multibox4x8.json"));
    auto bm = time_bounds(*mb, Collective::parse("allreduce", *mb), Model{});
    REQUIRE(bm.has_value());
    const TimeBound am = evaluate(*bm, M);
    CHECK(near(am.seconds, 2.0 * 3 / 4 * M / (8 * 25e9) + 2.7e-6, 1e-6));
    CHECK(bm->terms[am.best].name.find("boxes") != std::string::npos);
    // h100rail 4 x 8: the per-GPU form, 2 x 31/32 x M / (450 + 50 GB/s) = 4.16 ms
    auto hr = Topology::parse("graph:" + test::source("schedules/machines/h100rail4x8.json"));
    auto bh = time_bounds(*hr, Collective::parse("allreduce", *hr), Model{});
    REQUIRE(bh.has_value());
    CHECK(near(evaluate(*bh, M).seconds - 0.6e-6, 2.0 * 31 / 32 * M / 500e9, 1e-3));
}

TEST_CASE("time bounds: a bound above a predicted time is reported with both numbers") {
    SendTable t = compile("topology ring(4)\ncollective allgather\n"
                          "for s in 1 .. 3 { step s { for p in 0 .. 3 { send p -> (p + 1) % 4 msg b((p - s + 1 + 4) % 4) } } }\n");
    const TimeBounds b = bounds_of(t);
    const TimeBound at = evaluate(b, 4096);
    const double real = predict_time(t, TimeOptions{4096, std::nullopt}).asynchronous;
    CHECK(bound_violation(at, b, real, "ring").empty());
    const std::string bad = bound_violation(at, b, at.seconds / 2, "a fabricated time");
    CHECK(bad.find("above the predicted time") != std::string::npos);
    CHECK(bad.find("a fabricated time") != std::string::npos);
}

TEST_CASE("sizes: NCCL's convention, reduce_scatter's algbw not P times too high, busbw") {
    // reduce_scatter on ring:4 at M: the datum is the whole input (M), algbw = M / time (it was printed P times that);
    // allgather: M is the output, a datum M/P
    test::Scratch dir("time_sizes");
    const std::string rs = dir.file("rs.json");
    auto r = test::run("optimize --topology ring:4 --collective reduce_scatter --timeout 60 -o " + rs);
    REQUIRE(r.code == 0);
    auto v = test::run("verify " + rs + " --size 1M --json");
    REQUIRE(v.code == 0);
    auto j = nlohmann::json::parse(v.out)["time"]["sizes"][0];
    CHECK(j["datum_bytes"].get<double>() == 1048576.0);
    CHECK(near(j["algbw_Bps"].get<double>(), 1048576.0 / j["asynchronous_s"].get<double>()));
    CHECK(near(j["busbw_Bps"].get<double>(), j["algbw_Bps"].get<double>() * 3 / 4));
    const std::string ag = dir.file("ag.sched", "topology ring(4)\ncollective allgather\n"
                                                "for s in 1 .. 3 { step s { for p in 0 .. 3 { send p -> (p + 1) % 4 msg b((p - s + 1 + 4) % 4) } } }\n");
    auto g = test::run("verify " + ag + " --size 1M --json");
    REQUIRE(g.code == 0);
    auto gj = nlohmann::json::parse(g.out)["time"]["sizes"][0];
    CHECK(gj["datum_bytes"].get<double>() == 1048576.0 / 4);
    // 3 hops of M/4 at 1 us and 10 GB/s
    CHECK(near(gj["asynchronous_s"].get<double>(), 3 * (1e-6 + 1048576.0 / 4 / 10e9)));
}

TEST_CASE("optimize --size: the fastest verified schedule, its bound, gap and NCCL's best (multibox 2x8 allgather)") {
    auto r = test::run("optimize --topology graph:" + test::source("schedules/machines/multibox2x8.json") +
                       " --collective allgather --sizes 1K,1G --json --library " + test::source("schedules/catalog.json"));
    INFO(r.err);
    REQUIRE((r.code == 0 || r.code == 3));
    auto j = nlohmann::json::parse(r.out);
    for (const char* k : {"size_bytes", "predicted_time_s", "time_lower_bound_s", "time_bound"}) CHECK(j.contains(k));
    CHECK(j["time_bound"]["assumptions"].size() >= 2);
    for (const auto& row : j["sizes"]) {
        CHECK(row["time_lower_bound_s"].get<double>() <= row["predicted_time_s"].get<double>() * (1 + 1e-9));
        CHECK(near(row["busbw_Bps"].get<double>(), row["algbw_Bps"].get<double>() * 15 / 16));
        REQUIRE(!row["nccl_best"].is_null());  // the library's NCCL rings for multibox 2x8
        CHECK(row["speedup_over_nccl"].get<double>() >= 1.0 - 1e-12);
    }
    // 1 GiB (M = the output): NVLink-bound 15/16 GiB / 300 GB/s at best, NCCL's 8 rings NIC-bound at 15/128 GiB / 25 GB/s
    const auto& big = j["sizes"][1];
    CHECK(big["predicted_time_s"].get<double>() < big["nccl_best_s"].get<double>());
    CHECK(big["gap_percent"].get<double>() < 5);
    // every candidate's time at every size; the winner's is the row's time, the fastest
    for (std::size_t i = 0; i < 2; ++i) {
        double least = 1e300;
        for (const auto& c : j["candidates"]) {
            REQUIRE(c["seconds"].size() == 2);
            least = std::min(least, c["seconds"][i].get<double>());
            if (c["name"] == j["sizes"][i]["winner"]) CHECK(c["seconds"][i].get<double>() == j["sizes"][i]["predicted_time_s"].get<double>());
        }
        CHECK(least == j["sizes"][i]["predicted_time_s"].get<double>());
    }
}

TEST_CASE("optimize --size: bad combinations are refused with exit 2") {
    auto r = test::run("optimize --topology ring:4 --collective allgather --size 1M --chunks 2");
    CHECK(r.code == 2);
    CHECK(r.err.find("--size chooses") != std::string::npos);
}

TEST_CASE("plans for a size range: convert --size-range writes min and max_message_size, verify PLAN --size says why no time") {
    test::Scratch dir("time_plans");
    const std::string plan = dir.file("p.json");
    auto c = test::run("convert " + test::source("schedules/nccl/ring_allgather.sched") + " -D k=2 --format mscclpp --size-range 1M..64M -o " + plan);
    REQUIRE(c.code == 0);
    std::ifstream in(plan);
    auto j = nlohmann::json::parse(in);
    CHECK(j["min_message_size"] == 1048576);
    CHECK(j["max_message_size"] == 67108864);
    auto v = test::run("verify " + plan + " --size 16M --json");
    CHECK(v.code == 0);
    CHECK(nlohmann::json::parse(v.out)["time"]["none"].get<std::string>().find("names no machine") != std::string::npos);
    auto bad = test::run("convert " + test::source("schedules/nccl/ring_allgather.sched") + " -D k=2 --format mscclpp --size-range 64M..1M");
    CHECK(bad.code == 2);
    CHECK(bad.err.find("the low end is above the high end") != std::string::npos);
    CHECK(bad.out.empty());
}

TEST_CASE("time bounds: alltoall on the DGX-1 is bound by the cut between its two quads") {
    // {0,1,2,3} and {4,5,6,7} are joined by 0-4 (2 links), 1-5, 2-6 (2), 3-7: 150 GB/s each way for 16 messages of
    // M/8: 16/8 x 1 GiB / 150 GB/s = 14.32 ms; every channel of the machine (the hops bound) gives 8.95 ms
    auto topo = Topology::parse("graph:" + test::source("schedules/machines/dgx1.json"));
    auto b = time_bounds(*topo, Collective::parse("alltoall", *topo), topo->default_model(), std::nullopt);
    REQUIRE(b.has_value());
    const double M = 1073741824.0;
    const TimeBound at = evaluate(*b, M);
    CHECK(at.seconds >= 2 * M / 150e9);
    CHECK(b->terms[at.best].inside == std::vector<std::uint32_t>{0, 1, 2, 3});
}

TEST_CASE("time bounds with reduction in the network: the boxes' gossip holds when every reducing switch is one box's alone") {
    const double M = 1 << 30;
    // h100nvls 4 x 8: each box's NVSwitch adds and copies for its own 8 GPUs only, so between the
    // boxes the contracted gossip holds: 2 (N-1) M over the 4 boxes' NICs (8 x 50 GB/s each) =
    // 4.03 ms, above M / B_box = 2.68 ms (what was printed before), and at or below the fastest
    // verified schedule (nvls + rail rings, 4.06 ms).
    auto t = Topology::parse("graph:" + test::source("schedules/machines/h100nvls4x8.json"));
    const Model m = t->default_model();
    REQUIRE(m.combine_routers);
    auto b = time_bounds(*t, Collective::parse("allreduce", *t), m);
    REQUIRE(b.has_value());
    const TimeBound at = evaluate(*b, M);
    CHECK(b->terms[at.best].name.starts_with("gossip between sets: boxes"));
    CHECK(near(at.bandwidth_s, 2.0 * 3 * M / (4 * 400e9) + 2.7e-6, 1e-9));  // and the NIC's alpha
    CHECK(b->terms[at.best].detail.find("in-network reduction and copies only inside the sets") != std::string::npos);
    auto run = test::run("optimize --topology graph:" + test::source("schedules/machines/h100nvls4x8.json") +
                         " --collective allreduce --size 1GiB --json");
    REQUIRE(run.code == 3);  // verified, a gap left: not proved optimal
    auto j = nlohmann::json::parse(run.out);
    CHECK(j["predicted_time_s"].get<double>() >= j["time_lower_bound_s"].get<double>());
    CHECK(near(j["time_lower_bound_s"].get<double>(), at.seconds, 1e-9));
    // a switch that adds for GPUs of both boxes (SHARP joining them): the boxes' gossip does not
    // hold (the switch sums across the cut), and it is not used; the per-processor cut remains
    test::Scratch dir("innetwork_gossip");
    // two boxes of 2 GPUs (fast inside, one slow link between) and one switch on all four
    auto two_boxes = [&](const char* name, bool functions) {
        return dir.file(name, fmt::format(R"({{"processors": 4, "routers": 1,
 "link_types": {{"fast": {{"bandwidth": "100 GB/s"}}, "slow": {{"bandwidth": "10 GB/s"}}}},
 "switches": [{{"router": "r1.0", "reduce": {0}, "multicast": {0}}}],
 "edges": [[0, 1, 1, "fast"], [2, 3, 1, "fast"], [1, 2, 1, "slow"],
           [0, "r1.0", 1, "slow"], [1, "r1.0", 1, "slow"], [2, "r1.0", 1, "slow"], [3, "r1.0", 1, "slow"]]}})",
                                          functions));
    };
    auto s = Topology::parse("graph:" + two_boxes("sharp2x2.json", true));
    Model ms = s->default_model();
    ms.combine_routers = true;
    auto bs = time_bounds(*s, Collective::parse("allreduce", *s), ms);
    REQUIRE(bs.has_value());
    for (const TimeTerm& term : bs->terms) CHECK_FALSE(term.name.starts_with("gossip"));
    // and with the switch declared without functions, the gossip between the boxes is back
    const std::string plain = two_boxes("plain2x2.json", false);
    auto p = Topology::parse("graph:" + plain);
    Model mp = p->default_model();
    mp.combine_routers = true;
    mp.replicate = false;
    auto bp = time_bounds(*p, Collective::parse("allreduce", *p), mp);
    REQUIRE(bp.has_value());
    bool boxes = false;
    for (const TimeTerm& term : bp->terms) boxes = boxes || term.name.starts_with("gossip between sets: boxes");
    CHECK(boxes);
}

TEST_CASE("time bounds with reduction in the network: reduce_scatter's box cut holds with the box's switch and SHARP adding") {
    // Every byte of a block owned outside a box depends on the box's values, and a transfer carries bytes of one
    // block: (N-1)/N M leaves the box's region whatever adds where (docs/time.md, "Bounds with reduction in the
    // network"). Only the per-GPU cuts were used: 2,114 us on h100nvls 8 x 8 at 1 GiB ((P-1)/P M over a GPU's
    // 450 + 50 GB/s), below the box cut 7/8 M / (8 x 50 GB/s) = 2,348 us.
    const double M = 1 << 30;
    for (const char* name : {"h100nvls8x8", "h100sharp8x8"}) {
        CAPTURE(name);
        auto t = Topology::parse("graph:" + test::source(fmt::format("schedules/machines/{}.json", name)));
        const Model m = t->default_model();
        REQUIRE(m.combine_routers);
        auto b = time_bounds(*t, Collective::parse("reduce_scatter", *t), m);
        REQUIRE(b.has_value());
        const TimeBound at = evaluate(*b, M);
        // the box cut, or the windows on it (a value crossing into the box's region from a box-mate of its sender)
        const std::string& best = b->terms[at.best].name;
        CHECK((best == "cut around a set (in-network reduction)" || best.find("windows on a cut") == 0));
        const auto box = std::find_if(b->terms.begin(), b->terms.end(), [](const TimeTerm& x) { return x.name == "cut around a set (in-network reduction)"; });
        REQUIRE(box != b->terms.end());
        CHECK(box->seconds(M) >= 7.0 / 8 * M / (8 * 50e9) * (1 - 1e-9));
        CHECK(at.seconds >= box->seconds(M));
    }
}

TEST_CASE("time bounds with reduction in the network: at or below the fastest verified reduce_scatter on the NVLS and SHARP boxes") {
    // optimize --size asserts every bound against every verified candidate (check_bounds: a bound above one is an
    // internal error, exit 2); here on the small machines at 64K..1G, the set cuts among the terms
    for (const char* name : {"dgx_h100_nvls", "h100nvls2x8", "h100sharp2x8"}) {
        CAPTURE(name);
        auto run = test::run(fmt::format("optimize --topology graph:{} --collective reduce_scatter --size 64K..1G:16 --json",
                                         test::source(fmt::format("schedules/machines/{}.json", name))));
        REQUIRE(run.code != 2);
        auto j = nlohmann::json::parse(run.out);
        CHECK(j["predicted_time_s"].get<double>() >= j["time_lower_bound_s"].get<double>());
    }
}

TEST_CASE("time bounds: what crosses a cut into a router still goes on to a processor (SHARP's rail switches)") {
    // h100sharp 8 x 8 is h100rail 8 x 8 with the rails' InfiniBand (2.7 us) split at a rail switch that adds (1.35 us in,
    // 1.35 us out) and the boxes' switches: the box cut of reduce_scatter charged only the first hop, 1.35 us below the
    // rail machine's bound at every size (38.05 us against 39.40 us at 16 MiB). A byte that leaves the box's region
    // into the rail switch is held by no processor before its second hop; with it the bounds agree
    auto bound = [](const char* name, double M) {
        auto t = Topology::parse("graph:" + test::source(fmt::format("schedules/machines/{}.json", name)));
        auto b = time_bounds(*t, Collective::parse("reduce_scatter", *t), t->default_model());
        REQUIRE(b.has_value());
        return evaluate(*b, M).seconds;
    };
    for (double M : {double(1 << 24), double(1 << 30)}) {
        CAPTURE(M);
        const double rail = bound("h100rail8x8", M), sharp = bound("h100sharp8x8", M);
        CHECK(sharp == doctest::Approx(rail).epsilon(1e-9));
        CHECK(sharp >= 7.0 / 8 * M / (8 * 50e9) + 2.7e-6 - 1e-12);
    }
}

TEST_CASE("time bounds: allreduce's gossip on the boxes with a slow GPU's box taken processor by processor") {
    // 2 x DGX A100, GPU 0's NVLink at half: the sets {0}, ..., {7} and box 1 (9 sets) need 16 transfers a byte
    // into box 0's GPUs (7 x 300 + 150 GB/s of NVLink, 8 x 25 of NIC) or box 1 (8 x 25 of NIC): 2.65 TB/s,
    // 6.48 ms at 1 GiB, above single processors' 30 over 5.05 TB/s (6.38 ms) and the boxes' 2 over 200 GB/s
    test::Scratch dir("time_refined");
    const std::string file = dir.file("gpu_half.json");
    REQUIRE(test::run("machine dgx-a100 --boxes 2 --network switch --units gpu --slow-gpu 0:0.5 -o " + file).code == 0);
    auto topo = Topology::parse("graph:" + file);
    auto b = time_bounds(*topo, Collective::parse("allreduce", *topo), topo->default_model(), std::nullopt);
    REQUIRE(b.has_value());
    const double M = 1073741824.0;
    const TimeBound at = evaluate(*b, M);
    // the arcs at 600 ns (NVLink, 2.25 TB/s) then 2.7 us (NICs, 400 GB/s): T = 2.7 us + (16 M - 2.25 TB/s x 2.1 us) / 2.65 TB/s
    CHECK(near(at.seconds, 2.7e-6 + (16 * M - 2250e9 * 2.1e-6) / 2650e9, 1e-9));
    CHECK(b->terms[at.best].name.find("each a set") != std::string::npos);
    CHECK(b->terms[at.best].demand == 16);
    // a machine of equal parts gains nothing from it: h100rail 4 x 8 keeps the per-GPU form (test above)
    auto hr = Topology::parse("graph:" + test::source("schedules/machines/h100rail4x8.json"));
    auto bh = time_bounds(*hr, Collective::parse("allreduce", *hr), Model{});
    REQUIRE(bh.has_value());
    for (const TimeTerm& term : bh->terms) CHECK(term.name.find("each a set") == std::string::npos);
}

TEST_CASE("time bounds: allreduce's gossip on leaving arcs is left out where a switch multicasts (a bound was above a schedule)") {
    // 3 GPUs on a switch that multicasts, 10 GB/s up and 20 GB/s down: each GPU sends its contribution up once and the
    // switch copies it to the other two, who add; M / 10 GB/s up and 2 M / 20 GB/s down, 107 ms at 1 GiB. The gossip's
    // 2(N-1) = 4 departures a byte over 30 GB/s (143 ms) counted one departure per receiving set: not so where one
    // departure reaches both
    test::Scratch dir("time_multicast_gossip");
    const SendTable table = multicast3_table(dir, "allreduce", 'a');
    const double M = 1073741824.0;
    const double time = predict_time(table, TimeOptions{M, std::nullopt}).asynchronous;
    CHECK(time < 0.11);
    const TimeBound at = evaluate(bounds_of(table), M);
    CHECK(at.seconds <= time * (1 + 1e-9));
    for (const TimeTerm& term : bounds_of(table).terms) CHECK(term.name.size() > 0);  // a term's name was moved from before use
}

TEST_CASE("time bounds: reduce-scatter's and allgather's crossings between the boxes, after the NICs' latency (a NIC that only sends)") {
    // every byte needs a partial from 3 of the 4 boxes (a block's combining tree across them): 3 M enter the boxes through
    // 31 NICs (GPU 0's only sends), each 2.7 us after it left: 35.2 us at 16 MiB, where the densest cut (GPU 0's way out)
    // gave 33.3 us; allgather the same (every byte enters the 3 other boxes), and a healthy machine's 32 NICs
    test::Scratch dir("time_crossings");
    const double M = 16 * 1024.0 * 1024;
    for (const char* coll : {"reduce_scatter", "allgather"})
        for (const bool one_way : {true, false}) {
            const std::string file = dir.file(one_way ? "oneway.json" : "rail.json");
            const auto r = test::run(fmt::format("machine dgx-h100 --boxes 4 --network rail{} -o {}",
                                                 one_way ? " --one-way 0-8 --one-way 0-16 --one-way 0-24" : "", file));
            REQUIRE(r.code == 0);
            const auto topo = Topology::parse("graph:" + file);
            const auto b = time_bounds(*topo, Collective::parse(coll, *topo), topo->default_model());
            REQUIRE(b.has_value());
            const TimeBound at = evaluate(*b, M);
            const std::string name = coll;
            CAPTURE(name);
            CAPTURE(one_way);
            const auto term = std::find_if(b->terms.begin(), b->terms.end(), [](const TimeTerm& x) { return x.name.find("crossings into the sets: boxes") == 0; });
            REQUIRE(term != b->terms.end());
            // the bound: these crossings, but allgather's densest cut on the one-way machine (31/32 M into GPU 0 by NVLink)
            CHECK(at.seconds >= term->seconds(M) * (1 - 1e-9));
            // the healthy machine's bound is now the windows' (below), 0.5 us above: a box's values leave it by 7 NICs a
            // box-mate's NVLink hop after they could start
            if (one_way && name == "reduce_scatter") CHECK(near(at.seconds, term->seconds(M), 1e-9));
            CHECK(near(term->seconds(M), 2.7e-6 + 3 * M / ((one_way ? 31 : 32) * 50e9), 1e-6));
        }
}

TEST_CASE("time bounds: allgather's crossings count entries, not departures, where a switch copies (at or below a verified table)") {
    // 3 GPUs on a switch that multicasts, 10 GB/s up and 20 GB/s down: each GPU sends its datum up once and the switch
    // copies it to the other two: (M/3) / 10 GB/s up, 2 (M/3) / 20 GB/s down. The crossings' entering side (2 entries a
    // byte into 60 GB/s) meets it; a leaving side (2 departures a byte out of 30 GB/s) would be twice the table's time
    test::Scratch dir("time_multicast_crossings");
    const SendTable table = multicast3_table(dir, "allgather", 'b');
    const double M = 1073741824.0;
    const double time = predict_time(table, TimeOptions{M, std::nullopt}).asynchronous;
    const TimeBounds b = bounds_of(table);
    const TimeBound at = evaluate(b, M);
    CHECK(at.seconds <= time * (1 + 1e-9));
    CHECK(at.seconds >= 0.95 * time);  // 2 M/3 / 20 GB/s down is the table's time and the bound's
    // the switch copies: no term counts departures
    for (const TimeTerm& term : b.terms) CHECK(term.name.find("crossings out of") == std::string::npos);
    CHECK(std::any_of(b.terms.begin(), b.terms.end(), [](const TimeTerm& x) { return x.name.find("crossings into") == 0; }));
}

TEST_CASE("time bounds: windows on a cut (what crosses still has to come and go: reduce-scatter on MSCCL++'s proxy)") {
    // 4 x DGX H100, rail-only, on the mscclpp executor (Simple: NVLink at 344.8 GB/s, a NIC at 48, a port channel's
    // message 20.5 us): GPU 0's values of the 24 blocks owned in the other boxes leave it by its NVLink, whose heads
    // (box-mates) still need a NIC channel (2.7 + 20.5 us) before any owner holds them, or by its own NIC. So 3/4 M
    // leave by T - 23.8 us over NVLink and T - 2.7 us over the NIC: 53.3 us, where the densest cut gave 42.2 us
    test::Scratch dir("time_windows");
    const std::string file = dir.file("rail.json");
    REQUIRE(test::run(fmt::format("machine dgx-h100 --boxes 4 --network rail -o {}", file)).code == 0);
    const auto topo = Topology::parse("graph:" + file);
    TimeOptions speeds;
    speeds.executor = executor_costs(builtin_executor(ExecutorKind::mscclpp), Protocol::simple);
    const auto b = time_bounds(*topo, Collective::parse("reduce_scatter", *topo), topo->default_model(), speeds);
    REQUIRE(b.has_value());
    const double M = 16 * 1024.0 * 1024;
    const TimeBound at = evaluate(*b, M);
    const TimeTerm& best = b->terms[at.best];
    CHECK(best.name.find("windows on a cut into") == 0);
    const double nvlink = 450e9 * 344.8 / 450, nic = 50e9 * 0.96;
    CHECK(near(at.seconds, (24.0 / 32 * M + nvlink * 23.8e-6 + nic * 2.7e-6) / (nvlink + nic), 1e-6));
    // below every verified table's time on that executor (the launch of 2.1 us added)
    const std::string table = dir.file("rs.json");
    REQUIRE(test::run(fmt::format("compose --topology graph:{} --collective reduce_scatter --size 16M --pieces 1 --shape \"hierarchical rs+direct\" -o {}",
                                  file, table))
                .code == 0);
    const TimePrediction p = predict_time(read_table(table), [&] {
        TimeOptions o = speeds;
        o.size = M;
        return o;
    }());
    CAPTURE(p.asynchronous);
    CHECK(at.seconds + 2.1e-6 <= std::min(p.asynchronous, p.synchronous));
    // the same cut without windows (ForestColl's densest, GPU 0's way out) is 9 us lower
    const auto densest = std::find_if(b->terms.begin(), b->terms.end(), [](const TimeTerm& t) { return t.name == "cut (max flow on link speeds)"; });
    REQUIRE(densest != b->terms.end());
    CHECK(near(densest->seconds(M), (31.0 / 32 * M + nvlink * 0.6e-6 + nic * 2.7e-6) / (nvlink + nic), 1e-6));
    CHECK(at.seconds > densest->seconds(M) + 8e-6);
}
