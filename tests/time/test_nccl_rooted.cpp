// Broadcast and reduce against NCCL's ring (verifier/constructions/nccl nccl_rooted_ring_table, the time
// objective's "pipelined rings"; docs/time.md "Broadcast and reduce"): NCCL's column exists on
// every catalog machine and collsched's own constructions are never slower than it.
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <limits>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "tests/approx.hpp"
#include "tests/tools/cli_run.hpp"
#include "verifier/constructions/nccl/nccl.hpp"
#include "verifier/check/direct.hpp"

using namespace collsched;
using collsched::test::source;

namespace {

/// The catalog's machines whose name starts with one of `prefixes` (every one when empty).
std::vector<std::string> catalog_machines(const std::vector<std::string>& prefixes, bool exclude) {
    std::vector<std::string> out;
    for (const auto& e : std::filesystem::directory_iterator(source("schedules/machines"))) {
        if (e.path().extension() != ".json") continue;
        const std::string name = e.path().stem().string();
        const bool hit = std::any_of(prefixes.begin(), prefixes.end(), [&](const std::string& p) { return name.starts_with(p); });
        if (hit != exclude) out.push_back(name);
    }
    std::sort(out.begin(), out.end());
    return out;
}

/// optimize --size 64K,16M,1G on the machine: at every size NCCL's ring has a time and the fastest
/// of collsched's own candidates (not NCCL's) and the winner are at or below it.
void never_slower_than_nccl(const std::string& machine, const std::string& collective) {
    CAPTURE(machine);
    const test::Run r = test::run(fmt::format("optimize --topology graph:{} --collective {} --size 64K,16M,1G --json",
                                              source("schedules/machines/" + machine + ".json"), collective));
    REQUIRE(r.out.size() > 0);
    const auto j = nlohmann::json::parse(r.out);
    std::vector<nlohmann::json> all = j["candidates"];
    for (const auto& c : j["unchecked"]) all.push_back(c);
    for (std::size_t i = 0; i < 3; ++i) {
        CAPTURE(i);
        double own = std::numeric_limits<double>::infinity(), theirs = own;
        for (const auto& c : all) {
            const double s = c["seconds"][i].get<double>();
            (c["nccl"].get<bool>() ? theirs : own) = std::min(c["nccl"].get<bool>() ? theirs : own, s);
        }
        REQUIRE(theirs < std::numeric_limits<double>::infinity());  // NCCL's column
        CHECK(own <= theirs * (1 + 1e-9));
        CHECK(j["sizes"][i]["predicted_time_s"].get<double>() <= theirs * (1 + 1e-9));
        CHECK(j["sizes"][i]["nccl_model"].is_object());  // NCCL's own model of its ring broadcast
    }
}

}  // namespace

TEST_CASE("nccl rooted: NCCL's ring broadcast and reduce hold in the direct checker, chunks pipelined along the ring") {
    for (const char* m : {"dgx1", "h100rail2x8", "ndv2x2", "h100nvls2x8"})
        for (const char* c : {"broadcast:3", "reduce:5"}) {
            CAPTURE(m);
            CAPTURE(c);
            const auto t = Topology::parse("graph:" + source(std::string("schedules/machines/") + m + ".json"));
            const Collective coll = Collective::parse(c, *t);
            const std::vector<nccl::Baseline> bs = nccl::nccl_baselines(t, coll, t->default_model(), 1 << 30);
            REQUIRE(bs.size() == 5);  // NCCL's chunk counts 1, 4, 16, 64, 256 a channel
            CHECK(bs[0].name == "ring");
            CHECK(bs[4].name == "ring x256");
            for (const nccl::Baseline& b : bs) {
                CAPTURE(b.name);
                CHECK(verify_direct(b.table).verdict() == "holds");
                REQUIRE(b.model.has_value());
            }
            // pipelined: 256 chunks a channel take about P - 1 + 255 logical steps, not 256 (P - 1)
            CHECK(bs[4].table.steps() < 2 * (t->processors() + 256) * 3);
        }
}

TEST_CASE("nccl rooted: NCCL's model of its ring broadcast, from tuning.cc by hand") {
    // 4 A100 boxes on 8 NICs of 200 Gb/s (multibox4x8): the ring graph 8 x 24 GB/s, busBw = algBw 192
    // GB/s (nsteps = nRanks); a channel per NIC, so not the same channels: 32 steps of the tree's
    // network latency for Simple (tuning.cc:395-401), 8.4 + 32 x 14 us
    const auto t = Topology::parse("graph:" + source("schedules/machines/multibox4x8.json"));
    const nccl::System s = nccl::nccl_system(*t);
    const auto m = nccl::nccl_model_time(s, CollectiveKind::broadcast, nccl::Algorithm::ring, nccl::Protocol::simple, 1 << 30);
    REQUIRE(m.has_value());
    CHECK(*m == test::rel((8.4 + 32 * 14) * 1e-6 + double(1 << 30) / 192e9));
    // one DGX H100 box: 12 x 30 (sameChannels), one NVLink step's latency: 8.4 + 3.4 us
    const auto h = Topology::parse("graph:" + source("schedules/machines/dgx_h100_nvls.json"));
    const auto mh = nccl::nccl_model_time(nccl::nccl_system(*h), CollectiveKind::reduce, nccl::Algorithm::ring, nccl::Protocol::simple, 1 << 30);
    REQUIRE(mh.has_value());
    CHECK(*mh == test::rel((8.4 + 3.4) * 1e-6 + double(1 << 30) / 360e9));
    CHECK(!nccl::nccl_model_time(s, CollectiveKind::broadcast, nccl::Algorithm::tree, nccl::Protocol::simple, 1 << 30));
}

// Every catalog machine, split so that ctest runs them side by side (about 90 s in all on 2 cores).
TEST_CASE("nccl rooted: broadcast never slower than NCCL's ring, the small catalog machines") {
    for (const std::string& m : catalog_machines({"multibox", "rail", "h100"}, true)) never_slower_than_nccl(m, "broadcast:0");
}
TEST_CASE("nccl rooted: broadcast never slower than NCCL's ring, multibox and rail") {
    for (const std::string& m : catalog_machines({"multibox", "rail"}, false)) never_slower_than_nccl(m, "broadcast:0");
}
TEST_CASE("nccl rooted: broadcast never slower than NCCL's ring, the H100 machines") {
    for (const std::string& m : catalog_machines({"h100"}, false)) never_slower_than_nccl(m, "broadcast:0");
}
TEST_CASE("nccl rooted: reduce never slower than NCCL's ring on dgx1, h100rail2x8 and multibox4x8") {
    for (const char* m : {"dgx1", "h100rail2x8", "multibox4x8"}) never_slower_than_nccl(m, "reduce:0");
}
