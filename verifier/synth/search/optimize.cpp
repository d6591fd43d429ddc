// The search for the least completion time: static lower bound L, known schedule U, then
// horizons U-1, U-2, ... until one is UNSAT (the optimum is proved) or L is reached.
#include <chrono>
#include <cstdint>
#include <limits>
#include <stdexcept>

#include <fmt/format.h>

#include "support/error.hpp"
#include "support/assert.hpp"
#include "verifier/synth/bounds/rounds_per_chunk.hpp"
#include "verifier/synth/problem/pareto.hpp"
#include "verifier/constructions/steps/greedy.hpp"
#include "verifier/synth/search/hierarchical.hpp"
#include "verifier/synth/problem/construction.hpp"
#include "verifier/synth/problem/instance.hpp"

namespace collsched {

namespace {

/// The search of optimize(), one method per stage, called in order by run(): the bounds (the
/// rules, then chunks' bandwidth), the schedules that give the first upper bound (translates,
/// greedy, known schedules, hierarchical compositions, the user's start), then the solver's
/// horizons downward from the best schedule or upward from the bound, and the second proof.
class Optimizer {
public:
    Optimizer(const SynthInstance& in, const OptimizeOptions& opt)
        : in_(in), opt_(opt), t0_(Clock::now()),
          run_deadline_(Deadline::at(std::min(opt.synth.deadline, opt.timeout > 0 ? t0_ + std::chrono::duration_cast<Clock::duration>(
                                                                                               std::chrono::duration<double>(opt.timeout))
                                                                                         : Clock::time_point::max()))) {
        res_.encoding = encoding_for(in);
        res_.routes = searched_routes(in);
    }

    OptimizeResult run() {
        refuse_size();
        // The bounds get half of the time left at most: the schedules need the rest.
        const RunLimits bound_limits{run_deadline_.share(0.5), opt_.synth.memory};
        res_.bounds = lower_bounds(in_, bound_limits, &res_.bounds_stopped);
        if (std::string why = inject_once_infeasible(in_); !why.empty() || !(why = buffer_rule_infeasible(in_)).empty()) {
            res_.status = OptStatus::infeasible;
            res_.note = std::move(why);
            return done();
        }
        if (in_.chunked() && res_.encoding != EncodingKind::combining && !chunk_bounds()) return done();
        take_lower_bound();
        if (in_.collective.goal_count(in_.topology->processors()) == 0) return nothing_to_deliver();
        first_schedules();
        if (!settle() && !opt_.greedy_only && !opt_.hierarchical) {
            if (res_.upper_bound) {
                search_down();
            } else if (!search_up()) {
                return done();
            }
        }
        res_.solver_unsat = res_.status == OptStatus::proved && solver_bound_ == *res_.optimum;
        second_proof();
        free_in_background(std::move(session_));
        if (res_.status != OptStatus::proved) {
            res_.status = res_.witness ? OptStatus::found : OptStatus::timeout;
            res_.optimum = res_.upper_bound;
        }
        return done();
    }

private:
    double elapsed() const { return seconds_since(t0_); }
    bool out_of_time() const { return run_deadline_.left() <= 0.01; }

    OptimizeResult done() {
        res_.seconds = elapsed();
        return std::move(res_);
    }

    void refuse_size() const { refuse_goal_pairs(in_, opt_.max_goals); }

    /// Chunks and rounds (docs/synthesis.md, "Chunks, rounds and the Pareto frontier"). With
    /// rounds only the distance bound counts steps (the others count capacity per step, which
    /// rounds multiply); the bandwidth bound limits R: with one round per step R = S, so
    /// S >= ceil(bound * C); with R given, R < ceil(bound * C) means no schedule at all (false).
    bool chunk_bounds() {
        if (in_.rounds) std::erase_if(res_.bounds, [](const Bound& b) { return b.name != "distance"; });
        SynthInstance whole = in_;
        whole.collective.chunks = 1;
        whole.rounds.reset();
        std::vector<BandwidthBound> bw = bandwidth_bounds(whole);
        if (!bw.empty()) {
            const Ratio lb = bw.front().rounds_per_chunk;
            const Step need = static_cast<Step>(lb.ceil_times(in_.collective.chunks));
            if (in_.rounds && *in_.rounds < need) {
                res_.status = OptStatus::infeasible;
                res_.note = fmt::format("{} rounds are fewer than the bandwidth bound allows for {} chunks: R >= {} * {} ({})", *in_.rounds,
                                        in_.collective.chunks, lb.text(), in_.collective.chunks, bw.front().detail);
                return false;
            }
            if (!in_.rounds)
                res_.bounds.push_back({need, "bandwidth",
                                       fmt::format("one round per step, so S = R >= {} * {} chunks ({})", lb.text(), in_.collective.chunks,
                                                   bw.front().detail),
                                       RouteSpace::any, {"one round per step"}});
        }
        std::stable_sort(res_.bounds.begin(), res_.bounds.end(), [&](const Bound& a, const Bound& b) {
            return std::pair(bound_applies(a, in_), a.steps) > std::pair(bound_applies(b, in_), b.steps);
        });
        return true;
    }

    /// Only bounds whose assumptions the search satisfies (lower_bounds puts them first).
    void take_lower_bound() {
        if (!res_.bounds.empty() && bound_applies(res_.bounds.front(), in_)) {
            res_.lower_bound = res_.bounds.front().steps;
            res_.lower_bound_reason = fmt::format("{}: {}", res_.bounds.front().name, res_.bounds.front().detail);
        }
    }

    OptimizeResult nothing_to_deliver() {
        res_.status = OptStatus::proved;
        res_.optimum = 0;
        res_.upper_bound = 0;
        res_.lower_bound = 0;
        res_.upper_bound_source = "nothing to deliver";
        res_.lower_bound_reason = "nothing to deliver";
        return done();
    }

    void adopt(KnownSchedule& k) {
        res_.upper_bound = res_.known_steps = k.table.steps();
        res_.upper_bound_source = res_.known_source = std::move(k.source);
        res_.witness = std::move(k.table);
    }

    /// The first upper bound: the translates (cheap where they apply; with --greedy too, being a
    /// greedy in the quotient), settling at once when they meet the lower bound; the greedy
    /// wherever it applies; the known schedules (on large machines a quarter of the time left
    /// at most once the greedy has one), the hierarchical compositions, the user's start.
    void first_schedules() {
        // The known schedules are of one chunk and one round per step: none for chunked instances.
        // Combining takes the duality's schedule as its known one (of C chunks, one round per step).
        const bool known_ok = !in_.chunked() || (res_.encoding == EncodingKind::combining && !in_.rounds);
        const bool large = in_.topology->processors() > opt_.greedy_from;
        std::optional<KnownSchedule> translated;
        if (known_ok && opt_.constructions)
            translated = translation_schedule(in_, opt_.registry, res_.lower_bound, run_deadline_.when(), opt_.synth.memory);
        if (translated && res_.lower_bound > 0 && translated->table.steps() <= res_.lower_bound) {
            adopt(*translated);
            translated.reset();
        }
        const bool settled_early = res_.witness.has_value();
        if (!settled_early && greedy_problem(in_).empty() && (opt_.greedy_only || opt_.hierarchical || !in_.chunked())) greedy();
        if (translated && (!res_.upper_bound || translated->table.steps() <= *res_.upper_bound)) adopt(*translated);
        const Deadline known_deadline = !(large && res_.witness) ? run_deadline_
                                        : run_deadline_.none()  ? Deadline::after(30)
                                                                : run_deadline_.min(Deadline::after(std::max(0.01, run_deadline_.left() / 4)));
        if (auto k = known_ok && !opt_.greedy_only && !settled_early ? known_schedule(in_, opt_.registry, opt_.constructions, known_deadline.when(), opt_.synth.memory)
                                                                     : std::nullopt;
            k && (!res_.upper_bound || k->table.steps() <= *res_.upper_bound))
            adopt(*k);
        // The rows of stage `chunks`, the rings (allgather of C, allreduce of a multiple of kP chunks meet the bounds).
        const std::vector<KnownSchedule> none;
        if (auto r = opt_.constructions && !opt_.greedy_only && !settled_early
                         ? stage_schedule(StepStage::chunks, {in_, known_deadline.when(), none, res_.lower_bound, opt_.synth.memory}, opt_.registry)
                         : std::nullopt;
            r && (!res_.upper_bound || r->table.steps() < *res_.upper_bound))
            adopt(*r);
        if (opt_.hierarchical) hierarchical();
        // The user's schedule (`optimize --start`, verified by the caller): the upper bound to beat.
        if (opt_.start && (!res_.upper_bound || opt_.start->steps() <= *res_.upper_bound)) {
            res_.upper_bound = opt_.start->steps();
            res_.upper_bound_source = opt_.start_source;
            res_.witness = *opt_.start;
        }
    }

    /// The greedy synthesizer (verifier/constructions/steps/greedy.hpp): its cost is about that of writing its table.
    void greedy() {
        GreedyResult g = greedy_synthesize(in_, {opt_.seed, run_deadline_, opt_.synth.memory});
        res_.greedy.ran = true;
        res_.greedy.only = opt_.greedy_only;
        res_.greedy.seconds = g.seconds;
        res_.greedy.verify_seconds = g.verify_seconds;
        res_.greedy.reason = g.reason;
        if (g.table) {
            res_.greedy.steps = g.table->steps();
            res_.upper_bound = res_.known_steps = g.table->steps();
            res_.upper_bound_source = res_.known_source = g.source;
            res_.witness = std::move(g.table);
        }
    }

    /// Machines of boxes, on request: the composition of exact phases (verifier/synth/search/hierarchical.hpp).
    void hierarchical() {
        auto h = std::make_shared<HierarchicalResult>(hierarchical_synthesize(in_, {opt_, run_deadline_, opt_.synth.memory}));
        if (h->table && (!res_.upper_bound || h->table->steps() <= *res_.upper_bound)) {
            res_.upper_bound = h->table->steps();
            res_.upper_bound_source = h->source;
            res_.witness = h->table;
        }
        res_.hierarchical = std::move(h);
    }

    /// Proved when the best verified schedule meets the lower bound; a bound above it is a bug.
    bool settle() {
        if (!res_.upper_bound) return false;
        COLLSCHED_ASSERT_MSG(*res_.upper_bound >= res_.lower_bound,
                             bound_above_schedule(fmt::format("{} steps ({})", res_.lower_bound, res_.lower_bound_reason),
                                                  fmt::format("{} steps ({})", *res_.upper_bound, res_.upper_bound_source)));
        if (*res_.upper_bound == res_.lower_bound) {
            res_.status = OptStatus::proved;
            res_.optimum = res_.upper_bound;
            return true;
        }
        return false;
    }

    /// One solver call at horizon T, recorded in attempts (and reported to --progress).
    SynthResult solve(Step T) {
        SynthOptions so = opt_.synth;
        so.deadline = run_deadline_.when();
        if (opt_.start) so.hint = opt_.start;
        // What an earlier attempt left to be freed is still resident and counts against the
        // memory limit: wait for it (within the time limit; past it, the encoding stops at once).
        if (!so.memory.none()) wait_for_background_frees(run_deadline_);
        if (opt_.progress) {
            so.tick = [&, T](double) { opt_.progress({T, so.backend, elapsed(), false, Answer::unknown}); };
            opt_.progress({T, so.backend, elapsed(), false, Answer::unknown});
        }
        auto s0 = Clock::now();
        // The solver gets what is left of the time limit after encoding, at most the per-call limit.
        auto left = [&]() { return run_deadline_.for_call(opt_.synth.timeout, 0.01); };
        SynthResult r;
        if (opt_.incremental && res_.upper_bound) {
            if (!session_) session_ = std::make_unique<Synthesizer>(in_, *res_.upper_bound - 1, so);
            r = session_->solve(T, left());
        } else {
            auto fresh = std::make_unique<Synthesizer>(in_, T, so);
            r = fresh->solve(T, left());
            // Seconds of freeing (millions of clauses) must not delay the next decision or the end.
            free_in_background(std::move(fresh));
        }
        double secs = std::chrono::duration<double>(Clock::now() - s0).count();
        res_.attempts.push_back({T, r.answer, secs, r.reason});
        if (opt_.progress) opt_.progress({T, so.backend, elapsed(), true, r.answer});
        return r;
    }

    void found(SynthResult& r, Step T) {
        res_.upper_bound = r.witness->steps();
        res_.upper_bound_source = fmt::format("solver ({}), T = {}", to_string(opt_.synth.backend), T);
        res_.witness = std::move(r.witness);
    }

    void refuted(Step T) {
        solver_bound_ = T + 1;
        res_.lower_bound = T + 1;
        res_.lower_bound_reason = fmt::format("solver ({}): no schedule completes by step {}", to_string(opt_.synth.backend), T);
    }

    /// Downward, galloping: the step below the best schedule doubles after every SAT answer and
    /// halves the open interval after an UNSAT one, so a weak first schedule costs O(log)
    /// solves; a time-out on a jump falls back to one step below the best.
    void search_down() {
        Step gap = 1;
        while (!out_of_time() && res_.lower_bound < *res_.upper_bound) {
            const Step U = *res_.upper_bound;
            const Step T = U - std::min<Step>(gap, U - res_.lower_bound);
            SynthResult r = solve(T);
            if (r.answer == Answer::sat) {
                found(r, T);
                gap *= 2;
            } else if (r.answer == Answer::unsat) {
                refuted(T);
                gap = std::max<Step>(1, (U - res_.lower_bound) / 2);
            } else if (T + 1 < U) {
                gap = 1;
            } else {
                break;
            }
        }
        settle();
    }

    /// No schedule known: upward from the lower bound (each UNSAT raises it). False when R
    /// rounds are too few for any number of steps (then infeasible).
    bool search_up() {
        Step T = res_.lower_bound;
        const Step first_horizon = T;
        const std::string first_reason = res_.lower_bound_reason;
        // With R rounds in all, a schedule has at most R steps (each at least one round).
        const Step cap = in_.rounds ? *in_.rounds : res_.lower_bound + 64 * (in_.topology->processors() + 4);
        while (T <= cap && !out_of_time()) {
            SynthResult r = solve(T);
            if (r.answer == Answer::sat) {
                found(r, T);
                settle();
                break;
            }
            if (r.answer != Answer::unsat) break;
            refuted(T);
            ++T;
        }
        if (in_.rounds && T > *in_.rounds && res_.status != OptStatus::proved) {
            res_.status = OptStatus::infeasible;
            res_.note = fmt::format("no schedule with at most {} rounds: every step lasts at least one round, fewer than {} steps are "
                                    "impossible ({}), and every number of steps from there to {} is UNSAT",
                                    *in_.rounds, first_horizon, first_reason, *in_.rounds);
            return false;
        }
        return true;
    }

    /// A second proof by the solver alone, on request: optimum - 1 must be UNSAT.
    void second_proof() {
        if (res_.status != OptStatus::proved || !opt_.solver_proof || res_.solver_unsat || *res_.optimum == 0 || out_of_time()) return;
        const Step T = *res_.optimum - 1;
        SynthResult r = solve(T);
        COLLSCHED_ASSERT_MSG(r.answer != Answer::sat,
                             fmt::format("{} steps proved a lower bound ({}), yet the solver found a {}-step schedule", *res_.optimum,
                                         res_.lower_bound_reason, r.witness->steps()));
        if (r.answer == Answer::unsat) {
            res_.solver_unsat = true;
            res_.lower_bound_reason += fmt::format("; and solver ({}): no schedule completes by step {}", to_string(opt_.synth.backend), T);
        }
    }

    const SynthInstance& in_;
    const OptimizeOptions& opt_;
    const Clock::time_point t0_;
    const Deadline run_deadline_;
    OptimizeResult res_;
    std::unique_ptr<Synthesizer> session_;  ///< the incremental solver, when asked for
    Step solver_bound_ = 0;                 ///< the largest lower bound the solver proved (T+1 after UNSAT at T)
};

}  // namespace

void refuse_goal_pairs(const Collective& c, std::uint32_t processors, std::string_view topology, std::uint64_t max_goals) {
    const std::uint64_t goals = c.goal_count(processors);
    if (max_goals > 0 && goals > max_goals)
        throw InputError(fmt::format("{} on {} has {} goal pairs; the synthesizer handles at most {} (its bounds and schedules "
                                     "walk every pair, its encodings hold variables per pair and step)",
                                     c.to_string(), topology, goals, max_goals));
}

void refuse_goal_pairs(const SynthInstance& in, std::uint64_t max_goals) {
    refuse_goal_pairs(in.collective, in.topology->processors(), in.topology->spec(), max_goals);
}

OptimizeResult optimize(const SynthInstance& in, const OptimizeOptions& opt) {
    // Beyond the collective's own limit work in the quotient of a translation group.
    if (in.collective.goal_count(in.topology->processors()) > max_goal_pairs) return optimize_in_quotient(in, opt);
    return Optimizer(in, opt).run();
}

}  // namespace collsched
