// `collsched bench` (bench/bench.hpp): the JSON shape and the verdicts at a tiny size, in memory
// and streamed, and the streamed pipeline against the whole-table one on library schedules. No
// timing is asserted: benchmarks report figures, tests check results.
#include <doctest/doctest.h>

#include <random>
#include <nlohmann/json.hpp>

#include "bench/bench.hpp"
#include "compiler/table/builder.hpp"
#include "compiler/lower/lower.hpp"
#include "compiler/lower/stream.hpp"
#include "runtime/simulator.hpp"
#include "tests/tools/cli_run.hpp"

using namespace collsched;
using test::run;

namespace {

void check_shape(const nlohmann::json& j, const char* mode, std::size_t stages) {
    REQUIRE(j.is_object());
    CHECK(j["machine"].is_string());
    REQUIRE(j["cases"].is_array());
    REQUIRE(j["cases"].size() == 3);
    std::vector<std::string> names;
    for (const auto& c : j["cases"]) {
        names.push_back(c["schedule"]);
        CHECK(c["n"] == 16);
        CHECK(c["mode"] == mode);
        CHECK(c["ok"] == true);
        CHECK(c["transfers"].get<std::uint64_t>() > 0);
        REQUIRE(c["stages"].size() == stages);
        for (const auto& s : c["stages"]) {
            CHECK(s["seconds"].is_number());
            CHECK(s["cpu_seconds"].is_number());
            CHECK(s["transfers_per_second"].is_number());
            CHECK(s["peak_rss_bytes"].get<std::uint64_t>() > 0);
        }
    }
    CHECK(names == std::vector<std::string>{"ebft_alltoall", "torus_allgather", "ring_allgather"});
}

/// The -D overrides of a bench case, parsed.
std::vector<Define> defines_of(const bench::Case& c) {
    std::vector<Define> defines;
    Diagnostics diags;
    REQUIRE(parse_defines(c.defines, defines, diags));
    return defines;
}

}  // namespace

TEST_CASE("bench --quick --json: three schedules, compile/verify/simulate, verdicts hold") {
    auto r = run("bench --quick --json");
    REQUIRE(r.code == 0);
    auto j = nlohmann::json::parse(r.out);
    check_shape(j, "memory", 3);
    const auto& ebft = j["cases"][0];
    CHECK(ebft["topology"] == "ebft:16");
    CHECK(ebft["transfers"] == 1568);  // 16 * (1*2 + 2*4 + 4*6 + 8*8)
    CHECK(ebft["steps"] == 22);        // n + 2 log n - 2
    CHECK(ebft["stages"][0]["stage"] == "compile");
    CHECK(ebft["stages"][0]["verdict"] == "ok");
    CHECK(ebft["stages"][1]["stage"] == "verify");
    CHECK(ebft["stages"][1]["verdict"] == "holds");
    CHECK(ebft["stages"][2]["stage"] == "simulate");
    CHECK(ebft["stages"][2]["verdict"] == "completed");
    CHECK(j["cases"][1]["topology"] == "torus:4x4");
    CHECK(j["cases"][1]["transfers"] == 240);
    CHECK(j["cases"][2]["steps"] == 15);
    CHECK(r.err.find("bench: ebft_alltoall n=16") != std::string::npos);  // progress on stderr
}

TEST_CASE("bench --stream: the streamed pipeline reaches the same verdicts") {
    auto r = run("bench --quick --json --stream");
    REQUIRE(r.code == 0);
    auto j = nlohmann::json::parse(r.out);
    check_shape(j, "stream", 1);
    CHECK(j["cases"][0]["stages"][0]["verdict"] == "completed");
    CHECK(j["cases"][0]["transfers"] == 1568);
    CHECK(j["cases"][0]["steps"] == 22);
}

TEST_CASE("bench: bad sizes and schedules are usage errors") {
    auto r = run("bench --sizes 12 --schedules ebft_alltoall");
    CHECK(r.code == 2);
    CHECK(r.err.find("power of two") != std::string::npos);
    CHECK(r.out.empty());
    r = run("bench --schedules nope --quick");
    CHECK(r.code == 2);
    CHECK(r.err.find("unknown schedule 'nope'") != std::string::npos);
    r = run("bench --help");
    CHECK(r.code == 0);
    CHECK(r.out.find("--stream-above") != std::string::npos);
}

TEST_CASE("bench: expected transfer counts match the compiled tables") {
    bench::Options opt;
    opt.sizes = {8, 32};
    for (const bench::Case& c : bench::cases(opt)) {
        CAPTURE(c.topology);
        Diagnostics diags;
        CompileOptions copt;
        copt.defines = defines_of(c);
        auto t = compile_text(c.text, c.file, copt, diags);
        REQUIRE(t);
        CHECK(t->topology->spec() == c.topology);
        CHECK(t->transfers.size() == bench::expected_transfers(c));
    }
}

namespace {

void compare(const SimReport& whole, const std::optional<SimReport>& streamed) {
    CHECK(to_string(streamed->status) == to_string(whole.status));
    CHECK(streamed->steps == whole.steps);
    CHECK(streamed->simulated_steps == whole.simulated_steps);
    CHECK(streamed->transfers == whole.transfers);
    CHECK(streamed->transfers_replayed == whole.transfers_replayed);
    CHECK(streamed->deliveries_done == whole.deliveries_done);
    CHECK(streamed->deliveries_required == whole.deliveries_required);
    CHECK(streamed->missing == whole.missing);
    CHECK(streamed->channel_transfers == whole.channel_transfers);
    CHECK(streamed->router_high_water == whole.router_high_water);
    CHECK(streamed->holes == whole.holes);
    CHECK(streamed->busiest == whole.busiest);
    CHECK(streamed->violation.has_value() == whole.violation.has_value());
    if (streamed->violation && whole.violation) {
        CHECK(to_string(streamed->violation->rule) == to_string(whole.violation->rule));
        CHECK(streamed->violation->step == whole.violation->step);
        CHECK(streamed->violation->node == whole.violation->node);
        CHECK(streamed->violation->channel == whole.violation->channel);
        // The sentence differs only where the whole-table run looks ahead or back in the table.
        if (streamed->violation->rule == SimRule::capacity || streamed->violation->rule == SimRule::ports ||
            streamed->violation->rule == SimRule::completeness)
            CHECK(streamed->violation->message == whole.violation->message);
    }
}

/// Compiles `text` both ways and compares the simulator's reports field by field.
SimReport same_report(const std::string& text, const std::vector<Define>& defines) {
    CompileOptions opt;
    opt.defines = defines;
    Diagnostics d1, d2;
    auto table = compile_text(text, "t.sched", opt, d1);
    INFO(d1.render());
    REQUIRE(table);
    SimReport whole = simulate(*table, {.whole_table = true});
    auto streamed = stream_simulate_text(text, "t.sched", opt, d2);
    REQUIRE(streamed);
    compare(whole, streamed);
    return whole;
}

/// Hands a sorted table to a StreamSimulator step by step.
SimReport replay_streamed(const SendTable& t) {
    StreamSimulator sim;
    SendTable header = t;
    header.transfers.clear();
    sim.begin(header);
    for (std::size_t b = 0; b < t.transfers.size();) {
        std::size_t e = b;
        while (e < t.transfers.size() && t.transfers[e].step == t.transfers[b].step) ++e;
        sim.step(t.transfers[b].step, std::span<const Transfer>(t.transfers.data() + b, e - b));
        b = e;
    }
    sim.finish(header);
    return sim.report();
}

}  // namespace

TEST_CASE("StreamSimulator: the same report as simulate() on holding and broken schedules") {
    bench::Options opt;
    opt.sizes = {8, 16};
    for (const bench::Case& c : bench::cases(opt)) {
        CAPTURE(c.topology);
        CHECK(same_report(c.text, defines_of(c)).status == SimStatus::completed);
    }
    // Capacity, ports, queues=none, causality and an incomplete collective, each found by both.
    const char* broken[] = {
        // two messages on a capacity-1 channel in one step
        "topology ring(4)\nmodel hop(queues = none, ports = multi)\ncollective alltoall\n"
        "step 1 { send 0 -> 1\n send 0 -> 2 }\n",
        // single port: two sends from 0 in step 1
        "topology ring(4)\nmodel hop(ports = single)\ncollective alltoall\nstep 1 { send 0 -> 1\n send 0 -> 3 }\n",
        // a router copy that waits a step under queues=none (hop statements)
        "topology ebft(4)\nmodel hop(queues = none)\ncollective custom\nrequire m(0, 1) at 1\n"
        "step 1 { hop 0 -> r(1, 0) msg m(0, 1) }\nstep 3 { hop r(1, 0) -> 1 msg m(0, 1) }\n",
        // causality: 1 forwards what it does not hold yet
        "topology ring(4)\nmodel hop\ncollective allgather\nstep 1 { hop 1 -> 2 msg b(0) }\n",
        // incomplete: only one step of a ring allgather
        "topology ring(4)\nmodel hop(ports = single)\ncollective allgather\nstep 1 { for i in 0 .. 3 { send i -> (i + 1) % 4 } }\n",
    };
    for (const char* text : broken) {
        CAPTURE(text);
        CHECK(same_report(text, {}).status != SimStatus::completed);
    }
}

TEST_CASE("StreamSimulator: the same report as simulate() on 400 seeded random tables") {
    const std::vector<std::string> topologies = {"ring:5", "ebft:8", "cbft:4", "torus:3x3", "hypercube:3", "bft:8:1,2,2"};
    int completed = 0, halted = 0, fast_path = 0;
    for (std::uint64_t seed = 1; seed <= 400; ++seed) {
        CAPTURE(seed);
        std::mt19937_64 g(seed * 0x9E3779B97F4A7C15ull);
        auto in = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(g); };
        auto topo = Topology::parse(topologies[static_cast<std::size_t>(in(0, static_cast<int>(topologies.size()) - 1))]);
        Model model;
        model.ports = static_cast<Ports>(in(0, 2));
        model.queues = static_cast<QueueKind>(in(0, 2));
        model.queue_bound = static_cast<std::uint32_t>(in(0, 2));
        model.replicate = false;  // replicate=yes does not stream
        const std::uint32_t P = topo->processors();
        Collective coll{in(0, 1) ? CollectiveKind::alltoall : CollectiveKind::allgather, Node{0}, {}};
        TableBuilder b(topo, model, coll);
        Messages ms = b.messages();
        // A quarter of the tables: every goal, one send at a time (they complete); the others:
        // messages sent along their routes, cut-through from random steps, with a few stray hops.
        if (in(0, 3) == 0) {
            Step start = 1;
            for (std::uint32_t s = 0; s < P; ++s)
                for (std::uint32_t d = 0; d < P; ++d)
                    if (s != d)
                        start = b.send_cut_through(start, Node{s}, Node{d},
                                                   coll.kind == CollectiveKind::alltoall ? ms.personal(s, d) : ms.broadcast(s)) + 2;
        }
        const int sends = in(0, 1) ? in(1, static_cast<int>(P * (P - 1))) : 0;
        for (int k = 0; k < sends; ++k) {
            auto s = static_cast<std::uint32_t>(in(0, static_cast<int>(P) - 1));
            auto d = static_cast<std::uint32_t>(in(0, static_cast<int>(P) - 2));
            if (d >= s) ++d;
            MessageId m = coll.kind == CollectiveKind::alltoall ? ms.personal(s, d) : ms.broadcast(s);
            b.send_cut_through(static_cast<Step>(in(1, 6)), Node{s}, Node{d}, m);
        }
        for (int k = in(0, 2); k > 0; --k) {
            auto c = ChannelId{static_cast<std::uint32_t>(in(0, static_cast<int>(topo->channels().size()) - 1))};
            auto m = MessageId{static_cast<std::uint32_t>(in(0, static_cast<int>(ms.size()) - 1))};
            b.hop(static_cast<Step>(in(1, 8)), c, m);
        }
        SendTable t = std::move(b).finish();
        CAPTURE(to_string(t.model));
        SimReport whole = simulate(t, {.whole_table = true});
        compare(whole, replay_streamed(t));
        compare(whole, simulate(t));  // the default: the streamed replay first where it applies
        fast_path += 3 * t.messages().size() <= t.transfers.size() && whole.status == SimStatus::completed;
        ++(whole.status == SimStatus::completed ? completed : halted);
    }
    CHECK(completed > 0);
    CHECK(halted > 0);
    CHECK(fast_path > 0);
}

TEST_CASE("compile_stream: steps in increasing order, sorted, going back in time is NotStreamable") {
    struct Collect : StepConsumer {
        std::vector<Transfer> all;
        int begun = 0, finished = 0;
        void begin(const SendTable&) override { ++begun; }
        void step(Step s, std::span<const Transfer> xs) override {
            for (const Transfer& t : xs) {
                CHECK(t.step == s);
                all.push_back(t);
            }
        }
        void rounds(Step, std::uint32_t) override {}
        void finish(const SendTable&) override { ++finished; }
    };
    bench::Options opt;
    opt.sizes = {16};
    opt.schedules = {"ebft_alltoall"};
    const bench::Case c = bench::cases(opt).front();
    CompileOptions copt;
    copt.defines = {{"n", 16}};
    Diagnostics diags;
    auto table = compile_text(c.text, c.file, copt, diags);
    REQUIRE(table);
    Collect col;
    REQUIRE(compile_stream(c.text, c.file, copt, diags, col));
    CHECK(col.begun == 1);
    CHECK(col.finished == 1);
    CHECK(col.all == table->transfers);  // the same table, in the same order

    Collect back;
    const char* backwards = "topology ring(4)\nmodel hop\ncollective alltoall\nstep 3 { send 0 -> 1 }\nstep 1 { send 1 -> 2 }\n";
    CHECK_THROWS_AS(compile_stream(backwards, "b.sched", {}, diags, back), NotStreamable);
    const char* fifo = "topology ring(4)\nmodel hop(policy = fifo)\ncollective alltoall\nstep 1 { send 0 -> 1 }\n";
    CHECK_THROWS_AS(compile_stream(fifo, "f.sched", {}, diags, back), NotStreamable);
}

TEST_CASE("simulate --stream: the same report as a whole-table simulate, refused where it cannot stream") {
    auto whole = run("simulate schedules/bft/ebft_alltoall.sched -D n=32 --json");
    auto streamed = run("simulate schedules/bft/ebft_alltoall.sched -D n=32 --json --stream");
    REQUIRE(whole.code == 0);
    CHECK(streamed.code == 0);
    CHECK(streamed.out == whole.out);
    auto r = run("simulate tests/golden/ok/cbft_broadcast_hops.sched --stream");
    CHECK(r.code == 2);
    CHECK(r.out.empty());
    CHECK(r.err.find("cannot stream: with replicate=yes") != std::string::npos);
    r = run("simulate tests/golden/ok/cbft_broadcast_hops.sched -D nope=1 --stream");
    CHECK(r.code == 2);
    CHECK(r.err.find("E00") != std::string::npos);
}

TEST_CASE("simulate --stream: steps of several rounds stream, with the whole-table report and bandwidth cost") {
    // the chunked bidirectional ring (C = 4: steps of 2 rounds) and the NVSwitch allgather (C = 3:
    // steps of 3 rounds, link groups counted per round)
    for (const char* args : {"schedules/chunks/ring_allgather.sched -D n=8 -D C=4", "schedules/chunks/nvswitch_allgather.sched -D C=3"}) {
        CAPTURE(args);
        auto whole = run(std::string("simulate ") + args + " --json");
        auto streamed = run(std::string("simulate ") + args + " --json --stream");
        REQUIRE(whole.code == 0);
        CHECK(streamed.code == 0);
        CHECK(streamed.out == whole.out);
        auto text = run(std::string("simulate ") + args + " --stream");
        CHECK(text.out == run(std::string("simulate ") + args).out);
    }
    CHECK(run("simulate schedules/chunks/nvswitch_allgather.sched -D C=3 --stream").out.find(
              "bandwidth: S = 7 steps, R = 21 rounds, C = 3 chunks, R/C = 7 rounds per chunk") != std::string::npos);
    // the rounds of a step are read when the step is checked: one transfer too many in a step of
    // 2 rounds is a capacity fault streamed as whole
    const char* over = "topology ring(4)\ncollective allgather chunks 3\nstep 1 rounds 2 { for c in 0 .. 2 { send 0 -> 1 msg b(0, c) } }\n";
    test::Scratch dir("stream_rounds");
    auto a = run("simulate " + dir.file("over.sched", over));
    auto b = run("simulate " + dir.file("over.sched") + " --stream");
    CHECK(a.code == 1);
    CHECK(b.code == 1);
    CHECK(a.out.find("step 1: channel 0->1 carries 3 messages (b(0,0), b(0,1), b(0,2)) but its capacity is 1") != std::string::npos);
    CHECK(b.out.find("step 1: channel 0->1 carries 3 messages") != std::string::npos);
    // rounds stated for a step already handed over cannot stream
    const char* late = "topology ring(4)\ncollective allgather chunks 2\nstep 1 { send 0 -> 1 msg b(0, 0) }\n"
                       "step 2 { send 1 -> 2 msg b(0, 0) }\nstep 1 rounds 2 { }\n";
    auto c = run("simulate " + dir.file("late.sched", late) + " --stream");
    CHECK(c.code == 2);
    CHECK(c.err.find("cannot stream: step 1 rounds 2 comes after step 1 was handed over") != std::string::npos);
}
