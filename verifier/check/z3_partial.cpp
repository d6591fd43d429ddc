#include "verifier/check/z3_partial.hpp"

#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <z3++.h>

#include "compiler/table/partials.hpp"
#include "support/budget.hpp"
#include "verifier/check/watchdog.hpp"

namespace collsched::detail {

namespace {

/// The bit vector of width P with the bits of `sources` set: one numeral made from its bits
/// (a concatenation of 64-bit words made P/64 terms for Z3 to simplify, and to free).
z3::expr set_bits(z3::context& c, std::uint32_t P, const std::vector<std::uint32_t>& sources) {
    std::unique_ptr<bool[]> bits(new bool[P]());
    for (std::uint32_t s : sources) bits[s] = true;
    Z3_ast a = Z3_mk_bv_numeral(c, P, bits.get());
    c.check_error();
    return z3::expr(c, a);
}

/// One query for one table: the buffer constants of every (processor, chunk), a flag per send of
/// a partial, per arrival and per goal that is true when that one breaks the rule, and one check
/// that some flag is true. One method per part, called in order by run().
class PartialsQuery {
public:
    PartialsQuery(const SendTable& t, unsigned timeout_ms)
        : t_(t), topo_(*t.topology), ms_(t.messages()), P_(topo_.processors()), C_(table_chunks(t)), timeout_ms_(timeout_ms),
          solver_(c_), zero_(c_.bv_val(0, P_)) {
        z3::params prm(c_);
        prm.set("timeout", timeout_ms);
        solver_.set(prm);
    }

    PartialAnswer run() {
        initial_buffers();
        if (!fits_memory()) return std::move(ans_);
        // Sends first need the constants of earlier steps only; arrivals extend the sequences in
        // table order, step by step.
        const auto& xs = t_.transfers;
        for (std::size_t i = 0; i < xs.size();) {
            std::size_t end = i;
            while (end < xs.size() && xs[end].step == xs[i].step) ++end;
            for (std::size_t k = i; k < end; ++k) send(k);
            for (std::size_t k = i; k < end; ++k) arrival(k);
            i = end;
        }
        if (!goals()) return std::move(ans_);
        if (bads_.empty()) return std::move(ans_);
        if (solve()) name_violations();
        return std::move(ans_);
    }

private:
    struct Bad {
        z3::expr flag;
        Violation v;
        bool completeness;
        std::optional<z3::expr> buffer;  ///< counted twice: the buffer before the arrival, named from the model
        std::uint32_t chunk = 0;
        std::uint32_t goal_hi = 0;  ///< completeness: the goal a({0..goal_hi})
        bool send = false;          ///< a send of a partial not held: name the buffer only
    };

    std::vector<z3::expr>& buffer(Node p, std::uint32_t chunk) { return buf_[std::size_t{idx(p)} * C_ + chunk]; }
    std::string_view unit() const { return t_.model.timing == Timing::hop ? "step" : "round"; }

    /// The buffer constants of (processor, chunk): index 0 is the initial {p}. The initial
    /// buffers are values, not constants: a buffer no partial reaches stays a value, and its goal
    /// is decided by Z3's simplifier without a P-bit variable to bit-blast (a table of one
    /// transfer on linear:4096 made 4096 such variables: 36 s and 1.9 GB at P = 2048).
    void initial_buffers() {
        buf_.resize(std::size_t{P_} * C_);
        for (std::uint32_t p = 0; p < P_; ++p)
            for (std::uint32_t ch = 0; ch < C_; ++ch) buf_[std::size_t{p} * C_ + ch].push_back(set_bits(c_, P_, {p}));
    }

    /// What Z3 must bit-blast grows with P times the arrivals of partials (a P-bit variable each,
    /// and its comparisons); estimated against the memory budget before anything is built
    /// (about 500 bytes per bit, measured at P = 512 .. 2048).
    bool fits_memory() {
        std::uint64_t arrivals = 0;
        for (const Transfer& x : t_.transfers)
            if (partial_of(ms_, x.message) && topo_.is_processor(topo_.channel(x.channel).to)) ++arrivals;
        const std::uint64_t bytes = mul_sat(mul_sat(P_, mul_sat(arrivals, 4)), 500);
        if (std::string why = MemoryBudget::standard().refusal(
                bytes, fmt::format("the buffer rule's encoding ({} arrivals of partials, {}-bit buffers)", arrivals, P_));
            !why.empty()) {
            ans_.unknown = true;
            ans_.reason = why;
            return false;
        }
        return true;
    }

    /// Transfer k, when a processor sends a partial: held when its buffer equals the partial.
    void send(std::size_t k) {
        const Transfer& x = t_.transfers[k];
        const Channel& ch = topo_.channel(x.channel);
        auto pv = partial_of(ms_, x.message);
        if (!pv || !topo_.is_processor(ch.from)) return;
        ans_.checked.push_back(k);
        const auto& seq = buffer(ch.from, pv->chunk);
        z3::expr flag = c_.bool_const(fmt::format("unheld_{}", k).c_str());
        solver_.add(flag == (seq.back() != set_bits(c_, P_, pv->sources)));
        bads_.push_back({flag,
                         {Property::causality, x.step, x.channel, ch.from, {x.message},
                          fmt::format("processor {} sends {} in {} {} but its buffer holds ", topo_.node_name(ch.from),
                                      ms_.name(x.message), unit(), x.step)},
                         false, seq.back(), pv->chunk, 0, true});
    }

    /// Transfer k, when a partial arrives at a processor: the buffer's next constant by the rule,
    /// and the flag of an arrival that would count a contribution twice.
    void arrival(std::size_t k) {
        const Transfer& x = t_.transfers[k];
        const Channel& ch = topo_.channel(x.channel);
        auto pv = partial_of(ms_, x.message);
        if (!pv || !topo_.is_processor(ch.to)) return;
        auto& seq = buffer(ch.to, pv->chunk);
        z3::expr prev = seq.back(), in = set_bits(c_, P_, pv->sources);
        z3::expr next = c_.bv_const(fmt::format("buf_{}_{}_{}", idx(ch.to), pv->chunk, seq.size()).c_str(), P_);
        z3::expr twice = c_.bool_const(fmt::format("twice_{}", k).c_str());
        z3::expr disjoint = (prev & in) == zero_, covers = (prev & ~in) == zero_;
        solver_.add(twice == (!disjoint && !covers));
        solver_.add(next == z3::ite(disjoint, prev | in, z3::ite(covers, in, prev)));
        seq.push_back(next);
        bads_.push_back({twice,
                         {Property::causality, x.step, x.channel, ch.to, {x.message},
                          fmt::format("processor {} receives {} in {} {} while its buffer holds ", topo_.node_name(ch.to),
                                      ms_.name(x.message), unit(), x.step)},
                         false, prev, pv->chunk, 0});
    }

    /// A flag per goal: the last constant of its buffer is not the goal's set. The time limit
    /// covers building the formula too (P goals of P bits each take seconds at P = 4096): false,
    /// and the answer unknown, when it passes.
    bool goals() {
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms_);
        std::uint64_t built = 0;
        bool late = false;
        t_.collective.for_each_partial_goal(P_, C_, [&](std::uint32_t ch, std::uint32_t hi, Node p) {
            if (late || (++built % 64 == 0 && std::chrono::steady_clock::now() >= deadline)) {
                late = true;
                return;
            }
            const auto& seq = buffer(p, ch);
            SourceSet want = SourceSet::range(0, hi);
            z3::expr flag = c_.bool_const(fmt::format("goal_{}_{}", idx(p), ch).c_str());
            solver_.add(flag == (seq.back() != set_bits(c_, P_, want.items())));
            std::vector<MessageId> ids;
            if (auto id = find_partial(ms_, want, ch)) ids.push_back(*id);
            bads_.push_back({flag,
                             {Property::completeness, 0, std::nullopt, p, std::move(ids),
                              fmt::format("processor {} ends with ", topo_.node_name(p))},
                             true, seq.back(), ch, hi});
        });
        if (late) {
            ans_.unknown = true;
            ans_.reason = fmt::format("the time limit of {} ms was reached while the buffer rule was encoded", timeout_ms_);
            return false;
        }
        return true;
    }

    /// Some flag true? Z3's own time limit is not checked everywhere (its preprocessing ran 30 s
    /// past a 10 s limit): a watchdog interrupts the context at the limit, and the answer is
    /// unknown. True when there are violations to name.
    bool solve() {
        z3::expr_vector any(c_);
        for (const Bad& b : bads_) any.push_back(b.flag);
        Watchdog watchdog([this] { c_.interrupt(); }, timeout_ms_);
        switch (solver_.check(z3::expr_vector([&] {
            z3::expr_vector v(c_);
            v.push_back(z3::mk_or(any));
            return v;
        }()))) {
            case z3::unsat: return false;
            case z3::unknown:
                ans_.unknown = true;
                ans_.reason = solver_.reason_unknown();
                return false;
            case z3::sat: break;
        }
        return true;
    }

    /// The buffers of the first violations of each kind are read from the model and named; the
    /// rest are counted (the report shows the first 20 anyway), so that a table whose every
    /// processor fails does not read P buffers of P bits.
    void name_violations() {
        z3::model model = solver_.get_model();
        constexpr std::size_t detailed = 256;
        std::size_t shown[2] = {0, 0};
        for (Bad& b : bads_) {
            if (!model.eval(b.flag, true).is_true()) continue;
            if (b.buffer && shown[b.completeness]++ >= detailed) {
                b.v.detail += b.completeness ? fmt::format("another partial than {}", partial_name(ms_, SourceSet::range(0, b.goal_hi), b.chunk))
                              : b.send        ? "another partial"
                                              : "a partial it shares contributions with";
            } else if (b.buffer) {
                name_buffer(model, b);
            }
            (b.completeness ? ans_.completeness : ans_.causality).push_back(std::move(b.v));
        }
    }

    /// Names the buffer and the contributions counted twice from the model. The buffer's value
    /// is read once as a numeral (one model evaluation per bit took P^2 evaluations when every
    /// processor's goal fails: 25 s at P = 4096).
    void name_buffer(z3::model& model, Bad& b) {
        const z3::expr value = model.eval(*b.buffer, true);
        if (!value.is_numeral()) throw z3::exception("the model gives no value of a buffer");
        const std::string bits = Z3_get_numeral_binary_string(c_, value);  // most significant first
        std::vector<std::uint32_t> held;
        for (std::size_t k = 0; k < bits.size() && k < P_; ++k)
            if (bits[bits.size() - 1 - k] == '1') held.push_back(static_cast<std::uint32_t>(k));
        if (b.send) {
            b.v.detail += partial_name(ms_, SourceSet(held), b.chunk);
        } else if (b.completeness) {
            SourceSet want = SourceSet::range(0, b.goal_hi);
            b.v.detail += fmt::format("{} but needs {}: {}", partial_name(ms_, SourceSet(held), b.chunk), partial_name(ms_, want, b.chunk),
                                      goal_gap(SourceSet(held), want));
        } else {
            SourceSet buffer(held);
            std::string twice;
            apply_arrival(buffer, partial_of(ms_, b.v.messages[0])->sources, &twice);
            b.v.detail += fmt::format("{}: combining them counts {} twice", partial_name(ms_, SourceSet(held), b.chunk), twice);
        }
    }

    const SendTable& t_;
    const Topology& topo_;
    const Messages ms_;
    const std::uint32_t P_, C_;
    const unsigned timeout_ms_;
    z3::context c_;
    z3::solver solver_;
    const z3::expr zero_;
    std::vector<std::vector<z3::expr>> buf_;  ///< per (processor, chunk): the buffer's constants in arrival order
    std::vector<Bad> bads_;
    PartialAnswer ans_;
};

}  // namespace

PartialAnswer z3_partials(const SendTable& t, unsigned timeout_ms) { return PartialsQuery(t, timeout_ms).run(); }

}  // namespace collsched::detail
