// Reading MSCCL-IR (compiler/interop/msccl_import.hpp): the programs of tests/data/msccl, written the way
// MSCCLang's writer prints them (tests/data/msccl/make_msccl.py), import, level into tables both
// witnesses accept, and read back what collsched exports; their mutated copies and broken
// programs are refused with the rank, thread block and step.
#include <doctest/doctest.h>

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>

#include <fmt/ranges.h>

#include "compiler/formats/export_chakra.hpp"
#include "compiler/interop/export_msccl.hpp"
#include "compiler/lower/lower.hpp"
#include "compiler/interop/msccl_import.hpp"
#include "compiler/io/table_io.hpp"
#include "dsl/diagnostics.hpp"
#include "runtime/simulator.hpp"
#include "tests/compiler/export_fixtures.hpp"
#include "tests/compiler/msccl_replay.hpp"
#include "tests/tools/catalog_rows.hpp"
#include "tests/tools/cli_run.hpp"
#include "bench/reproduce.hpp"
#include "verifier/check/direct.hpp"
#include "verifier/check/z3_engine.hpp"

using namespace collsched;
using namespace collsched::bench;
using collsched::test::run;
using collsched::test::source;

namespace {

std::string data(const std::string& name) { return test::read_file(source("tests/data/msccl/" + name)); }

SendTable import(const std::string& name, const std::string& topology = "") {
    return parse_msccl_ir(data(name), name, {.topology = topology});
}

/// Why the executor would not load a file (exit 2), or "".
std::string import_refusal(const std::string& text, const std::string& topology = "") {
    try {
        MscclImportOptions opt;
        opt.topology = topology;
        check_msccl_ir(text, "x.xml", opt);
    } catch (const InputError& e) {
        return e.what();
    }
    return "";
}

/// What a loadable program does wrong (exit 1): its findings, one per line; "" when it holds.
std::string violations(const std::string& text, const std::string& topology = "") {
    MscclImportOptions opt;
    opt.topology = topology;
    MscclReport r = check_msccl_ir(text, "x.xml", opt);
    std::string out;
    for (const std::string& f : r.findings) out += (out.empty() ? "" : "\n") + f;
    CHECK(r.holds == out.empty());
    return out;
}

void replace(std::string& s, const std::string& from, const std::string& to) {
    auto at = s.find(from);
    REQUIRE(at != std::string::npos);
    s.replace(at, from.size(), to);
}

}  // namespace

TEST_CASE("msccl import: MSCCLang's ring allgather, all-pairs and two-step alltoall level into tables both witnesses accept") {
    // the in-place ring allgather (s, rcs, rcs, r per rank) on ring:4 is exactly the ring table
    SendTable ring = import("allgather_ring.xml", "ring:4");
    CHECK(ring.transfers == test::ring_allgather(4).transfers);
    CHECK(ring.collective.kind == CollectiveKind::allgather);
    // all pairs in one step on complete:4
    SendTable pairs = import("alltoall_allpairs.xml");
    CHECK(pairs.topology->spec() == "complete:4");
    CHECK(pairs.transfers == test::complete_alltoall(4).transfers);
    // two steps: the chunks for the other node gathered in scratch, sent in one step of cnt 2
    // (two chunk steps on the node link), then the node's own exchange
    SendTable two = import("alltoall_two_step.xml");
    CHECK(two.transfers.size() == 16);
    CHECK(two.steps() == 3);
    for (const SendTable* t : {&ring, &pairs, &two}) {
        CHECK(verify_direct(*t).holds());
        CHECK(simulate(*t).status == SimStatus::completed);
    }
}

TEST_CASE("msccl import: what collsched exports reads back to the same table on direct networks") {
    for (std::uint32_t n : {4u, 8u, 65u}) {
        SendTable t = test::ring_allgather(n);
        CHECK(parse_msccl_ir(table_to_msccl(t), "ring.xml", {.topology = t.topology->spec()}).transfers == t.transfers);
    }
    SendTable a = test::complete_alltoall(8);
    CHECK(parse_msccl_ir(table_to_msccl(a), "a.xml").transfers == a.transfers);
    // the exports of relaying and replicating tables pass the reader's checks (no race, no
    // deadlock, complete outputs), the allgather both in place and out of place
    CHECK_NOTHROW(parse_msccl_ir(table_to_msccl(test::flood_allgather("cbft:8")), "f.xml"));
    CHECK_NOTHROW(parse_msccl_ir(table_to_msccl(test::ebft_alltoall(16)), "e.xml"));
    // a broadcast: MSCCL-IR has no global clock, so the levelling is as soon as possible (the
    // root's three sends all in step 1 on the multi-port hypercube), a different table with the
    // same three steps that still verifies
    auto cube = Topology::parse("hypercube:3");
    TableBuilder b(cube, cube->default_model(), Collective{CollectiveKind::broadcast, Node{0}, {}});
    for (std::uint32_t d = 0; d < 3; ++d)
        for (std::uint32_t p = 0; p < (1u << d); ++p) b.hop(d + 1, *cube->find_channel(Node{p}, Node{p | (1u << d)}), b.messages().broadcast(0));
    SendTable bc = std::move(b).finish();
    SendTable bc_back = parse_msccl_ir(table_to_msccl(bc), "b.xml", {.topology = "hypercube:3"});
    CHECK(verify_direct(bc_back).holds());
    CHECK(bc_back.steps() == 3);
    CHECK(bc_back.transfers != bc.transfers);
    // two instances per connection: the same data, every thread block half as long
    SendTable r = test::ring_allgather(66);
    SendTable back = parse_msccl_ir(table_to_msccl(r, {.channels = 2}), "r.xml", {.topology = "ring:66"});
    CHECK(verify_direct(back).holds());
}

TEST_CASE("msccl import: the mutated copies are violations named by rank, thread block and step (exit 1)") {
    CHECK(violations(data("alltoall_two_step_dropped_dependency.xml")) ==
          "x.xml:19:7: rank 0, thread block 4, step 0 (send to 2, channel 4): reads rank 0, scratch chunk 0 and rank 0, thread "
          "block 0, step 0 (copy, channel 0) writes it, with nothing ordering the two (a missing dependency) [data race]");
    CHECK(violations(data("alltoall_two_step_swapped_sends.xml")) ==
          "x.xml:27:7: rank 1, output chunk 0 holds m(0,3), written by rank 1, thread block 0, step 2 (receive from 0, channel 0), "
          "which rank 0, thread block 3, step 1 (send to 1, channel 0) sent, but it must hold m(0,1) [wrong output]\n"
          "x.xml:65:7: rank 3, output chunk 0 holds m(0,1), written by rank 3, thread block 0, step 2 (receive from 1, channel 5), "
          "which rank 1, thread block 3, step 1 (send to 3, channel 5) sent, but it must hold m(0,3) [wrong output]");
    CHECK(violations(data("allgather_ring_missing_receive.xml")) ==
          "x.xml:14:7: rank 1, thread block 0, step 2 (receive-copy-send from 0 to 2, channel 0): is never received: the "
          "connection 1 -> 2 on channel 0 has 2 receives and this is send 3 [unmatched send]\n"
          "x.xml:18:3: rank 2, output chunk 3 holds no data, never written, but it must hold b(3) [wrong output]");  // at rank 2's <gpu>
    // on the command line: exit 1, the counterexamples on standard output
    auto r = run("verify " + source("tests/data/msccl/allgather_ring_missing_receive.xml"));
    CHECK(r.code == 1);
    CHECK(r.out.find("rank 1, thread block 0, step 2 (receive-copy-send from 0 to 2, channel 0): is never received") !=
          std::string::npos);
    CHECK(r.err.empty());
    // convert and simulate stop with exit 1 too: a program that does not hold has no table
    auto c = run("convert " + source("tests/data/msccl/allgather_ring_missing_receive.xml") + " --format json");
    CHECK(c.code == 1);
    CHECK(c.out.empty());
    CHECK(c.err.find("[unmatched send]") != std::string::npos);
}

TEST_CASE("msccl import: waits that never end are deadlocks named by rank, thread block and step") {
    SUBCASE("a receive before the send it waits for, on both ranks") {
        // rank 0 and 1 each receive from the other before sending: a cycle under any buffering
        std::string x = R"(<algo name="x" proto="Simple" nchannels="1" nchunksperloop="2" ngpus="2" coll="allgather" inplace="0" outofplace="1" minBytes="0" maxBytes="0">
  <gpu id="0" i_chunks="1" o_chunks="2" s_chunks="0">
    <tb id="0" send="1" recv="1" chan="0">
      <step s="0" type="r" srcbuf="i" srcoff="0" dstbuf="o" dstoff="1" cnt="1" depid="-1" deps="-1" hasdep="0"/>
      <step s="1" type="s" srcbuf="i" srcoff="0" dstbuf="o" dstoff="0" cnt="1" depid="-1" deps="-1" hasdep="0"/>
    </tb>
  </gpu>
  <gpu id="1" i_chunks="1" o_chunks="2" s_chunks="0">
    <tb id="0" send="0" recv="0" chan="0">
      <step s="0" type="r" srcbuf="i" srcoff="0" dstbuf="o" dstoff="0" cnt="1" depid="-1" deps="-1" hasdep="0"/>
      <step s="1" type="s" srcbuf="i" srcoff="0" dstbuf="o" dstoff="1" cnt="1" depid="-1" deps="-1" hasdep="0"/>
    </tb>
  </gpu>
</algo>)";
        CHECK(violations(x) == "x.xml:4:7: rank 0, thread block 0, step 0 (receive from 1, channel 0) waits for rank 1, thread block "
                               "0, step 1 (send to 0, channel 0) waits for rank 1, thread block 0, step 0 (receive from 0, channel "
                               "0) waits for rank 0, thread block 0, step 1 (send to 1, channel 0) waits for the first again "
                               "[deadlock]");
    }
    SUBCASE("a dependency on a step the executor never signals (hasdep=\"0\")") {
        std::string x = data("alltoall_two_step.xml");
        // rank 0, thread block 0, step 0 is waited for by the node-link send
        replace(x, R"(<step s="0" type="cpy" srcbuf="i" srcoff="2" dstbuf="s" dstoff="0" cnt="1" depid="-1" deps="-1" hasdep="1" />)",
                R"(<step s="0" type="cpy" srcbuf="i" srcoff="2" dstbuf="s" dstoff="0" cnt="1" depid="-1" deps="-1" hasdep="0" />)");
        CHECK(violations(x).find("x.xml:20:7: rank 0, thread block 4, step 1 (send to 2, channel 4): waits for thread block 0 to "
                                 "publish step 0, but no step of it at or after 0 has hasdep=\"1\", so the executor never "
                                 "signals it [deadlock]") != std::string::npos);
    }
}

TEST_CASE("msccl import: in-place programs are checked with the input aliased to the output") {
    // an alltoall in place: unpaired, each receive into output chunk q waits (depid) for the send
    // that reads input chunk q, the same memory; without those waits the receive races the send
    std::string x = table_to_msccl(test::complete_alltoall(3), {.pair = false});
    CHECK(x.find(R"(inplace="1" outofplace="1")") != std::string::npos);
    CHECK(violations(x) == "");
    x = std::regex_replace(x, std::regex(R"(depid="\d+" deps="\d+")"), R"(depid="-1" deps="-1")");
    x = std::regex_replace(x, std::regex(R"(hasdep="1")"), R"(hasdep="0")");
    std::string why = violations(x);
    CHECK(why.find("(= output, in place)") != std::string::npos);
    CHECK(why.find("[data race] (in place)") != std::string::npos);
    CHECK(why.find("(out of place)") == std::string::npos);
    // paired, the send to q reads chunk q before the receive from q overwrites it, in one thread
    // block: correct in place with no wait at all
    x = table_to_msccl(test::complete_alltoall(3));
    CHECK(x.find("depid=\"0\"") == std::string::npos);
    CHECK(violations(x) == "");
    // the allgather and the broadcast are correct both ways (in place, the local copy copies a
    // chunk onto itself, which is no access)
    CHECK(violations(table_to_msccl(test::ring_allgather(5)), "ring:5") == "");
}

TEST_CASE("msccl import: what the executor would not load is refused (exit 2), what it loads and gets wrong is a violation") {
    std::string ring = data("allgather_ring.xml");
    std::string x = ring;
    // an allreduce with these buffers loads, and computes no sum
    replace(x, R"(coll="allgather")", R"(coll="allreduce")");
    CHECK(violations(x).find("[wrong output]") != std::string::npos);
    x = ring;
    replace(x, R"(type="rcs")", R"(type="rrc")");  // no longer sends on: the next rank waits forever
    CHECK(violations(x).find("waits for a send that never comes") != std::string::npos);
    x = ring;
    replace(x, R"(coll="allgather")", R"(coll="alltoallv")");
    CHECK(import_refusal(x).find("x.xml:1:1: coll=\"alltoallv\": collsched checks allreduce, allgather, alltoall") == 0);
    // s is not the step's index: the executor ignores it, and so does the check (a note)
    x = ring;
    replace(x, R"(<step s="1" type="rcs")", R"(<step s="2" type="rcs")");
    MscclReport rep = check_msccl_ir(x, "x.xml");
    CHECK(rep.holds);
    CHECK(std::any_of(rep.notes.begin(), rep.notes.end(),
                      [](const std::string& n) { return n.find("the executor ignores s") != std::string::npos; }));
    // more steps than MSCCL_MAX_NUM_STEPS in a thread block
    std::string long_ring = table_to_msccl(test::ring_allgather(66), {.max_steps = 65});
    CHECK(import_refusal(long_ring, "ring:66").find("[MSCCL_MAX_NUM_STEPS]") != std::string::npos);
    MscclImportOptions o65;
    o65.topology = "ring:66";
    o65.max_steps = 65;
    CHECK_NOTHROW(parse_msccl_ir(long_ring, "l.xml", o65));
    // what ElementTree and other writers add is fine: a declaration, comments, tabs
    x = "<?xml version='1.0' encoding='utf-8'?>\n<!-- MSCCLang -->\n" + ring;
    replace(x, "  <gpu id=\"1\"", "\t<gpu id=\"1\"");
    CHECK(parse_msccl_ir(x, "x.xml", {.topology = "ring:4"}).transfers == test::ring_allgather(4).transfers);
    CHECK(import_refusal("<algo ngpus=\"2\" coll=\"alltoall\">\n  <gpu id=\"0\"\n</algo>") ==
          "x.xml:3:1: malformed MSCCL-IR XML: <gpu> is not closed with '>'");
    CHECK(import_refusal(ring, "ring:5") == "x.xml: the program has 4 ranks but ring:5 has 5 processors");
    auto r = run("verify " + source("tests/data/ebft4_alltoall.json") + " --topology ring:4");
    CHECK(r.code == 2);
    CHECK(r.err == "collsched: error: --topology applies to MSCCL-IR files and schedules only (tables name theirs)\n");
}

TEST_CASE("msccl export: every catalog schedule passes the executor's load rules or is refused with the reason") {
    // the default suite stops at 64 processors; ctest -L slow runs msccl_catalog_1024 (6 minutes)
    const char* env = std::getenv("COLLSCHED_MSCCL_CATALOG_MAX");
    const std::uint64_t max_size = env ? std::strtoull(env, nullptr, 10) : 64;
    int written = 0, refused = 0;
    test::for_each_catalog_table(max_size, [&](const SendTable& t, const std::string&) {
        std::string xml;
        try {
            xml = table_to_msccl(t);
        } catch (const InputError& err) {
            // a rule of the executor, named in brackets, or a table MSCCL-IR cannot express
            std::string why = err.what();
            CAPTURE(why);
            const bool named = why.find(" [") != std::string::npos || why.find("MSCCL-IR export covers") != std::string::npos ||
                               why.find("MSCCL-IR cannot express") != std::string::npos ||
                               why.find("comes back to itself") != std::string::npos;
            CHECK(named);
            ++refused;
            return;
        }
        test::XmlNode algo = test::MscclLexer(xml).parse();
        CHECK(test::msccl_limits(algo) == "");
        ++written;
    });
    MESSAGE(fmt::format("catalog rows up to {} processors: {} exported within the executor's rules, {} refused", max_size, written,
                        refused));
    CHECK(written > 0);
}

TEST_CASE("msccl import: every prefix and seeded byte edits of a program are read or refused with an InputError") {
    const std::string two = data("alltoall_two_step.xml");
    int read = 0, refused = 0;
    auto attempt = [&](const std::string& text) {
        try {
            parse_msccl_ir(text, "x.xml");
            ++read;
        } catch (const InputError&) {
            ++refused;
        }
    };
    for (std::size_t n = 0; n < two.size(); n += 7) attempt(two.substr(0, n));
    std::uint64_t seed = 17;
    auto next = [&] {
        seed = seed * 6364136223846793005ull + 1442695040888963407ull;
        return seed >> 33;
    };
    const std::string alphabet = "0123456789-\"<>/= sriox";
    for (int i = 0; i < 400; ++i) {
        std::string x = two;
        for (int k = 0; k < 3; ++k) x[next() % x.size()] = alphabet[next() % alphabet.size()];
        INFO("seed step " << i);
        attempt(x);
    }
    CHECK(refused > 0);
    CHECK(read + refused == int((two.size() + 6) / 7) + 400);
}

namespace {

SendTable compile_schedule(const std::string& rel, const std::vector<std::string>& defines) {
    Diagnostics diags;
    auto t = compile_file(source(rel), defines, {}, diags);
    INFO(rel << ": " << diags.render());
    REQUIRE(t.has_value());
    return std::move(*t);
}

/// The table's CSV rows without the header.
std::string csv_rows(const SendTable& t) {
    std::string csv = table_to_csv(t), rows;
    std::size_t at = 0;
    while (at < csv.size()) {
        std::size_t end = csv.find('\n', at);
        std::string line = csv.substr(at, end - at + 1);
        if (!line.starts_with("#") && !line.starts_with("step,")) rows += line;
        at = end + 1;
    }
    return rows;
}

/// The transfers as (channel, message name) pairs, sorted: the same copies over the same
/// channels whatever their steps.
std::vector<std::pair<std::uint32_t, std::string>> channel_moves(const SendTable& t) {
    const Messages ms = t.messages();
    std::vector<std::pair<std::uint32_t, std::string>> v;
    for (const Transfer& x : t.transfers) v.emplace_back(idx(x.channel), ms.name(x.message));
    std::sort(v.begin(), v.end());
    return v;
}

}  // namespace

TEST_CASE("msccl import: the library's reductions export, read back and verify the same with both engines") {
    struct Row {
        const char* file;
        std::int64_t n;
        bool exact;  ///< the same steps too (see docs/exports.md: rounds and reads of one chunk by two sends)
    };
    for (const Row& row : {Row{"schedules/reduce/allreduce_ring.sched", 4, true}, Row{"schedules/reduce/allreduce_ring.sched", 8, true},
                           Row{"schedules/reduce/reduce_scatter_ring.sched", 8, true},
                           Row{"schedules/reduce/reduce_binomial.sched", 8, true},
                           Row{"schedules/reduce/allreduce_recursive_doubling.sched", 8, true},
                           Row{"schedules/reduce/allreduce_binomial.sched", 8, true},
                           Row{"schedules/reduce/allreduce_rabenseifner.sched", 8, false},
                           Row{"schedules/reduce/allreduce_double_binary_tree.sched", 8, false}}) {
        const std::string file = row.file;
        CAPTURE(file);
        CAPTURE(row.n);
        SendTable t = compile_schedule(row.file, {fmt::format("n={}", row.n)});
        SendTable back = parse_msccl_ir(table_to_msccl(t), "r.xml", {.topology = t.topology->spec()});
        CHECK(back.collective == t.collective);
        // both engines give the table and its reading the same verdict (it holds)
        const VerifyReport d = verify_direct(t), db = verify_direct(back), zb = verify_z3(back);
        CHECK(d.holds());
        CHECK(db.holds());
        CHECK(zb.holds());
        CHECK(zb.notes.empty());
        CHECK(simulate(back).status == SimStatus::completed);
        // the same partials over the same channels; the same steps where every connection
        // carries one chunk per step and no chunk is read by two sends of one step
        CHECK(channel_moves(back) == channel_moves(t));
        if (row.exact) CHECK(back.transfers == t.transfers);
        else CHECK(back.steps() > t.steps());
        // what the reader levels exports again to a program that holds; where the reading is
        // exact it is a fixed point of export and import (Rabenseifner's levelled reading is not:
        // its paired thread blocks level into other steps)
        const SendTable again = parse_msccl_ir(table_to_msccl(back), "b.xml", {.topology = t.topology->spec()});
        CHECK(channel_moves(again) == channel_moves(t));
        if (row.exact) CHECK(again.transfers == back.transfers);
    }
}

TEST_CASE("msccl import: rrs, re and the reductions' errors, with file, line and column") {
    // rank 2 sends a(2); rank 1 receives it, reduces with its own input and sends a({1,2}) on
    // (rrs, no local write); rank 0 copies its input to its output, receives into scratch and
    // reduces the scratch chunk into the output (re)
    SendTable t = import("reduce_rrs_re.xml", "linear:3");
    CHECK(t.collective.to_string() == "reduce:0");
    CHECK(csv_rows(t) == "1,2,1,\"a(2)\"\n2,1,0,\"a({1,2})\"\n");
    CHECK(verify_direct(t).holds());
    CHECK(verify_z3(t).holds());
    // a second re of the same scratch chunk counts a(1) and a(2) twice
    std::string x = data("reduce_rrs_re.xml");
    replace(x, R"(<step s="1" type="re" srcbuf="s" srcoff="0" dstbuf="o" dstoff="0" cnt="1" depid="1" deps="0" hasdep="0"/>)",
            "<step s=\"1\" type=\"re\" srcbuf=\"s\" srcoff=\"0\" dstbuf=\"o\" dstoff=\"0\" cnt=\"1\" depid=\"1\" deps=\"0\" hasdep=\"0\"/>\n"
            "      <step s=\"2\" type=\"re\" srcbuf=\"s\" srcoff=\"0\" dstbuf=\"o\" dstoff=\"0\" cnt=\"1\" depid=\"-1\" deps=\"-1\" hasdep=\"0\"/>");
    // the executor fuses the two re steps (same destination, no dependency of its own): one
    // reduction of three sources, which counts a(1) and a(2) twice
    CHECK(violations(x, "linear:3") ==
          "x.xml:5:7: rank 0, output chunk 0 holds a({0,1,1,2,2}), written by rank 0, thread block 0, step 1 (reduce, channel 0) fused "
          "by the executor with step 2, but it must hold a({0..2}); it counts a({1,2}) twice (first counted twice by rank 0, thread "
          "block 0, step 1 (reduce, channel 0) fused by the executor with step 2) [wrong output]");
    // rank 1 forwards without reducing (rcs into its input): rank 0 misses a(1)
    x = data("reduce_rrs_re.xml");
    replace(x, R"(type="rrs" srcbuf="i" srcoff="0" dstbuf="i")", R"(type="rcs" srcbuf="i" srcoff="0" dstbuf="i")");
    CHECK(violations(x, "linear:3") == "x.xml:5:7: rank 0, output chunk 0 holds a({0,2}), written by rank 0, thread block 0, step 1 "
                                       "(reduce, channel 0), but it must hold a({0..2}); it misses a(1) [wrong output]");
    // a step type the executor does not know: the file, line and column, exit 2
    x = data("reduce_rrs_re.xml");
    replace(x, R"(type="rrs")", R"(type="rrx")");
    CHECK(import_refusal(x, "linear:3") == "x.xml:13:7: gpu 1, thread block 0, step 0: unknown step type \"rrx\" (msccl_parser.cc:540-542)");
    test::Scratch dir("msccl_rrx");
    auto r = run("verify " + dir.file("bad.xml", x) + " --topology linear:3");
    CHECK(r.code == 2);
    CHECK(r.out.empty());
    CHECK(r.err == "collsched: error: " + dir.file("bad.xml") +
                       ":13:7: gpu 1, thread block 0, step 0: unknown step type \"rrx\" (msccl_parser.cc:540-542)\n");
}

TEST_CASE("msccl and chakra import: chunked tables read back with their chunks") {
    // the chunked bidirectional ring (C = 2, one round per step) round-trips exactly
    SendTable ring = compile_schedule("schedules/chunks/ring_allgather.sched", {"n=6", "C=2"});
    REQUIRE(ring.collective.chunks == 2);
    SendTable back = parse_msccl_ir(table_to_msccl(ring), "r.xml", {.topology = "ring:6"});
    CHECK(back.collective.chunks == 2);
    CHECK(back.transfers == ring.transfers);
    CHECK(back.messages().name(back.transfers[0].message) == "b(0,0)");
    // the traces too, rounds included
    std::string dir = fmt::format("/tmp/collsched_chunks_{}", ::getpid());
    std::filesystem::create_directories(dir);
    auto write = [&](const SendTable& t) {
        for (const ChakraFile& f : table_to_chakra(t, {.prefix = dir + "/t"})) {
            std::ofstream out(f.path, std::ios::binary);
            out << f.content;
        }
        return read_chakra(dir + "/t");
    };
    SendTable traced = write(ring);
    CHECK(traced.collective == ring.collective);
    CHECK(traced.transfers == ring.transfers);
    // the DGX-1 frontier point with C = 2 (S = 2, R = 3: its first step lasts 2 rounds)
    test::Scratch scratch("msccl_dgx");
    auto p = run("pareto --topology graph:" + source("schedules/machines/dgx1.json") + " --collective allgather --max-chunks 2 -d " +
                 scratch.file("frontier"));
    REQUIRE(p.code == 0);
    SendTable dgx = read_table(scratch.file("frontier/allgather-S2-R3-C2.json"));
    REQUIRE(dgx.collective.chunks == 2);
    REQUIRE(dgx.step_rounds == std::vector<std::uint32_t>{2});
    SendTable dgx_traced = write(dgx);
    CHECK(dgx_traced.transfers == dgx.transfers);
    CHECK(dgx_traced.step_rounds == dgx.step_rounds);
    // MSCCL-IR has no rounds: a connection sends one chunk per step, so the 2-round step is
    // levelled into two; the same chunks over the same channels, and a fixed point from there
    const std::string topo = dgx.topology->spec();
    SendTable dgx_back = parse_msccl_ir(table_to_msccl(dgx), "d.xml", {.topology = topo});
    CHECK(dgx_back.collective.chunks == 2);
    CHECK(channel_moves(dgx_back) == channel_moves(dgx));
    CHECK(dgx_back.steps() == 4);
    CHECK(verify_direct(dgx_back).holds());
    CHECK(verify_z3(dgx_back).holds());
    CHECK(parse_msccl_ir(table_to_msccl(dgx_back), "d.xml", {.topology = topo}).transfers == dgx_back.transfers);
    std::filesystem::remove_all(dir);
}

TEST_CASE("msccl import: in-place programs as msccl-tools writes them (rrs, rrcs, rcs in the input buffer) hold") {
    MscclReport r = check_msccl_ir(data("allreduce_ring_inplace.xml"), "x.xml");
    CHECK(r.holds);
    CHECK(r.summary == "x.xml: allreduce on 4 ranks, nchunksperloop 4, proto LL128, 1 channel; in place; 4 thread blocks, 28 steps");
    // a forward that does not reduce: every sum of chunk 0 misses rank 1's contribution
    std::string v = violations(data("allreduce_ring_inplace_rcs_not_reduced.xml"));
    CHECK(v.find("x.xml:8:7: rank 0, input chunk 0 (= output, in place) holds a({0,2,3},0), written by rank 0, thread block 0, step 4 "
                 "(receive-copy-send from 3 to 1, channel 0), which rank 3, thread block 0, step 3 (receive-reduce-copy-send from 2 "
                 "to 0, channel 0) sent, but it must hold a({0..3},0); it misses a(1,0) [wrong output]") == 0);
    // out of place, the same program computes nothing into the output buffer
    std::string x = data("allreduce_ring_inplace.xml");
    replace(x, R"(inplace="1")", R"(inplace="0")");
    CHECK(violations(x).find("rank 0, output chunk 0 holds no data, never written, but it must hold a({0..3},0) [wrong output]") !=
          std::string::npos);
}

TEST_CASE("msccl import: custom collectives are checked for deadlock and races, print where chunks go, and take --expect") {
    MscclReport r = check_msccl_ir(data("pipeline_custom.xml"), "p.xml");
    CHECK(r.holds);
    CHECK_FALSE(r.checked_goals);
    CHECK(r.chunk_map == "where each input chunk ends up (rank:output chunk):\n  in(0,0): 1:0\n  in(0,1): 1:1\n  in(1,0): 2:0\n"
                         "  in(1,1): 2:1\n  in(2,0): nowhere in an output\n  in(2,1): nowhere in an output\n");
    CHECK(violations(data("pipeline_custom_copy_too_early.xml")) ==
          "x.xml:14:7: rank 1, thread block 1, step 0 (receive from 0, channel 0): writes rank 1, scratch chunk 0 and rank 1, "
          "thread block 2, step 0 (copy, channel 0) reads it, with nothing ordering the two (a missing dependency) [data race]");
    // --expect: what it must compute, and a wrong expectation is a violation
    test::Scratch dir("msccl_expect");
    const std::string good = dir.file("good.json", R"({"outputs": [{"rank": 1, "chunk": 0, "holds": [[0, 0]]},
                                                                   {"rank": 2, "chunk": 1, "holds": [[1, 1]]}]})");
    const std::string bad = dir.file("bad.json", R"({"outputs": [{"rank": 2, "chunk": 1, "holds": [[0, 1]]}]})");
    const std::string prog = source("tests/data/msccl/pipeline_custom.xml");
    auto ok = run("verify " + prog + " --expect " + good);
    CHECK(ok.code == 0);
    CHECK(ok.out.find("holds: no deadlock, every transfer matched, no data race, and every output chunk holds what it must") !=
          std::string::npos);
    auto wrong = run("verify " + prog + " --expect " + bad);
    CHECK(wrong.code == 1);
    CHECK(wrong.out.find("rank 2, output chunk 1 holds in(1,1), written by rank 2, thread block 1, step 1 (copy, channel 0), but "
                         "it must hold in(0,1) [wrong output]") != std::string::npos);
    auto malformed = run("verify " + prog + " --expect " + dir.file("m.json", R"({"outputs": [{"rank": 9, "chunk": 0, "holds": [[0, 0]]}]})"));
    CHECK(malformed.code == 2);
    CHECK(malformed.err.find("m.json:1:14: outputs[0]: rank 9 is outside 0..2\n") != std::string::npos);
    // a custom program has no table form
    auto conv = run("convert " + prog + " --format json");
    CHECK(conv.code == 2);
    CHECK(conv.err.find("a custom collective has no table form") != std::string::npos);
}

TEST_CASE("msccl import: hostile files: deep nesting, missing attributes, bad nchunksperloop (exit 2), buffers and offsets that do not fit (refused, exit 1)") {
    // 100,000 nested elements, closed or not: refused at depth 64, no stack overflow
    std::string open, close;
    for (int i = 0; i < 100000; ++i) open += "<a>";
    for (int i = 0; i < 100000; ++i) close += "</a>";
    CHECK(import_refusal(open) == "x.xml:1:193: malformed MSCCL-IR XML: elements nested more than 64 deep (MSCCL-IR needs 4: <algo>, "
                           "<gpu>, <tb>, <step>)");
    CHECK(import_refusal(open + close) == import_refusal(open));
    test::Scratch dir("msccl_hostile");
    auto deep = run("verify " + dir.file("deep.xml", open));
    CHECK(deep.code == 2);
    const std::string ring = data("allgather_ring.xml");
    // attributes the executor's reader requires
    for (const char* attr : {"nchunksperloop", "proto", "nchannels"}) {
        std::string x = ring;
        const auto at = x.find(std::string(" ") + attr + "=\"");
        REQUIRE(at != std::string::npos);
        x.erase(at, x.find('"', x.find('"', at) + 1) + 1 - at);
        CHECK(import_refusal(x) == fmt::format("x.xml:1:1: <algo> has no attribute {}, which the executor's reader requires", attr));
    }
    for (const char* attr : {"cnt", "srcbuf", "hasdep", "depid"}) {
        std::string x = ring;
        const auto at = x.find(std::string(" ") + attr + "=\"");
        x.erase(at, x.find('"', x.find('"', at) + 1) + 1 - at);
        CHECK(import_refusal(x) == fmt::format("x.xml:4:7: <step> has no attribute {}, which the executor's reader requires", attr));
    }
    // nchunksperloop 0, negative, huge, not a multiple of ngpus, disagreeing with the buffers
    for (const char* n : {"0", "-4", "99999999"}) {
        std::string x = ring;
        replace(x, R"(nchunksperloop="4")", fmt::format("nchunksperloop=\"{}\"", n));
        CHECK(import_refusal(x).find(fmt::format("x.xml:1:1: nchunksperloop=\"{}\" is outside 1..1048576", n)) == 0);
    }
    std::string x = ring;
    replace(x, R"(nchunksperloop="4")", R"(nchunksperloop="6")");
    // how values fit together is the executor's refusal of a well-formed file: a finding (docs/errors.md)
    CHECK(import_refusal(x) == "");
    CHECK(violations(x) == "x.xml:1:1: nchunksperloop=\"6\" is not a multiple of ngpus=\"4\": the allgather buffers of one rank are "
                           "N/P chunks [refused]");
    x = ring;
    replace(x, R"(nchunksperloop="4")", R"(nchunksperloop="8")");
    CHECK(import_refusal(x).find("x.xml:2:3: gpu 0: i_chunks=\"1\"") == std::string::npos);  // 8/4 = 2 input chunks: i_chunks 1 fits
    x = ring;
    replace(x, R"(<gpu id="0" i_chunks="1" o_chunks="4")", R"(<gpu id="0" i_chunks="1" o_chunks="5")");
    CHECK(violations(x) == "x.xml:2:3: gpu 0: o_chunks=\"5\", but coll=\"allgather\" with nchunksperloop=\"4\" on 4 ranks has an "
                           "output buffer of 4 chunks [refused]");
    // an offset outside the declared buffer (the executor's check) and one outside the real buffer
    x = ring;
    replace(x, R"(<step s="0" type="s" srcbuf="o" srcoff="0")", R"(<step s="0" type="s" srcbuf="o" srcoff="7")");
    CHECK(violations(x) == "x.xml:4:7: gpu 0, thread block 0, step 0: source offset 7 of buffer o is outside -1..3 (o_chunks=\"4\"; "
                           "msccl_parser.cc:270-288) [refused]");
    x = ring;
    replace(x, R"(<step s="0" type="s" srcbuf="o" srcoff="0" dstbuf="o" dstoff="0" cnt="1")",
            R"(<step s="0" type="s" srcbuf="o" srcoff="3" dstbuf="o" dstoff="0" cnt="2")");
    CHECK(violations(x) == "x.xml:4:7: gpu 0, thread block 0, step 0: source chunks 3..4 of buffer o are outside the 4 chunks the "
                           "executor has there (nchunksperloop=\"4\", coll=\"allgather\") [refused]");
    auto cli = run("verify " + dir.file("offset.xml", x));
    CHECK(cli.code == 1);
    CHECK(cli.out.find("offset.xml:4:7: gpu 0, thread block 0, step 0: source chunks 3..4 of buffer o") != std::string::npos);
    cli = run("convert " + dir.file("offset.xml", x) + " --format json -o " + dir.file("t.json"));
    CHECK(cli.code == 1);
    CHECK_FALSE(std::filesystem::exists(dir.dir / "t.json"));
}

TEST_CASE("msccl import: the DGX-1 allreduce export verifies as a program (it was a false 'violated')") {
    test::Scratch dir("msccl_dgx1_ar");
    auto c = run("compile " + source("schedules/reduce/allreduce_dgx1_pareto.sched") + " -o " + dir.file("t.json"));
    REQUIRE(c.code == 0);
    REQUIRE(run("convert " + dir.file("t.json") + " --format msccl -o " + dir.file("t.xml")).code == 0);
    auto v = run("verify " + dir.file("t.xml"));
    CHECK(v.code == 0);
    CHECK(v.out.find("\nholds: ") != std::string::npos);
    auto t = run("verify " + dir.file("t.xml") + " --topology graph:" + source("schedules/machines/dgx1.json"));
    CHECK(t.code == 0);
    // over a topology without some of its links, a send between unconnected ranks is a violation
    auto ring = run("verify " + dir.file("t.xml") + " --topology ring:8");
    CHECK(ring.code == 1);
    CHECK(ring.out.find("ring:8 has no link from 0 to 2 (its route passes processor 1) [link]") != std::string::npos);
}

TEST_CASE("msccl import: the 1-chunk allreduce synthesized on multibox2x8 exports to a program that holds") {
    // the witness of `optimize --collective allreduce --chunks 1` on the two 8-GPU boxes (3 steps)
    test::Scratch dir("msccl_multibox");
    std::string sched = test::read_file(source("tests/data/msccl/multibox2x8_allreduce_c1.sched.in"));
    replace(sched, "@MULTIBOX@", source("schedules/machines/multibox2x8.json"));
    REQUIRE(run("convert " + dir.file("ar.sched", sched) + " --format msccl -o " + dir.file("ar.xml")).code == 0);
    auto v = run("verify " + dir.file("ar.xml") + " --topology graph:" + source("schedules/machines/multibox2x8.json"));
    CHECK(v.code == 0);
    CHECK(v.out.find("\nholds: ") != std::string::npos);
}

TEST_CASE("msccl export: an alltoall serves in-place calls when its table sends every slot before it receives into it") {
    // all pairs in one step: each receive into output chunk s waits for the send of input chunk s
    // (program order in their paired thread block), so the program holds in both modes
    const SendTable direct = test::complete_alltoall(4);
    const std::string both = table_to_msccl(direct);
    CHECK(both.find("coll=\"alltoall\" inplace=\"1\" outofplace=\"1\"") != std::string::npos);
    MscclReport r = check_msccl_ir(both, "a.xml", {.topology = "complete:4"});
    INFO(r.text());
    CHECK(r.holds);
    const std::string only = table_to_msccl(direct, {.inplace = true});
    CHECK(only.find("inplace=\"1\" outofplace=\"0\"") != std::string::npos);
    CHECK(only.find("type=\"cpy\"") == std::string::npos);  // i:g -> o:g is a copy onto itself in place
    CHECK(check_msccl_ir(only, "a.xml").holds);
    // with four instances per connection the receive and the send sit in different thread blocks: a depid
    const std::string spread = table_to_msccl(test::ebft_alltoall(8), {.channels = 2, .inplace = true});
    CHECK(check_msccl_ir(spread, "s.xml").holds);
    // GPU 0 receives m(1,0) in step 1 but sends m(0,1) from the same slot only in step 2
    auto topo = Topology::parse("complete:2");
    TableBuilder b(topo, topo->default_model(), Collective{CollectiveKind::alltoall, Node{0}, {}});
    b.hop(1, *topo->find_channel(Node{1}, Node{0}), b.messages().personal(1, 0));
    b.hop(2, *topo->find_channel(Node{0}, Node{1}), b.messages().personal(0, 1));
    const SendTable late = std::move(b).finish();
    const std::string out = table_to_msccl(late);
    CHECK(out.find("inplace=\"0\" outofplace=\"1\"") != std::string::npos);
    CHECK(check_msccl_ir(out, "l.xml").holds);
    std::string why;
    try {
        table_to_msccl(late, {.inplace = true});
    } catch (const InputError& e) {
        why = e.what();
    }
    CHECK(why == "cannot write MSCCL-IR for alltoall on complete:2: GPU 0 receives m(1,0) into output chunk 1 in step 1 but sends "
                 "m(0,1) from that chunk (input chunk 1, the same memory in place) only in step 2: in place the receive would "
                 "overwrite it first (drop --inplace for an out-of-place program)");
    // and the reader agrees: the same program claimed in place computes the wrong output there
    std::string claimed = out;
    replace(claimed, "inplace=\"0\"", "inplace=\"1\"");
    MscclReport wrong = check_msccl_ir(claimed, "l.xml");
    CHECK_FALSE(wrong.holds);
    CHECK(wrong.findings == std::vector<std::string>{
                                "l.xml:17:7: rank 1, input chunk 0 (= output, in place) holds m(1,0), written by rank 1, thread block 1, "
                                "step 1 (receive from 0, channel 0), which rank 0, thread block 1, step 1 (send to 1, channel 0) sent, "
                                "but it must hold m(0,1) [wrong output] (in place)"});
}

TEST_CASE("msccl export: --instances I copies every thread block onto channels of its own and splits every chunk in I") {
    Diagnostics diags;
    auto ring = compile_file(source("schedules/reduce/allreduce_ring.sched"), {"n=8"}, {}, diags);
    REQUIRE(ring.has_value());
    auto count = [](const std::string& xml, const std::string& what) {
        std::size_t n = 0;
        for (std::size_t at = xml.find(what); at != std::string::npos; at = xml.find(what, at + 1)) ++n;
        return n;
    };
    const std::string one = table_to_msccl(*ring, {.coalesce = false});
    const std::string two = table_to_msccl(*ring, {.instances = 2});
    CHECK(count(two, "<tb ") == 2 * count(one, "<tb "));
    CHECK(count(two, "<step ") == 2 * count(one, "<step "));
    CHECK(two.find("nchannels=\"2\" nchunksperloop=\"16\"") != std::string::npos);
    CHECK(two.find("i_chunks=\"16\" o_chunks=\"16\"") != std::string::npos);
    MscclReport r = check_msccl_ir(two, "two.xml", {.topology = "ring:8"});
    INFO(r.text());
    CHECK(r.holds);
    // 32 channels in all: ring:8 allgather with 32 instances is written, 33 refused
    const SendTable ag = test::ring_allgather(8);
    CHECK(check_msccl_ir(table_to_msccl(ag, {.instances = 32}), "ag.xml").holds);
    const std::string table = source("tests/data/ring8_allgather.json");
    auto r33 = run("convert " + table + " --format msccl --instances 33");
    CHECK(r33.code == 2);
    CHECK(r33.err == "collsched: error: --instances 33 is outside 1..32 (an instance needs a channel of its own; MAXCHANNELS)\n");
    auto r2 = run("convert " + table + " --format msccl --instances 2");
    CHECK(r2.code == 0);
    CHECK(r2.out.find("nchannels=\"2\" nchunksperloop=\"16\"") != std::string::npos);
}
