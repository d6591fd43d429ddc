// Commutative reductions (docs/semantics.md, "Reductions: partials and the buffer rule"):
// partial names, the buffer rule in the three witnesses (direct checker, Z3, simulator) with
// exact counterexamples (a contribution counted twice, a partial not held, a missing
// contribution), the DSL's partial(p, c), and the library's reduction schedules for several n.
#include <doctest/doctest.h>

#include <filesystem>
#include <random>
#include <string>

#include <fmt/format.h>

#include "compiler/interop/export_msccl.hpp"
#include "compiler/lower/lower.hpp"
#include "compiler/table/partials.hpp"
#include "compiler/io/table_io.hpp"
#include "compiler/io/table_printer.hpp"
#include "dsl/diagnostics.hpp"
#include "runtime/simulator.hpp"
#include "tests/compiler/msccl_replay.hpp"
#include "verifier/check/direct.hpp"
#include "verifier/synth/search/duality.hpp"
#include "verifier/time/constructions.hpp"
#include "verifier/check/z3_engine.hpp"
#include "tests/tools/cli_run.hpp"
#include "tests/tools/compile_fixtures.hpp"

using namespace collsched;
using collsched::test::compile_ok;
using collsched::test::first_violation;
using collsched::test::verify_all;

namespace {

SendTable compile_library(const std::string& rel, std::int64_t n) {
    Diagnostics diags;
    auto t = compile_file(std::string(COLLSCHED_SOURCE_DIR) + "/" + rel, {fmt::format("n={}", n)}, {}, diags);
    INFO(rel << " n=" << n << ": " << diags.render());
    REQUIRE(t.has_value());
    return std::move(*t);
}


}  // namespace

TEST_CASE("reductions: partial names and parsing") {
    Composites reg(Messages(8).base_size());
    Messages ms(8, &reg);
    std::string why;
    auto m = parse_message("a({0..3,6})", 8, reg, &why);
    REQUIRE(m);
    CHECK(ms.name(*m) == "a({0..3,6})");
    CHECK(ms.key(*m).kind == MessageKind::partial);
    CHECK(parse_message("a({6,0,1,2,3})", 8, reg) == m);  // any order, one id
    CHECK(parse_message("a({4})", 8, reg) == ms.value(4));  // a set of one is the value
    CHECK(ms.name(*parse_message("a({1,2})", 8, reg)) == "a({1,2})");
    CHECK_FALSE(parse_message("a({1,1})", 8, reg, &why));
    CHECK(why == "'a({1,1})': a source is listed twice (a partial counts each contribution once)");
    CHECK_FALSE(parse_message("a({0..8})", 8, reg, &why));
    CHECK(why == "'a({0..8})': source 8 is not a processor (0..7)");
    CHECK(ms.parse("a({0..3,6})") == m);
}

TEST_CASE("reductions: the buffer rule") {
    SourceSet b(3);
    CHECK(apply_arrival(b, {0, 1}) == Arrival::combined);
    CHECK(b == std::vector<std::uint32_t>{0, 1, 3});
    CHECK(apply_arrival(b, {0, 1, 2, 3}) == Arrival::replaced);  // covers: a copy
    CHECK(b == std::vector<std::uint32_t>{0, 1, 2, 3});
    std::string twice;
    CHECK(apply_arrival(b, {2, 3, 4}, &twice) == Arrival::counted_twice);
    CHECK(twice == "a(2) and a(3)");
    CHECK(b == std::vector<std::uint32_t>{0, 1, 2, 3});  // unchanged
    CHECK(goal_gap(SourceSet({0, 1, 2, 4}), SourceSet::range(0, 4)) == "it misses a(3)");
    CHECK(goal_gap(SourceSet({0, 1, 2}), SourceSet::range(0, 1)) == "it also counts a(2)");
}

TEST_CASE("reductions: the interned buffers follow the buffer rule of SourceSet, arrival by arrival") {
    // PartialBuffers (sets interned, a buffer the number of its set) against the rule on sorted
    // vectors, on random arrivals of what other buffers hold, sums of every source among them
    const std::uint32_t P = 6, C = 2;
    std::mt19937 rng(7);
    PartialBuffers fast(P, C);
    std::vector<SourceSet> slow;
    for (std::uint32_t p = 0; p < P; ++p)
        for (std::uint32_t c = 0; c < C; ++c) slow.emplace_back(p);
    auto as_vector = [&](PartialBuffers::SetId s) {
        const auto v = fast.sources(s);
        return std::vector<std::uint32_t>(v.begin(), v.end());
    };
    int kinds[3] = {0, 0, 0};
    for (int i = 0; i < 4000; ++i) {
        const std::uint32_t from = rng() % P, to = rng() % P, c = rng() % C;
        const bool all = rng() % 10 == 0;
        const PartialBuffers::SetId arriving = all ? fast.intern(SourceSet::range(0, P - 1).items()) : fast.held(from, c);
        const std::vector<std::uint32_t> sources = all ? SourceSet::range(0, P - 1).items() : slow[from * C + c].items();
        REQUIRE(as_vector(arriving) == sources);
        std::string twice_fast, twice_slow;
        const Arrival a = fast.arrive(to, c, arriving, &twice_fast), b = apply_arrival(slow[to * C + c], sources, &twice_slow);
        REQUIRE(a == b);
        REQUIRE(twice_fast == twice_slow);
        REQUIRE(slow[to * C + c] == as_vector(fast.held(to, c)));
        ++kinds[static_cast<int>(a)];
    }
    CHECK(kinds[0] > 0);  // every outcome met
    CHECK(kinds[1] > 0);
    CHECK(kinds[2] > 0);
    // equal sets are one number; a table's message names each (set, chunk) once
    CHECK(fast.intern(std::vector<std::uint32_t>{2}) == 2);
    CHECK(fast.intern(std::vector<std::uint32_t>{1, 4}) == fast.intern(std::vector<std::uint32_t>{1, 4}));
    SendTable t = compile_ok("topology ring(6)\ncollective allreduce\nstep 1 { send 0 -> 1 msg a(0) }\n");
    const Messages ms = t.messages();
    const PartialBuffers::SetId s = fast.intern(std::vector<std::uint32_t>{1, 4});
    const MessageId m = fast.message(s, 0, t.composite_registry(), t.messages());
    CHECK(fast.message(s, 0, t.composite_registry(), t.messages()) == m);
    CHECK(t.messages().name(m) == "a({1,4})");
    CHECK(fast.set_of(t.messages(), m) == std::pair<std::uint32_t, PartialBuffers::SetId>{0, s});
    CHECK(fast.set_of(ms, ms.value(3)) == std::pair<std::uint32_t, PartialBuffers::SetId>{0, 3});
    CHECK_FALSE(fast.set_of(ms, ms.broadcast(3)));
}

TEST_CASE("reductions: a correct allreduce on a ring of 3 holds in all three witnesses") {
    SendTable t = compile_ok(R"(
topology ring(3)
collective allreduce
step 1 { send 0 -> 1 msg partial(0) }
step 2 { send 1 -> 2 msg partial(1) }
step 3 { send 2 -> 0 msg partial(2) }
step 4 { send 0 -> 1 msg partial(0) }
)");
    VerifyReport r = verify_all(t);
    CHECK(r.holds());
    Messages ms = t.messages();
    CHECK(ms.name(t.transfers[1].message) == "a({0,1})");
    CHECK(ms.name(t.transfers[2].message) == "a({0..2})");
    SimReport s = simulate(t);
    CHECK(s.deliveries_done == 3);
    CHECK(s.deliveries_required == 3);
}

TEST_CASE("reductions: a contribution counted twice is refused naming step and processor") {
    // The classic broken allreduce: partials travel both ways round the ring, and 2 receives
    // a({0,1}) while holding a({1,2}): a(1) would be counted twice.
    SendTable t = compile_ok(R"(
topology ring(3)
collective allreduce
step 1 { send 0 -> 1 msg partial(0)  send 1 -> 2 msg partial(1) }
step 2 { send 1 -> 2 msg partial(1)  send 2 -> 0 msg partial(2) }
step 3 { send 0 -> 1 msg partial(0) }
)");
    VerifyReport r = verify_all(t);
    CHECK_FALSE(r.holds());
    CHECK(first_violation(r, Property::causality) ==
          "processor 2 receives a({0,1}) in step 2 while its buffer holds a({1,2}): combining them counts a(1) twice");
    bool found = false;
    for (const Violation& v : r.violations)
        if (v.property == Property::causality && v.step == 2 && v.node == Node{2}) found = true;
    CHECK(found);
    SimReport s = simulate(t);
    REQUIRE(s.violation);
    CHECK(s.violation->step == 2);
    CHECK(s.violation->node == Node{2});
    CHECK(s.violation->message == "step 2: processor 2 receives a({0,1}) on 1->2 while its buffer holds a({1,2}): a(1) would be counted twice");
}

TEST_CASE("reductions: a partial not held and a missing contribution") {
    SendTable t = compile_ok(R"(
topology ring(4)
collective allreduce
step 1 { hop 0 -> 1 msg a({0,3}) }
)");
    VerifyReport r = verify_all(t);
    CHECK(first_violation(r, Property::causality) == "processor 0 sends a({0,3}) in step 1 but its buffer holds a(0)");
    CHECK(first_violation(r, Property::completeness) == "processor 0 ends with a(0) but needs a({0..3}): it misses a(1), a(2) and 1 more");
    SendTable s = compile_ok(R"(
topology complete(4)
collective reduce(0)
step 1 { send 1 -> 0 msg partial(1)  send 3 -> 2 msg partial(3) }
step 2 { send 2 -> 0 msg partial(2) }
)");
    VerifyReport rs = verify_all(s);
    CHECK(rs.holds());
    SendTable u = compile_ok(R"(
topology complete(4)
collective reduce(0)
step 1 { send 1 -> 0 msg partial(1) }
step 2 { send 2 -> 0 msg partial(2) }
)");
    VerifyReport ru = verify_all(u);
    CHECK(first_violation(ru, Property::completeness) == "processor 0 ends with a({0..2}) but needs a({0..3}): it misses a(3)");
}

TEST_CASE("reductions: tables round trip through JSON with partials") {
    SendTable t = compile_library("schedules/reduce/allreduce_recursive_doubling.sched", 6);
    std::string json = table_to_json(t);
    CHECK(json.find("\"a({0..3})\"") != std::string::npos);
    SendTable back = parse_table(json, "rd.json");
    CHECK(back.transfers == t.transfers);
    CHECK(verify_direct(back).holds());
    // and through the DSL printer: hops of a({...}) parse back to the same table
    std::string dsl = table_to_dsl(t);
    CHECK(dsl.find("msg a({0..3})") != std::string::npos);
    SendTable again = compile_ok(dsl);
    CHECK(again.transfers == t.transfers);
}

TEST_CASE("reductions: library schedules hold for several n with their claimed steps") {
    struct Row {
        const char* file;
        std::int64_t (*steps)(std::int64_t n);
    };
    auto ceil_log = [](std::int64_t n) {
        std::int64_t l = 0;
        while ((std::int64_t{1} << l) < n) ++l;
        return l;
    };
    auto floor_log = [](std::int64_t n) {
        std::int64_t l = 0;
        while ((std::int64_t{2} << l) <= n) ++l;
        return l;
    };
    (void)floor_log;
    const Row rows[] = {
        {"schedules/reduce/allreduce_recursive_doubling.sched",
         [](std::int64_t n) {
             std::int64_t l = 0;
             while ((std::int64_t{2} << l) <= n) ++l;
             return l + ((std::int64_t{1} << l) == n ? 0 : 2);
         }},
        {"schedules/reduce/allreduce_binomial.sched",
         [](std::int64_t n) {
             std::int64_t l = 0;
             while ((std::int64_t{1} << l) < n) ++l;
             return 2 * l;
         }},
        {"schedules/reduce/reduce_binomial.sched",
         [](std::int64_t n) {
             std::int64_t l = 0;
             while ((std::int64_t{1} << l) < n) ++l;
             return l;
         }},
        {"schedules/reduce/scan_hillis_steele.sched",
         [](std::int64_t n) {
             std::int64_t l = 0;
             while ((std::int64_t{1} << l) < n) ++l;
             return l;
         }},
    };
    (void)ceil_log;
    for (const Row& row : rows)
        for (std::int64_t n : {2, 3, 5, 6, 8, 12}) {
            CAPTURE(row.file);
            CAPTURE(n);
            SendTable t = compile_library(row.file, n);
            CHECK(t.steps() == row.steps(n));
            CHECK(verify_all(t).holds());
        }
}

TEST_CASE("reductions: the chunked library (ring, Rabenseifner, double binary tree) holds in all three witnesses") {
    // Chunks, and rounds for Rabenseifner and the double binary tree: the Z3 engine checks them
    // too since the bandwidth model reached it.
    for (std::int64_t n : {3, 4, 8}) {
        CAPTURE(n);
        CHECK(verify_all(compile_library("schedules/reduce/allreduce_ring.sched", n)).holds());
        CHECK(verify_all(compile_library("schedules/reduce/reduce_scatter_ring.sched", n)).holds());
        CHECK(verify_all(compile_library("schedules/reduce/allreduce_double_binary_tree.sched", n)).holds());
    }
    for (std::int64_t n : {4, 8}) CHECK(verify_all(compile_library("schedules/reduce/allreduce_rabenseifner.sched", n)).holds());
}

namespace {

/// Exports `t` as MSCCL-IR, checks the executor's load rules, and replays it twice (thread blocks
/// visited forward and backward) on contributor sets: input chunk c of GPU g is (c, {g}); `rrc`
/// combines only the same chunk with disjoint sets. Returns the output buffers of one replay
/// after checking both agree.
std::vector<std::vector<long>> replay_reduction(const SendTable& t) {
    std::string xml = table_to_msccl(t, {});
    collsched::test::XmlNode algo;
    REQUIRE_NOTHROW(algo = collsched::test::MscclLexer(xml).parse());
    CHECK(collsched::test::msccl_limits(algo) == "");
    auto input = [](int g, int c) -> long { return (long(c) << 40) | (1L << g); };
    auto combine = [](long local, long in) -> long {
        if ((local >> 40) != (in >> 40)) throw std::runtime_error("partials of different chunks combined");
        const long mask = (1L << 40) - 1;
        if ((local & in & mask) != 0) throw std::runtime_error("a contribution counted twice");
        return local | in;
    };
    std::vector<std::vector<long>> fwd, bwd;
    REQUIRE_NOTHROW(fwd = collsched::test::msccl_replay(algo, input, combine, false));
    REQUIRE_NOTHROW(bwd = collsched::test::msccl_replay(algo, input, combine, true));
    CHECK(fwd == bwd);
    return fwd;
}

}  // namespace

TEST_CASE("reductions: MSCCL-IR exports pass the load rules and replay to the full sums") {
    for (std::int64_t n : {2, 4, 5, 8}) {
        for (const char* file : {"schedules/reduce/allreduce_recursive_doubling.sched", "schedules/reduce/allreduce_binomial.sched"}) {
            CAPTURE(file);
            CAPTURE(n);
            SendTable t = compile_library(file, n);
            auto out = replay_reduction(t);
            const long full = (1L << n) - 1;
            for (std::int64_t g = 0; g < n; ++g) CHECK(out[g] == std::vector<long>{full});
        }
        SendTable r = compile_library("schedules/reduce/reduce_binomial.sched", n);
        auto out = replay_reduction(r);
        CHECK(out[0] == std::vector<long>{(1L << n) - 1});
    }
    for (std::int64_t n : {3, 4, 6}) {  // n chunks: every GPU ends with every chunk fully reduced
        CAPTURE(n);
        auto out = replay_reduction(compile_library("schedules/reduce/allreduce_ring.sched", n));
        for (std::int64_t g = 0; g < n; ++g)
            for (std::int64_t c = 0; c < n; ++c) CHECK(out[g][c] == ((long(c) << 40) | ((1L << n) - 1)));
        auto rs = replay_reduction(compile_library("schedules/reduce/reduce_scatter_ring.sched", n));
        for (std::int64_t g = 0; g < n; ++g) CHECK(rs[g] == std::vector<long>{(long(g) << 40) | ((1L << n) - 1)});
    }
    std::string xml = table_to_msccl(compile_library("schedules/reduce/allreduce_recursive_doubling.sched", 4), {});
    CHECK(xml.find("coll=\"allreduce\"") != std::string::npos);
    CHECK(xml.find("type=\"rrc\"") != std::string::npos);
    CHECK_THROWS_WITH_AS(table_to_msccl(compile_library("schedules/reduce/scan_hillis_steele.sched", 4), {}),
                         "cannot write MSCCL-IR for scan on complete:4: MSCCL-IR export covers allreduce, reduce_scatter and reduce among "
                         "the reductions (MSCCL has no scan); use --format ranks for this one",
                         InputError);
}

TEST_CASE("reductions: optimize reduce by duality with broadcast: least steps, proved, and a witness that verifies") {
    struct Row {
        const char* topology;
        Step optimum;
    };
    for (const Row& row : {Row{"ring:8", 4}, Row{"hypercube:3", 3}, Row{"graph:" COLLSCHED_SOURCE_DIR "/schedules/machines/dgx1.json", 2}}) {
        CAPTURE(row.topology);
        auto topo = Topology::parse(row.topology);
        SynthInstance in{topo, topo->default_model(), Collective::parse("reduce:0", *topo)};
        ReductionOptimum r = optimize_reduction(in, OptimizeOptions{constructions()});
        CHECK(r.status == OptStatus::proved);
        REQUIRE(r.optimum);
        CHECK(*r.optimum == row.optimum);
        CHECK(r.lower_bound == row.optimum);
        REQUIRE(r.witness);
        CHECK(r.witness->steps() == row.optimum);
        CHECK(uses_partials(*r.witness));
        CHECK(verify_all(*r.witness).holds());
        CHECK(r.space.find("every reduce to 0 of one chunk under the buffer rule") == 0);
    }
    auto cbft = Topology::parse("cbft:4");
    SynthInstance routed{cbft, cbft->default_model(), Collective::parse("reduce:0", *cbft)};
    CHECK(reduction_duality_problem(routed) == "");  // routers that forward (replicate=no, the default)
    ReductionOptimum fwd = optimize_reduction(routed, OptimizeOptions{constructions()});
    REQUIRE(fwd.witness);
    CHECK(*fwd.optimum == 5);
    CHECK(verify_all(*fwd.witness).holds());
    routed.model.replicate = true;
    CHECK(reduction_duality_problem(routed) ==
          "cbft:4 has routers and the model replicate=yes: the reverse of a router copying the broadcast's or allgather's data is "
          "a router combining partials; the duality takes routers that forward (replicate=no)");
}

TEST_CASE("reductions: wormhole rounds through routers agree in the three witnesses") {
    const std::string steps = R"(
collective allreduce
step 1 { send 0 -> 1 msg partial(0)  send 1 -> 0 msg partial(1)  send 2 -> 3 msg partial(2)  send 3 -> 2 msg partial(3) }
step 2 { send 0 -> 2 msg partial(0)  send 2 -> 0 msg partial(2)  send 1 -> 3 msg partial(1)  send 3 -> 1 msg partial(3) }
)";
    SendTable ok = compile_ok("topology ebft(4)\nmodel wormhole(ts = 1, tc = 1)\n" + steps);
    CHECK(verify_all(ok).holds());
    SendTable narrow = compile_ok("topology cbft(4)\nmodel wormhole(ts = 1, tc = 1)\n" + steps);
    VerifyReport r = verify_all(narrow);
    CHECK(r.violation_count[static_cast<std::size_t>(Property::capacity)] == 4);
    CHECK(r.violation_count[static_cast<std::size_t>(Property::causality)] == 0);
}

TEST_CASE("reductions: the three witnesses agree on 400 seeded random tables of partials") {
    std::mt19937 rng(16);
    int holds = 0, twice = 0;
    for (int trial = 0; trial < 400; ++trial) {
        CAPTURE(trial);
        const char* spec = trial % 3 == 0 ? "ring:4" : trial % 3 == 1 ? "complete:4" : "cbft:4";
        auto topo = Topology::parse(spec);
        Collective coll;
        coll.kind = trial % 4 == 0 ? CollectiveKind::scan : CollectiveKind::allreduce;
        SendTable t;
        t.topology = topo;
        t.model = topo->default_model();
        if (trial % 5 == 0) t.model.timing = Timing::wormhole;
        t.collective = coll;
        const std::uint32_t P = topo->processors();
        Composites& reg = t.composite_registry();
        const Messages ms = t.messages();
        const int n = 1 + static_cast<int>(rng() % 10);
        for (int k = 0; k < n; ++k) {
            std::vector<std::uint32_t> src;
            for (std::uint32_t s = 0; s < P; ++s)
                if (rng() % 2) src.push_back(s);
            if (src.empty()) src.push_back(rng() % P);
            const MessageId m = partial_message(reg, ms, SourceSet(src), 0);
            const auto& chans = topo->channels();
            t.transfers.push_back({static_cast<Step>(1 + rng() % 4), ChannelId{static_cast<std::uint32_t>(rng() % chans.size())}, m});
        }
        t.canonicalize_composites();
        VerifyReport d = verify_all(t);
        holds += d.holds();
        twice += std::any_of(d.violations.begin(), d.violations.end(), [](const Violation& v) { return v.detail.find("twice") != std::string::npos; });
    }
    MESSAGE(fmt::format("{} of 400 hold, {} count a contribution twice", holds, twice));
    CHECK(twice > 0);
}

TEST_CASE("reductions: optimize reduce_scatter and allreduce by duality with allgather: proved, witnesses verify") {
    struct Row {
        const char* topology;
        Step allgather;
    };
    for (const Row& row : {Row{"ring:8", 4}, Row{"hypercube:3", 3}, Row{"graph:" COLLSCHED_SOURCE_DIR "/schedules/machines/dgx1.json", 2}}) {
        CAPTURE(row.topology);
        auto topo = Topology::parse(row.topology);
        for (CollectiveKind kind : {CollectiveKind::reduce_scatter, CollectiveKind::allreduce}) {
            Collective c;
            c.kind = kind;
            c.set_chunks(topo->processors(), *topo);
            SynthInstance in{topo, topo->default_model(), c};
            ReductionOptimum r = optimize_reduction(in, OptimizeOptions{constructions()});
            const Step k = kind == CollectiveKind::allreduce ? 2 : 1;
            CHECK(r.status == OptStatus::proved);
            REQUIRE(r.optimum);
            CHECK(*r.optimum == k * row.allgather);
            REQUIRE(r.witness);
            CHECK(r.witness->steps() == k * row.allgather);
            CHECK(verify_all(*r.witness).holds());
        }
    }
}

TEST_CASE("reductions: in-network combining (combine=routers) makes a fat-tree reduce valid that is otherwise refused") {
    auto table = [](const std::string& name) { return read_table(std::string(COLLSCHED_SOURCE_DIR) + "/tests/data/combine/" + name); };
    // reduce to 0 on cbft:4 in 4 steps: router r1.1 combines a(2) and a(3) into a({2,3}), so its
    // up-link r1.1->r2.0 (capacity 1) carries one message
    SendTable on = table("cbft4_reduce_combining.json");
    REQUIRE(on.model.combine_routers);
    VerifyReport d = verify_direct(on);
    CHECK(d.holds());
    SimReport s = simulate(on);
    CHECK(s.status == SimStatus::completed);
    CHECK(s.steps == 4);
    // the Z3 engine encodes the knob (verifier/check/z3_switch.cpp) and proves the table too
    CHECK(verify_z3(on).holds());
    // the knob off (the default): routers only forward, so r1.1 sends a partial it never received
    // and the two values it did receive are stranded (queues=none); both engines and the simulator say so
    SendTable off = table("cbft4_reduce_combining_knob_off.json");
    REQUIRE_FALSE(off.model.combine_routers);
    VerifyReport o = verify_all(off);
    CHECK(first_violation(o, Property::causality) == "r1.1 forwards a({2,3}) in step 2 but has not received it");
    CHECK(first_violation(o, Property::queues) == "a(2) entered r1.1 in step 1 and never leaves; with queues=none it must leave in step 2");
    CHECK(o.violation_count[static_cast<std::size_t>(Property::queues)] == 2);
    SimReport so = simulate(off);
    REQUIRE(so.violation.has_value());
    CHECK(so.violation->message == "step 2: router r1.1 sends a({2,3}) on r1.1->r2.0 but does not hold it at the end of step 1 (it "
                                   "never receives it)");
    // forwarding both values in the same 4 steps needs two messages on the up-link in step 2
    SendTable fwd = table("cbft4_reduce_forwarding.json");
    VerifyReport f = verify_all(fwd);
    CHECK(first_violation(f, Property::capacity) == "2 messages (a(2), a(3)) but capacity 1");
    CHECK(f.violation_count[static_cast<std::size_t>(Property::capacity)] == 3);
    fwd.model.combine_routers = true;  // combining does not lift capacity: still refused
    CHECK(first_violation(verify_direct(fwd), Property::capacity) == "2 messages (a(2), a(3)) but capacity 1");
    CHECK(simulate(fwd).status != SimStatus::completed);
    // a combination must cover the partial exactly with disjoint inputs: r1.1 holds a(2) and a(3)
    // but not a(1), so it cannot send a({1..3})
    SendTable bad = on;
    for (Transfer& x : bad.transfers)
        if (x.step >= 2 && bad.messages().name(x.message) == "a({2,3})")
            x.message = partial_message(bad.composite_registry(), bad.messages(), SourceSet::range(1, 3), 0);
    bad.canonicalize_composites();
    VerifyReport b = verify_direct(bad);
    CHECK(first_violation(b, Property::causality) == "r1.1 forwards a({1..3}) in step 2 but has not received it");
    CHECK(simulate(bad).status != SimStatus::completed);
    // the synthesizer does not search over the knob (its optima would not cover combining schedules)
    auto r = test::run("optimize --topology cbft:4 --collective allgather --model combine=routers");
    CHECK(r.code == 2);
    CHECK(r.err.find("the synthesizer does not encode in-network reduction (combine=routers)") != std::string::npos);
    auto both = test::run("verify " + std::string(COLLSCHED_SOURCE_DIR) + "/tests/data/combine/cbft4_reduce_combining.json --engine both");
    CHECK(both.code == 0);
    CHECK(both.out.ends_with("both engines: holds\n"));
}
