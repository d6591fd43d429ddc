// The two backends of the synthesizer and the decoding of a model into a verified send table.
// CaDiCaL gets the clauses as they are and every cardinality constraint through
// verifier/synth/sat/cardinality.hpp; Z3 gets the same clauses and native atmost/atleast terms, so the two
// paths decide literally the same formula and must agree.
#include <algorithm>
#include <chrono>
#include <unordered_set>
#include <map>
#include <set>
#include <stdexcept>

#include <cadical.hpp>
#include "support/budget.hpp"
#include <fmt/format.h>
#include <z3++.h>

#include "compiler/table/builder.hpp"
#include "compiler/table/partials.hpp"
#include "support/assert.hpp"
#include "verifier/synth/sat/cardinality.hpp"
#include "verifier/check/direct.hpp"
#include "verifier/synth/sat/encode.hpp"

namespace collsched {

namespace {

/// One cardinality constraint can become millions of clauses (n * k for the sequential
/// counter): the sink polls the run's limits every 65,536 clauses, inside a constraint as well.
class CadicalSink final : public sat::ClauseSink {
public:
    CadicalSink(CaDiCaL::Solver& s, int vars, const SynthOptions& opt) : s_(s), next_(vars), opt_(opt) {}
    int new_var() override { return ++next_; }
    void add_clause(std::span<const int> lits) override {
        for (int l : lits) s_.add(l);
        s_.add(0);
        if (++clauses_ % 65536 == 0) synth::check_deadline(opt_);
    }
    using sat::ClauseSink::add_clause;
    std::uint64_t clauses() const { return clauses_; }
    int vars() const { return next_; }

private:
    CaDiCaL::Solver& s_;
    int next_;
    const SynthOptions& opt_;
    std::uint64_t clauses_ = 0;
};

/// Stops CaDiCaL at the deadline or on the caller's interrupt, and reports progress.
class Stopper final : public CaDiCaL::Terminator {
public:
    Stopper(double timeout, const SynthOptions& opt) : opt_(opt), t0_(Clock::now()), timeout_(timeout) {}
    bool terminate() override {
                double s = seconds_since(t0_);
        if (timeout_ > 0 && s >= timeout_) {
            why_ = "time limit";
            return true;
        }
        if ((opt_.interrupt && opt_.interrupt()) || stop_requested()) {
            why_ = "interrupted";
            return true;
        }
        if (opt_.memory.exceeded(synth::memory_stop)) {
            why_ = synth::memory_reason(opt_, "during the solve");
            return true;
        }
        if (opt_.tick && s >= next_tick_) {
            next_tick_ = s + 1.0;
            opt_.tick(s);
        }
        return false;
    }
    const std::string& why() const { return why_; }

private:
    const SynthOptions& opt_;
    Clock::time_point t0_;
    double timeout_;
    double next_tick_ = 1.0;
    std::uint64_t calls_ = 0;
    std::string why_;
};

/// The least rounds each step of a table needs (SCCL's rounds): per step the largest
/// ceil(load / limit) over channels (limit: capacity), processors' ports (single: sends and
/// receives, 1 each; half: both together, 1) and link groups (limit: the group's capacity); at
/// least 1. Steps 1..T.
std::vector<std::uint32_t> least_rounds(const SendTable& t) {
    const Topology& topo = *t.topology;
    std::vector<std::uint32_t> r(t.steps(), 1);
    auto need = [](std::uint64_t load, std::uint64_t limit) { return static_cast<std::uint32_t>((load + limit - 1) / limit); };
    std::map<std::uint32_t, std::uint64_t> chan, sends, recvs;
    std::vector<std::uint64_t> group(topo.groups().size(), 0);
    for (std::size_t i = 0; i < t.transfers.size();) {
        const Step s = t.transfers[i].step;
        chan.clear();
        sends.clear();
        recvs.clear();
        std::fill(group.begin(), group.end(), 0);
        for (; i < t.transfers.size() && t.transfers[i].step == s; ++i) {
            const ChannelId c = t.transfers[i].channel;
            ++chan[idx(c)];
            ++sends[idx(topo.channel(c).from)];
            ++recvs[idx(topo.channel(c).to)];
            for (std::uint32_t g : topo.groups_of(c)) ++group[g];
        }
        std::uint32_t& x = r[s - 1];
        for (auto [c, load] : chan) x = std::max(x, need(load, topo.channel(ChannelId{c}).cap));
        for (std::size_t g = 0; g < group.size(); ++g)
            if (group[g]) x = std::max(x, need(group[g], topo.groups()[g].cap));
        if (t.model.ports == Ports::single) {
            for (auto [v, load] : sends)
                if (topo.is_processor(Node{v})) x = std::max(x, need(load, 1));
            for (auto [v, load] : recvs)
                if (topo.is_processor(Node{v})) x = std::max(x, need(load, 1));
        } else if (t.model.ports == Ports::half) {
            std::map<std::uint32_t, std::uint64_t> both = sends;
            for (auto [v, load] : recvs) both[v] += load;
            for (auto [v, load] : both)
                if (topo.is_processor(Node{v})) x = std::max(x, need(load, 1));
        }
    }
    return r;
}

}  // namespace

struct Synthesizer::Impl {
    SynthInstance inst;
    SynthOptions opt;
    synth::Encoding enc;
    double encode_seconds = 0;
    std::uint64_t variables = 0, clauses = 0;
    // CaDiCaL
    std::unique_ptr<CaDiCaL::Solver> cad;
    // Z3
    std::unique_ptr<z3::context> ctx;
    std::unique_ptr<z3::solver> z3s;
    std::vector<z3::expr> z3vars;
    std::string stopped;  ///< non-empty: the encoding was not built (EncodeStopped), why
    std::uint64_t card_clauses = 0;  ///< estimated CNF clauses of the cardinality constraints

    z3::expr z3lit(int l) { return l > 0 ? z3vars[l] : !z3vars[-l]; }

    /// CaDiCaL's initial phases from a schedule (SynthOptions::hint): a candidate is true when the
    /// hint has every one of its transfers. Phases only steer the first decisions: no answer changes.
    void phases_from(const SendTable& hint) {
        std::unordered_set<std::uint64_t> in_hint;
        auto key = [](const Transfer& t) { return (std::uint64_t{idx(t.message)} << 40) ^ (std::uint64_t{idx(t.channel)} << 16) ^ t.step; };
        for (const Transfer& t : hint.transfers) in_hint.insert(key(t));
        for (const synth::Candidate& c : enc.candidates) {
            bool all = true;
            for (std::uint32_t k = 0; k < c.count && all; ++k) all = in_hint.count(key(enc.pool[c.first + k])) > 0;
            cad->phase(all ? c.lit : -c.lit);
        }
    }

    void load_cadical() {
        cad = std::make_unique<CaDiCaL::Solver>();
        cad->set("quiet", 1);
        if (!opt.cadical_config.empty()) cad->configure(opt.cadical_config.c_str());
        CadicalSink sink(*cad, enc.f.vars(), opt);
        std::span<const int> cl = enc.f.flat_clauses();
        const bool limited = opt.deadline != Clock::time_point::max();
        // Loading a formula that cannot finish in time only to free it again costs about 1.5x
        // the time spent: after the first million literals, extrapolate and give up early.
        const auto start = Clock::now();
        const double work = static_cast<double>(cl.size()) + 3.0 * static_cast<double>(card_clauses);
        for (std::size_t i = 0; i < cl.size(); ++i) {
            if ((limited || !opt.memory.none()) && i % 65536 == 0) {
                auto now = Clock::now();
                synth::check_deadline(opt);
                double spent = std::chrono::duration<double>(now - start).count();
                // What is left once the release of the solver's memory at the end is reserved.
                double left = std::chrono::duration<double>(opt.deadline - now).count() - release_seconds(resident_memory_recent());
                if (i >= (1u << 20) && spent * (work / static_cast<double>(i) - 1.0) > left)
                    throw synth::EncodeStopped{"time limit (the formula could not be loaded in the time left)"};
            }
            cad->add(cl[i]);
        }
        sat::CardEncoding ce =
            opt.cardinality == CardinalityKind::sequential ? sat::CardEncoding::sequential : sat::CardEncoding::totalizer;
        for (const synth::Card& c : enc.f.cards()) {
            synth::check_deadline(opt);
            if (c.at_least) sat::at_least(sink, c.lits, c.bound, ce);
            else sat::at_most(sink, c.lits, c.bound, ce);
        }
        variables = static_cast<std::uint64_t>(sink.vars());
        clauses = enc.f.clause_count() + sink.clauses();
    }

    void load_z3() {
        ctx = std::make_unique<z3::context>();
        z3s = std::make_unique<z3::solver>(*ctx, "QF_FD");
        z3vars.reserve(enc.f.vars() + 1);
        z3vars.push_back(ctx->bool_val(false));  // index 0 unused
        for (int v = 1; v <= enc.f.vars(); ++v) {
            if (v % 65536 == 0) synth::check_deadline(opt);
            z3vars.push_back(ctx->bool_const(fmt::format("v{}", v).c_str()));
        }
        z3::expr_vector lits(*ctx);
        std::size_t seen = 0;
        for (int l : enc.f.flat_clauses()) {
            if (l != 0) {
                lits.push_back(z3lit(l));
                continue;
            }
            if (++seen % 4096 == 0) synth::check_deadline(opt);
            z3s->add(z3::mk_or(lits));
            lits = z3::expr_vector(*ctx);
        }
        std::size_t n = 0;
        for (const synth::Card& c : enc.f.cards()) {
            if (++n % 8 == 0) synth::check_deadline(opt);
            z3::expr_vector xs(*ctx);
            for (int l : c.lits) xs.push_back(z3lit(l));
            z3s->add(c.at_least ? z3::atleast(xs, c.bound) : z3::atmost(xs, c.bound));
        }
        variables = static_cast<std::uint64_t>(enc.f.vars());
        clauses = enc.f.clause_count();
    }

    /// With rounds: the witness's rounds per step (steps 1..T of the table).
    void rounds_of(SynthResult& r) const {
        if (!inst.rounds || !r.witness) return;
        for (Step s = 1; s <= r.witness->steps(); ++s) r.step_rounds.push_back(r.witness->rounds(s));
    }

    /// UNSAT, except under an invariance restriction, where it proves nothing.
    void unsat(SynthResult& r) const {
        if (opt.invariant.empty()) {
            r.answer = Answer::unsat;
            return;
        }
        r.answer = Answer::unknown;
        r.reason = "no schedule invariant under the automorphisms (a restriction, not a proof)";
    }

    bool value(int lit) {
        if (lit == synth::Formula::top) return true;
        if (lit == -synth::Formula::top) return false;
        if (cad) return cad->val(lit) > 0;
        return false;  // Z3 values are read in decode_z3
    }

    /// Dissemination and free-route models leave the solver free to add transfers nobody needs
    /// (a copy sent again, a replica that leads nowhere). Keeps only what leads to a goal,
    /// walking back from every goal's first arrival: a kept piece that leaves a holder needs
    /// that holder's first acquisition of the message; one that leaves a queue-free router needs
    /// an arrival there in the step before. Dropping the rest keeps causality and only lowers
    /// every count. A personalized message has one goal, so what is kept is one chain: one copy
    /// along one walk, which enters every router it visits once per departure (replicate=no).
    std::vector<std::size_t> needed(const std::vector<std::size_t>& chosen) {
        const Topology& t = *inst.topology;
        const bool hold_in_routers = synth::routers_hold(inst, enc.kind);
        auto holder = [&](Node v) { return t.is_processor(v) || hold_in_routers; };
        auto src = [&](std::size_t c) { return t.channel(enc.pool[enc.candidates[c].first].channel).from; };
        auto dst = [&](std::size_t c) {
            const synth::Candidate& k = enc.candidates[c];
            return t.channel(enc.pool[k.first + k.count - 1].channel).to;
        };
        auto msg = [&](std::size_t c) { return enc.pool[enc.candidates[c].first].message; };
        auto first_step = [&](std::size_t c) { return enc.pool[enc.candidates[c].first].step; };
        // (message, node) -> pieces arriving there, earliest first.
        std::map<std::pair<std::uint32_t, std::uint32_t>, std::vector<std::size_t>> arrive;
        for (std::size_t c : chosen) arrive[{idx(msg(c)), idx(dst(c))}].push_back(c);
        for (auto& [k, v] : arrive)
            std::sort(v.begin(), v.end(), [&](std::size_t a, std::size_t b) { return enc.candidates[a].last_step < enc.candidates[b].last_step; });
        // Routers that forward (dissemination under replicate=no): each departure takes its own
        // arrival, matched first in first out as the checker does.
        std::map<std::size_t, std::size_t> took;
        if (enc.kind == EncodingKind::dissemination && !inst.model.replicate && !hold_in_routers) {
            std::map<std::pair<std::uint32_t, std::uint32_t>, std::vector<std::size_t>> leave;
            for (std::size_t c : chosen)
                if (!holder(src(c))) leave[{idx(msg(c)), idx(src(c))}].push_back(c);
            for (auto& [k, ds] : leave) {
                std::sort(ds.begin(), ds.end(), [&](std::size_t a, std::size_t b) { return first_step(a) < first_step(b); });
                auto it = arrive.find(k);
                if (it == arrive.end()) continue;
                std::size_t next = 0;
                for (std::size_t d : ds)
                    if (next < it->second.size() && enc.candidates[it->second[next]].last_step < first_step(d)) took[d] = it->second[next++];
            }
        }
        std::set<std::size_t> keep;
        std::vector<std::size_t> work;
        auto mark = [&](std::size_t c) {
            if (keep.insert(c).second) work.push_back(c);
        };
        Messages ms = inst.collective.messages(t.processors());
        inst.collective.for_each_goal(t.processors(), [&](MessageId m, Node d) {
            auto it = arrive.find({idx(m), idx(d)});
            if (it != arrive.end()) mark(it->second.front());
        });
        while (!work.empty()) {
            std::size_t c = work.back();
            work.pop_back();
            Node u = src(c);
            MessageId m = msg(c);
            if (u == ms.origin(m)) continue;
            auto it = arrive.find({idx(m), idx(u)});
            if (it == arrive.end()) continue;  // cannot happen in a model; verification will tell
            if (holder(u)) {
                mark(it->second.front());
            } else if (enc.kind == EncodingKind::dissemination && !inst.model.replicate) {
                if (auto a = took.find(c); a != took.end()) mark(a->second);
            } else {
                for (std::size_t a : it->second)
                    if (enc.candidates[a].last_step + 1 == first_step(c)) {
                        mark(a);
                        break;
                    }
            }
        }
        return {keep.begin(), keep.end()};
    }

    /// The combining encoding: the chosen (chunk, channel, step) become transfers of DSL-style
    /// references partial(sender, chunk), resolved by replaying the buffer rule; a partial a router
    /// forwards is the reference of its origin (the same composite as the origin's own transfer, which
    /// comes first and resolves it).
    SendTable decode_combining(Step horizon, const std::function<bool(int)>& val) {
        SendTable table;
        table.topology = inst.topology;
        table.model = inst.model;
        table.collective = inst.collective;
        Composites& reg = table.composite_registry();
        for (const synth::Candidate& c : enc.candidates) {
            if (c.last_step > horizon || !val(c.lit)) continue;
            const Transfer& t = enc.pool[c.first];
            // the processor whose buffer the partial is and the step it left it (through routers: its origin)
            const auto [from, left] = enc.senders.empty() ? std::pair{inst.topology->channel(t.channel).from, t.step} : enc.senders[c.first];
            const MessageId ref = reg.intern({MessageKind::partial, idx(t.message), static_cast<std::uint32_t>(left), {MessageId{idx(from)}}, {}});
            table.transfers.push_back({t.step, t.channel, ref});
        }
        table.sort();
        resolve_partials(table);
        table.canonicalize_composites();
        return table;
    }

    SendTable decode(Step horizon, const std::function<bool(int)>& val) {
        if (enc.kind == EncodingKind::combining) return check_decoded(decode_combining(horizon, val), horizon);
        TableBuilder b(inst.topology, inst.model, inst.collective);
        std::vector<std::size_t> chosen;
        for (std::size_t i = 0; i < enc.candidates.size(); ++i) {
            const synth::Candidate& c = enc.candidates[i];
            if (c.last_step <= horizon && val(c.lit)) chosen.push_back(i);
        }
        if (enc.kind != EncodingKind::personal) chosen = needed(chosen);
        for (std::size_t i : chosen) {
            const synth::Candidate& c = enc.candidates[i];
            for (std::uint32_t k = 0; k < c.count; ++k) {
                const Transfer& t = enc.pool[c.first + k];
                b.hop(t.step, t.channel, t.message);
            }
        }
        return check_decoded(std::move(b).finish(), horizon);
    }

    /// Rounds as the transfers need them, then the direct checker: a decoded model that does
    /// not verify is a bug of the encoding.
    SendTable check_decoded(SendTable table, Step horizon) {
        if (inst.rounds) {
            table.step_rounds = least_rounds(table);
            table.normalize_rounds();
        }
        VerifyOptions vo;
        vo.fixed_routes = enc.fixed_routes;
        VerifyReport r = verify_direct(table, vo);
        COLLSCHED_ASSERT_MSG(r.holds() && table.steps() <= horizon && (!inst.rounds || table.total_rounds() <= *inst.rounds),
                             fmt::format("the schedule decoded for T = {} on {} does not verify ({} steps): {}", horizon,
                                         inst.topology->spec(), table.steps(),
                                         r.violations.empty() ? std::string(r.verdict()) : r.violations.front().detail));
        return table;
    }
};

Synthesizer::Synthesizer(const SynthInstance& inst, Step max_horizon, const SynthOptions& opt) : impl_(std::make_unique<Impl>()) {
    auto t0 = Clock::now();
    impl_->inst = inst;
    impl_->opt = opt;
    try {
        impl_->enc = synth::encode(inst, max_horizon, opt);
        // The cardinality constraints in CNF (or as Z3 terms) can dwarf the rest: about
        // n * min(k, n - k) clauses each for the totalizer. Refuse what would not fit.
        std::uint64_t est = 0;
        for (const synth::Card& c : impl_->enc.f.cards()) {
            std::uint64_t n = c.lits.size(), k = std::min<std::uint64_t>(c.bound, n - std::min<std::uint64_t>(c.bound, n));
            est += n * std::max<std::uint64_t>(1, std::min<std::uint64_t>(k + 1, 64));
        }
        impl_->card_clauses = est;
        if (opt.max_variables > 0 && est > 4 * opt.max_variables)
            throw synth::EncodeStopped{fmt::format("the cardinality constraints for T = {} would need about {} clauses (limit {}); not built",
                                                   max_horizon, est, 4 * opt.max_variables)};
        // The solver's size, estimated before loading: CaDiCaL takes about 180 bytes per clause
        // (the clause, its two watches, its share of the variables' tables), and the totalizers
        // about twice the clauses estimated above (multibox4x8 allgather, T = 30: 2.7 million
        // clauses and 5.4 million estimated for the cardinalities loaded into 13.3 million
        // clauses and 2.4 GB). 300 bytes per clause of the estimate keeps to the safe side.
        if (!opt.memory.none()) {
            const std::uint64_t need = 300 * (impl_->enc.f.clause_count() + est) + 8 * impl_->enc.f.flat_clauses().size();
            if (!opt.memory.fits(need))
                throw synth::EncodeStopped{fmt::format("memory limit: the formula for T = {} would need about {} in the solver, {} of "
                                                       "the limit {} is left; not loaded",
                                                       max_horizon, format_bytes(need), format_bytes(opt.memory.left()),
                                                       format_bytes(opt.memory.limit()))};
        }
        if (opt.backend == SatBackend::cadical) impl_->load_cadical();
        else impl_->load_z3();
        if (opt.hint && impl_->cad) impl_->phases_from(*opt.hint);
    } catch (const synth::EncodeStopped& stop) {
        impl_->stopped = stop.reason;
        // What was built may be gigabytes of small blocks (a partly loaded solver): freed on a
        // background thread, so that stopping at a time limit does not take seconds more.
        auto cad = std::shared_ptr<CaDiCaL::Solver>(std::move(impl_->cad));
        auto z3s = std::shared_ptr<z3::solver>(std::move(impl_->z3s));
        auto z3vars = std::make_shared<std::vector<z3::expr>>(std::move(impl_->z3vars));
        auto ctx = std::shared_ptr<z3::context>(std::move(impl_->ctx));
        auto enc = std::make_shared<synth::Encoding>(std::move(impl_->enc));
        free_in_background([cad, z3s, z3vars, ctx, enc]() mutable {
            cad.reset();
            z3s.reset();
            z3vars.reset();  // the expressions before their context
            ctx.reset();
            enc.reset();
        });
        impl_->z3vars.clear();
        impl_->enc = synth::Encoding{};
        impl_->enc.kind = encoding_for(inst);
        impl_->enc.max_horizon = max_horizon;
        impl_->encode_seconds = seconds_since(t0);
        return;
    }
    impl_->encode_seconds = seconds_since(t0);
}

Synthesizer::~Synthesizer() = default;

EncodingKind Synthesizer::kind() const { return impl_->enc.kind; }

SynthResult Synthesizer::solve(Step horizon, double timeout) {
    Impl& im = *impl_;
    const double limit = timeout >= 0 ? timeout : im.opt.timeout;
    COLLSCHED_ASSERT_MSG(horizon <= im.enc.max_horizon,
                         fmt::format("Synthesizer::solve({}) beyond its horizon {}", horizon, im.enc.max_horizon));
    SynthResult r;
    r.encode_seconds = im.encode_seconds;
    r.variables = im.variables;
    r.clauses = im.clauses;
    r.cardinalities = im.enc.f.cards().size();
    if (!im.stopped.empty()) {
        r.answer = Answer::unknown;
        r.reason = im.stopped;
        return r;
    }
    if (horizon < im.enc.min_horizon) {
        im.unsat(r);
        r.reason = fmt::format("a message needs {} steps on its route", im.enc.min_horizon);
        return r;
    }
    int assumption = im.enc.deadline[horizon];
    auto t0 = Clock::now();
    if (im.cad) {
        // CaDiCaL polls its terminator between propagations and inprocessing rounds, which on a
        // large formula can be a second apart (13 million clauses: 1.4 s late at a 7 s limit): the
        // limit is cut by 0.1 microseconds per clause, so the call ends in time.
        // And the memory resident now takes release_seconds to give back at the end of the run.
        const double late = 1e-7 * static_cast<double>(im.clauses) + release_seconds(resident_memory());
        Stopper stop(limit > 0 ? std::max(0.001, limit - late) : 0.0, im.opt);
        im.cad->connect_terminator(&stop);
        if (assumption != 0) im.cad->assume(assumption);
        int res = im.cad->solve();
        im.cad->disconnect_terminator();
        r.seconds = seconds_since(t0);
        if (res == 10) {
            r.answer = Answer::sat;
            r.witness = im.decode(horizon, [&](int l) { return im.value(l); });
            im.rounds_of(r);
        } else if (res == 20) {
            im.unsat(r);
        } else {
            r.answer = Answer::unknown;
            r.reason = stop.why().empty() ? "cadical gave up" : stop.why();
        }
        return r;
    }
    try {
        z3::params p(*im.ctx);
        p.set("timeout", limit > 0 ? static_cast<unsigned>(std::max(1.0, limit * 1000)) : 4294967295u);
        im.z3s->set(p);
        z3::expr_vector as(*im.ctx);
        if (assumption != 0) as.push_back(im.z3lit(assumption));
        z3::check_result res = im.z3s->check(as);
        r.seconds = seconds_since(t0);
        if (res == z3::sat) {
            r.answer = Answer::sat;
            z3::model m = im.z3s->get_model();
            r.witness = im.decode(horizon, [&](int l) {
                if (l == synth::Formula::top) return true;
                if (l == -synth::Formula::top) return false;
                return m.eval(im.z3lit(l), true).is_true();
            });
            im.rounds_of(r);
        } else if (res == z3::unsat) {
            im.unsat(r);
        } else {
            r.answer = Answer::unknown;
            r.reason = im.z3s->reason_unknown();
            if (r.reason == "timeout" || r.reason == "canceled") r.reason = "time limit";
        }
    } catch (const z3::exception& ex) {
        r.seconds = seconds_since(t0);
        r.answer = Answer::unknown;
        r.reason = fmt::format("z3: {}", ex.msg());
    }
    return r;
}

SynthResult synthesize(const SynthInstance& inst, Step horizon, const SynthOptions& opt) {
    Synthesizer s(inst, horizon, opt);
    return s.solve(horizon);
}

}  // namespace collsched
