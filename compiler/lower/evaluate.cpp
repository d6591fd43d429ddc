#include "compiler/lower/evaluate.hpp"

#include <algorithm>
#include <limits>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "compiler/lower/declarations.hpp"
#include "compiler/core/flat_map.hpp"
#include "compiler/lower/stream.hpp"
#include "support/budget.hpp"

namespace collsched::compiler {

SendTable Evaluated::header(bool take) {
    SendTable t;
    t.topology = topology;
    t.model = model;
    t.collective = collective;
    Step last = 0;  // the last step of more than one round
    for (const auto& [s, r] : stated_rounds)
        if (r.rounds > 1) last = s;
    t.step_rounds.assign(last, 1);
    for (const auto& [s, r] : stated_rounds)
        if (s <= last) t.step_rounds[s - 1] = r.rounds;
    t.requirements = take ? std::move(requirements) : requirements;
    t.claims = take ? std::move(claims) : claims;
    return t;
}

namespace {

/// Whether message expression `e` surely names at least one message: not an empty bundle (a
/// bundle comprehension, or a variable that may hold one).
bool surely_nonempty(const IR& ir, std::uint32_t e) {
    const XExpr& x = ir.exprs[e];
    switch (x.op) {
        case Op::msg_m:
        case Op::msg_b:
        case Op::msg_a:
        case Op::msg_partial:
        case Op::msg_set:
        case Op::msg_range: return true;
        case Op::msg_join: return surely_nonempty(ir, x.a) || surely_nonempty(ir, x.b);
        default: return false;
    }
}

/// A lower bound on the transfers and requirements one run of the block makes when it runs
/// without errors: its sends, hops and requires (in steps too, not under `if` or an inner loop),
/// each at least one, unless its message may be an empty bundle. `*where` is the first of them.
std::uint64_t surely_made(const IR& ir, std::uint32_t first, std::uint32_t n, const XStmt** where) {
    std::uint64_t made = 0;
    for (std::uint32_t k = 0; k < n; ++k) {
        const XStmt& s = ir.stmts[ir.children[first + k]];
        std::uint64_t here = 0;
        switch (s.kind) {
            case SKind::step: here = surely_made(ir, s.body, s.body_n, where); break;
            case SKind::send: here = s.e2 == none || surely_nonempty(ir, s.e2); break;
            case SKind::hop: here = surely_nonempty(ir, s.e2); break;
            case SKind::require: here = surely_nonempty(ir, s.e0); break;
            default: break;
        }
        if (here && !*where && s.kind != SKind::step) *where = &s;
        made += here;
    }
    return made;
}

/// One run of a program: the values (Env), what it produces (Evaluated), and where it is.
class Run {
public:
    Run(const IR& ir, const CompileOptions& options, Reporter& reporter, Evaluated& out, StepConsumer* consumer,
        PendingContexts* capture = nullptr, TransferContexts* transfer_capture = nullptr)
        : env_(ir, options, reporter), out_(out), consumer_(consumer), capture_(capture), transfer_capture_(transfer_capture) {
        for (const Define& d : options.defines)
            for (const auto& [name, slot] : ir.params)
                if (name == d.name) overrides_[slot] = d.value;
        if (options.record_locations && !consumer) out_.sink.record_origins();
    }

    /// Runs the program: every send and hop into the sink, or into `sends` for arbitration.
    /// Streaming, hands every step over at the end.
    void run() {
        for (std::uint32_t k = 0; k < env_.ir.top_n; ++k) {
            const XStmt& s = env_.ir.stmts[env_.ir.children[env_.ir.top + k]];
            top_ = &s;
            bool schedule = s.kind == SKind::for_ || s.kind == SKind::if_ || s.kind == SKind::step || s.kind == SKind::require;
            if (schedule) finish_header();
            if (!exec(env_.ir.children[env_.ir.top + k])) break;
        }
        finish_header();
        if (consumer_ && !env_.reporter.diags().has_errors()) {
            begin_stream();
            out_.sink.flush_below(0);
        }
    }

private:
    /// Streaming: once the header is known, checks that the schedule can stream and tells the consumer.
    void begin_stream() {
        if (out_.sink.streaming() || !consumer_) return;
        if (!env_.topo) throw Stop{};
        if (out_.policy != LoweringPolicy::cut_through) throw NotStreamable(fmt::format("the {} policy arbitrates over all sends at the end", to_string(out_.policy)));
        if (timing_wormhole_) throw NotStreamable("wormhole timing is not streamed");
        out_.sink.stream_to(consumer_, env_.topo->channels().size());
        consumer_->begin(out_.header());
    }

    /// `step s rounds r`: the rounds of step s, once per step (a second statement may repeat the
    /// same r, not change it); more than one round needs hop timing (E055).
    void set_rounds(Step s, std::int64_t r, SourceLoc loc) {
        constexpr std::int64_t max_rounds = max_step_rounds;
        if (r < 1 || r > max_rounds) fail("E055", loc, fmt::format("step {} rounds {}: a step lasts 1 to {} rounds", s, r, max_rounds));
        if (timing_wormhole_ && r > 1)
            fail("E055", loc, fmt::format("step {} rounds {}: under wormhole timing the steps are rounds already (rounds need hop timing)", s, r));
        const bool streaming = consumer_ && out_.sink.streaming();
        if (streaming && r > 1 && s <= out_.sink.flushed())
            throw NotStreamable(fmt::format("step {} rounds {} comes after step {} was handed over", s, r, s));
        auto [it, fresh] = out_.stated_rounds.try_emplace(s, Evaluated::StatedRounds{static_cast<std::uint32_t>(r), loc});
        if (!fresh && it->second.rounds != r) {
            const SourceLoc& at = it->second.at;
            fail("E055", loc, fmt::format("step {} rounds {}, but step {} has {} rounds already (at line {}, column {})", s, r, s,
                                          it->second.rounds, at.line, at.column));
        }
        // The table lists the rounds of every step up to the last one of more than one round.
        if (fresh && r > 1)
            if (std::string why = MemoryBudget::standard().refusal(mul_sat(s, sizeof(std::uint32_t)),
                                                                     fmt::format("the rounds of steps 1 .. {}", s));
                !why.empty()) {
                out_.stated_rounds.erase(it);
                fail("E055", loc, fmt::format("step {} rounds {}: {}", s, r, why));
            }
        if (streaming && r > 1) consumer_->rounds(s, static_cast<std::uint32_t>(r));  // before begin(): in the header
    }

    /// Bundles move only under wormhole timing (docs/semantics.md): E047 otherwise.
    void check_bundle(MessageId m, const XStmt& s) {
        if (timing_wormhole_ || !env_.messages.is_composite(m) || env_.messages.composite(m).kind != MessageKind::bundle) return;
        fail("E047", env_.ir.exprs[s.e2].loc,
             fmt::format("{} is a bundle, and bundles need timing=wormhole: under hop timing a step moves one message per unit of "
                         "capacity (send the parts one by one)",
                         env_.messages.name(m)));
    }

    // -- statements ----------------------------------------------------------------------------

    bool exec_block(std::uint32_t first, std::uint32_t n) {
        for (std::uint32_t k = 0; k < n; ++k)
            if (!exec(env_.ir.children[first + k])) return false;
        return true;
    }

    /// Runs one statement. An evaluation error is reported; after an error in a statement that
    /// defines values or controls flow (let, for, if, step), the rest of the enclosing block is
    /// skipped (returns false), since what follows would compute with a wrong value.
    bool exec(std::uint32_t si) {
        const XStmt& s = env_.ir.stmts[si];
        try {
            switch (s.kind) {
                case SKind::param: {
                    auto it = overrides_.find(s.slot);
                    env_.slots[s.slot] = it != overrides_.end() ? it->second : env_.eval(s.e0);
                    return true;
                }
                case SKind::let: env_.slots[s.slot] = env_.eval(s.e0); return true;
                case SKind::for_: {
                    std::int64_t a = env_.eval(s.e0), b = env_.eval(s.e1);
                    env_.loops.push_back(&s);
                    const std::uint64_t n = Env::range_size(a, b);
                    env_.count_iterations(n, s.loc);
                    const XStmt* first_made = nullptr;
                    const std::uint64_t each = surely_made(env_.ir, s.body, s.body_n, &first_made);
                    if (each > 0) check_limit_ahead(n, each, *first_made);
                    for (std::int64_t v = a; v <= b; ++v) {
                        env_.slots[s.slot] = v;
                        exec_block(s.body, s.body_n);
                        if (v == std::numeric_limits<std::int64_t>::max()) break;
                    }
                    env_.loops.pop_back();
                    return true;
                }
                case SKind::if_:
                    if (env_.eval(s.e0)) exec_block(s.body, s.body_n);
                    else exec_block(s.orelse, s.orelse_n);
                    return true;
                case SKind::step: {
                    std::int64_t v = env_.eval(s.e0);
                    if (v < 1) fail("E025", s.at, fmt::format("step {} is before the first step (steps are numbered from 1)", v));
                    if (v >= max_step) fail("E025", s.at, fmt::format("step {} is too large (steps are below 2^31)", v));
                    if (s.e1 != none) set_rounds(static_cast<Step>(v), env_.eval(s.e1), env_.ir.exprs[s.e1].loc);
                    Step outer = step_;
                    step_ = static_cast<Step>(v);
                    env_.current_step = v;
                    if (consumer_) {
                        begin_stream();
                        out_.sink.flush_below(step_);
                    }
                    exec_block(s.body, s.body_n);
                    step_ = outer;
                    env_.current_step = outer;
                    return true;
                }
                case SKind::send: send(s); return true;
                case SKind::hop: hop(s); return true;
                case SKind::require: require(s); return true;
                case SKind::assert_:
                    if (!env_.eval(s.e0)) fail("E027", s.loc, fmt::format("assertion failed: {}{}", s.name, env_.assert_values(s)));
                    return true;
                case SKind::claim: claim(s); return true;
                case SKind::topology:
                    build_topology(env_, s);
                    out_.topology = env_.topo;
                    out_.composites = env_.composites;
                    out_.messages = env_.messages;
                    return true;
                case SKind::model:
                case SKind::collective: return true;  // built by finish_header()
            }
        } catch (const EvalError& e) {
            env_.reporter.report(e.code, e.loc, e.message + env_.context());
            if (s.kind == SKind::topology) throw Stop{};
            return s.kind == SKind::send || s.kind == SKind::hop || s.kind == SKind::require || s.kind == SKind::claim;
        }
        return true;
    }

    void check_limit(const XStmt& s) {
        if (count_ > env_.options.max_transfers) limit_reached(s);
    }

    /// E050 at the outermost loop running (or the top-level statement), a note at `s`.
    [[noreturn]] void limit_reached(const XStmt& s) {
        const XStmt& at = env_.loops.empty() ? *top_ : *env_.loops.front();
        std::string_view what = at.kind == SKind::for_ ? "loop" : at.kind == SKind::step ? "step" : "statement";
        env_.reporter.report("E050", at.loc,
                             fmt::format("this {} makes more than {} transfers, the limit (raise it with --max-transfers)", what,
                                         env_.options.max_transfers));
        env_.reporter.diags().note(s.loc, s.kind == SKind::require ? "requirements count toward the limit too; they come from here"
                                                                   : "the transfers come from here");
        throw Stop{};
    }

    /// A loop whose every iteration surely makes `each` transfers (surely_made) and whose `n`
    /// iterations would go over the limit stops before it runs, not after filling gigabytes:
    /// the same E050 as when the limit is reached, at the outermost loop, with the note at the
    /// first statement that surely makes transfers.
    void check_limit_ahead(std::uint64_t n, std::uint64_t each, const XStmt& from) {
        const std::uint64_t max = env_.options.max_transfers;
        if (count_ > max || n <= (max - count_) / each) return;
        limit_reached(from);
    }

    /// W001: a send that brings its destination data it already holds, from the start or from
    /// an earlier send (leaving out `msg` in a ring allgather sends b(p) n - 1 times). One
    /// delivery of each (message, destination) by sends is kept; past max_tracked of them (a
    /// very large schedule) the check stops, so it never costs more than a few megabytes.
    void check_wasted(const XStmt& s, MessageId m, std::uint32_t dst) {
        static constexpr std::size_t max_tracked = std::size_t{1} << 18;
        if (delivered_full_) return;
        const auto at = static_cast<std::size_t>(&s - env_.ir.stmts.data());
        if (warned_.empty()) warned_.assign(env_.ir.stmts.size(), 0);
        const bool initially = held_initially(m, dst);
        Step first = 0;
        bool again = false;
        if (!initially) {
            auto [step, fresh] = delivered_.find_or_insert((std::uint64_t{idx(m)} << 32) | dst, [&] { return step_; });
            first = step;
            again = !fresh;
            if (delivered_.size() > max_tracked) {
                delivered_full_ = true;
                delivered_ = FlatMap();
            }
        }
        if (!(initially || again) || warned_[at]) return;  // once per statement
        warned_[at] = 1;
        const std::string why =
            initially ? std::string("which holds it from the start") : fmt::format("which a send in step {} already brings it to", first);
        env_.reporter.warn("W001", s.loc,
                           fmt::format("this send brings {} to processor {}, {}{}", env_.messages.name(m), env_.node_text(dst), why,
                                       env_.context()),
                           env_.options.warnings_are_errors);
    }

    /// A send whose data must have arrived (check_holds); a rerun for contexts records the loop
    /// values of the ones asked for.
    void add_pending(const Pending& p) {
        if (capture_ && next_capture_ < capture_->wanted.size() && capture_->wanted[next_capture_] == out_.pending.size()) {
            capture_->contexts.push_back(env_.context());
            ++next_capture_;
        }
        out_.pending.push_back(p);
    }

    /// A rerun for the loop values of some transfers (transfer_contexts): the transfers this
    /// send or hop just made (message m over route_, from step_ on, or all in step_ under wormhole
    /// timing or for a hop), each looked up among the wanted ones; the first run that makes a
    /// wanted transfer gives its loop values.
    void capture_transfers(MessageId m, bool one_step = false) {
        TransferContexts& tc = *transfer_capture_;
        Step t = step_;
        for (ChannelId c : route_) {
            const Transfer x{one_step || timing_wormhole_ ? step_ : t++, c, m};
            auto it = std::lower_bound(tc.wanted.begin(), tc.wanted.end(), x);
            if (it == tc.wanted.end() || *it != x) continue;
            std::string& slot = tc.contexts[static_cast<std::size_t>(it - tc.wanted.begin())];
            if (slot.empty()) slot = env_.context();
        }
    }

    bool held_initially(MessageId m, std::uint32_t at) const {
        return env_.messages.key(m).src == at && out_.collective.initial(env_.messages, m);
    }

    void send(const XStmt& s) {
        std::int64_t a = env_.eval(s.e0), b = env_.eval(s.e1);
        if (a >= env_.processors)
            fail("E043", env_.ir.exprs[s.e0].loc,
                 fmt::format("a send starts at a processor; {} is a router (write `hop` statements to move data through routers)", env_.node_text(a)));
        if (b >= env_.processors)
            fail("E043", env_.ir.exprs[s.e1].loc,
                 fmt::format("a send ends at a processor; {} is a router (write `hop` statements to move data through routers)", env_.node_text(b)));
        if (a == b) fail("E045", s.loc, fmt::format("send from {} to itself", a));
        auto src = static_cast<std::uint32_t>(a), dst = static_cast<std::uint32_t>(b);
        if (s.e2 == none && env_.messages.chunks() > 1)
            fail("E054", s.loc, fmt::format("a send without `msg` sends a whole datum, but the collective splits every datum into {} chunks: "
                                            "write `msg` with a chunk", env_.messages.chunks()));
        MessageId m = s.e2 != none ? MessageId{static_cast<std::uint32_t>(env_.eval(s.e2))} : default_message(src, dst);
        if (idx(m) == empty_bundle) return;  // a bundle of no message: nothing moves
        if (s.e2 != none) check_bundle(m, s);
        if (out_.policy != LoweringPolicy::cut_through) {
            std::uint32_t d = env_.topo->distance(Node{src}, Node{dst});
            if (step_ + std::int64_t{d} - 1 >= max_step)
                fail("E025", s.loc, fmt::format("a send in step {} would arrive after step 2^31", step_));
            out_.sends.push_back({step_, Node{src}, Node{dst}, m});
            if (env_.options.record_locations) out_.send_origins.push_back(origin_of(s));
            count_ += d;
        } else {
            route_.clear();
            env_.topo->route(Node{src}, Node{dst}, route_);
            if (timing_wormhole_) {
                for (ChannelId c : route_) out_.sink.push({step_, c, m});
            } else {
                if (step_ + static_cast<std::int64_t>(route_.size()) - 1 >= max_step)
                    fail("E025", s.loc, fmt::format("a send in step {} would arrive after step 2^31", step_));
                Step t = step_;
                for (ChannelId c : route_) out_.sink.push({t++, c, m});
            }
            if (transfer_capture_) capture_transfers(m);
            if (env_.options.record_locations) out_.sink.origin(route_.size(), origin_of(s));
            count_ += route_.size();
        }
        // Combined values are left to the verifier (holding one depends on what combines);
        // a bundle needs each of its parts. A streamed run checks holding in the consumer.
        if (consumer_ && env_.messages.is_composite(m)) throw NotStreamable("combined values and bundles are not streamed");
        if (!env_.messages.is_composite(m)) {
            if (!consumer_ && !held_initially(m, src)) add_pending({m, src, step_, s.loc});
            if (!consumer_) check_wasted(s, m, dst);
        } else if (env_.messages.composite(m).kind == MessageKind::bundle) {
            for (MessageId p : env_.messages.composite(m).parts)
                if (!held_initially(p, src)) add_pending({p, src, step_, s.loc});
        }
        check_limit(s);
    }

    /// Recording: the index of the statement's location in out_.origin_names (SendTable::origins).
    std::uint32_t origin_of(const XStmt& s) {
        auto [it, fresh] = origin_index_.emplace(&s, static_cast<std::uint32_t>(out_.origin_names.size()));
        if (fresh) out_.origin_names.push_back(fmt::format("{}:{}:{}", env_.reporter.diags().file(), s.loc.line, s.loc.column));
        return it->second;
    }

    void hop(const XStmt& s) {
        std::int64_t a = env_.eval(s.e0), b = env_.eval(s.e1);
        auto c = env_.topo->find_channel(Node{static_cast<std::uint32_t>(a)}, Node{static_cast<std::uint32_t>(b)});
        if (!c)
            fail("E044", s.loc,
                 fmt::format("there is no channel {} -> {} in {} (a hop crosses one channel; `send` follows a whole route)", env_.node_text(a),
                             env_.node_text(b), env_.topo->spec()));
        MessageId m{static_cast<std::uint32_t>(env_.eval(s.e2))};
        if (idx(m) == empty_bundle) return;  // a bundle of no message: nothing moves
        check_bundle(m, s);
        out_.sink.push({step_, *c, m});
        if (transfer_capture_) {
            route_.assign(1, *c);
            capture_transfers(m, true);
        }
        if (env_.options.record_locations) out_.sink.origin(1, origin_of(s));
        if (out_.policy != LoweringPolicy::cut_through) ++out_.explicit_hops[(std::uint64_t{step_} << 32) | idx(*c)];
        ++count_;
        check_limit(s);
    }

    /// A claim, bound or citation with its value, appended to the table's claims in the order
    /// written (the resolver names each by its table field, XStmt::name).
    void claim(const XStmt& s) {
        std::optional<Claim> c = Claim::of_key(s.name);
        COLLSCHED_ASSERT(c.has_value());
        if (c->kind == Claim::Kind::cite) {
            c->value = static_cast<const ast::Cite*>(s.decl)->text.value;
        } else if (s.form == Form::scalar) {
            c->value = env_.eval(s.e0);
        } else {
            std::vector<std::int64_t> items;
            if (s.form == Form::list) {
                for (std::uint32_t k = 0; k < s.body_n; ++k) items.push_back(env_.eval(env_.ir.lists[s.body + k]));
            } else {
                std::int64_t lo = env_.eval(s.e0), hi = env_.eval(s.e1);
                env_.count_iterations(Env::range_size(lo, hi), s.loc);
                for (std::int64_t v = lo; v <= hi; ++v) {
                    env_.slots[s.slot] = v;
                    items.push_back(env_.eval(s.e2));
                    if (v == hi) break;
                }
            }
            c->value = std::move(items);
        }
        out_.claims.push_back(std::move(*c));
    }

    void require(const XStmt& s) {
        MessageId m{static_cast<std::uint32_t>(env_.eval(s.e0))};
        std::int64_t at = env_.eval(s.e1);
        if (at >= env_.processors)
            fail("E043", env_.ir.exprs[s.e1].loc, fmt::format("require names a processor; {} is a router", env_.node_text(at)));
        if (idx(m) == empty_bundle) return;  // a bundle of no message requires nothing
        // `require b(0) + b(1) at p` requires each part.
        env_.messages.for_each_part(m, [&](MessageId p) { out_.requirements.push_back({p, Node{static_cast<std::uint32_t>(at)}}); });
        ++count_;  // requirements take memory like transfers and count toward the same limit
        check_limit(s);
    }

    /// Model and collective, once the topology is known and before the first schedule statement.
    void finish_header() {
        if (header_done_) return;
        header_done_ = true;
        if (!env_.topo) throw Stop{};
        std::size_t errors = env_.reporter.diags().error_count();
        out_.model = env_.topo->default_model();
        for (std::uint32_t k = 0; k < env_.ir.top_n; ++k) {
            const XStmt& s = env_.ir.stmts[env_.ir.children[env_.ir.top + k]];
            try {
                if (s.kind == SKind::model) out_.model = build_model(env_, *static_cast<const ast::ModelDecl*>(s.decl), out_.model, out_.policy);
                if (s.kind == SKind::collective) {
                    out_.collective = build_collective(env_, *static_cast<const ast::CollectiveDecl*>(s.decl));
                    out_.composites = env_.composites;
                    out_.messages = env_.messages;
                }
            } catch (const EvalError& e) {
                env_.reporter.report(e.code, e.loc, e.message);
            }
        }
        if (env_.reporter.diags().error_count() != errors) throw Stop{};
        if (env_.options.accept && !env_.options.accept(*env_.topo, out_.model, out_.collective)) throw Stop{};  // not wanted: no error
        timing_wormhole_ = out_.model.timing == Timing::wormhole;
        default_send_ = out_.collective.row().send;
    }

    /// The message of a send that names none: the collective's row says which.
    MessageId default_message(std::uint32_t src, std::uint32_t dst) {
        switch (default_send_) {
            case coll::Send::partial: return (*env_.composites).intern({MessageKind::partial, 0, step_, {MessageId{src}}, {}});
            case coll::Send::personal: return env_.messages.personal(src, dst);
            case coll::Send::root_datum: return env_.messages.broadcast(idx(out_.collective.root));
            case coll::Send::own_value: return env_.messages.value(src);
            case coll::Send::own_datum: break;
        }
        return env_.messages.broadcast(src);
    }

    Env env_;
    Evaluated& out_;
    StepConsumer* consumer_ = nullptr;  // streaming
    std::unordered_map<std::uint32_t, std::int64_t> overrides_;  // -D values per param slot
    bool header_done_ = false;
    bool timing_wormhole_ = false;
    coll::Send default_send_ = coll::Send::own_datum;  // the message of a send that names none (the collective's row)
    Step step_ = 0;
    const XStmt* top_ = nullptr;  // the top-level statement running
    std::uint64_t count_ = 0;     // transfers made so far (fifo: route lengths of the sends)
    std::vector<ChannelId> route_;
    std::unordered_map<const XStmt*, std::uint32_t> origin_index_;  // recording: statement -> index into origin_names
    FlatMap delivered_;             // (message, destination) of sends -> the step of the first
    bool delivered_full_ = false;  // too many to track: check_wasted stopped
    std::vector<char> warned_;     // per statement: W001 reported
    PendingContexts* capture_ = nullptr;  // a rerun for the loop values of some pending sends
    std::size_t next_capture_ = 0;
    TransferContexts* transfer_capture_ = nullptr;  // a rerun for the loop values of some transfers
};

}  // namespace

Evaluated evaluate(const IR& ir, const CompileOptions& options, Reporter& reporter, StepConsumer* consumer) {
    Evaluated out;
    Run(ir, options, reporter, out, consumer).run();
    return out;
}

std::vector<std::string> pending_contexts(const IR& ir, const CompileOptions& options, Reporter& reporter,
                                          std::span<const std::size_t> wanted) {
    PendingContexts capture{wanted, {}};
    Evaluated out;
    CompileOptions quiet = options;
    quiet.record_locations = false;
    Run(ir, quiet, reporter, out, nullptr, &capture).run();
    capture.contexts.resize(wanted.size());
    return std::move(capture.contexts);
}

std::vector<std::string> transfer_contexts(const IR& ir, const CompileOptions& options, Reporter& reporter,
                                           std::span<const Transfer> wanted) {
    COLLSCHED_ASSERT(std::is_sorted(wanted.begin(), wanted.end()));
    TransferContexts capture{wanted, std::vector<std::string>(wanted.size())};
    Evaluated out;
    CompileOptions quiet = options;
    quiet.record_locations = false;
    Run(ir, quiet, reporter, out, nullptr, nullptr, &capture).run();
    return std::move(capture.contexts);
}

}  // namespace collsched::compiler
