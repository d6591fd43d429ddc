#include "compiler/interop/async_program.hpp"

#include <algorithm>
#include <limits>
#include <memory>
#include <unordered_map>

#include <fmt/format.h>

#include "support/assert.hpp"
#include "support/budget.hpp"
#include "support/teardown.hpp"
#include "support/trace.hpp"

namespace collsched::async {

Values::Values() {
    sets_.emplace_back();  // no_data
}

Value Values::make(std::vector<Atom> atoms) {
    if (atoms.empty()) return no_data;
    std::sort(atoms.begin(), atoms.end());
    auto [it, fresh] = index_.try_emplace(atoms, Value(sets_.size()));
    if (fresh) sets_.push_back(std::move(atoms));
    return it->second;
}

Value Values::combine(Value a, Value b) {
    if (a == no_data || b == no_data) return no_data;
    std::vector<Atom> both;
    both.reserve(sets_[a].size() + sets_[b].size());
    std::merge(sets_[a].begin(), sets_[a].end(), sets_[b].begin(), sets_[b].end(), std::back_inserter(both));
    return make(std::move(both));
}

AgentId Program::add_agent(std::uint32_t rank) {
    agents_.push_back({rank, {}});
    return AgentId(agents_.size() - 1);
}

OpId Program::add_op(AgentId agent, Where at) {
    COLLSCHED_ASSERT(agent < agents_.size());
    const OpId id = OpId(ops_.size());
    ops_.push_back(OpData{agents_[agent].rank, agent, std::uint32_t(agents_[agent].ops.size()), at, {}, {}, std::nullopt});
    agents_[agent].ops.push_back(id);
    return id;
}

void Program::add_lane(OpId op, Lane lane) { ops_[op].lanes.push_back(std::move(lane)); }
void Program::order(OpId before, OpId after) { ops_[after].after.push_back(before); }
void Program::never_released(OpId op, std::string why) {
    if (!ops_[op].stuck) ops_[op].stuck = std::move(why);
}
void Program::send(OpId op, std::uint64_t key, KeyKind kind) {
    KeyData& k = keys_[key];
    k.kind = kind;
    k.sends.push_back(op);
}
void Program::receive(OpId op, std::uint64_t key, KeyKind kind) {
    KeyData& k = keys_[key];
    k.kind = kind;
    k.receives.push_back(op);
}
void Program::initial(Slot s, Value v) { initial_[s] = v; }
void Program::goal(Slot s, Value v) { goals_[s] = v; }
void Program::report(OpId op, std::string text) { reader_.push_back({FindingKind::reader, op, std::move(text)}); }

namespace {

class ProgramChecker {
public:
    ProgramChecker(const Program& p, const Naming& n, const CheckOptions& o) : p_(p), n_(n), o_(o) {}

    Report run() {
        r_.values = p_.values();
        for (const Finding& f : p_.reader_findings()) add(f.kind, f.op, f.text);
        match();
        order();
        trace("async check: {} ops of {} agents matched and ordered", p_.ops(), p_.agents());
        if (!r_.finishes) deadlock();
        races();
        trace("async check: data races decided, {} pairs: {} searched within the limits, {} left to the clocks ({} searched after them)",
              pairs_checked_, pairs_searched_, pairs_clocked_, pairs_researched_);
        if (r_.finishes && r_.race_free) replay();
        trace("async check: replayed");
        return std::move(r_);
    }

private:
    void add(FindingKind kind, OpId op, std::string text, std::optional<Slot> slot = std::nullopt) {
        if (r_.counts[std::size_t(kind)]++ < o_.max_findings) r_.findings.push_back({kind, op, std::move(text), slot});
    }
    std::string value_name(Value v) const { return v == no_data ? "no data" : n_.value(r_.values.atoms(v)); }

    /// The k-th send on every key with its k-th receive; surplus receives wait forever.
    void match() {
        const std::size_t n = p_.ops();
        r_.source.assign(n, no_op);
        r_.dest.assign(n, no_op);
        preds_.resize(n);
        stuck_.resize(n);
        unmatched_.assign(n, false);
        for (OpId o = 0; o < n; ++o) {
            const auto& op = p_.op(o);
            if (op.pos > 0) preds_[o].push_back(p_.agent_ops(op.agent)[op.pos - 1]);
            for (OpId b : op.after) preds_[o].push_back(b);
            if (op.stuck) stuck_[o] = *op.stuck;
        }
        for (const auto& [key, k] : p_.keys()) {
            const std::size_t m = std::min(k.sends.size(), k.receives.size());
            for (std::size_t i = 0; i < m; ++i) {
                const OpId s = k.sends[i], rcv = k.receives[i];
                preds_[rcv].push_back(s);
                if (k.kind == KeyKind::relaxed) progress_only_.push_back({s, rcv});
                if (r_.source[rcv] == no_op) r_.source[rcv] = s;
                if (r_.dest[s] == no_op) r_.dest[s] = rcv;
                const std::size_t ls = p_.op(s).lanes.size(), lr = p_.op(rcv).lanes.size();
                if (k.kind == KeyKind::fifo && ls != lr)
                    add(FindingKind::unmatched, rcv,
                        fmt::format("{}: receives {} chunk{}, but the matching send ({}) sends {}", n_.op(rcv), lr,
                                    lr == 1 ? "" : "s", n_.op(s), ls));
            }
            for (std::size_t i = m; i < k.receives.size(); ++i) {
                const OpId rcv = k.receives[i];
                if (!stuck_[rcv])
                    stuck_[rcv] = fmt::format("waits for a send that never comes: {} has {} send{} and this is receive {}",
                                              n_.key(key), k.sends.size(), k.sends.size() == 1 ? "" : "s", i + 1);
                unmatched_[rcv] = true;
            }
            if (k.kind == KeyKind::fifo)
                for (std::size_t i = m; i < k.sends.size(); ++i)
                    add(FindingKind::unmatched, k.sends[i],
                        fmt::format("{}: is never received: {} has {} receive{} and this is send {} [unmatched send]",
                                    n_.op(k.sends[i]), n_.key(key), k.receives.size(), k.receives.size() == 1 ? "" : "s",
                                    i + 1));
        }
    }

    /// Kahn's algorithm over the happens-before edges; ops that wait forever never become ready.
    void order() {
        const std::size_t n = p_.ops();
        succ_.assign(n, {});
        indeg_.assign(n, 0);
        for (OpId o = 0; o < n; ++o)
            for (OpId b : preds_[o]) {
                succ_[b].push_back(o);
                ++indeg_[o];
            }
        std::vector<std::uint32_t> deg = indeg_;
        for (OpId o = 0; o < n; ++o)
            if (!deg[o] && !stuck_[o]) r_.order.push_back(o);
        for (std::size_t h = 0; h < r_.order.size(); ++h)
            for (OpId b : succ_[r_.order[h]])
                if (!--deg[b] && !stuck_[b]) r_.order.push_back(b);
        r_.finishes = r_.order.size() == n;
        done_.assign(n, false);
        for (OpId o : r_.order) done_[o] = true;
    }

    /// Reports each cause of a deadlock once: a wait nothing releases (with the reader's reason or
    /// the unmatched receive), then the cycles among the remaining stuck ops, printed around.
    void deadlock() {
        const std::size_t n = p_.ops();
        std::vector<bool> explained(n, false);
        auto explain_from = [&](OpId root) {
            std::vector<OpId> stack{root};
            while (!stack.empty()) {
                OpId o = stack.back();
                stack.pop_back();
                if (explained[o]) continue;
                explained[o] = true;
                for (OpId b : succ_[o])
                    if (!done_[b]) stack.push_back(b);
            }
        };
        for (OpId o = 0; o < n; ++o) {
            if (done_[o] || !stuck_[o] || explained[o]) continue;
            // a cause only if nothing before it is stuck too (else it is a consequence)
            bool first = true;
            for (OpId b : preds_[o]) first = first && done_[b];
            if (!first) continue;
            add(unmatched_[o] ? FindingKind::unmatched : FindingKind::deadlock, o,
                fmt::format("{}: {} [deadlock]", n_.op(o), *stuck_[o]));
            explain_from(o);
        }
        for (OpId o = 0; o < n; ++o) {
            if (done_[o] || !stuck_[o] || explained[o]) continue;
            add(FindingKind::deadlock, o, fmt::format("{}: {}, and an earlier step waits too [deadlock]", n_.op(o), *stuck_[o]));
            explain_from(o);
        }
        for (OpId start = 0; start < n; ++start) {
            if (done_[start] || explained[start]) continue;
            // every unexplained stuck op has an unexplained stuck predecessor: walk back to a cycle
            std::unordered_map<OpId, std::size_t> seen;
            std::vector<OpId> path;
            OpId at = start;
            while (!seen.count(at)) {
                seen[at] = path.size();
                path.push_back(at);
                OpId next = no_op;
                for (OpId b : preds_[at])
                    if (!done_[b] && !explained[b]) {
                        next = b;
                        break;
                    }
                COLLSCHED_ASSERT(next != no_op);
                at = next;
            }
            std::vector<OpId> cycle(path.begin() + std::ptrdiff_t(seen[at]), path.end());
            std::string text = n_.op(cycle[0]);
            for (std::size_t i = 1; i < cycle.size() && i < 8; ++i) text += " waits for " + n_.op(cycle[i]);
            if (cycle.size() > 8) text += fmt::format(" ... ({} steps in the cycle)", cycle.size());
            text += " waits for the first again [deadlock]";
            add(FindingKind::deadlock, cycle[0], std::move(text));
            for (OpId c : cycle) explain_from(c);
        }
    }

    struct Access {
        OpId op;
        bool write;
    };

    struct LaneAccess {
        Slot slot;
        std::uint32_t lane;
        bool write;
    };

    /// Slots an op reads and writes, lane by lane; a lane that copies a slot onto itself is no access.
    void accesses(OpId o, std::vector<LaneAccess>& out) const {
        out.clear();
        const auto& lanes = p_.op(o).lanes;
        for (std::uint32_t x = 0; x < lanes.size(); ++x) {
            const Lane& lane = lanes[x];
            if (lane.in.size() == 1 && !lane.in[0].received && lane.out.size() == 1 && lane.out[0] == lane.in[0].slot && !lane.send)
                continue;
            for (const Operand& in : lane.in)
                if (!in.received) out.push_back({in.slot, x, false});
            for (const Slot& s : lane.out) out.push_back({s, x, true});
        }
    }

    /// The happens-before predecessors of every op that runs (agent order, explicit edges, matches
    /// on keys that order memory), without duplicates, and the successors from them.
    void happens_before_edges() {
        const std::size_t n = p_.ops();
        std::sort(progress_only_.begin(), progress_only_.end());
        hpred_.assign(n, {});
        hsucc_.assign(n, {});
        ti_.assign(n, ~std::uint32_t{0});
        for (std::size_t h = 0; h < r_.order.size(); ++h) ti_[r_.order[h]] = std::uint32_t(h);
        for (OpId o : r_.order) {
            const auto& op = p_.op(o);
            std::vector<OpId>& hp = hpred_[o];
            if (op.pos > 0) hp.push_back(p_.agent_ops(op.agent)[op.pos - 1]);  // agent order orders memory, whatever else joins the two
            for (OpId b : preds_[o]) {
                if (op.pos > 0 && b == hp.front()) continue;
                if (!progress_only_.empty() && std::binary_search(progress_only_.begin(), progress_only_.end(), std::pair(b, o)))
                    continue;  // a relaxed match: progress, no memory order
                hp.push_back(b);
            }
            std::sort(hp.begin() + (op.pos > 0 ? 1 : 0), hp.end());
            hp.erase(std::unique(hp.begin() + (op.pos > 0 ? 1 : 0), hp.end()), hp.end());
            for (OpId b : hp) hsucc_[b].push_back(o);
        }
    }

    /// The funnel of every op that runs (why it is exact: races()). An op x funnels into its
    /// successor s when s reaches every other successor n of x in one step seen locally: n has a
    /// predecessor on s's agent at or after s. Then every path out of x passes s or continues from a
    /// point s reaches, so for y != x: x happens before y iff y == s or s happens before y. rep_[x] is
    /// the end of the funnels from x (an op that funnels nowhere: several successors, none of them
    /// covering the rest; or none), fdist_[x] the funnels taken to get there (at most max_funnel).
    void funnels() {
        const std::size_t n = p_.ops();
        fnext_.assign(n, no_op);
        rep_.assign(n, no_op);
        fdist_.assign(n, 0);
        constexpr std::size_t widest = 16;  // an op with more successors (a barrier's) is an end: a few pairs checked per op
        for (std::size_t h = r_.order.size(); h-- > 0;) {
            const OpId x = r_.order[h];
            rep_[x] = x;
            const std::vector<OpId>& out = hsucc_[x];
            if (out.empty() || out.size() > widest) continue;
            for (OpId s : out) {
                const auto& so = p_.op(s);
                bool covers = true;
                for (OpId m : out) {
                    if (m == s) continue;
                    bool found = false;
                    for (OpId b : hpred_[m]) {
                        const auto& bo = p_.op(b);
                        if (bo.agent == so.agent && bo.pos >= so.pos) {
                            found = true;
                            break;
                        }
                    }
                    if (!(covers = found)) break;
                }
                if (!covers || fdist_[s] >= max_funnel) continue;
                fnext_[x] = s;
                rep_[x] = rep_[s];
                fdist_[x] = fdist_[s] + 1;
                break;
            }
        }
    }
    static constexpr std::uint32_t max_funnel = 64;

    /// Whether y lies on the funnels from x (x excluded).
    bool on_funnel(OpId x, OpId y) const {
        if (rep_[x] != rep_[y] || fdist_[y] >= fdist_[x]) return false;
        OpId at = x;
        for (std::uint32_t k = fdist_[x] - fdist_[y]; k > 0; --k) at = fnext_[at];
        return at == y;
    }

    /// Whether `from` happens before or is y, decided by a search back from y over the ops after
    /// `from` in the topological order: exact. The search stops after `limit` ops (nullopt: not
    /// decided); `visits` grows by the ops it took.
    std::optional<bool> reaches(OpId from, OpId y, std::size_t limit, std::size_t& visits) {
        const auto& f = p_.op(from);
        const std::uint32_t floor = ti_[from];
        if (++stamp_ == 0) {
            std::fill(seen_.begin(), seen_.end(), 0u);
            stamp_ = 1;
        }
        std::vector<OpId>& stack = search_stack_;
        stack.assign(1, y);
        seen_[y] = stamp_;
        for (std::size_t taken = 0; !stack.empty(); ++taken) {
            if (taken == limit) return std::nullopt;
            const OpId o = stack.back();
            stack.pop_back();
            ++visits;
            const auto& od = p_.op(o);
            if (od.agent == f.agent && od.pos >= f.pos) return true;
            if ((taken & 4095) == 4095 && o_.deadline.passed()) throw LimitReached("time limit (the race check)");
            for (OpId b : hpred_[o])
                if (ti_[b] >= floor && seen_[b] != stamp_) {
                    seen_[b] = stamp_;
                    stack.push_back(b);
                }
        }
        return false;
    }

    /// The pairs of accesses to decide, per rank of the slot: (earlier, later) in the slots' order,
    /// the last write before each access and the reads since it before the next write; clashes
    /// inside one op are reported here.
    struct Pair {
        OpId earlier, later;
        Slot slot;
        bool later_writes, earlier_writes;
    };
    std::map<std::uint32_t, std::vector<Pair>> race_pairs() {
        std::vector<LaneAccess> acc;
        std::map<Slot, std::vector<Access>> per_slot;
        for (OpId o : r_.order) {
            accesses(o, acc);
            // within one op: a slot written by one lane and touched by another (the threads of a
            // step work on all its chunks at once)
            std::sort(acc.begin(), acc.end(), [](const LaneAccess& a, const LaneAccess& b) { return a.slot < b.slot; });
            for (std::size_t i = 0; i < acc.size();) {
                std::size_t j = i;
                bool write = false, clash = false;
                for (; j < acc.size() && acc[j].slot == acc[i].slot; ++j) write = write || acc[j].write;
                for (std::size_t k = i; k < j && write; ++k) clash = clash || acc[k].lane != acc[i].lane;
                if (clash)
                    add(FindingKind::race, o,
                        fmt::format("{}: two of its chunks are the same memory ({}), one of them written, and the threads "
                                    "of one step work on all its chunks at once [data race]",
                                    n_.op(o), n_.slot(acc[i].slot)));
                per_slot[acc[i].slot].push_back({o, write});
                i = j;
            }
        }
        std::map<std::uint32_t, std::vector<Pair>> pairs;
        for (const auto& [s, list] : per_slot) {
            OpId last_write = no_op;
            std::vector<OpId> reads;
            for (const Access& a : list) {
                if (last_write != no_op) pairs[s.rank].push_back({last_write, a.op, s, a.write, true});
                if (a.write) {
                    for (OpId rd : reads) pairs[s.rank].push_back({rd, a.op, s, true, false});
                    last_write = a.op;
                    reads.clear();
                } else {
                    reads.push_back(a.op);
                }
            }
        }
        return pairs;
    }

    /// Data races, exactly: for every slot, in the topological order of its accesses, the last write
    /// must happen before each access and the reads since it before the next write.
    ///
    /// Happens-before between two ops is asked of the funnel's end of the earlier one (funnels()):
    /// in an MSCCL++ plan a put's only way on is its thread block's next barrier, so the ends are a
    /// few chains a thread block (its barriers, its signals, its proxy), not every thread of it.
    /// Each rank's pairs (the rank of their slot) are decided in two passes, both exact:
    ///
    ///  1. a search back from the later op (reaches()), at most search_visits_per_pair ops a pair
    ///     and search_visits a rank: in a plan that holds the two accesses of a pair are a few
    ///     steps apart (a put, a signal, a wait, a read; 6 ops a search on the 128-piece NVLS_TREE
    ///     export of 16 x 8 GPUs, 493,568 pairs in 0.3 s), and a search that ends decides its pair
    ///     either way;
    ///  2. the pairs left (a search cut off: a race far from its cause, or a long way round) by
    ///     vector clocks over the chains of those pairs' ends alone, computed only over the ops of
    ///     the ranks that access them or hold the ends: a rank's pairs are ordered by what its
    ///     neighbours do, and the clocks cost the neighbourhood's ops times the chains. A clock
    ///     computed over part of the program can only miss an order, never make one up: a pair the
    ///     clocks order is ordered, and a pair they do not is searched exactly over the whole
    ///     program without a limit. An op whose happens-before predecessors give it one clock (a put
    ///     after its barrier) shares that clock. A rank whose clocks would pass max_clock_entries is
    ///     searched pair by pair.
    ///
    /// The clocks over every pair's chain were this check's time (21 s of the 128-piece export's
    /// 42.9 s, and 0.5 GB a rank: 1,962 chains by 57,600 rows); the first pass leaves them no pair
    /// there. Races are reported in the pairs' order, whichever pass decided them.
    void races() {
        const std::map<std::uint32_t, std::vector<Pair>> pairs = race_pairs();
        const std::size_t before = r_.counts[std::size_t(FindingKind::race)];  // a clash inside one op is reported, not a race of two
        happens_before_edges();
        funnels();
        const std::size_t n = p_.ops();
        seen_.assign(n, 0);
        // the ops of each rank, in the topological order
        std::vector<std::vector<OpId>> by_rank;
        for (OpId o : r_.order) {
            const std::uint32_t rk = p_.op(o).rank;
            if (rk >= by_rank.size()) by_rank.resize(rk + 1);
            by_rank[rk].push_back(o);
        }
        std::vector<std::uint32_t> in_pass(by_rank.size(), 0), row(n, 0), clock;
        std::vector<std::int32_t> column(p_.agents(), -1);
        std::vector<AgentId> chains;
        std::vector<OpId> ops;
        std::vector<std::uint32_t> distinct;
        std::vector<std::uint8_t> ordered;  // per pair of the rank
        std::vector<std::size_t> left;      // the pairs the search left
        std::uint32_t pass = 0;
        std::size_t visits = 0;
        for (const auto& [rank, list] : pairs) {
            if (o_.deadline.passed()) throw LimitReached("time limit (the race check)");
            pairs_checked_ += list.size();
            ordered.assign(list.size(), 0);
            left.clear();
            std::size_t spent = 0;
            for (std::size_t i = 0; i < list.size(); ++i) {
                const OpId x = list[i].earlier, y = list[i].later;
                const auto& xo = p_.op(x);
                const auto& yo = p_.op(y);
                if (xo.agent == yo.agent) {
                    ordered[i] = xo.pos < yo.pos;
                    continue;
                }
                if (on_funnel(x, y)) {
                    ordered[i] = 1;
                    continue;
                }
                const std::size_t limit = std::min(o_.search_visits_per_pair, o_.search_visits - std::min(spent, o_.search_visits));
                const std::optional<bool> found = limit == 0 ? std::nullopt : reaches(rep_[x], y, limit, spent);
                if (found) {
                    ++pairs_searched_;
                    ordered[i] = *found;
                } else {
                    left.push_back(i);
                }
            }
            visits += spent;
            if (!left.empty()) clocks(list, left, ordered, by_rank, pass, in_pass, row, clock, column, chains, ops, distinct);
            for (std::size_t i = 0; i < list.size(); ++i)
                if (!ordered[i]) {
                    const Pair& q = list[i];
                    add(FindingKind::race, q.later,
                        fmt::format("{}: {} {} and {} {} it, with nothing ordering the two (a missing dependency) [data race]",
                                    n_.op(q.later), q.later_writes ? "writes" : "reads", n_.slot(q.slot), n_.op(q.earlier),
                                    q.earlier_writes ? "writes" : "reads"));
                }
        }
        trace("async check: race pairs searched first, {} ops visited", visits);
        r_.race_checked = true;
        r_.race_free = r_.counts[std::size_t(FindingKind::race)] == before;
    }

    /// The second pass of races() over one rank's pairs `left`: vector clocks over the chains of
    /// their ends, then the search without a limit where the clocks do not order a pair.
    void clocks(const std::vector<Pair>& list, const std::vector<std::size_t>& left, std::vector<std::uint8_t>& ordered,
                const std::vector<std::vector<OpId>>& by_rank, std::uint32_t& pass, std::vector<std::uint32_t>& in_pass,
                std::vector<std::uint32_t>& row, std::vector<std::uint32_t>& clock, std::vector<std::int32_t>& column,
                std::vector<AgentId>& chains, std::vector<OpId>& ops, std::vector<std::uint32_t>& distinct) {
        pairs_clocked_ += left.size();
        // the chains of the funnels' ends, and the ranks whose ops the clocks run over
        ++pass;
        chains.clear();
        auto take_rank = [&](std::uint32_t rk) {
            if (rk < in_pass.size()) in_pass[rk] = pass;
        };
        take_rank(list[left.front()].slot.rank);
        for (std::size_t i : left) {
            const Pair& q = list[i];
            const AgentId a = p_.op(rep_[q.earlier]).agent;
            if (column[a] < 0) {
                column[a] = std::int32_t(chains.size());
                chains.push_back(a);
            }
            take_rank(p_.op(q.earlier).rank);
            take_rank(p_.op(q.later).rank);
            take_rank(p_.op(rep_[q.earlier]).rank);
        }
        ops.clear();
        for (std::uint32_t rk = 0; rk < by_rank.size(); ++rk)
            if (in_pass[rk] == pass) ops.insert(ops.end(), by_rank[rk].begin(), by_rank[rk].end());
        std::sort(ops.begin(), ops.end(), [&](OpId a, OpId b) { return ti_[a] < ti_[b]; });
        const std::size_t A = chains.size();
        // row 0: no chain's op before; each op's clock a row, shared with its one predecessor's
        // where the op adds nothing (not on a chain, one distinct row among its predecessors)
        clock.assign(A, 0u);
        bool built = true;
        for (std::size_t k = 0; k < ops.size(); ++k) {
            const OpId o = ops[k];
            if ((k & 4095) == 4095 && o_.deadline.passed()) throw LimitReached("time limit (the race check)");
            const auto& op = p_.op(o);
            distinct.clear();
            for (OpId b : hpred_[o])
                if (in_pass[p_.op(b).rank] == pass && row[b] != 0) distinct.push_back(row[b]);
            std::sort(distinct.begin(), distinct.end());
            distinct.erase(std::unique(distinct.begin(), distinct.end()), distinct.end());
            const std::int32_t own = column[op.agent];
            if (own < 0 && distinct.size() <= 1) {
                row[o] = distinct.empty() ? 0 : distinct.front();
                continue;
            }
            if (clock.size() + A > o_.max_clock_entries) {
                built = false;  // this rank's pairs go to the search
                break;
            }
            const std::size_t at = clock.size();
            clock.resize(at + A, 0u);
            std::uint32_t* mine = &clock[at];
            if (!distinct.empty()) std::copy_n(&clock[std::size_t(distinct.front()) * A], A, mine);
            for (std::size_t d = 1; d < distinct.size(); ++d) {
                const std::uint32_t* theirs = &clock[std::size_t(distinct[d]) * A];
                for (std::size_t t = 0; t < A; ++t) mine[t] = std::max(mine[t], theirs[t]);
            }
            if (own >= 0) mine[own] = op.pos + 1;
            row[o] = std::uint32_t(at / A);
        }
        for (std::size_t i : left) {
            const OpId e = rep_[list[i].earlier], y = list[i].later;
            const auto& eo = p_.op(e);
            if (built && clock[std::size_t(row[y]) * A + std::size_t(column[eo.agent])] >= eo.pos + 1) {
                ordered[i] = 1;
                continue;
            }
            ++pairs_researched_;
            std::size_t visits = 0;
            ordered[i] = *reaches(e, y, std::numeric_limits<std::size_t>::max(), visits);
        }
        for (AgentId a : chains) column[a] = -1;
    }

    /// One run in the topological order; a race-free, deadlock-free program has no other result.
    void replay() {
        const std::size_t n = p_.ops();
        r_.sent.assign(n, {});
        std::map<Slot, Value>& mem = r_.final;
        mem = p_.initial_values();
        std::map<Value, OpId> made_by;  // the first op that made a value counting an atom twice
        auto read = [&](const Slot& s) {
            auto it = mem.find(s);
            return it == mem.end() ? no_data : it->second;
        };
        std::vector<Value> result;
        for (OpId o : r_.order) {
            const auto& op = p_.op(o);
            result.assign(op.lanes.size(), no_data);
            for (std::size_t x = 0; x < op.lanes.size(); ++x) {
                const Lane& lane = op.lanes[x];
                bool any = false;
                Value v = no_data;
                for (const Operand& in : lane.in) {
                    Value w = no_data;
                    if (in.received) {
                        const OpId s = r_.source[o];
                        if (s != no_op && x < r_.sent[s].size()) w = r_.sent[s][x];
                    } else {
                        w = read(in.slot);
                    }
                    v = any ? r_.values.combine(v, w) : w;
                    any = true;
                }
                if (lane.in.size() > 1 && v != no_data) {
                    const auto& a = r_.values.atoms(v);
                    if (std::adjacent_find(a.begin(), a.end()) != a.end()) made_by.try_emplace(v, o);
                }
                result[x] = v;
            }
            for (std::size_t x = 0; x < op.lanes.size(); ++x) {
                for (const Slot& s : op.lanes[x].out) {
                    mem[s] = result[x];
                    r_.writer[s] = o;
                }
                if (op.lanes[x].send) {
                    if (r_.sent[o].size() < op.lanes.size()) r_.sent[o].assign(op.lanes.size(), no_data);
                    r_.sent[o][x] = result[x];
                }
            }
        }
        r_.replayed = true;
        for (const auto& [slot, want] : p_.goals()) {
            const Value have = read(slot);
            if (have == want) continue;
            auto w = r_.writer.find(slot);
            std::string by = ", never written";
            if (w != r_.writer.end()) {
                by = fmt::format(", written by {}", n_.op(w->second));
                if (r_.source[w->second] != no_op) by += fmt::format(", which {} sent", n_.op(r_.source[w->second]));
            }
            std::string gap;
            if (have != no_data && want != no_data) {
                const auto &h = r_.values.atoms(have), &g = r_.values.atoms(want);
                std::vector<Atom> missing, extra;
                std::set_difference(g.begin(), g.end(), h.begin(), h.end(), std::back_inserter(missing));
                std::set_difference(h.begin(), h.end(), g.begin(), g.end(), std::back_inserter(extra));
                if (!missing.empty() && missing.size() < g.size()) gap += "; it misses " + n_.value(missing);
                if (!extra.empty() && extra.size() < h.size()) {
                    // atoms of the goal held more than once are counted twice; others do not belong
                    const bool twice = std::all_of(extra.begin(), extra.end(),
                                                   [&](Atom a) { return std::binary_search(g.begin(), g.end(), a); });
                    gap += twice ? "; it counts " + n_.value(extra) + " twice" : "; it also has " + n_.value(extra);
                }
                if (auto m = made_by.find(have); m != made_by.end())
                    gap += fmt::format(" (first counted twice by {})", n_.op(m->second));
            }
            add(FindingKind::wrong_output, w == r_.writer.end() ? no_op : w->second,
                fmt::format("{} holds {}{}, but it must hold {}{} [wrong output]", n_.slot(slot), value_name(have), by,
                            value_name(want), gap),
                slot);
        }
    }

    const Program& p_;
    const Naming& n_;
    const CheckOptions& o_;
    Report r_;
    std::vector<std::vector<OpId>> preds_, succ_;
    std::vector<std::uint32_t> indeg_;
    std::vector<std::optional<std::string>> stuck_;
    std::vector<bool> unmatched_;  ///< a receive no send matches
    std::vector<bool> done_;
    std::vector<std::pair<OpId, OpId>> progress_only_;  ///< (send, receive) matched on relaxed keys
    // the race check's
    std::vector<std::vector<OpId>> hpred_, hsucc_;  ///< happens-before edges among the ops that run
    std::vector<std::uint32_t> ti_;                 ///< place in r_.order
    std::vector<OpId> fnext_, rep_;                 ///< funnels() (no_op: none)
    std::vector<std::uint32_t> fdist_;
    std::vector<std::uint32_t> seen_;               ///< reaches(): the search's marks
    std::uint32_t stamp_ = 0;
    std::vector<OpId> search_stack_;
    std::size_t pairs_checked_ = 0, pairs_searched_ = 0, pairs_clocked_ = 0, pairs_researched_ = 0;
};

}  // namespace

Report check(const Program& program, const Naming& naming, const CheckOptions& options) {
    // past the deadline the command ends: the checker's arrays (a GB on 16 x 8 GPUs) are left to the
    // operating system, not freed while the limit has passed (support/teardown.hpp)
    auto checker = std::make_shared<ProgramChecker>(program, naming, options);
    try {
        return checker->run();
    } catch (const LimitReached&) {
        bury(std::move(checker));
        throw;
    }
}

}  // namespace collsched::async
