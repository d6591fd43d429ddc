// The boxes of a machine and the candidates for a size (allreduce.hpp): every shape that applies,
// each with the number of pieces that its predicted asynchronous time at the size prefers,
// verified by the direct checker.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <limits>
#include <map>
#include <tuple>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "runtime/timing.hpp"
#include "support/assert.hpp"
#include "support/error.hpp"
#include "support/parallel.hpp"
#include "support/trace.hpp"
#include "verifier/check/direct.hpp"
#include "verifier/compose/allreduce.hpp"
#include "verifier/compose/alltoall.hpp"

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

std::vector<Shape> shapes_for(const Topology& t, const std::vector<std::vector<Node>>& boxes, bool flat) {
    const std::size_t K = boxes.size(), B = boxes[0].size();
    std::vector<InBox> ins = B > 1 ? std::vector<InBox>{InBox::rsag, InBox::ar} : std::vector<InBox>{InBox::none};
    // boxes that are not complete (a cube mesh): the direct in-box exchange relays through processors, a ring does not
    // (recursive halving where it applies: each hop on its own link, so the pieces pipeline)
    if (B > 2 && !flat && !box_complete(t, boxes[0])) ins.push_back(B >= 4 && (B & (B - 1)) == 0 ? InBox::halving : InBox::ring);
    std::vector<Across> acrosses = K > 1 ? std::vector<Across>{Across::direct_ar, Across::direct_rsag, Across::ring, Across::halving, Across::doubling}
                                         : std::vector<Across>{Across::none};
    std::vector<Shape> s;
    for (InBox i : ins)
        for (Across a : acrosses) s.push_back({i, a, flat});
    return s;
}

/// The longest any channel or link group is busy in the table at `size` (NCCL's, docs/time.md "Sizes"; bytes over bandwidth):
/// a lower bound on its asynchronous time that does not depend on the number of pieces, which
/// moves the same bytes over the same links.
double load_bound(const SendTable& t, double size) {
    const Topology& topo = *t.topology;
    const double chunk = datum_bytes(t.collective.kind, topo.processors(), size) / t.collective.chunks;  // NCCL's size (docs/time.md)
    std::vector<double> chan(topo.channels().size()), group(topo.groups().size());
    for (const Transfer& x : t.transfers) {
        chan[idx(x.channel)] += chunk;
        for (std::uint32_t g : topo.groups_of(x.channel)) group[g] += chunk;
    }
    double most = 0;
    const TimeOptions opt{size, std::nullopt};
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
    ShapeTables(const SynthInstance& in, const std::vector<double>& sizes, unsigned jobs) : in_(in), sizes_(sizes), jobs_(jobs) {}

    struct Entry {
        const Decomposition* d = nullptr;
        Shape shape;
        std::uint32_t pieces = 1;
        std::size_t shape_index = 0;
        bool applies = false;            // the shape applies with these pieces
        std::optional<SendTable> table;  // empty when it does not apply, or dropped
        std::optional<TimingPlan> plan;  // the table's (dropped with it)
        std::size_t transfers = 0;
        /// asynchronous, per size; NaN before the size that first asked for the table (never read here: the sizes
        /// are chosen for in order, and a table some size chose is read at that size)
        std::vector<double> seconds;
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
    /// predictions then on one; the entries are the same as get() one after the other would make.
    void get_all(const std::vector<std::tuple<const Decomposition*, std::size_t, Shape>>& which, Deadline deadline) {
        std::vector<Entry*> fresh(which.size(), nullptr);
        for (std::size_t x = 0; x < which.size(); ++x) {
            auto [d, si, sh] = which[x];
            auto [it, added] = at_.try_emplace(std::make_tuple(d, si, 1u));
            if (added) fresh[x] = &it->second;
        }
        run_indexed(which.size(), jobs_, [&](std::size_t x) {
            if (!fresh[x]) return true;
            if (x > 0 && deadline.passed()) {  // not started: taken as not applying
                fresh[x]->shape = std::get<2>(which[x]);
                stopped_ = true;
                return true;
            }
            fill(*fresh[x], *std::get<0>(which[x]), std::get<1>(which[x]), std::get<2>(which[x]), 1, deadline, 1, 0);
            return true;
        });
    }
    bool stopped() const { return stopped_; }
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
    /// Builds the shape with k pieces into `e`, its plan, and its times at the sizes from `from` on (on `threads`).
    /// Past `deadline` the table or its timing plan stops (LimitReached) and the shape is taken as not applying with k
    /// pieces.
    void fill(Entry& e, const Decomposition& d, std::size_t shape_index, const Shape& sh, std::uint32_t k, Deadline deadline, unsigned threads,
              std::size_t from) {
        e.d = &d, e.shape_index = shape_index, e.shape = sh, e.pieces = k;
        try {
            trace("shape {} ({}), {} pieces: build", shape_name(sh, in_.collective.kind), d.what, k);
            e.table = build_shape(in_, d.boxes, sh, k, nullptr, deadline);
            if (e.table) {
                e.transfers = e.table->transfers.size();
                trace("  {} transfers; timing plan", e.transfers);
                e.plan.emplace(*e.table, deadline);
                // each size's prediction on its own (the times do not depend on the threads)
                e.seconds.assign(sizes_.size(), std::numeric_limits<double>::quiet_NaN());
                const std::size_t n = sizes_.size() - std::min(from, sizes_.size());
                // none starts past the deadline: one prediction of a 4-million-transfer table takes seconds, and
                // rail 128 x 8 allreduce predicted five of them 9 s past its providers' share of --timeout 60
                run_indexed(n, threads > 1 ? prediction_threads(threads, e.transfers) : 1, [&](std::size_t x) {
                    if (deadline.passed()) return false;
                    e.seconds[from + x] = e.plan->asynchronous(TimeOptions{sizes_[from + x], std::nullopt});
                    return true;
                });
                if (std::any_of(e.seconds.begin() + static_cast<std::ptrdiff_t>(sizes_.size() - n), e.seconds.end(), [](double v) { return std::isnan(v); }))
                    throw LimitReached("time limit (predicting a construction's table)");
                trace("  timed (s): {}", fmt::join(e.seconds, " "));
            }
        } catch (const LimitReached&) {
            trace("  stopped by the time limit");
            e.table.reset();
            e.plan.reset();
            e.seconds.clear();
            stopped_ = true;
        }
        e.applies = e.table.has_value();
    }

    const SynthInstance& in_;
    const std::vector<double>& sizes_;
    unsigned jobs_ = 1;
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
    for (std::uint32_t k = next_pieces(t.pieces, transfers); k > 0 && Clock::now() < deadline; k = next_pieces(k, transfers)) {
        const ShapeTables::Entry* next = tables.get(*t.d, t.shape_index, t.shape, k, Deadline::at(deadline), i);
        if (!next) return;
        transfers = next->transfers;
        const double s = next->seconds[i];
        auto [it, fresh] = at.try_emplace(k, s);
        const bool behind = !fresh && s > it->second * 1.01;
        it->second = std::min(it->second, s);
        if (s >= t.seconds * (1 - 1e-3) || behind) {
            if (s < t.seconds) t.pieces = k, t.seconds = s;
            return;
        }
        t.pieces = k, t.seconds = s;
    }
}

/// NCCL's ring algorithms on the Hamiltonian cycles the machine runs at once (verifier/synth's
/// ring_schedule, docs/synthesis.md "Rings run at once"), as a candidate for machines of one box
/// without routers (the DGX-1's cube mesh, switch boxes): there the flat ring in processor order
/// may not apply and the rings use every link. Each ring carries `pieces` batches; pieces 1, 4,
/// 16 while the time falls by more than 0.1 %.
std::optional<Candidate> rings_candidate(const SynthInstance& in, double size, Clock::time_point deadline) {
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
        const double s = predict_time(*t, TimeOptions{size, std::nullopt}).asynchronous;
        if (s >= best.predicted_s * (1 - 1e-3)) break;
        best = {fmt::format("rings ({} at once), {} piece{}", rings, pieces, pieces == 1 ? "" : "s"),
                fmt::format("NCCL's ring algorithm on {} rings the machine runs at once (verifier/synth ring_schedule), {} batches per ring: the fastest "
                            "of 1, 4, 16 at {} bytes (asynchronous time)",
                            rings, pieces, size),
                pieces, std::move(*t), s};
    }
    if (best.table.transfers.empty()) return std::nullopt;
    return best;
}

}  // namespace

std::uint32_t next_pieces(std::uint32_t k, std::size_t transfers) {
    if (k * 4 <= most_pieces && transfers * 4 <= transfer_budget) return k * 4;
    const std::size_t per_piece = (transfers + k - 1) / k;
    const std::size_t most = std::min<std::size_t>(transfer_budget / std::max<std::size_t>(per_piece, 1), most_pieces);
    return most > k ? static_cast<std::uint32_t>(most) : 0;
}

/// Alltoall on many shortest paths (alltoall.hpp) at C = 1, 4, 16, 64 chunks (within the budget):
/// each size's fastest, once.
std::vector<Candidate> alltoall_candidates(const SynthInstance& in, const std::vector<double>& sizes, Clock::time_point deadline) {
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
            secs.push_back(plan.predict(TimeOptions{sizes[i], std::nullopt}).asynchronous);
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
                                   "links' bandwidths); {} chunks: the fastest of 1, 4, 16, 64 at {} bytes (asynchronous time)",
                                   C, C, sizes[i]),
                       C, std::move(built[b].first), built[b].second[i]});
    }
    return out;
}

std::vector<Candidate> time_candidates(const SynthInstance& in, const std::vector<double>& sizes, Clock::time_point deadline, bool verify,
                                       unsigned jobs) {
    const CollectiveKind kind = in.collective.kind;
    std::vector<Candidate> out;
    if (kind == CollectiveKind::alltoall && !sizes.empty()) return alltoall_candidates(in, sizes, deadline);
    if (sizes.empty() || (kind != CollectiveKind::allreduce && kind != CollectiveKind::reduce_scatter && kind != CollectiveKind::allgather))
        return out;
    if (in.model.timing != Timing::hop || in.model.inject_once || in.topology->processors() < 2) return out;
    const std::vector<Decomposition> ds = decompositions(*in.topology);
    ShapeTables tables(in, sizes, jobs);
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
        if (!one) continue;  // the shape does not apply (a route through a processor, ...), or the time limit came first
        tried.push_back({d, si, sh, one, load_bound(*one->table, 1.0), -1.0});
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
        std::map<std::uint32_t, double> at;
        for (std::size_t x : order) {
            Tried& t = tried[x];
            if (t.bound * (1 + 1e-3) >= best) continue;
            // what no number of pieces goes below: the busiest link's bytes, and the chain of
            // latencies of one piece (the time of the table with almost nothing to move)
            if (t.latency < 0) t.latency = t.one->plan->predict(TimeOptions{1e-9, std::nullopt}).asynchronous;  // the table's own plan
            t.bound = std::max(t.bound, t.latency);
            if (t.bound * (1 + 1e-3) >= best) continue;
            refine(tables, t, i, at, deadline);
            best = std::min(best, t.seconds);
        }
        for (std::size_t x = 0; x < tried.size(); ++x) chosen.try_emplace({x, tried[x].pieces}, i);
        // memory: only the tables some size chose stay (the others' times are kept)
        tables.drop_unless([&](const ShapeTables::Entry& e) {
            for (std::size_t x = 0; x < tried.size(); ++x)
                if (tried[x].d == e.d && tried[x].shape_index == e.shape_index && chosen.count({x, e.pieces})) return true;
            return false;
        });
    }
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
        std::string how = fmt::format("{} on {}; {} pieces: the fastest of 1, 4, 16, 64 (or the most within 500,000 transfers) at {} bytes (asynchronous time)", shape_name(t.shape, kind),
                                      t.d->what, e->pieces, sizes[i]);
        // its times go with it, plan or not (the same table's: the caller predicts only the sizes missing, NaN)
        out.push_back({std::move(name), std::move(how), e->pieces, table, e->seconds[i], e->plan, e->seconds});
    }
    const Boxes boxes = find_boxes(*in.topology);
    if (in.topology->routers() == 0 && boxes.boxes.size() <= 1) {
        std::map<std::uint32_t, bool> seen;  // pieces
        for (double size : sizes)
            if (std::optional<Candidate> r = rings_candidate(in, size, deadline); r && !seen[r->pieces]) {
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
