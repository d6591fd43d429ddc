// SHARP across boxes (issue 44): `collsched machine ... --sharp`, the SHARP allreduce and NCCL's
// CollNet generated (verifier/constructions/compose/nvls.hpp), checked by the direct checker, the Z3 engine and
// the simulator on small machines, found by optimize --size, and every printed bound held to the
// verified schedules' times.
#include <doctest/doctest.h>

#include "tests/approx.hpp"

#include <algorithm>
#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "runtime/simulator.hpp"
#include "runtime/timing.hpp"
#include "tests/tools/cli_run.hpp"
#include "verifier/constructions/nccl/nccl.hpp"
#include "verifier/check/direct.hpp"
#include "verifier/check/z3_engine.hpp"
#include "verifier/constructions/compose/nvls.hpp"
#include "verifier/time/innetwork_bounds.hpp"
#include "verifier/time/time_bound.hpp"

namespace collsched {

namespace {

std::shared_ptr<const Topology> sharp_machine(const std::string& rel) {
    return Topology::parse("graph:" + std::string(COLLSCHED_SOURCE_DIR) + "/" + rel);
}

/// The three witnesses agree that the table holds.
void sharp_holds_in_three(const SendTable& t, bool z3 = true) {
    VerifyReport r = verify_direct(t);
    INFO((r.violations.empty() ? std::string() : r.violations.front().detail));
    CHECK(r.holds());
    SimReport s = simulate(t);
    INFO((s.violation ? s.violation->message : std::string()));
    CHECK_FALSE(s.violation.has_value());
    CHECK(s.deliveries_done == s.deliveries_required);
    if (z3) CHECK(verify_z3(t).holds());
}

}  // namespace

TEST_CASE("sharp: the machine generator's --sharp") {
    auto none = test::run("machine dgx-h100 --sharp");
    CHECK(none.code == 2);
    CHECK(none.err.find("--sharp: a machine without --network has no switches") != std::string::npos);
    CHECK(none.out.empty());
    auto torus = test::run("machine dgx-h100 --boxes 4 --network torus:2x2 --sharp");
    CHECK(torus.code == 2);
    CHECK(torus.err.find("a torus has no switches") != std::string::npos);
    // rail, groups: after the 2 NVSwitches, 8 rail switches that reduce, joined to their NICs in the NICs' groups
    auto rail = test::run("machine dgx-h100 --nvls --sharp --boxes 2 --network rail");
    REQUIRE(rail.code == 0);
    const auto j = nlohmann::json::parse(rail.out);
    CHECK(j["routers"] == 10);
    REQUIRE(j["switches"].size() == 10);
    CHECK(j["switches"][2]["router"] == "r1.2");
    CHECK(j["switches"][2]["efficiency"] == 1);
    CHECK(j["link_types"]["sharp"]["bandwidth"] == "400 Gbit/s");
    bool in_group = false;
    for (const auto& g : j["groups"])
        if (g["name"] == "nic0.out")
            for (const auto& c : g["channels"]) in_group = in_group || c[1] == "r1.2";
    CHECK(in_group);
    // a fat tree: its leaves and spine reduce (routers), the boxes' switches too with --nvls
    auto fat = test::run("machine dgx-h100 --nvls --sharp --boxes 8 --network fat-tree");
    REQUIRE(fat.code == 0);
    const auto f = nlohmann::json::parse(fat.out);
    CHECK(f["switches"].size() == 8 + 2 + 1);  // 8 NVSwitches, 2 leaves (4 boxes each), 1 spine
}

TEST_CASE("sharp: the SHARP allreduce and NCCL's CollNet on 2 x 2 and 2 x 4: the direct checker, the Z3 engine and the simulator agree") {
    for (const char* m : {"sharp2x2", "sharp2x4"}) {
        CAPTURE(m);
        auto t = sharp_machine(std::string("tests/data/sharp/") + m + ".json");
        for (std::uint32_t k : {1u, 2u}) {
            CAPTURE(k);
            compose::SharpPlan nv{k, true, false}, theirs{k, true, true}, direct{k, false, false};
            sharp_holds_in_three(compose::sharp_allreduce(t, nv));
            sharp_holds_in_three(compose::sharp_allreduce(t, theirs));
            sharp_holds_in_three(compose::sharp_allreduce(t, direct));
            sharp_holds_in_three(compose::collnet_chain_allreduce(t, 2, direct));
        }
        // a table without one of the rail switch's sends (the total back to one head) is refused by all three
        SendTable cut = compose::sharp_allreduce(t, {1, true, false});
        const auto at_rail = std::find_if(cut.transfers.begin(), cut.transfers.end(), [&](const Transfer& x) {
            const Channel& c = t->channel(x.channel);
            return !t->is_processor(c.from) && compose::fabric_switch(*t, c.from);
        });
        REQUIRE(at_rail != cut.transfers.end());
        cut.transfers.erase(at_rail);
        CHECK_FALSE(verify_direct(cut).holds());
        CHECK(simulate(cut).violation.has_value());
        CHECK_FALSE(verify_z3(cut).holds());
        // without the switches' functions the same tables are refused
        SendTable plain = compose::sharp_allreduce(t, {1, true, false});
        plain.model.combine_routers = plain.model.multicast_routers = false;
        CHECK_FALSE(verify_direct(plain).holds());
        CHECK(simulate(plain).violation.has_value());
    }
    for (const char* m : {"sharp2x2_direct", "sharp2x4_direct"}) {  // no NVLS in the box: direct, CollNet Direct's own form
        CAPTURE(m);
        auto t = sharp_machine(std::string("tests/data/sharp/") + m + ".json");
        sharp_holds_in_three(compose::sharp_allreduce(t, {2, false, false}));
        sharp_holds_in_three(compose::collnet_chain_allreduce(t, 3, {1, false, false}));
        CHECK_THROWS_AS(compose::sharp_allreduce(t, {1, true, false}), InputError);  // no NVLS switch
    }
}

}  // namespace collsched

namespace collsched {

TEST_CASE("sharp: no bound printed on a --sharp machine exceeds a verified schedule's time") {
    // the rail switches join processors of every box and add: the gossip between the boxes
    // (2(N-1)/N M / B_box) does not hold there, and neither optimize's time bound nor the in-network
    // bounds may use it; every bound that holds stays below what SHARP does
    auto t = sharp_machine("schedules/machines/h100sharp4x8.json");
    const Collective ar = Collective::parse("allreduce", *t);
    auto tb = time_bounds(*t, ar, t->default_model());
    REQUIRE(tb.has_value());
    for (double M : {65536.0, 1048576.0, 16777216.0, 268435456.0, 1073741824.0}) {
        CAPTURE(M);
        const std::uint32_t k = std::min(64u, compose::nvls_pieces_for_size(8, M, 16384));  // at most 64: seconds, not tens
        double fastest = 1e9;
        for (const SendTable& s : {compose::sharp_allreduce(t, {k, true, false}), compose::sharp_allreduce(t, {k, false, false})}) {
            REQUIRE(verify_direct(s).holds());
            TimeOptions o;
            o.size = M;
            fastest = std::min(fastest, predict_time(s, o).asynchronous);
        }
        const TimeBound e = evaluate(*tb, M);
        CHECK(e.seconds <= fastest);
        for (const auto& b : time::allreduce_innetwork_bounds(*t, M, true)) {
            CAPTURE(b.name);
            if (b.valid) CHECK(b.seconds <= fastest);
            if (b.name.find("no reduction between boxes") != std::string::npos) CHECK_FALSE(b.valid);
        }
        if (M >= 268435456.0) {  // where bandwidth decides, SHARP beats the gossip bound that does not hold here
            const double gossip = 2.0 * 3 / 4 * M / 400e9;
            CHECK(fastest < gossip);
            CHECK(e.seconds < gossip);
        }
    }
    // optimize --size prints the same: every size's bound at or below the verified winner
    auto r = test::run("optimize --topology graph:" + test::source("schedules/machines/h100sharp4x8.json") +
                       " --collective allreduce --size 64K,1G --json");
    INFO(r.err);
    REQUIRE((r.code == 0 || r.code == 3));
    const nlohmann::json out = nlohmann::json::parse(r.out);  // held: a range-for over a temporary's member reads freed memory
    REQUIRE(out["sizes"].size() == 2);
    for (const auto& row : out["sizes"]) {
        CHECK(row["time_lower_bound_s"].get<double>() <= row["predicted_time_s"].get<double>());
        CHECK(row["predicted_time_s"].get<double>() <= row["nccl_best_s"].get<double>());
    }
    const auto big = nlohmann::json::parse(r.out)["sizes"][1];
    CHECK(big["winner"].get<std::string>().rfind("sharp + nvls, ", 0) == 0);
    CHECK(big["nccl_collnet_model"].size() == 3);  // CollNet Direct, Chain, NVLS across boxes
}

}  // namespace collsched

namespace collsched {

TEST_CASE("sharp: a fat tree's leaves and spine add across 8 boxes: the SHARP allreduce holds and stays above the bound") {
    test::Scratch dir("sharp_fat");
    auto m = test::run("machine dgx-h100 --nvls --sharp --boxes 8 --network fat-tree -o " + dir.file("ft.json"));
    REQUIRE(m.code == 0);
    auto t = Topology::parse("graph:" + dir.file("ft.json"));
    const compose::SharpShape shape = compose::sharp_shape(*t);
    CHECK(shape.boxes == 8);
    CHECK(shape.heads.size() == 8);
    CHECK(shape.nvls);
    // the tree of head i: GPU i of each box to its leaf (4 boxes a leaf), the leaves to the spine
    SendTable a = compose::sharp_allreduce(t, {2, true, false});
    VerifyReport r = verify_direct(a);
    INFO((r.violations.empty() ? std::string() : r.violations.front().detail));
    CHECK(r.holds());
    SimReport s = simulate(a);
    CHECK_FALSE(s.violation.has_value());
    // CollNet Direct needs channels between a box's GPUs; here the NVSwitch is a router
    CHECK_THROWS_AS(compose::sharp_allreduce(t, {1, false, false}), InputError);
    auto tb = time_bounds(*t, Collective::parse("allreduce", *t), t->default_model());
    REQUIRE(tb.has_value());
    const double M = 1073741824.0;
    SendTable big = compose::sharp_allreduce(t, {128, true, false});
    REQUIRE(verify_direct(big).holds());
    TimeOptions o;
    o.size = M;
    const double time = predict_time(big, o).asynchronous;
    CHECK(evaluate(*tb, M).seconds <= time);
    CHECK(time::allreduce_innetwork_bound(*t, M, true) <= time);
    CHECK(time < 2.0 * 7 / 8 * M / 400e9);  // below the boxes' gossip, which does not hold with SHARP
}

}  // namespace collsched

namespace collsched {

TEST_CASE("sharp: NCCL's CollNet model from tuning.cc by hand") {
    const nccl::System s = nccl::nccl_system(*sharp_machine("schedules/machines/h100sharp2x8.json"));
    CHECK(s.sharp);
    const double M = 1073741824.0;
    const auto models = nccl::nccl_collnet_models(s, CollectiveKind::allreduce, M);
    REQUIRE(models.size() == 3);
    // CollNet Direct: 8 heads at bwIntra 48, busBw 8 x 48 x 0.85 (Hopper), algBw half; latency 2 x (3.7 + 7 x 0.4) + 31 us
    CHECK(models[0].algorithm == "COLLNET_DIRECT");
    CHECK(models[0].channels == 8);
    CHECK(models[0].seconds == collsched::test::rel((44.0 + M / (1000 * 8 * 48 * 0.85 * 0.5)) * 1e-6));
    // CollNet Chain: the ring's 8 channels at 48, algBw half; latency 2 x 7 x 2.8 + 30 us
    CHECK(models[1].algorithm == "COLLNET_CHAIN");
    CHECK(models[1].seconds == collsched::test::rel((69.2 + M / (1000 * models[1].channels * std::min(48.0, 400.0 / models[1].channels) * 0.5)) * 1e-6));
    // NVLS across boxes: 8 channels, min(40 x 0.85 x 2 x 7/8, 48) = 48 each, algBw busBw x 16 / 30; latency 25 + 18 us
    CHECK(models[2].algorithm == "NVLS");
    CHECK(models[2].seconds == collsched::test::rel((43.0 + M / (1000 * 8 * 48 * 16.0 / 30)) * 1e-6));
    // no switch between the boxes reduces: no CollNet
    const nccl::System plain = nccl::nccl_system(*sharp_machine("schedules/machines/h100nvls2x8.json"));
    CHECK_FALSE(plain.sharp);
    CHECK(nccl::nccl_collnet_models(plain, CollectiveKind::allreduce, M).empty());
}

}  // namespace collsched
