// Combined values a(i..j) and bundles b(0)+b(4) (docs/semantics.md, "Combined values and
// bundles"): names and ids, the collectives reduce and prefix, the three witnesses on hand-made
// tables with exact counterexamples, the wormhole cost with payloads, the file formats, the DSL
// printer round trip and the exporters that refuse composites.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "compiler/interop/export_msccl.hpp"
#include "compiler/io/export_ranks.hpp"
#include "compiler/lower/lower.hpp"
#include "compiler/io/ranks_import.hpp"
#include "compiler/io/table_io.hpp"
#include "compiler/io/table_printer.hpp"
#include "dsl/diagnostics.hpp"
#include "runtime/simulator.hpp"
#include "tests/tools/cli_run.hpp"
#include "tests/tools/compile_fixtures.hpp"
#include "verifier/check/direct.hpp"
#include "verifier/check/z3_engine.hpp"

using namespace collsched;
using collsched::test::compile_ok;
using collsched::test::compile_err;
using collsched::test::first_violation;
using collsched::test::verify_all;

namespace {


const char* kReduce = R"(
topology ring(4)
model hop(ports = single)
collective reduce(0)
step 1 { send 3 -> 2 msg a(3) }
step 2 { send 2 -> 1 msg a(2 .. 3) }
step 3 { send 1 -> 0 msg a(1 .. 3) }
)";

}  // namespace

TEST_CASE("composites: names, parsing, interning and canonical ids") {
    Composites reg(Messages(4).base_size());
    Messages ms(4, &reg);
    std::string why;
    auto c = parse_message("a(1..3)", 4, reg);
    REQUIRE(c);
    CHECK(idx(*c) == ms.base_size());
    CHECK(ms.name(*c) == "a(1..3)");
    CHECK(ms.key(*c) == MessageKey{MessageKind::combined, 1, 3});
    CHECK(parse_message("a(2..2)", 4, reg) == ms.value(2));  // a(i..i) is a(i)
    auto b = parse_message("b(3)+m(0,1)+a(2)", 4, reg);
    REQUIRE(b);
    CHECK(ms.name(*b) == "m(0,1)+b(3)+a(2)");  // parts in id order
    CHECK(parse_message("m(0,1)+a(2)+b(3)", 4, reg) == b);
    CHECK(ms.parse("a(1..3)") == c);
    CHECK(ms.parse("a(0..3)") == std::nullopt);  // not interned: Messages::parse only finds
    CHECK_FALSE(parse_message("a(3..1)", 4, reg, &why));
    CHECK(why == "a(3..1): a combined value a(i..j) needs 0 <= i <= j < 4");
    CHECK_FALSE(parse_message("b(0)+b(0)", 4, reg, &why));
    CHECK(why == "b(0)+b(0): a bundle lists a message twice");
    CHECK_FALSE(parse_message("b(0)+a(0..1)", 4, reg, &why));
    CHECK(why == "b(0)+a(0..1): a bundle joins base messages, not combined values or partials");
    CHECK_FALSE(parse_message("a(0..4)", 4, reg, &why));
    // Canonical order: combined values by range, then bundles by parts, whatever the order met.
    SendTable t = compile_ok("topology ring(4)\nmodel wormhole(ts = 1, tc = 1)\ncollective custom\n"
                             "step 1 { send 0 -> 1 msg b(0) }\nstep 2 { send 1 -> 2 msg b(1) + b(0)  send 0 -> 1 msg a(0 .. 0) }\n"
                             "step 3 { send 1 -> 2 msg a(0 .. 1) }\n"
                             "require a(0 .. 1) at 2\n");
    Messages tm = t.messages();
    REQUIRE(t.composites);
    CHECK(t.composites->size() == 2);
    CHECK(tm.name(MessageId{static_cast<std::uint32_t>(tm.base_size())}) == "a(0..1)");
    CHECK(tm.name(MessageId{static_cast<std::uint32_t>(tm.base_size() + 1)}) == "b(0)+b(1)");
}

TEST_CASE("composites: a partial interned from its sources is the composite's, and the canonical order is the keys' order") {
    // intern_partial (the buffers of reductions, without building a composite per arrival) gives intern's id, new or
    // met before; canonicalize orders by the key (kind, lo, hi, then the parts and the sources as one sequence),
    // compared in place
    Composites reg(Messages(8).base_size());
    std::vector<std::vector<std::uint32_t>> sets{{0, 1}, {2, 5, 7}, {0, 1, 2, 3, 4, 5, 6, 7}, {1, 2}, {0, 1, 2}, {3, 4, 5, 6}};
    std::vector<MessageId> ids;
    for (std::uint32_t chunk : {1u, 0u})
        for (const auto& s : sets) ids.push_back(reg.intern_partial(chunk, s));
    ids.push_back(reg.intern(Composite{MessageKind::combined, 2, 5, {}, {}}));
    ids.push_back(reg.intern(Composite{MessageKind::bundle, 0, 0, {MessageId{1}, MessageId{3}}, {}}));
    REQUIRE(reg.size() == ids.size());
    std::size_t k = 0;
    for (std::uint32_t chunk : {1u, 0u})
        for (const auto& s : sets) {
            CHECK(reg.intern(Composite{MessageKind::partial, chunk, 0, {}, s}) == ids[k]);
            CHECK(reg.intern_partial(chunk, s) == ids[k]);
            CHECK(reg.find(Composite{MessageKind::partial, chunk, 0, {}, s}) == ids[k++]);
        }
    CHECK(reg.size() == ids.size());
    auto key = [](const Composite& c) {
        std::vector<std::uint32_t> v{static_cast<std::uint32_t>(c.kind), c.lo, c.hi};
        for (MessageId p : c.parts) v.push_back(idx(p));
        v.insert(v.end(), c.sources.begin(), c.sources.end());
        return v;
    };
    std::vector<Composite> before = reg.items();
    const std::vector<MessageId> remap = reg.canonicalize();
    for (std::size_t i = 0; i + 1 < reg.size(); ++i) CHECK(key(reg.items()[i]) < key(reg.items()[i + 1]));
    for (std::size_t i = 0; i < before.size(); ++i) {
        CHECK(reg.at(remap[i]) == before[i]);
        CHECK(reg.find(before[i]) == remap[i]);  // the index follows the new order
    }
}

TEST_CASE("composites: reduce and prefix collectives, CLI spelling") {
    auto topo = Topology::parse("ring:4");
    CHECK(Collective::parse("reduce:2", *topo).to_string() == "reduce:2");
    CHECK(Collective::parse("prefix", *topo).to_string() == "prefix");
    CHECK_THROWS_WITH_AS(Collective::parse("prefix:1", *topo), "collective 'prefix:1': 'prefix' takes no root", InputError);
    Collective p = Collective::parse("prefix", *topo);
    int goals = 0;
    p.for_each_value_goal(4, [&](std::uint32_t lo, std::uint32_t hi, Node at) {
        CHECK(lo == 0);
        CHECK(hi == idx(at));
        ++goals;
    });
    CHECK(goals == 3);  // a(0..0) = a(0) holds at time 0
    CHECK(p.goal_count(4) == 3);
}

TEST_CASE("composites: a reduce holds on all three witnesses, and a gap is a causality violation naming what the sender holds") {
    SendTable t = compile_ok(kReduce);
    VerifyReport ok = verify_all(t, test::Wording::any);
    CHECK(ok.holds());
    CHECK(ok.steps == 3);

    // 1 forwards a(1..3) before it holds a(2..3): it can form only a(1).
    std::string bad = kReduce;
    bad.replace(bad.find("step 2 {"), 6, "step 4");
    SendTable b = compile_ok(bad);
    VerifyReport r = verify_all(b, test::Wording::any);
    CHECK(r.status[static_cast<std::size_t>(Property::causality)] == Status::violated);
    CHECK(first_violation(r, Property::causality) == "processor 1 sends a(1..3) in step 3 but holds only a(1)");
    SimReport s = simulate(b);
    REQUIRE(s.violation);
    CHECK(s.violation->message == "step 3: processor 1 sends a(1..3) on 1->0 but at the end of step 2 it holds only a(1)");
}

TEST_CASE("composites: receiving a(i..j) does not give its parts, and a missing prefix names what the processor holds") {
    // 0 sends a(0) to 1 (1 forms a(0..1)), then 1 sends a(0..1) to 2, which holds a(0..1) and
    // a(2) but not a(1) on its own: it cannot send a(1..2).
    SendTable t = compile_ok(R"(
topology linear(4)
collective prefix
step 1 { send 0 -> 1 msg a(0) }
step 2 { send 1 -> 2 msg a(0 .. 1) }
step 3 { send 2 -> 3 msg a(1 .. 2) }
)");
    VerifyReport r = verify_all(t, test::Wording::any);
    CHECK(first_violation(r, Property::causality) == "processor 2 sends a(1..2) in step 3 but holds no value that starts at a(1)");
    CHECK(r.violation_count[static_cast<std::size_t>(Property::completeness)] == 1);
    CHECK(first_violation(r, Property::completeness) == "processor 3 never holds a(0..3): at the end it holds no value that starts at a(0)");
}

TEST_CASE("composites: bundles under wormhole timing, their cost with payloads, and a part the sender lacks") {
    const char* text = R"(
topology ring(4)
model wormhole(ts = 10, tc = 1)
collective allgather
step 1 { send 0 -> 1 msg b(0)  send 2 -> 3 msg b(2) }
step 2 { send 1 -> 2 msg b(0) + b(1)  send 3 -> 0 msg b(2) + b(3) }
step 3 { send 2 -> 3 msg b(0) + b(1)  send 0 -> 1 msg b(2) + b(3) }
step 4 { send 3 -> 0 msg b(1)  send 1 -> 2 msg b(3) }
)";
    SendTable t = compile_ok(text);
    VerifyReport r = verify_all(t, test::Wording::any);
    CHECK(r.holds());
    CHECK(r.cost == 46);  // rounds of payload 1, 2, 2, 1: 4 * 10 + 1 + 2 + 2 + 1
    CHECK(simulate(t).cost == 46);
    CHECK(verify_z3(t).cost == 46);
    CHECK(cost_breakdown(t) == "sum over 4 rounds of ts + tc * payload, largest payload per round: 1, 2, 2, 1");
    CHECK(format_report(r, t).find("wormhole cost: 46 (sum over 4 rounds") != std::string::npos);

    // The compiler names the part a bundle's sender lacks (E046) ...
    std::string bad = text;
    bad.replace(bad.find("send 3 -> 0 msg b(2) + b(3)"), 27, "send 0 -> 3 msg b(0) + b(1)");
    CHECK(compile_err(bad).find("test.sched:6:39: error[E046]: processor 0 does not hold b(1) in step 2: it starts at processor 1, "
                                "and it first reaches 0 at the end of step 4") == 0);
    // ... and so do the verifier and the simulator for a table file.
    const char* json = R"J({"format": "collsched.table/1", "topology": "ring:4", "collective": "allgather",
 "model": {"timing": "wormhole", "ts": 10, "tc": 1},
 "transfers": [{"step": 1, "from": "0", "to": "1", "msg": "b(0)"},
               {"step": 2, "from": "1", "to": "2", "msg": "b(0)+b(1)"},
               {"step": 2, "from": "0", "to": "3", "msg": "b(1)+b(0)"}]})J";
    SendTable b = parse_table_json(json, "t.json");
    VerifyReport v = verify_all(b, test::Wording::any);
    CHECK(first_violation(v, Property::causality) == "0 sends b(0)+b(1) in round 2 but does not hold its part b(1)");
    SimReport sv = simulate(b);
    REQUIRE(sv.violation);
    CHECK(sv.violation->message == "round 2: processor 0 sends b(0)+b(1) on 0->3 but at the end of round 1 it lacks its part b(1)");
}

TEST_CASE("composites: bundles need wormhole timing (DSL E047, table files exit 2 with one message)") {
    CHECK(compile_err("topology ring(4)\nmodel hop\ncollective allgather\nstep 1 { send 0 -> 1 msg b(0) + b(3) }\n") ==
          "test.sched:4:31: error[E047]: b(0)+b(3) is a bundle, and bundles need timing=wormhole: under hop timing a step moves one "
          "message per unit of capacity (send the parts one by one)\n"
          "  step 1 { send 0 -> 1 msg b(0) + b(3) }\n"
          "                                ^\n");
    const char* json = R"J({"format": "collsched.table/1", "topology": "ring:4", "collective": "allgather",
 "transfers": [{"step": 1, "from": "0", "to": "1", "msg": "b(0)+b(3)"}]})J";
    CHECK_THROWS_WITH_AS(parse_table_json(json, "t.json"),
                         "t.json: step 1: b(0)+b(3) is a bundle, and bundles need timing=wormhole: under hop timing a step moves one "
                         "message per unit of capacity",
                         InputError);
    CHECK_THROWS_WITH_AS(parse_table_csv("# topology=ring:4\nstep,from,to,message\n1,0,1,a(3..1)\n", "t.csv"),
                         "t.csv:3: transfers[0] (step 1): unknown message 'a(3..1)' (expected m(s,d), b(s), a(s), a(i..j), a partial a({0..3}) or a bundle "
                         "such as b(0)+b(4), with processors 0..3): a(3..1): a combined value a(i..j) needs 0 <= i <= j < 4",
                         InputError);
}

TEST_CASE("composites: JSON, CSV, per-rank JSON and the DSL printer carry them by name and round-trip") {
    SendTable t = compile_ok(R"(
topology ring(4)
model wormhole(ts = 2, tc = 1)
collective prefix
step 1 { send 0 -> 1 msg a(0) }
step 2 { send 1 -> 2 msg a(0) + a(1) }
step 3 { send 2 -> 3 msg a(0 .. 2) }
)");
    CHECK(verify_all(t, test::Wording::any).holds());
    std::string json = table_to_json(t);
    CHECK(json.find(R"J("msg": "a(0..2)")J") != std::string::npos);
    CHECK(json.find(R"J("msg": "a(0)+a(1)")J") != std::string::npos);
    CHECK(json.find(R"J("collective": "prefix")J") != std::string::npos);
    SendTable back = parse_table_json(json, "t.json");
    CHECK(back.transfers == t.transfers);
    CHECK(table_to_json(back) == json);
    SendTable csv = parse_table_csv(table_to_csv(t), "t.csv");
    CHECK(csv.transfers == t.transfers);
    // table -> DSL -> table
    SendTable again = compile_ok(table_to_dsl(t));
    CHECK(again.transfers == t.transfers);
    CHECK(again.collective == t.collective);
    // per-rank JSON names them and reads back
    std::string ranks = table_to_ranks(t);
    CHECK(ranks.find("a(0..2)") != std::string::npos);
    CHECK(ranks.find("a(0..3)") != std::string::npos);  // the goal of rank 3
    CHECK(parse_ranks_json(ranks, "r.json").transfers == t.transfers);
}

TEST_CASE("composites: MSCCL-IR refuses them") {
    SendTable t = compile_ok("topology ring(4)\nmodel wormhole(ts = 1, tc = 1)\ncollective allgather\n"
                             "step 1 { send 0 -> 1 msg b(0) }\nstep 2 { send 1 -> 2 msg b(0) + b(1) }\n");
    CHECK_THROWS_WITH_AS(table_to_msccl(t), doctest::Contains("MSCCL-IR cannot express combined values (a(i..j)) or bundles"),
                         InputError);
}

TEST_CASE("composites: on the command line, verify and simulate print the cost with payloads, optimize and mpirun refuse") {
    std::string sched = std::string(COLLSCHED_SOURCE_DIR) + "/tests/golden/ok/composite_bundles.sched";
    test::Run v = test::run("verify " + sched);
    CHECK(v.code == 0);
    CHECK(v.out.find("wormhole cost: 46 (sum over 4 rounds of ts + tc * payload, largest payload per round: 1, 2, 2, 1)") !=
          std::string::npos);
    test::Run s = test::run("simulate " + sched);
    CHECK(s.code == 0);
    CHECK(s.out.find("cost: sum over 4 rounds of ts + tc * payload, largest payload per round: 1, 2, 2, 1 = 46") != std::string::npos);
    // reduce is optimized directly or by duality with broadcast (docs/synthesis.md) where either applies: through
    // routers that forward (cbft:4's default model, replicate=no) by duality; routers that copy are refused by both
    test::Run o = test::run("optimize --topology cbft:4 --collective reduce:0");
    CHECK(o.code == 0);
    CHECK(o.out.find("reduce:0: 5 steps (proved; lower bound 5)") != std::string::npos);
    test::Run y = test::run("optimize --topology cbft:4 --collective reduce:0 --model replicate=yes");
    CHECK(y.code == 2);
    CHECK(y.err == "collsched: error: neither method takes reduce:0 on cbft:4: the direct encoding: cbft:4 has routers; the "
                   "direct encoding of combining takes routers that forward each partial once (replicate=no), not routers that "
                   "keep and copy it (replicate=yes); by duality: cbft:4 has routers and the model "
                   "replicate=yes: the reverse of a router copying the broadcast's or allgather's data is a router combining "
                   "partials; the duality takes routers that forward (replicate=no)\n");
    test::Run ring = test::run("optimize --topology ring:4 --collective reduce:0");
    CHECK(ring.code == 0);
    CHECK(ring.out.find("reduce:0: 2 steps (proved; lower bound 2)") != std::string::npos);
    test::Run m = test::run("mpirun " + sched);
    CHECK(m.code == 2);
    CHECK(m.out.empty());
}
