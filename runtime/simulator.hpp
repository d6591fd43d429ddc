/** \file
 * The step-accurate network simulator (DESIGN.md section 9): replays a send table step by step
 * on its topology, moves the packets, enforces the model of section 3 (capacity, ports, queues,
 * replication, causality) and halts at the first broken rule with a message that names the
 * rule, the step, the channel or node and the messages. A run that breaks no rule is then checked
 * for completeness against the collective and the table's requirements. It is the second,
 * independent witness next to the verifier's direct checker: it shares only the core types of
 * `compiler/` with it, so the two must agree on every table.
 *
 * Besides the verdict it reports what a network engineer looks at: per-channel utilization,
 * queue high-water marks per router and per tree level, idle receive steps per processor (the
 * "holes" of the phase algorithms) and, on request, a per-step trace.
 *
 * Conventions fixed here:
 *  - statistics cover the steps replayed completely: 1..T for a run that completes or is
 *    incomplete, 1..s-1 when the run halts in step s;
 *  - the queue of a router at boundary s (between steps s and s+1) counts the copies that arrived
 *    at step <= s and leave at step >= s+2 (or never); boundaries 1..T-1 are checked against a
 *    bound B and make the high-water marks. With replicate=yes a message is resident from its
 *    first arrival to its last send;
 *  - a bounded-queue violation is reported at the boundary's step s ("after step s"); a
 *    queues=none violation at the step s+1 in which the copy fails to leave, which is T+1 for a
 *    copy that enters a router in the last step T (replicate=no: it never leaves);
 *  - within one step the rules are checked in the order capacity, ports, causality/replication,
 *    queues; the first violation of the first failing rule is the one reported;
 *  - `wormhole` timing: steps are rounds, a message may cross a whole path in one round, queues do
 *    not apply and the cost is the sum over rounds of ts + tc * (largest payload: a bundle's
 *    parts, else 1), T * (ts + tc) without bundles. Routers keep nothing from one round to the next.
 *  - combined values and bundles (docs/semantics.md): for tables with composites or a reduce or
 *    prefix collective, what processors hold is kept per processor (received messages, a
 *    bundle's parts, the source ranges that combine), next to the slot state of the fast path.
 */
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "compiler/table/send_table.hpp"
#include "compiler/lower/stream.hpp"

namespace collsched {

struct SimOptions {
    bool trace = false;  ///< keep one line per step listing its transfers
    /// simulate(): always the whole-table replay. By default a table the streamed replay can take
    /// (hop timing, replicate=no, no composites, dense enough) is replayed step by step first,
    /// which is faster; when that run does not complete, the whole-table replay runs and gives
    /// the report (its counterexamples say more). Tests set this to compare the two.
    bool whole_table = false;
};

enum class SimStatus : std::uint8_t { completed, halted, incomplete };
enum class SimRule : std::uint8_t { capacity, ports, queues, replication, causality, completeness };

std::string_view to_string(SimStatus);
std::string_view to_string(SimRule);

/// The first broken rule: where and what. `message` is the full sentence, starting "step s: ".
struct SimViolation {
    SimRule rule = SimRule::causality;
    Step step = 0;
    std::string message;
    std::optional<Node> node;           ///< the processor or router at fault, if one is
    std::optional<ChannelId> channel;   ///< the channel at fault, if one is
    std::vector<MessageId> messages;    ///< the messages involved
    std::optional<std::uint32_t> group = {};  ///< the link group over its capacity (Topology::groups() index)
};

struct MissingDelivery {
    MessageId message;
    Node at;
    bool operator==(const MissingDelivery&) const = default;
};

struct SimReport {
    SimStatus status = SimStatus::completed;
    std::optional<SimViolation> violation;  ///< set unless completed (rule completeness when incomplete)

    Step steps = 0;            ///< T of the table: the last step with a transfer
    Step simulated_steps = 0;  ///< steps replayed completely: T, or s-1 when halted in step s
    std::uint64_t transfers = 0;           ///< transfers in the table
    std::uint64_t transfers_replayed = 0;  ///< transfers of the steps replayed completely
    bool wormhole = false;
    double cost = 0;  ///< hop: T; wormhole: sum over rounds of ts + tc * largest payload

    std::uint64_t deliveries_done = 0;      ///< goal pairs held at the end of the replayed steps
    std::uint64_t deliveries_required = 0;  ///< collective goals plus distinct extra requirements
    std::vector<MissingDelivery> missing;   ///< the first few missing deliveries, in goal order
    std::uint64_t missing_count = 0;

    std::vector<std::uint64_t> channel_transfers;  ///< per channel id, over the replayed steps
    std::vector<ChannelId> busiest;                ///< the top few channels by utilization

    bool queues_apply = true;                      ///< false under wormhole timing
    std::vector<std::uint32_t> router_high_water;  ///< per router (index: node - processors)
    std::vector<std::uint32_t> level_high_water;   ///< per router level (index 0 is level 1)
    std::uint32_t max_high_water = 0;

    std::vector<std::uint32_t> holes;  ///< per processor: replayed steps in which it received nothing
    std::uint64_t total_holes = 0;

    std::vector<std::string> trace;  ///< with SimOptions::trace: one line per replayed step

    /// transfers on c / (cap * simulated_steps); 0 when nothing was replayed.
    double utilization(const SendTable&, ChannelId c) const;
};

/// Replays `table` (sorted, or sorted here on a copy) and reports. Throws InputError when a
/// transfer names a step below 1, a channel or a message that does not exist.
SimReport simulate(const SendTable& table, const SimOptions& options = {});

/// Replays a table handed over step by step (compiler/lower/stream.hpp) without holding it: the same
/// rule checks, statistics and completeness check as simulate(), with (node, message) state kept
/// only for pairs the steps touch (router pairs with replicate=no only while a copy waits).
/// `hop` timing with replicate=no only (begin() throws NotStreamable otherwise: the residence of
/// replicated messages needs to look ahead in the table); steps of several rounds are told by
/// rounds() before they are handed over. A run that halts names the rule, step, node, channel and messages as
/// simulate() does; its sentence says only what is known by that step (no look-ahead, and the
/// copies waiting in a router are not listed), and a router's replication fault can show as
/// causality once its earlier copies are forgotten. Replay the table with simulate() for the
/// full counterexample.
class StreamSimulator : public StepConsumer {
public:
    explicit StreamSimulator(const SimOptions& options = {});
    ~StreamSimulator() override;
    void begin(const SendTable& header) override;
    void step(Step s, std::span<const Transfer> transfers) override;
    void rounds(Step s, std::uint32_t r) override;
    void finish(const SendTable& header) override;
    /// After finish(): the report; header(): the table without transfers, for the formatters.
    const SimReport& report() const;
    const SendTable& header() const;

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

/// Compiles `text` (a schedule) streaming its steps into a StreamSimulator: the pipeline for
/// tables too large to hold. Nullopt after DSL errors (in `diags`); throws NotStreamable when the
/// schedule cannot stream (compiler/lower/stream.hpp).
std::optional<SimReport> stream_simulate_text(std::string_view text, const std::string& name, const CompileOptions& options,
                                             Diagnostics& diags, const SimOptions& sim = {});

/// A short human-readable report (about a dozen lines), preceded by the trace when there is one.
std::string format_sim_report(const SimReport&, const SendTable&);

/// One JSON object with a stable key order: status, rule, steps, simulated_steps, timing, cost,
/// transfers, deliveries, halt, missing, queue_high_water, holes, busiest, channels[, trace].
std::string sim_report_to_json(const SimReport&, const SendTable&);

}  // namespace collsched
