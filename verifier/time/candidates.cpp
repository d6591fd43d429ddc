// The schedules the time objective chooses from: collsched's constructions, verified.
#include "verifier/time/candidates.hpp"
#include "verifier/time/executor_check.hpp"
#include "compiler/interop/export_mscclpp_switch.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <map>
#include <set>
#include <string_view>
#include <tuple>
#include <numeric>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "support/error.hpp"
#include "support/parallel.hpp"
#include "support/trace.hpp"
#include "verifier/check/direct.hpp"

namespace collsched {

namespace {

/// The basis with its executor's Simple row alone (unchanged when it has none: the ideal executor).
TimeBasis simple_only(TimeBasis b) {
    if (!b.executor) return b;
    ExecutorModel simple = *b.executor;
    std::erase_if(simple.protocols, [](const ProtocolRow& r) { return r.protocol != Protocol::simple; });
    if (!simple.protocols.empty()) b.executor = std::move(simple);
    return b;
}

/// NCCL's algorithms its tuner runs in Simple only (src/graph/tuning.cc ncclTopoTuneModel: NVLS and NVLS_TREE skip
/// LL and LL128, CollNet Direct and Chain get no bandwidth in them, PAT is Simple only): stock NCCL never runs
/// them in LL or LL128, so NCCL's best is not timed so either.
bool nccl_simple_only(const TimeCandidate& c) {
    if (!c.nccl) return false;
    for (std::string_view a : {"nccl nvls", "nccl collnet", "nccl pat"})
        if (c.name.starts_with(a)) return true;
    return false;
}

}  // namespace

TimeBasis CandidateQuery::basis_of(const TimeCandidate& c) const {
    if (!executor) return basis();
    if (c.nccl) {
        TimeBasis b = executor->kind == ExecutorKind::mscclpp || executor->kind == ExecutorKind::msccl
                          ? TimeBasis{link, builtin_executor(ExecutorKind::nccl)}
                          : basis();
        return nccl_simple_only(c) ? simple_only(std::move(b)) : b;
    }
    // the export's own test (table_to_mscclpp writes such a table with switch channels, and those Simple only)
    if (executor->kind == ExecutorKind::mscclpp && c.table && detail::uses_switch_functions(*c.table)) return simple_only(basis());
    return basis();
}

namespace {

/// A provider's times of its table (TimeCandidate::seconds), and on an executor their protocols.
struct Given {
    std::vector<double> seconds;
    std::vector<Protocol> protocols;
};

/// The candidate's times at the query's size s by its plan (both kinds), into c.seconds[s] and c.other[s]. A provider
/// that predicted its own table asynchronously at every size (no --link, the table's topology and model the query's)
/// handed those times over (`given`; NaN at a size it did not predict): the same run, not made again; the synchronous
/// time is one pass.
void time_at_size(TimeCandidate& c, const Given& given, const CandidateQuery& q, std::size_t s) {
    const TimeBasis basis = q.basis_of(c);
    if (given.seconds.empty() || std::isnan(given.seconds[s])) {  // on an executor: the fastest of its protocols (compare.hpp)
        const BasisTime t = time_on(*c.plan, q.sizes[s], basis, q.time);
        c.seconds[s] = t.seconds, c.other[s] = t.other;
        if (!c.protocols.empty()) c.protocols[s] = t.protocol;
        return;
    }
    // on an executor the provider's protocol (the one time_on chooses: the same runs)
    const Protocol protocol = given.protocols.empty() ? Protocol::none : given.protocols[s];
    if (!c.protocols.empty()) c.protocols[s] = protocol;
    const TimeOptions at = basis.at(q.sizes[s], protocol);
    TimePrediction p;
    p.asynchronous = given.seconds[s], p.synchronous = c.plan->synchronous(at);
    c.seconds[s] = q.time == TimeKind::asynchronous ? p.asynchronous : p.synchronous;
    c.other[s] = q.time == TimeKind::asynchronous ? p.synchronous : p.asynchronous;
}

/// Every table raw[which[x]] at every size (time_at_size with given[x]), each prediction on its own, on q.jobs
/// threads (the times do not depend on them); per table the seconds its predictions took, or a negative number
/// when some prediction of it was not started before `until` (the table is then not timed). The smaller tables go
/// first, so that a limit leaves out the largest (NCCL's ring allgather on 1,024 GPUs, 9.4 million transfers, took
/// 34 s at five sizes, 18 s past a 60 s --timeout).
std::vector<double> time_all(std::vector<TimeCandidate>& raw, const std::vector<std::size_t>& which, const std::vector<Given>& given,
                             const CandidateQuery& q, std::size_t largest, Deadline until) {
    const std::size_t S = q.sizes.size();
    std::vector<std::size_t> order(which.size());
    for (std::size_t x = 0; x < order.size(); ++x) order[x] = x;
    std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return raw[which[a]].plan->transfers() < raw[which[b]].plan->transfers(); });
    std::vector<double> took(which.size() * S, 0.0), per(which.size(), 0.0);
    run_indexed(which.size() * S, prediction_threads(q.jobs, largest), [&](std::size_t k) {
        const std::size_t x = order[k / S];
        if (until.passed()) {
            took[x * S + k % S] = -1;
            return true;
        }
        const auto t0 = Clock::now();
        time_at_size(raw[which[x]], given[x], q, k % S);
        took[x * S + k % S] = std::chrono::duration<double>(Clock::now() - t0).count();
        return true;
    });
    for (std::size_t k = 0; k < took.size(); ++k) per[k / S] = per[k / S] < 0 || took[k] < 0 ? -1 : per[k / S] + took[k];
    return per;
}

/// On mscclpp, beside a table its plan with the chains dealt to the thread blocks mscclpp_rows consecutive ones at a time
/// (MscclppOptions::chains_a_block): a block puts them one after another, as the table's steps order them, where one
/// chain a block lets every block put its first chain at once (bench/results/faults.md, "On executor mscclpp"). The
/// plans are timed as written and the faster wins, per size. Only for a table its provider timed (the constructions for
/// time: the copy takes its times, so it costs its plan's check alone), not for NCCL's algorithms, nor a table through
/// switches (its writer deals no chains).
constexpr int mscclpp_rows = 4;
void with_rows(std::vector<TimeCandidate>& raw, std::size_t sizes) {
    const TimeCandidate& c = raw.back();
    if (c.nccl || !c.table || c.seconds.size() != sizes || detail::uses_switch_functions(*c.table)) return;
    TimeCandidate v = c;
    v.name = fmt::format("{}, {} chains a thread block", c.name, mscclpp_rows);
    v.mscclpp_chains_a_block = mscclpp_rows;
    raw.push_back(std::move(v));
}

/// Runs every provider into `raw`; per provider its first candidate (`from`) and its seconds (`took`). Every provider
/// holds the query's deadline: one is not started once it has passed, one a limit stops keeps the tables it had (the
/// NCCL baselines and the checks ran after optimize --size's --timeout). The providers have 80 % of the time left,
/// the timing and checks of their tables the rest. They run at once on q.jobs threads (each into its own list, joined
/// in the providers' order: the same tables and notes as one after the other).
/// `cut`: some provider was not run or stopped by the time limit, or the limit passed before they all ended (a provider
/// may stop its own tables there without a word).
void run_providers(const CandidateQuery& q, const std::vector<NamedProvider>& providers, std::vector<TimeCandidate>& raw,
                   std::vector<std::size_t>& from, std::vector<double>& took, std::vector<std::string>& notes, bool& cut) {
    CandidateQuery build = q;
    build.deadline = Deadline::at(q.deadline).share(0.8).when();
    const std::size_t n = providers.size();
    // each provider's own threads (the constructions' shapes and predictions) share what the providers at once leave:
    // no more threads than --jobs (more would slow every provider, and the rings' and packings' steps stop at a fixed
    // number of seconds: under load the rings' last table was cut)
    const unsigned outer = static_cast<unsigned>(std::clamp<std::size_t>(n, 1, std::max(q.jobs, 1u)));
    build.jobs = std::max(1u, q.jobs / outer);
    Cores cores(std::max(q.jobs, 1u));
    build.cores = &cores;
    build.borrow = std::max(1u, q.jobs);
    std::vector<std::vector<TimeCandidate>> outs(n);
    std::vector<std::vector<std::string>> said(n);
    std::vector<double> seconds(n, 0.0);
    std::vector<char> stopped(n, 0);
    // started in this order: the providers marked `first` (NCCL's algorithms) before the others
    std::vector<std::size_t> order(n);
    std::iota(order.begin(), order.end(), std::size_t{0});
    std::ranges::stable_partition(order, [&](std::size_t p) { return providers[p].first; });
    run_indexed(n, outer, [&](std::size_t x) {
        const std::size_t i = order[x];
        const NamedProvider& p = providers[i];
        const Cores::Held core(&cores);
        const auto t0 = Clock::now();
        trace("provider {}: start", p.name);
        try {
            if (Clock::now() >= build.deadline) stopped[i] = 1, said[i].push_back(fmt::format("{}: not run (the time limit came first)", p.name));
            else p.provide(build, outs[i], said[i]);
        } catch (const InputError& e) {
            said[i].push_back(fmt::format("{}: {}", p.name, e.what()));
        } catch (const LimitReached& e) {
            stopped[i] = 1;
            said[i].push_back(fmt::format("{}: stopped by the time limit ({})", p.name, e.what()));
        }
        seconds[i] = std::chrono::duration<double>(Clock::now() - t0).count();
        trace("provider {}: {} tables in {:.2f} s", p.name, outs[i].size(), seconds[i]);
        return true;
    });
    cut = Clock::now() >= build.deadline || std::ranges::any_of(stopped, [](char x) { return x != 0; });
    const bool rows = q.executor && q.executor->kind == ExecutorKind::mscclpp;
    for (std::size_t i = 0; i < n; ++i) {
        from.push_back(raw.size());
        for (TimeCandidate& c : outs[i]) {
            raw.push_back(std::move(c));
            if (rows) with_rows(raw, q.sizes.size());
        }
        for (std::string& x : said[i]) notes.push_back(std::move(x));
        took.push_back(seconds[i]);
    }
}

/// Per provider: its tables and the seconds it took to build, verify and time them; then the tables left unchecked.
void provider_notes(const std::vector<NamedProvider>& providers, const std::vector<std::size_t>& from, std::size_t tables,
                    const std::array<std::vector<double>, 3>& seconds, const std::vector<std::string>& unchecked, std::vector<std::string>& notes) {
    for (std::size_t p = 0; p < providers.size(); ++p) {
        const std::size_t n = (p + 1 < from.size() ? from[p + 1] : tables) - from[p];
        notes.push_back(fmt::format("{}: {} table{} built in {:.2f} s, verified in {:.2f} s (timed in {:.2f} s)", providers[p].name, n,
                                    n == 1 ? "" : "s", seconds[0][p], seconds[1][p], seconds[2][p]));
    }
    if (!unchecked.empty())
        notes.push_back(fmt::format("not checked, slower at every size than a table that holds (by more than a near tie): {}", fmt::join(unchecked, "; ")));
}

}  // namespace

namespace {

enum class Planned : char { skip, ok, late, broken, deferred, memory };

/// A timing plan and one prediction hold about this many bytes per transfer (a plan of NCCL's ring allgather on 1,024
/// GPUs, 9.4 million transfers, took 720 MB; a prediction 160 bytes per transfer, prediction_threads).
constexpr std::uint64_t plan_bytes_per_transfer = 80 + 160;

/// The plan of one table (re-stamped with the query's topology and model first unless `same`), within `timing`; a
/// table of the second phase only when its plan and a prediction fit in what is left of the memory budget (on 1,024
/// GPUs through routers NCCL's ring allgather's plan took the run past it).
Planned plan_one(TimeCandidate& c, const CandidateQuery& q, bool same, Deadline timing) {
    if (!same) {
        c.plan.reset();
        SendTable t = *c.table;
        t.topology = q.instance.topology;
        t.model = q.instance.model;
        c.table = std::make_shared<const SendTable>(std::move(t));
    }
    if (!c.plan && c.table->transfers.size() > q.large_table && !MemoryBudget::standard().fits(c.table->transfers.size() * plan_bytes_per_transfer))
        return Planned::memory;
    try {
        if (!c.plan) c.plan.emplace(*c.table, timing);
    } catch (const LimitReached&) {
        return Planned::late;
    } catch (const InputError&) {  // not causal: it does not hold
        return Planned::broken;
    }
    return Planned::ok;
}

/// plan_one for a table of the second phase, its seconds added to `took`; false (the table freed, a note why) when it
/// is not planned.
bool plan_late(TimeCandidate& c, const CandidateQuery& q, bool same, Deadline timing, std::vector<std::string>& notes, double& took) {
    const auto t0 = Clock::now();
    const Planned p = plan_one(c, q, same, timing);
    took += std::chrono::duration<double>(Clock::now() - t0).count();
    if (p == Planned::ok) return true;
    notes.push_back(p == Planned::memory ? fmt::format("{} ({}): not timed, its timing plan and a prediction need about {}, more than the memory "
                                                       "budget leaves (COLLSCHED_MAX_MEMORY_MB), left out",
                                                       c.name, c.provider, format_bytes(c.table->transfers.size() * plan_bytes_per_transfer))
                    : p == Planned::late ? fmt::format("{} ({}): not timed before the time limit, left out", c.name, c.provider)
                                         : fmt::format("{} ({}): does not hold under {}, left out", c.name, c.provider, to_string(q.instance.model)));
    c.table.reset(), c.plan.reset();
    return false;
}

/// The timing plans of the tables the providers did not plan that `first` selects (the others are deferred to a later
/// tier, Gathering), each on its own thread (of q.jobs; what is built does not depend on them): per table whether
/// it is planned (skip: another collective), whether it already had the query's topology and model (`same`: its
/// provider's times hold), and the seconds its plan took.
template <class First>
std::vector<Planned> plan_all(std::vector<TimeCandidate>& raw, const CandidateQuery& q, Deadline timing, std::vector<char>& same,
                              std::vector<double>& planning, First first) {
    std::vector<Planned> planned(raw.size(), Planned::skip);
    same.assign(raw.size(), 0);
    planning.assign(raw.size(), 0.0);
    std::size_t most = 0;
    for (std::size_t i = 0; i < raw.size(); ++i) {
        TimeCandidate& c = raw[i];
        if (c.unrun || c.table->collective.kind != q.instance.collective.kind || c.table->collective.root != q.instance.collective.root) continue;
        // a plan the provider built is the table's own when the table already has the instance's topology and model
        same[i] = c.table->topology == q.instance.topology && c.table->model == q.instance.model;
        planned[i] = first(i) ? Planned::ok : Planned::deferred;
        if (planned[i] == Planned::ok) most = std::max(most, c.table->transfers.size());
    }
    run_indexed(raw.size(), prediction_threads(q.jobs, most), [&](std::size_t i) {
        TimeCandidate& c = raw[i];
        if (planned[i] != Planned::ok) return true;
        const auto t0 = Clock::now();
        planned[i] = plan_one(c, q, same[i], timing);
        planning[i] = std::chrono::duration<double>(Clock::now() - t0).count();
        return true;
    });
    return planned;
}

/// A direct check that stops at `limit` and at the memory budget.
VerifyOptions within(Deadline limit) {
    VerifyOptions vo;
    vo.deadline = limit;
    vo.memory_limit = true;
    return vo;
}

/// Which limit stopped a direct check ("time limit", "memory limit"): the note it ends with.
std::string limit_of(const VerifyReport& r) {
    return r.notes.empty() ? std::string("limits") : r.notes.back().substr(0, r.notes.back().find(':'));
}

}  // namespace

namespace {

/// The timing and checks of gather_candidates (candidates.hpp), tier by tier: the tables of at most q.bounded_table
/// transfers (and those the providers planned) are timed first and the fastest that hold checked; then those of at
/// most q.large_table, then the larger (planned one at a time: each plan and its predictions may take a gigabyte).
/// Before a table of the later tiers is planned, its lower bound (table_time_bound) is set against the times of the
/// tables that hold: a table whose bound is beyond them at every size (by more than a near tie and by more than the
/// bound's rounding) could never be checked, so it is left out without a plan or a prediction (on 128 GPUs with NVLS
/// the rail rings' tables of 4.7 and 9.4 million transfers took 100 s to time). Once every tier is done the bounds are
/// set against the final times again, and any table they no longer leave out is timed, until none is left: the winner,
/// NCCL's best and the checks are those of timing every table.
class Gathering {
public:
    Gathering(const CandidateQuery& q, std::vector<TimeCandidate>& raw, const std::vector<std::size_t>& from, const std::vector<NamedProvider>& providers,
              std::vector<std::string>& notes)
        : q_(q), raw_(raw), from_(from), notes_(notes), S_(q.sizes.size()), limit_(Deadline::at(q.deadline)),
          timing_(Deadline::at(limit_.share(0.8).when())), timed_(providers.size(), 0.0), verify_(providers.size(), 0.0) {
        for (const NamedProvider& p : providers) baseline_.push_back(p.baseline);
    }

    /// Plans the first tier, names every table (unique over all), then times and checks tier by tier.
    void run() {
        std::vector<double> planning;
        const std::vector<Planned> planned = plan_all(raw_, q_, timing_, same_, planning, [&](std::size_t i) { return tier(i) == 0; });
        std::map<std::string, int> names;
        for (std::size_t i = 0; i < raw_.size(); ++i) {
            TimeCandidate& c = raw_[i];
            if (planned[i] == Planned::skip) continue;
            timed_[provider_of(i)] += planning[i];
            if (planned[i] == Planned::late || planned[i] == Planned::broken) {
                // not causal (broken): no schedule, in no space of schedules; late: not timed, the set is not whole
                nccl_cut_ = nccl_cut_ || (c.nccl && planned[i] == Planned::late), any_cut_ = any_cut_ || planned[i] == Planned::late;
                notes_.push_back(planned[i] == Planned::late ? fmt::format("{} ({}): not timed before the time limit, left out", c.name, c.provider)
                                                             : fmt::format("{} ({}): does not hold under {}, left out", c.name, c.provider,
                                                                           to_string(q_.instance.model)));
                continue;
            }
            given_.push_back(takes_given(c) ? Given{std::move(c.seconds), std::move(c.protocols)} : Given{});
            c.seconds.assign(S_, 0.0), c.other.assign(S_, 0.0);
            c.protocols.assign(q_.basis().ideal() ? 0 : S_, Protocol::none);
            largest_ = std::max(largest_, c.table->transfers.size());
            trace("timing plan of {} ({}): {} transfers{}", c.name, c.provider, c.table->transfers.size(), tier(i) > 0 ? " (deferred to a later tier)" : "");
            if (int n = names[c.name]++; n > 0) c.name += fmt::format(" ({})", n + 1);
            ts_.push_back(Timed{i, {}, 0, tier(i)});
        }
        done_.assign(ts_.size(), 0);
        bound_.assign(ts_.size(), {});
        reached_.assign(ts_.size(), 0);
        // the first tier's fastest checked (their times are what the bounds of the next are set against), then the
        // checks of the tables of at most q.large_table transfers and those of all (first and second phase)
        const bool first = time_tier([&](const Timed& x) { return x.tier == 0; }, false);
        if (first) walk(0);
        const bool second = time_tier([&](const Timed& x) { return x.tier == 1; }, true);
        if (first || second) walk(1), top1_ = top_, top1_nccl_ = top_nccl_;
        if (time_tier([&](const Timed& x) { return x.tier == 2; }, true)) walk(2);
        for (;;) {  // the bounds against the final checks' times: a table they no longer leave out is timed after all
            std::vector<char> again(ts_.size(), 0);
            bool any = false;
            for (std::size_t x = 0; x < ts_.size(); ++x)
                if (done_[x] == pruned && (!beyond(x, top_, top_nccl_) || (ts_[x].tier == 1 && !beyond(x, top1_, top1_nccl_))))
                    again[x] = 1, done_[x] = 0, any = true;
            if (!any) break;
            time_tier([&](const Timed& x) { return again[static_cast<std::size_t>(&x - ts_.data())] != 0; }, false);
            reached_.assign(ts_.size(), 0);
            walk(1), top1_ = top_, top1_nccl_ = top_nccl_;
            walk(2);
        }
    }

    /// The tables that hold, in the providers' order, with their plans; the others timed go to `unchecked` (freed).
    std::vector<TimeCandidate> finish(const std::vector<NamedProvider>& providers, const std::vector<double>& took, std::vector<TimeCandidate>* unchecked_out) {
        std::vector<TimeCandidate> kept;
        std::vector<std::string> unchecked, left_out;
        for (std::size_t x = 0; x < ts_.size(); ++x) {
            TimeCandidate& c = raw_[ts_[x].raw];
            const bool nccl = c.nccl;
            if (done_[x] == pruned) left_out.push_back(c.name), c.table.reset();
            if (done_[x] > 0 && ts_[x].verdict > 0 && !reached_[x]) {  // checked for the bounds only: the table's times
                ts_[x].verdict = 0;
                if (ts_[x].table_times) std::tie(c.seconds, c.other, c.protocols) = std::move(*ts_[x].table_times);
            }
            if (done_[x] > 0 && ts_[x].verdict == 0) {
                unchecked.push_back(c.name);
                c.table.reset(), c.plan.reset();
                if (unchecked_out) unchecked_out->push_back(std::move(c));
            }
            if (done_[x] > 0 && ts_[x].verdict > 0) kept.push_back(std::move(c));
            // one of NCCL's timed and held (kept or unchecked), or left out by its bound, or violated (a table that is no schedule
            // of the collective here is in no space of schedules: NCCL's tree on a NIC that only sends); else not in the exact set
            if (nccl && done_[x] != pruned && (done_[x] <= 0 || (ts_[x].verdict < 0 && !ts_[x].refuted))) nccl_cut_ = true;
            any_cut_ = any_cut_ || (done_[x] != pruned && done_[x] <= 0);  // a limit or a plan that failed
        }
        provider_notes(providers, from_, raw_.size(), {took, verify_, timed_}, unchecked, notes_);
        if (!left_out.empty())
            notes_.push_back(fmt::format("not timed, a lower bound on the time beyond a table that holds at every size (by more than a near tie): {}",
                                         fmt::join(left_out, "; ")));
        return kept;
    }

    /// Some table of NCCL's was left out other than by its lower bound (a limit, a plan or check that failed).
    bool nccl_cut() const { return nccl_cut_; }
    /// Some table was left out by a limit or a failed plan, or not verified within the limit.
    bool any_cut() const { return any_cut_ || nccl_cut_; }

private:
    static constexpr char pruned = -2;  // done_: left out by its bound (-1: left out otherwise; 1: timed)
    struct Timed {
        std::size_t raw;
        std::vector<double> seconds;  // by the query's time, per size
        int verdict = 0;              // 0 not checked, 1 holds, -1 left out
        int tier = 0;
        /// on mscclpp, once timed as its written plan: the table's own times, protocols and timing plan (an unchecked
        /// table keeps them: time_as_written)
        std::optional<std::tuple<std::vector<double>, std::vector<double>, std::vector<Protocol>>> table_times = std::nullopt;
        bool refuted = false;  // left out because the direct checker found it violated (no schedule of the collective)
    };

    /// Whether a provider's times of table c are taken (TimeCandidate::seconds): it has the query's topology and model
    /// (plan_all's `same`), no --link; on an executor with their protocols, for a table timed on basis() by the
    /// asynchronous time (then time_on would run the same predictions and choose the same protocol).
    bool takes_given(const TimeCandidate& c) const {
        if (!same_[static_cast<std::size_t>(&c - raw_.data())] || q_.link || c.seconds.size() != S_) return false;
        if (q_.basis().ideal()) return true;
        return c.protocols.size() == S_ && !c.nccl && q_.time == TimeKind::asynchronous && q_.basis_of(c).protocols() == q_.basis().protocols();
    }

    std::size_t provider_of(std::size_t i) const { return static_cast<std::size_t>(std::upper_bound(from_.begin(), from_.end(), i) - from_.begin()) - 1; }

    /// 0: timed first (small, or planned by its provider); 1: more than q.bounded_table transfers; 2: more than q.large_table.
    int tier(std::size_t i) const {
        const TimeCandidate& c = raw_[i];
        const std::size_t n = c.table->transfers.size();
        if (n > q_.large_table) return 2;  // the second phase, as before the tiers (planned there unless its provider planned it)
        return n > q_.bounded_table && !c.plan ? 1 : 0;
    }

    /// Whether table x's bound is beyond the tables that hold at every size (and beyond NCCL's that hold, for one of
    /// NCCL's): then it is never within a near tie of the fastest that holds, nor of NCCL's fastest that holds.
    bool beyond(std::size_t x, const std::vector<double>& top, const std::vector<double>& top_nccl) const {
        if (bound_[x].size() != S_ || top.size() != S_ || top_nccl.size() != S_) return false;
        // NCCL's algorithms as its provider generates them (ring, tree, ...) are always timed: the report gives each a
        // time or says why it has none (objective.cpp, nccl_without_time)
        if (baseline_[provider_of(ts_[x].raw)]) return false;
        const bool nccl = raw_[ts_[x].raw].nccl;
        for (std::size_t s = 0; s < S_; ++s) {
            const double b = bound_[x][s] * (1 - 1e-6);  // the bound's sum and the run's may round apart
            if (top[s] < 0 || !(b > top[s] * (1 + 1e-9))) return false;
            if (nccl && (top_nccl[s] < 0 || !(b > top_nccl[s] * (1 + 1e-9)))) return false;
        }
        return true;
    }

    /// Plans (where needed) and times the tables `pick` selects that are not done; with `bounded`, a table its bound
    /// leaves out is not planned. False when none was timed.
    template <class Pick>
    bool time_tier(Pick pick, bool bounded) {
        std::vector<std::size_t> xs, which, late;
        std::vector<Given> gs;
        // on an executor the bound is the one on the basis the table is timed on (basis_of: NCCL's on nccl)
        const bool may_prune = bounded && q_.prune && q_.time == TimeKind::asynchronous && !top_.empty();
        for (std::size_t x = 0; x < ts_.size(); ++x) {
            if (done_[x] != 0 || !pick(ts_[x])) continue;
            TimeCandidate& c = raw_[ts_[x].raw];
            if (may_prune) {
                if (bound_[x].empty()) bound_[x] = table_time_bound(*c.table, q_.sizes, q_.basis_of(c));
                if (beyond(x, top_, top_nccl_)) {
                    trace("left out by its bound: {} ({})", c.name, c.provider);
                    done_[x] = pruned;
                    continue;
                }
            }
            if (c.plan) xs.push_back(x);
            else late.push_back(x);
        }
        plan_tier(late, xs);
        std::sort(xs.begin(), xs.end());
        for (std::size_t x : xs) which.push_back(ts_[x].raw), gs.push_back(std::move(given_[x]));
        if (xs.empty()) return false;
        const std::vector<double> predicting = time_all(raw_, which, gs, q_, largest_, timing_);
        for (std::size_t k = 0; k < xs.size(); ++k) {
            Timed& t = ts_[xs[k]];
            TimeCandidate& c = raw_[t.raw];
            if (predicting[k] < 0) {
                notes_.push_back(fmt::format("{} ({}): not timed at every size before the time limit, left out", c.name, c.provider));
                c.table.reset(), c.plan.reset();
                done_[xs[k]] = -1;
                continue;
            }
            t.seconds = c.seconds, timed_[provider_of(t.raw)] += predicting[k];
            done_[xs[k]] = 1;
        }
        return true;
    }

    /// The plans of tables `late`: those of at most q.large_table transfers at once (on q.jobs threads), the larger one
    /// at a time; the planned join `xs`, the others are left out with a note.
    void plan_tier(const std::vector<std::size_t>& late, std::vector<std::size_t>& xs) {
        std::vector<std::size_t> small;
        std::size_t most = 0;
        for (std::size_t x : late) {
            const std::size_t n = raw_[ts_[x].raw].table->transfers.size();
            if (n <= q_.large_table) small.push_back(x), most = std::max(most, n);
        }
        std::vector<Planned> got(small.size(), Planned::ok);
        std::vector<double> took(small.size(), 0.0);
        run_indexed(small.size(), prediction_threads(q_.jobs, most), [&](std::size_t k) {
            const auto t0 = Clock::now();
            got[k] = plan_one(raw_[ts_[small[k]].raw], q_, same_[ts_[small[k]].raw], timing_);
            took[k] = std::chrono::duration<double>(Clock::now() - t0).count();
            return true;
        });
        for (std::size_t k = 0; k < small.size(); ++k) {
            const std::size_t i = ts_[small[k]].raw;
            timed_[provider_of(i)] += took[k];
            if (got[k] == Planned::ok) xs.push_back(small[k]);
            else done_[small[k]] = -1, said(raw_[i], got[k]);
        }
        for (std::size_t x : late) {
            const std::size_t i = ts_[x].raw;
            // the small ones are settled above (said() freed the tables of those not planned)
            if (done_[x] != 0 || !raw_[i].table || raw_[i].table->transfers.size() <= q_.large_table) continue;
            if (plan_late(raw_[i], q_, same_[i], timing_, notes_, timed_[provider_of(i)])) xs.push_back(x);
            else done_[x] = -1;
        }
    }

    /// The note on a table of `late` that was not planned (the table freed).
    void said(TimeCandidate& c, Planned p) {
        notes_.push_back(p == Planned::late ? fmt::format("{} ({}): not timed before the time limit, left out", c.name, c.provider)
                                            : fmt::format("{} ({}): does not hold under {}, left out", c.name, c.provider, to_string(q_.instance.model)));
        c.table.reset(), c.plan.reset();
    }

    bool holds(Timed& x) {
        if (x.verdict != 0) return x.verdict > 0;
        const TimeCandidate& c = raw_[x.raw];
        const auto t0 = Clock::now();
        const VerifyReport r = verify_direct(*c.table, within(limit_));
        trace("checked {} ({}): {}", c.name, c.provider, r.verdict());
        verify_[provider_of(x.raw)] += std::chrono::duration<double>(Clock::now() - t0).count();
        x.verdict = r.holds() ? 1 : -1;
        x.refuted = r.verdict() == "violated";
        // on mscclpp the plan written for it is what runs: its times are the plan's (time_as_written)
        const bool written = q_.executor && q_.executor->kind == ExecutorKind::mscclpp && !c.nccl;
        WrittenPlans plans;
        if (r.holds() && !runs_on_executor(c, q_, notes_, written ? &plans : nullptr)) x.verdict = -1;
        if (x.verdict > 0 && written) time_as_written(x, plans);
        if (r.verdict() == "unknown") any_cut_ = true;
        if (r.verdict() == "unknown") notes_.push_back(fmt::format("{} ({}): not verified within the {}, left out", c.name, c.provider, limit_of(r)));
        else if (!r.holds()) notes_.push_back(fmt::format("{} ({}): does not hold under {}, left out", c.name, c.provider, to_string(q_.instance.model)));
        return x.verdict > 0;
    }

    /// On mscclpp, candidate x timed as the plans written for it (docs/time.md, "Optimizing on an executor"): per size the
    /// fastest of the plans of the protocols it runs in, each plan's copies between GPUs (mscclpp::plan_table, the steps
    /// of the plan's as-soon-as-possible run, its thread blocks' ops in order) timed in its own protocol. A plan with no
    /// table form keeps the table's times (a note); one not timed by the limit leaves the candidate out.
    void time_as_written(Timed& x, WrittenPlans& plans) {
        TimeCandidate& c = raw_[x.raw];
        for (const auto& [p, t] : plans)
            if (!t) {
                notes_.push_back(fmt::format("{} ({}): its MSCCL++ plan in {} has no table to time; timed as its table", c.name, c.provider, to_string(p)));
                return;
            }
        std::vector<double> seconds(S_, std::numeric_limits<double>::infinity()), other(S_, 0.0);
        std::vector<Protocol> protocols(S_, Protocol::none);
        std::optional<TimingPlan> kept;
        try {
            for (auto& [p, t] : plans) {
                TimingPlan tp(*t, limit_);
                TimeBasis b = q_.basis_of(c);
                if (p != Protocol::none && b.executor) std::erase_if(b.executor->protocols, [p](const ProtocolRow& r) { return r.protocol != p; });
                for (std::size_t s = 0; s < S_; ++s)
                    if (const BasisTime bt = time_on(tp, q_.sizes[s], b, q_.time, limit_); bt.seconds < seconds[s])
                        seconds[s] = bt.seconds, other[s] = bt.other, protocols[s] = bt.protocol;
                if (!kept) kept.emplace(std::move(tp));
            }
        } catch (const InputError& e) {  // a plan read back and checked is causal: a bug, said, and the table's times kept
            notes_.push_back(fmt::format("{} ({}): its MSCCL++ plan could not be timed ({}); timed as its table", c.name, c.provider, e.what()));
            return;
        } catch (const LimitReached& e) {
            notes_.push_back(fmt::format("{} ({}): its MSCCL++ plan not timed within the time limit ({}), left out", c.name, c.provider, e.what()));
            x.verdict = -1;
            return;
        }
        x.table_times.emplace(c.seconds, c.other, c.protocols);
        trace("timed {} ({}) as its MSCCL++ plan: {} s at the first size (its table {} s)", c.name, c.provider, seconds[0], x.seconds[0]);
        x.seconds = c.seconds = std::move(seconds);
        c.other = std::move(other);
        if (c.protocols.size() == S_) c.protocols = std::move(protocols);
        c.plan = std::move(kept);  // what crossovers and later sizes are timed on (the first protocol's plan)
    }

    /// At each size, by time: the fastest that holds and every one within 1 + 1e-9 of the slowest kept so far (compare()'s
    /// winner is the first of the near ties, within 1e-12; a table past such a gap never changes it); the same among
    /// NCCL's; over the tables of tiers up to `upto`. The slowest kept at each size (top_, top_nccl_; -1: none holds) is
    /// what the bounds are set against. The walks over tiers 1 and 2 are those of timing every table in two phases (the
    /// tables of at most q.large_table transfers, then all): the tables they reach and that hold are kept; a table
    /// checked only in the walk over the first tier (for the bounds) is one left unchecked, as it would be.
    void walk(int upto) {
        top_.assign(S_, -1.0), top_nccl_.assign(S_, -1.0);
        for (std::size_t s = 0; s < S_; ++s)
            for (bool nccl_only : {false, true}) {
                std::vector<std::size_t> order;
                for (std::size_t k = 0; k < ts_.size(); ++k)
                    if (done_[k] > 0 && ts_[k].tier <= upto && (!nccl_only || raw_[ts_[k].raw].nccl)) order.push_back(k);
                std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return ts_[a].seconds[s] < ts_[b].seconds[s]; });
                double& top = nccl_only ? top_nccl_[s] : top_[s];
                for (std::size_t k : order) {
                    if (top >= 0 && ts_[k].seconds[s] > top * (1 + 1e-9)) break;
                    if (upto > 0) reached_[k] = 1;
                    if (holds(ts_[k])) top = std::max(top, ts_[k].seconds[s]);
                }
            }
    }

    const CandidateQuery& q_;
    std::vector<TimeCandidate>& raw_;
    const std::vector<std::size_t>& from_;
    std::vector<std::string>& notes_;
    const std::size_t S_;
    const Deadline limit_, timing_;
    std::vector<double> timed_, verify_;  // per provider
    std::vector<char> same_;
    std::vector<Timed> ts_;
    std::vector<Given> given_;  // per timed table: the times its provider predicted (empty: none)
    std::vector<char> done_;                  // 1 timed, -1 left out, `pruned`
    std::vector<std::vector<double>> bound_;  // per timed table: its lower bound per size, once computed
    std::vector<double> top_, top_nccl_;      // the last walk's
    std::vector<double> top1_, top1_nccl_;    // the walk over tiers 0 and 1
    std::vector<char> reached_;               // per timed table: reached by the walk over tiers 0 and 1 or over all
    std::vector<char> baseline_;              // per provider: NCCL's baselines (never left out by a bound)
    std::size_t largest_ = 0;
    bool nccl_cut_ = false;
    bool any_cut_ = false;
};

}  // namespace

std::vector<TimeCandidate> gather_candidates(const CandidateQuery& q, const std::vector<NamedProvider>& providers, std::vector<std::string>& notes,
                                             std::vector<TimeCandidate>* unchecked_out, bool* nccl_whole, bool* all_whole) {
    std::vector<TimeCandidate> raw;
    std::vector<std::size_t> from;  // per provider, its first candidate
    std::vector<double> took;
    bool cut = false;
    run_providers(q, providers, raw, from, took, notes, cut);
    leave_out_unrun(raw, q, notes);  // what NCCL's graph files cannot say is not timed
    Gathering g(q, raw, from, providers, notes);
    g.run();
    std::vector<TimeCandidate> kept = g.finish(providers, took, unchecked_out);
    if (nccl_whole) *nccl_whole = !cut && !g.nccl_cut();
    if (all_whole) *all_whole = !cut && !g.any_cut();
    return kept;
}

double candidate_seconds(const SendTable& t, double size, const std::optional<LinkSpeed>& link, bool synchronous) {
    const TimeOptions opt{size, link};
    return synchronous ? synchronous_time(t, opt) : predict_time(t, opt).asynchronous;
}

}  // namespace collsched
