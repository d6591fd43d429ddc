// The search for the least completion time: static lower bound L, known schedule U, then
// horizons U-1, U-2, ... until one is UNSAT (the optimum is proved) or L is reached.
#include <chrono>
#include <cstdint>
#include <limits>
#include <stdexcept>

#include <fmt/format.h>

#include "support/error.hpp"
#include "support/assert.hpp"
#include "verifier/synth/pareto.hpp"
#include "verifier/synth/greedy.hpp"
#include "verifier/synth/hierarchical.hpp"
#include "verifier/synth/synth.hpp"

namespace collsched {

std::string_view to_string(OptStatus s) {
    switch (s) {
        case OptStatus::proved: return "proved";
        case OptStatus::found: return "found";
        case OptStatus::timeout: return "timeout";
        case OptStatus::infeasible: return "infeasible";
    }
    return "?";
}

OptimizeResult optimize(const SynthInstance& in, const OptimizeOptions& opt) {
    using Clock = std::chrono::steady_clock;
    const auto t0 = Clock::now();
    auto elapsed = [&] { return std::chrono::duration<double>(Clock::now() - t0).count(); };
    OptimizeResult res;
    res.encoding = encoding_for(in);
    res.routes = searched_routes(in);
    const auto deadline = opt.timeout > 0 ? t0 + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(opt.timeout))
                                          : Clock::time_point::max();
    const Deadline run_deadline = Deadline::at(std::min(opt.synth.deadline, deadline));
    // The set-up (bounds, schedules) walks every goal pair: refuse sizes it cannot afford, and
    // beyond the collective's own limit work in the quotient of a translation group.
    const std::uint64_t goals = in.collective.goal_count(in.topology->processors());
    if (goals > max_goal_pairs) return optimize_in_quotient(in, opt);
    if (opt.max_goals > 0 && goals > opt.max_goals)
        throw InputError(fmt::format("{} on {} has {} goal pairs; the synthesizer handles at most {} (its bounds and schedules "
                                     "walk every pair, its encodings hold variables per pair and step)",
                                     in.collective.to_string(), in.topology->spec(), goals, opt.max_goals));
    res.bounds = lower_bounds(in);
    if (std::string why = inject_once_infeasible(in); !why.empty()) {
        res.status = OptStatus::infeasible;
        res.note = std::move(why);
        res.seconds = elapsed();
        return res;
    }
    if (in.chunked() && res.encoding != EncodingKind::combining) {
        // Chunks and rounds (docs/synthesis.md, "Chunks, rounds and the Pareto frontier"). With
        // rounds only the distance bound counts steps (the others count capacity per step, which
        // rounds multiply); the bandwidth bound limits R: with one round per step R = S, so
        // S >= ceil(bound * C); with R given, R < ceil(bound * C) means no schedule at all.
        if (in.rounds) std::erase_if(res.bounds, [](const Bound& b) { return b.name != "distance"; });
        SynthInstance whole = in;
        whole.collective.chunks = 1;
        whole.rounds.reset();
        std::vector<BandwidthBound> bw = bandwidth_bounds(whole);
        if (!bw.empty()) {
            const Ratio lb = bw.front().rounds_per_chunk;
            const Step need = static_cast<Step>(lb.ceil_times(in.collective.chunks));
            if (in.rounds && *in.rounds < need) {
                res.status = OptStatus::infeasible;
                res.note = fmt::format("{} rounds are fewer than the bandwidth bound allows for {} chunks: R >= {} * {} ({})", *in.rounds,
                                       in.collective.chunks, lb.text(), in.collective.chunks, bw.front().detail);
                res.seconds = elapsed();
                return res;
            }
            if (!in.rounds)
                res.bounds.push_back({need, "bandwidth",
                                      fmt::format("one round per step, so S = R >= {} * {} chunks ({})", lb.text(), in.collective.chunks,
                                                  bw.front().detail),
                                      RouteSpace::any, {"one round per step"}});
        }
        std::stable_sort(res.bounds.begin(), res.bounds.end(), [&](const Bound& a, const Bound& b) {
            return std::pair(bound_applies(a, in), a.steps) > std::pair(bound_applies(b, in), b.steps);
        });
    }
    // Only bounds whose assumptions the search satisfies (lower_bounds puts them first).
    if (!res.bounds.empty() && bound_applies(res.bounds.front(), in)) {
        res.lower_bound = res.bounds.front().steps;
        res.lower_bound_reason = fmt::format("{}: {}", res.bounds.front().name, res.bounds.front().detail);
    }
    if (in.collective.goal_count(in.topology->processors()) == 0) {
        res.status = OptStatus::proved;
        res.optimum = 0;
        res.upper_bound = 0;
        res.lower_bound = 0;
        res.upper_bound_source = "nothing to deliver";
        res.lower_bound_reason = "nothing to deliver";
        res.seconds = elapsed();
        return res;
    }
    // The known schedules are of one chunk and one round per step: none for chunked instances.
    // Combining takes the duality's schedule as its known one (of C chunks, one round per step).
    const bool known_ok = !in.chunked() || (res.encoding == EncodingKind::combining && !in.rounds);
    // The greedy synthesizer (verifier/synth/greedy.hpp) gives the first upper bound wherever it applies
    // (its cost is about that of writing its table); on large machines the known schedules then
    // get a quarter of the time left at most, and they replace it only when no longer.
    const bool large = in.topology->processors() > opt.greedy_from;
    // The translates first (cheap where they apply; with --greedy too, being a greedy in the
    // quotient): when they meet the lower bound the greedy and the other known schedules have
    // nothing left to add.
    std::optional<KnownSchedule> translated;
    if (known_ok && opt.constructions) translated = translation_schedule(in, res.lower_bound, run_deadline.when());
    auto adopt = [&](KnownSchedule& k) {
        res.upper_bound = res.known_steps = k.table.steps();
        res.upper_bound_source = res.known_source = std::move(k.source);
        res.witness = std::move(k.table);
    };
    if (translated && res.lower_bound > 0 && translated->table.steps() <= res.lower_bound) {
        adopt(*translated);
        translated.reset();
    }
    const bool settled_early = res.witness.has_value();
    if (!settled_early && greedy_problem(in).empty() && (opt.greedy_only || opt.hierarchical || !in.chunked())) {
        GreedyResult g = greedy_synthesize(in, {opt.seed, run_deadline, opt.synth.memory});
        res.greedy.ran = true;
        res.greedy.only = opt.greedy_only;
        res.greedy.seconds = g.seconds;
        res.greedy.verify_seconds = g.verify_seconds;
        res.greedy.reason = g.reason;
        if (g.table) {
            res.greedy.steps = g.table->steps();
            res.upper_bound = res.known_steps = g.table->steps();
            res.upper_bound_source = res.known_source = g.source;
            res.witness = std::move(g.table);
        }
    }
    if (translated && (!res.upper_bound || translated->table.steps() <= *res.upper_bound)) adopt(*translated);
    const Deadline known_deadline = !(large && res.witness) ? run_deadline
                                    : run_deadline.none()  ? Deadline::after(30)
                                                           : run_deadline.min(Deadline::after(std::max(0.01, run_deadline.left() / 4)));
    if (auto k = known_ok && !opt.greedy_only && !settled_early ? known_schedule(in, opt.constructions, known_deadline.when()) : std::nullopt;
        k && (!res.upper_bound || k->table.steps() <= *res.upper_bound))
        adopt(*k);

    // Machines of boxes, on request: the composition of exact phases (verifier/synth/hierarchical.hpp).
    if (opt.hierarchical) {
        auto h = std::make_shared<HierarchicalResult>(hierarchical_synthesize(in, {opt, run_deadline, opt.synth.memory}));
        if (h->table && (!res.upper_bound || h->table->steps() <= *res.upper_bound)) {
            res.upper_bound = h->table->steps();
            res.upper_bound_source = h->source;
            res.witness = h->table;
        }
        res.hierarchical = std::move(h);
    }

    // The user's schedule (`optimize --start`, verified by the caller): the upper bound to beat.
    if (opt.start && (!res.upper_bound || opt.start->steps() <= *res.upper_bound)) {
        res.upper_bound = opt.start->steps();
        res.upper_bound_source = opt.start_source;
        res.witness = *opt.start;
    }

    auto settle = [&] {
        if (res.upper_bound && *res.upper_bound <= res.lower_bound) {
            res.status = OptStatus::proved;
            res.optimum = res.upper_bound;
            res.lower_bound = *res.upper_bound;
            return true;
        }
        return false;
    };
    auto out_of_time = [&] { return run_deadline.left() <= 0.01; };

    std::unique_ptr<Synthesizer> session;
    Step solver_bound = 0;  // the largest lower bound the solver proved (T+1 after UNSAT at T)
    auto run = [&](Step T) -> SynthResult {
        SynthOptions so = opt.synth;
        so.deadline = run_deadline.when();
        if (opt.start) so.hint = opt.start;
        // What an earlier attempt left to be freed is still resident and counts against the
        // memory limit: wait for it (within the time limit; past it, the encoding stops at once).
        if (!so.memory.none()) wait_for_background_frees(run_deadline);
        if (opt.progress) {
            so.tick = [&, T](double) { opt.progress({T, so.backend, elapsed(), false, Answer::unknown}); };
            opt.progress({T, so.backend, elapsed(), false, Answer::unknown});
        }
        auto s0 = Clock::now();
        // The solver gets what is left of the time limit after encoding, at most the per-call limit.
        auto left = [&]() { return run_deadline.for_call(opt.synth.timeout, 0.01); };
        SynthResult r;
        if (opt.incremental && res.upper_bound) {
            if (!session) session = std::make_unique<Synthesizer>(in, *res.upper_bound - 1, so);
            r = session->solve(T, left());
        } else {
            auto fresh = std::make_unique<Synthesizer>(in, T, so);
            r = fresh->solve(T, left());
            // Seconds of freeing (millions of clauses) must not delay the next decision or the end.
            free_in_background(std::move(fresh));
        }
        double secs = std::chrono::duration<double>(Clock::now() - s0).count();
        res.attempts.push_back({T, r.answer, secs, r.reason});
        if (opt.progress) opt.progress({T, so.backend, elapsed(), true, r.answer});
        return r;
    };

    if (!settle() && !opt.greedy_only && !opt.hierarchical) {
        if (res.upper_bound) {
            // Downward, galloping: the step below the best schedule doubles after every SAT
            // answer and halves the open interval after an UNSAT one, so a weak first schedule
            // costs O(log) solves; a time-out on a jump falls back to one step below the best.
            Step gap = 1;
            while (!out_of_time() && res.lower_bound < *res.upper_bound) {
                const Step U = *res.upper_bound;
                const Step T = U - std::min<Step>(gap, U - res.lower_bound);
                SynthResult r = run(T);
                if (r.answer == Answer::sat) {
                    res.upper_bound = r.witness->steps();
                    res.upper_bound_source = fmt::format("solver ({}), T = {}", to_string(opt.synth.backend), T);
                    res.witness = std::move(r.witness);
                    gap *= 2;
                } else if (r.answer == Answer::unsat) {
                    solver_bound = T + 1;
                    res.lower_bound = T + 1;
                    res.lower_bound_reason = fmt::format("solver ({}): no schedule completes by step {}", to_string(opt.synth.backend), T);
                    gap = std::max<Step>(1, (U - res.lower_bound) / 2);
                } else if (T + 1 < U) {
                    gap = 1;
                } else {
                    break;
                }
            }
            settle();
        } else {
            // No schedule known: upward from the lower bound (each UNSAT raises it).
            Step T = res.lower_bound;
            const Step first_horizon = T;
            const std::string first_reason = res.lower_bound_reason;
            // With R rounds in all, a schedule has at most R steps (each at least one round).
            const Step cap = in.rounds ? *in.rounds : res.lower_bound + 64 * (in.topology->processors() + 4);
            while (T <= cap && !out_of_time()) {
                SynthResult r = run(T);
                if (r.answer == Answer::sat) {
                    res.upper_bound = r.witness->steps();
                    res.upper_bound_source = fmt::format("solver ({}), T = {}", to_string(opt.synth.backend), T);
                    res.witness = std::move(r.witness);
                    settle();
                    break;
                }
                if (r.answer != Answer::unsat) break;
                solver_bound = T + 1;
                res.lower_bound = T + 1;
                res.lower_bound_reason = fmt::format("solver ({}): no schedule completes by step {}", to_string(opt.synth.backend), T);
                ++T;
            }
            if (in.rounds && T > *in.rounds && res.status != OptStatus::proved) {
                res.status = OptStatus::infeasible;
                res.note = fmt::format("no schedule with at most {} rounds: every step lasts at least one round, fewer than {} steps are "
                                       "impossible ({}), and every number of steps from there to {} is UNSAT",
                                       *in.rounds, first_horizon, first_reason, *in.rounds);
                res.seconds = elapsed();
                return res;
            }
        }
    }
    res.solver_unsat = res.status == OptStatus::proved && solver_bound == *res.optimum;
    // A second proof by the solver alone, on request: optimum - 1 must be UNSAT.
    if (res.status == OptStatus::proved && opt.solver_proof && !res.solver_unsat && *res.optimum > 0 && !out_of_time()) {
        Step T = *res.optimum - 1;
        SynthResult r = run(T);
        COLLSCHED_ASSERT_MSG(r.answer != Answer::sat,
                             fmt::format("{} steps proved a lower bound ({}), yet the solver found a {}-step schedule", *res.optimum,
                                         res.lower_bound_reason, r.witness->steps()));
        if (r.answer == Answer::unsat) {
            res.solver_unsat = true;
            res.lower_bound_reason += fmt::format("; and solver ({}): no schedule completes by step {}", to_string(opt.synth.backend), T);
        }
    }
    free_in_background(std::move(session));
    if (res.status != OptStatus::proved) {
        res.status = res.witness ? OptStatus::found : OptStatus::timeout;
        res.optimum = res.upper_bound;
    }
    res.seconds = elapsed();
    return res;
}

}  // namespace collsched
