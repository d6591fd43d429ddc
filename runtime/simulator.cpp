// The simulator's entry points: simulate() (the streamed replay first when it can take the
// table, else the whole-table replay), StreamSimulator and stream_simulate_text. The replay
// itself is sim::Simulator (runtime/sim_replay.hpp), one file per concern.
#include "runtime/simulator.hpp"

#include "runtime/sim_replay.hpp"
#include "support/assert.hpp"
#include "support/error.hpp"
#include "compiler/table/step_runs.hpp"

namespace collsched {

using sim::Simulator;

SimReport simulate(const SendTable& table, const SimOptions& options) {
    COLLSCHED_ASSERT(table.topology != nullptr);
    // The streamed replay (router state by a step-to-step merge, docs/performance.md) over the
    // table's steps, which are in the order StepSorter gives a stream: its completed reports are
    // the whole-table replay's field for field (tests/tools/test_bench.cpp); anything else is
    // replayed again whole, for the full counterexample. Only when the table is dense enough that
    // the streamed processor slots (24 bytes per message of the message space) cost no more
    // than the whole-table slots (about 8 bytes per transfer).
    const std::uint64_t M = table.messages().size();
    if (std::string why = combine_problem(table.model); !why.empty()) throw InputError(why);
    if (!options.whole_table && !options.trace && table.model.timing == Timing::hop && !table.model.replicate &&
        !table.model.combine_routers && !table.model.multicast_routers &&
        !table.has_composites() && !table.collective.combines() && !table.transfers.empty() && 3 * M <= table.transfers.size()) {
        Simulator sim(table, options);
        sim.stream_begin();
        const auto& xs = table.transfers;
        const bool going = for_each_step_run(xs, [&](Step s, std::size_t b, std::size_t e) {
            return sim.stream_step(s, std::span<const Transfer>(xs.data() + b, e - b));
        });
        if (going) {
            SimReport r = sim.stream_finish();
            if (r.status == SimStatus::completed) return r;
        }
    }
    return Simulator(table, options).run();
}

struct StreamSimulator::Impl {
    SimOptions options;
    SendTable header;
    std::optional<Simulator> sim;
    SimReport report;
};

StreamSimulator::StreamSimulator(const SimOptions& options) : impl_(std::make_unique<Impl>()) { impl_->options = options; }
StreamSimulator::~StreamSimulator() = default;

void StreamSimulator::begin(const SendTable& header) {
    COLLSCHED_ASSERT(header.topology != nullptr && !impl_->sim);
    if (header.model.timing == Timing::wormhole) throw NotStreamable("wormhole timing is not streamed");
    if (header.model.replicate)
        throw NotStreamable("with replicate=yes a message occupies a router from its first arrival to its last send, "
                            "which needs the whole table");
    if (header.collective.combines())
        throw NotStreamable("combined values (reduce, prefix) are not streamed");
    if (header.model.combine_routers) throw NotStreamable("in-network reduction (combine=routers) is not streamed");
    impl_->header = header;
    impl_->sim.emplace(impl_->header, impl_->options);
    impl_->sim->stream_begin();
}

void StreamSimulator::step(Step s, std::span<const Transfer> transfers) { impl_->sim->stream_step(s, transfers); }

void StreamSimulator::rounds(Step s, std::uint32_t r) {
    // the replay reads the rounds of a step from the header when it checks the step (capacity,
    // ports and groups times r), so a step's rounds must be known before it is handed over
    COLLSCHED_ASSERT(s >= 1 && r >= 1);
    auto& v = impl_->header.step_rounds;
    if (v.size() < s) v.resize(s, 1);
    v[s - 1] = r;
}

void StreamSimulator::finish(const SendTable& header) {
    if (!impl_->sim) begin(header);  // a table without transfers
    impl_->header.requirements = header.requirements;
    impl_->header.claims = header.claims;
    impl_->header.extra_fields = header.extra_fields;
    impl_->header.step_rounds = header.step_rounds;  // the same rounds, told step by step while streaming
    impl_->report = impl_->sim->stream_finish();
    impl_->sim.reset();
}

const SimReport& StreamSimulator::report() const { return impl_->report; }
const SendTable& StreamSimulator::header() const { return impl_->header; }

std::optional<SimReport> stream_simulate_text(std::string_view text, const std::string& name, const CompileOptions& options,
                                             Diagnostics& diags, const SimOptions& sim) {
    StreamSimulator consumer(sim);
    if (!compile_stream(text, name, options, diags, consumer)) return std::nullopt;
    return consumer.report();
}

}  // namespace collsched
