// The encoders hold the run's limits (docs/synthesis.md, "Limits"): each encoder family, on an
// instance whose encoding takes far longer than its deadline (or than its memory budget), stops
// within 1 s of a 0.3 s deadline and below the budget. A watchdog thread samples the resident
// size while the call runs and ends the process if the call runs 20 s past its deadline, so a
// loop that polls nothing fails the test instead of hanging it.
#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <string>
#include <thread>

#include <fmt/format.h>

#include "support/budget.hpp"
#include "tests/verifier/synth_fixtures.hpp"
#include "verifier/synth/problem/instance.hpp"
#include "verifier/synth/problem/pareto.hpp"
#include "verifier/synth/symmetry/automorphisms.hpp"

using namespace collsched;
using collsched::test::inst;

namespace {

struct Watched {
    double seconds = 0;            ///< from the start of the call to its return
    std::uint64_t peak = 0;        ///< the largest resident size sampled during the call
    SynthResult result;
};

/// Runs `call` (which is handed the options with `deadline` seconds from now and a memory budget
/// of what is resident now plus `headroom`) while a second thread samples the resident size every
/// 2 ms; past deadline + 20 s that thread reports and ends the process.
Watched watch(const std::function<SynthResult(const SynthOptions&)>& call, double deadline, std::uint64_t headroom,
              SynthOptions so = {}) {
    so.deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(deadline));
    so.memory = MemoryBudget(resident_memory() + headroom);
    std::atomic<bool> done{false};
    std::atomic<std::uint64_t> peak{resident_memory()};
    const auto t0 = Clock::now();
    std::thread dog([&] {
        while (!done.load()) {
            const std::uint64_t r = resident_memory();
            if (r > peak.load()) peak.store(r);
            if (seconds_since(t0) > deadline + 20) {
                std::fprintf(stderr, "test_encoder_limits: an encoder ran 20 s past its deadline of %.1f s\n", deadline);
                std::_Exit(1);
            }
            std::this_thread::sleep_for(std::chrono::milliseconds(2));
        }
    });
    Watched w;
    w.result = call(so);
    w.seconds = seconds_since(t0);
    done.store(true);
    dog.join();
    w.peak = peak.load();
    return w;
}

/// The graph file of SCCL's hub_and_spoke(P) (docs/topologies.md, dgx2.json) in `scratch`:
/// every pair of P GPUs linked, per GPU a group of its outgoing and one of its incoming
/// channels, capacity 1.
std::string hub_and_spoke(const test::Scratch& scratch, std::uint32_t P) {
    std::string edges, groups;
    for (std::uint32_t i = 0; i < P; ++i) {
        for (std::uint32_t j = i + 1; j < P; ++j) edges += fmt::format("{}[{}, {}]", edges.empty() ? "" : ", ", i, j);
        groups += fmt::format("{}{{\"name\": \"gpu{}.out\", \"cap\": 1, \"out_of\": {}}}, {{\"name\": \"gpu{}.in\", \"cap\": 1, \"into\": {}}}",
                              groups.empty() ? "" : ", ", i, i, i, i);
    }
    return "graph:" + scratch.file("hub_and_spoke.json", fmt::format("{{\"processors\": {}, \"edges\": [{}], \"groups\": [{}]}}", P, edges, groups));
}

constexpr double deadline = 0.3;
/// The default budget (MemoryBudget::default_limit) above what is resident: the encodings fit
/// their estimates, so the encoders are reached.
constexpr std::uint64_t headroom = MemoryBudget::default_limit;

/// Stopped by the time limit in the encoder or while loading, within 1 s of the deadline.
void check_stopped(const Watched& w, const std::string& what) {
    INFO(what, ": ", w.result.reason, ", ", w.seconds, " s, peak ", format_bytes(w.peak));
    CHECK(w.result.answer == Answer::unknown);
    CHECK(w.result.reason.starts_with("time limit"));
    CHECK(w.seconds < deadline + 1.0);
}

}  // namespace

TEST_CASE("encoder limits: the dissemination encoder's symmetry invariance (torus:5x5 alltoall, S = 5, R = 25)") {
    // The invariance loop polled nothing and looked up every channel image per message: 5.1 s
    // here; on torus:8x8 (64 automorphisms, 1.35 billion clauses) pareto --timeout 5 took 52 s
    // and 4.25 GB.
    SynthInstance in = inst("torus:5x5", "alltoall");
    SynthOptions so;
    so.invariant = automorphisms(in);
    REQUIRE(!so.invariant.empty());
    const std::uint64_t before = resident_memory();
    Watched w = watch([&](const SynthOptions& o) { return solve_rounds(in, 5, 1, 25, o); }, deadline, headroom, so);
    check_stopped(w, "invariance");
    CHECK(w.peak < before + headroom);
}

TEST_CASE("encoder limits: the dissemination encoder's link groups and their cardinalities (hub_and_spoke(64) alltoall)") {
    // pareto --collective alltoall --timeout 5 on this machine took 14 to 15.6 s: one group's
    // cardinality constraint is 254,000 literals under a bound of 63.
    test::Scratch scratch("encoder_limits");
    SynthInstance in = inst(hub_and_spoke(scratch, 64), "alltoall");
    const std::uint64_t before = resident_memory();
    Watched w = watch([&](const SynthOptions& o) { return solve_rounds(in, 1, 1, 63, o); }, deadline, headroom);
    check_stopped(w, "link groups");
    CHECK(w.peak < before + headroom);
}

/// synthesize(spec, coll, model, H) under the watch; `fixed`: on the topology's routes.
Watched synthesize_watched(const char* spec, const char* coll, const char* model, Step H, bool fixed = false) {
    SynthInstance in = inst(spec, coll, model);
    if (fixed) in.routes = RouteSpace::fixed;
    return watch([&](const SynthOptions& o) { return synthesize(in, H, o); }, deadline, headroom);
}

// Each of these takes seconds to encode and load with no limit (on the 2-core development
// machine: personal 10.1 s, free_route 3.8 s, end_to_end 9.9 s, combining 3.7 s); their loops
// polled before, and these cases keep them polling.
TEST_CASE("encoder limits: the personal encoder (ebft:64 alltoall on its routes, T = 24)") {
    const std::uint64_t before = resident_memory();
    Watched w = synthesize_watched("ebft:64", "alltoall", "queues=none", 24, true);
    check_stopped(w, "personal");
    CHECK(w.peak < before + headroom);
}

TEST_CASE("encoder limits: the free-route encoder (ebft:32 alltoall, T = 40)") {
    const std::uint64_t before = resident_memory();
    Watched w = synthesize_watched("ebft:32", "alltoall", "queues=none", 40);
    check_stopped(w, "free_route");
    CHECK(w.peak < before + headroom);
}

TEST_CASE("encoder limits: the end-to-end encoder (ideal:128 allgather, T = 14)") {
    const std::uint64_t before = resident_memory();
    Watched w = synthesize_watched("ideal:128", "allgather", "queues=none", 14);
    check_stopped(w, "end_to_end");
    CHECK(w.peak < before + headroom);
}

TEST_CASE("encoder limits: the combining encoder (complete:48 allreduce, T = 3)") {
    const std::uint64_t before = resident_memory();
    Watched w = synthesize_watched("complete:48", "allreduce", "", 3);
    check_stopped(w, "combining");
    CHECK(w.peak < before + headroom);
}
