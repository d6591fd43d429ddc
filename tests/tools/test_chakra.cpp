// Chakra traces for ASTRA-sim (compiler/formats/export_chakra.hpp): the catalog's allgather and alltoall
// schedules written as per-rank traces with their system, workload, network and memory files,
// read back and replayed to the same table; broken traces (a dropped receive, a dropped data
// dependency, a cycle, a repeated id, a wrongly typed attribute) are refused, naming rank and node.
#include <doctest/doctest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <set>

#include <fmt/format.h>

#include "compiler/formats/export_chakra.hpp"
#include "compiler/lower/lower.hpp"
#include "dsl/diagnostics.hpp"
#include "tests/compiler/export_fixtures.hpp"
#include "tests/tools/chakra_trace.hpp"
#include "tests/tools/cli_run.hpp"
#include "verifier/check/direct.hpp"

using namespace collsched;
using collsched::test::parse_trace;
using collsched::test::run;
using collsched::test::serialize_trace;
using collsched::test::Trace;
using collsched::test::source;

namespace {

std::string tmpdir() {
    std::string d = fmt::format("/tmp/collsched_chakra_{}", ::getpid());
    std::filesystem::create_directories(d);
    return d;
}

void write_all(const std::vector<ChakraFile>& files) {
    for (const ChakraFile& f : files) {
        std::ofstream out(f.path, std::ios::binary);
        out << f.content;
    }
}

SendTable compile(const std::string& file, const std::vector<std::string>& defines) {
    Diagnostics diags;
    auto t = compile_file(source("schedules/" + file), defines, {}, diags);
    REQUIRE(t.has_value());
    return std::move(*t);
}

std::string chakra_refusal(const std::string& prefix) {
    try {
        read_chakra(prefix);
    } catch (const InputError& e) {
        return e.what();
    }
    return "";
}

}  // namespace

TEST_CASE("chakra: the catalog's allgather and alltoall read back and replay to the same table") {
    const std::string dir = tmpdir();
    struct Case {
        const char* file;
        std::vector<std::string> defines;
    } cases[] = {{"single_port/ring_full_duplex.sched", {"n=8"}},
                 {"single_port/hypercube_gray_full_duplex.sched", {"n=16"}},
                 {"bft/ebft_alltoall.sched", {"n=8"}},
                 {"bft/alltoall_pipelined.sched", {"n=16", "a=1", "d=0"}}};
    int k = 0;
    for (const Case& c : cases) {
        CAPTURE(c.file);
        SendTable t = compile(c.file, c.defines);
        const std::string prefix = fmt::format("{}/t{}", dir, k++);
        auto files = table_to_chakra(t, {prefix, 4096});
        const std::uint32_t P = t.topology->processors();
        REQUIRE(files.size() == 2 * P + 3);
        write_all(files);
        SendTable back = read_chakra(prefix);
        CHECK(back.transfers == t.transfers);
        CHECK(back.topology->spec() == t.topology->spec());
        CHECK(back.collective == t.collective);
        CHECK(verify_direct(back).holds());
        // every communication node as ASTRA-sim needs it
        for (std::uint32_t r = 0; r < P; ++r) {
            Trace tr = parse_trace(files[r].content);
            CHECK(tr.meta.version() == "0.0.4");
            std::set<std::uint64_t> ids;
            for (const auto& n : tr.nodes) {
                CHECK(ids.insert(n.id()).second);
                CHECK((n.type() == ChakraProtoMsg::COMM_SEND_NODE || n.type() == ChakraProtoMsg::COMM_RECV_NODE));
                std::set<std::string> attrs;
                for (const auto& a : n.attr()) {
                    attrs.insert(a.name());
                    if (a.name() == "comm_size") CHECK(a.value_case() == ChakraProtoMsg::AttributeProto::kInt64Val);
                    if (a.name() == "comm_src" || a.name() == "comm_dst" || a.name() == "comm_tag")
                        CHECK(a.value_case() == ChakraProtoMsg::AttributeProto::kInt32Val);
                    if (a.name() == "is_cpu_op") CHECK(!a.bool_val());
                }
                CHECK(attrs == std::set<std::string>{"comm_dst", "comm_size", "comm_src", "comm_tag", "comm_type", "is_cpu_op"});
            }
        }
        // the workload: one collective node per rank
        Trace w = parse_trace(files[P].content);
        REQUIRE(w.nodes.size() == 1);
        CHECK(w.nodes[0].type() == ChakraProtoMsg::COMM_COLL_NODE);
    }
    // the files beside the traces
    const std::string sys = test::read_file(dir + "/t0.system.json");
    CHECK(sys == fmt::format("{{\n  \"scheduling-policy\": \"FIFO\",\n  \"preferred-dataset-splits\": 1,\n  "
                             "\"all-gather-implementation-custom\": [\"{}/t0\"],\n  \"local-mem-bw\": 50\n}}\n",
                             dir));
    CHECK(test::read_file(dir + "/t2.system.json").find("\"all-to-all-implementation-custom\"") != std::string::npos);
    CHECK(test::read_file(dir + "/t0.network.yml").find("npus_count: [ 8 ]") != std::string::npos);
    std::filesystem::remove_all(dir);
}

TEST_CASE("chakra: broken traces are refused naming the rank and node") {
    const std::string dir = tmpdir();
    const std::string prefix = dir + "/ring";
    SendTable t = test::ring_allgather(4);
    auto fresh = [&] { write_all(table_to_chakra(t, {prefix, 1024})); };
    auto edit = [&](std::uint32_t rank, const std::function<void(Trace&)>& f) {
        const std::string path = fmt::format("{}.{}.et", prefix, rank);
        Trace tr = parse_trace(test::read_file(path));
        f(tr);
        std::ofstream(path, std::ios::binary) << serialize_trace(tr);
    };
    fresh();
    CHECK(read_chakra(prefix).transfers == t.transfers);
    SUBCASE("a dropped receive") {
        edit(1, [](Trace& tr) { tr.nodes.erase(tr.nodes.begin()); });  // recv b(0) from 0 step 1
        CHECK(chakra_refusal(prefix) == "rank 0, node 0 ('send b(0) to 1 step 1'): 1 send and 0 receives with tag 0, from 0 to 1, 1024 "
                                 "bytes; ASTRA-sim pairs exactly one send with one receive, so a rank would wait forever");
    }
    SUBCASE("a dropped data dependency") {
        edit(1, [](Trace& tr) {
            for (auto& n : tr.nodes) n.clear_data_deps();
        });
        CHECK(chakra_refusal(prefix).find("rank 1, node 3 ('send b(0) to 2 step 2'): sends b(0), which rank 1 does not start with, without "
                                   "a data dependency on a receive of it") != std::string::npos);
    }
    SUBCASE("a cycle") {
        edit(1, [](Trace& tr) { tr.nodes[0].add_ctrl_deps(3); });  // the receive waits for the send it feeds
        CHECK(chakra_refusal(prefix).find("waits in a cycle of dependencies") != std::string::npos);
    }
    SUBCASE("a repeated id and a wrongly typed attribute") {
        edit(2, [](Trace& tr) { tr.nodes[1].set_id(tr.nodes[0].id()); });
        CHECK(chakra_refusal(prefix).find("rank 2: node id 0 used twice") != std::string::npos);
        fresh();
        edit(3, [](Trace& tr) {
            for (auto& a : *tr.nodes[0].mutable_attr())
                if (a.name() == "comm_size") a.set_int32_val(1024);
        });
        CHECK(chakra_refusal(prefix).find("comm_size is not an int64 (the feeder reads int64_val)") != std::string::npos);
    }
    std::filesystem::remove_all(dir);
}

TEST_CASE("chakra: what ASTRA-sim cannot run is refused, and the command line writes every file or none") {
    CHECK_THROWS_WITH_AS(table_to_chakra(test::flood_allgather("cbft:8"), {"/tmp/x", 1024}),
                         "cannot write Chakra traces for allgather on cbft:8: the table's copies wait in routers, are replicated "
                         "or leave their routes; a trace carries endpoint sends only (the cut-through rule of docs/exports.md "
                         "must rebuild the table)",
                         InputError);
    auto topo = Topology::parse("ebft:4");
    TableBuilder b(topo, topo->default_model(), Collective{CollectiveKind::broadcast, Node{0}, {}});
    b.send_cut_through(1, Node{0}, Node{1}, b.messages().broadcast(0));
    CHECK_THROWS_WITH_AS(table_to_chakra(std::move(b).finish(), {"/tmp/x", 1024}),
                         doctest::Contains("ASTRA-sim runs custom implementations of all-to-all, all-gather"), InputError);
    const std::string dir = tmpdir();
    auto r = run("convert " + source("tests/data/ring8_allgather.json") + " --format chakra");
    CHECK(r.code == 2);
    CHECK(r.err == "collsched: error: --format chakra writes several files: give -o DIR/PREFIX\n");
    r = run("convert " + source("tests/data/ebft16_alltoall.json") + " --format chakra --bytes 65536 -o " + dir + "/e");
    CHECK(r.code == 0);
    auto v = run("verify " + dir + "/e.0.et");
    CHECK(v.code == 0);
    CHECK(v.out.find("verdict: holds (22 steps, 1568 transfers") == 0);
    r = run("convert " + source("tests/data/cbft8_flood_allgather.json") + " --format chakra -o " + dir + "/f");
    CHECK(r.code == 2);
    CHECK(!std::filesystem::exists(dir + "/f.0.et"));
    CHECK(!std::filesystem::exists(dir + "/f.system.json"));
    std::filesystem::remove_all(dir);
}

TEST_CASE("chakra: every format on both compile and convert (compile --format chakra, convert --format dsl)") {
    const std::string dir = tmpdir();
    const std::string sched = source("tests/data/astrasim/ring_allgather.sched");
    auto c = run("compile " + sched + " --format chakra --bytes 4096 -o " + dir + "/r");
    REQUIRE(c.code == 0);
    CHECK(c.out.empty());
    auto v = run("verify " + dir + "/r.0.et");
    CHECK(v.code == 0);
    CHECK(v.out.find("verdict: holds (7 steps, 56 transfers") == 0);
    auto none = run("compile " + sched + " --format chakra");
    CHECK(none.code == 2);
    CHECK(none.err == "collsched: error: --format chakra writes several files: give -o DIR/PREFIX\n");
    // the traces back to a schedule of hops (by -o's extension), which verifies the same
    auto d = run("convert " + dir + "/r.0.et -o " + dir + "/back.sched");
    REQUIRE(d.code == 0);
    auto w = run("verify " + dir + "/back.sched");
    CHECK(w.code == 0);
    CHECK(w.out.find("verdict: holds (7 steps, 56 transfers") == 0);
    auto t = run("convert " + dir + "/r.0.et --format dsl");
    CHECK(t.code == 0);
    CHECK(t.out.starts_with("# A send table written as a schedule (transfers: 56, steps: 7).\n"));
    std::filesystem::remove_all(dir);
}
