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

TEST_CASE("encoder limits: the dissemination encoder's symmetry invariance (torus:8x8 alltoall, 64 automorphisms)") {
    // Once 1.35 billion clauses (52 s and 4.25 GB in pareto --timeout 5): the invariance loop
    // polled nothing and looked up every channel image per message.
    SynthInstance in = inst("torus:8x8", "alltoall");
    SynthOptions so;
    so.invariant = automorphisms(in);
    REQUIRE(!so.invariant.empty());
    const std::uint64_t before = resident_memory();
    Watched w = watch([&](const SynthOptions& o) { return solve_rounds(in, 8, 1, 64, o); }, deadline, headroom, so);
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
