// MSCCL++ ops over several channels (compiler/interop/export_mscclpp_fuse.cpp): port puts and waits of a step up
// to 8 channels an op, reductions that read the input chunk where it stands, one reduction per W and step; the
// plan read back and checked as the executor runs such ops (thread t on channel_ids[t], execution_kernel.hpp).
#include <doctest/doctest.h>

#include <algorithm>
#include <map>
#include <vector>
#include <string>

#include <nlohmann/json.hpp>

#include "compiler/interop/export_mscclpp.hpp"
#include "compiler/interop/export_mscclpp_moves.hpp"
#include "compiler/interop/mscclpp_check.hpp"
#include "compiler/io/table_io.hpp"
#include "tests/tools/cli_run.hpp"

using namespace collsched;
using test::run;
using json = nlohmann::ordered_json;

namespace {

/// `hierarchical rs+direct, shares by capacity` with `pieces` pieces on DGX H100 boxes with NIC 0 at half, at 1 GiB.
std::string rs_table(test::Scratch& dir, int boxes, int pieces) {
    const std::string machine = dir.file(fmt::format("m{}.json", boxes)), table = dir.file(fmt::format("t{}_{}.json", boxes, pieces));
    auto r = run(fmt::format("machine dgx-h100 --boxes {} --network rail --slow-nic 0:0.5 -o {}", boxes, machine));
    REQUIRE(r.code == 0);
    r = run(fmt::format("compose --topology graph:{} --collective reduce_scatter --size 1G --pieces {} --shape \"hierarchical rs+direct, "
                        "shares by capacity\" -o {}",
                        machine, pieces, table));
    INFO(r.err);
    REQUIRE(r.code == 0);
    return table;
}

/// The first op (gpu, block, op) of `name` on port channels with at least two channels.
std::tuple<std::size_t, std::size_t, std::size_t> find_port_op(const json& plan, std::string_view name) {
    for (std::size_t g = 0; g < plan["gpus"].size(); ++g)
        for (std::size_t t = 0; t < plan["gpus"][g]["threadblocks"].size(); ++t) {
            const json& ops = plan["gpus"][g]["threadblocks"][t]["ops"];
            for (std::size_t o = 0; o < ops.size(); ++o)
                if (ops[o]["name"] == name && ops[o].value("channel_type", "") == "port" && ops[o]["channel_ids"].size() >= 2) return {g, t, o};
        }
    FAIL("no ", name, " op on two port channels");
    return {};
}

mscclpp::PlanReport check(const json& plan) { return mscclpp::check_plan(mscclpp::read_plan(plan.dump(2), "m.json")); }

bool has(const mscclpp::PlanReport& r, std::string_view rule, std::string_view text) {
    return std::any_of(r.findings.begin(), r.findings.end(), [&](const mscclpp::Finding& f) { return f.rule == rule && f.what.find(text) != std::string::npos; });
}

}  // namespace

TEST_CASE("mscclpp export: hierarchical rs+direct in 4 pieces on 3 x 8 H100s, NIC 0 at half, fits 64 ops a block: written, verified, timed") {
    // refused before ops took several channels and reductions read the input in place ("108 thread blocks a GPU
    // ... still leave a block at least 69 ops"); MSCCL++'s own parser loads it for every rank (mscclpp_parser)
    test::Scratch dir("mscclpp_fuse");
    const SendTable t = read_table(rs_table(dir, 3, 4));
    const std::string text = table_to_mscclpp(t, {});
    const mscclpp::ReadResult read = mscclpp::read_plan(text, "rs.json");  // verified by table_to_mscclpp, and below
    REQUIRE(read.findings.empty());
    std::size_t most = 0, port_waits = 0, copies = 0;
    for (const auto& gpu : read.plan.gpus)
        for (const auto& tb : gpu.tbs) {
            most = std::max(most, tb.ops.size());
            for (const auto& op : tb.ops) {
                port_waits += op.code == mscclpp::Code::wait && op.channel_type == mscclpp::Chan::port && op.channel_ids.size() >= 2;
                copies += op.code == mscclpp::Code::copy;
            }
        }
    CHECK(most <= 64);
    CHECK(port_waits > 0);
    CHECK(copies == 0);  // every W starts as the input chunk its first reduction reads
    // timed on its machine by the plan's own run
    const std::string plan = dir.file("rs.json", text);
    auto r = run("verify " + plan + " --topology graph:" + dir.file("m3.json") + " --size 1G --executor mscclpp");
    INFO(r.out, r.err);
    CHECK(r.code == 0);
    CHECK(r.out.starts_with("verdict: holds (MSCCL++ plan"));
    CHECK(r.out.find("predicted time (docs/time.md), executor mscclpp") != std::string::npos);
    CHECK(r.out.find("  1 GiB ") != std::string::npos);
}

TEST_CASE("mscclpp export: a put and a wait over several port channels are checked channel by channel, as threads run them") {
    test::Scratch dir("mscclpp_fuse_ops");
    const SendTable t = read_table(rs_table(dir, 3, 1));
    const json plan = json::parse(table_to_mscclpp(t, {}));
    REQUIRE(check(plan).holds());
    // a pwsf on two port channels: thread t puts dst_buff[t] through channel_ids[t] and signals there
    auto [g, b, o] = find_port_op(plan, "pwsf");
    const json& put = plan["gpus"][g]["threadblocks"][b]["ops"][o];
    CHECK(put["src_buff"].size() == put["channel_ids"].size());
    CHECK(put["dst_buff"].size() == put["channel_ids"].size());
    {
        // its second channel dropped: the put of dst_buff[1] names no channel
        json m = plan;
        m["gpus"][g]["threadblocks"][b]["ops"][o]["channel_ids"].erase(1);
        CHECK(has(check(m), "structure", "needs channel 1 but lists 1 channel id"));
    }
    {
        // a wait on two port channels less its second channel: the reduction after it reads a chunk still being written
        auto [wg, wb, wo] = find_port_op(plan, "wait");
        json m = plan;
        m["gpus"][wg]["threadblocks"][wb]["ops"][wo]["channel_ids"].erase(1);
        const mscclpp::PlanReport r = check(m);
        CHECK(!r.holds());
        CHECK((r.counts_race > 0 || r.counts_deadlock > 0));
    }
    {
        // a port signal by thread 1 on the channel thread 0 of the pwsf pushes next, with no nop between: the two
        // pushes reach the proxy's FIFO in either order
        json m = plan;
        json& ops = m["gpus"][g]["threadblocks"][b]["ops"];
        const int c = put["channel_ids"][0];
        const int other = put["channel_ids"][1];
        ops.insert(ops.begin() + std::ptrdiff_t(o), json{{"name", "signal"}, {"channel_ids", {other, c}}, {"channel_type", "port"}});
        CHECK(has(check(m), "blind spot", fmt::format("thread 0 pushes into port channel")));
    }
    {
        // a flush by thread 0 of the channel thread 1 of the pwsf pushed into, with no nop between: a flush pushes a
        // TriggerSync into the channel's FIFO and waits for it (port_channel_device.hpp flush), so it may land before
        // the put and not wait for it
        json m = plan;
        json& ops = m["gpus"][g]["threadblocks"][b]["ops"];
        const int other = put["channel_ids"][1];
        ops.insert(ops.begin() + std::ptrdiff_t(o) + 1,
                   json{{"name", "flush"}, {"channel_ids", {other}}, {"dst_buff", {put["dst_buff"][1]}}, {"channel_type", "port"}});
        CHECK(has(check(m), "blind spot", fmt::format("thread 0 pushes into port channel")));
    }
    {
        // 9 channels in one op: past MAX_CHANNEL_PER_OPERATION, named at the file's line and column
        json m = plan;
        json& ids = m["gpus"][g]["threadblocks"][b]["ops"][o]["channel_ids"];
        while (ids.size() < 9) ids.push_back(ids[0]);
        const std::string text = m.dump(2);
        const mscclpp::ReadResult read = mscclpp::read_plan(text, "nine.json");
        auto f = std::find_if(read.findings.begin(), read.findings.end(), [](const mscclpp::Finding& x) { return x.rule == "limit"; });
        REQUIRE(f != read.findings.end());
        const std::string line = mscclpp::format_finding("nine.json", *f);
        CAPTURE(line);
        CHECK(line.find(fmt::format("nine.json:{}:", f->pos.line)) == 0);
        CHECK(f->pos.line > 1);
        CHECK(line.find(fmt::format("gpus[{}].threadblocks[{}].ops[{}]: has 9 channel ids; an op holds at most 8 (MAX_CHANNEL_PER_OPERATION", g, b, o)) !=
              std::string::npos);
        // the same op on the command line: exit 1, the finding at its line
        auto r = run("verify " + dir.file("nine.json", text));
        CHECK(r.code == 1);
        CHECK(r.out.find(fmt::format("nine.json:{}:{}: gpus[{}]", f->pos.line, f->pos.col, g)) != std::string::npos);
    }
}

TEST_CASE("mscclpp export: a step's port puts go 8 distinct channels an op, each channel on the thread that pushed it last") {
    auto puts = [](std::vector<int> channels) {
        std::vector<detail::PortPut> out;
        for (int c : channels) out.push_back({c, {'i', c}, {'s', c, 1, 0}});
        return out;
    };
    std::map<int, int> thread;
    auto ops = detail::fuse_port_puts("pws", puts({0, 1}), thread);
    REQUIRE(ops.size() == 1);
    CHECK(ops[0].channel_ids == std::vector<int>{0, 1});
    CHECK(ops[0].src.size() == 2);
    // channel 1 again, alone: thread 0 would push it after thread 1 did, so a nop comes first
    ops = detail::fuse_port_puts("pws", puts({1}), thread);
    REQUIRE(ops.size() == 2);
    CHECK(ops[0].name == "nop");
    CHECK(thread == std::map<int, int>{{1, 0}});
    // two puts on channel 1 and one on 0: two ops, channel 1 on thread 0 in both, no nop
    ops = detail::fuse_port_puts("pwsf", puts({0, 1, 1}), thread);
    REQUIRE(ops.size() == 2);
    CHECK(ops[0].channel_ids == std::vector<int>{1, 0});
    CHECK(ops[1].channel_ids == std::vector<int>{1});
    // 9 distinct channels: 8 and 1
    thread.clear();
    ops = detail::fuse_port_puts("pws", puts({0, 1, 2, 3, 4, 5, 6, 7, 8}), thread);
    REQUIRE(ops.size() == 2);
    CHECK(ops[0].channel_ids.size() == 8);
    CHECK(detail::distinct_groups({3, 3, 4, 3}) == std::vector<std::vector<int>>{{3, 4}, {3}, {3}});
}

TEST_CASE("mscclpp export: thread blocks dealt round-robin (G = 1) or in runs (G = K), each run's places consecutive") {
    for (int K : {1, 7, 44, 108})
        for (std::size_t n : {std::size_t{5}, std::size_t{44}, std::size_t{1000}}) {
            std::vector<int> runs;
            for (std::size_t r = 0; r < n; ++r) {
                CHECK(detail::block_of(r, n, K, 1) == int(r % std::size_t(K)));
                runs.push_back(detail::block_of(r, n, K, K));
            }
            CHECK(std::is_sorted(runs.begin(), runs.end()));  // a run is one block
            CHECK(runs.back() < K);
            std::map<int, std::size_t> size;
            for (int b : runs) ++size[b];
            CHECK(size.size() == std::min<std::size_t>(n, std::size_t(K)));  // every block has chains while there are enough
            const auto [lo, hi] = std::minmax_element(size.begin(), size.end(), [](auto& x, auto& y) { return x.second < y.second; });
            CHECK(hi->second - lo->second <= 1);
        }
    // `row` consecutive places to a block at a time (MscclppOptions::chains_a_block), within each run
    for (int K : {1, 7, 44})
        for (int row : {2, 4})
            for (std::size_t r = 0; r < 1000; ++r) {
                CHECK(detail::block_of(r, 1000, K, 1, row) == int(r / std::size_t(row) % std::size_t(K)));
                CHECK(detail::block_of(r, 1000, K, 1, row) == detail::block_of(r / std::size_t(row) * std::size_t(row), 1000, K, 1, row));
            }
}

TEST_CASE("mscclpp export: hierarchical rs+direct in 8 pieces on 3 x 8 H100s, NIC 0 at half: dealt in runs of the same steps, "
          "written, verified, timed") {
    // Round-robin, every block of a GPU is active in every step of the pipelined table, and 108 blocks still leave one
    // at least 99 ops (refused); its chains dealt in runs of the same steps (chains_by_steps, block_of) fit 44 blocks
    // a GPU at most 64 ops each. The plan's own run takes 3.26 ms at 1 GiB on executor mscclpp (the table: 2.95 ms); with
    // one connection a channel, before each block's channels had their own (docs/time.md, "Executors"), 5.09 ms.
    test::Scratch dir("mscclpp_runs");
    const SendTable t = read_table(rs_table(dir, 3, 8));
    const std::string text = table_to_mscclpp(t, {});  // read back and verified before it is returned
    const mscclpp::ReadResult read = mscclpp::read_plan(text, "rs8.json");
    REQUIRE(read.findings.empty());
    std::size_t most = 0;
    for (const auto& gpu : read.plan.gpus) {
        CHECK(gpu.tbs.size() == 44);
        for (const auto& tb : gpu.tbs) most = std::max(most, tb.ops.size());
    }
    CHECK(most <= 64);
    const std::string plan = dir.file("rs8.json", text);
    auto r = run("verify " + plan + " --topology graph:" + dir.file("m3.json") + " --size 1G --executor mscclpp --json");
    INFO(r.out, r.err);
    REQUIRE(r.code == 0);
    const json j = json::parse(r.out);
    CHECK(j["verdict"] == "holds");
    CHECK(j["time"]["executor"] == "mscclpp");
    const double s = j["time"]["sizes"][0]["asynchronous_s"].get<double>();
    CHECK(s > 3.0e-3);
    CHECK(s <= 3.4e-3);
}
