#include "verifier/z3_partial.hpp"

#include <chrono>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <thread>

#include <fmt/format.h>
#include <z3++.h>

#include "compiler/partials.hpp"
#include "support/budget.hpp"

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

/// Interrupts a Z3 context when a time limit passes, from its own thread; stops when destroyed.
class Watchdog {
public:
    Watchdog(z3::context& c, unsigned timeout_ms)
        : thread_([this, &c, timeout_ms] {
              std::unique_lock lock(mutex_);
              if (!done_cv_.wait_for(lock, std::chrono::milliseconds(timeout_ms), [this] { return done_; })) c.interrupt();
          }) {}
    ~Watchdog() {
        {
            std::lock_guard lock(mutex_);
            done_ = true;
        }
        done_cv_.notify_all();
        thread_.join();
    }
    Watchdog(const Watchdog&) = delete;
    Watchdog& operator=(const Watchdog&) = delete;

private:
    std::mutex mutex_;
    std::condition_variable done_cv_;
    bool done_ = false;
    std::thread thread_;
};

}  // namespace

PartialAnswer z3_partials(const SendTable& t, unsigned timeout_ms) {
    PartialAnswer ans;
    const Topology& topo = *t.topology;
    const Messages ms = t.messages();
    const std::uint32_t P = topo.processors(), C = table_chunks(t);
    z3::context c;
    z3::solver solver(c);
    z3::params prm(c);
    prm.set("timeout", timeout_ms);
    solver.set(prm);
    const z3::expr zero = c.bv_val(0, P);
    // The buffer constants of (processor, chunk): index 0 is the initial {p}.
    std::vector<std::vector<z3::expr>> buf(std::size_t{P} * C);
    std::vector<std::vector<Step>> at_step(std::size_t{P} * C);  // step of each constant (0 initially)
    // The initial buffers are values, not constants: a buffer no partial reaches stays a value,
    // and its goal is decided by Z3's simplifier without a P-bit variable to bit-blast (a table of
    // one transfer on linear:4096 made 4096 such variables: 36 s and 1.9 GB at P = 2048).
    for (std::uint32_t p = 0; p < P; ++p)
        for (std::uint32_t ch = 0; ch < C; ++ch) {
            buf[std::size_t{p} * C + ch].push_back(set_bits(c, P, {p}));
            at_step[std::size_t{p} * C + ch].push_back(0);
        }
    // What Z3 must bit-blast grows with P times the arrivals of partials (a P-bit variable each,
    // and its comparisons); estimated against the memory budget before anything is built
    // (about 500 bytes per bit, measured at P = 512 .. 2048).
    {
        std::uint64_t arrivals = 0;
        for (const Transfer& x : t.transfers)
            if (partial_of(ms, x.message) && topo.is_processor(topo.channel(x.channel).to)) ++arrivals;
        const std::uint64_t bytes = mul_sat(mul_sat(P, mul_sat(arrivals, 4)), 500);
        if (std::string why = MemoryBudget::standard().refusal(
                bytes, fmt::format("the buffer rule's encoding ({} arrivals of partials, {}-bit buffers)", arrivals, P));
            !why.empty()) {
            ans.unknown = true;
            ans.reason = why;
            return ans;
        }
    }
    struct Bad {
        z3::expr flag;
        Violation v;
        bool completeness;
        std::optional<z3::expr> buffer;  ///< counted twice: the buffer before the arrival, named from the model
        std::uint32_t chunk = 0;
        std::uint32_t goal_hi = 0;  ///< completeness: the goal a({0..goal_hi})
        bool send = false;          ///< a send of a partial not held: name the buffer only
    };
    std::vector<Bad> bads;
    const auto& xs = t.transfers;
    // Sends first need the constants of earlier steps only; arrivals extend the sequences in
    // table order, step by step.
    for (std::size_t i = 0; i < xs.size();) {
        std::size_t end = i;
        while (end < xs.size() && xs[end].step == xs[i].step) ++end;
        for (std::size_t k = i; k < end; ++k) {
            const Transfer& x = xs[k];
            const Channel& ch = topo.channel(x.channel);
            auto pv = partial_of(ms, x.message);
            if (!pv || !topo.is_processor(ch.from)) continue;
            ans.checked.push_back(k);
            const auto& seq = buf[std::size_t{idx(ch.from)} * C + pv->chunk];
            z3::expr flag = c.bool_const(fmt::format("unheld_{}", k).c_str());
            solver.add(flag == (seq.back() != set_bits(c, P, pv->sources)));
            bads.push_back({flag,
                            {Property::causality, x.step, x.channel, ch.from, {x.message},
                             fmt::format("processor {} sends {} in {} {} but its buffer holds ", topo.node_name(ch.from),
                                         ms.name(x.message), t.model.timing == Timing::hop ? "step" : "round", x.step)},
                            false, seq.back(), pv->chunk, 0, true});
        }
        for (std::size_t k = i; k < end; ++k) {
            const Transfer& x = xs[k];
            const Channel& ch = topo.channel(x.channel);
            auto pv = partial_of(ms, x.message);
            if (!pv || !topo.is_processor(ch.to)) continue;
            const std::size_t key = std::size_t{idx(ch.to)} * C + pv->chunk;
            auto& seq = buf[key];
            z3::expr prev = seq.back(), in = set_bits(c, P, pv->sources);
            z3::expr next = c.bv_const(fmt::format("buf_{}_{}_{}", idx(ch.to), pv->chunk, seq.size()).c_str(), P);
            z3::expr twice = c.bool_const(fmt::format("twice_{}", k).c_str());
            z3::expr disjoint = (prev & in) == zero, covers = (prev & ~in) == zero;
            solver.add(twice == (!disjoint && !covers));
            solver.add(next == z3::ite(disjoint, prev | in, z3::ite(covers, in, prev)));
            seq.push_back(next);
            at_step[key].push_back(x.step);
            bads.push_back({twice,
                            {Property::causality, x.step, x.channel, ch.to, {x.message},
                             fmt::format("processor {} receives {} in {} {} while its buffer holds ", topo.node_name(ch.to),
                                         ms.name(x.message), t.model.timing == Timing::hop ? "step" : "round", x.step)},
                            false, prev, pv->chunk, 0});
        }
        i = end;
    }
    // The time limit covers building the formula too: P goals of P bits each take seconds at P = 4096.
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
    std::uint64_t built = 0;
    bool late = false;
    t.collective.for_each_partial_goal(P, C, [&](std::uint32_t ch, std::uint32_t hi, Node p) {
        if (late || (++built % 64 == 0 && std::chrono::steady_clock::now() >= deadline)) {
            late = true;
            return;
        }
        const auto& seq = buf[std::size_t{idx(p)} * C + ch];
        SourceSet want = SourceSet::range(0, hi);
        z3::expr flag = c.bool_const(fmt::format("goal_{}_{}", idx(p), ch).c_str());
        solver.add(flag == (seq.back() != set_bits(c, P, want.items())));
        std::vector<MessageId> ids;
        if (auto id = find_partial(ms, want, ch)) ids.push_back(*id);
        bads.push_back({flag,
                        {Property::completeness, 0, std::nullopt, p, std::move(ids),
                         fmt::format("processor {} ends with ", topo.node_name(p))},
                        true, seq.back(), ch, hi});
    });
    if (late) {
        ans.unknown = true;
        ans.reason = fmt::format("the time limit of {} ms was reached while the buffer rule was encoded", timeout_ms);
        return ans;
    }
    if (bads.empty()) return ans;
    z3::expr_vector any(c);
    for (const Bad& b : bads) any.push_back(b.flag);
    // Z3's own time limit is not checked everywhere (its preprocessing ran 30 s past a 10 s
    // limit): a watchdog interrupts the context at the limit, and the answer is unknown.
    Watchdog watchdog(c, timeout_ms);
    switch (solver.check(z3::expr_vector([&] {
        z3::expr_vector v(c);
        v.push_back(z3::mk_or(any));
        return v;
    }()))) {
        case z3::unsat: return ans;
        case z3::unknown:
            ans.unknown = true;
            ans.reason = solver.reason_unknown();
            return ans;
        case z3::sat: break;
    }
    z3::model model = solver.get_model();
    // The buffers of the first violations of each kind are read from the model and named; the
    // rest are counted (the report shows the first 20 anyway), so that a table whose every
    // processor fails does not read P buffers of P bits.
    constexpr std::size_t detailed = 256;
    std::size_t shown[2] = {0, 0};
    for (Bad& b : bads) {
        if (!model.eval(b.flag, true).is_true()) continue;
        if (b.buffer && shown[b.completeness]++ >= detailed) {
            b.v.detail += b.completeness ? fmt::format("another partial than {}", partial_name(ms, SourceSet::range(0, b.goal_hi), b.chunk))
                          : b.send        ? "another partial"
                                          : "a partial it shares contributions with";
        } else if (b.buffer) {  // name the buffer and the contributions counted twice from the model
            // The buffer's value read once as a numeral (one model evaluation per bit took P^2
            // evaluations when every processor's goal fails: 25 s at P = 4096).
            const z3::expr value = model.eval(*b.buffer, true);
            if (!value.is_numeral()) throw z3::exception("the model gives no value of a buffer");
            const std::string bits = Z3_get_numeral_binary_string(c, value);  // most significant first
            std::vector<std::uint32_t> held;
            for (std::size_t k = 0; k < bits.size() && k < P; ++k)
                if (bits[bits.size() - 1 - k] == '1') held.push_back(static_cast<std::uint32_t>(k));
            if (b.send) {
                b.v.detail += partial_name(ms, SourceSet(held), b.chunk);
            } else if (b.completeness) {
                SourceSet want = SourceSet::range(0, b.goal_hi);
                b.v.detail += fmt::format("{} but needs {}: {}", partial_name(ms, SourceSet(held), b.chunk), partial_name(ms, want, b.chunk),
                                          goal_gap(SourceSet(held), want));
            } else {
                SourceSet buffer(held);
                std::string twice;
                apply_arrival(buffer, partial_of(ms, b.v.messages[0])->sources, &twice);
                b.v.detail += fmt::format("{}: combining them counts {} twice", partial_name(ms, SourceSet(held), b.chunk), twice);
            }
        }
        (b.completeness ? ans.completeness : ans.causality).push_back(std::move(b.v));
    }
    return ans;
}

}  // namespace collsched::detail
