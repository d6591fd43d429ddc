// Agreement: seeded random tables on small topologies of every family, under every model knob,
// valid ones and ones with injected faults of every kind, must get the same per-property
// verdict from the Z3 engine and the direct checker, every Z3 counterexample must be one the
// direct checker reports too, and the simulator must reach the same overall verdict (and halt on
// a rule the direct checker finds violated). On failure the seed, the instance and the table are
// printed; COLLSCHED_SEED=<seed> reruns one seed alone. Larger runs are in the test suite "slow"
// (skipped by default; run them with `build/tests/test_tools -ts=slow --no-skip`).
#include <doctest/doctest.h>

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <array>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "compiler/table/builder.hpp"
#include "compiler/table/partials.hpp"
#include "compiler/table/send_table.hpp"
#include "compiler/io/table_io.hpp"
#include "runtime/simulator.hpp"
#include "tests/tools/cli_run.hpp"
#include "tests/tools/random_tables.hpp"
#include "verifier/check/direct.hpp"
#include "verifier/check/z3_engine.hpp"
#include "verifier/constructions/compose/nvls.hpp"
#include "verifier/time/constructions.hpp"
#include "verifier/time/candidates.hpp"
#include "verifier/time/objective.hpp"

using namespace collsched;

namespace {

/// Small instances of every family (bft with a custom capacity pattern, b-ary fat tree, ideal
/// fat tree, products of graphs).
const std::vector<std::string> kSmall = {"ebft:8",      "cbft:4",   "bft:8:1,2,2",  "fattree:3:9:1,2", "ideal:8:w=n",
                                         "ring:5",      "linear:4", "mesh:2x3",     "torus:3x3",       "hypercube:3",
                                         "complete:4",  "product:ring:3*linear:2",  "ebft:4",          "ring:4"};
/// Larger instances for the slow suite.
const std::vector<std::string> kLarge = {"ebft:16",    "cbft:16",  "bft:16:1,1,2,4", "fattree:4:16:1,3", "ideal:16:w=log2(n)+1",
                                         "ring:12",    "linear:9", "mesh:4x4",       "torus:4x4",        "hypercube:4",
                                         "complete:7", "product:ring:4*ring:3"};

/// Small machines with switches that reduce and multicast (graph files, docs/topologies.md).
const std::vector<std::string> kSwitches = {std::string(COLLSCHED_SOURCE_DIR) + "/tests/data/nvls/star4.json",
                                            std::string(COLLSCHED_SOURCE_DIR) + "/tests/data/nvls/star3_cap2.json",
                                            std::string(COLLSCHED_SOURCE_DIR) + "/tests/data/nvls/box4.json",
                                            std::string(COLLSCHED_SOURCE_DIR) + "/tests/data/nvls/two_switches.json",
                                            std::string(COLLSCHED_SOURCE_DIR) + "/tests/data/nvls/split2x2.json"};

using testing::Instance;
using testing::make_composite_instance;
using testing::make_instance;
using testing::make_switch_instance;

/// The fields that identify a counterexample for each property (the channel is left out where
/// the two engines may name different but equally right ones: the direct checker names the
/// channel a late copy finally leaves on, and which of two same-step departures is "the extra
/// one" depends on an order the checker does not fix).
std::string key(const Violation& v, const SendTable& t) {
    auto ch = [&] { return v.channel ? std::to_string(idx(*v.channel)) : std::string("-"); };
    auto nd = [&] { return v.node ? std::to_string(idx(*v.node)) : std::string("-"); };
    auto m0 = [&] { return v.messages.empty() ? std::string("-") : t.messages().name(v.messages.front()); };
    switch (v.property) {
        case Property::capacity: return fmt::format("capacity {} {}", v.step, ch());
        case Property::ports: return fmt::format("ports {} {}", v.step, nd());
        case Property::queues:
            return t.model.queues == QueueKind::none && t.model.replicate ? fmt::format("queues {} {} {} {}", v.step, ch(), nd(), m0())
                                                                         : fmt::format("queues {} {} {}", v.step, nd(), m0());
        case Property::replication: return fmt::format("replication {} {} {}", v.step, nd(), m0());
        case Property::causality: return fmt::format("causality {} {} {}", v.step, ch(), m0());
        case Property::routes: return fmt::format("routes {} {} {}", v.step, ch(), m0());
        case Property::completeness: return fmt::format("completeness {} {}", nd(), m0());
    }
    return "?";
}

Property property_of(SimRule r) {
    switch (r) {
        case SimRule::capacity: return Property::capacity;
        case SimRule::ports: return Property::ports;
        case SimRule::queues: return Property::queues;
        case SimRule::replication: return Property::replication;
        case SimRule::causality: return Property::causality;
        case SimRule::completeness: return Property::completeness;
    }
    return Property::completeness;
}

/// The model variant that decides how a property is checked (so the suite can require that
/// each variant was seen both holding and violated).
std::string variant(Property p, const SendTable& t) {
    const Model& m = t.model;
    std::string timing(to_string(m.timing));
    switch (p) {
        case Property::ports: return fmt::format("ports/{}/{}", to_string(m.ports), timing);
        case Property::queues:
            return fmt::format("queues/{}/replicate={}", m.queues == QueueKind::none ? "none" : "bound", m.replicate ? "yes" : "no");
        case Property::replication: return fmt::format("replication/{}", timing);
        case Property::routes: return fmt::format("routes/{}", timing);
        default: return fmt::format("{}/{}", to_string(p), timing);
    }
}

struct Tally {
    int holds = 0, violated = 0;
    std::array<int, property_count> violated_by{};
    std::map<std::string, std::pair<int, int>> variants;  ///< variant -> (held, violated)
};

/// The direct checker's report with the per-message pass on two threads is the single thread's,
/// word for word: statuses, counts, and the kept counterexamples in order (with every one kept,
/// and with a cap of 2 per property, so the merge of the two halves' caps is exercised).
void check_threads(const SendTable& t, bool fixed_routes) {
    for (std::size_t cap : {std::size_t{1} << 30, std::size_t{2}}) {
        CAPTURE(cap);
        VerifyReport one = verify_direct(t, {.fixed_routes = fixed_routes, .max_violations = cap, .threads = 1});
        VerifyReport two = verify_direct(t, {.fixed_routes = fixed_routes, .max_violations = cap, .threads = 2});
        CHECK(one.status == two.status);
        CHECK(one.violation_count == two.violation_count);
        REQUIRE(one.violations.size() == two.violations.size());
        for (std::size_t i = 0; i < one.violations.size(); ++i) {
            const Violation &a = one.violations[i], &b = two.violations[i];
            CHECK(a.property == b.property);
            CHECK(a.step == b.step);
            CHECK(a.channel == b.channel);
            CHECK(a.node == b.node);
            CHECK(a.messages == b.messages);
            CHECK(a.detail == b.detail);
        }
    }
}

/// Runs the three witnesses on one instance and checks that they agree.
void check_agreement(const Instance& in, Tally& tally, std::uint64_t z3_timeout_ms = 60000) {
    const SendTable& t = in.table;
    INFO(in.description);
    INFO("table:\n" << table_to_csv(t));
    check_threads(t, in.fixed_routes);
    VerifyReport d = verify_direct(t, {.fixed_routes = in.fixed_routes, .max_violations = 1u << 30});
    VerifyReport z = verify_z3(t, {.fixed_routes = in.fixed_routes, .max_violations = 1u << 30, .timeout_ms = z3_timeout_ms});
    INFO("direct:\n" << format_report(d, t));
    INFO("z3:\n" << format_report(z, t));
    for (std::size_t p = 0; p < property_count; ++p) {
        CAPTURE(to_string(static_cast<Property>(p)));
        CHECK(z.status[p] == d.status[p]);
        if (d.status[p] == Status::violated) ++tally.violated_by[p];
        if (d.status[p] == Status::holds || d.status[p] == Status::violated) {
            auto& v = tally.variants[variant(static_cast<Property>(p), t)];
            ++(d.status[p] == Status::holds ? v.first : v.second);
        }
    }
    CHECK(z.notes.empty());
    std::set<std::string> direct_keys;
    for (const Violation& v : d.violations) direct_keys.insert(key(v, t));
    for (const Violation& v : z.violations) {
        std::string k = key(v, t);
        CAPTURE(k);
        CHECK(direct_keys.count(k) == 1);
    }
    (d.holds() ? tally.holds : tally.violated)++;
    // The simulator does not know fixed routes: compare with the other properties.
    bool holds_but_routes = true;
    for (std::size_t p = 0; p < property_count; ++p)
        if (static_cast<Property>(p) != Property::routes && d.status[p] == Status::violated) holds_but_routes = false;
    SimReport s = simulate(t);
    INFO("simulator:\n" << format_sim_report(s, t));
    CHECK((s.status == SimStatus::completed) == holds_but_routes);
    if (s.violation) {
        // The rule the simulator halts on is one the checker finds violated. (Under wormhole
        // timing with replicate=no a worm sent from an extra copy is a replication violation in
        // both: the simulator reports the router short of copies before the hops downstream.)
        Property p = property_of(s.violation->rule);
        CHECK(d.status[static_cast<std::size_t>(p)] == Status::violated);
    }
}

void run_seeds(std::uint64_t first, std::uint64_t count, const std::vector<std::string>& topologies) {
    if (const char* one = std::getenv("COLLSCHED_SEED")) {
        first = std::stoull(one);
        count = 1;
    }
    Tally tally;
    for (std::uint64_t seed = first; seed < first + count; ++seed) {
        CAPTURE(seed);
        Instance in = make_instance(seed, topologies);
        check_agreement(in, tally);
    }
    MESSAGE(fmt::format("{} tables: {} hold, {} violated; violated per property: capacity {}, ports {}, queues {}, replication {}, "
                        "causality {}, routes {}, completeness {}",
                        count, tally.holds, tally.violated, tally.violated_by[0], tally.violated_by[1], tally.violated_by[2],
                        tally.violated_by[3], tally.violated_by[4], tally.violated_by[5], tally.violated_by[6]));
    std::string variants;
    for (const auto& [v, hv] : tally.variants) variants += fmt::format(" {} {}/{};", v, hv.first, hv.second);
    MESSAGE("held/violated per model variant:" << variants);
    // The generator must exercise both answers of every property family.
    if (count > 100) {
        CHECK(tally.holds > static_cast<int>(count) / 10);
        for (int v : tally.violated_by) CHECK(v > 0);
        std::vector<std::string> expected = {"routes/hop", "routes/wormhole", "replication/hop", "replication/wormhole",
                                             "queues/none/replicate=no", "queues/none/replicate=yes",
                                             "queues/bound/replicate=no", "queues/bound/replicate=yes"};
        for (std::string p : {"capacity", "causality", "completeness"})
            for (std::string timing : {"hop", "wormhole"}) expected.push_back(p + "/" + timing);
        for (std::string ports : {"single", "half"})
            for (std::string timing : {"hop", "wormhole"}) expected.push_back("ports/" + ports + "/" + timing);
        for (const std::string& v : expected) {
            CAPTURE(v);
            CHECK(tally.variants[v].first > 0);
            CHECK(tally.variants[v].second > 0);
        }
    }
}

}  // namespace

TEST_CASE("agreement: z3, direct and simulator on 1200 seeded random tables") { run_seeds(1, 1200, kSmall); }

static void run_composite_seeds(std::uint64_t first, std::uint64_t count, const std::vector<std::string>& topologies) {
    if (const char* one = std::getenv("COLLSCHED_SEED")) first = std::stoull(one), count = 1;
    Tally tally;
    for (std::uint64_t seed = first; seed < first + count; ++seed) {
        CAPTURE(seed);
        check_agreement(make_composite_instance(seed, topologies), tally);
    }
    MESSAGE(fmt::format("{} composite tables: {} hold, {} violated; causality {}, completeness {}, capacity {}", count, tally.holds,
                        tally.violated, tally.violated_by[4], tally.violated_by[6], tally.violated_by[0]));
    if (count > 100) {
        CHECK(tally.holds > static_cast<int>(count) / 4);
        for (Property p : {Property::causality, Property::completeness, Property::capacity}) CHECK(tally.violated_by[static_cast<std::size_t>(p)] > 0);
        for (std::string v : {"causality/hop", "causality/wormhole", "completeness/hop", "completeness/wormhole"}) {
            CAPTURE(v);
            CHECK(tally.variants[v].first > 0);
            CHECK(tally.variants[v].second > 0);
        }
    }
}

TEST_CASE("agreement: z3, direct and simulator on 300 seeded random tables with combined values and bundles") {
    run_composite_seeds(1, 300, kSmall);
}

/// Random tables through switches: the three witnesses agree on each; a table that holds and
/// is refused with the switch's functions off counts as one that uses them.
static void run_switch_seeds(std::uint64_t first, std::uint64_t count) {
    if (const char* one = std::getenv("COLLSCHED_SEED")) first = std::stoull(one), count = 1;
    Tally tally;
    int uses = 0;
    for (std::uint64_t seed = first; seed < first + count; ++seed) {
        CAPTURE(seed);
        const Instance in = make_switch_instance(seed, kSwitches);
        check_agreement(in, tally);
        SendTable plain = in.table;
        plain.model.combine_routers = plain.model.multicast_routers = false;
        uses += verify_direct(in.table).holds() && !verify_direct(plain).holds();
    }
    MESSAGE(fmt::format("{} tables through switches: {} hold ({} of them use the switch's functions), {} violated; capacity {}, ports {}, "
                        "queues {}, replication {}, causality {}, completeness {}",
                        count, tally.holds, uses, tally.violated, tally.violated_by[0], tally.violated_by[1], tally.violated_by[2],
                        tally.violated_by[3], tally.violated_by[4], tally.violated_by[6]));
    if (count > 100) {
        CHECK(tally.holds > static_cast<int>(count) / 5);
        CHECK(uses > static_cast<int>(count) / 10);
        for (Property p : {Property::capacity, Property::queues, Property::replication, Property::causality, Property::completeness})
            CHECK(tally.violated_by[static_cast<std::size_t>(p)] > 0);
    }
}

TEST_CASE("agreement: z3, direct and simulator on 400 seeded random tables through switches that reduce and multicast") {
    run_switch_seeds(1, 400);
}

TEST_CASE("agreement: a processor relaying within a wormhole round (issue 13)") {
    // cbft:4, one round: 0 -> r1.0 -> 1 and 1 -> r1.0 -> 0, all b(0). The router receives two
    // copies in the round and passes on two: the table holds, whichever copy goes where.
    auto topo = Topology::parse("cbft:4");
    SendTable t;
    t.topology = topo;
    t.model = topo->default_model();
    t.model.timing = Timing::wormhole;
    t.model.replicate = false;
    t.collective = Collective::parse("custom", *topo);
    Messages ms(topo->processors());
    t.requirements = {{ms.broadcast(0), Node{1}}};
    Node r = *topo->find_node("r1.0");
    for (auto [u, v] : {std::pair(Node{0}, r), std::pair(r, Node{1}), std::pair(Node{1}, r), std::pair(r, Node{0})})
        t.transfers.push_back({1, *topo->find_channel(u, v), ms.broadcast(0)});
    t.sort();
    Instance in{t, false, "cbft:4 relay within a round"};
    Tally tally;
    check_agreement(in, tally);
    SimReport s = simulate(t);
    CHECK(s.status == SimStatus::completed);
    CHECK(verify_direct(t, {}).holds());
    // One copy too few: 1 -> r1.0 dropped, so r1.0 passes on two copies of the one it received.
    SendTable short_one = t;
    std::erase_if(short_one.transfers, [&](const Transfer& x) { return x.channel == *topo->find_channel(Node{1}, r); });
    SimReport s2 = simulate(short_one);
    REQUIRE(s2.violation);
    CHECK(s2.violation->rule == SimRule::replication);
    CHECK(s2.violation->message ==
          "round 1: router r1.0 forwards b(0) on r1.0->1 but has no copy left: it receives 1 copy in round 1 and forwards 2 "
          "(replicate=no: a router passes on at most as many copies as it receives in the round)");
    Instance in2{short_one, false, "cbft:4 relay with a copy short"};
    check_agreement(in2, tally);
}

TEST_CASE("agreement: the generated phase total exchanges") {
    for (std::string spec : {"ebft:4", "ebft:8", "ebft:16", "cbft:8"}) {
        Instance in;
        in.table = bft_phase_alltoall(Topology::parse(spec));
        in.fixed_routes = true;
        in.description = spec;
        Tally tally;
        check_agreement(in, tally);
        CHECK(tally.holds == 1);
    }
}

namespace {

/// Every candidate `optimize --size` builds for `collective` on `machine` at `sizes` (of at most
/// `max_transfers` transfers)
/// (collsched's constructions, the NVLS ones among them, the library's schedules for the
/// machine, NCCL's algorithms): the three witnesses agree on each. Returns how many tables, and
/// how many of them use the switch's functions (a multicast or a combination).
std::pair<int, int> check_candidates(const std::string& machine, const std::string& collective, const std::vector<double>& sizes,
                                     std::size_t max_transfers) {
    auto topo = Topology::parse("graph:" + std::string(COLLSCHED_SOURCE_DIR) + "/" + machine);
    SynthInstance in{topo, topo->default_model(), Collective::parse(collective, *topo)};
    CandidateQuery q{in, sizes};
    std::vector<NamedProvider> providers = construction_providers();
    providers.push_back(library_provider(std::string(COLLSCHED_SOURCE_DIR) + "/schedules/catalog.json"));
    providers.push_back(nccl_provider());
    std::vector<std::string> notes;
    int tables = 0, switching = 0;
    Tally tally;
    // every table the providers build, not only those gather_candidates checks (the ones that can win)
    std::vector<TimeCandidate> built;
    for (const NamedProvider& p : providers) try {
            p.provide(q, built, notes);
        } catch (const InputError&) {
        }
    for (const TimeCandidate& c : built) {
        CAPTURE(c.name);
        SendTable t = *c.table;
        t.topology = in.topology;
        t.model = in.model;
        if (t.transfers.size() > max_transfers || t.collective.kind != in.collective.kind || !verify_direct(t).holds()) continue;
        REQUIRE(t.model.combine_routers);
        REQUIRE(t.model.multicast_routers);
        // the tables of 256 pieces (35,000 transfers) take minutes of the Z3 engine on a loaded machine
        check_agreement({t, false, fmt::format("{} {} on {}", c.name, collective, machine)}, tally, 1800000);
        SendTable plain = t;  // the same table as if the switch could not: uses a function iff refused
        plain.model.combine_routers = plain.model.multicast_routers = false;
        switching += !verify_direct(plain).holds();
        ++tables;
    }
    CHECK(tally.holds == tables);  // every candidate is verified by the direct checker before it is kept
    return {tables, switching};
}

/// check_candidates on both NVLS machines for the three collectives NVLS serves.
void check_nvls_machines(const std::vector<double>& sizes, std::size_t max_transfers) {
    int tables = 0, switching = 0;
    for (const std::string machine : {"schedules/machines/dgx_h100_nvls.json", "schedules/machines/h100nvls2x8.json"})
        for (const std::string collective : {"allreduce", "allgather", "reduce_scatter"}) {
            CAPTURE(machine);
            CAPTURE(collective);
            auto [n, sw] = check_candidates(machine, collective, sizes, max_transfers);
            MESSAGE(fmt::format("{} {}: {} tables, {} use the switch's functions", machine, collective, n, sw));
            tables += n;
            switching += sw;
        }
    CHECK(switching > 0);
    MESSAGE(fmt::format("{} tables in all, {} use the switch's functions", tables, switching));
}

}  // namespace

// The default suite takes the tables of up to 2,000 transfers (the Z3 engine's Datalog program
// costs about 0.1 ms per transfer: the flat constructions of 64 pieces, 7,168 transfers, take 8 s
// of the three witnesses, and use no function of the switch); the slow suite every table.
TEST_CASE("agreement: the tables optimize --size builds on the NVLS machines at 64 KiB and 1 MiB") {
    check_nvls_machines({65536, 1 << 20}, 2000);
}

TEST_CASE("agreement: the NVLS constructions in every form the tests use (test_nvls, the MSCCL++ export, the real parsers)") {
    auto graph = [](const std::string& f) { return Topology::parse("graph:" + std::string(COLLSCHED_SOURCE_DIR) + "/" + f); };
    auto star = graph("tests/data/nvls/star4.json"), dgx = graph("schedules/machines/dgx_h100_nvls.json");
    std::vector<std::pair<std::string, SendTable>> tables;
    auto forms = [&](const std::string& name, std::shared_ptr<const Topology> t, std::uint32_t k, bool direct_links) {
        compose::NvlsPlan nccl{k}, mixed{k, 2};
        nccl.owner_through_switch = true;
        tables.emplace_back(fmt::format("{} allreduce, {} pieces", name, k), compose::nvls_allreduce(t, {k}));
        tables.emplace_back(fmt::format("{} NCCL's allreduce, {} pieces", name, k), compose::nvls_allreduce(t, nccl));
        if (direct_links) tables.emplace_back(fmt::format("{} allreduce, {} pieces, every 2nd direct", name, k), compose::nvls_allreduce(t, mixed));
        tables.emplace_back(fmt::format("{} reduce_scatter, {} pieces", name, k), compose::nvls_reduce_scatter(t, {k}));
        tables.emplace_back(fmt::format("{} allgather, {} pieces", name, k), compose::nvls_allgather(t, {k}));
    };
    for (std::uint32_t k : {1u, 2u, 5u}) forms("star4", star, k, false);
    for (std::uint32_t k : {1u, 3u, 4u}) forms("dgx_h100_nvls", dgx, k, true);
    tables.emplace_back("h100nvls2x8 allreduce, rail rings, 2 pieces", compose::nvls_rail_allreduce(graph("schedules/machines/h100nvls2x8.json"), {2}));
    tables.emplace_back("h100nvls2x8 allreduce, NCCL's NVLS_TREE, 2 pieces", compose::nvls_tree_allreduce(graph("schedules/machines/h100nvls2x8.json"), {2}));
    Tally tally;
    for (const auto& [name, t] : tables) check_agreement({t, false, name}, tally);
    CHECK(tally.holds == static_cast<int>(tables.size()));
}

namespace {

/// The properties a report finds violated, by name.
std::set<std::string> violated(const VerifyReport& r) {
    std::set<std::string> out;
    for (std::size_t p = 0; p < property_count; ++p)
        if (r.status[p] == Status::violated) out.insert(std::string(to_string(static_cast<Property>(p))));
    return out;
}

}  // namespace

TEST_CASE("agreement: switches, hand-made cases of the order of a router's sends within a step") {
    // box4: 4 GPUs joined pairwise and to r1.0, which reduces and multicasts; allreduce, one chunk
    auto topo = Topology::parse("graph:" + std::string(COLLSCHED_SOURCE_DIR) + "/tests/data/nvls/box4.json");
    const Node r = *topo->find_node("r1.0");
    auto build = [&](Model m, const std::vector<std::tuple<Step, Node, Node, std::vector<std::uint32_t>>>& hops) {
        TableBuilder b(topo, m, Collective::parse("allreduce", *topo));
        const Messages ms = b.messages();
        for (const auto& [s, from, to, sources] : hops)
            b.hop(s, *topo->find_channel(from, to), partial_message(b.composites(), ms, SourceSet(sources), 0));
        return std::move(b).finish();
    };
    Model m = topo->default_model();
    const Node g0{0}, g1{1}, g2{2}, g3{3};
    // r1.0 holds a(2) (step 1), a(1) and a({2,3}) (step 2). In step 3 it sends a({1..3}) to 0 (the
    // first send: a(1), a(2), a({2,3}) count 2 twice, no combination: causality), a(2) to 1 (takes
    // its copy), a({1..3}) to 3 (the leg of the multicast has no shared copy, and now a(1) and
    // a({2,3}) make it: a combination). The checker, the simulator and Z3 read the sends in table order.
    SendTable t = build(m, {{1, g3, g2, {3}}, {1, g2, r, {2}}, {2, g1, r, {1}}, {2, g2, r, {2, 3}},
                            {3, r, g0, {1, 2, 3}}, {3, r, g1, {2}}, {3, r, g3, {1, 2, 3}}});
    Tally tally;
    check_agreement({t, false, "a multicast whose first leg cannot combine and whose last can"}, tally);
    const VerifyReport z = verify_z3(t, {.max_violations = 100});
    CHECK(z.violation_count[static_cast<std::size_t>(Property::causality)] == verify_direct(t).violation_count[static_cast<std::size_t>(Property::causality)]);
    bool first_leg = false, last_leg = false;
    for (const Violation& v : z.violations)
        if (v.property == Property::causality && v.node == r) {
            first_leg = first_leg || v.channel == topo->find_channel(r, g0);
            last_leg = last_leg || v.channel == topo->find_channel(r, g3);
        }
    CHECK(first_leg);
    CHECK_FALSE(last_leg);
    // a combination takes the only copy of a(2) on a lower channel: the send of a(2) on a higher
    // one has none left (replication); in the other order the combination lacks a(2) (causality)
    SendTable lower = build(m, {{1, g2, r, {2}}, {1, g3, r, {3}}, {2, r, g1, {2, 3}}, {2, r, g0, {2}}});
    SendTable higher = build(m, {{1, g2, r, {2}}, {1, g3, r, {3}}, {2, r, g0, {2, 3}}, {2, r, g1, {2}}});
    check_agreement({lower, false, "a(2) forwarded before the combination that needs it"}, tally);
    check_agreement({higher, false, "the combination before a(2) is forwarded"}, tally);
    CHECK(violated(verify_z3(lower)).count("causality") == 1);
    CHECK(violated(verify_z3(higher)).count("replication") == 1);
    // queues=none: an input that waited a step before the combination is late
    m.queues = QueueKind::none;
    SendTable late = build(m, {{1, g2, r, {2}}, {2, g3, r, {3}}, {3, r, g0, {2, 3}}});
    check_agreement({late, false, "an input combined a step late under queues=none"}, tally);
    CHECK(violated(verify_z3(late)).count("queues") == 1);
}

namespace {

/// A mutation of an NVLS table must be violated by the three witnesses, with `expect` among the
/// properties both engines find violated (and the same set of them, check_agreement).
void mutated(const std::string& what, const SendTable& t, const std::string& expect) {
    CAPTURE(what);
    Tally tally;
    check_agreement({t, false, what}, tally);
    const VerifyReport d = verify_direct(t), z = verify_z3(t);
    CHECK(violated(d) == violated(z));
    CHECK(violated(z).count(expect) == 1);
    CHECK(simulate(t).violation.has_value());
}

std::size_t first_transfer(const SendTable& t, const std::function<bool(const Transfer&, const Channel&)>& pred) {
    for (std::size_t k = 0; k < t.transfers.size(); ++k)
        if (pred(t.transfers[k], t.topology->channel(t.transfers[k].channel))) return k;
    FAIL("no such transfer");
    return 0;
}

}  // namespace

TEST_CASE("agreement: mutated NVLS tables are violated by the three witnesses with the same findings") {
    for (const std::string machine : {"tests/data/nvls/star4.json", "schedules/machines/dgx_h100_nvls.json"})
        for (bool nccl : {false, true}) {
            CAPTURE(machine);
            CAPTURE(nccl);
            auto topo = Topology::parse("graph:" + std::string(COLLSCHED_SOURCE_DIR) + "/" + machine);
            compose::NvlsPlan plan{2};
            plan.owner_through_switch = nccl;
            const SendTable ar = compose::nvls_allreduce(topo, plan);
            const Topology& T = *ar.topology;
            REQUIRE(verify_z3(ar).holds());
            auto sum = [&](const Transfer& x, std::size_t parts) {
                auto pv = partial_of(ar.messages(), x.message);
                return pv && pv->sources.size() == parts;
            };
            const std::size_t P = T.processors();
            auto without = [&](std::size_t k) {
                SendTable m = ar;
                m.transfers.erase(m.transfers.begin() + static_cast<std::ptrdiff_t>(k));
                return m;
            };
            // drop a GPU's contribution to the switch: the switch cannot form the sum
            mutated("drop a contribution", without(first_transfer(ar, [&](const Transfer& x, const Channel& c) {
                        return T.is_processor(c.from) && sum(x, 1);
                    })),
                    "causality");
            // drop the switch's sum to its owner: the owner cannot store the total
            mutated("drop the switch's sum", without(first_transfer(ar, [&](const Transfer& x, const Channel& c) {
                        return !T.is_processor(c.from) && sum(x, nccl ? P : P - 1);
                    })),
                    "causality");
            // drop one leg of the multicast: a GPU never gets the total
            mutated("drop a multicast leg", without(first_transfer(ar, [&](const Transfer& x, const Channel& c) {
                        return !T.is_processor(c.from) && sum(x, P) && !(nccl && x.step == 2);  // in NCCL's form step 2 is the sum
                    })),
                    "completeness");
            // double a reduction: the switch sends its sum again a step later, with no inputs left
            {
                SendTable m = ar;
                Transfer x = ar.transfers[first_transfer(ar, [&](const Transfer& y, const Channel& c) {
                    return !T.is_processor(c.from) && sum(y, nccl ? P : P - 1);
                })];
                ++x.step;
                m.transfers.push_back(x);
                m.sort();
                mutated("double a reduction", m, "causality");
            }
            // exceed a switch port's capacity: a contribution listed cap more times
            {
                SendTable m = ar;
                const Transfer x = ar.transfers[first_transfer(ar, [&](const Transfer& y, const Channel& c) { return T.is_processor(c.from) && sum(y, 1); })];
                for (std::uint32_t k = 0; k < T.channel(x.channel).cap; ++k) m.transfers.push_back(x);
                m.sort();
                mutated("exceed a switch port", m, "capacity");
            }
            // the switch's functions off in the model: no multicast, no combination
            SendTable no_multicast = ar;
            no_multicast.model.multicast_routers = false;
            mutated("multicast=no", no_multicast, "replication");
            SendTable no_combine = ar;
            no_combine.model.combine_routers = false;
            mutated("combine=processors", no_combine, "causality");
        }
    // a switch declared without multicast: the same table refused by replication
    auto star = Topology::parse("graph:" + std::string(COLLSCHED_SOURCE_DIR) + "/tests/data/nvls/star4.json");
    SendTable ar = compose::nvls_allreduce(star, {2});
    ar.topology = Topology::parse("graph:" + std::string(COLLSCHED_SOURCE_DIR) + "/tests/data/nvls/star4_reduce_only.json");
    REQUIRE(ar.topology->channels().size() == star->channels().size());
    mutated("a switch that does not multicast", ar, "replication");
}

TEST_SUITE("slow") {
    TEST_CASE("agreement: 5000 more seeds on small topologies" * doctest::skip()) { run_seeds(100000, 5000, kSmall); }
    TEST_CASE("agreement: 1000 seeds on larger topologies" * doctest::skip()) { run_seeds(200000, 1000, kLarge); }
    TEST_CASE("agreement: 3000 more composite seeds on small topologies" * doctest::skip()) { run_composite_seeds(100000, 3000, kSmall); }
    TEST_CASE("agreement: 500 composite seeds on larger topologies" * doctest::skip()) { run_composite_seeds(200000, 500, kLarge); }
    TEST_CASE("agreement: 3000 more seeds through switches" * doctest::skip()) { run_switch_seeds(100000, 3000); }
    TEST_CASE("agreement: every table optimize --size builds on the NVLS machines at 64 KiB to 1 GiB" * doctest::skip()) {
        check_nvls_machines({65536, 1 << 20, 1 << 24, 1 << 28, 1 << 30}, ~std::size_t{0});
    }
}

TEST_CASE("agreement: collsched verify --engine z3 and --engine both") {
    using collsched::test::run;
    using collsched::test::source;
    std::string ebft4 = source("tests/data/ebft4_alltoall.json");

    auto z = run("verify --engine z3 --json " + ebft4);
    CHECK(z.code == 0);
    CHECK(z.err.empty());
    auto zj = nlohmann::json::parse(z.out);
    CHECK(zj["verdict"] == "holds");
    CHECK(zj["engine"] == "z3");
    CHECK(zj["properties"]["capacity"] == "holds");
    CHECK(zj["properties"]["ports"] == "skipped");
    CHECK(zj["violations"].empty());
    CHECK(zj["seconds"].is_number());

    auto both = run("verify --engine both " + ebft4);
    CHECK(both.code == 0);
    CHECK(both.out.find("engine direct\nverdict: holds") != std::string::npos);
    CHECK(both.out.find("engine z3\nverdict: holds") != std::string::npos);
    CHECK(both.out.ends_with("both engines: holds\n"));

    // A capacity violation: both engines find it, they agree, exit 1 and nothing on stderr.
    std::string bad = fmt::format("/tmp/collsched_agreement_{}.csv", ::getpid());
    {
        std::ofstream f(bad);
        f << "# format=collsched.table/1\n# topology=ring:4\n# model=timing=hop,ports=multi,queues=unbounded,replicate=no\n"
             "# collective=broadcast:0\nstep,from,to,message\n1,0,1,b(0)\n1,0,1,b(0)\n2,1,2,b(0)\n1,0,3,b(0)\n";
    }
    auto v = run("verify --engine both --json " + bad);
    CHECK(v.code == 1);
    CHECK(v.err.empty());
    auto vj = nlohmann::json::parse(v.out);
    CHECK(vj["verdict"] == "violated");
    CHECK(vj["engine"] == "both");
    CHECK(vj["properties"]["capacity"] == "violated");
    CHECK(vj["properties"]["completeness"] == "holds");
    CHECK(vj["disagreements"].empty());
    CHECK(vj["engines"]["direct"]["violations"][0]["step"] == 1);
    CHECK(vj["engines"]["z3"]["violations"][0]["step"] == 1);
    CHECK(vj["engines"]["z3"]["violations"][0]["channel"]["to"] == "1");
    auto vt = run("verify --engine z3 " + bad);
    CHECK(vt.code == 1);
    CHECK(vt.out.find("capacity: step 1, channel 0->1: 2 messages (b(0), b(0)) but capacity 1") != std::string::npos);
    std::remove(bad.c_str());

    // A time limit: unknown, exit 3, and with both engines no disagreement.
    std::string sched = source("schedules/bft/ebft_alltoall.sched");
    auto slow = run("verify " + sched + " -D n=32 --engine z3 --timeout 0.001");
    CHECK(slow.code == 3);
    CHECK(slow.out.starts_with("verdict: unknown"));
    CHECK(slow.out.find("note: ") != std::string::npos);
    auto slow_both = run("verify " + sched + " -D n=32 --engine both --timeout 0.001 --json");
    CHECK(slow_both.code == 3);
    CHECK(slow_both.err.empty());
    auto sj = nlohmann::json::parse(slow_both.out);
    CHECK(sj["verdict"] == "unknown");
    CHECK(sj["disagreements"].empty());

    CHECK(run("verify --engine magic " + ebft4).code == 2);
    CHECK(run("verify --engine z3 --timeout -1 " + ebft4).code == 2);
}
