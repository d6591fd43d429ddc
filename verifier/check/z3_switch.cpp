// The Z3 engine's query for routers with switch functions (z3_switch.hpp), written from
// docs/semantics.md ("Switches that reduce and multicast", "Reductions"): the copies waiting in
// every router as bit-vector terms, one per send and per step of arrivals, built by the rules; a
// flag per router send and per step of arrivals; one check that some flag is true.
#include "verifier/check/z3_switch.hpp"

#include <algorithm>
#include <chrono>
#include <map>
#include <optional>
#include <unordered_map>
#include <utility>

#include <fmt/format.h>
#include <z3++.h>

#include "compiler/table/partials.hpp"
#include "compiler/table/step_runs.hpp"
#include "support/budget.hpp"
#include "verifier/check/watchdog.hpp"

namespace collsched::detail {

bool uses_switch_functions(const Model& m) {
    return m.timing == Timing::hop && !m.replicate && (m.multicast_routers || m.combine_routers);
}

namespace {

unsigned width_for(std::uint64_t max_value) {
    unsigned b = 1;
    while (b < 63 && (max_value >> b) != 0) ++b;
    return b;
}

// Conjunction, disjunction and negation that keep the literals of the model's structure out of
// the formula (a router without multicast has no shared copy; a send that cannot be a
// combination combines nothing). The table's values are never folded here: Z3 evaluates them.
z3::expr both(const z3::expr& a, const z3::expr& b) {
    if (a.is_false() || b.is_true()) return a;
    if (b.is_false() || a.is_true()) return b;
    return a && b;
}
z3::expr either(const z3::expr& a, const z3::expr& b) {
    if (a.is_true() || b.is_false()) return a;
    if (b.is_true() || a.is_false()) return b;
    return a || b;
}
z3::expr negate(const z3::expr& a) {
    if (a.is_true()) return a.ctx().bool_val(false);
    if (a.is_false()) return a.ctx().bool_val(true);
    return !a;
}

/// The sum of bit vectors of one width (z3::sum adds integers), as a balanced tree.
z3::expr bv_sum(const z3::expr_vector& xs, const z3::expr& zero) {
    if (xs.empty()) return zero;
    std::vector<z3::expr> level;
    for (unsigned i = 0; i < xs.size(); ++i) level.push_back(xs[i]);
    while (level.size() > 1) {
        std::vector<z3::expr> next;
        for (std::size_t i = 0; i + 1 < level.size(); i += 2) next.push_back(level[i] + level[i + 1]);
        if (level.size() % 2) next.push_back(level.back());
        level = std::move(next);
    }
    return level.front();
}

std::string copies(std::uint64_t n) { return fmt::format("{} cop{}", n, n == 1 ? "y" : "ies"); }

/// One query for one table: per (router, message) the copies waiting there, per router send and
/// per (router, message, step) of arrivals a flag that is true when that one breaks a rule, and
/// one check that some flag is true. One method per rule, called in table order by run().
///
/// The terms are built from the table's numbers only (every count starts at 0 and every arrival
/// adds a numeral), so the formula has no free constant: Z3 decides it by evaluation in its
/// rewriter, linear in the size of the term graph. An earlier form gave every count a fresh
/// constant tied by an equation and passed the disjunction as an assumption; Z3's incremental
/// core then case-split on the if-then-elses (110 s for NCCL's NVLS allreduce on dgx_h100_nvls
/// at 32 pieces, 4,352 transfers, against 0.5 s now, building included).
class SwitchQuery {
public:
    SwitchQuery(const SendTable& t, unsigned timeout_ms)
        : t_(t), topo_(*t.topology), ms_(t.messages()), timeout_ms_(timeout_ms),
          deadline_(Clock::now() + std::chrono::milliseconds(timeout_ms)), multicast_(t.model.multicast_routers),
          combine_(t.model.combine_routers), none_(t.model.queues == QueueKind::none), W_(width_for(t.transfers.size() + 2) + 1),
          solver_(c_), zero_(c_.bv_val(0, W_)), one_(c_.bv_val(1, W_)), no_(c_.bool_val(false)) {
        z3::params prm(c_);
        prm.set("timeout", timeout_ms);
        solver_.set(prm);
    }

    SwitchAnswer run() {
        if (!fits_memory()) return std::move(ans_);
        const auto& xs = t_.transfers;
        std::size_t since_poll = 0;
        const bool whole = for_each_step_run(xs, [&](Step, std::size_t b, std::size_t e) {
            // The sends of a step see the copies that arrived before it; then its arrivals.
            for (std::size_t k = b; k < e; ++k)
                if (!topo_.is_processor(topo_.channel(xs[k].channel).from)) send(k);
            arrivals(b, e);
            if ((since_poll += e - b) < 4096) return true;
            since_poll = 0;
            return !stop("while the switches were encoded");
        });
        if (!whole) return std::move(ans_);
        if (none_) queue_flags();
        if (bads_.empty()) return std::move(ans_);
        if (solve()) name_violations();
        return std::move(ans_);
    }

private:
    /// One router's copies of one message.
    struct Copies {
        explicit Copies(const z3::expr& zero) : count(zero), took(zero.ctx().bool_val(false)) {}
        z3::expr count;              ///< the copies waiting now (a term: Z3 evaluates it)
        std::uint64_t received = 0;  ///< copies that arrived in the steps before the one encoded
        Step took_step = 0;          ///< the step `took` is about
        z3::expr took;               ///< multicast: a send of took_step took a copy or combined
        struct Arrived {
            Step step;
            std::uint64_t copies;
            ChannelId channel;  ///< the first it arrived on
        };
        std::vector<Arrived> arrived;                  ///< per step with arrivals, in step order
        std::map<Step, std::vector<z3::expr>> taken;   ///< per step: when each send there takes a copy
    };

    struct Bad {
        z3::expr flag;
        Violation v;
        std::optional<z3::expr> leave = {};  ///< queues: the copies that leave in the step after they arrived
    };

    static std::uint64_t key(Node r, std::uint32_t m) { return (std::uint64_t{idx(r)} << 32) | m; }
    Copies& at(Node r, MessageId m) { return copies_.try_emplace(key(r, idx(m)), zero_).first->second; }
    std::string node(Node n) const { return topo_.node_name(n); }

    /// The copies after a send that takes one when `take` holds.
    z3::expr take_one(const z3::expr& count, const z3::expr& take) const {
        return take.is_false() ? count : z3::ite(take, count - one_, count);
    }

    /// True (and the answer unknown) once the time limit or the memory budget is reached.
    bool stop(const char* where) {
        if (Clock::now() >= deadline_) {
            ans_.unknown = true;
            ans_.reason = fmt::format("the time left ({} ms) ran out {}", timeout_ms_, where);
        } else if (MemoryBudget::standard().exceeded(0.9)) {
            ans_.unknown = true;
            ans_.reason = fmt::format("the memory budget was reached {}", where);
        }
        return ans_.unknown;
    }

    /// What Z3 must hold grows with the router sends and arrivals, and with the partials a
    /// combination may take (a few terms each); estimated against the memory budget before
    /// anything is built, at 512 bytes per item (measured: about 160, NCCL's NVLS allreduce on
    /// dgx_h100_nvls at 256 pieces, 165,888 items, 26 MB at its peak).
    bool fits_memory() {
        std::uint64_t terms = 0;
        std::unordered_map<std::uint64_t, std::uint64_t> partials;  // (router, chunk) -> arrivals of partials (a bound)
        for (const Transfer& x : t_.transfers) {
            const Channel& ch = topo_.channel(x.channel);
            if (!topo_.is_processor(ch.to)) {
                ++terms;
                if (combine_ && topo_.can_reduce(ch.to))
                    if (auto pv = partial_of(ms_, x.message)) ++partials[key(ch.to, pv->chunk)];
            }
            if (topo_.is_processor(ch.from)) continue;
            ++terms;
            if (combine_ && topo_.can_reduce(ch.from))
                if (auto pv = partial_of(ms_, x.message); pv && pv->sources.size() > 1) {
                    auto it = partials.find(key(ch.from, pv->chunk));
                    if (it != partials.end()) terms += std::min<std::uint64_t>(it->second, pv->sources.size());
                }
        }
        const std::uint64_t bytes = mul_sat(terms, 512);
        if (std::string why = MemoryBudget::standard().refusal(bytes, fmt::format("the switches' encoding ({} terms)", terms)); !why.empty()) {
            ans_.unknown = true;
            ans_.reason = why;
            return false;
        }
        return true;
    }

    /// Router send k. Under multicast (a router that multicasts) a send of a message shares the
    /// copy an earlier send of it took in the same step (the first, in table order) and takes
    /// nothing itself. Otherwise it takes a waiting copy (first in, first out: the count is what
    /// matters), or, with none waiting, a partial at a router that reduces is a combination
    /// (combine()); a send that does neither is a causality violation when no copy of the
    /// message reached the router in an earlier step, else a replication violation.
    void send(std::size_t k) {
        const Transfer& x = t_.transfers[k];
        const Node r = topo_.channel(x.channel).from;
        Copies& c = at(r, x.message);
        const bool shares = multicast_ && topo_.can_multicast(r);
        const z3::expr took = shares && c.took_step == x.step ? c.took : no_;
        const z3::expr own = negate(took);  // this send needs a copy of its own
        const z3::expr has = z3::ugt(c.count, zero_);
        const z3::expr take = both(own, has);
        z3::expr combined = no_;
        if (combine_ && topo_.can_reduce(r))
            if (auto pv = partial_of(ms_, x.message); pv && pv->sources.size() > 1) combined = combine(x, r, *pv, both(own, negate(has)));
        c.count = take_one(c.count, take);  // `c` stays valid: unordered_map keeps references
        c.taken[x.step].push_back(take);
        if (shares) {
            c.took = either(took, either(take, combined));
            c.took_step = x.step;
        }
        const z3::expr fails = both(own, both(negate(has), negate(combined)));
        if (fails.is_false()) return;
        const std::string m = ms_.name(x.message);
        if (c.received == 0)
            bads_.push_back({fails, {Property::causality, x.step, x.channel, r, {x.message},
                                     fmt::format("{} forwards {} in step {} but has not received it", node(r), m, x.step)}});
        else
            bads_.push_back({fails, {Property::replication, x.step, x.channel, r, {x.message},
                                     fmt::format("{} forwards {} in step {} but received only {} and has sent them on or combined them; "
                                                 "routers do not replicate (replicate=no)",
                                                 node(r), m, x.step, copies(c.received))}});
    }

    /// combine=routers at a router that reduces, which sends the partial X of send x without a
    /// copy of it (when `may` holds). Its inputs are the partials of X's chunk that the router
    /// holds copies of and that lie inside X (a copy of X itself would have been forwarded). It
    /// combines them when their sizes add up to |X| and every source of X is in one of them: then
    /// they are pairwise disjoint and make exactly X, nothing counted twice, nothing missing; it
    /// takes one copy of each. Returns the condition under which the send is a combination.
    z3::expr combine(const Transfer& x, Node r, const PartialValue& X, const z3::expr& may) {
        auto list = partials_at_.find(key(r, X.chunk));
        if (list == partials_at_.end() || may.is_false()) return no_;
        std::vector<std::pair<MessageId, z3::expr>> inputs;  // (partial, held now)
        std::vector<std::vector<z3::expr>> cover(X.sources.size());
        z3::expr_vector sizes(c_);
        const unsigned SW = width_for(std::uint64_t{X.sources.size()} * (list->second.size() + 1)) + 1;
        for (const auto& [y, sources] : list->second) {
            if (y == x.message || !std::includes(X.sources.begin(), X.sources.end(), sources.begin(), sources.end())) continue;
            const z3::expr held = z3::ugt(at(r, y).count, zero_);
            inputs.emplace_back(y, held);
            sizes.push_back(z3::ite(held, c_.bv_val(sources.size(), SW), c_.bv_val(0, SW)));
            for (std::uint32_t s : sources)
                cover[std::lower_bound(X.sources.begin(), X.sources.end(), s) - X.sources.begin()].push_back(held);
        }
        z3::expr_vector valid(c_);
        for (const auto& holders : cover) {
            if (holders.empty()) return no_;  // a source of X no partial at the router has
            z3::expr_vector any(c_);
            for (const z3::expr& h : holders) any.push_back(h);
            valid.push_back(z3::mk_or(any));
        }
        valid.push_back(bv_sum(sizes, c_.bv_val(0, SW)) == c_.bv_val(X.sources.size(), SW));
        z3::expr combined = both(may, z3::mk_and(valid));
        for (const auto& [y, held] : inputs) {
            Copies& cy = at(r, y);
            const z3::expr take = combined && held;
            cy.count = take_one(cy.count, take);
            cy.taken[x.step].push_back(take);
        }
        return combined;
    }

    /// The arrivals of one step at routers: per (router, message) the copies add up; the first
    /// copy of a partial at a router that reduces makes it an input for later combinations.
    void arrivals(std::size_t b, std::size_t e) {
        const auto& xs = t_.transfers;
        std::map<std::uint64_t, std::pair<std::uint64_t, ChannelId>> step;  // (router, message) -> (copies, first channel)
        for (std::size_t k = b; k < e; ++k) {
            const Node to = topo_.channel(xs[k].channel).to;
            if (topo_.is_processor(to)) continue;
            ++step.try_emplace(key(to, idx(xs[k].message)), 0, xs[k].channel).first->second.first;
        }
        for (const auto& [rm, got] : step) {
            const Node r{static_cast<std::uint32_t>(rm >> 32)};
            const MessageId m{static_cast<std::uint32_t>(rm)};
            Copies& c = at(r, m);
            if (c.received == 0 && combine_ && topo_.can_reduce(r))
                if (auto pv = partial_of(ms_, m)) partials_at_[key(r, pv->chunk)].emplace_back(m, pv->sources);
            c.count = c.count + c_.bv_val(got.first, W_);
            c.received += got.first;
            c.arrived.push_back({xs[b].step, got.first, got.second});
        }
    }

    /// queues=none: the copies of (router, message) that arrive in step t all leave in step t+1,
    /// sent on or combined. With first in, first out this holds for every copy exactly when, for
    /// every t, the sends of t+1 take at least as many copies as arrived in t (docs/z3-engine.md,
    /// "Switches"): the flag of (router, message, t) is that they take fewer.
    void queue_flags() {
        std::vector<std::uint64_t> keys;
        for (const auto& [k, c] : copies_) keys.push_back(k);
        std::sort(keys.begin(), keys.end());
        for (std::uint64_t k : keys) {
            Copies& c = copies_.at(k);
            const Node r{static_cast<std::uint32_t>(k >> 32)};
            const MessageId m{static_cast<std::uint32_t>(k)};
            for (const Copies::Arrived& a : c.arrived) {
                z3::expr_vector leaving(c_);
                if (auto it = c.taken.find(a.step + 1); it != c.taken.end())
                    for (const z3::expr& take : it->second) leaving.push_back(z3::ite(take, one_, zero_));
                const z3::expr leave = bv_sum(leaving, zero_);
                Violation v{Property::queues, a.step + 1, a.channel, r, {m},
                            fmt::format("{} entered {} in step {}: {}", ms_.name(m), node(r), a.step, copies(a.copies))};
                bads_.push_back({z3::ult(leave, c_.bv_val(a.copies, W_)), std::move(v), leave});
            }
        }
    }

    /// Some flag true? Asserted, not assumed, so that Z3 simplifies the ground formula before
    /// anything else. A watchdog interrupts the context at the limit (Z3's own limit is not
    /// checked everywhere); the answer is then unknown. True when there are violations to name.
    bool solve() {
        z3::expr_vector any(c_);
        for (const Bad& b : bads_) any.push_back(b.flag);
        Watchdog watchdog([this] { c_.interrupt(); }, timeout_ms_);
        solver_.add(z3::mk_or(any));
        switch (solver_.check()) {
            case z3::unsat: return false;
            case z3::unknown:
                ans_.unknown = true;
                ans_.reason = solver_.reason_unknown();
                return false;
            case z3::sat: break;
        }
        return true;
    }

    /// Every flag the model makes true is a violation (the model is the only one: every constant
    /// is a function of the table).
    void name_violations() {
        z3::model model = solver_.get_model();
        for (Bad& b : bads_) {
            if (!model.eval(b.flag, true).is_true()) continue;
            switch (b.v.property) {
                case Property::causality: ans_.causality.push_back(std::move(b.v)); break;
                case Property::replication: ans_.replication.push_back(std::move(b.v)); break;
                default: {
                    std::uint64_t left = 0;
                    const z3::expr v = model.eval(*b.leave, true);
                    if (!v.is_numeral() || !Z3_get_numeral_uint64(c_, v, &left)) throw z3::exception("the model gives no count of a router's copies");
                    b.v.detail += fmt::format(", of which {} leave{} in step {} (sent on or combined); with queues=none every copy leaves "
                                              "in the step after it arrives",
                                              left, left == 1 ? "s" : "", b.v.step);
                    ans_.queues.push_back(std::move(b.v));
                }
            }
        }
    }

    const SendTable& t_;
    const Topology& topo_;
    const Messages ms_;
    const unsigned timeout_ms_;
    const Clock::time_point deadline_;
    const bool multicast_, combine_, none_;
    const unsigned W_;  ///< bits of every count: more than the table has transfers
    z3::context c_;
    z3::solver solver_;
    const z3::expr zero_, one_, no_;
    std::unordered_map<std::uint64_t, Copies> copies_;  ///< per (router, message)
    /// combine=routers: per (router, chunk) the partials that have reached the router (with their
    /// sources), in order of first arrival: the inputs a combination may take.
    std::unordered_map<std::uint64_t, std::vector<std::pair<MessageId, std::vector<std::uint32_t>>>> partials_at_;
    std::vector<Bad> bads_;
    SwitchAnswer ans_;
};

}  // namespace

SwitchAnswer z3_switches(const SendTable& t, unsigned timeout_ms) { return SwitchQuery(t, timeout_ms).run(); }

}  // namespace collsched::detail
