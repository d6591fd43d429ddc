/** \file
 * Messages and collectives (DESIGN.md section 4). Messages of a topology with P processors are
 * numbered densely: m(s,d) is s*P+d, b(s) is P*P+s, a(s) is P*P+P+s; the origin of a message
 * (s) is the only processor that can hold it at time 0. A collective may split every datum into
 * C chunks (docs/semantics.md, "Chunks"): chunk c of the datum numbered i above is i*C+c, so a
 * datum's chunks are adjacent and C = 1 gives the numbering above; chunked names carry the
 * chunk last: m(s,d,c), b(s,c), a(s,c). These are the base messages. Composite
 * messages (docs/semantics.md, "Combined values and bundles") are interned per table in a
 * Composites registry and numbered after the base range: combined values a(i..j) and bundles
 * b(0)+b(4). A collective fixes which messages are initial data and which (message, processor)
 * pairs must hold at the end.
 */
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <span>
#include <vector>

#include "compiler/table/collective_kinds.hpp"
#include "compiler/core/ids.hpp"

namespace collsched {

class Topology;

/// combined: a(src..dst), src < dst; bundle and partial: src is its index in the Composites registry.
enum class MessageKind : std::uint8_t { personal, broadcast, value, combined, bundle, partial };

struct MessageKey {
    MessageKind kind;
    std::uint32_t src;
    std::uint32_t dst;  ///< personal messages only (combined values: the last source)
    std::uint32_t chunk = 0;  ///< base messages: the chunk 0..C-1
    bool operator==(const MessageKey&) const = default;
};

/// A composite message: the combined value a(lo..hi) (lo < hi), a bundle of two or more
/// distinct base messages (parts, in increasing id order), or a partial a({sources}) of a
/// commutative reduction: the combination of two or more sources' contributions to chunk `lo`
/// (sources sorted and distinct; docs/semantics.md, "Reductions").
struct Composite {
    MessageKind kind = MessageKind::combined;
    std::uint32_t lo = 0, hi = 0;
    std::vector<MessageId> parts;
    std::vector<std::uint32_t> sources;  ///< partials only
    bool operator==(const Composite&) const = default;
};

/// A contributor set written compactly: `{0..3,6}` (runs of three or more as ranges, `{0,1}`).
std::string source_set_name(const std::vector<std::uint32_t>& sorted_sources);

/// The composite messages of one table, numbered from `base` (the size of the base range) in
/// the order they were interned; canonical() orders them (combined values by (lo, hi), then
/// bundles by their parts) so that equal tables number them alike.
class Composites {
public:
    explicit Composites(std::uint64_t base) : base_(base) {}
    std::uint64_t base() const { return base_; }
    std::size_t size() const { return items_.size(); }
    bool empty() const { return items_.empty(); }
    const Composite& at(MessageId m) const { return items_[idx(m) - base_]; }
    const std::vector<Composite>& items() const { return items_; }
    /// The id of a composite, interning it when new. A combined value a(i..i) is a(i) (a base
    /// message: pass its id as `single`); a bundle's parts are sorted and must be distinct; a
    /// partial has two or more sorted distinct sources (a partial of one source is a(s)).
    MessageId intern(Composite c);
    /// intern(Composite{MessageKind::partial, chunk, 0, {}, sources}), the same id, without copying the sources
    /// when the partial is there already (the buffers of a reduction intern one per arrival: issue 43).
    MessageId intern_partial(std::uint32_t chunk, std::span<const std::uint32_t> sources);
    std::optional<MessageId> find(const Composite& c) const;
    /// Renumbers in canonical order; returns the map old id -> new id (composites only, indexed
    /// by id - base).
    std::vector<MessageId> canonicalize();

private:
    /// The slot of `c` in `slots_` (open addressing): the one holding an equal composite, or the
    /// empty one where it would go.
    std::size_t slot_of(const Composite& c, std::uint64_t hash) const;
    /// Puts item i in the first empty slot from its hash (its hashes_ entry).
    void place(std::size_t i);
    void grow();

    std::uint64_t base_;
    std::vector<Composite> items_;
    /// A hash index of items_, at most half full: per slot the hash's high 32 bits and the
    /// position + 1 (0 = empty). It was a std::map keyed by vectors, a fifth of `optimize --size`'s
    /// time on 128 GPUs (issue 43).
    std::vector<std::uint64_t> slots_;
    std::vector<std::uint64_t> hashes_;  ///< per item its hash (growing and reordering rehash no key: a partial has up to P sources)
};

/// The message space of a topology: the dense numbering above, names and their parser. With a
/// registry it also names and parses the table's composites. `chunks` is the collective's C.
class Messages {
public:
    explicit Messages(std::uint32_t processors, const Composites* composites = nullptr, std::uint32_t chunks = 1)
        : p_(processors), c_(composites), chunks_(chunks) {}
    /// The size of the dense base range (ids below are base messages).
    std::uint64_t base_size() const { return (std::uint64_t{p_} * p_ + 2ull * p_) * chunks_; }
    std::uint64_t size() const { return base_size() + (c_ ? c_->size() : 0); }
    std::uint32_t chunks() const { return chunks_; }
    std::uint32_t processors() const { return p_; }
    MessageId personal(std::uint32_t s, std::uint32_t d, std::uint32_t c = 0) const { return MessageId{(s * p_ + d) * chunks_ + c}; }
    MessageId broadcast(std::uint32_t s, std::uint32_t c = 0) const { return MessageId{(p_ * p_ + s) * chunks_ + c}; }
    MessageId value(std::uint32_t s, std::uint32_t c = 0) const { return MessageId{(p_ * p_ + p_ + s) * chunks_ + c}; }
    /// The chunk of a base message (0 when C = 1).
    std::uint32_t chunk(MessageId m) const { return idx(m) % chunks_; }
    /// The datum of a base message: its chunk 0.
    MessageId datum(MessageId m) const { return MessageId{idx(m) - idx(m) % chunks_}; }
    bool is_composite(MessageId m) const { return idx(m) >= base_size(); }
    const Composite& composite(MessageId m) const { return c_->at(m); }
    const Composites* composites() const { return c_; }
    MessageKey key(MessageId m) const;
    /// Base messages: the processor that holds it initially. Combined values: their first source.
    Node origin(MessageId m) const { return Node{key(m).src}; }
    /// `m(3,5)`, `b(3)`, `a(3)`, `a(0..3)`, `b(0)+b(4)`; with C > 1 chunks `m(3,5,1)`, `b(3,1)`, `a(3,1)`.
    std::string name(MessageId m) const;
    /// Parses a name as written by name(); nullopt when malformed, out of range, or a composite
    /// the registry does not hold (parse_message interns those).
    std::optional<MessageId> parse(std::string_view) const;
    /// Base messages only: `m(3,5)`, `b(3)`, `a(3)` (C = 1), `m(3,5,c)`, `b(3,c)`, `a(3,c)` (C > 1).
    /// `why` (when given) says what is wrong, e.g. a whole datum named under chunks.
    std::optional<MessageId> parse_base(std::string_view, std::string* why = nullptr) const;
    /// The parts a message stands for when received: a bundle's parts, else the message itself.
    template <class F>
    void for_each_part(MessageId m, F&& f) const {
        if (c_ && is_composite(m) && composite(m).kind == MessageKind::bundle) {
            for (MessageId p : composite(m).parts) f(p);
        } else {
            f(m);
        }
    }
    /// How many chunks a transfer of m moves: a bundle its parts, anything else one (the unit of
    /// every byte count: runtime/timing.cpp, the bounds' loads).
    std::uint32_t part_count(MessageId m) const {
        if (c_ && is_composite(m) && composite(m).kind == MessageKind::bundle) return static_cast<std::uint32_t>(composite(m).parts.size());
        return 1;
    }

private:
    std::uint32_t p_;
    const Composites* c_;
    std::uint32_t chunks_ = 1;
};

/// Parses a message name with P processors and C chunks, interning composites into `reg`; nullopt
/// when malformed or out of range. `why` (when given) says what is wrong.
std::optional<MessageId> parse_message(std::string_view text, std::uint32_t processors, Composites& reg, std::string* why = nullptr,
                                       std::uint32_t chunks = 1);

/// Most chunks a datum may be split into.
inline constexpr std::uint32_t max_chunks = 1u << 16;

/// Most (message, processor) goal pairs a collective may have on a topology: 2^28, so alltoall and
/// allgather up to 16,384 processors. The checkers enumerate the pairs (a complete table needs a
/// transfer for each), so alltoall on 65,534 processors (4.3e9 pairs) would take 17 GB and about
/// half an hour to verify; it is refused when a table is read or compiled instead.
inline constexpr std::uint64_t max_goal_pairs = std::uint64_t{1} << 28;

struct Collective {
    CollectiveKind kind = CollectiveKind::custom;
    Node root{0};
    std::vector<Node> members;  ///< multicast targets, sorted
    std::uint32_t chunks = 1;   ///< C: every datum is split into C chunks (docs/semantics.md)
    bool operator==(const Collective&) const = default;

    /// The spec forms of the rows (compiler/table/collective_kinds.hpp): `alltoall`, `broadcast:R`,
    /// `multicast:R:a,b,c`, ... Throws InputError for unknown names and processors that do not exist.
    /// `check_size` false leaves the goal-pair limit to the caller (check_goal_count): `optimize`
    /// takes larger allgathers in the quotient of a translation group, where no pair is listed.
    static Collective parse(std::string_view text, const Topology&, bool check_size = true);
    std::string to_string() const;

    /// Whether m is part of the initial data (held by its origin at time 0).
    bool initial(const Messages&, MessageId m) const;
    /// Calls f(message, processor) for every pair of the postcondition on base messages, in
    /// message order (none for reduce and prefix: see for_each_value_goal).
    template <class F>
    void for_each_goal(std::uint32_t processors, F&& f) const;
    /// for_each_goal as if C = 1: the goal pairs of whole data (ids of one chunk per datum).
    template <class F>
    void for_each_whole_goal(std::uint32_t processors, F&& f) const;
    /// The collective's row (compiler/table/collective_kinds.hpp): its goals, flags and names.
    const CollectiveRow& row() const { return collective_row(kind); }
    /// Whether the goals are combined values (reduce, prefix).
    bool combines() const { return row().combines(); }
    /// Whether the collective is a commutative reduction checked by the buffer rule of partials
    /// (docs/semantics.md, "Reductions"): allreduce, reduce_scatter, scan. `reduce(r)` follows
    /// the table: partials a({...}) take the buffer rule, combined values a(i..j) the ordered one.
    bool reduces() const { return row().reduces(); }
    /// Calls f(processor) for each processor of `reach` on P processors, in increasing order
    /// (block_owner and none: no processor).
    template <class F>
    void for_each_in(coll::Reach reach, std::uint32_t P, F&& f) const {
        switch (reach) {
            case coll::Reach::every:
                for (std::uint32_t p = 0; p < P; ++p) f(Node{p});
                break;
            case coll::Reach::root: f(root); break;
            case coll::Reach::members:
                for (Node m : members) f(m);
                break;
            case coll::Reach::none:
            case coll::Reach::block_owner: break;
        }
    }
    /// The last contributor of a combining goal at processor p (the row's upto).
    std::uint32_t upto(std::uint32_t P, Node p) const { return row().upto == coll::Upto::self ? idx(p) : P - 1; }
    /// Calls f(datum) for every goal datum of personal or broadcast data (chunk 0 of C = 1
    /// ids, in id order): m(s,d) for s in the row's sources and d in its sinks, d != s; b(s)
    /// for s in its sources when some sink is not s.
    template <class F>
    void for_each_goal_datum(std::uint32_t P, F&& f) const {
        const CollectiveRow& r = row();
        Messages ms(P);
        if (r.data == coll::Data::personal) {
            for_each_in(r.from, P, [&](Node s) {
                for_each_in(r.to, P, [&](Node d) {
                    if (d != s) f(ms.personal(idx(s), idx(d)));
                });
            });
        } else if (r.data == coll::Data::broadcast) {
            for_each_in(r.from, P, [&](Node s) {
                const bool some_sink = r.to == coll::Reach::every     ? P > 1
                                       : r.to == coll::Reach::root    ? root != s
                                       : r.to == coll::Reach::members ? members.size() > (std::binary_search(members.begin(), members.end(), s) ? 1u : 0u)
                                                                      : false;
                if (some_sink) f(ms.broadcast(idx(s)));
            });
        }
    }
    /// Calls f(processor) for every processor that must end holding the base datum `k` (a goal
    /// datum): a personal message's destination; every sink of broadcast data but its source.
    template <class F>
    void for_each_sink(std::uint32_t P, const MessageKey& k, F&& f) const {
        const CollectiveRow& r = row();
        if (r.data == coll::Data::personal) {
            f(Node{k.dst});
        } else if (r.data == coll::Data::broadcast) {
            for_each_in(r.to, P, [&](Node d) {
                if (idx(d) != k.src) f(d);
            });
        }
    }
    /// Reductions under the buffer rule: calls f(chunk, hi, processor) for every goal "the buffer
    /// of `chunk` at `processor` ends holding a({0..hi})" (allreduce, reduce(r) and
    /// reduce_scatter: hi = P-1; scan: hi = p), chunk by chunk. `chunks` is the collective's C.
    template <class F>
    void for_each_partial_goal(std::uint32_t processors, std::uint32_t chunks, F&& f) const {
        const CollectiveRow& r = row();
        if (!r.has_partials()) return;
        const std::uint32_t P = processors;
        for (std::uint32_t c = 0; c < chunks; ++c) {
            if (r.to == coll::Reach::block_owner) {  // block p: chunks p*C/P .. (C a multiple of P: reduction_problem)
                if (chunks % P == 0) f(c, P - 1, Node{c / (chunks / P)});
            } else {
                for_each_in(r.to, P, [&](Node p) { f(c, upto(P, p), p); });
            }
        }
    }
    /// Calls f(lo, hi, processor) for every goal `processor holds a(lo..hi)` of reduce and prefix
    /// with lo < hi (a(p..p) = a(p) is initial data and holds from the start).
    template <class F>
    void for_each_value_goal(std::uint32_t processors, F&& f) const {
        if (!combines()) return;
        for_each_in(row().to, processors, [&](Node p) {
            if (const std::uint32_t hi = upto(processors, p); hi > 0) f(0u, hi, p);
        });
    }
    /// How many (message, processor) pairs the postcondition has.
    std::uint64_t goal_count(std::uint32_t processors) const;
    /// How many (source, sink) pairs personal or broadcast data have (C = 1).
    std::uint64_t pair_count(std::uint32_t processors) const;
    /// How many messages are initial data (held by their origins at time 0); `initial` counted.
    std::uint64_t initial_count(std::uint32_t processors) const;
    /// Why a reduction cannot have this many chunks on P processors ("" when it can):
    /// reduce_scatter needs C a multiple of P.
    std::string reduction_problem(std::uint32_t processors, std::uint32_t chunks = 1) const;
    /// Throws InputError when the postcondition has more than max_goal_pairs pairs on `topo`.
    void check_goal_count(const Topology& topo) const;
    /// Sets C after checking it: 1 <= C <= max_chunks, the chunked message space fits 32-bit ids
    /// (with room for 2^24 composites), reductions take no chunks yet. Throws InputError.
    void set_chunks(std::uint64_t c, const Topology& topo, bool check_size = true);
    /// The message space of this collective on P processors (its chunks, no composites).
    Messages messages(std::uint32_t processors, const Composites* composites = nullptr) const {
        return Messages(processors, composites, chunks);
    }
};

template <class F>
void Collective::for_each_goal(std::uint32_t P, F&& f) const {
    if (chunks > 1) {  // the goals of C = 1, each datum's run of destinations once per chunk (message order)
        std::optional<MessageId> cur;
        std::vector<Node> dests;
        auto flush = [&] {
            if (!cur) return;
            for (std::uint32_t c = 0; c < chunks; ++c)
                for (Node d : dests) f(MessageId{idx(*cur) * chunks + c}, d);
            dests.clear();
        };
        for_each_whole_goal(P, [&](MessageId m, Node d) {
            if (cur != m) flush();
            cur = m;
            dests.push_back(d);
        });
        flush();
        return;
    }
    for_each_whole_goal(P, f);
}

template <class F>
void Collective::for_each_whole_goal(std::uint32_t P, F&& f) const {
    for_each_goal_datum(P, [&](MessageId m) { for_each_sink(P, Messages(P).key(m), [&](Node d) { f(m, d); }); });
}

}  // namespace collsched
