// NCCL's rings weighted by speed (docs/exports.md, "Rings weighted by speed"; the row `weighted rings`,
// verifier/constructions/nccl/nccl_graph_files.cpp): NCCL gives every channel the same share, so a NIC at
// half is in half as many channels; the file exports back from its table and reads back to the same table,
// never more than NCCL's 32 channels, and on executor nccl it beats NCCL's own 8 rings on a slow NIC.
#include <doctest/doctest.h>

#include <chrono>
#include <filesystem>
#include <optional>
#include <string>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "cli_run.hpp"
#include "compiler/formats/export_formats.hpp"
#include "compiler/formats/export_nccl_graph.hpp"
#include "compiler/formats/nccl_graph_read.hpp"
#include "compiler/topology/topology.hpp"
#include "support/error.hpp"
#include "verifier/check/direct.hpp"
#include "runtime/executor/executor.hpp"
#include "runtime/timing.hpp"
#include "verifier/constructions/nccl/nccl_graph_check.hpp"
#include "verifier/time/candidates.hpp"
#include "verifier/time/constructions.hpp"
#include "verifier/time/ring_bound.hpp"

using namespace collsched;
using collsched::test::run;
using collsched::test::Scratch;

namespace {

std::shared_ptr<const Topology> weighted_machine(const Scratch& dir, const std::string& name, const std::string& args) {
    const std::string file = dir.file(name + ".json");
    auto r = run("machine " + args + " -o " + file);
    INFO(args, "\n", r.err);
    REQUIRE(r.code == 0);
    return Topology::parse("graph:" + file);
}

/// The ring graph's (id 0) channels that enter by `<net dev="d">`.
/// The weighted rings provider's tables on 4 x 8 H100 with NIC 0 at half, allgather at 16 MiB on executor nccl.
std::vector<TimeCandidate> half4_weighted(const Scratch& dir, std::vector<std::string>& notes) {
    auto topo = weighted_machine(dir, "half4", "dgx-h100 --boxes 4 --network rail --slow-nic 0:0.5");
    const SynthInstance in{topo, topo->default_model(), Collective::parse("allgather", *topo)};
    CandidateQuery q{in, {16.0 * 1048576}, std::chrono::steady_clock::now() + std::chrono::seconds(60)};
    q.executor = builtin_executor(ExecutorKind::nccl);
    std::vector<TimeCandidate> built;
    for (const NamedProvider& p : construction_providers())
        if (p.name == "weighted rings") p.provide(q, built, notes);
    return built;
}

int channels_on_net(const std::string& xml, int d) {
    const std::string ring = xml.substr(0, xml.find("</graph>"));
    const std::string in = fmt::format("<channel>\n      <net dev=\"{:x}\"/>", d);
    int n = 0;
    for (std::size_t at = ring.find(in); at != std::string::npos; at = ring.find(in, at + 1)) ++n;
    return n;
}

/// `verify FILE --executor nccl --size 1G` on the machine: the asynchronous time of NCCL's ring `coll` on the file's channels.
double nccl_time(const std::string& file, const std::string& machine, const std::string& coll) {
    auto r = run(fmt::format("verify {} --topology {} --collective {} --size 1G --executor nccl --json", file, machine, coll));
    INFO(r.err);
    REQUIRE(r.code == 0);
    return nlohmann::json::parse(r.out)["time"]["sizes"][0]["asynchronous_s"].get<double>();
}

}  // namespace

TEST_CASE("weighted rings: NIC 0 at half on 4 x 8 H100 rails is in 1 channel of 15 and every other NIC in 2, and allgather at 1 GiB "
          "on executor nccl takes at most 0.6 of NCCL's own 8 rings' time") {
    Scratch dir("weighted");
    auto topo = weighted_machine(dir, "half", "dgx-h100 --boxes 4 --network rail --slow-nic 0:0.5");
    std::string why;
    auto w = nccl::nccl_weighted_rings(topo, topo->default_model(), CollectiveKind::allgather, Deadline{}, why);
    REQUIRE_MESSAGE(w, why);
    CHECK(w->channels == 15);
    CHECK(channels_on_net(w->xml, 0) == 1);
    for (int d = 1; d < 8; ++d) CHECK(channels_on_net(w->xml, d) == 2);
    CHECK(w->xml.find("crossnic=\"0\"") != std::string::npos);
    const std::string machine = "graph:" + dir.file("half.json"), own = dir.file("own.xml");
    REQUIRE(run(fmt::format("convert nccl:ring --topology {} --format nccl-graph -o {}", machine, own)).code == 0);
    const double weighted = nccl_time(dir.file("weighted.xml", w->xml), machine, "allgather"), nccl = nccl_time(own, machine, "allgather");
    INFO("weighted ", weighted, " s, NCCL's rings ", nccl, " s");
    CHECK(weighted < 0.6 * nccl);  // 3.17 ms against 5.55 ms: NCCL's ring on NIC 0 crosses at half speed and every ring waits for it
}

TEST_CASE("weighted rings: the table exports as the same graph file, and the file read back yields the same table") {
    Scratch dir("weighted_back");
    auto topo = weighted_machine(dir, "half", "dgx-h100 --boxes 2 --network rail --slow-nic 3:0.5");
    for (CollectiveKind kind : {CollectiveKind::allgather, CollectiveKind::allreduce, CollectiveKind::reduce_scatter}) {
        INFO(static_cast<int>(kind));
        std::string why;
        auto w = nccl::nccl_weighted_rings(topo, topo->default_model(), kind, Deadline{}, why);
        REQUIRE_MESSAGE(w, why);
        CHECK(w->channels == 15);
        CHECK(channels_on_net(w->xml, 3) == 1);
        fmt::memory_buffer out;
        write_table_nccl_graph(w->table, out, [](fmt::memory_buffer&) {});  // what convert --format nccl-graph writes
        const std::string back = fmt::to_string(out);
        CHECK(back == w->xml);
        const nccl::GraphCheck g = nccl::check_nccl_graph(read_nccl_graph(back, "back.xml"), "back.xml", *topo);
        REQUIRE(g.holds());
        CHECK(g.channels_run == 15);
        CHECK(nccl::nccl_graph_table(topo, topo->default_model(), kind, g).transfers == w->table.transfers);
    }
}

TEST_CASE("weighted rings: the row also gives the same weights on twice the channels (30 on 4 x 8 H100 with NIC 0 at half), which "
          "export as the same file and run the allgather sooner at 16 MiB, and none above 32 channels") {
    Scratch dir("weighted_twice");
    std::vector<std::string> notes;
    std::vector<TimeCandidate> built = half4_weighted(dir, notes);
    std::erase_if(built, [](const TimeCandidate& c) { return c.name.starts_with("crossnic"); });  // the next test's
    REQUIRE(built.size() == 2);
    CHECK(built[0].name == "weighted rings (15 channels)");
    CHECK(built[1].name == "weighted rings (30 channels)");
    std::string files[2];
    double ll128[2] = {0, 0};
    for (int k = 0; k < 2; ++k) {
        REQUIRE(verify_direct(*built[k].table).holds());
        fmt::memory_buffer out;
        write_table_nccl_graph(*built[k].table, out, [](fmt::memory_buffer&) {});
        files[k] = fmt::to_string(out);
        TimeOptions o{16.0 * 1048576, std::nullopt};
        o.executor = executor_costs(builtin_executor(ExecutorKind::nccl), Protocol::ll128);
        ll128[k] = predict_time(*built[k].table, o).asynchronous;
    }
    CHECK(files[1] == files[0]);  // a ring's channels over their greatest common divisor: 15, as NCCL reads them
    INFO("LL128 at 16 MiB: 15 channels ", ll128[0], " s, 30 channels ", ll128[1], " s");
    CHECK(ll128[1] < 0.99 * ll128[0]);  // 115 us against 119 us: a share half as large a hop
    std::string why;
    auto most = weighted_machine(dir, "most", "dgx-h100 --boxes 2 --network rail --slow-nic 0:0.9");
    CHECK_FALSE(nccl::nccl_weighted_rings(most, most->default_model(), CollectiveKind::allgather, Deadline{}, why, 2));
    CHECK(why.find("above the 32") != std::string::npos);
}

TEST_CASE("crossnic rings: each box left by its last GPU's own NIC (no PXN relay), the trees' chains on one rail, 10 us sooner at "
          "16 MiB on 4 x 8 H100 with NIC 0 at half") {
    // the weighted rings leave each box by the NIC they entered by, their last GPU relaying over NVLink to it (PXN):
    // 4 relay hops of 2.4 us in a share's path of 35 (bench/results/faults.md, "On executor nccl")
    Scratch dir("crossnic");
    std::vector<std::string> notes;
    std::vector<TimeCandidate> built = half4_weighted(dir, notes);
    INFO(fmt::format("{}", fmt::join(notes, "\n")));
    const TimeCandidate* pxn = nullptr;
    const TimeCandidate* cross = nullptr;
    for (const TimeCandidate& c : built) {
        if (c.name == "weighted rings (30 channels)") pxn = &c;
        if (c.name == "crossnic rings (28 channels)") cross = &c;
    }
    REQUIRE(pxn);
    REQUIRE(cross);
    REQUIRE(verify_direct(*cross->table).holds());
    const std::vector<std::string> files = nccl_graph_files_xml(*cross->table);
    REQUIRE(files.size() == 4);  // each box its own orders
    for (std::size_t k = 0; k < files.size(); ++k) {
        const NcclGraphFile f = read_nccl_graph(files[k], fmt::format("node {}", k));
        REQUIRE(f.graphs.size() == 2);
        CHECK(f.graphs[0].crossnic == 1);
        const auto ends = [](const NcclGraphChannelXml& c) {
            REQUIRE(c.devices.size() == 10);  // net, 8 GPUs, net
            CHECK((c.devices.front().net && c.devices.back().net));
            return std::pair{c.devices.front().dev, c.devices.back().dev};
        };
        for (const auto& c : f.graphs[0].channels) CHECK(ends(c).first != ends(c).second);  // out by the last GPU's own NIC
        for (const auto& c : f.graphs[1].channels) CHECK(ends(c).first == ends(c).second);  // a tree by its first NIC
        CHECK(f.graphs[1].channels.size() == f.graphs[0].channels.size());  // NCCL runs min(ring, tree) channels
    }
    CHECK(nccl::nccl_runs_more(*cross->table, files).empty());
    // the trees' chain of channel c enters every box by the same rail (a tree joins the boxes' first NICs)
    std::vector<std::vector<std::int64_t>> first(files.size());
    for (std::size_t k = 0; k < files.size(); ++k) {
        const NcclGraphFile f = read_nccl_graph(files[k], "node");
        for (const auto& c : f.graphs[1].channels) first[k].push_back(c.devices[1].dev);
    }
    for (std::size_t k = 1; k < files.size(); ++k) CHECK(first[k] == first[0]);
    TimeOptions o{16.0 * 1048576, std::nullopt};
    o.executor = executor_costs(builtin_executor(ExecutorKind::nccl), Protocol::ll128);
    const double a = predict_time(*pxn->table, o).asynchronous, b = predict_time(*cross->table, o).asynchronous;
    INFO("LL128 at 16 MiB: weighted rings ", a, " s, crossnic rings ", b, " s");
    CHECK(b < a - 8e-6);  // 105 us against 115 us
}

TEST_CASE("crossnic rings through NVSwitch and rail switches as routers: the allgather reads back as rings, and its chain waits at "
          "a switch for the copy from the hop before") {
    // a share passes a box's NVSwitch once a hop (0 -> sw -> 1, 1 -> sw -> 2, ...): the exporter read every GPU the
    // share left the switch to as a hop of 0 ("no message of the table travels on a ring"), and chain_latency took the
    // first copy to reach the switch for every departure (37.7 us in LL128 against the rings' 98.1 us)
    Scratch dir("crossnic_routers");
    auto topo = weighted_machine(dir, "routers", "dgx-h100 --boxes 4 --network rail --switches routers");
    std::string why;
    auto w = nccl::nccl_weighted_rings(topo, topo->default_model(), CollectiveKind::allgather, Deadline{}, why, 1, true);
    REQUIRE_MESSAGE(w, why);
    const std::vector<TableRing> rings = table_rings(w->table);
    CHECK(rings.size() == 8);
    CHECK(nccl::nccl_runs_more(w->table, nccl_graph_files_xml(w->table)).empty());
    const RingFamily f = *ring_family(*topo, CollectiveKind::allgather);
    TimeOptions o = with_network_class(*topo, TimeOptions{16.0 * 1048576, std::nullopt});
    o.executor = executor_costs(builtin_executor(ExecutorKind::nccl), Protocol::ll128);
    const std::optional<TimeTerm> chain = ring_chain_term(*topo, o, f);
    REQUIRE(chain);
    const double c = chain_latency(w->table, o), run = predict_time(w->table, o).asynchronous;
    INFO("chain ", c, " s, the rings' term ", chain->latency, " s, the run ", run, " s");
    CHECK(c >= chain->latency);
    CHECK(run >= c);
}

TEST_CASE("weighted rings: never more than NCCL's 32 channels, and none where the NICs are equally fast") {
    Scratch dir("weighted_limit");
    // NIC 0 at 0.9: the exact shares 9 : 10 : ... : 10 need 79 channels; 32 at most are written
    auto most = weighted_machine(dir, "most", "dgx-h100 --boxes 2 --network rail --slow-nic 0:0.9");
    std::string why;
    auto w = nccl::nccl_weighted_rings(most, most->default_model(), CollectiveKind::allgather, Deadline{}, why);
    REQUIRE_MESSAGE(w, why);
    CHECK(w->channels <= 32);
    CHECK(w->channels >= 9);
    CHECK(channels_on_net(w->xml, 0) < channels_on_net(w->xml, 1));
    // NIC 0 at a tenth: in no channel (one of N channels at a tenth would take longer than 1/7 on the others)
    auto tenth = weighted_machine(dir, "tenth", "dgx-h100 --boxes 2 --network rail --slow-nic 0:0.1");
    auto t = nccl::nccl_weighted_rings(tenth, tenth->default_model(), CollectiveKind::allgather, Deadline{}, why);
    REQUIRE_MESSAGE(t, why);
    CHECK(t->channels == 7);
    CHECK(channels_on_net(t->xml, 0) == 0);
    // a ring set of 33 channels is refused, not cut short as NCCL's doubling would (connect.cc:460)
    std::vector<TableRing> rings = table_rings(w->table);
    rings.front().channels = 33 - (w->channels - rings.front().channels);
    try {
        (void)nccl_graph_of_rings(*most, rings);
        FAIL("33 channels written");
    } catch (const InputError& e) {
        CHECK(std::string(e.what()).find("at most 32") != std::string::npos);
    }
    auto healthy = weighted_machine(dir, "healthy", "dgx-h100 --boxes 2 --network rail");
    CHECK_FALSE(nccl::nccl_weighted_rings(healthy, healthy->default_model(), CollectiveKind::allgather, Deadline{}, why));
    CHECK(why.find("equally fast") != std::string::npos);
}

TEST_CASE("nccl-graph: a table that leaves a datum to NCCL's PXN relay exports no file NCCL runs otherwise (nccl_runs_more)") {
    // h100rail 2 x 8: NCCL's ring enters box 0 at GPU 7 and leaves it through GPU 7's NIC, so GPU 7 holds
    // the data it relays before the ring delivers it; NCCL's ring with such a delivery removed still holds,
    // and the exporter writes the same file for it, which NCCL runs with the delivery: the table is faster
    // than NCCL runs the file (2.58 against 2.77 ms at 1 GiB with all of them removed)
    auto topo = Topology::parse("graph:" + collsched::test::source("schedules/machines/h100rail2x8.json"));
    const std::string own = nccl_graphs_xml(nccl::nccl_algorithm_graphs(*topo, "ring"));
    const nccl::GraphCheck g = nccl::check_nccl_graph(read_nccl_graph(own, "own.xml"), "own.xml", *topo);
    REQUIRE(g.holds());
    const SendTable ring = nccl::nccl_graph_table(topo, topo->default_model(), CollectiveKind::allgather, g);
    auto graph_of = [](const SendTable& t) {
        fmt::memory_buffer out;
        write_table_nccl_graph(t, out, [](fmt::memory_buffer&) {});
        return fmt::to_string(out);
    };
    CHECK(nccl::nccl_runs_more(ring, graph_of(ring)).empty());
    std::optional<SendTable> trimmed;
    for (std::size_t i = ring.transfers.size(); i-- > 0 && !trimmed;) {
        SendTable t = ring;
        t.transfers.erase(t.transfers.begin() + static_cast<std::ptrdiff_t>(i));
        if (verify_direct(t).holds()) trimmed = std::move(t);
    }
    REQUIRE(trimmed);
    const std::string xml = graph_of(*trimmed);  // the exporter accepts it: NCCL's rings, as read from its hops
    const std::string why = nccl::nccl_runs_more(*trimmed, xml);
    INFO(why);
    CHECK(why.find("NCCL runs the file as its ring") != std::string::npos);
    // and convert --format nccl-graph refuses it, exit 2, nothing written
    Scratch dir("pxn_trim");
    const std::string table = dir.file("trimmed.json"), out = dir.file("out.xml");
    {
        fmt::memory_buffer b;
        write_table_as(*trimmed, "json", {}, b, [](fmt::memory_buffer&) {});
        dir.file("trimmed.json", fmt::to_string(b));
    }
    auto r = run(fmt::format("convert {} --format nccl-graph -o {}", table, out));
    CHECK(r.code == 2);
    CHECK(r.err.find("NCCL runs the file as its ring") != std::string::npos);
    CHECK_FALSE(std::filesystem::exists(out));
}
