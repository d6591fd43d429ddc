// SHARP across boxes (issue 44): `collsched machine ... --sharp`, the SHARP allreduce and NCCL's
// CollNet generated (verifier/compose/nvls.hpp), checked by the direct checker, the Z3 engine and
// the simulator on small machines, found by optimize --size, and every printed bound held to the
// verified schedules' times.
#include <doctest/doctest.h>

#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "runtime/simulator.hpp"
#include "runtime/timing.hpp"
#include "tests/tools/cli_run.hpp"
#include "verifier/baselines/nccl.hpp"
#include "verifier/check/direct.hpp"
#include "verifier/check/z3_engine.hpp"
#include "verifier/compose/nvls.hpp"
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
        const std::uint32_t k = compose::nvls_pieces_for_size(8, M, 16384);
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
    for (const auto& row : nlohmann::json::parse(r.out)["sizes"]) {
        CHECK(row["time_lower_bound_s"].get<double>() <= row["predicted_time_s"].get<double>());
        CHECK(row["predicted_time_s"].get<double>() <= row["nccl_best_s"].get<double>());
    }
    const auto big = nlohmann::json::parse(r.out)["sizes"][1];
    CHECK(big["winner"].get<std::string>().rfind("sharp + nvls, ", 0) == 0);
    CHECK(big["nccl_collnet_model"].size() == 3);  // CollNet Direct, Chain, NVLS across boxes
}

}  // namespace collsched
