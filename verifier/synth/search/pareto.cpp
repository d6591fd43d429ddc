// Latency against bandwidth: the bandwidth bound by cut counting, one (steps, chunks, rounds)
// instance through the synthesizer, and the walk over steps that proves the Pareto frontier.
#include "verifier/synth/problem/pareto.hpp"

#include <algorithm>
#include <bit>
#include <chrono>
#include <map>
#include <numeric>
#include <optional>
#include <tuple>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "support/error.hpp"
#include "support/assert.hpp"
#include "verifier/synth/bounds/bandwidth.hpp"
#include "verifier/synth/bounds/rounds_per_chunk.hpp"
#include "verifier/synth/symmetry/automorphisms.hpp"
#include "verifier/check/direct.hpp"
#include "verifier/synth/search/pareto_calls.hpp"
#include "verifier/synth/symmetry/processor_orbits.hpp"
#include "verifier/synth/sat/encode.hpp"
#include "verifier/constructions/steps/tree_packing.hpp"

namespace collsched {

namespace {

}  // namespace

SynthResult solve_rounds(const SynthInstance& base, Step steps, std::uint32_t chunks, Step rounds, const SynthOptions& opt) {
    SynthInstance in = base;
    in.collective.chunks = chunks;
    in.rounds = rounds;
    Synthesizer s(in, steps, opt);
    return s.solve(steps);
}

namespace {

/// The bandwidth end of the frontier: the tree packing with C = q, 2q, .. for a bound p/q.
void add_packed_end(const SynthInstance& in, double seconds, const RunLimits& limits, ParetoResult& res) {
    if (std::string why = packing_problem(in); !why.empty() || res.bounds.empty()) {
        res.packed_note = why.empty() ? "no bandwidth bound" : why;
        return;
    }
    PackingOptions po;
    po.target = res.bandwidth_bound;
    const std::uint32_t P = in.topology->processors();
    po.outside = in.collective.kind == CollectiveKind::allgather ? cut_outside(res.bounds.front(), P) : 1;
    po.chunks = chunks_for(res.bandwidth_bound, 256, po.outside, P);
    po.seconds = seconds;
    po.limits = limits;
    std::string stopped;
    po.stopped = &stopped;
    // One round per step, as the walk's rows from the least steps (of one-round steps) assume.
    po.merge = false;
    std::optional<PackedSchedule> p = pack_trees(in, po);
    if (!p) {
        res.packed_note = stopped.empty() ? "the tree packing stalled" : "the tree packing stopped: " + stopped;
        return;
    }
    ParetoPoint pt;
    pt.steps = p->steps;
    pt.chunks = p->chunks;
    pt.rounds = p->rounds;
    for (Step t = 1; t <= p->steps; ++t) pt.step_rounds.push_back(p->table.rounds(t));
    pt.table = std::move(p->table);
    res.packed_depth = p->depth;
    COLLSCHED_ASSERT_MSG(!(p->rounds_per_chunk() < res.bandwidth_bound) && p->rounds >= p->least_rounds,
                         bound_above_schedule(fmt::format("R/C >= {} (R >= {} for {} chunks)", res.bandwidth_bound.text(), p->least_rounds, p->chunks),
                                              fmt::format("R/C = {} ({} rounds, {})", p->rounds_per_chunk().text(), p->rounds, p->method)));
    res.packed_optimal = p->rounds_per_chunk() == res.bandwidth_bound;
    const std::string cut = res.bounds.front().certificate ? "the cut of the bound above" : res.bounds.front().name;
    if (res.packed_optimal)
        res.packed_note = fmt::format("proved bandwidth-optimal: R/C = {} meets the bound ({}), built by {}", p->rounds_per_chunk().text(), cut, p->method);
    else if (po.outside >= 2 && p->rounds == p->least_rounds)
        res.packed_note = fmt::format("R/C = {}, above the bound {}, which no C attains (its cut leaves {} processors outside: R >= {} C + {}/{}); "
                                      "proved optimal for {} chunks (R >= {}), built by {}",
                                      p->rounds_per_chunk().text(), res.bandwidth_bound.text(), po.outside, res.bandwidth_bound.text(), po.outside - 1,
                                      po.outside, p->chunks, p->least_rounds, p->method);
    else if (p->rounds == p->least_rounds)
        res.packed_note = fmt::format("R/C = {}, above the bound {}; proved optimal for {} chunks (R >= {} by {}), built by {}", p->rounds_per_chunk().text(),
                                      res.bandwidth_bound.text(), p->chunks, p->least_rounds, cut, p->method);
    else
        res.packed_note = fmt::format("R/C = {}, above the bound {} (for {} chunks the cut says R >= {}), built by {}", p->rounds_per_chunk().text(),
                                      res.bandwidth_bound.text(), p->chunks, p->least_rounds, p->method);
    res.packed = std::move(pt);
}

/// The packed end merged into steps of several rounds (tree_packing.hpp, merge_steps). The rows
/// start from the least steps of one-round steps; a step of r rounds may carry r times as much,
/// so a schedule with fewer steps can exist (nvswitch8 allgather: 3 steps of 2+2+3 rounds against
/// the least 7 one-round steps). When the merged packing meets the bandwidth bound with fewer
/// steps than every row, it dominates all of them: it becomes the first row, the only frontier
/// point known, and the frontier is not complete (fewer steps are not searched).
void add_merged_end(ParetoResult& res, RunLimits limits) {
    if (!res.packed || !res.packed_optimal) return;
    // A table of fewer than 2^18 transfers merges and verifies in milliseconds: done even past
    // the deadline (the walk ends at it); a larger one only within the limits.
    if (res.packed->table.transfers.size() < (std::size_t{1} << 18)) limits = {};
    else if (limits.reached()) return;
    PackedSchedule m;
    m.table = res.packed->table;
    m.chunks = res.packed->chunks;
    m.steps = res.packed->steps;
    m.rounds = res.packed->rounds;
    try {
        merge_steps(m, limits);
    } catch (const LimitReached&) {
        return;
    }
    // The first point of the rows: the merged schedule matters only with fewer steps.
    auto first_point = std::find_if(res.rows.begin(), res.rows.end(), [](const ParetoRow& r) { return r.best.has_value(); });
    if (first_point != res.rows.end() && m.steps >= first_point->steps) return;
    if (first_point == res.rows.end() && m.steps >= res.packed->steps) return;
    VerifyOptions vo;
    vo.deadline = limits.deadline;
    const VerifyReport r = verify_direct(m.table, vo);
    if (r.verdict() == "unknown") return;  // the deadline stopped the check
    COLLSCHED_ASSERT_MSG(r.holds(), "the merged packed table does not verify");
    ParetoPoint pt;
    pt.steps = m.steps;
    pt.chunks = m.chunks;
    pt.rounds = m.rounds;
    for (Step t = 1; t <= m.steps; ++t) pt.step_rounds.push_back(m.table.rounds(t));
    pt.table = std::move(m.table);
    for (ParetoRow& row : res.rows)
        if (row.steps >= m.steps) row.frontier = false;  // dominated: as many steps or more, R/C no lower
    ParetoRow row;
    row.steps = pt.steps;
    row.frontier = true;
    row.excluded = fmt::format("R/C = {} is the bandwidth bound, so no schedule with any number of steps and chunks has fewer rounds per "
                               "chunk (the packed schedule merged into {} steps of several rounds; the bound's cut: {}); it dominates "
                               "every row after it, which start from the least steps of one-round steps",
                               res.bandwidth_bound.text(), pt.steps, res.bounds.front().detail);
    row.best = std::move(pt);
    // In order of steps, after the rows of fewer steps (those the walk left without a point).
    auto at = std::find_if(res.rows.begin(), res.rows.end(), [&](const ParetoRow& x) { return x.steps >= row.steps; });
    res.rows.insert(at, std::move(row));
    res.complete = false;
    res.end += fmt::format("; the bound is met in {} steps by the packed schedule merged into steps of several rounds", m.steps);
}

/// The row of a packed schedule that meets the bound: nothing has fewer rounds per chunk.
ParetoRow packed_row(const ParetoResult& res) {
    ParetoRow row;
    row.steps = res.packed->steps;
    row.best = res.packed;
    row.frontier = true;
    row.excluded = fmt::format("R/C = {} is the bandwidth bound, so no schedule with any number of steps and chunks has fewer rounds per "
                               "chunk (a tree packing, {} steps, {} chunks; the bound's cut: {})",
                               res.bandwidth_bound.text(), res.packed->steps, res.packed->chunks, res.bounds.front().detail);
    return row;
}

}  // namespace

namespace {

/// The pairs (C <= K chunks, R >= max(S, ceil(bound * C)) rounds) whose R/C is below the line,
/// one at a time in ascending R/C, then ascending C. A heap holds each C's next R, so the walk
/// costs K entries and is stopped by the deadline between pairs. A list of every pair, sorted
/// (what this replaces), was about 50 million pairs for ebft:16 alltoall with --max-chunks 4096
/// (R/C between 15 and 21): 11 s of CPU and 400 MB before the first solver call, past a 5 s
/// limit (issue 34).
class PairWalk {
public:
    PairWalk(Step S, std::uint32_t max_chunks, Ratio bound, Ratio line) : line_(line) {
        for (std::uint32_t C = 1; C <= max_chunks; ++C) {
            const Step R = static_cast<Step>(std::max<std::uint64_t>(S, bound.ceil_times(C)));
            if (Ratio::of(R, C) < line_) heap_.push_back({C, R});
        }
        std::make_heap(heap_.begin(), heap_.end(), later);
    }
    /// The next pair (C, R), or nothing when every pair below the line was given.
    std::optional<std::pair<std::uint32_t, Step>> next() {
        if (heap_.empty()) return std::nullopt;
        std::pop_heap(heap_.begin(), heap_.end(), later);
        const auto [C, R] = heap_.back();
        heap_.pop_back();
        if (Ratio::of(R + 1, C) < line_) {
            heap_.push_back({C, R + 1});
            std::push_heap(heap_.begin(), heap_.end(), later);
        }
        return std::pair{C, R};
    }

private:
    /// Whether `a` comes after `b` (std::*_heap keep the pair that comes first on top).
    static bool later(const std::pair<std::uint32_t, Step>& a, const std::pair<std::uint32_t, Step>& b) {
        const std::uint64_t x = std::uint64_t{a.second} * b.first, y = std::uint64_t{b.second} * a.first;
        return x != y ? x > y : a.first > b.first;
    }
    Ratio line_;
    std::vector<std::pair<std::uint32_t, Step>> heap_;
};

/// The pairs without an answer, the first 12 of them: a walk that reaches hundreds of pairs
/// (each refused by the memory budget in milliseconds) would otherwise print them all on one line.
std::string pair_list(const std::vector<std::string>& pairs) {
    constexpr std::size_t shown = 12;
    if (pairs.size() <= shown) return fmt::format("{}", fmt::join(pairs, ", "));
    return fmt::format("{} and {} more", fmt::join(pairs.begin(), pairs.begin() + shown, ", "), pairs.size() - shown);
}

}  // namespace

namespace {

using pareto_calls::Answered;
using pareto_calls::Call;
using pareto_calls::CallContext;
using pareto_calls::CallRunner;

/// The walk over steps (see pareto in verifier/synth/problem/pareto.hpp): rows S = first, first + 1, ...; in
/// each, the pairs (C, R) below the line in PairWalk's order, decided `width` at a time, the
/// first SAT in that order ending the row. A batch is the walk's next pairs of the row: the
/// answers read are those of the pairs up to the first SAT, the pairs a one-at-a-time walk
/// decides, so the rows are the same for every width (docs/synthesis.md, "Threads and MPI ranks").
class Walk {
public:
    Walk(const SynthInstance& in, const ParetoOptions& opt, Clock::time_point t0, ParetoResult& res, const CallRunner& calls)
        : in_(in), opt_(opt), t0_(t0), res_(res), calls_(calls), lb_(res.bandwidth_bound),
          cap_(Ratio::of(std::uint64_t{in.topology->nodes()} * std::max<std::uint64_t>(1, in.collective.goal_count(in.topology->processors())) + 1, 1)) {}

    void run();

private:
    double elapsed() const { return seconds_since(t0_); }
    bool out_of_time() const { return opt_.timeout > 0 && elapsed() >= opt_.timeout; }
    Call call(Step S, std::uint32_t C, Step R) const;
    void search_row(ParetoRow& row);
    void commit(ParetoRow& row, RoundsAttempt a, Answered& got);
    void end_early(std::string why);

    const SynthInstance& in_;
    const ParetoOptions& opt_;
    Clock::time_point t0_;
    ParetoResult& res_;
    const CallRunner& calls_;
    const Ratio lb_;
    /// Before the first point every R/C up to cap_ is a candidate: each round carries at least
    /// one transfer, and no more than nodes x messages x C transfers are useful.
    const Ratio cap_;
    std::optional<Ratio> line_;  ///< the best R/C of the rows so far
    bool all_proved_ = true;
    std::vector<std::string> unsat_pairs_, open_pairs_;  ///< of the row being searched
};

Call Walk::call(Step S, std::uint32_t C, Step R) const {
    Call c{S, C, R, opt_.synth.timeout, Clock::time_point::max()};
    if (opt_.solve_timeout > 0) c.timeout = c.timeout > 0 ? std::min(c.timeout, opt_.solve_timeout) : opt_.solve_timeout;
    if (opt_.timeout > 0) {
        const double left = std::max(0.01, opt_.timeout - elapsed());
        c.timeout = c.timeout > 0 ? std::min(c.timeout, left) : left;
        c.deadline = t0_ + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(opt_.timeout));
    }
    return c;
}

void Walk::search_row(ParetoRow& row) {
    const Step S = row.steps;
    PairWalk walk(S, opt_.max_chunks, lb_, line_ ? *line_ : cap_);
    for (;;) {
        if (out_of_time()) {
            row.proved = false;
            return;
        }
        std::vector<Call> batch;
        for (std::optional<std::pair<std::uint32_t, Step>> pair; batch.size() < calls_.width() && (pair = walk.next());)
            batch.push_back(call(S, pair->first, pair->second));
        if (batch.empty()) return;
        std::vector<RoundsAttempt> attempts(batch.size());
        for (std::size_t i = 0; i < batch.size(); ++i) {
            attempts[i].steps = S, attempts[i].chunks = batch[i].chunks, attempts[i].rounds = batch[i].rounds;
            if (opt_.progress) opt_.progress(attempts[i], false, elapsed());
        }
        std::vector<Answered> got = calls_.run(batch);
        for (std::size_t i = 0; i < batch.size(); ++i) {
            const bool sat = got[i].result.answer == Answer::sat;
            commit(row, attempts[i], got[i]);
            if (sat) return;  // the answers after it are not read
        }
    }
}

/// Takes one answer into the row, in the walk's order.
void Walk::commit(ParetoRow& row, RoundsAttempt a, Answered& got) {
    SynthResult& r = got.result;
    a.answer = r.answer;
    a.reason = r.reason;
    a.seconds = got.seconds;
    row.attempts.push_back(a);
    if (opt_.progress) opt_.progress(a, true, elapsed());
    const auto [S, C, R] = std::tuple{a.steps, a.chunks, a.rounds};
    if (r.answer == Answer::sat) {
        ParetoPoint p;
        p.chunks = C;
        p.step_rounds = r.step_rounds;
        p.rounds = std::accumulate(r.step_rounds.begin(), r.step_rounds.end(), Step{0});
        p.table = std::move(*r.witness);
        p.steps = p.table.steps();
        // With every answer before it proved, the schedule uses exactly S steps and R rounds:
        // less would contradict an UNSAT answer or the bandwidth bound (a wrong proof somewhere,
        // the worst bug this tool can have).
        COLLSCHED_ASSERT_MSG(!(all_proved_ && row.proved) || (p.rounds == R && p.steps == S),
                             fmt::format("S = {}, C = {}: the schedule found for R = {} uses {} rounds and {} steps", S, C, R, p.rounds, p.steps));
        row.best = std::move(p);
    } else if (r.answer == Answer::unsat) {
        unsat_pairs_.push_back(fmt::format("(C = {}, R = {})", C, R));
    } else {
        row.proved = false;
        open_pairs_.push_back(fmt::format("(C = {}, R = {})", C, R));
    }
}

/// Ended early: the packed schedule that meets the bound is still a point (verified, and
/// nothing has fewer rounds per chunk), unless a row already met the bound.
void Walk::end_early(std::string why) {
    res_.end = std::move(why);
    all_proved_ = false;
    if (res_.packed_optimal && (!line_ || !(*line_ <= lb_))) res_.rows.push_back(packed_row(res_));
}

void Walk::run() {
    // The least-steps schedule of one chunk and one round per step (verified by optimize): a
    // point of the frontier's search space at its number of steps.
    const Step smin = res_.least_steps.witness ? res_.least_steps.witness->steps() : 0;  // 0: none
    for (Step S = res_.first_steps;; ++S) {
        if (res_.packed_optimal && S >= res_.packed->steps && S > res_.first_steps) {
            // The packed schedule meets the bound: no row from here on can do better.
            if (!line_ || !(*line_ <= lb_)) res_.rows.push_back(packed_row(res_));
            res_.end = fmt::format("the packed schedule meets the bandwidth bound {} at {} steps", lb_.text(), res_.packed->steps);
            break;
        }
        if (opt_.max_steps > 0 && S > opt_.max_steps) {
            end_early(fmt::format("--max-steps {} reached", opt_.max_steps));
            break;
        }
        if (out_of_time()) {
            end_early("time limit");
            break;
        }
        ParetoRow row;
        row.steps = S;
        if (smin > 0 && S == smin && (!line_ || Ratio::of(smin, 1) < *line_)) {
            line_ = Ratio::of(smin, 1);
            ParetoPoint p;
            p.steps = smin;
            p.chunks = 1;
            p.rounds = smin;
            p.step_rounds.assign(smin, 1);
            p.table = *res_.least_steps.witness;
            row.best = std::move(p);
        }
        unsat_pairs_.clear();
        open_pairs_.clear();
        // Ascending R/C: the first SAT is the least R/C with S steps, every pair before it
        // was refuted (feasibility is monotone in R, but ascending order tests each pair anyway).
        search_row(row);
        if (row.best) {
            line_ = row.best->rounds_per_chunk();
            row.frontier = true;
        }
        const std::string refuted = unsat_pairs_.empty() ? std::string() : fmt::format("UNSAT for {}; ", fmt::join(unsat_pairs_, ", "));
        const std::string open = open_pairs_.empty() ? std::string("the pairs the time limit left") : pair_list(open_pairs_);
        all_proved_ = all_proved_ && row.proved;
        if (!line_) {  // no schedule with S steps at any R/C up to the cap: only before the first point
            row.excluded = row.proved ? fmt::format("no schedule with {} steps and at most {} chunks: {}every pair (C, R) refuted", S,
                                                    opt_.max_chunks, refuted)
                                      : fmt::format("NOT settled whether a schedule with {} steps and at most {} chunks exists: {}no answer "
                                                    "for {}",
                                                    S, opt_.max_chunks, refuted, open);
            res_.rows.push_back(std::move(row));
            continue;
        }
        if (row.proved)
            row.excluded = fmt::format("no schedule with {} steps and at most {} chunks has R/C below {}: {}every other pair (C, R) below "
                                       "it has R < {} (a step lasts at least one round) or R/C below the bandwidth bound {}",
                                       S, opt_.max_chunks, line_->text(), refuted, S, lb_.text());
        else
            row.excluded = fmt::format("NOT settled whether a schedule with {} steps and at most {} chunks has R/C below {}: {}no answer for {}",
                                       S, opt_.max_chunks, line_->text(), refuted, open);
        res_.rows.push_back(std::move(row));
        if (!res_.bounds.empty() && *line_ == lb_) {
            res_.end = fmt::format("the bandwidth bound {} is met", lb_.text());
            break;
        }
        if (!PairWalk(S + 1, opt_.max_chunks, lb_, *line_).next()) {
            res_.end = fmt::format("with more steps no R/C below {} is possible with at most {} chunks (R >= S, R/C >= {})", line_->text(),
                                   opt_.max_chunks, lb_.text());
            break;
        }
    }
    res_.complete = all_proved_;
}

}  // namespace

ParetoResult pareto(const SynthInstance& in, const ParetoOptions& opt) {
    const auto t0 = Clock::now();
    if (opt.max_chunks == 0) throw InputError("--max-chunks must be at least 1");
    if (in.collective.chunks != 1 || in.rounds)
        throw InputError("pareto searches the chunks and rounds itself: give the collective without chunks");
    ParetoResult res;
    if (opt.sharing && !opt.sharing->leader()) {
        // A follower answers the leader's calls; the leader reports.
        const CallContext cx{in, opt, {}};
        opt.sharing->serve(std::max(1u, opt.jobs), CallRunner(cx).runner());
        return res;
    }
    // optimize() below would refuse the size after the counting and the automorphisms: before them.
    refuse_goal_pairs(in, default_max_goals);
    // One deadline for every part of the walk: the counting, the automorphisms, optimize and each solve.
    const Clock::time_point deadline =
        opt.timeout > 0 ? t0 + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(opt.timeout)) : Clock::time_point::max();
    res.bounds = bandwidth_bounds(in, deadline);
    res.bandwidth_bound = res.bounds.empty() ? Ratio{0, 1} : res.bounds.front().rounds_per_chunk;
    // The combining encoding has no invariant restriction: search it whole.
    const CallContext cx{in, opt,
                         opt.use_automorphisms && encoding_for(in) != EncodingKind::combining ? automorphisms(in, 64, deadline)
                                                                                              : std::vector<std::vector<std::uint32_t>>{}};

    // The packing gets at most a quarter of the time limit; the walk the rest.
    add_packed_end(in, opt.timeout > 0 ? opt.timeout / 4 : 0, RunLimits{Deadline::at(deadline), opt.synth.memory}, res);

    OptimizeOptions oo{opt.registry};
    oo.synth = opt.synth;
    oo.synth.deadline = std::min(oo.synth.deadline, deadline);
    // Half of what is left: the walk below does not depend on it (it starts from the distance
    // bound), and the least one-round steps give it one point and the status line.
    oo.timeout = opt.timeout > 0 ? std::max(0.01, (opt.timeout - seconds_since(t0)) / 2) : 0;
    res.least_steps = optimize(in, oo);
    if (res.least_steps.status == OptStatus::infeasible) {  // its reason holds for every chunk count and round
        res.end = "no schedule exists with any steps, chunks or rounds (the least steps say why)";
        res.complete = true;
        res.seconds = seconds_since(t0);
        return res;
    }
    // The rows start at the least steps of schedules with any rounds per step, which may be
    // fewer than the least one-round steps: a step of r rounds carries r times every capacity,
    // but a chunk still crosses one channel per step, so only the distance bound holds for them
    // (nvswitch8 allgather: 7 one-round steps, 1 step of 7 rounds). The rows' proofs are their
    // own (UNSAT answers and the bandwidth bound): they do not need the least steps proved.
    Step first = 1;
    for (const Bound& b : res.least_steps.bounds)
        if (b.name == "distance") first = std::max(first, b.steps);
    if (res.least_steps.status == OptStatus::proved) first = std::min(first, *res.least_steps.optimum);
    res.first_steps = first;
    const CallRunner calls(cx);
    Walk(in, opt, t0, res, calls).run();
    add_merged_end(res, RunLimits{Deadline::at(deadline), opt.synth.memory});
    res.seconds = seconds_since(t0);
    return res;
}

}  // namespace collsched
