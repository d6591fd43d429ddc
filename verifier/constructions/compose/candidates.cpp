// The boxes of a machine and the candidates for a size (allreduce.hpp): every shape that applies,
// each with the number of pieces that its predicted asynchronous time at the size prefers,
// verified by the direct checker.
//
// How the pieces and the sizes are chosen (moved from docs/synthesis.md; the user's summary stays there):
//
// **Sums sent to many, one destination a step.** Direct allgathers send each owner's sum to one
// member per logical step (m to m + 1, m + 2, ...): through a router under replicate=no departures
// forward copies first in first out (docs/time.md, "Routers and copies"), so K - 1 copies in one step
// would all leave on the lowest channel first (rail 128 x 8 allreduce, one piece: 16 MiB 176 us, 1 GiB
// 10.8 ms, bounds 168 us, 10.7 ms); between GPUs joined by channels it spreads the sends (h100rail 16
// x 8 at 16 MiB: 82.8 us, bound 81.3 us). Under replicate=yes the sends stay in one step (rail 16 x 8
// with routers at 1 GiB: 10.157 ms against 10.206 ms). The timing plan chains a sum sent over several
// steps to its condition in the step before (runtime/timing.cpp, `chain_next`): 2K entries, not K^2.
//
//
// **Choosing k.** A transfer pays no per-message overhead, so time falls with k towards max(W_n, W_e)
// + L. k runs over 1, 4, 16, 64 while the time falls by more than 0.1 % and the table stays under
// 500,000 transfers (else the most pieces within it: rail 16 x 8 with routers: 7; chained: also 128, 160). A shape is refined
// only while its bound is below the best time and it is within 1 % of the best shape at equal pieces
// (a heuristic, not a claim of optimality). Each table is built once and predicted at every size from
// the first that asks for it. Threads (`--jobs`, on cores the other providers leave: `Cores`,
// support/parallel.hpp) build and time the one-piece tables; results do not depend on them
// (tests/tools/test_compose.cpp).
//
// **Past the transfer budget (1,024 GPUs).** One piece there is 2 to 4 million transfers. Per size
// the fastest shape gets three pieces if its time above its busiest link's bytes exceeds twice its
// latency chain (else two), within 13 million transfers, when the time and memory left (200 bytes a
// transfer) cover it: rail 128 x 8 at 1 GiB, allreduce 10.821 / 10.741 / 10.697 ms with 1 / 2 / 3
// pieces (NCCL's ring bound 10.735); reduce_scatter 5.36 ms, allgather 5.35 ms (bound 5.37). One-piece
// shapes past the budget skip a size where their latency chain, busiest link or the line through their
// last two times (a heuristic guess, by 10 %) exceeds another shape's time, and a shape slower
// everywhere is dropped. Lowering stops at three quarters of the memory budget ("memory limit (lowering
// a composition's plan)").
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <limits>
#include <map>
#include <mutex>
#include <numeric>
#include <tuple>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "runtime/timing.hpp"
#include "support/assert.hpp"
#include "support/error.hpp"
#include "support/parallel.hpp"
#include "support/trace.hpp"
#include "verifier/check/direct.hpp"
#include "verifier/constructions/compose/allreduce.hpp"
#include "verifier/constructions/compose/alltoall.hpp"
#include "verifier/constructions/compose/leaf.hpp"

namespace collsched::compose {

namespace {

std::uint32_t find_root(std::vector<std::uint32_t>& up, std::uint32_t x) {
    while (up[x] != x) x = up[x] = up[up[x]];
    return x;
}

}  // namespace

Boxes find_boxes(const Topology& t) {
    Boxes r;
    const TimeOptions opt{};
    double fastest = 0;
    for (std::size_t c = 0; c < t.channels().size(); ++c) {
        const Channel& ch = t.channels()[c];
        if (t.is_processor(ch.from) || t.is_processor(ch.to))
            fastest = std::max(fastest, channel_speed(t, ChannelId{static_cast<std::uint32_t>(c)}, opt).bandwidth);
    }
    // processors joined by a fast channel, or by fast channels to one router (a box's switch), are in one box
    const std::uint32_t P = t.processors();
    std::vector<std::uint32_t> up(P), via(t.nodes(), P);
    for (std::uint32_t p = 0; p < P; ++p) up[p] = p;
    for (std::size_t c = 0; c < t.channels().size(); ++c) {
        const Channel& ch = t.channels()[c];
        if (channel_speed(t, ChannelId{static_cast<std::uint32_t>(c)}, opt).bandwidth * 4 < fastest) continue;
        const bool a = t.is_processor(ch.from), b = t.is_processor(ch.to);
        if (a && b) up[find_root(up, idx(ch.from))] = find_root(up, idx(ch.to));
        if (a != b) {
            const std::uint32_t p = a ? idx(ch.from) : idx(ch.to), router = a ? idx(ch.to) : idx(ch.from);
            if (via[router] == P) via[router] = p;
            else up[find_root(up, p)] = find_root(up, via[router]);
        }
    }
    std::vector<std::uint32_t> number(P, P);
    for (std::uint32_t p = 0; p < P; ++p) {
        std::uint32_t& n = number[find_root(up, p)];
        if (n == P) {
            n = static_cast<std::uint32_t>(r.boxes.size());
            r.boxes.emplace_back();
        }
        r.boxes[n].push_back(Node{p});
    }
    for (const auto& b : r.boxes)
        if (b.size() != r.boxes[0].size()) {
            r.why = fmt::format("the boxes differ in size ({} and {} processors)", r.boxes[0].size(), b.size());
            r.boxes.clear();
            return r;
        }
    return r;
}

namespace {

/// The most transfers a candidate table may have (about 12 bytes each, plus the checker's and
/// the time prediction's per-transfer state): beyond, more pieces are not tried.
constexpr std::size_t transfer_budget = 500'000;
constexpr std::uint32_t most_pieces = 64;
/// Where one piece is past transfer_budget (1,024 GPUs), the fastest shape's two or three pieces within this many
/// transfers (past_budget), each table with its plan and one prediction at about fill_bytes_per_transfer (measured:
/// the 12,570,624 transfers of rail 128 x 8 allreduce in three pieces peaked at 2.26 GB, 180 bytes each).
constexpr std::size_t fill_budget = 13'000'000;
constexpr std::uint64_t fill_bytes_per_transfer = 200;

/// The asynchronous time of `plan` at `size` on `basis`: its link speeds, and on an executor other than ideal the
/// fastest of the executor's protocols (the time objective runs each table in its fastest, as NCCL's tuner picks a
/// protocol per size), so that the executor's per-message, synchronization and launch costs choose the pieces.
/// The protocol is the first of the fastest in the executor's order: time_on's (runtime/compare.hpp).
/// Past `deadline` the run stops: LimitReached (one prediction of 484,900 transfers at 1 GiB took 4 s past --timeout 4).
std::pair<double, Protocol> timed_in(const TimingPlan& plan, double size, const TimeBasis& basis, Deadline deadline = {}) {
    if (basis.ideal()) {
        TimeOptions o = basis.at(size);
        o.deadline = deadline;
        return {plan.asynchronous(o), Protocol::none};
    }
    const BasisTime t = time_on(plan, size, basis, TimeKind::asynchronous, deadline);
    return {t.seconds, t.protocol};
}

double timed(const TimingPlan& plan, double size, const TimeBasis& basis) { return timed_in(plan, size, basis).first; }

/// An executor that runs these constructions (MSCCL++, MSCCL: not the ideal model's network share, nor NCCL, whose graph
/// files hold rings): its message costs end the gain of pieces early, so they are tried twice as many each time.
bool runs_constructions(const TimeBasis& basis) { return !basis.ideal() && basis.executor->kind != ExecutorKind::nccl; }

/// What the `how` of a candidate says its times are on: nothing for the network's share at the machine's speeds.
std::string timed_on(const TimeBasis& basis) {
    if (basis.ideal()) return basis.link ? ", at --link's speeds" : "";
    return fmt::format(" on executor {}", basis.executor_name());
}

struct Decomposition {
    std::vector<std::vector<Node>> boxes;
    bool flat = false;
    std::string what;
};

std::vector<Decomposition> decompositions(const Topology& t) {
    std::vector<Decomposition> ds;
    const std::uint32_t P = t.processors();
    Boxes found = find_boxes(t);
    const std::size_t K = found.boxes.size();
    if (found.why.empty() && K > 1 && K < P)
        ds.push_back({found.boxes, false, fmt::format("{} boxes of {} (joined by channels, or through one router, of at least a quarter of the fastest bandwidth)", K, P / K)});
    Decomposition ones{{}, true, fmt::format("{} processors as boxes of one", P)};
    for (std::uint32_t p = 0; p < P; ++p) ones.boxes.push_back({Node{p}});
    ds.push_back(std::move(ones));
    Decomposition one{{{}}, true, fmt::format("{} processors as one box", P)};
    for (std::uint32_t p = 0; p < P; ++p) one.boxes[0].push_back(Node{p});
    ds.push_back(std::move(one));
    return ds;
}

}  // namespace

std::vector<Shape> fault_shapes(const Topology& t, const std::vector<std::vector<Node>>& boxes) {
    std::vector<Shape> s;
    const std::size_t K = boxes.size(), B = K == 0 ? 0 : boxes[0].size();
    if (K < 2 || B < 2) return s;
    const std::vector<Across> acrosses{Across::direct_ar, Across::direct_rsag, Across::ring, Across::halving, Across::doubling};
    // a slow or failed NIC or GPU port (rail_capacity below 1 somewhere): the direct in-box exchange with the shares by
    // capacity, and with none on the rails below full speed (machines whose parts have equal speeds: the even shapes only)
    const std::vector<double> cap = rail_capacity(t, boxes);
    if (std::all_of(cap.begin(), cap.end(), [](double c) { return c >= 1 - 1e-9; })) return s;
    const bool partial = std::any_of(cap.begin(), cap.end(), [](double c) { return c > 1e-9 && c < 1 - 1e-9; });
    for (Shares sh : {Shares::capacity, Shares::full}) {
        if (sh == Shares::full && !partial) continue;  // the same owners as by capacity
        for (Across a : acrosses) s.push_back({InBox::rsag, a, false, sh});  // those that do not apply to the collective say so
        // a rail that owns nothing and a GPU whose links in its box are slow: the chained in-box reduce-scatter (Shape::chained)
        const std::vector<std::uint32_t> owners = slot_owners(cap, sh);
        std::vector<char> owns(B, 0);
        for (std::uint32_t o : owners) owns[o] = 1;
        if (!owners.empty() && std::ranges::count(owns, 0) > 0 && std::ranges::count(slow_in_box(t, boxes), 1) > 0)
            for (Across a : acrosses) s.push_back({InBox::rsag, a, false, sh, 0, true});
    }
    // a NIC down: its box a leaf in some slots (leaf.hpp), 5 to 7 slots of every box per up rail for each 2 of the leaf's;
    // a one-way NIC: reduce-scatter's slots on it summed outside its box first, allgather's sent out through a box (leaf_all 0)
    if (std::ranges::count(cap, 0.0) > 0 && leaf_slots(t, boxes, 1).why.empty())
        for (std::uint32_t a : {5u, 6u, 7u}) s.push_back({InBox::rsag, Across::direct_rsag, false, Shares::leaf, a});
    if (one_way_leaf(t, boxes).why.empty() || one_way_leaf(t, boxes, CollectiveKind::allgather).why.empty()) s.push_back({InBox::rsag, Across::direct_rsag, false, Shares::leaf, 0});
    return s;
}

namespace {

std::vector<Shape> shapes_for(const Topology& t, const std::vector<std::vector<Node>>& boxes, bool flat) {
    const std::size_t K = boxes.size(), B = boxes[0].size();
    std::vector<InBox> ins = B > 1 ? std::vector<InBox>{InBox::rsag, InBox::ar} : std::vector<InBox>{InBox::none};
    // boxes that are not complete (a cube mesh): the direct in-box exchange relays through processors, a ring does not
    // (recursive halving where it applies: each hop on its own link, so the pieces pipeline)
    if (B > 2 && !flat && !box_complete(t, boxes[0])) ins.push_back(B >= 4 && (B & (B - 1)) == 0 ? InBox::halving : InBox::ring);
    std::vector<Across> acrosses = K > 1 ? std::vector<Across>{Across::direct_ar, Across::direct_rsag, Across::ring, Across::halving, Across::doubling}
                                         : std::vector<Across>{Across::none};
    std::vector<Shape> s;
    for (Shape sh : every_shape())
        if (std::ranges::find(ins, sh.inbox) != ins.end() && std::ranges::find(acrosses, sh.across) != acrosses.end()) sh.flat = flat, s.push_back(sh);
    if (flat || K < 2 || B < 2) return s;
    for (Shape sh : fault_shapes(t, boxes)) s.push_back(sh);
    return s;
}

/// The longest any channel or link group is busy in the table at `size` (NCCL's, docs/time.md "Sizes"; bytes over bandwidth):
/// a lower bound on its asynchronous time that does not depend on the number of pieces, which
/// moves the same bytes over the same links.
double load_bound(const SendTable& t, double size, const TimeBasis& basis) {
    const Topology& topo = *t.topology;
    const double chunk = datum_bytes(t.collective.kind, topo.processors(), size) / t.collective.chunks;  // NCCL's size (docs/time.md)
    std::vector<double> chan(topo.channels().size()), group(topo.groups().size());
    for (const Transfer& x : t.transfers) {
        chan[idx(x.channel)] += chunk;
        for (std::uint32_t g : topo.groups_of(x.channel)) group[g] += chunk;
    }
    double most = 0;
    const TimeOptions opt{size, basis.link};  // the links' bandwidths; an executor only lowers them
    for (std::size_t c = 0; c < chan.size(); ++c)
        if (chan[c] > 0) most = std::max(most, chan[c] / channel_speed(topo, ChannelId{static_cast<std::uint32_t>(c)}, opt).bandwidth);
    for (std::size_t g = 0; g < group.size(); ++g)
        if (group[g] > 0) most = std::max(most, group[g] / group_speed(topo, static_cast<std::uint32_t>(g), opt));
    return most;
}

/// The tables of the shapes at each number of pieces, built once and predicted at every size
/// asked for (one TimingPlan per table): the choice of pieces differs per size, the tables do not.
class ShapeTables {
public:
    ShapeTables(const SynthInstance& in, const std::vector<double>& sizes, const TimeBasis& basis, unsigned jobs, Cores* cores)
        : in_(in), sizes_(sizes), basis_(basis), jobs_(jobs), cores_(cores) {}
    const TimeBasis& basis() const { return basis_; }

    struct Entry {
        const Decomposition* d = nullptr;
        Shape shape;
        std::uint32_t pieces = 1;
        std::size_t shape_index = 0;
        bool applies = false;            // the shape applies with these pieces
        std::optional<SendTable> table;  // empty when it does not apply, or dropped
        std::optional<TimingPlan> plan;  // the table's (dropped with it)
        std::size_t transfers = 0;
        double build_s = 0;    // wall seconds to build the table and its plan
        double predict_s = 0;  // thread seconds per prediction
        double load = 0;       // load_bound per byte of the size
        double latency = -1;   // its chain of latencies (its time at almost no size), where computed
        /// asynchronous, per size; NaN before the size that first asked for the table (never read here: the sizes
        /// are chosen for in order, and a table some size chose is read at that size); +inf while not predicted
        /// because another shape is faster there (fill; get_all predicts them unless the shape is dominated)
        std::vector<double> seconds;
        std::vector<Protocol> protocols;  // per size: the protocol of `seconds` (on an executor; none where not predicted)
        bool done = false;       // built and timed (guarded by best_lock_ while get_all runs)
        bool dominated = false;  // one piece past the budget, slower at every size than another shape: dropped
    };

    /// The shape with k pieces (built and predicted on first use, at size `from` and the sizes after it), or nullptr
    /// when it does not apply. Its table may have been dropped since (`table` empty): `rebuild` brings it back.
    /// Past `deadline` the table or its timing plan stops (LimitReached) and the shape is taken as
    /// not applying with k pieces; `stopped()` says so.
    const Entry* get(const Decomposition& d, std::size_t shape_index, const Shape& sh, std::uint32_t k, Deadline deadline = {}, std::size_t from = 0) {
        auto [it, fresh] = at_.try_emplace(std::make_tuple(&d, shape_index, k));
        Entry& e = it->second;
        if (fresh) fill(e, d, shape_index, sh, k, deadline, jobs_, from);
        return e.applies ? &e : nullptr;
    }
    /// get() of several shapes with one piece at once: each built and timed on its own thread (of `jobs`), its
    /// predictions then on one; the entries are the same as get() one after the other would make. None but the
    /// first starts once the time left is less than the fastest shape's pieces need (reserve()) and one more shape;
    /// a shape started stops at `deadline`.
    void get_all(const std::vector<std::tuple<const Decomposition*, std::size_t, Shape>>& which, Deadline deadline) {
        std::vector<Entry*> fresh(which.size(), nullptr);
        for (std::size_t x = 0; x < which.size(); ++x) {
            auto [d, si, sh] = which[x];
            auto [it, added] = at_.try_emplace(std::make_tuple(d, si, 1u));
            if (added) fresh[x] = &it->second;
        }
        run_indexed(which.size(), jobs_, [&](std::size_t x) {
            if (!fresh[x]) return true;
            if (x > 0 && (deadline.passed() || deadline.left() < reserve())) {  // not started: taken as not applying
                fresh[x]->shape = std::get<2>(which[x]);
                stopped_ = true;
                return true;
            }
            fill(*fresh[x], *std::get<0>(which[x]), std::get<1>(which[x]), std::get<2>(which[x]), 1, deadline, 1, 0, true);
            return true;
        }, cores_);
        // the shapes not dominated have every size predicted (so what is chosen does not depend on the order the
        // threads finished in): the sizes skipped while another shape was faster there
        for (Entry* e : fresh) {
            if (!e || !e->applies || e->dominated) continue;
            try {
                for (std::size_t i = 0; i < sizes_.size(); ++i)
                    if (std::isinf(e->seconds[i])) {
                        if (deadline.passed()) throw LimitReached("time limit (predicting a construction's table)");
                        std::tie(e->seconds[i], e->protocols[i]) = timed_in(*e->plan, sizes_[i], basis_, deadline);
                    }
            } catch (const LimitReached&) {
                e->table.reset(), e->plan.reset(), e->seconds.clear(), e->applies = false, stopped_ = true;
            }
        }
    }
    bool stopped() const { return stopped_; }
    /// About how long the shape of `one` (one piece) takes with k pieces, built, planned and predicted at every size
    /// (measured on its one piece: its build and plan times k, its predictions times k over the threads, and half again;
    /// rail 128 x 8 allreduce: two pieces 15.3 s, three 24.8 s, against 13.8 and 20.7 s with a quarter more).
    double fill_seconds(const Entry& one, std::uint32_t k) const {
        return 1.5 * k * (one.build_s + static_cast<double>(sizes_.size()) * one.predict_s / std::max(1u, jobs_));
    }
    /// The seconds get_all keeps for the fastest shape's pieces (0 while no shape past the budget is the fastest).
    double reserve() {
        std::lock_guard<std::mutex> hold(best_lock_);
        return reserve_;
    }
    /// Whether the shape with k pieces was built (or tried) already.
    bool has(const Decomposition& d, std::size_t shape_index, std::uint32_t k) const { return at_.count(std::make_tuple(&d, shape_index, k)) > 0; }
    const SendTable& rebuild(const Entry& e, Deadline deadline = {}) {
        Entry& x = at_.at(std::make_tuple(e.d, e.shape_index, e.pieces));
        if (!x.table) x.table = build_shape(in_, x.d->boxes, x.shape, x.pieces, nullptr, deadline);
        COLLSCHED_ASSERT(x.table.has_value());
        return *x.table;
    }
    /// Frees the tables of more than one piece that `keep` does not want (their times stay).
    template <class Keep>
    void drop_unless(Keep keep) {
        for (auto& [key, e] : at_)
            if (e.table && e.pieces > 1 && !keep(e)) e.table.reset(), e.plan.reset();
    }

private:
    /// Builds the shape with k pieces into `e`, its plan, and its times at the sizes from `from` on (on `threads`;
    /// `skipping`, get_all's one-piece shapes: predict_or_skip, whose +inf get_all resolves). Past `deadline` the
    /// table or its timing plan stops (LimitReached) and the shape is taken as not applying with k pieces.
    void fill(Entry& e, const Decomposition& d, std::size_t shape_index, const Shape& sh, std::uint32_t k, Deadline deadline, unsigned threads,
              std::size_t from, bool skipping = false) {
        e.d = &d, e.shape_index = shape_index, e.shape = sh, e.pieces = k;
        try {
            trace("shape {} ({}), {} pieces: build", shape_name(sh, in_.collective.kind), d.what, k);
            const auto t0 = Clock::now();
            std::string why;
            e.table = build_shape(in_, d.boxes, sh, k, &why, deadline);
            if (!e.table) trace("  does not apply: {}", why);
            if (e.table) {
                e.transfers = e.table->transfers.size();
                trace("  {} transfers; timing plan", e.transfers);
                e.plan.emplace(*e.table, deadline);
                e.load = load_bound(*e.table, 1.0, basis_);
                const auto t1 = Clock::now();
                e.build_s = std::chrono::duration<double>(t1 - t0).count();
                // each size's prediction on its own (the times do not depend on the threads)
                e.seconds.assign(sizes_.size(), std::numeric_limits<double>::quiet_NaN());
                e.protocols.assign(sizes_.size(), Protocol::none);
                const std::size_t n = sizes_.size() - std::min(from, sizes_.size());
                const unsigned on = threads > 1 ? prediction_threads(threads, e.transfers) : 1;
                const std::size_t made = skipping && next_pieces(1, e.transfers) == 0 && n > 1 ? predict_or_skip(e, deadline) : predict(e, from, on, deadline);
                if (std::any_of(e.seconds.begin() + static_cast<std::ptrdiff_t>(sizes_.size() - n), e.seconds.end(), [](double v) { return std::isnan(v); }))
                    throw LimitReached("time limit (predicting a construction's table)");
                e.predict_s = std::chrono::duration<double>(Clock::now() - t1).count() * std::min<double>(on, static_cast<double>(made)) /
                              std::max<double>(1, static_cast<double>(made));
                trace("  timed (s): {}", fmt::join(e.seconds, " "));
                e.applies = true;  // before settle: once e is settled another thread may drop its table
                if (k == 1) settle(e);
            }
        } catch (const LimitReached& x) {
            trace("  stopped: {}", x.what());
            e.table.reset();
            e.plan.reset();
            e.seconds.clear();
            e.applies = false;
            stopped_ = true;
        }
    }

    /// e's times at the sizes from `from` on, each prediction on its own (on `threads`; the times do not depend on
    /// them); none starts past the deadline (one prediction of a 4-million-transfer table takes seconds, and rail
    /// 128 x 8 allreduce predicted five of them 9 s past its providers' share of --timeout 60). The predictions made.
    std::size_t predict(Entry& e, std::size_t from, unsigned threads, Deadline deadline) {
        const std::size_t n = sizes_.size() - std::min(from, sizes_.size());
        run_indexed(n, threads, [&](std::size_t x) {
            if (deadline.passed()) return false;
            std::tie(e.seconds[from + x], e.protocols[from + x]) = timed_in(*e.plan, sizes_[from + x], basis_, deadline);
            return true;
        }, cores_);
        return n;
    }

    /// e, one piece past the budget (no more pieces are tried for it: 1,024 GPUs), at every size, smallest first, but
    /// +inf (not predicted: get_all predicts it later unless the shape is dominated) where it is slower than the
    /// fastest shape timed so far there (best_), by
    ///  - a bound: its chain of latencies (predicted first, at almost no size) or its busiest link's bytes above it;
    ///  - or a guess: the line through its last two times (its chain of latencies at size 0 the first) above it by
    ///    more than 10 %. A time is max over chains of latencies plus bytes over bandwidths (docs/time.md), so it
    ///    grows at least that fast (convex in the size) unless contention reorders the transfers; a guess only
    ///    saves a prediction, never decides a time or a bound (get_all's dominance reads only times and +inf).
    /// Of the 14 shapes of rail 128 x 8 allreduce, 11 lose at every size; the rings across the boxes lose by 2 to
    /// 100 times. The predictions made.
    std::size_t predict_or_skip(Entry& e, Deadline deadline) {
        e.latency = timed(*e.plan, 1e-9, basis_);
        std::size_t made = 1;
        std::vector<std::size_t> by_size(sizes_.size());
        std::iota(by_size.begin(), by_size.end(), std::size_t{0});
        std::stable_sort(by_size.begin(), by_size.end(), [&](std::size_t a, std::size_t b) { return sizes_[a] < sizes_[b]; });
        double s0 = 0, t0 = e.latency, s1 = 0, t1 = e.latency;  // the last two (size, time) known, s0 <= s1
        for (std::size_t x : by_size) {
            if (deadline.passed()) return made;
            const double s = sizes_[x], bound = std::max(e.load * s, e.latency);
            const double guess = s1 > s0 ? t1 + (t1 - t0) / (s1 - s0) * (s - s1) : 0.0;
            double best = 0;
            {
                std::lock_guard<std::mutex> hold(best_lock_);
                best = best_[x];
            }
            if (bound > best * (1 + 1e-3) || guess > best * 1.1) {
                e.seconds[x] = std::numeric_limits<double>::infinity();
                continue;
            }
            std::tie(e.seconds[x], e.protocols[x]) = timed_in(*e.plan, s, basis_, deadline);
            ++made;
            if (s > s1) s0 = s1, t0 = t1, s1 = s, t1 = e.seconds[x];
        }
        return made;
    }

    /// e (one piece) is timed: the fastest times per size take its, and every shape timed so far whose one piece is
    /// past the budget (more pieces are not tried for it) and that is slower at every size than the fastest is dropped,
    /// as it will stay (the fastest only gets faster): its table and plan are the memory the fastest shape's pieces
    /// need (past_budget; rail 128 x 8 allreduce held 14 tables of up to 4.2 million transfers, 2.8 GB).
    void settle(Entry& e) {
        std::lock_guard<std::mutex> hold(best_lock_);
        e.done = true;
        for (std::size_t i = 0; i < sizes_.size(); ++i) best_[i] = std::min(best_[i], e.seconds[i]);
        // the fastest at the largest size, one piece past the budget: what its three pieces would take (past_budget),
        // and a shape like it on each thread (its build, plan and two predictions: its chain of latencies and one size;
        // on rail 128 x 8 allreduce the shapes started last ran 5 and 12 s, two at once)
        const std::size_t top = static_cast<std::size_t>(std::max_element(sizes_.begin(), sizes_.end()) - sizes_.begin());
        if (next_pieces(1, e.transfers) == 0 && e.seconds[top] <= best_[top])
            reserve_ = fill_seconds(e, 3) + std::max(1u, jobs_) * (e.build_s + 2 * e.predict_s);
        for (auto& [key, x] : at_) {
            if (!x.done || x.dominated || !x.table || x.pieces != 1 || next_pieces(1, x.transfers) != 0) continue;
            bool slower = true;
            for (std::size_t i = 0; i < sizes_.size() && slower; ++i) slower = x.seconds[i] > best_[i] * (1 + 1e-3);
            if (!slower) continue;
            trace("  dropped: {} ({} transfers), slower at every size than another shape", shape_name(x.shape, in_.collective.kind), x.transfers);
            x.dominated = true;
            x.table.reset(), x.plan.reset();
        }
    }

    const SynthInstance& in_;
    const std::vector<double>& sizes_;
    const TimeBasis& basis_;
    unsigned jobs_ = 1;
    Cores* cores_ = nullptr;
    std::mutex best_lock_;
    double reserve_ = 0;
    std::vector<double> best_ = std::vector<double>(sizes_.size(), std::numeric_limits<double>::infinity());  // per size
    std::map<std::tuple<const Decomposition*, std::size_t, std::uint32_t>, Entry> at_;
    std::atomic<bool> stopped_ = false;
};

struct Tried {
    const Decomposition* d = nullptr;
    std::size_t shape_index = 0;
    Shape shape;
    const ShapeTables::Entry* one = nullptr;  // one piece
    double load = 0;     // the busiest link's seconds per byte of the size (no number of pieces goes below)
    double latency = 0;  // the chain of latencies of one piece (the time with almost nothing to move)
    // at the size being chosen for
    std::uint32_t pieces = 1;
    double seconds = 0, bound = 0;
};

/// More pieces (next_pieces) while the predicted time at size i falls by more than 0.1 %, and
/// while the shape stays within 1 % of the best time any shape refined before it had with as
/// many pieces (`at`: pieces -> that time; a heuristic that saves building the large tables of
/// shapes that are behind, never a bound).
void refine(ShapeTables& tables, Tried& t, std::size_t i, std::map<std::uint32_t, double>& at, Clock::time_point deadline) {
    std::size_t transfers = t.one->transfers;
    // on an executor that runs the constructions (MSCCL++, MSCCL), twice as many each time: its costs a message end the
    // gain early (4 x 8 H100 with NIC 0 at half on mscclpp at 1 GiB: 6.74, 6.42, 6.56 ms with 1, 2, 4 pieces), and 2 was
    // never tried; NCCL's graph files hold rings, none of these shapes
    const std::uint32_t factor = runs_constructions(tables.basis()) ? 2 : 4;
    for (std::uint32_t k = next_pieces(t.pieces, transfers, factor); k > 0 && Clock::now() < deadline; k = next_pieces(k, transfers, factor)) {
        const ShapeTables::Entry* next = tables.get(*t.d, t.shape_index, t.shape, k, Deadline::at(deadline), i);
        if (!next) return;
        transfers = next->transfers;
        const double s = next->seconds[i];
        auto [it, fresh] = at.try_emplace(k, s);
        const bool behind = !fresh && s > it->second * 1.01;
        it->second = std::min(it->second, s);
        if (s >= t.seconds * (1 - 1e-3) || behind) {
            if (s < t.seconds) t.pieces = k, t.seconds = s;
            break;
        }
        t.pieces = k, t.seconds = s;
    }
    // chained shapes: erratic in k, and gain past 64 (gpu_half at 16 MiB: 117, 112, 111 us at 64, 128, 160; COMPOSE.md)
    for (std::uint32_t k : {128u, 160u}) {
        if (!t.shape.chained || factor != 4 || Clock::now() >= deadline || k * t.one->transfers > transfer_budget) return;
        const ShapeTables::Entry* more = tables.get(*t.d, t.shape_index, t.shape, k, Deadline::at(deadline), i);
        if (more && more->seconds[i] < t.seconds) t.pieces = k, t.seconds = more->seconds[i];
    }
}

/// The chain of latencies of t's one piece (the time of its table with almost nothing to move; its own plan).
double latency_of(Tried& t, const TimeBasis& basis) {
    if (t.latency < 0) t.latency = timed(*t.one->plan, 1e-9, basis);
    return t.latency;
}

/// Where the fastest shape at size i has one piece past the transfer budget already (1,024 GPUs: 2 to 4 million
/// transfers), refine tries no more, and that one piece pays its whole fill and drain: a datum stored and forwarded
/// whole at a rail switch before the next leg starts, the reduce-scatter's last sum before the allgather's first
/// copy, the in-box tail. Where that (its time above its busiest link's bytes) is more than twice its chain of
/// latencies, so that more pieces can only gain, three pieces (else two) within fill_budget, once per shape, when the
/// time left covers half again its one piece's build, plan and predictions times the pieces, and the memory left
/// fill_bytes_per_transfer each (rail 128 x 8 at 1 GiB: allreduce 10.821 ms with one piece, 10.741 with two, 10.697
/// with three; NCCL's ring's bound is 10.735).
void past_budget(ShapeTables& tables, Tried& t, std::size_t i, const std::vector<double>& sizes, Clock::time_point deadline) {
    const ShapeTables::Entry& one = *t.one;
    if (t.pieces != 1 || next_pieces(1, one.transfers) != 0) return;
    for (std::uint32_t k : {3u, 2u}) {
        if (tables.has(*t.d, t.shape_index, k)) {  // built for an earlier size, predicted at this one too
            const ShapeTables::Entry* e = tables.get(*t.d, t.shape_index, t.shape, k);
            if (e && e->seconds[i] < t.seconds * (1 - 1e-3)) t.pieces = k, t.seconds = e->seconds[i];
            return;
        }
    }
    if (t.seconds - t.load * sizes[i] <= 2 * latency_of(t, tables.basis())) return;
    for (std::uint32_t k : {3u, 2u}) {
        // predicted at every size (the caller compares the candidates at all of them: it would predict the rest)
        const double need = tables.fill_seconds(one, k);
        const double left = Deadline::at(deadline).left();
        const bool fits = MemoryBudget::standard().fits(k * one.transfers * fill_bytes_per_transfer);
        trace("past the budget: {} pieces of {} need about {:.1f} s ({:.1f} left){}", k, shape_name(t.shape, one.table ? one.table->collective.kind : CollectiveKind::allreduce),
              need, left, fits ? "" : " and more memory than is left");
        if (k * one.transfers > fill_budget || need > left || !fits) continue;
        const ShapeTables::Entry* e = tables.get(*t.d, t.shape_index, t.shape, k, Deadline::at(deadline), 0);
        if (e && e->seconds[i] < t.seconds * (1 - 1e-3)) t.pieces = k, t.seconds = e->seconds[i];
        return;
    }
}

/// Drops from `chosen` ((tried index, pieces) -> size) a shape's pieces that another number of its pieces, predicted at
/// every size (past_budget's), beats at every size: rail 128 x 8 allreduce's three pieces beat its one piece from
/// 64 KiB on, and the one piece's check cost the time objective 2.5 s and 0.8 GB more.
void drop_beaten(ShapeTables& tables, const std::vector<Tried>& tried, std::map<std::pair<std::size_t, std::uint32_t>, std::size_t>& chosen,
                 std::size_t sizes) {
    auto full = [&](const ShapeTables::Entry* e) {
        return e && std::all_of(e->seconds.begin(), e->seconds.end(), [](double v) { return std::isfinite(v); });
    };
    std::erase_if(chosen, [&](const auto& kv) {
        const Tried& t = tried[kv.first.first];
        const ShapeTables::Entry* e = tables.get(*t.d, t.shape_index, t.shape, kv.first.second);
        if (!full(e)) return false;
        for (const auto& [other, i] : chosen) {
            if (other.first != kv.first.first || other.second == kv.first.second) continue;
            const ShapeTables::Entry* o = tables.get(*t.d, t.shape_index, t.shape, other.second);
            if (!full(o)) continue;
            bool beaten = true;
            for (std::size_t s = 0; s < sizes && beaten; ++s) beaten = o->seconds[s] < e->seconds[s];
            if (beaten) return true;
        }
        return false;
    });
}

/// On an executor that runs the constructions (MSCCL++, MSCCL), each shape of `chosen` with half and a quarter of its
/// pieces too, where its table was built (refine's ladder at that size): the time objective checks the candidates in
/// time order, and one its exporter refuses (MSCCL++: 64 ops a thread block, 108 blocks a GPU) falls back to fewer
/// pieces (4 x 8 H100 with NIC 0 at half, reduce_scatter at 1 GiB on mscclpp: rs+direct by capacity chose 8, refused).
void offer_fewer(const ShapeTables& tables, const std::vector<Tried>& tried, std::map<std::pair<std::size_t, std::uint32_t>, std::size_t>& chosen) {
    if (!runs_constructions(tables.basis())) return;
    const auto picked = chosen;
    for (const auto& [key, i] : picked)
        for (std::uint32_t k = key.second / 2, n = 0; k >= 1 && n < 2; k /= 2, ++n)
            if (tables.has(*tried[key.first].d, tried[key.first].shape_index, k)) chosen.try_emplace({key.first, k}, i);
}

/// NCCL's ring algorithms on the Hamiltonian cycles the machine runs at once (verifier/synth's
/// ring_schedule, docs/synthesis.md "Rings run at once"), as a candidate for machines of one box
/// without routers (the DGX-1's cube mesh, switch boxes): there the flat ring in processor order
/// may not apply and the rings use every link. Each ring carries `pieces` batches; pieces 1, 4,
/// 16 while the time falls by more than 0.1 %.
std::optional<Candidate> rings_candidate(const SynthInstance& in, double size, Clock::time_point deadline, const TimeBasis& basis) {
    const std::uint32_t P = in.topology->processors();
    const bool per_owner = in.collective.kind != CollectiveKind::allgather;
    auto build = [&](std::uint32_t chunks) -> std::optional<SendTable> {
        SynthInstance r = in;
        try {
            r.collective.set_chunks(chunks, *in.topology);
        } catch (const InputError&) {  // more chunks than 32-bit message ids hold
            return std::nullopt;
        }
        std::optional<KnownSchedule> k = ring_schedule(r, std::min(deadline, Clock::now() + std::chrono::seconds(5)));
        if (!k) return std::nullopt;
        return std::move(k->table);
    };
    // the rings found: each puts one transfer per processor in step 1
    std::optional<SendTable> probe = build(per_owner ? 64 * P : 64);
    if (!probe) return std::nullopt;
    std::uint32_t rings = 0;
    for (const Transfer& x : probe->transfers) rings += x.step == 1;
    rings = std::max<std::uint32_t>(1, rings / P);
    Candidate best;
    best.predicted_s = std::numeric_limits<double>::infinity();
    for (std::uint32_t pieces = 1; pieces <= 16 && Clock::now() < deadline; pieces *= 4) {
        std::optional<SendTable> t = build(rings * pieces * (per_owner ? P : 1));
        if (!t) break;
        const double s = timed(TimingPlan(*t), size, basis);
        if (s >= best.predicted_s * (1 - 1e-3)) break;
        best = {fmt::format("rings ({} at once), {} piece{}", rings, pieces, pieces == 1 ? "" : "s"),
                fmt::format("NCCL's ring algorithm on {} rings the machine runs at once (verifier/synth ring_schedule), {} batches per ring: the fastest "
                            "of 1, 4, 16 at {} bytes (asynchronous time{})",
                            rings, pieces, size, timed_on(basis)),
                pieces, std::move(*t), s};
    }
    if (best.table.transfers.empty()) return std::nullopt;
    return best;
}

}  // namespace

std::uint32_t next_pieces(std::uint32_t k, std::size_t transfers, std::uint32_t factor) {
    if (k * factor <= most_pieces && transfers * factor <= transfer_budget) return k * factor;
    const std::size_t per_piece = (transfers + k - 1) / k;
    const std::size_t most = std::min<std::size_t>(transfer_budget / std::max<std::size_t>(per_piece, 1), most_pieces);
    return most > k ? static_cast<std::uint32_t>(most) : 0;
}

/// Alltoall on many shortest paths (alltoall.hpp) at C = 1, 4, 16, 64 chunks (within the budget):
/// each size's fastest, once.
std::vector<Candidate> alltoall_candidates(const SynthInstance& in, const std::vector<double>& sizes, Clock::time_point deadline,
                                           const TimeBasis& basis) {
    std::vector<Candidate> out;
    std::vector<double> best(sizes.size(), std::numeric_limits<double>::infinity());
    std::vector<std::size_t> chosen(sizes.size(), 0);
    std::vector<std::pair<SendTable, std::vector<double>>> built;
    std::string why;
    for (std::uint32_t C = 1; C <= most_pieces && Clock::now() < deadline; C *= 4) {
        if (!built.empty() && built.back().first.transfers.size() * 4 > transfer_budget) break;
        std::optional<SendTable> t = multipath_alltoall(in, C, &why);
        if (!t) break;
        const TimingPlan plan(*t);
        std::vector<double> secs;
        bool better = false;
        for (std::size_t i = 0; i < sizes.size(); ++i) {
            secs.push_back(timed(plan, sizes[i], basis));
            if (secs[i] < best[i] * (1 - 1e-3)) best[i] = secs[i], chosen[i] = built.size(), better = true;
        }
        built.emplace_back(std::move(*t), std::move(secs));
        if (!better) break;  // more chunks pay more latencies than they pipeline
    }
    for (std::size_t b = 0; b < built.size(); ++b) {
        const auto first = std::find(chosen.begin(), chosen.end(), b);
        if (first == chosen.end() || !verify_direct(built[b].first).holds()) continue;
        const std::size_t i = static_cast<std::size_t>(first - chosen.begin());
        const std::uint32_t C = built[b].first.collective.chunks;
        out.push_back({fmt::format("multipath alltoall, {} chunk{}", C, C == 1 ? "" : "s"),
                       fmt::format("every message in {} chunks, each on one of the shortest paths between processors, the least loaded (by seconds at the "
                                   "links' bandwidths); {} chunks: the fastest of 1, 4, 16, 64 at {} bytes (asynchronous time{})",
                                   C, C, sizes[i], timed_on(basis)),
                       C, std::move(built[b].first), built[b].second[i]});
    }
    return out;
}

std::vector<Candidate> time_candidates(const SynthInstance& in, const std::vector<double>& sizes, Clock::time_point deadline, bool verify,
                                       unsigned jobs, Cores* cores, const TimeBasis& basis) {
    const CollectiveKind kind = in.collective.kind;
    std::vector<Candidate> out;
    if (kind == CollectiveKind::alltoall && !sizes.empty()) return alltoall_candidates(in, sizes, deadline, basis);
    if (sizes.empty() || (kind != CollectiveKind::allreduce && kind != CollectiveKind::reduce_scatter && kind != CollectiveKind::allgather))
        return out;
    if (in.model.timing != Timing::hop || in.model.inject_once || in.topology->processors() < 2) return out;
    const std::vector<Decomposition> ds = decompositions(*in.topology);
    ShapeTables tables(in, sizes, basis, jobs, cores);
    std::vector<Tried> tried;
    // every shape with one piece, on the threads (the shapes after the first are not started past the deadline: keep
    // what is built; the first too stops at the deadline: on 4,096 GPUs its one-piece table alone ran past a 10 s
    // --timeout by minutes; no shape then, and the run ends with its bounds)
    std::vector<std::tuple<const Decomposition*, std::size_t, Shape>> shapes;
    for (const Decomposition& d : ds)
        for (const Shape& sh : shapes_for(*in.topology, d.boxes, d.flat)) {
            const std::size_t si = shapes.empty() || std::get<0>(shapes.back()) != &d ? 0 : std::get<1>(shapes.back()) + 1;
            shapes.emplace_back(&d, si, sh);
        }
    tables.get_all(shapes, Deadline::at(deadline));
    for (const auto& [d, si, sh] : shapes) {
        const ShapeTables::Entry* one = tables.get(*d, si, sh, 1, Deadline::at(deadline));
        // the shape does not apply (a route through a processor, ...), or the time limit came first, or it is dominated
        if (!one || one->dominated) continue;
        // a chained shape's NIC shares are whole chunks, spread over the rails only across pieces: its one piece's
        // busiest link is no bound on more pieces (gpu_half's one piece puts 3/14 of a piece on one rail's NIC)
        tried.push_back({d, si, sh, one, sh.chained ? 0.0 : one->load, one->latency});
    }
    // per size, each shape's pieces: (tried index, pieces) -> the first size that chose it
    std::map<std::pair<std::size_t, std::uint32_t>, std::size_t> chosen;
    for (std::size_t i = 0; i < sizes.size(); ++i) {
        for (Tried& t : tried) t.pieces = 1, t.seconds = t.one->seconds[i], t.bound = t.load * sizes[i];
        // the shapes whose load could still beat the best so far, the least loaded first
        std::vector<std::size_t> order(tried.size());
        for (std::size_t x = 0; x < order.size(); ++x) order[x] = x;
        std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return tried[a].bound < tried[b].bound; });
        double best = std::numeric_limits<double>::infinity();
        for (const Tried& t : tried) best = std::min(best, t.seconds);
        // the chained shapes (allreduce.hpp) pay a chain of hops per piece and gain only with many: compared among themselves
        std::map<std::uint32_t, double> at, at_chained;
        for (std::size_t x : order) {
            Tried& t = tried[x];
            if (t.bound * (1 + 1e-3) >= best) continue;
            // what no number of pieces goes below: the busiest link's bytes, and the chain of
            // latencies of one piece (the time of the table with almost nothing to move)
            t.bound = std::max(t.bound, latency_of(t, tables.basis()));
            if (t.bound * (1 + 1e-3) >= best) continue;
            refine(tables, t, i, t.shape.chained ? at_chained : at, deadline);
            best = std::min(best, t.seconds);
        }
        if (!tried.empty()) {
            Tried& fastest = *std::min_element(tried.begin(), tried.end(), [](const Tried& a, const Tried& b) { return a.seconds < b.seconds; });
            past_budget(tables, fastest, i, sizes, deadline);
        }
        for (std::size_t x = 0; x < tried.size(); ++x) chosen.try_emplace({x, tried[x].pieces}, i);
        // memory: only the tables some size chose stay (the others' times are kept)
        tables.drop_unless([&](const ShapeTables::Entry& e) {
            for (std::size_t x = 0; x < tried.size(); ++x)
                if (tried[x].d == e.d && tried[x].shape_index == e.shape_index && chosen.count({x, e.pieces})) return true;
            return false;
        });
    }
    drop_beaten(tables, tried, chosen, sizes.size());
    offer_fewer(tables, tried, chosen);
    VerifyOptions check;
    check.deadline = Deadline::at(deadline);
    // the fastest at their size first, each rebuilt and checked within the deadline (the first one too:
    // on 4,096 GPUs its rebuilding and check ran minutes past --timeout)
    std::vector<std::tuple<double, std::pair<std::size_t, std::uint32_t>, std::size_t>> by_time;
    for (const auto& [key, i] : chosen) {
        const ShapeTables::Entry* e = tables.get(*tried[key.first].d, tried[key.first].shape_index, tried[key.first].shape, key.second);
        by_time.push_back({e ? e->seconds[i] : std::numeric_limits<double>::infinity(), key, i});
    }
    std::stable_sort(by_time.begin(), by_time.end(), [](const auto& a, const auto& b) { return std::get<0>(a) < std::get<0>(b); });
    for (const auto& [seconds, key, i] : by_time) {
        const Tried& t = tried[key.first];
        const ShapeTables::Entry* e = tables.get(*t.d, t.shape_index, t.shape, key.second);
        // past the deadline only the tables still held are handed over (the one-piece tables are: on 1,024 GPUs the
        // shapes were built and timed in 40 s, and all of them were dropped for want of time to rebuild)
        if (!e || (Clock::now() >= deadline && !e->table)) continue;
        const SendTable* rebuilt = nullptr;
        try {
            rebuilt = &tables.rebuild(*e, check.deadline);
        } catch (const LimitReached&) {
            break;
        }
        const SendTable& table = *rebuilt;
        // a construction that does not hold (or not checked in time) is left out; unchecked, the caller checks
        trace("rebuilt {}, {} pieces ({} transfers)", shape_name(t.shape, kind), e->pieces, table.transfers.size());
        if (verify && !verify_direct(table, check).holds()) continue;
        const bool again = std::any_of(out.begin(), out.end(), [&](const Candidate& c) {
            return c.table.collective == table.collective && c.table.transfers == table.transfers;
        });
        if (again) continue;  // one box of P and P boxes of one give the same direct exchange
        std::string name = fmt::format("{}, {} piece{}", shape_name(t.shape, kind), e->pieces, e->pieces == 1 ? "" : "s");
        std::string how = fmt::format("{} on {}; {} pieces: the fastest of {} (or the most within 500,000 transfers; past them, 2 or 3) at {} bytes (asynchronous time{})",
                                      shape_name(t.shape, kind), t.d->what, e->pieces,
                                      runs_constructions(basis) ? "1, 2, 4, ..., 64" : t.shape.chained ? "1, 4, 16, 64, 128, 160" : "1, 4, 16, 64", sizes[i], timed_on(basis));
        // its times go with it, plan or not (the same table's: the caller predicts only the sizes missing, NaN)
        out.push_back({std::move(name), std::move(how), e->pieces, table, e->seconds[i], e->plan, e->seconds, e->protocols});
    }
    const Boxes boxes = find_boxes(*in.topology);
    if (in.topology->routers() == 0 && boxes.boxes.size() <= 1) {
        std::map<std::uint32_t, bool> seen;  // pieces
        for (double size : sizes)
            if (std::optional<Candidate> r = rings_candidate(in, size, deadline, basis); r && !seen[r->pieces]) {
                seen[r->pieces] = true;
                out.push_back(std::move(*r));
            }
    }
    std::stable_sort(out.begin(), out.end(), [](const Candidate& a, const Candidate& b) { return a.predicted_s < b.predicted_s; });
    return out;
}

std::vector<Candidate> time_candidates(const SynthInstance& in, double size_bytes, Clock::time_point deadline) {
    return time_candidates(in, std::vector<double>{size_bytes}, deadline, true);
}

}  // namespace collsched::compose
