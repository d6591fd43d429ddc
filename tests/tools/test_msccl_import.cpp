// Reading MSCCL-IR (compiler/msccl_import.hpp): the programs of tests/data/msccl, written the way
// MSCCLang's writer prints them (tests/data/msccl/make_msccl.py), import, level into tables both
// witnesses accept, and read back what collsched exports; their mutated copies and broken
// programs are refused with the rank, thread block and step.
#include <doctest/doctest.h>

#include <unistd.h>

#include <algorithm>
#include <cstdlib>

#include <fmt/ranges.h>

#include "compiler/export_msccl.hpp"
#include "compiler/lower.hpp"
#include "compiler/msccl_import.hpp"
#include "dsl/diagnostics.hpp"
#include "runtime/simulator.hpp"
#include "tests/compiler/export_fixtures.hpp"
#include "tests/compiler/msccl_replay.hpp"
#include "tests/tools/cli_run.hpp"
#include "tools/reproduce.hpp"
#include "verifier/direct.hpp"

using namespace collsched;
using namespace collsched::tools;
using collsched::test::run;
using collsched::test::source;

namespace {

std::string data(const std::string& name) { return test::read_file(source("tests/data/msccl/" + name)); }

SendTable import(const std::string& name, const std::string& topology = "") {
    return parse_msccl_ir(data(name), name, {.topology = topology});
}

std::string refusal(const std::string& text, const std::string& topology = "") {
    try {
        parse_msccl_ir(text, "x.xml", {.topology = topology});
    } catch (const InputError& e) {
        return e.what();
    }
    return "";
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

TEST_CASE("msccl import: the mutated copies are caught with rank, thread block and step") {
    CHECK(refusal(data("alltoall_two_step_dropped_dependency.xml")) ==
          "x.xml:20:7: rank 0, thread block 4, step 1 (send to 2, channel 4): reads chunk s[0] and rank 0, thread block 0, step 0 "
          "(copy, channel 0) writes it with nothing ordering the two (a missing dependency) [data race]");
    CHECK(refusal(data("alltoall_two_step_swapped_sends.xml")) ==
          "x.xml:27:7: rank 1: output chunk 0 holds m(0,3), written by rank 1, thread block 0, step 2 (receive from 0, channel 0), "
          "which rank 0, thread block 3, step 1 (send to 1, channel 0) sent, but the alltoall needs m(0,1) there [completeness]\n"
          "x.xml:65:7: rank 3: output chunk 0 holds m(0,1), written by rank 3, thread block 0, step 2 (receive from 1, channel 5), "
          "which rank 1, thread block 3, step 1 (send to 3, channel 5) sent, but the alltoall needs m(0,3) there [completeness]");
    CHECK(refusal(data("allgather_ring_missing_receive.xml")) ==
          "x.xml:14:7: rank 1, thread block 0, step 2 (receive-copy-send from 0 to 2, channel 0): is never received: rank 2 "
          "receives 2 times from rank 1 on channel 0 and this is send 3");
    // on the command line: exit 2, the same lines
    auto r = run("verify " + source("tests/data/msccl/allgather_ring_missing_receive.xml"));
    CHECK(r.code == 2);
    CHECK(r.err.find("rank 1, thread block 0, step 2 (receive-copy-send from 0 to 2, channel 0): is never received") !=
          std::string::npos);
}

TEST_CASE("msccl import: waits that never end are deadlocks named by rank, thread block and step") {
    SUBCASE("a receive before the send it waits for, on both ranks") {
        // rank 0 and 1 each receive from the other before sending: a cycle under any buffering
        std::string x = R"(<algo name="x" proto="Simple" nchannels="1" nchunksperloop="2" ngpus="2" coll="allgather" inplace="0">
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
        CHECK(refusal(x) == "x.xml:4:7: rank 0, thread block 0, step 0 (receive from 1, channel 0) waits for rank 1, thread block 0, "
                            "step 1 (send to 0, channel 0) waits for rank 1, thread block 0, step 0 (receive from 0, channel 0) "
                            "waits for rank 0, thread block 0, step 1 (send to 1, channel 0) waits for the first again [deadlock]");
    }
    SUBCASE("a dependency on a step the executor never signals (hasdep=\"0\")") {
        std::string x = data("alltoall_two_step.xml");
        // rank 0, thread block 0, step 0 is waited for by the node-link send
        replace(x, R"(<step s="0" type="cpy" srcbuf="i" srcoff="2" dstbuf="s" dstoff="0" cnt="1" depid="-1" deps="-1" hasdep="1" />)",
                R"(<step s="0" type="cpy" srcbuf="i" srcoff="2" dstbuf="s" dstoff="0" cnt="1" depid="-1" deps="-1" hasdep="0" />)");
        std::string why = refusal(x);
        CHECK(why.find("rank 0, thread block 4, step 1 (send to 2, channel 4): waits for thread block 0, step 0, but neither that "
                       "step nor a later one of its thread block has hasdep=\"1\", so the executor never signals it [deadlock]") !=
              std::string::npos);
    }
}

TEST_CASE("msccl import: in-place programs are checked with the input aliased to the output") {
    // collsched's alltoall is out of place only: in place, a receive overwrites an input chunk
    // that a send of the same rank still has to read
    std::string x = table_to_msccl(test::complete_alltoall(3));
    replace(x, R"(inplace="0")", R"(inplace="1")");
    std::string why = refusal(x);
    CHECK(why.find("(in place): writes chunk o[1] and rank 0, thread block ") != std::string::npos);
    CHECK(why.find("[data race]") != std::string::npos);
    // the allgather and the broadcast are correct both ways (in place, the local copy copies a
    // chunk onto itself, which is no access)
    CHECK_NOTHROW(parse_msccl_ir(table_to_msccl(test::ring_allgather(5)), "r.xml", {.topology = "ring:5"}));
}

TEST_CASE("msccl import: reductions, other collectives, the executor's rules and malformed XML are refused") {
    std::string ring = data("allgather_ring.xml");
    std::string x = ring;
    replace(x, R"(coll="allgather")", R"(coll="allreduce")");
    CHECK(refusal(x) == "x.xml:1:1: coll=\"allreduce\" is a reduction; collsched reads only the collectives without reductions "
                        "(alltoall, allgather, broadcast) until it models reductions");
    x = ring;
    replace(x, R"(type="rcs")", R"(type="rrc")");
    CHECK(refusal(x).find("x.xml:5:7: gpu 0, thread block 0, step 1: type=\"rrc\" is a reduction") == 0);
    x = ring;
    replace(x, R"(<step s="1" type="rcs")", R"(<step s="2" type="rcs")");
    CHECK(refusal(x).find("step s=\"2\" is its step number 1; the executor counts steps itself") != std::string::npos);
    // more steps than MSCCL_MAX_NUM_STEPS in a thread block
    std::string long_ring = table_to_msccl(test::ring_allgather(66), {.max_steps = 65});
    CHECK(refusal(long_ring, "ring:66").find("has 65 steps; the executor allows at most 64 [MSCCL_MAX_NUM_STEPS]") !=
          std::string::npos);
    CHECK_NOTHROW(parse_msccl_ir(long_ring, "l.xml", {.topology = "ring:66", .max_steps = 65}));
    // what ElementTree and other writers add is fine: a declaration, comments, tabs
    x = "<?xml version='1.0' encoding='utf-8'?>\n<!-- MSCCLang -->\n" + ring;
    replace(x, "  <gpu id=\"1\"", "\t<gpu id=\"1\"");
    CHECK(parse_msccl_ir(x, "x.xml", {.topology = "ring:4"}).transfers == test::ring_allgather(4).transfers);
    CHECK(refusal("<algo ngpus=\"2\" coll=\"alltoall\">\n  <gpu id=\"0\"\n</algo>") ==
          "x.xml:3:1: malformed MSCCL-IR XML: <gpu> is not closed with '>'");
    CHECK(refusal(ring, "ring:5") == "x.xml: the program has 4 ranks but ring:5 has 5 processors");
    auto r = run("verify " + source("tests/data/ebft4_alltoall.json") + " --topology ring:4");
    CHECK(r.code == 2);
    CHECK(r.err == "collsched: error: --topology applies to MSCCL-IR files only (tables and schedules name theirs)\n");
}

TEST_CASE("msccl export: every catalog schedule passes the executor's load rules or is refused with the reason") {
    Catalog catalog = read_catalog(source("schedules/catalog.json"));
    // the default suite stops at 64 processors; ctest -L slow runs msccl_catalog_1024 (6 minutes)
    const char* env = std::getenv("COLLSCHED_MSCCL_CATALOG_MAX");
    const std::uint64_t max_size = env ? std::strtoull(env, nullptr, 10) : 64;
    int written = 0, refused = 0;
    for (const CatalogEntry& e : catalog.entries)
        for (const auto& row : e.rows) {
            std::uint64_t size = 1;
            std::vector<std::string> defines;
            for (const auto& [k, v] : row) {
                defines.push_back(fmt::format("{}={}", k, v));
                if (std::find(e.size.begin(), e.size.end(), k) != e.size.end()) size *= std::uint64_t(v);
            }
            if (size > max_size) continue;
            CAPTURE(e.file);
            CAPTURE(fmt::format("{}", fmt::join(defines, " ")));
            Diagnostics diags;
            auto t = compile_file(e.file, defines, {}, diags);
            REQUIRE(t.has_value());
            std::string xml;
            try {
                xml = table_to_msccl(*t);
            } catch (const InputError& err) {
                // a rule of the executor, named in brackets, or a table MSCCL-IR cannot express
                std::string why = err.what();
                CAPTURE(why);
                const bool named = why.find(" [") != std::string::npos || why.find("MSCCL-IR export covers") != std::string::npos ||
                                   why.find("MSCCL-IR cannot express") != std::string::npos ||
                                   why.find("comes back to itself") != std::string::npos;
                CHECK(named);
                ++refused;
                continue;
            }
            test::XmlNode algo = test::MscclLexer(xml).parse();
            CHECK(test::msccl_limits(algo) == "");
            ++written;
        }
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
