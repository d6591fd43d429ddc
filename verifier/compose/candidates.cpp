// The boxes of a machine and the candidates for a size (allreduce.hpp): every shape that applies,
// each with the number of pieces that its predicted asynchronous time at the size prefers,
// verified by the direct checker.
#include <algorithm>
#include <chrono>
#include <limits>
#include <map>

#include <fmt/format.h>

#include "runtime/timing.hpp"
#include "support/error.hpp"
#include "verifier/check/direct.hpp"
#include "verifier/compose/allreduce.hpp"

namespace collsched::compose {

using Clock = std::chrono::steady_clock;

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

std::vector<Shape> shapes_for(std::size_t K, std::size_t B, bool flat) {
    std::vector<InBox> ins = B > 1 ? std::vector<InBox>{InBox::rsag, InBox::ar} : std::vector<InBox>{InBox::none};
    std::vector<Across> acrosses = K > 1 ? std::vector<Across>{Across::direct_ar, Across::direct_rsag, Across::ring, Across::halving, Across::doubling}
                                         : std::vector<Across>{Across::none};
    std::vector<Shape> s;
    for (InBox i : ins)
        for (Across a : acrosses) s.push_back({i, a, flat});
    return s;
}

/// The longest any channel or link group is busy in the table at `size` (bytes over bandwidth):
/// a lower bound on its asynchronous time that does not depend on the number of pieces, which
/// moves the same bytes over the same links.
double load_bound(const SendTable& t, double size) {
    const Topology& topo = *t.topology;
    const double chunk = size / t.collective.chunks;
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

struct Tried {
    Shape shape;
    const Decomposition* d = nullptr;
    std::uint32_t pieces = 1;
    std::optional<SendTable> table;
    double seconds = 0, bound = 0;
};

/// Four times the pieces while the predicted time falls by more than 0.1 % (up to 64, and while
/// the table stays within the budget), and while the shape stays within 1 % of the best time any
/// shape refined before it had with as many pieces (`at`: pieces -> that time; a heuristic that
/// saves building the large tables of shapes that are behind, never a bound).
void refine(const SynthInstance& in, Tried& t, double size, std::map<std::uint32_t, double>& at, Clock::time_point deadline) {
    for (std::uint32_t k = t.pieces * 4; k <= most_pieces && t.table->transfers.size() * 4 <= transfer_budget && Clock::now() < deadline; k *= 4) {
        std::optional<SendTable> next = build_shape(in, t.d->boxes, t.shape, k, nullptr);
        if (!next) return;
        const double s = predict_time(*next, TimeOptions{size, std::nullopt}).asynchronous;
        auto [it, fresh] = at.try_emplace(k, s);
        const bool behind = !fresh && s > it->second * 1.01;
        it->second = std::min(it->second, s);
        if (s >= t.seconds * (1 - 1e-3) || behind) {
            if (s < t.seconds) t.pieces = k, t.seconds = s, t.table = std::move(next);
            return;
        }
        t.pieces = k, t.seconds = s, t.table = std::move(next);
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

std::vector<Candidate> time_candidates(const SynthInstance& in, double size_bytes, Clock::time_point deadline) {
    const CollectiveKind kind = in.collective.kind;
    std::vector<Candidate> out;
    if (kind != CollectiveKind::allreduce && kind != CollectiveKind::reduce_scatter && kind != CollectiveKind::allgather) return out;
    if (in.model.timing != Timing::hop || in.model.inject_once || in.topology->processors() < 2) return out;
    const std::vector<Decomposition> ds = decompositions(*in.topology);
    std::vector<Tried> tried;
    for (const Decomposition& d : ds)
        for (const Shape& sh : shapes_for(d.boxes.size(), d.boxes[0].size(), d.flat)) {
            if (Clock::now() >= deadline && !tried.empty()) break;  // keep what is built: at least one shape
            Tried t{sh, &d, 1, build_shape(in, d.boxes, sh, 1, nullptr), 0, 0};
            if (!t.table) continue;  // the shape does not apply (a route through a processor, ...)
            t.seconds = predict_time(*t.table, TimeOptions{size_bytes, std::nullopt}).asynchronous;
            t.bound = load_bound(*t.table, size_bytes);
            tried.push_back(std::move(t));
        }
    // the shapes whose load could still beat the best so far, the least loaded first
    std::stable_sort(tried.begin(), tried.end(), [](const Tried& a, const Tried& b) { return a.bound < b.bound; });
    double best = std::numeric_limits<double>::infinity();
    for (const Tried& t : tried) best = std::min(best, t.seconds);
    std::map<std::uint32_t, double> at;
    for (Tried& t : tried) {
        if (t.bound * (1 + 1e-3) >= best) continue;
        // what no number of pieces goes below: the busiest link's bytes, and the chain of
        // latencies of one piece (the time of the table with almost nothing to move)
        t.bound = std::max(t.bound, predict_time(*t.table, TimeOptions{1e-9, std::nullopt}).asynchronous);
        if (t.bound * (1 + 1e-3) >= best) continue;
        refine(in, t, size_bytes, at, deadline);
        best = std::min(best, t.seconds);
    }
    for (Tried& t : tried) {
        if (!verify_direct(*t.table).holds()) continue;  // a construction that does not hold is left out
        const bool again = std::any_of(out.begin(), out.end(), [&](const Candidate& c) {
            return c.table.collective == t.table->collective && c.table.transfers == t.table->transfers;
        });
        if (again) continue;  // one box of P and P boxes of one give the same direct exchange
        std::string name = fmt::format("{}, {} piece{}", shape_name(t.shape, kind), t.pieces, t.pieces == 1 ? "" : "s");
        std::string how = fmt::format("{} on {}; {} pieces: the fastest of 1, 4, 16, 64 at {} bytes (asynchronous time)", shape_name(t.shape, kind),
                                      t.d->what, t.pieces, size_bytes);
        out.push_back({std::move(name), std::move(how), t.pieces, std::move(*t.table), t.seconds});
    }
    const Boxes boxes = find_boxes(*in.topology);
    if (in.topology->routers() == 0 && boxes.boxes.size() <= 1)
        if (std::optional<Candidate> r = rings_candidate(in, size_bytes, deadline)) out.push_back(std::move(*r));
    std::stable_sort(out.begin(), out.end(), [](const Candidate& a, const Candidate& b) { return a.predicted_s < b.predicted_s; });
    return out;
}

}  // namespace collsched::compose
