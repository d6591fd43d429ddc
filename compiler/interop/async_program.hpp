/** \file
 * The checker of asynchronous collective programs, shared by the readers of MSCCL-IR
 * (compiler/interop/msccl_import.cpp) and of MSCCL++ execution plans: "one engine, two readers". A
 * reader turns its format into an `async::Program` and `async::check` decides, over every
 * execution the program's synchronization permits:
 *
 *  1. deadlock: a cycle of waits, a wait nothing ever releases, a receive no send matches (and,
 *     on FIFO keys, a send no receive takes), each printed around the cycle or at its cause;
 *  2. data races: two accesses to one slot, at least one a write, that the happens-before order
 *     leaves unordered (exact: vector clocks over each rank's neighbourhood, a search where they
 *     do not order a pair; async_program.cpp, races());
 *  3. for a deadlock-free, race-free program, the result: every execution reads the same value
 *     at every read (each conflicting pair is ordered, and matching is fixed: the k-th send on a
 *     key meets the k-th receive), so one replay in a topological order computes *the* result;
 *     each slot with a goal is compared with it.
 *
 * The model (docs/exports.md, "What `verify PLAN.json` decides"; compiler/interop/MSCCLPP.md):
 *  - Agents (MSCCL-IR thread blocks, MSCCL++ thread blocks) run their ops in the order added.
 *  - An op has a rank, an agent, a position in the agent, a source location, and lanes. Lane x
 *    combines its operands (slots it reads, or lane x of the value received by the op's match)
 *    into one value: one operand copies, several reduce (a multiset union of the atoms); the
 *    result is written to the lane's out slots (on any rank: an MSCCL++ put writes a peer's
 *    buffer) and, with `send`, travels as lane x of the op's outgoing transfer.
 *  - Happens-before is the transitive closure of: agent order; explicit edges `order(a, b)`
 *    (a wait released by a step); and matching: on every key the k-th `send` is matched with the
 *    k-th `receive` in the order the reader registered them, the send before the receive. A key
 *    is `Key::fifo` (MSCCL-IR connections: a send nobody receives is a violation) or
 *    `Key::semaphore` (MSCCL++ signal/wait: surplus signals are harmless).
 *  - A send never waits for its receive (connection buffers are assumed large enough; readers
 *    state where this assumption matters).
 *  - Values are multisets of atoms (a reader's input pieces: "rank 3's input chunk 5"); 0 is no
 *    data (an unwritten slot, or anything combined with one). Two values are equal when their
 *    multisets are, as msccl-tools' ReduceChunk compares them; a contribution counted twice is
 *    a different value, and the report names the op that first counted it twice.
 *
 * Usage: add agents and ops, lanes, edges, keys, initial slot values and goals; then
 * `check(program, naming)` returns a Report. Findings carry the op (its location) and a text; a
 * Report with no findings means the three properties hold. The interface is kept stable: later
 * needs extend it.
 */
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "support/budget.hpp"

namespace collsched::async {

using OpId = std::uint32_t;
using AgentId = std::uint32_t;
using Atom = std::uint32_t;
using Value = std::uint32_t;  ///< an interned multiset of atoms; 0 is no data
constexpr Value no_data = 0;
constexpr OpId no_op = ~OpId{0};

/// A place in the reader's input (1-based; 0 when there is none).
struct Where {
    int line = 0, col = 0;
};

/// One chunk of memory: a rank, a region (reader-defined, after aliasing: MSCCL-IR's input,
/// output and scratch buffers, or one buffer when they alias), an index in it.
struct Slot {
    std::uint32_t rank = 0, region = 0, index = 0;
    auto operator<=>(const Slot&) const = default;
};

/// An operand of a lane: a slot read, or lane x of the value the op receives.
struct Operand {
    bool received = false;
    Slot slot{};
    static Operand read(Slot s) { return {false, s}; }
    static Operand incoming() { return {true, {}}; }
};

struct Lane {
    std::vector<Operand> in;  ///< one: a copy; several: a reduction of all of them; none: no value (a pure wait)
    std::vector<Slot> out;    ///< written with the result
    bool send = false;        ///< the result is lane x of the op's outgoing transfer
};

/// A matching key (a connection, a semaphore) and how its surplus is judged. `relaxed` is a
/// semaphore whose match orders progress only, not memory (MSCCL++'s relaxedSignal/relaxedWait,
/// memoryOrderRelaxed): the receive still waits for its send (deadlock, topological order), but
/// the match adds no happens-before edge to the race check.
enum class KeyKind : std::uint8_t { fifo, semaphore, relaxed };

/// The kinds of findings, each a property violation (exit 1 in the tools).
enum class FindingKind : std::uint8_t { deadlock, unmatched, race, wrong_output, reader };

struct Finding {
    FindingKind kind;
    OpId op = no_op;  ///< where it is reported (no_op: the program as a whole)
    std::string text;
    /// A wrong output's slot: the readers place a finding without an op (an output never
    /// written) at the rank's element in the file.
    std::optional<Slot> slot = std::nullopt;
};

/// The interned values: multisets of atoms.
class Values {
public:
    Values();
    /// The value of a multiset (any order; duplicates count).
    Value make(std::vector<Atom> atoms);
    Value atom(Atom a) { return make({a}); }
    /// The reduction of two values (no_data if either is no_data).
    Value combine(Value a, Value b);
    /// The sorted atoms of a value (empty for no_data).
    const std::vector<Atom>& atoms(Value v) const { return sets_[v]; }
    std::size_t size() const { return sets_.size(); }

private:
    std::vector<std::vector<Atom>> sets_;
    std::map<std::vector<Atom>, Value> index_;
};

/// How a reader names its things in messages.
struct Naming {
    std::function<std::string(OpId)> op;    ///< "rank 0, thread block 1, step 3 (receive from 7, channel 0)"
    std::function<std::string(Slot)> slot;  ///< "rank 0, output chunk 3"
    /// A value by its sorted atoms (never empty): "a({0..7},3)", "m(2,5)".
    std::function<std::string(const std::vector<Atom>&)> value;
    std::function<std::string(std::uint64_t)> key;  ///< "rank 0 -> rank 1, channel 0"
};

class Program {
public:
    AgentId add_agent(std::uint32_t rank);
    /// Appends an op to the agent's order.
    OpId add_op(AgentId agent, Where at);
    void add_lane(OpId op, Lane lane);
    /// `before` happens before `after` (a wait `after` makes, released when `before` completes).
    void order(OpId before, OpId after);
    /// `op` waits for something that never comes (the reader's reason, e.g. "waits for step 9 of
    /// thread block 2, which has 4 steps"); a deadlock unless `op` is unreachable anyway.
    void never_released(OpId op, std::string why);
    /// Registers `op` as the next send / receive on `key`. A send op's lanes with `send` carry
    /// its values; a receive's `Operand::incoming()` reads them. Lane counts of matched ops must
    /// agree (else a finding). An op may both receive on one key and send on another.
    void send(OpId op, std::uint64_t key, KeyKind kind = KeyKind::fifo);
    void receive(OpId op, std::uint64_t key, KeyKind kind = KeyKind::fifo);
    /// What a slot holds at the start (default no_data).
    void initial(Slot s, Value v);
    /// What a slot must hold at the end.
    void goal(Slot s, Value v);
    /// A finding the reader made itself (a step that is wrong on its own), reported with the rest.
    void report(OpId op, std::string text);

    Values& values() { return values_; }
    const Values& values() const { return values_; }
    std::size_t ops() const { return ops_.size(); }
    std::size_t agents() const { return agents_.size(); }

    struct OpData {
        std::uint32_t rank;
        AgentId agent;
        std::uint32_t pos;
        Where at;
        std::vector<Lane> lanes;
        std::vector<OpId> after;  ///< explicit predecessors (order)
        std::optional<std::string> stuck;
    };
    const OpData& op(OpId o) const { return ops_[o]; }
    const std::vector<OpId>& agent_ops(AgentId a) const { return agents_[a].ops; }
    std::uint32_t agent_rank(AgentId a) const { return agents_[a].rank; }

    struct KeyData {
        KeyKind kind = KeyKind::fifo;
        std::vector<OpId> sends, receives;
    };
    const std::map<std::uint64_t, KeyData>& keys() const { return keys_; }
    const std::map<Slot, Value>& initial_values() const { return initial_; }
    const std::map<Slot, Value>& goals() const { return goals_; }
    const std::vector<Finding>& reader_findings() const { return reader_; }

private:
    struct AgentData {
        std::uint32_t rank;
        std::vector<OpId> ops;
    };
    std::vector<OpData> ops_;
    std::vector<AgentData> agents_;
    std::map<std::uint64_t, KeyData> keys_;
    std::map<Slot, Value> initial_, goals_;
    std::vector<Finding> reader_;
    Values values_;
};

struct CheckOptions {
    std::size_t max_findings = 20;  ///< per kind; the counts are exact
    /// The race check searches each pair first, at most this many ops a pair and this many a rank
    /// of the pairs' slots; the pairs a search leaves go to the vector clocks (check's comment on
    /// races). 0 sends every pair to the clocks; both passes are exact.
    std::size_t search_visits_per_pair = 4096;
    std::size_t search_visits = std::size_t{1} << 20;
    /// The race check's vector clocks of one rank stop at this many entries (4 bytes each): that
    /// rank's pairs are then searched one by one, as exactly (check's comment on races).
    std::size_t max_clock_entries = std::size_t{1} << 27;
    /// Past it, the race check throws LimitReached ("time limit (the race check)").
    Deadline deadline = {};
};

struct Report {
    std::vector<Finding> findings;  ///< at most max_findings per kind
    std::size_t counts[5] = {0, 0, 0, 0, 0};  ///< exact counts per FindingKind
    bool finishes = false;    ///< no deadlock: every op runs
    bool race_checked = false;
    bool race_free = false;
    bool replayed = false;    ///< the result was computed (finishes and race free)
    std::vector<OpId> order;   ///< a topological order of the ops that can run
    std::vector<OpId> source;  ///< per op: the send matched with its first receive (no_op if none)
    std::vector<OpId> dest;    ///< per op: the receive matched with its first send (no_op if none)
    Values values;             ///< the program's values and those the replay made
    std::map<Slot, Value> final;  ///< every slot initialized or written, at the end (if replayed)
    std::map<Slot, OpId> writer;  ///< the op that wrote each written slot last (if replayed)
    std::vector<std::vector<Value>> sent;  ///< per op: the values of its outgoing lanes (if replayed)
    bool holds() const { return findings.empty(); }
};

/// Decides deadlock freedom, race freedom and the goals (see the file comment).
Report check(const Program& program, const Naming& naming, const CheckOptions& options = {});

}  // namespace collsched::async
