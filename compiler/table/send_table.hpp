/** \file
 * The send table: every transfer (step, channel, message) of a schedule, with the topology,
 * model and collective it is for. Transfers are 12 bytes each and kept sorted by
 * (step, channel, message), so 10^8 of them take 1.2 GB and every consumer can stream by step.
 */
#pragma once

#include <compare>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "compiler/table/collective.hpp"
#include "compiler/core/ids.hpp"
#include "compiler/core/model.hpp"
#include "compiler/topology/topology.hpp"

namespace collsched {

struct Transfer {
    Step step;
    ChannelId channel;
    MessageId message;
    friend bool operator==(const Transfer&, const Transfer&) = default;
    friend auto operator<=>(const Transfer& a, const Transfer& b) {
        return std::tuple(a.step, idx(a.channel), idx(a.message)) <=> std::tuple(b.step, idx(b.channel), idx(b.message));
    }
};
static_assert(sizeof(Transfer) == 12);

/// A custom goal: `require m(0,3) at 3`.
struct Requirement {
    MessageId message;
    Node at;
    bool operator==(const Requirement&) const = default;
};

/// What a schedule states about itself (docs/dsl.md, "Claims"), kept with its table and checked
/// by `reproduce`: `claim steps = e` / `<= e`, `claim queue = [e1, ...]`, `claim buffer = e`,
/// `bound lower = e`, `cite "..."`, each with its value. A table file writes each as a top-level
/// field named by `key` (the format of collsched.table/1, unchanged): claim, claim_at_most,
/// claim_queue, claim_queue_at_most, claim_buffer, claim_buffer_at_most, lower_bound, cite.
struct Claim {
    enum class Kind : std::uint8_t { steps, queue, buffer, lower_bound, cite, rounds };
    Kind kind = Kind::steps;
    bool at_most = false;  ///< `<=` (claims only)
    std::variant<std::int64_t, std::vector<std::int64_t>, std::string> value;  ///< integer, list per level (queue), or text (cite)
    bool operator==(const Claim&) const = default;

    /// The table field: "claim", "claim_queue_at_most", "lower_bound", ...
    std::string key() const;
    /// The statement as the schedule language writes it: `claim steps <= 40`, `bound lower = 8`, `cite "..."`.
    std::string statement() const;
    /// The claim a table field holds, or nullopt when `key` is no claim's or `json` (the value as
    /// JSON text) does not have the claim's type (such a field stays an extra field).
    static std::optional<Claim> from_field(std::string_view key, std::string_view json);
    /// The kind and relation a table field's name stands for (no value), or nullopt.
    static std::optional<Claim> of_key(std::string_view key);
    /// The value as JSON text, as the field is written.
    std::string json() const;
};

/// SendTable::transfer_origins of a transfer without a recorded origin.
inline constexpr std::uint32_t no_origin = 0xffffffffu;
/// SendTable::transfer_ops of a transfer that is an op of its own.
inline constexpr std::uint32_t own_op = 0xffffffffu;

/// The most rounds one step may last, in every input format (DSL E055, tables, Chakra traces).
inline constexpr std::uint32_t max_step_rounds = 1u << 20;

struct SendTable {
    std::shared_ptr<const Topology> topology;
    Model model;
    Collective collective;
    std::vector<Requirement> requirements;
    std::vector<Transfer> transfers;  ///< sorted by (step, channel, message)

    /// What the schedule claims (in the order written; a table file's in key order).
    std::vector<Claim> claims;

    /// Fields of a table file that collsched does not interpret, kept and written back:
    /// top-level (name, JSON text) and per transfer (index into transfers, `"k": v, ...` text).
    std::vector<std::pair<std::string, std::string>> extra_fields;
    /// The claims and the extra fields as (name, JSON text), in the order a table file writes
    /// them: a compiled table's claims in the order written; a read table's fields (claims and
    /// extra fields alike) in key order, as they were read.
    std::vector<std::pair<std::string, std::string>> top_fields() const;
    /// Adds a top-level field read from a file: a claim when it is one, else an extra field.
    void add_field(std::string key, std::string json);
    std::vector<std::pair<std::uint64_t, std::string>> transfer_extras;

    /// Where each transfer came from, recorded on request (CompileOptions::record_locations) or
    /// read from the transfers' "at" fields of a table file: transfer i was made by the `send` or
    /// `hop` statement at origins[transfer_origins[i]] ("file:line:col"; no_origin for none).
    /// Empty otherwise. 4 bytes per transfer; sort() keeps it attached; the JSON writer writes
    /// it back as "at".
    std::vector<std::uint32_t> transfer_origins;
    std::vector<std::string> origins;
    /// The executor op each transfer is part of, for a table read back from a plan (mscclpp::plan_table): the
    /// transfers of one op over one channel in one step (a put of several chunks) hold its connection once, pay one
    /// message and arrive together (runtime/timing.hpp, docs/time.md "Protocols"); own_op for a transfer of its own.
    /// Empty otherwise. Only the time model reads it; sort() keeps it attached; files do not carry it.
    std::vector<std::uint32_t> transfer_ops;

    /// The composite messages the transfers and requirements use (null when there are none):
    /// combined values a(i..j) and bundles, numbered after the base range (docs/semantics.md).
    std::shared_ptr<Composites> composites;

    /// The rounds of steps 1, 2, ...: a step of r rounds multiplies every channel capacity, port
    /// limit and group limit by r (docs/semantics.md, "Rounds"). Steps past the end have 1 round;
    /// empty (the default) means every step has 1. normalize_rounds() trims it.
    std::vector<std::uint32_t> step_rounds;

    Messages messages() const { return Messages(topology->processors(), composites.get(), collective.chunks); }
    bool has_composites() const { return composites && !composites->empty(); }
    /// The registry, created on first use (for readers and the compiler, which intern names).
    /// Set the collective (its chunks) first: composites are numbered after the chunked base range.
    Composites& composite_registry() {
        if (!composites) composites = std::make_shared<Composites>(Messages(topology->processors(), nullptr, collective.chunks).base_size());
        return *composites;
    }
    /// The rounds of step s (1 unless step_rounds says otherwise).
    std::uint32_t rounds(Step s) const { return s >= 1 && s <= step_rounds.size() ? step_rounds[s - 1] : 1; }
    /// R: the rounds of steps 1..T.
    std::uint64_t total_rounds() const { return total_rounds(steps()); }
    /// The rounds of steps 1..T for a given T (a streamed table knows T only from its replay).
    std::uint64_t total_rounds(Step T) const;
    /// Whether the table needs collsched.table/2: chunks or a step of more than one round.
    bool uses_bandwidth_model() const { return collective.chunks > 1 || !step_rounds.empty(); }
    /// Drops rounds past the last step and trailing 1s, so equal tables compare equal.
    void normalize_rounds();
    /// Numbers the composites canonically and drops those no transfer or requirement uses, so
    /// equal tables get equal ids whatever order their composites were met in; then sorts.
    /// Under reduce and prefix the goals a(0..p) are interned too. Every producer of a table
    /// with composites calls it (the compiler, the readers, tests that build tables).
    void canonicalize_composites();
    /// The completion time T: the last step with a transfer (0 for an empty table).
    Step steps() const { return transfers.empty() ? 0 : transfers.back().step; }
    /// Sorts the transfers, keeping per-transfer extras and origins attached. Duplicates stay: a transfer
    /// listed twice is two copies on one channel, which the verifier must count.
    void sort();
    bool is_sorted() const;
};

/// S, R and R/C of a table, and its alpha-beta time S*alpha + R*(M/C)*beta (docs/semantics.md).
struct BandwidthCost {
    std::uint64_t steps = 0, rounds = 0;
    std::uint32_t chunks = 1;
    double rounds_per_chunk() const { return static_cast<double>(rounds) / chunks; }
    double time(double alpha, double beta, double size) const { return steps * alpha + rounds * (size / chunks) * beta; }
    /// "R/C" as a reduced fraction, e.g. "3/2", or "7" when C divides R.
    std::string fraction() const;
};
BandwidthCost bandwidth_cost(const SendTable&);
/// The same for a table whose completion step T is known apart from its transfers (a streamed run).
BandwidthCost bandwidth_cost(const SendTable&, Step T);

/// Why the table's rounds are not allowed (more than one round per step under wormhole timing),
/// or "" when they are.
std::string rounds_problem(const SendTable& t);

/// How many messages a packet carries: a bundle's parts, else 1.
std::uint32_t payload(const Messages&, MessageId);
/// The completion cost. Hop timing: the steps T. Wormhole timing: the sum over rounds 1..T of
/// ts + tc * (largest payload among the round's packets; 1 for a round without packets).
double table_cost(const SendTable&);
/// How the wormhole cost adds up when bundles make payloads differ: "sum over 4 rounds of ts +
/// tc * payload, largest payload per round: 1, 2, 2, 1" (the first 16 rounds). Empty for tables
/// without composites or under hop timing.
std::string cost_breakdown(const SendTable&);

/// Why the table's composites are not allowed (a bundle under hop timing, a bundle among the
/// requirements), or "" when they are.
std::string composite_problem(const SendTable& t);

/// Sorts transfers that all have one step by (channel, message): a counting sort on the channel
/// (through a buffer the size of the step, which stays in cache) when the step is large next to
/// the number of channels, else a comparison sort; then the few transfers of one channel by
/// message. Keeps its buffers between calls, so sorting step after step allocates nothing.
class StepSorter {
public:
    void sort(std::span<Transfer> step, std::size_t channels);

private:
    std::vector<std::uint32_t> at_;
    std::vector<Transfer> buf_;
};

/// Sorts a table's transfers by (step, channel, message) in linear time: a counting sort on the
/// step (steps are small integers) into a second vector, then StepSorter per step. Falls back to
/// one comparison sort when the steps are sparse (the largest step far above the count).
void sort_transfers(std::vector<Transfer>& transfers, std::size_t channels);

}  // namespace collsched
