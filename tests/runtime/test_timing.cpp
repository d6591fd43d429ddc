// Predicted times (runtime/timing.hpp, docs/time.md) against closed formulas: the ring
// allgather, the chunked ring whose chunks pipeline, link groups and single ports serializing
// transfers, and a table that breaks causality refused.
#include <doctest/doctest.h>

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include <fmt/format.h>

#include "compiler/table/builder.hpp"
#include "compiler/table/partials.hpp"
#include "compiler/lower/lower.hpp"
#include "dsl/diagnostics.hpp"
#include "runtime/timing.hpp"
#include "runtime/timing_index.hpp"

using namespace collsched;

namespace {

SendTable compile(const std::string& text) {
    Diagnostics diags("t.sched", text);
    auto t = compile_text(text, "t.sched", CompileOptions{}, diags);
    INFO(diags.render());
    REQUIRE(t.has_value());
    return std::move(*t);
}

bool near(double a, double b) { return std::abs(a - b) <= 1e-9 * std::max(std::abs(a), std::abs(b)) + 1e-15; }

std::string ring_allgather(int P, int C) {
    return fmt::format(
        "topology ring({0})\ncollective allgather chunks {1}\n"
        "for t in 1 .. {0} - 1 {{ step t rounds {1} {{ for p in 0 .. {0} - 1 {{ for c in 0 .. {1} - 1 {{\n"
        "  send p -> (p + 1) % {0} msg b((p - t + 1 + {0}) % {0}, c) }} }} }} }}\n",
        P, C);
}

}  // namespace

TEST_CASE("timing: the ring allgather on a uniform ring takes (P-1)(alpha + M/B) both ways") {
    for (int P : {3, 8, 16}) {
        CAPTURE(P);
        SendTable t = compile(ring_allgather(P, 1));
        const double alpha = 2e-6, B = 25e9, M = 1 << 20;
        // M is one datum; the size (NCCL's: the allgather's output, docs/time.md "Sizes") is P M
        TimePrediction p = predict_time(t, TimeOptions{P * M, LinkSpeed{alpha, B}});
        CHECK(near(p.datum_bytes, M));
        CHECK(near(p.synchronous, (P - 1) * (alpha + M / B)));
        CHECK(near(p.asynchronous, (P - 1) * (alpha + M / B)));
        CHECK(p.step_seconds.size() == std::size_t(P - 1));
        // the topology's own speeds: the built-in default, 1 us and 10 GB/s
        TimePrediction d = predict_time(t, TimeOptions{P * M, std::nullopt});
        CHECK(near(d.asynchronous, (P - 1) * (default_alpha + M / default_unit_bandwidth)));
    }
}

TEST_CASE("timing: the chunks of a chunked ring pipeline: asynchronous (P-1) M/B + alpha when alpha <= (C-1) M/(C B)") {
    const int P = 4, C = 4;
    SendTable t = compile(ring_allgather(P, C));
    const double alpha = 1e-6, B = 1e9, M = 4e6;  // a chunk takes 1 ms, far above alpha
    TimePrediction p = predict_time(t, TimeOptions{P * M, LinkSpeed{alpha, B}});  // the size: P data of M
    CHECK(near(p.chunk_bytes, M / C));
    // synchronous: every step moves C chunks over each channel, then waits
    CHECK(near(p.synchronous, (P - 1) * (alpha + M / B)));
    // asynchronous: every channel busy from 0 to (P-1) M/B; the last chunk lands alpha later
    CHECK(near(p.asynchronous, (P - 1) * M / B + alpha));
    // and when alpha dominates, the chain of forwards does: (P-1)(alpha + m) + (C-1) m for m = M/(C B)
    TimePrediction q = predict_time(t, TimeOptions{P * 4e3, LinkSpeed{1e-3, B}});
    const double m = 4e3 / C / B;
    CHECK(near(q.asynchronous, (P - 1) * (1e-3 + m) + (C - 1) * m));
}

TEST_CASE("timing: a link group and single ports serialize what channels alone would not") {
    const auto dir = std::filesystem::temp_directory_path() / ("collsched_timing." + std::to_string(::getpid()));
    std::filesystem::create_directories(dir);
    const std::string graph = (dir / "g.json").string();
    std::ofstream(graph) << R"({"processors": 3, "alpha": "1 us", "bandwidth": "10 GB/s",
 "edges": [[0, 1], [0, 2], [1, 2]],
 "groups": [{"name": "gpu0.out", "cap": 1, "out_of": 0, "bandwidth": "5 GB/s"}]})";
    // GPU 0 sends its datum to 1 and 2 in one step of 2 rounds; 1 and 2 exchange theirs
    const std::string text = fmt::format(
        "topology graph(\"{}\")\ncollective allgather\n"
        "step 1 rounds 2 {{ send 0 -> 1 msg b(0); send 0 -> 2 msg b(0); send 1 -> 2 msg b(1); send 2 -> 1 msg b(2)\n"
        "  send 1 -> 0 msg b(1); send 2 -> 0 msg b(2) }}\n",
        graph);
    SendTable t = compile(text);
    const double M = 1e6;  // one datum: the allgather's size is 3 M
    TimePrediction p = predict_time(t, TimeOptions{3 * M, std::nullopt});
    // the group: 2 M at 5 GB/s, one after the other; the last of the two lands 1 us later
    CHECK(near(p.asynchronous, 2 * M / 5e9 + 1e-6));
    CHECK(near(p.synchronous, 1e-6 + 2 * M / 5e9));
    // --link replaces the group's speed too (cap 1 x 10 GB/s): 2 M / 10 GB/s + alpha
    TimePrediction u = predict_time(t, TimeOptions{3 * M, LinkSpeed{1e-6, 10e9}});
    CHECK(near(u.asynchronous, 2 * M / 10e9 + 1e-6));

    // single ports on the complete graph: 0 sends to 1 in step 1 and to 2 in step 2; with multi
    // ports both leave at once (async M/B + alpha), with single ports one after the other
    for (const char* ports : {"multi", "single"}) {
        CAPTURE(ports);
        SendTable s = compile(fmt::format("topology complete(3)\nmodel hop(ports = {})\ncollective broadcast(0)\n"
                                          "step 1 {{ send 0 -> 1 msg b(0) }}\nstep 2 {{ send 0 -> 2 msg b(0) }}\n",
                                          ports));
        TimePrediction q = predict_time(s, TimeOptions{M, LinkSpeed{1e-6, 10e9}});
        CHECK(near(q.asynchronous, (std::string(ports) == "single" ? 2 : 1) * M / 10e9 + 1e-6));
        CHECK(near(q.synchronous, 2 * (M / 10e9 + 1e-6)));
    }
    std::filesystem::remove_all(dir);
}

TEST_CASE("timing: a protocol divides bandwidth by its wire factor and adds its latency to a hop out of a GPU") {
    // docs/time.md, "Protocols": (P-1)(alpha + extra + wire M/B) on the uniform ring, every channel
    // inside a box (none is below a quarter of the fastest)
    const int P = 8;
    SendTable t = compile(ring_allgather(P, 1));
    const double alpha = 0.6e-6, B = 300e9;
    struct Row {
        Protocol p;
        double wire, extra;
    };
    for (const Row& r : {Row{Protocol::none, 1, 0}, Row{Protocol::ll, 2, 0}, Row{Protocol::ll128, 128.0 / 120, 1.3e-6},
                         Row{Protocol::simple, 1, 2.8e-6}}) {
        CAPTURE(to_string(r.p));
        for (double M : {1024.0, 256.0 * (1 << 20) / P}) {
            TimePrediction q = predict_time(t, TimeOptions{P * M, LinkSpeed{alpha, B}, r.p});
            CHECK(near(q.asynchronous, (P - 1) * (alpha + r.extra + r.wire * M / B)));
            CHECK(near(q.synchronous, (P - 1) * (alpha + r.extra + r.wire * M / B)));
        }
    }
    // LL is the fastest at 1 KiB and the slowest at 256 MiB; Simple the reverse
    auto at = [&](Protocol p, double size) { return predict_time(t, TimeOptions{size, LinkSpeed{alpha, B}, p}).asynchronous; };
    CHECK(at(Protocol::ll, 1024) < at(Protocol::ll128, 1024));
    CHECK(at(Protocol::ll128, 1024) < at(Protocol::simple, 1024));
    CHECK(at(Protocol::ll, 256 << 20) > at(Protocol::ll128, 256 << 20));
    CHECK(at(Protocol::ll128, 256 << 20) > at(Protocol::simple, 256 << 20));
    CHECK(parse_protocol("LL128") == Protocol::ll128);
    CHECK(!parse_protocol("ll"));

    // the network's latency on a channel below a quarter of the fastest between processors; a
    // router's channels pay none (the hop left its GPU on the channel before)
    const std::string dir = fmt::format("/tmp/collsched_protocol.{}", ::getpid());
    std::filesystem::create_directories(dir);
    const std::string graph = dir + "/g.json";
    std::ofstream(graph) << R"({"processors": 2, "routers": 1, "edges": [[0, 1, 1, "nvlink"], [0, "r1.0", 1, "ib"], ["r1.0", 1, 1, "ib"]],
 "link_types": {"nvlink": {"alpha": "0.6 us", "bandwidth": "300 GB/s"}, "ib": {"alpha": "2.7 us", "bandwidth": "25 GB/s"}}})";
    auto g = Topology::parse("graph:" + graph);
    const TimeOptions simple = with_network_class(*g, TimeOptions{0, std::nullopt, Protocol::simple});
    CHECK(near(simple.network_below, 75e9));
    const ChannelId nv = *g->find_channel(Node{0}, Node{1}), out = *g->find_channel(Node{0}, Node{2}), in = *g->find_channel(Node{2}, Node{1});
    CHECK(near(channel_speed(*g, nv, simple).alpha, 0.6e-6 + 2.8e-6));
    CHECK(near(channel_speed(*g, out, simple).alpha, 2.7e-6 + 11.3e-6));
    CHECK(near(channel_speed(*g, in, simple).alpha, 2.7e-6));
    const TimeOptions ll = with_network_class(*g, TimeOptions{0, std::nullopt, Protocol::ll});
    CHECK(near(channel_speed(*g, out, ll).bandwidth, 25e9 / 2));
    // processors joined only through routers (switches as routers): the quarter of the fastest channel out of a
    // processor, so the NIC's channels are still the network's
    std::ofstream(graph) << R"({"processors": 2, "routers": 2, "edges": [[0, "r1.0", 1, "nvlink"], [1, "r1.0", 1, "nvlink"],
 [0, "r1.1", 1, "ib"], [1, "r1.1", 1, "ib"]],
 "link_types": {"nvlink": {"alpha": "0.6 us", "bandwidth": "300 GB/s"}, "ib": {"alpha": "2.7 us", "bandwidth": "25 GB/s"}}})";
    auto r = Topology::parse("graph:" + graph);
    const TimeOptions routed = with_network_class(*r, TimeOptions{0, std::nullopt, Protocol::simple});
    CHECK(near(routed.network_below, 75e9));
    const ChannelId nic = *r->find_channel(Node{0}, *r->find_node("r1.1")), nvs = *r->find_channel(Node{0}, *r->find_node("r1.0"));
    CHECK(link_class(*r, nic, routed) == LinkClass::network);
    CHECK(link_class(*r, nvs, routed) == LinkClass::box);
    CHECK(near(channel_speed(*r, nic, routed).alpha, 2.7e-6 + 11.3e-6));
    std::filesystem::remove_all(dir);
}

TEST_CASE("timing: a sum sent on in several steps waits in each for every value of its chunk that arrived before that step") {
    // complete:4, allreduce of one chunk, every channel alpha a, M / B = d. Processor 0 sends its sum
    // a({0..3}) in steps 4 and 6. In step 4 it waits for the arrivals of steps 1 to 3, in step 6 for those
    // and the ones of steps 4 and 5 too (the plan chains the step-6 condition to the step-4 one: each
    // arrival is counted once, a sum sent through a router to one destination a step stays linear).
    auto topo = Topology::parse("complete:4");
    using Hop = std::tuple<Step, std::uint32_t, std::uint32_t, std::vector<std::uint32_t>>;
    const double M = 1e6, a = 1e-6, d = M / 1e9;
    auto starts = [&](const std::vector<Hop>& hops) {
        TableBuilder b(topo, Model{}, Collective::parse("allreduce", *topo));
        const Messages ms = b.messages();
        for (const auto& [st, u, v, sources] : hops)
            b.hop(st, *topo->find_channel(Node{u}, Node{v}), partial_message(b.composites(), ms, SourceSet(sources), 0));
        const SendTable t = std::move(b).finish();
        const TimePrediction p = predict_time(t, TimeOptions{M, LinkSpeed{a, 1e9}});
        std::vector<double> at;  // the starts of processor 0's sends, in step order
        for (std::size_t i = 0; i < t.transfers.size(); ++i)
            if (topo->channel(t.transfers[i].channel).from == Node{0}) at.push_back(p.transfers[i].start);
        return at;
    };
    // a({1,2,3}) reaches 0 at 3d + 3a (step 3), and again at 4d + 3a (step 5, behind it on channel 1->0)
    const std::vector<Hop> later{{1, 2, 3, {2}}, {2, 3, 1, {2, 3}}, {3, 1, 0, {1, 2, 3}}, {5, 1, 0, {1, 2, 3}}, {4, 0, 2, {0, 1, 2, 3}}, {6, 0, 3, {0, 1, 2, 3}}};
    std::vector<double> at = starts(later);
    REQUIRE(at.size() == 2);
    CHECK(near(at[0], 3 * d + 3 * a));
    CHECK(near(at[1], 4 * d + 3 * a));
    // the arrival of step 5 early (a(2) at d + a): step 6 still waits for step 3's, through the chain
    const std::vector<Hop> earlier{{1, 2, 3, {2}}, {2, 3, 1, {2, 3}}, {3, 1, 0, {1, 2, 3}}, {5, 2, 0, {2}}, {4, 0, 2, {0, 1, 2, 3}}, {6, 0, 3, {0, 1, 2, 3}}};
    at = starts(earlier);
    REQUIRE(at.size() == 2);
    CHECK(near(at[0], 3 * d + 3 * a));
    CHECK(near(at[1], 3 * d + 3 * a));
}

TEST_CASE("timing: a transfer of data its sender never holds is refused, naming it") {
    auto topo = Topology::parse("ring:4");
    TableBuilder b(topo, Model{}, Collective::parse("allgather", *topo));
    b.hop(1, *topo->find_channel(Node{0}, Node{1}), b.messages().broadcast(2));
    SendTable t = std::move(b).finish();
    CHECK_THROWS_WITH_AS(predict_time(t, TimeOptions{1024, std::nullopt}),
                         "cannot predict the time: the transfer in step 1, 0->1, b(2) sends b(2), which 0 holds by no earlier step "
                         "(the table breaks causality; `collsched verify` says where)",
                         InputError);
}

TEST_CASE("timing: the timeline lists every channel's transfers with their times") {
    SendTable t = compile(ring_allgather(3, 1));
    const TimeOptions opt{3e6, LinkSpeed{1e-6, 1e9}};  // 3 data of 1 MB
    std::string j = timeline_json(t, predict_time(t, opt), opt);
    CHECK(j.find("\"format\":\"collsched.timeline/1\"") != std::string::npos);
    CHECK(j.find("{\"from\":\"0\",\"to\":\"1\",\"alpha_s\":1e-06,\"bandwidth_Bps\":1000000000.0,\"busy\":[{\"step\":1,\"msg\":\"b(0)\","
                 "\"ready\":0.0,\"start\":0.0,\"end\":0.001,\"arrive\":0.0010") != std::string::npos);
}

TEST_CASE("timing: one plan predicts every size as a fresh prediction does, and outlives its table") {
    // a chunked ring (pipelined) and the pipelined hierarchical allreduce on multibox 2 x 8 (partials,
    // link groups, two link speeds): the conditions of the plan do not depend on the size
    std::vector<SendTable> tables;
    tables.push_back(compile(ring_allgather(8, 4)));
    Diagnostics diags;
    auto hier = compile_file(std::string(COLLSCHED_SOURCE_DIR) + "/schedules/multibox/allreduce_hierarchical_pipelined.sched", {}, {}, diags);
    INFO(diags.render());
    REQUIRE(hier.has_value());
    tables.push_back(std::move(*hier));
    for (SendTable& t : tables) {
        std::optional<TimingPlan> plan{TimingPlan(t)};
        const TimingPlan copy = *plan;  // copies share the plan
        plan.reset();
        const std::vector<double> sizes{1, 4096, 1 << 20, 3.3e7, 1 << 30};
        std::vector<TimePrediction> fresh;
        for (double m : sizes) fresh.push_back(predict_time(t, TimeOptions{m, std::nullopt}));
        t = SendTable{};  // the plan keeps what it needs
        for (std::size_t i = 0; i < sizes.size(); ++i) {
            CAPTURE(sizes[i]);
            const TimePrediction p = copy.predict(TimeOptions{sizes[i], std::nullopt});
            CHECK(p.asynchronous == fresh[i].asynchronous);
            CHECK(p.synchronous == fresh[i].synchronous);
            CHECK(copy.synchronous(TimeOptions{sizes[i], std::nullopt}) == fresh[i].synchronous);
            CHECK(p.step_seconds == fresh[i].step_seconds);
            REQUIRE(p.transfers.size() == fresh[i].transfers.size());
            std::size_t differ = 0;
            for (std::size_t j = 0; j < p.transfers.size(); ++j) differ += p.transfers[j].arrive != fresh[i].transfers[j].arrive;
            CHECK(differ == 0);
        }
        CHECK(copy.predict(TimeOptions{1 << 20, LinkSpeed{1e-6, 1e9}}).asynchronous > 0);
    }
}

TEST_CASE("timing: a plan's building stops at its deadline") {
    // allgather on complete:300 in one step: 89,700 transfers, past the 65,536 the builder polls
    // after (issue 41: optimize --size built the plans of its last tables past --timeout)
    auto topo = Topology::parse("complete:300");
    TableBuilder b(topo, Model{}, Collective::parse("allgather", *topo));
    for (std::uint32_t s = 0; s < 300; ++s)
        for (std::uint32_t d = 0; d < 300; ++d)
            if (s != d) b.hop(1, *topo->find_channel(Node{s}, Node{d}), b.messages().broadcast(s));
    const SendTable t = std::move(b).finish();
    CHECK_THROWS_AS(TimingPlan(t, Deadline::after(1e-9)), LimitReached);
    CHECK(TimingPlan(t).predict(TimeOptions{1 << 20, std::nullopt}).asynchronous > 0);
}

TEST_CASE("timing: a value sent on to several waits for the latest of its earlier arrivals, once for all of them") {
    // the sends of one value from one sender in one step share one condition (the earlier arrivals of
    // values it may contain): 3's partial reaches 0 in step 1, 1's through 2 in step 2, and the sum
    // leaves 0 for every other in step 3, after the later of them: 3 (alpha + M/B), not 2
    const SendTable t = compile(
        "topology complete(4)\ncollective allreduce chunks 1\n"
        "step 1 { send 1 -> 2 msg partial(1, 0)\n send 3 -> 0 msg partial(3, 0) }\n"
        "step 2 { send 2 -> 0 msg partial(2, 0) }\n"
        "step 3 { for p in 1 .. 3 { send 0 -> p msg partial(0, 0) } }\n");
    const double alpha = 1e-6, B = 10e9, M = 1 << 20;
    const TimePrediction p = predict_time(t, TimeOptions{M, LinkSpeed{alpha, B}});
    CHECK(near(p.asynchronous, 3 * (alpha + M / B)));
    CHECK(near(p.synchronous, 3 * (alpha + M / B)));
    for (std::size_t j = 0; j < p.transfers.size(); ++j)
        if (t.transfers[j].step == 3) CHECK(near(p.transfers[j].ready, 2 * (alpha + M / B)));
    // NCCL's ring allreduce on a ring: every send waits for one arrival, 2(n-1) hops of M/n
    for (int n : {4, 8}) {
        CAPTURE(n);
        const SendTable r = compile(fmt::format(
            "topology ring({0})\ncollective allreduce chunks {0}\n"
            "for j in 1 .. {0} - 1 {{\n"
            "  step j {{ for p in 0 .. {0} - 1 {{ send p -> (p + 1) % {0} msg partial(p, (p - j) % {0}) }} }}\n"
            "  step {0} - 1 + j {{ for p in 0 .. {0} - 1 {{ send p -> (p + 1) % {0} msg partial(p, (p - j + 1) % {0}) }} }}\n"
            "}}\n",
            n));
        CHECK(near(predict_time(r, TimeOptions{M, LinkSpeed{alpha, B}}).asynchronous, 2 * (n - 1) * (alpha + M / n / B)));
    }
}

TEST_CASE("timing: asynchronous() alone is predict()'s time, and a transfer starts when ready or when a resource it holds frees") {
    // The run forgets the busy intervals that ended before the ready time being served and keeps no per-transfer times
    // when only the time is asked: the pipelined hierarchical allreduce on multibox 2 x 8 (link groups, many
    // transfers queued on the NICs at 1 GiB) at five sizes. Every transfer starts at its ready time or when a transfer
    // on a resource it shares ends, and no resource is held twice at once.
    Diagnostics diags;
    auto t = compile_file(std::string(COLLSCHED_SOURCE_DIR) + "/schedules/multibox/allreduce_hierarchical_pipelined.sched", {}, {}, diags);
    INFO(diags.render());
    REQUIRE(t.has_value());
    const Topology& topo = *t->topology;
    const TimingPlan plan(*t);
    for (double m : {65536.0, 1048576.0, 16777216.0, 268435456.0, 1073741824.0}) {
        CAPTURE(m);
        const TimeOptions opt{m, std::nullopt};
        const TimePrediction p = plan.predict(opt);
        CHECK(plan.asynchronous(opt) == p.asynchronous);
        double last = 0;
        for (const TransferTime& x : p.transfers) last = std::max(last, x.arrive);
        CHECK(last == p.asynchronous);
        // per resource (channel c, or group g as channels().size() + g): its transfers
        std::vector<std::vector<std::uint32_t>> on(topo.channels().size() + topo.groups().size());
        for (std::uint32_t j = 0; j < t->transfers.size(); ++j) {
            on[idx(t->transfers[j].channel)].push_back(j);
            for (std::uint32_t g : topo.groups_of(t->transfers[j].channel)) on[topo.channels().size() + g].push_back(j);
        }
        std::size_t overlaps = 0, not_at_a_boundary = 0;
        for (auto& js : on) {
            std::sort(js.begin(), js.end(), [&](std::uint32_t a, std::uint32_t b) { return p.transfers[a].start < p.transfers[b].start; });
            for (std::size_t k = 0; k + 1 < js.size(); ++k)
                overlaps += p.transfers[js[k]].end > p.transfers[js[k + 1]].start && p.transfers[js[k]].end > p.transfers[js[k]].start;
        }
        for (std::uint32_t j = 0; j < t->transfers.size(); ++j) {
            const TransferTime& x = p.transfers[j];
            if (x.start == x.ready) continue;
            bool at_end = false;  // of a transfer on a resource j holds
            std::vector<std::size_t> mine{idx(t->transfers[j].channel)};
            for (std::uint32_t g : topo.groups_of(t->transfers[j].channel)) mine.push_back(topo.channels().size() + g);
            for (std::size_t r : mine)
                for (std::uint32_t k : on[r]) at_end = at_end || (k != j && p.transfers[k].end == x.start);
            not_at_a_boundary += !at_end;
        }
        CHECK(overlaps == 0);
        CHECK(not_at_a_boundary == 0);
    }
}

TEST_CASE("timing: the arrivals' radix queue pops in the order of the heap, pushes above the last pop interleaved") {
    // the asynchronous run's arrivals: every push at or after the time of the last pop, with a larger key at an equal
    // time; equal times often (the same hop lengths), peeks between the pushes
    struct Ev {
        double time;
        std::uint64_t key;
        bool operator>(const Ev& o) const { return time > o.time || (time == o.time && key > o.key); }
    };
    timing_internal::RadixQueue<Ev> radix;
    timing_internal::QuadHeap<Ev> heap;
    std::uint64_t state = 12345, key = 0;
    auto next = [&] { return state = state * 6364136223846793005ull + 1442695040888963407ull; };
    double now = 0;
    std::size_t popped = 0, differ = 0;
    for (int round = 0; round < 20000; ++round) {
        const int pushes = static_cast<int>(next() >> 62);  // 0 to 3
        for (int p = 0; p < pushes; ++p) {
            const double t = now + static_cast<double>((next() >> 40) % 8) * 0.25e-6;  // a few distinct lengths
            const Ev e{t, ++key};
            radix.push(e), heap.push(e);
            if (!radix.empty()) differ += radix.top().time != heap.top().time || radix.top().key != heap.top().key;
        }
        if (heap.empty()) continue;
        differ += radix.top().time != heap.top().time || radix.top().key != heap.top().key;
        now = heap.top().time;
        radix.pop(), heap.pop();
        ++popped;
    }
    while (!heap.empty()) {
        differ += radix.top().time != heap.top().time || radix.top().key != heap.top().key;
        radix.pop(), heap.pop();
        ++popped;
    }
    CHECK(radix.empty());
    CHECK(popped == key);
    CHECK(differ == 0);
}

TEST_CASE("timing: a router that does not replicate forwards each copy once (a multicast shares one within a step), and one that does sends on from the first") {
    // 0, 1, 2 on one router r. b(0) crosses r twice, as NCCL's ring crosses a rail switch: 0 -> r -> 1
    // (steps 1, 2), then 1 -> r -> 2 (steps 3, 4). Under replicate=no the departure of step 4 forwards the
    // copy of step 3 (first in, first out, the step semantics' matching): three legs of d + a before it
    // starts. A router that keeps what it receives (replicate=yes) sends it from the first copy, at d + a.
    const std::string dir = fmt::format("/tmp/collsched_copies.{}", ::getpid());
    std::filesystem::create_directories(dir);
    const std::string graph = dir + "/g.json";
    std::ofstream(graph) << R"({"processors": 3, "routers": 1, "alpha": "1 us", "bandwidth": "1 GB/s",
 "edges": [[0, "r1.0", 1], [1, "r1.0", 1], [2, "r1.0", 1]]})";
    auto topo = Topology::parse("graph:" + graph);
    std::filesystem::remove_all(dir);
    const double M = 3e3, a = 1e-6, d = 1e-6;  // allgather: each datum M / 3 = 1 kB, 1 us at 1 GB/s
    auto last_start = [&](std::string_view model) {
        TableBuilder b(topo, apply_model_options(Model{}, model), Collective::parse("allgather", *topo));
        const MessageId m = *b.messages().parse("b(0)");
        const Node r = *topo->find_node("r1.0");
        b.hop(1, *topo->find_channel(Node{0}, r), m);
        b.hop(2, *topo->find_channel(r, Node{1}), m);
        b.hop(3, *topo->find_channel(Node{1}, r), m);
        b.hop(4, *topo->find_channel(r, Node{2}), m);
        const SendTable t = std::move(b).finish();
        const TimePrediction p = predict_time(t, TimeOptions{M});
        REQUIRE(p.transfers.size() == 4);
        CHECK(near(p.transfers[1].start, d + a));
        return p.transfers[3].start;
    };
    CHECK(near(last_start("replicate=no"), 3 * (d + a)));
    CHECK(near(last_start("replicate=yes"), d + a));
    // a switch that multicasts shares a copy among the departures of one step only: no buffer keeps it
    CHECK(near(last_start("multicast=routers"), 3 * (d + a)));
}

TEST_CASE("timing: a router that only forwards sends a sum on from the copy it is matched with, not after every copy") {
    // 0, 1, 2 on router r, and a channel 0 -> 1. Allreduce of one chunk, alpha a = 1 us, a chunk d = 2 us.
    // 1 adds a(0) (step 1) and sends a({0,1}) into r twice (steps 2 and 3, one after the other on its
    // channel: arrivals at 2d + 2a and 3d + 2a). r sends it on to 2 in step 4 with the first copy (first in,
    // first out, as the step semantics matches them): at 2d + 2a. Waiting for every value of the chunk that
    // reached r before would start it at 3d + 2a. (The second copy stays in r: queues=unbounded.)
    const std::string dir = fmt::format("/tmp/collsched_sums.{}", ::getpid());
    std::filesystem::create_directories(dir);
    const std::string graph = dir + "/g.json";
    std::ofstream(graph) << R"({"processors": 3, "routers": 1, "alpha": "1 us", "bandwidth": "1 GB/s",
 "edges": [[0, "r1.0", 1], [1, "r1.0", 1], [2, "r1.0", 1], [0, 1, 1]]})";
    auto topo = Topology::parse("graph:" + graph);
    std::filesystem::remove_all(dir);
    const double a = 1e-6, d = 2e-6;
    TableBuilder b(topo, Model{}, Collective::parse("allreduce", *topo));
    const Messages ms = b.messages();
    const Node r = *topo->find_node("r1.0");
    const MessageId one = partial_message(b.composites(), ms, SourceSet(std::vector<std::uint32_t>{0}), 0);
    const MessageId two = partial_message(b.composites(), ms, SourceSet(std::vector<std::uint32_t>{0, 1}), 0);
    b.hop(1, *topo->find_channel(Node{0}, Node{1}), one);
    b.hop(2, *topo->find_channel(Node{1}, r), two);
    b.hop(3, *topo->find_channel(Node{1}, r), two);
    b.hop(4, *topo->find_channel(r, Node{2}), two);
    const SendTable t = std::move(b).finish();
    const TimePrediction p = predict_time(t, TimeOptions{2e3});
    REQUIRE(p.transfers.size() == 4);
    CHECK(near(p.transfers[2].arrive, 3 * d + 2 * a));
    CHECK(near(p.transfers[3].start, 2 * d + 2 * a));
}

TEST_CASE("timing: a router that only forwards cuts through: a message crosses it in both latencies, its bytes once and a packet") {
    // docs/time.md, "Routers and copies". 0 -> r -> 1 (and 0 -> r -> s -> 1), b = 1 MB, alpha a = 1 us, B = 1 GB/s,
    // a packet q = 4096 bytes: a departure starts once the copy's first packet is in (a + q/B after the copy started)
    // and its last byte leaves no earlier than the copy's arrived. Equal links: 2a + (b + q)/B, not 2a + 2b/B; a slower
    // link out: 2a + q/B + b/B_out; a slower link in: 2a + b/B_in. A message of at most a packet, replicate=yes (the
    // router keeps what it receives), or a router that multicasts: whole, 2a + 2b/B.
    const std::string dir = fmt::format("/tmp/collsched_cut.{}", ::getpid());
    std::filesystem::create_directories(dir);
    const double a = 1e-6, B = 1e9, q = router_packet_bytes;
    auto run = [&](const std::string& in, const std::string& out, double b, std::string_view model, bool two = false,
                   std::optional<ExecutorCosts> executor = std::nullopt) {
        const std::string graph = dir + "/g.json";
        std::ofstream(graph) << fmt::format(R"({{"processors": 2, "routers": 2, "alpha": "1 us",
 "link_types": {{"B": {{"bandwidth": "1 GB/s"}}, "half": {{"bandwidth": "0.5 GB/s"}}}},
 "edges": [[0, "r1.0", 1, "{}"], ["r1.0", 1, 1, "{}"], ["r1.0", "r1.1", 1, "B"], ["r1.1", 1, 1, "B"]]}})", in, out);
        auto topo = Topology::parse("graph:" + graph);
        TableBuilder tb(topo, apply_model_options(Model{}, model), Collective::parse("allgather", *topo));
        const MessageId m = *tb.messages().parse("b(0)");
        const Node r = *topo->find_node("r1.0"), s = *topo->find_node("r1.1");
        tb.hop(1, *topo->find_channel(Node{0}, r), m);
        if (two) tb.hop(2, *topo->find_channel(r, s), m), tb.hop(3, *topo->find_channel(s, Node{1}), m);
        else tb.hop(2, *topo->find_channel(r, Node{1}), m);
        const SendTable t = std::move(tb).finish();
        TimeOptions opt;
        opt.size = 2 * b;  // allgather: a datum is M / 2
        opt.executor = executor;
        return predict_time(t, opt).asynchronous;
    };
    const double b = 1e6;
    CHECK(near(run("B", "B", b, ""), 2 * a + (b + q) / B));
    CHECK(near(run("B", "B", b, "", true), 3 * a + (b + 2 * q) / B));
    CHECK(near(run("B", "half", b, ""), 2 * a + q / B + 2 * b / B));
    CHECK(near(run("half", "B", b, ""), 2 * a + 2 * b / B));
    CHECK(near(run("B", "B", 1000, ""), 2 * a + 2 * 1000 / B));
    CHECK(near(run("B", "B", b, "replicate=yes"), 2 * a + 2 * b / B));
    CHECK(near(run("B", "B", b, "multicast=routers"), 2 * a + 2 * b / B));
    // an executor's message m (on MSCCL++'s connection of the channel) is paid once, on the leg out of the GPU (a put through a
    // switch is one op of its sender; the switch adds none): the departure starts once the copy's message and first packet are
    // in and ends no earlier than the copy arrived, 2a + m + (b + q)/B (it was 2 (a + m) + (b + q)/B, a message a leg)
    ExecutorCosts e;
    e.kind = ExecutorKind::mscclpp;
    const double m = 5e-6;
    e.message = {m, m, m};
    CHECK(near(run("B", "B", b, "", false, e), 2 * a + m + (b + q) / B));
    CHECK(near(run("half", "B", b, "", false, e), 2 * a + m + 2 * b / B));
    std::filesystem::remove_all(dir);
}
