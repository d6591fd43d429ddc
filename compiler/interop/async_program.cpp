#include "compiler/interop/async_program.hpp"

#include <algorithm>
#include <unordered_map>

#include <fmt/format.h>

#include "support/assert.hpp"

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
        if (!r_.finishes) deadlock();
        races();
        if (r_.finishes && r_.race_free) replay();
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

    /// Vector clocks per rank whose slots are accessed: clock[o][a] = how many ops of agent a
    /// happen before or at o, over the agents that access that rank's slots.
    void races() {
        const std::size_t n = p_.ops();
        std::map<std::uint32_t, std::vector<AgentId>> agents_of;  // rank -> agents touching its slots
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
                agents_of[acc[i].slot.rank].push_back(p_.op(o).agent);
                i = j;
            }
        }
        (void)n;
        std::sort(progress_only_.begin(), progress_only_.end());
        for (auto& [rank, list] : agents_of) {
            std::sort(list.begin(), list.end());
            list.erase(std::unique(list.begin(), list.end()), list.end());
            if (r_.order.size() * list.size() > o_.max_clock_entries) {
                add(FindingKind::reader, no_op,
                    fmt::format("data races not checked: the vector clocks of rank {} would need {} entries (more than {})",
                                rank, r_.order.size() * list.size(), o_.max_clock_entries));
                return;
            }
        }
        const std::size_t before = r_.counts[std::size_t(FindingKind::race)];
        // one buffer for every rank's clocks, each row written in full before it is read (the first
        // predecessor's row copied, the others joined): no zeroing of ops x agents per rank (that
        // and its page faults were most of an MSCCL++ export's time on 16 GPUs)
        std::size_t widest = 0;
        for (const auto& [rank, list] : agents_of) widest = std::max(widest, list.size());
        std::vector<std::uint32_t> clock(p_.ops() * widest);
        for (const auto& [rank, list] : agents_of) {
            const std::size_t A = list.size();
            std::vector<std::int32_t> index(p_.agents(), -1);
            for (std::size_t i = 0; i < A; ++i) index[list[i]] = std::int32_t(i);
            for (OpId o : r_.order) {
                std::uint32_t* mine = &clock[std::size_t(o) * A];
                bool first = true;
                for (OpId b : preds_[o]) {
                    if (!progress_only_.empty() &&
                        std::binary_search(progress_only_.begin(), progress_only_.end(), std::pair(b, o)))
                        continue;  // a relaxed match: progress, no memory order
                    const std::uint32_t* theirs = &clock[std::size_t(b) * A];
                    if (first) std::copy(theirs, theirs + A, mine);
                    else
                        for (std::size_t t = 0; t < A; ++t) mine[t] = std::max(mine[t], theirs[t]);
                    first = false;
                }
                if (first) std::fill(mine, mine + A, 0u);
                const auto& op = p_.op(o);
                if (index[op.agent] >= 0) mine[index[op.agent]] = op.pos + 1;
            }
            auto before_ = [&](OpId a, OpId b) {
                const auto& x = p_.op(a);
                return clock[std::size_t(b) * A + std::size_t(index[x.agent])] >= x.pos + 1;
            };
            for (auto it = per_slot.lower_bound(Slot{rank, 0, 0}); it != per_slot.end() && it->first.rank == rank; ++it) {
                const Slot s = it->first;
                OpId last_write = no_op;
                std::vector<OpId> reads;
                for (const Access& a : it->second) {
                    auto race = [&](OpId other) {
                        add(FindingKind::race, a.op,
                            fmt::format("{}: {} {} and {} {} it, with nothing ordering the two (a missing dependency) "
                                        "[data race]",
                                        n_.op(a.op), a.write ? "writes" : "reads", n_.slot(s), n_.op(other),
                                        std::find_if(it->second.begin(), it->second.end(),
                                                     [&](const Access& x) { return x.op == other; })
                                                ->write
                                            ? "writes"
                                            : "reads"));
                    };
                    if (last_write != no_op && !before_(last_write, a.op)) race(last_write);
                    if (a.write) {
                        for (OpId rd : reads)
                            if (!before_(rd, a.op)) race(rd);
                        last_write = a.op;
                        reads.clear();
                    } else {
                        reads.push_back(a.op);
                    }
                }
            }
        }
        r_.race_checked = true;
        r_.race_free = r_.counts[std::size_t(FindingKind::race)] == before;
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
};

}  // namespace

Report check(const Program& program, const Naming& naming, const CheckOptions& options) {
    return ProgramChecker(program, naming, options).run();
}

}  // namespace collsched::async
