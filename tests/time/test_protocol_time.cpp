// The declared protocol in the predicted time (issue 45, item 4; docs/time.md, "Protocols"): an
// MSCCL++ plan on --topology and an MSCCL-IR program, each written Simple, LL and LL128 from the
// same ring, against the documented formula and against each other.
#include <doctest/doctest.h>

#include <cmath>
#include <fstream>
#include <map>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "compiler/interop/mscclpp_check.hpp"
#include "compiler/io/table_io.hpp"
#include "tests/tools/cli_run.hpp"
#include "verifier/check/direct.hpp"

using namespace collsched;

namespace {

const std::string ring = "schedules/nccl/ring_allgather_dgx_a100.sched";  // 8 GPUs, 7 steps, one chunk a datum
std::string dgx() { return "graph:" + test::source("schedules/machines/dgx_a100.json"); }

/// The asynchronous time at each size of `verify FILE ... --json`.
std::map<double, double> times(const std::string& args) {
    auto v = test::run("verify " + args + " --size 1K,256M --json");
    INFO(args, "\n", v.out, v.err);
    REQUIRE(v.code == 0);
    const auto j = nlohmann::json::parse(v.out);
    REQUIRE(j["time"].contains("sizes"));
    std::map<double, double> out;
    for (const auto& s : j["time"]["sizes"]) out[s["size"].get<double>()] = s["asynchronous_s"].get<double>();
    return out;
}

bool near_relative(double a, double b) { return std::abs(a - b) <= 1e-9 * std::max(std::abs(a), std::abs(b)); }

/// docs/time.md, "Protocols": the ring allgather of 7 steps on 300 GB/s NVLink with alpha 0.6 us,
/// each step one datum M/8: 7 (0.6 us + extra + wire (M/8) / 300 GB/s).
double formula(double size, double wire, double extra) { return 7 * (0.6e-6 + extra + wire * (size / 8) / 300e9); }

}  // namespace

TEST_CASE("protocols: an MSCCL++ plan's time on its machine follows its protocol, LL slower than Simple at 256 MiB") {
    test::Scratch dir("protocol_plans");
    std::map<std::string, std::map<double, double>> t;
    for (const char* p : {"Simple", "LL"}) {
        const std::string plan = dir.file(fmt::format("{}.json", p));
        REQUIRE(test::run(fmt::format("convert {} --format mscclpp --proto {} -o {}", test::source(ring), p, plan)).code == 0);
        t[p] = times(plan + " --topology " + dgx());
    }
    const double big = 256.0 * (1 << 20), small = 1024;
    CHECK(t["LL"][big] > t["Simple"][big]);
    CHECK(t["LL"][small] < t["Simple"][small]);
    CHECK(near_relative(t["LL"][big], formula(big, 2, 0)));
    CHECK(near_relative(t["LL"][small], formula(small, 2, 0)));
    // the Simple plan opens with its handshake (no data): the copies still take the 7 steps
    CHECK(near_relative(t["Simple"][big], formula(big, 1, 2.8e-6)));
    // text: the protocol line
    auto v = test::run(fmt::format("verify {} --topology {} --size 1M", dir.file("LL.json"), dgx()));
    CHECK(v.out.find("protocol LL (docs/time.md, \"Protocols\"): 2 bytes on the wire per byte of data, +0 us a hop out of a GPU "
                     "inside a box, +0 us out of a box") != std::string::npos);
    // without a machine: why not; with one of another size: bad input
    auto none = test::run(fmt::format("verify {} --size 1M", dir.file("LL.json")));
    CHECK(none.code == 0);
    CHECK(none.out.find("predicted time: none (an MSCCL++ plan names no machine: give it with --topology") != std::string::npos);
    auto other = test::run(fmt::format("verify {} --topology ring:4 --size 1M", dir.file("LL.json")));
    CHECK(other.code == 2);
    CHECK(other.err.find("the plan has 8 GPUs but ring:4 has 4 processors") != std::string::npos);
}

TEST_CASE("protocols: an MSCCL-IR program's time follows its proto: Simple, LL128 and LL by the documented formula") {
    test::Scratch dir("protocol_ir");
    struct Row {
        const char* proto;
        double wire, extra;
    };
    std::map<std::string, std::map<double, double>> t;
    for (const Row& r : {Row{"Simple", 1, 2.8e-6}, Row{"LL128", 128.0 / 120, 1.3e-6}, Row{"LL", 2, 0}}) {
        CAPTURE(r.proto);
        const std::string ir = dir.file(fmt::format("{}.xml", r.proto));
        REQUIRE(test::run(fmt::format("convert {} --format msccl --proto {} -o {}", test::source(ring), r.proto, ir)).code == 0);
        t[r.proto] = times(ir + " --topology " + dgx());
        for (double size : {1024.0, 256.0 * (1 << 20)}) CHECK(near_relative(t[r.proto][size], formula(size, r.wire, r.extra)));
    }
    const double big = 256.0 * (1 << 20);
    CHECK(t["LL"][big] > t["LL128"][big]);
    CHECK(t["LL128"][big] > t["Simple"][big]);
    CHECK(t["LL"][1024] < t["LL128"][1024]);
    // the schedule itself (a table) has no protocol: the network's share, LL's latency and Simple's bandwidth
    auto s = test::run(fmt::format("verify {} --size 256M --json", test::source(ring)));
    REQUIRE(s.code == 0);
    const auto j = nlohmann::json::parse(s.out);
    CHECK(j["time"]["protocol"] == "none");
    CHECK(near_relative(j["time"]["sizes"][0]["asynchronous_s"].get<double>(), formula(big, 1, 0)));
}

TEST_CASE("protocols: a plan's table is causal and complete in the direct verifier, a second witness of its copies") {
    // plans from mscclpp's DSL (tests/data/mscclpp) and exports of the library's allgather,
    // allreduce, reduce_scatter and alltoall: the as-soon-as-possible copies name the collective's
    // messages, each sent once its sender holds it
    test::Scratch dir("protocol_witness");
    std::vector<std::string> plans = {test::source("tests/data/mscclpp/ring_allgather_8.json"),
                                      test::source("tests/data/mscclpp/allreduce_2node_8.json"),
                                      test::source("tests/data/mscclpp/allpairs_allreduce_8_ll.json")};
    for (const char* s : {"schedules/reduce/reduce_scatter_ring.sched", "schedules/reduce/allreduce_recursive_doubling.sched",
                          "schedules/bft/alltoall_phases.sched", "schedules/nccl/ring_allreduce_channels.sched"}) {
        plans.push_back(dir.file(fmt::format("p{}.json", plans.size())));
        auto c = test::run(fmt::format("convert {} --format mscclpp -o {}", test::source(s), plans.back()));
        INFO(s, c.err);
        REQUIRE(c.code == 0);
    }
    for (const std::string& file : plans) {
        CAPTURE(file);
        const mscclpp::ReadResult read = mscclpp::read_plan(read_input_text(file, "plan"), file);
        const mscclpp::PlanReport rep = mscclpp::check_plan(read);
        REQUIRE(rep.holds());
        const SendTable t = mscclpp::plan_table(read.plan, rep, Topology::parse(fmt::format("complete:{}", read.plan.gpus.size())));
        CHECK(!t.transfers.empty());
        const VerifyReport r = verify_direct(t, {});
        for (Property p : {Property::causality, Property::completeness}) {
            CAPTURE(to_string(p));
            CHECK(r.status[static_cast<std::size_t>(p)] == Status::holds);
        }
    }
}

TEST_CASE("protocols: a put of several chunks is one op, as MSCCL++'s executor runs it: one step, one message, its chunks' bytes") {
    // mscclpp's DSL ring allgather (8 GPUs, a put of one chunk a step) and the same plan with every chunk split in two
    // and every entry covering both halves (`size` 2): the same bytes a put, so the same time on every executor and
    // size. Before, each half was a step and a transfer of its own, paying its message (twice the messages, 14 steps).
    test::Scratch dir("protocol_put_size");
    const std::string one = test::source("tests/data/mscclpp/ring_allgather_8.json"), two = dir.file("ring_allgather_8_size2.json");
    nlohmann::json plan = nlohmann::json::parse(read_input_text(one, "plan"));
    for (auto& g : plan["gpus"]) {
        for (const char* k : {"input_chunks", "output_chunks", "scratch_chunks"})
            if (g.contains(k)) g[k] = g[k].get<int>() * 2;
        for (auto& tb : g["threadblocks"])
            for (auto& op : tb["ops"])
                for (const char* side : {"src_buff", "dst_buff"})
                    if (op.contains(side))
                        for (auto& b : op[side]) b["index"] = b["index"].get<int>() * 2, b["size"] = b["size"].get<int>() * 2;
    }
    {
        std::ofstream out(two);
        out << plan.dump(2);
    }
    for (const char* exec : {"", " --executor mscclpp", " --executor nccl"}) {
        CAPTURE(exec);
        const std::map<double, double> a = times(one + " --topology " + dgx() + exec), b = times(two + " --topology " + dgx() + exec);
        for (const auto& [size, t] : a) {
            CAPTURE(size);
            CHECK(near_relative(b.at(size), t));
        }
    }
    // the read-back table: twice the transfers, in the same 7 steps, each pair one op
    const mscclpp::ReadResult read = mscclpp::read_plan(read_input_text(two, "plan"), two);
    const mscclpp::PlanReport rep = mscclpp::check_plan(read);
    REQUIRE(rep.holds());
    const SendTable t = mscclpp::plan_table(read.plan, rep, Topology::parse(dgx()));
    CHECK(t.transfers.size() == 2 * 8 * 7);
    CHECK(t.steps() == 7);
    REQUIRE(t.transfer_ops.size() == t.transfers.size());
    std::map<std::uint32_t, int> per_op;
    for (std::uint32_t op : t.transfer_ops) ++per_op[op];
    CHECK(per_op.size() == 8 * 7);
    for (const auto& [op, n] : per_op) CHECK(n == 2);
}
