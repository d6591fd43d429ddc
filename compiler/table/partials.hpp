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
