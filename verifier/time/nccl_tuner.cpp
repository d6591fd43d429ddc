// An NCCL tuner configuration (verifier/time/nccl_tuner.hpp, docs/exports.md "NCCL tuner
// configuration"): NCCL's algorithms timed by the executor model at every size, beside NCCL's own pick.
#include "verifier/time/nccl_tuner.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <map>

#include <fmt/format.h>

#include "runtime/compare.hpp"
#include "runtime/timing.hpp"
#include "support/error.hpp"
#include "verifier/check/direct.hpp"
#include "verifier/constructions/compose/nvls.hpp"
#include "verifier/time/compare_report.hpp"

namespace collsched {

std::string_view tuner_collective_name(CollectiveKind k) {
    switch (k) {
    case CollectiveKind::allreduce: return "allreduce";
    case CollectiveKind::allgather: return "allgather";
    case CollectiveKind::reduce_scatter: return "reducescatter";
    case CollectiveKind::broadcast: return "broadcast";
    case CollectiveKind::reduce: return "reduce";
    default: return "";
    }
}

std::string_view tuner_protocol_name(nccl::Protocol p) {
    return p == nccl::Protocol::ll ? "ll" : p == nccl::Protocol::ll128 ? "ll128" : "simple";
}

namespace tuner {
namespace {

constexpr nccl::Protocol all_protocols[] = {nccl::Protocol::ll, nccl::Protocol::ll128, nccl::Protocol::simple};

Protocol executor_protocol(nccl::Protocol p) {
    return p == nccl::Protocol::ll ? Protocol::ll : p == nccl::Protocol::ll128 ? Protocol::ll128 : Protocol::simple;
}

std::string_view plugin_algorithm(nccl::Algorithm a) {
    return a == nccl::Algorithm::tree ? "tree" : a == nccl::Algorithm::pat ? "pat" : "ring";
}

/// One of NCCL's algorithms on the machine: its tables' plans (several for broadcast and reduce:
/// NCCL's chunk counts, the fastest taken), or NVLS's, built per size (its pieces follow the size).
struct Algo {
    std::string_view name;
    std::optional<nccl::Algorithm> nccl;  ///< nullopt: NVLS or NVLS_TREE
    std::uint32_t channels = 0;
    std::vector<TimingPlan> plans;
    std::map<std::uint32_t, TimingPlan> nvls;  ///< by pieces
};

/// The timing of one collective's algorithms on the machine.
class Timer {
public:
    Timer(std::shared_ptr<const Topology> topo, const nccl::System& sys, CollectiveKind kind, const TunerOptions& o)
        : topo_(std::move(topo)), sys_(sys), kind_(kind), opt_(o), basis_(std::nullopt, o.executor) {}

    /// NCCL's algorithms for the collective, built; what could not be built goes to `notes`.
    void build(std::vector<std::string>& notes) {
        // broadcast and reduce from rank 0: NCCL's rings are the same for every root
        const CollectiveRow& row = collective_row(kind_);
        const Collective coll = Collective::parse(std::string(row.name) + (row.args == coll::Args::root ? ":0" : ""), *topo_);
        nccl::BaselineOptions bo;
        bo.deadline = opt_.limits.deadline;
        std::vector<std::string> unbuilt;
        for (nccl::Baseline& b : nccl::nccl_baselines(topo_, coll, topo_->default_model(), 0, bo, &unbuilt)) {
            opt_.limits.check("tune: NCCL's tables");
            // a table that does not hold on the machine (NCCL's tree over a NIC that only sends) is no algorithm to pick
            VerifyOptions vo;
            vo.deadline = opt_.limits.deadline;
            vo.memory_limit = true;
            if (const VerifyReport r = verify_direct(b.table, vo); r.verdict() == "violated") {
                notes.push_back(fmt::format("nccl:{} {}: its table does not hold on the machine, not timed", nccl::to_string(b.algorithm), row.name));
                continue;
            }
            opt_.limits.check("tune: checking NCCL's tables");
            auto it = std::find_if(algos_.begin(), algos_.end(), [&](const Algo& a) { return a.nccl == b.algorithm; });
            if (it == algos_.end()) {
                algos_.push_back({plugin_algorithm(b.algorithm), b.algorithm, b.channels, {}, {}});
                it = algos_.end() - 1;
            }
            it->plans.emplace_back(b.table, opt_.limits.deadline);
        }
        for (const std::string& u : unbuilt) notes.push_back(fmt::format("nccl:{} not timed", u));
        if (kind_ == CollectiveKind::allreduce && sys_.nvls_efficiency > 0 && sys_.gpus_per_node > 1)
            algos_.push_back({sys_.nodes == 1 ? "nvls" : "nvls_tree", std::nullopt, nccl::nccl_nvls_graph(sys_).channels, {}, {}});
    }

    /// Whether NCCL runs `a` with protocol p at `bytes` (its model times it; NVLS: Simple only).
    bool runs(const Algo& a, nccl::Protocol p, double bytes) const {
        if (!a.nccl) return p == nccl::Protocol::simple && nccl::nccl_nvls_model(sys_, kind_, bytes).has_value();
        return nccl::nccl_model_time(sys_, kind_, *a.nccl, p, bytes).has_value();
    }

    /// The executor model's time of `a` with protocol p at `size`.
    double time(Algo& a, nccl::Protocol p, double size) {
        opt_.limits.check("tune: the predictions");
        const TimeOptions o = basis_.at(size, executor_protocol(p));
        if (!a.nccl) {
            // NVLS at the fastest of its piece counts (as optimize's NVLS candidates: the executor's time picks)
            double best = std::numeric_limits<double>::infinity();
            for (std::uint32_t pieces : nccl_nvls_piece_counts(sys_, size)) best = std::min(best, nvls_plan(a, pieces).asynchronous(o));
            return best;
        }
        double best = std::numeric_limits<double>::infinity();
        for (const TimingPlan& plan : a.plans) best = std::min(best, plan.asynchronous(o));
        return best;
    }

    double time(const TunerChoice& c, double size) { return time(*find(c.algorithm), c.protocol, size); }

    /// The grid point at `size`: the fastest, NCCL's pick, and whether a line pays.
    TunerPoint point(double size) {
        TunerPoint pt;
        pt.size = size;
        pt.best_seconds = std::numeric_limits<double>::infinity();
        for (Algo& a : algos_)
            for (nccl::Protocol p : all_protocols)
                if (runs(a, p, size))
                    if (const double t = time(a, p, size); t < pt.best_seconds) pt.best_seconds = t, pt.best = {a.name, p, a.channels};
        if (!std::isfinite(pt.best_seconds)) throw InputError(fmt::format("tune: no NCCL algorithm runs {} here", collective_row(kind_).name));
        if (const std::optional<TunerChoice> n = nccl_pick(size)) {
            pt.nccl = n;
            if (Algo* a = find(n->algorithm)) pt.nccl_seconds = time(*a, n->protocol, size);
        }
        pt.line = pt.nccl_seconds > 0 && !basis_.tie(pt.best_seconds, pt.nccl_seconds);
        return pt;
    }

    /// NCCL's own pick at `size`: the least time of its tuning model over its algorithms and protocols.
    std::optional<TunerChoice> nccl_pick(double size) const {
        std::optional<TunerChoice> pick;
        double least = std::numeric_limits<double>::infinity();
        for (nccl::Algorithm a : {nccl::Algorithm::tree, nccl::Algorithm::ring, nccl::Algorithm::pat})
            if (auto m = nccl::nccl_best_protocol(sys_, kind_, a, size); m && m->seconds < least) {
                least = m->seconds;
                const Algo* timed = find(plugin_algorithm(a));
                pick = TunerChoice{plugin_algorithm(a), m->protocol, timed ? timed->channels : 0};
            }
        if (auto m = nccl::nccl_nvls_model(sys_, kind_, size); m && m->seconds < least) {
            const std::string_view name = m->algorithm == "NVLS" ? "nvls" : "nvls_tree";
            const Algo* timed = find(name);
            pick = TunerChoice{name, nccl::Protocol::simple, timed ? timed->channels : 0};
        }
        return pick;
    }

    double error() const { return basis_.ideal() ? 0.0 : basis_.executor->error.value; }

private:
    /// The algorithm of that name, or null (this or a const this: one body for both).
    template <class Self>
    static auto* find_in(Self& self, std::string_view name) {
        auto it = std::find_if(self.algos_.begin(), self.algos_.end(), [&](const Algo& a) { return a.name == name; });
        return it == self.algos_.end() ? nullptr : &*it;
    }
    Algo* find(std::string_view name) { return find_in(*this, name); }
    const Algo* find(std::string_view name) const { return find_in(*this, name); }

    const TimingPlan& nvls_plan(Algo& a, std::uint32_t pieces) {
        auto it = a.nvls.find(pieces);
        if (it != a.nvls.end()) return it->second;
        compose::NvlsPlan plan;
        plan.pieces = pieces;
        plan.owner_through_switch = true;  // NCCL's form
        const SendTable t = sys_.nodes == 1 ? compose::nvls_allreduce(topo_, plan) : compose::nvls_tree_allreduce(topo_, plan);
        return a.nvls.emplace(pieces, TimingPlan(t, opt_.limits.deadline)).first->second;
    }

    std::shared_ptr<const Topology> topo_;
    const nccl::System& sys_;
    CollectiveKind kind_;
    const TunerOptions& opt_;
    TimeBasis basis_;
    std::vector<Algo> algos_;
};

/// Where the file's choice changes between the grid points lo and hi (lo.size < hi.size): where
/// the two lines' times cross, or where the gain of the one line over NCCL's pick leaves the
/// error. The geometric middle when no sign change brackets it (NCCL's pick changes in between).
double boundary(Timer& timer, const TunerPoint& lo, const TunerPoint& hi) {
    std::function<double(double)> d;
    const double e = timer.error();
    if (lo.line && hi.line) {
        d = [&](double x) { return timer.time(lo.best, x) - timer.time(hi.best, x); };
    } else if (lo.nccl && hi.nccl && *lo.nccl == *hi.nccl && lo.nccl_seconds > 0 && hi.nccl_seconds > 0) {
        const TunerChoice line = lo.line ? lo.best : hi.best, n = *lo.nccl;
        d = [&, line, n](double x) { return timer.time(n, x) - (1 + e) * timer.time(line, x); };
    }
    const double middle = std::sqrt(lo.size * hi.size);
    if (!d) return middle;
    const double dlo = d(lo.size), dhi = d(hi.size);
    if (!((dlo < 0 && dhi > 0) || (dlo > 0 && dhi < 0))) return middle;
    return find_crossover(d, lo.size, hi.size, dlo, dhi);
}

std::optional<TunerChoice> written(const TunerPoint& p) { return p.line ? std::optional<TunerChoice>(p.best) : std::nullopt; }

/// The ranges of one collective's points: merged where the written choice is the same, each
/// boundary inside its bracket of grid sizes, inclusive and disjoint.
std::vector<TunerRange> ranges_of(Timer& timer, const std::vector<TunerPoint>& pts) {
    std::vector<TunerRange> out;
    for (std::size_t i = 0; i < pts.size(); ++i) {
        const auto size = static_cast<std::uint64_t>(std::llround(pts[i].size));
        if (!out.empty() && out.back().line == written(pts[i])) {
            out.back().last = i;
            continue;
        }
        std::uint64_t min = size;
        if (!out.empty()) {
            const auto lo = static_cast<std::uint64_t>(std::llround(pts[i - 1].size));
            const double b = boundary(timer, pts[i - 1], pts[i]);
            out.back().max_bytes = std::clamp(static_cast<std::uint64_t>(std::floor(b)), lo, size - 1);
            min = out.back().max_bytes + 1;
        }
        out.push_back({min, size, i, i, written(pts[i])});
    }
    if (!out.empty()) out.back().max_bytes = static_cast<std::uint64_t>(std::llround(pts.back().size));
    return out;
}

}  // namespace
}  // namespace tuner

std::vector<std::uint32_t> nccl_nvls_piece_counts(const nccl::System& sys, double size) {
    const std::uint32_t most = std::min<std::uint32_t>(compose::nvls_pieces_for_size(sys.gpus_per_node, size, 4096), sys.nodes == 1 ? 256 : 64);
    std::vector<std::uint32_t> out;
    for (std::uint32_t k = 1; k <= most; k *= sys.nodes == 1 ? 2 : 4) out.push_back(k);
    if (out.empty()) out.push_back(1);
    return out;
}

std::optional<compose::NcclNvlsLayout> nccl_nvls_layout(std::string_view version, std::uint32_t heads, double size) {
    const bool v218 = version.starts_with("2.18."), v220 = version.starts_with("2.20.");
    if ((!v218 && !v220) || heads == 0 || !(size > 0)) return std::nullopt;
    constexpr double channels = 16, align = 4096, most_loops = 16;
    const double ops = channels * heads;  // concurrentOps
    double chunk = 131072;
    if (size < 64 * ops * chunk) chunk = 65536;
    if (size < 8 * ops * chunk) chunk = 32768;
    if (size < 2 * ops * chunk) chunk = 16384;
    compose::NcclNvlsLayout l;
    if (v218) {  // one loop is channels x heads x chunk, channel b's part from b x heads x chunk
        l.heads = static_cast<std::uint32_t>(std::min<double>(heads, std::ceil(size / chunk)));
        l.loops = static_cast<std::uint32_t>(std::ceil(size / (ops * chunk)));
        l.channels = l.loops > 1 ? 16u : static_cast<std::uint32_t>(std::ceil(size / (l.heads * chunk)));
    } else {  // every channel size / 16 (16-byte aligned) rounded up to 4 KiB, in loops of heads x chunk
        const double per = std::ceil(std::ceil(size / channels / 16) * 16 / align) * align;
        l.channels = static_cast<std::uint32_t>(std::ceil(size / per));
        const double work = std::min(per, size);  // the busiest channel's bytes
        if (work < heads * chunk) {               // one loop, of the last loop's chunks
            const double last = std::ceil(std::ceil(work / heads) / align) * align;
            l.heads = static_cast<std::uint32_t>(std::ceil(work / last));
        } else {
            l.heads = heads;
            l.loops = static_cast<std::uint32_t>(std::ceil(work / (heads * chunk)));
        }
    }
    l.loops = static_cast<std::uint32_t>(std::min<double>(l.loops, most_loops));
    return l;
}

TunerConfig nccl_tuner_config(std::shared_ptr<const Topology> topo, const TunerOptions& o) {
    if (o.executor.kind != ExecutorKind::nccl)
        throw InputError(fmt::format("tune: the tuner file is read by NCCL; --executor nccl (or a calibration of it), not {}", o.executor.name));
    if (o.sizes.empty()) throw InputError("tune: no sizes");
    for (std::size_t i = 0; i < o.sizes.size(); ++i)
        if (!(o.sizes[i] >= 1) || o.sizes[i] > 1e18 || std::floor(o.sizes[i]) != o.sizes[i] || (i > 0 && o.sizes[i] <= o.sizes[i - 1]))
            throw InputError("tune: --sizes must be whole numbers of bytes, increasing, from 1 to 10^18");
    const nccl::System sys = nccl::nccl_system(*topo);
    if (sys.sharp)
        throw InputError("tune: this machine's network switches reduce (SHARP): NCCL's CollNet would compete, and collsched does not time "
                         "it as NCCL runs it; tune the machine without --sharp");
    TunerConfig cfg;
    cfg.machine = machine_name(*topo);
    cfg.nodes = sys.nodes;
    cfg.ranks = topo->processors();
    cfg.executor = o.executor.name + (o.executor.calibration.empty() ? "" : " (" + o.executor.calibration + ")");
    cfg.error = o.executor.error.value;
    for (CollectiveKind k : o.collectives) {
        if (tuner_collective_name(k).empty())
            throw InputError(fmt::format("tune: NCCL's tuner does not cover {}", collective_row(k).name));
        TunerCollective c;
        c.kind = k;
        tuner::Timer timer(topo, sys, k, o);
        timer.build(c.notes);
        for (double s : o.sizes) c.points.push_back(timer.point(s));
        c.ranges = tuner::ranges_of(timer, c.points);
        cfg.collectives.push_back(std::move(c));
    }
    return cfg;
}

}  // namespace collsched
