// The asynchronous-program checker (compiler/interop/async_program.hpp) on small hand-made programs:
// matching, deadlock (cycle, never released, unmatched receive), races, the replay and its goals.
#include <doctest/doctest.h>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <map>
#include <random>
#include <vector>

#include "compiler/interop/async_program.hpp"

using namespace collsched::async;

namespace {

Naming names(const Program& p) {
    Naming n;
    n.op = [&p](OpId o) { return fmt::format("r{}a{}s{}", p.op(o).rank, p.op(o).agent, p.op(o).pos); };
    n.slot = [](Slot s) { return fmt::format("r{}[{}.{}]", s.rank, s.region, s.index); };
    n.value = [](const std::vector<Atom>& a) { return fmt::format("{{{}}}", fmt::join(a, ",")); };
    n.key = [](std::uint64_t k) { return fmt::format("key {}", k); };
    return n;
}

Lane copy(Slot from, Slot to) { return Lane{{Operand::read(from)}, {to}, false}; }
Lane send_of(Slot from) { return Lane{{Operand::read(from)}, {}, true}; }
Lane receive_into(Slot to) { return Lane{{Operand::incoming()}, {to}, false}; }
Lane receive_reduce(Slot local, Slot to) { return Lane{{Operand::incoming(), Operand::read(local)}, {to}, false}; }

/// Two ranks exchange and reduce one chunk: rank r sends x_r, receives x_{1-r} and reduces it
/// into its slot 0.
Program exchange(bool with_goal) {
    Program p;
    for (std::uint32_t r = 0; r < 2; ++r) {
        p.initial({r, 0, 0}, p.values().atom(r));
        if (with_goal) p.goal({r, 0, 0}, p.values().make({0, 1}));
    }
    for (std::uint32_t r = 0; r < 2; ++r) {
        AgentId a = p.add_agent(r);
        OpId s = p.add_op(a, {});
        p.add_lane(s, send_of({r, 0, 0}));
        p.send(s, r);
        OpId v = p.add_op(a, {});
        p.add_lane(v, receive_reduce({r, 0, 0}, {r, 0, 0}));
        p.receive(v, 1 - r);
    }
    return p;
}

}  // namespace

TEST_CASE("async engine: an exchange-and-reduce holds, and the replay gives every rank the sum") {
    Program p = exchange(true);
    Report r = check(p, names(p));
    CHECK(r.holds());
    CHECK(r.finishes);
    CHECK(r.race_free);
    REQUIRE(r.replayed);
    CHECK(r.values.atoms(r.final.at({0, 0, 0})) == std::vector<Atom>{0, 1});
    CHECK(r.source[1] == 2);  // rank 0's receive got rank 1's send
}

TEST_CASE("async engine: a wrong goal is named with the writer, its sender and the gap") {
    Program p = exchange(false);
    p.goal({0, 0, 0}, p.values().make({0, 1, 2}));
    Report r = check(p, names(p));
    REQUIRE(r.findings.size() == 1);
    CHECK(r.findings[0].kind == FindingKind::wrong_output);
    CHECK(r.findings[0].text == "r0[0.0] holds {0,1}, written by r0a0s1, which r1a1s0 sent, but it must hold {0,1,2}; it misses "
                                "{2} [wrong output]");
}

TEST_CASE("async engine: receives before sends on both sides are a cycle, printed around") {
    Program p;
    for (std::uint32_t r = 0; r < 2; ++r) {
        AgentId a = p.add_agent(r);
        OpId v = p.add_op(a, {});
        p.add_lane(v, receive_into({r, 0, 1}));
        p.receive(v, 1 - r);
        OpId s = p.add_op(a, {});
        p.add_lane(s, send_of({r, 0, 0}));
        p.send(s, r);
    }
    Report r = check(p, names(p));
    CHECK_FALSE(r.finishes);
    CHECK_FALSE(r.replayed);
    REQUIRE(r.findings.size() == 1);
    CHECK(r.findings[0].text == "r0a0s0 waits for r1a1s1 waits for r1a1s0 waits for r0a0s1 waits for the first again [deadlock]");
}

TEST_CASE("async engine: an unmatched receive and a wait never released are the causes, not what follows them") {
    Program p;
    AgentId a = p.add_agent(0), b = p.add_agent(1);
    OpId v = p.add_op(a, {3, 5});
    p.add_lane(v, receive_into({0, 0, 0}));
    p.receive(v, 7);
    OpId after = p.add_op(a, {});
    p.add_lane(after, copy({0, 0, 0}, {0, 0, 1}));
    OpId w = p.add_op(b, {});
    p.never_released(w, "waits for step 9 of agent 5, which does not exist");
    Report r = check(p, names(p));
    REQUIRE(r.findings.size() == 2);
    CHECK(r.findings[0].kind == FindingKind::unmatched);
    CHECK(r.findings[0].text == "r0a0s0: waits for a send that never comes: key 7 has 0 sends and this is receive 1 [deadlock]");
    CHECK(r.findings[1].text == "r1a1s0: waits for step 9 of agent 5, which does not exist [deadlock]");
    CHECK(r.order.size() == 0);
}

TEST_CASE("async engine: a surplus send on a FIFO key is a finding, on a semaphore it is not") {
    for (KeyKind kind : {KeyKind::fifo, KeyKind::semaphore}) {
        Program p;
        AgentId a = p.add_agent(0);
        OpId s = p.add_op(a, {});
        p.send(s, 1, kind);
        Report r = check(p, names(p));
        CHECK(r.holds() == (kind == KeyKind::semaphore));
    }
}

TEST_CASE("async engine: a race needs two accesses unordered by happens-before, and an edge orders them") {
    for (bool ordered : {false, true}) {
        Program p;
        p.initial({0, 0, 0}, p.values().atom(0));
        AgentId a = p.add_agent(0), b = p.add_agent(0);
        OpId w = p.add_op(a, {});
        p.add_lane(w, copy({0, 0, 0}, {0, 0, 1}));
        OpId rd = p.add_op(b, {});
        p.add_lane(rd, copy({0, 0, 1}, {0, 0, 2}));
        if (ordered) p.order(w, rd);
        Report r = check(p, names(p));
        CHECK(r.holds() == ordered);
        CHECK(r.race_free == ordered);
        if (!ordered) {
            REQUIRE(r.findings.size() == 1);
            CHECK(r.findings[0].text ==
                  "r0a1s0: reads r0[0.1] and r0a0s0 writes it, with nothing ordering the two (a missing dependency) [data race]");
        } else {
            CHECK(r.final.at({0, 0, 2}) == p.values().atom(0));
        }
    }
}

TEST_CASE("async engine: a put writes a peer's slot, and ordering through a matched signal removes the race") {
    for (bool signal : {false, true}) {
        Program p;
        p.initial({0, 0, 0}, p.values().atom(5));
        AgentId a = p.add_agent(0), b = p.add_agent(1);
        OpId put = p.add_op(a, {});
        p.add_lane(put, copy({0, 0, 0}, {1, 0, 0}));  // rank 0 writes rank 1's slot
        OpId sig = p.add_op(a, {});
        OpId wait = p.add_op(b, {});
        OpId use = p.add_op(b, {});
        p.add_lane(use, copy({1, 0, 0}, {1, 0, 1}));
        if (signal) {
            p.send(sig, 42, KeyKind::semaphore);
            p.receive(wait, 42, KeyKind::semaphore);
        }
        p.goal({1, 0, 1}, p.values().atom(5));
        Report r = check(p, names(p));
        CHECK(r.holds() == signal);
    }
}

TEST_CASE("async engine: a contribution counted twice is named at the output with the op that first did it") {
    Program p;
    p.initial({0, 0, 0}, p.values().atom(1));
    p.goal({0, 0, 0}, p.values().atom(1));
    AgentId a = p.add_agent(0);
    OpId re = p.add_op(a, {});
    p.add_lane(re, Lane{{Operand::read({0, 0, 0}), Operand::read({0, 0, 0})}, {{0, 0, 0}}, false});
    Report r = check(p, names(p));
    REQUIRE(r.findings.size() == 1);
    CHECK(r.findings[0].text ==
          "r0[0.0] holds {1,1}, written by r0a0s0, but it must hold {1}; it counts {1} twice (first counted twice by r0a0s0) [wrong "
          "output]");
}

TEST_CASE("async engine: a relaxed key orders progress but not memory") {
    // rank 0 writes slot r1[0.0] (a put into rank 1), then signals; rank 1 waits, then reads it
    for (KeyKind kind : {KeyKind::semaphore, KeyKind::relaxed}) {
        Program p;
        p.initial({0, 0, 0}, p.values().atom(7));
        AgentId a = p.add_agent(0), b = p.add_agent(1);
        OpId put = p.add_op(a, {});
        p.add_lane(put, copy({0, 0, 0}, {1, 0, 0}));
        OpId sig = p.add_op(a, {});
        p.send(sig, 5, kind);
        OpId wait = p.add_op(b, {});
        p.receive(wait, 5, kind);
        OpId use = p.add_op(b, {});
        p.add_lane(use, copy({1, 0, 0}, {1, 0, 1}));
        Report r = check(p, names(p));
        CHECK(r.finishes);  // the wait is released either way
        CHECK(r.race_free == (kind == KeyKind::semaphore));
    }
    // a relaxed wait with no signal still deadlocks
    Program p;
    AgentId b = p.add_agent(1);
    OpId wait = p.add_op(b, {});
    p.receive(wait, 5, KeyKind::relaxed);
    Report r = check(p, names(p));
    CHECK_FALSE(r.finishes);
    CHECK(r.counts[std::size_t(FindingKind::unmatched)] + r.counts[std::size_t(FindingKind::deadlock)] == 1);
}

TEST_CASE("async engine: an order through a rank that touches none of the slot's rank is found (the search behind the clocks)") {
    // rank 0 puts into rank 1's slot and signals rank 2, which passes the signal on to rank 1, which
    // then reads the slot: rank 2 accesses nothing of rank 1, so the clocks over rank 1's neighbours
    // (ranks 0 and 1) miss the order, and the search over the whole program finds it. With rank 2
    // signalling before its wait, nothing orders the put and the read.
    for (bool relay : {true, false}) {
        CAPTURE(relay);
        Program p;
        p.initial({0, 0, 0}, p.values().atom(3));
        AgentId a = p.add_agent(0), c = p.add_agent(2), b = p.add_agent(1);
        OpId put = p.add_op(a, {});
        p.add_lane(put, copy({0, 0, 0}, {1, 0, 0}));
        OpId other = p.add_op(p.add_agent(0), {});
        p.order(put, other);  // a second way on from the put: the order is asked of the put itself
        OpId sig = p.add_op(a, {});
        p.send(sig, 1, KeyKind::semaphore);
        OpId first = p.add_op(c, {}), second = p.add_op(c, {});
        p.receive(relay ? first : second, 1, KeyKind::semaphore);
        p.send(relay ? second : first, 2, KeyKind::semaphore);
        OpId wait = p.add_op(b, {});
        p.receive(wait, 2, KeyKind::semaphore);
        OpId use = p.add_op(b, {});
        p.add_lane(use, copy({1, 0, 0}, {1, 0, 1}));
        Report r = check(p, names(p));
        CHECK(r.finishes);
        CHECK(r.race_free == relay);
        if (!relay) {
            REQUIRE(r.findings.size() == 1);
            CHECK(r.findings[0].text ==
                  "r1a2s1: reads r1[0.0] and r0a0s0 writes it, with nothing ordering the two (a missing dependency) [data race]");
        }
    }
}

TEST_CASE("async engine: an op's accesses are ordered through whichever of its successors leads on, not only its barrier") {
    // rank 0: a write w by thread d, then a barrier s after it, and a read after the barrier (ordered);
    // d's next op n after w, and a read after n only. With n after the barrier, every way on from w
    // passes the barrier (w funnels into it); with n not after it, w's way on through n is its own,
    // and the read after n is ordered by it all the same. A read after nothing races with w.
    for (bool gated : {true, false}) {
        CAPTURE(gated);
        Program p;
        AgentId spine = p.add_agent(0), d = p.add_agent(0), e = p.add_agent(0), f = p.add_agent(0), g = p.add_agent(0);
        p.initial({0, 0, 0}, p.values().atom(1));
        OpId w = p.add_op(d, {});
        p.add_lane(w, copy({0, 0, 0}, {0, 0, 1}));
        OpId s = p.add_op(spine, {});
        p.order(w, s);
        OpId n = p.add_op(d, {});
        if (gated) p.order(s, n);
        OpId after_barrier = p.add_op(e, {});
        p.order(s, after_barrier);
        p.add_lane(after_barrier, copy({0, 0, 1}, {0, 0, 2}));
        OpId after_n = p.add_op(f, {});
        p.order(n, after_n);
        p.add_lane(after_n, copy({0, 0, 1}, {0, 0, 3}));
        OpId alone = p.add_op(g, {});
        p.add_lane(alone, copy({0, 0, 1}, {0, 0, 4}));
        Report r = check(p, names(p));
        REQUIRE(r.findings.size() == 1);
        CHECK(r.findings[0].op == alone);
        CHECK(r.counts[std::size_t(FindingKind::race)] == 1);
    }
    // a chain of ops, each the only successor of the one before: the later accesses lie on the
    // first one's funnel, before its end
    Program p;
    p.initial({0, 0, 0}, p.values().atom(1));
    std::vector<AgentId> ag;
    for (int k = 0; k < 4; ++k) ag.push_back(p.add_agent(0));
    OpId prev = no_op;
    for (int k = 0; k < 4; ++k) {
        OpId o = p.add_op(ag[std::size_t(k)], {});
        p.add_lane(o, copy({0, 0, std::uint32_t(k)}, {0, 0, std::uint32_t(k + 1)}));
        if (prev != no_op) p.order(prev, o);
        prev = o;
    }
    Report r = check(p, names(p));
    CHECK(r.holds());
    CHECK(r.final.at({0, 0, 4}) == p.values().atom(1));
}

namespace {

/// A random program of `ranks` ranks: agents of a few ops, each op one lane copying a slot of any
/// rank to another, explicit orders and semaphore matches from earlier ops to later ones (acyclic).
Program random_program(std::mt19937& rng, std::uint32_t ranks) {
    Program p;
    auto pick = [&](std::uint32_t n) { return std::uniform_int_distribution<std::uint32_t>(0, n - 1)(rng); };
    constexpr std::uint32_t slots = 3;
    for (std::uint32_t r = 0; r < ranks; ++r)
        for (std::uint32_t i = 0; i < slots; ++i) p.initial({r, 0, i}, p.values().atom(r * slots + i));
    std::vector<AgentId> agents;
    for (std::uint32_t r = 0; r < ranks; ++r)
        for (std::uint32_t k = 1 + pick(3); k > 0; --k) agents.push_back(p.add_agent(r));
    const std::uint32_t ops = 8 + pick(24);
    std::uint64_t key = 0;
    for (OpId o = 0; o < ops; ++o) {
        p.add_op(agents[pick(std::uint32_t(agents.size()))], {});
        if (pick(3) != 0) {
            const Slot from{pick(ranks), 0, pick(slots)};
            Slot to{pick(ranks), 0, pick(slots)};
            if (to == from) to.index = (to.index + 1) % slots;
            p.add_lane(o, copy(from, to));
        }
        if (o > 0 && pick(3) == 0) p.order(pick(o), o);
        if (o > 0 && pick(3) == 0) {
            p.send(pick(o), key, KeyKind::semaphore);  // registered in op order on a fresh key: the send comes first
            p.receive(o, key++, KeyKind::semaphore);
        }
    }
    return p;
}

/// The races of a program by definition: happens-before as the closure of agent order, explicit
/// orders and matches; each slot's accesses in the report's order; the last write before each
/// access, and the reads since it before the next write, must happen before it.
std::size_t races_by_closure(const Program& p, const Report& r) {
    const std::size_t n = p.ops();
    std::vector<std::vector<bool>> before(n, std::vector<bool>(n, false));  // before[o][b]: b happens before o
    std::vector<std::vector<OpId>> preds(n);
    for (OpId o = 0; o < n; ++o) {
        if (p.op(o).pos > 0) preds[o].push_back(p.agent_ops(p.op(o).agent)[p.op(o).pos - 1]);
        for (OpId b : p.op(o).after) preds[o].push_back(b);
    }
    for (const auto& [key, k] : p.keys())
        for (std::size_t i = 0; i < std::min(k.sends.size(), k.receives.size()); ++i) preds[k.receives[i]].push_back(k.sends[i]);
    for (OpId o : r.order)
        for (OpId b : preds[o]) {
            before[o][b] = true;
            for (OpId c = 0; c < n; ++c)
                if (before[b][c]) before[o][c] = true;
        }
    std::map<Slot, std::vector<std::pair<OpId, bool>>> accesses;
    for (OpId o : r.order)
        for (const Lane& lane : p.op(o).lanes) {
            accesses[lane.in[0].slot].push_back({o, false});
            accesses[lane.out[0]].push_back({o, true});
        }
    std::size_t races = 0;
    for (const auto& [slot, list] : accesses) {
        OpId last_write = no_op;
        std::vector<OpId> reads;
        for (const auto& [o, write] : list) {
            if (last_write != no_op && !before[o][last_write]) ++races;
            if (write) {
                for (OpId rd : reads) races += !before[o][rd];
                last_write = o;
                reads.clear();
            } else {
                reads.push_back(o);
            }
        }
    }
    return races;
}

}  // namespace

TEST_CASE("async engine: the race check's two passes (a search within limits, the clocks after it) agree with the closure") {
    // Every pass decides exactly: the search first (cut off at a few ops it leaves its pairs to the
    // clocks), the clocks over the pairs left (too small for them: the search without a limit).
    // On random programs every way of splitting the pairs between them counts the races that the
    // transitive closure of happens-before gives.
    std::mt19937 rng(58);
    CheckOptions search_only, clocks_only, cut_off, cut_off_small_clocks;
    search_only.search_visits_per_pair = search_only.search_visits = std::size_t(-1);
    clocks_only.search_visits = 0;
    cut_off.search_visits_per_pair = 2;
    cut_off_small_clocks.search_visits_per_pair = 3;
    cut_off_small_clocks.search_visits = 20;
    cut_off_small_clocks.max_clock_entries = 16;
    std::size_t racy = 0, programs = 0;
    for (int trial = 0; trial < 400; ++trial) {
        const Program p = random_program(rng, 2 + std::uint32_t(trial % 3));
        const Report base = check(p, names(p));
        if (!base.finishes) continue;
        ++programs;
        const std::size_t want = races_by_closure(p, base);
        CAPTURE(trial);
        CHECK(base.counts[std::size_t(FindingKind::race)] == want);
        for (const CheckOptions& o : {search_only, clocks_only, cut_off, cut_off_small_clocks}) {
            const Report r = check(p, names(p), o);
            CHECK(r.counts[std::size_t(FindingKind::race)] == want);
            REQUIRE(r.findings.size() == base.findings.size());
            for (std::size_t i = 0; i < r.findings.size(); ++i) CHECK(r.findings[i].text == base.findings[i].text);
        }
        racy += want > 0;
    }
    CHECK(programs > 300);
    CHECK(racy > 100);
    CHECK(racy < programs);
}
