/** \file
 * The buffer rule of commutative reductions (docs/semantics.md, "Reductions"): every processor
 * has one buffer per chunk holding a partial, the combination of a set of sources'
 * contributions; an arriving partial disjoint from the buffer is combined into it, one that
 * covers the buffer replaces it, any other would count a contribution twice. Shared by the
 * compiler (which names `partial(p, c)` of the DSL) and the direct checker; the simulator keeps
 * its own copy of the rule on bit sets, as an independent witness.
 */
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <unordered_map>
#include <string>
#include <vector>

#include "compiler/table/collective.hpp"
#include "support/budget.hpp"

namespace collsched {

struct SendTable;

/// A set of sources, sorted and distinct.
class SourceSet {
public:
    SourceSet() = default;
    explicit SourceSet(std::uint32_t single) : s_{single} {}
    explicit SourceSet(std::vector<std::uint32_t> sorted) : s_(std::move(sorted)) {}
    /// {lo..hi}
    static SourceSet range(std::uint32_t lo, std::uint32_t hi);
    const std::vector<std::uint32_t>& items() const { return s_; }
    std::size_t size() const { return s_.size(); }
    bool operator==(const SourceSet&) const = default;
    bool operator==(const std::vector<std::uint32_t>& v) const { return s_ == v; }

private:
    std::vector<std::uint32_t> s_;
};

/// A partial named by a message: a(s) (the set {s}) or a({...}) of a chunk.
struct PartialValue {
    std::uint32_t chunk = 0;
    std::vector<std::uint32_t> sources;
};

/// The partial a message names under the buffer rule: a value a(s) or a partial a({...});
/// nullopt for any other message.
std::optional<PartialValue> partial_of(const Messages&, MessageId);

/// The message naming `sources` of `chunk`: a(s) for one source, else the partial (interned).
MessageId partial_message(Composites&, const Messages&, const SourceSet& sources, std::uint32_t chunk);

/// The id of the message naming `sources` of `chunk` when the table's registry has it (a base
/// value for one source).
std::optional<MessageId> find_partial(const Messages&, const SourceSet& sources, std::uint32_t chunk);

/// `a({0..3})`, `a(2)` for a set of one.
std::string partial_name(const Messages&, const SourceSet&, std::uint32_t chunk);

enum class Arrival : std::uint8_t { combined, replaced, counted_twice };

/// Applies the buffer rule to `buffer` for an arriving partial with `sources`. On counted_twice the
/// buffer is unchanged and `twice` (when given) names the contributions counted twice: "a(2)",
/// "a(2) and a(3)", "a(2), a(3) and 4 more".
Arrival apply_arrival(SourceSet& buffer, const std::vector<std::uint32_t>& sources, std::string* twice = nullptr);

/// The buffer rule on every processor's buffer of every chunk at once, each contributor set held
/// once (interned): a buffer is the number of its set, so a copy (every arrival of an allgather's
/// sum) costs nothing and equal buffers share one set. Sets of one source are numbered by the
/// source (0..P-1), larger sets from P on in the order they first occur. Shared by the planner of
/// the constructions (verifier/constructions/compose/plan.cpp), resolve_partials and the direct checker: on
/// 1,024 GPUs with 1,024 chunks every buffer of an allreduce ends with all 1,024 sources, which as
/// a sorted vector per buffer was 4 GiB and a copy of 4 KiB per arrival.
class PartialBuffers {
public:
    using SetId = std::uint32_t;

    PartialBuffers(std::uint32_t processors, std::uint32_t chunks);
    /// The set processor p's buffer of `chunk` holds (initially {p}).
    SetId held(std::uint32_t p, std::uint32_t chunk) const { return buffer_[std::size_t{p} * chunks_ + chunk]; }
    /// A set's sources, sorted and distinct (a view into this object: valid until the next intern).
    std::span<const std::uint32_t> sources(SetId) const;
    std::size_t size(SetId s) const { return s < processors_ ? 1 : s == empty ? 0 : sets_.items()[s - processors_].sources.size(); }
    /// The empty set (a partial read without sources: it combines with nothing and is held by no buffer).
    static constexpr SetId empty = ~SetId{0} - 1;
    /// The number of a set of sources (sorted and distinct).
    SetId intern(std::span<const std::uint32_t> sorted);
    /// The chunk and set a message names under the buffer rule (a value a(s) or a partial a({...}), as partial_of),
    /// nullopt for any other message; a partial's set is interned once per message id.
    std::optional<std::pair<std::uint32_t, SetId>> set_of(const Messages&, MessageId);
    /// Applies the buffer rule to processor p's buffer of `chunk` for an arriving set. On
    /// counted_twice the buffer is unchanged and `twice` (when given) names what is counted twice.
    Arrival arrive(std::uint32_t p, std::uint32_t chunk, SetId arriving, std::string* twice = nullptr);
    /// The table's message naming set s of `chunk`: a(s) for one source, else the partial interned
    /// in `reg` (once per set and chunk while `reg` is the same registry).
    MessageId message(SetId s, std::uint32_t chunk, Composites& reg, const Messages& ms);
    /// `a({0..3},c)` (partial_name of the set).
    std::string name(const Messages&, SetId s, std::uint32_t chunk) const;

private:
    std::uint32_t processors_, chunks_;
    std::vector<SetId> buffer_;                 // per (processor, chunk)
    std::vector<std::uint32_t> singles_;        // 0..P-1: the sources of the sets of one
    Composites sets_;                           // the sets of two or more sources, numbered from P
    std::unordered_map<std::uint64_t, MessageId> named_;  // (set, chunk) -> the table's message
    std::vector<SetId> of_composite_;           // per composite message of the table: its set (~0: not yet)
    std::vector<std::uint32_t> union_;          // arrive()'s union of two sets (kept: one allocation, not one per arrival)
};

/// What a final buffer lacks or has too much against a goal: "it misses a(3)", "it also counts a(5)".
std::string goal_gap(const SourceSet& have, const SourceSet& want);

/// Replaces every reference partial(p, c) of the DSL (a partial without sources: parts = {p},
/// lo = c) by the partial p's buffer of chunk c holds at the end of the step before the
/// reference's first transfer (its departure from p), replaying the buffer rule step by step.
/// An arrival that would count twice leaves the buffer as it is (the verifier reports it).
/// Stops at `deadline` (checked every step) with LimitReached: the table is then left half resolved.
void resolve_partials(SendTable&, Deadline deadline = {});

/// SendTable::canonicalize_composites, checking `deadline` every 65,536 composites (a
/// reduce-scatter on 1,024 processors has a million): LimitReached once it passes, the table
/// then left as it was.
void canonicalize_composites(SendTable&, Deadline deadline);

/// SendTable::sort polling `deadline` (every 1,024 steps, every 2^20 comparisons of sparse
/// steps): LimitReached once it passes, the transfers then in some order (the caller drops the
/// table; the sort of a built table ran past every time limit).
void sort_table(SendTable&, Deadline deadline);

/// Whether a table is checked by the buffer rule: an allreduce, reduce_scatter or scan, or a
/// table with partials a({...}).
bool uses_partials(const SendTable&);
/// The collective's chunk count C.
std::uint32_t table_chunks(const SendTable&);

}  // namespace collsched
