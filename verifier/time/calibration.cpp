// Calibration of an executor model on measured times (verifier/time/calibration.hpp,
// docs/time.md "Calibration"). GLPK solves each round's linear program: a real solver for the
// piece of the fit that is an LP (issue 55 asks for one), with its simplex's own tolerances.
#include "verifier/time/calibration.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <map>

#include <fmt/format.h>
#include <glpk.h>

#include "runtime/timing.hpp"
#include "support/error.hpp"
#include "support/units.hpp"
#include "verifier/constructions/nccl/nccl.hpp"
#include "verifier/constructions/compose/nvls.hpp"
#include "verifier/time/nccl_tuner.hpp"

namespace collsched {

namespace {

// The fitted constants: launch of LL, LL128, Simple (seconds); 1 / efficiency of box, network and
// switch channels; an extra latency on every hop out of a GPU over the network (seconds); a factor on
// the message costs; 1 / Simple's rate a connection (ns a byte; 0: not bounded).
constexpr std::size_t NP = 9;
using X = std::array<double, NP>;
constexpr std::size_t LAUNCH = 0, INV_EFF = 3, NET_HOP = 6, MESSAGE = 7, INV_RATE = 8;
// Their ranges: a launch up to 200 us (a slow network stack's floor, e.g. TCP over 2 boxes, lands
// there when the network's hop cannot take it), efficiencies from 0.2 to 1, 0 to 100 us of hop, a
// rate from 4 GB/s up.
constexpr X lower = {0, 0, 0, 1, 1, 1, 0, 0, 0};
constexpr X upper = {200e-6, 200e-6, 200e-6, 5, 5, 5, 100e-6, 4, 0.25};

/// A rate in bytes/s from 1 / rate in ns a byte (0: not bounded), and back.
double rate_of(double inv) { return inv > 0 ? 1e9 / inv : 0.0; }
double inv_rate_of(double rate) { return rate > 0 ? 1e9 / rate : 0.0; }

std::size_t protocol_index(Protocol p) { return p == Protocol::ll ? 0 : p == Protocol::ll128 ? 1 : 2; }

/// The costs of `base`'s row of protocol p with the constants x in place.
ExecutorCosts costs_at(const ExecutorModel& base, Protocol p, const X& x) {
    ExecutorCosts c = executor_costs(base, p);
    c.launch = x[LAUNCH + protocol_index(p)];
    for (std::size_t k = 0; k < link_classes; ++k) c.efficiency[k] = 1 / x[INV_EFF + k];
    c.hop[idx_of(LinkClass::network)] = base.row(p).hop[idx_of(LinkClass::network)].value + x[NET_HOP];
    for (std::size_t k = 0; k < link_classes; ++k) c.message[k] = base.row(p).message[k].value * x[MESSAGE];
    // LL's and LL128's rates are bounded by NCCL's caps (nccl_protocol_caps); Simple's is fitted
    if (p == Protocol::simple) c.rate = rate_of(x[INV_RATE]);
    return c;
}

X start_of(const ExecutorModel& base) {
    X x{};
    for (Protocol p : {Protocol::ll, Protocol::ll128, Protocol::simple}) x[LAUNCH + protocol_index(p)] = base.row(p).launch.value;
    const ProtocolRow& r = base.row(Protocol::simple);
    for (std::size_t k = 0; k < link_classes; ++k) x[INV_EFF + k] = 1 / r.efficiency[k].value;
    x[NET_HOP] = 0;
    x[MESSAGE] = 1;
    x[INV_RATE] = inv_rate_of(r.rate.value);
    return x;
}

/// One algorithm NCCL may have run for a case, with its protocol and its table's plan.
struct Variant {
    std::string algorithm;
    Protocol protocol = Protocol::simple;
    double nccl_model = std::numeric_limits<double>::infinity();  ///< NCCL's model's time of it (infinite: it does not time it)
    std::vector<TimingPlan> plans;  ///< its table (NVLS: in NCCL's layout, else one per piece count, the fastest taken)
    std::string layout;             ///< NCCL's NVLS layout the table is in, said in the report
};

struct Prepared {
    const CalibrationCase* c = nullptr;
    std::vector<Variant> variants;  ///< what NCCL ran: one, or with a tuner plugin the variants it picked from
    CalibrationResult result;
    /// With a tuner plugin: the variant the plugin is taken to have run (pick_tuned), and why
    std::size_t pick = 0;
    std::optional<std::size_t> also;  ///< a held-out row between training rows of different picks: the upper one's
    std::string picked;
    /// Every variant's time (variant_times) at the constants the rows were last timed at, and at the built-in ones: the
    /// report reads them rather than time the rows again after the fit
    std::vector<double> times, builtin;
};

std::string_view kind_name(CollectiveKind k) { return collective_row(k).name; }

Protocol from_nccl(nccl::Protocol q) { return q == nccl::Protocol::ll ? Protocol::ll : q == nccl::Protocol::ll128 ? Protocol::ll128 : Protocol::simple; }
nccl::Protocol to_nccl(Protocol q) { return q == Protocol::ll ? nccl::Protocol::ll : q == Protocol::ll128 ? nccl::Protocol::ll128 : nccl::Protocol::simple; }

std::optional<nccl::Algorithm> parse_algorithm(std::string_view a) {
    if (a == "ring") return nccl::Algorithm::ring;
    if (a == "tree") return nccl::Algorithm::tree;
    if (a == "pat") return nccl::Algorithm::pat;
    return std::nullopt;
}

/// NCCL's model's fastest protocol for algorithm a among those the case allows (all when it names none).
std::optional<nccl::ModelChoice> best_allowed(const nccl::System& sys, const CalibrationCase& c, nccl::Algorithm a, double bytes) {
    if (c.protocols.empty()) return nccl::nccl_best_protocol(sys, c.collective, a, bytes);
    std::optional<nccl::ModelChoice> best;
    for (Protocol p : c.protocols)
        if (auto t = nccl::nccl_model_time(sys, c.collective, a, to_nccl(p), bytes); t && (!best || *t < best->seconds))
            best = nccl::ModelChoice{to_nccl(p), *t};
    return best;
}

/// NCCL's tree in Simple moves a channel's bytes in chunks of one step, NCCL_BUFFSIZE / NCCL_STEPS
/// (NVIDIA/nccl v2.21.5-1 src/enqueue.cc:1723-1726 computeCollChunkInfo: chunkSteps 1 but for the
/// ring; src/device/all_reduce.h:235-241 ProtoSimple<1, 1>, one slice a chunk), each forwarded hop
/// by hop once whole; the bytes spread evenly over its channels (:834 maxBytesPerChannel), two
/// tree channels a ring's (src/graph/connect.cc:443 doubles them; nccl_trees.cpp tree_table). The
/// pieces a tree channel of the table has: its bytes over the chunk, at least 1, at most 128 (a
/// table of 65,536 transfers on 2 x 8 GPUs; beyond, a piece is more than a chunk).
std::uint32_t tree_pieces(const CalibrationCase& c, const nccl::System& sys, double bytes) {
    const double channels = 2.0 * std::max(1u, nccl::nccl_ring_graph(sys).channels);
    const double chunks = std::ceil(bytes / channels / std::max(1.0, c.buffsize / 8));
    return static_cast<std::uint32_t>(std::clamp(chunks, 1.0, 128.0));
}

/// The table of `algorithm` for the case, planned; the reason when there is none.
std::string plan_variant(const CalibrationCase& c, const nccl::System& sys, double bytes, Variant& v, const Deadline& deadline) {
    const std::shared_ptr<const Topology>& topo = c.topology;
    try {
        if (v.algorithm == "nvls" || v.algorithm == "nvls_tree") {
            if (c.collective != CollectiveKind::allreduce || sys.nvls_efficiency <= 0) return "NVLS runs allreduce on a machine whose switches reduce";
            // one box, a version whose layout is modelled: NCCL's channels, each a thread block moving its chunks in turn
            if (const auto l = sys.nodes == 1 ? nccl_nvls_layout(c.nccl_version, sys.gpus_per_node, bytes) : std::nullopt) {
                v.plans.emplace_back(compose::nccl_nvls_allreduce(topo, *l), deadline);
                v.layout = fmt::format("NCCL {} layout: {} channel{} x {} chunk{}", c.nccl_version.substr(0, c.nccl_version.rfind('.')),
                                       l->channels, l->channels == 1 ? "" : "s", l->loops * l->heads, l->loops * l->heads == 1 ? "" : "s");
                return "";
            }
            // else timed as `collsched tune` and the comparisons time it: at the fastest of its piece counts
            for (std::uint32_t k : nccl_nvls_piece_counts(sys, bytes)) {
                compose::NvlsPlan plan;
                plan.pieces = k;
                plan.owner_through_switch = true;  // NCCL's form
                v.plans.emplace_back(sys.nodes == 1 ? compose::nvls_allreduce(topo, plan) : compose::nvls_tree_allreduce(topo, plan), deadline);
            }
            return "";
        }
        SendTable table;
        {
            nccl::BaselineOptions o;
            o.deadline = deadline;
            if (v.algorithm == "tree" && v.protocol == Protocol::simple) {
                o.pieces = tree_pieces(c, sys, bytes);
                v.layout = fmt::format("NCCL's chunk {}: {} a tree channel", support::format_bytes(c.buffsize / 8), o.pieces);
            }
            const Collective coll = Collective::parse(kind_name(c.collective), *topo);
            table = nccl::nccl_baseline(topo, coll, topo->default_model(), v.algorithm, c.size, o).table;
        }
        v.plans.emplace_back(table, deadline);
    } catch (const InputError& e) {
        return fmt::format("no table for {}: {}", v.algorithm, e.what());
    }
    return "";
}

/// What NCCL ran: the algorithm and protocol the case names; where it names none, the variant
/// NCCL's tuner picks among those the run allowed (NCCL_ALGO, NCCL_PROTO): the least time of its
/// cost table, which its own model fills (src/enqueue.cc topoGetAlgoInfo, src/graph/tuning.cc).
/// With a tuner plugin, which rewrites that table and the channels (src/enqueue.cc ncclGetAlgoInfo)
/// from a table not published, every allowed variant (pick_tuned fits which one ran). And NCCL's
/// own model's time of its tuner's pick.
void prepare(Prepared& p, const Deadline& deadline) {
    const CalibrationCase& c = *p.c;
    CalibrationResult& r = p.result;
    r.label = c.label;
    r.series = c.series;
    r.size = c.size;
    r.measured = c.measured;
    r.algorithm = c.algorithm;
    nccl::System sys;
    try {
        sys = nccl::nccl_system(*c.topology);
    } catch (const InputError& e) {
        r.skipped = fmt::format("NCCL's model does not describe the machine: {}", e.what());
        return;
    }
    const double bytes = nccl::nccl_bytes(c.collective, c.topology->processors(), c.size);
    const std::optional<nccl::NvlsModel> nvls = nccl::nccl_nvls_model(sys, c.collective, bytes);
    std::vector<std::string> names;
    if (c.algorithm != "default") names = {c.algorithm};
    else if (c.algorithms.empty()) names = {"tree", "ring", "pat", "nvls"};
    else
        for (const std::string& a : c.algorithms)  // NVLS and NVLS_TREE are one variant: the one NCCL runs on this machine
            if (std::string n = a == "nvls_tree" ? "nvls" : a; std::find(names.begin(), names.end(), n) == names.end()) names.push_back(n);
    std::string why;
    for (std::string name : names) {
        Variant v;
        std::optional<double> model;
        if (auto a = parse_algorithm(name)) {
            if (c.protocol != Protocol::none) {
                v.protocol = c.protocol;
                model = nccl::nccl_model_time(sys, c.collective, *a, to_nccl(c.protocol), bytes);
            } else if (auto m = best_allowed(sys, c, *a, bytes)) {
                v.protocol = from_nccl(m->protocol);
                model = m->seconds;
            } else {
                why = fmt::format("NCCL's model does not run {} {} here", name, kind_name(c.collective));
                continue;
            }
        } else if (name == "nvls" || name == "nvls_tree") {
            if (!nvls) {
                why = "no NVLS here";
                continue;
            }
            if (c.algorithm == "default") name = nvls->algorithm == "NVLS" ? "nvls" : "nvls_tree";
            v.protocol = Protocol::simple;  // NVLS has Simple only (tuning.cc)
            model = nvls->seconds;
        } else {
            r.skipped = fmt::format("algorithm \"{}\" is not one of NCCL's here (ring, tree, pat, nvls, nvls_tree)", name);
            return;
        }
        v.algorithm = name;
        if (std::string no = plan_variant(c, sys, bytes, v, deadline); !no.empty()) {
            why = no;
            continue;
        }
        if (model) v.nccl_model = *model;
        // a list of protocols (NCCL_PROTO): each one NCCL's model runs is a variant too
        if (c.protocol == Protocol::none && parse_algorithm(v.algorithm))
            for (Protocol q : c.protocols)
                if (auto t = nccl::nccl_model_time(sys, c.collective, *parse_algorithm(v.algorithm), to_nccl(q), bytes); t && q != v.protocol) {
                    Variant w = v;
                    w.protocol = q;
                    if (w.algorithm == "tree" && (q == Protocol::simple) != (v.protocol == Protocol::simple)) {  // its own pieces
                        w.plans.clear();
                        w.layout.clear();
                        if (!plan_variant(c, sys, bytes, w, deadline).empty()) continue;
                    }
                    w.nccl_model = *t;
                    p.variants.push_back(std::move(w));
                }
        p.variants.push_back(std::move(v));
    }
    if (p.variants.empty()) {
        r.skipped = why.empty() ? fmt::format("NCCL's model has no algorithm for {} here", kind_name(c.collective)) : why;
        return;
    }
    const auto pick = std::min_element(p.variants.begin(), p.variants.end(), [](const Variant& a, const Variant& b) { return a.nccl_model < b.nccl_model; });
    if (!std::isfinite(pick->nccl_model)) return;  // NCCL's model times none of them: the executor's fastest stands in
    r.nccl_model = pick->nccl_model;
    if (!c.tuner_plugin) {
        Variant ran = std::move(*pick);
        p.variants.assign(1, std::move(ran));
    }
}

/// Variant v's time at x (NVLS of a version whose layout is not modelled: the fastest of its piece counts).
double variant_time(const Prepared& p, const Variant& v, const ExecutorModel& base, const X& x) {
    TimeOptions o{p.c->size, std::nullopt};
    o.executor = costs_at(base, v.protocol, x);
    double best = std::numeric_limits<double>::infinity();
    for (const TimingPlan& plan : v.plans) best = std::min(best, plan.asynchronous(o));
    return best;
}

double rel(double predicted, double measured) { return std::abs(predicted - measured) / measured; }

bool tuned(const Prepared& p) { return p.c->tuner_plugin && p.variants.size() > 1; }

/// Every variant's time of p at x, in the order of p.variants.
std::vector<double> variant_times(const Prepared& p, const ExecutorModel& base, const X& x) {
    std::vector<double> t;
    t.reserve(p.variants.size());
    for (const Variant& v : p.variants) t.push_back(variant_time(p, v, base, x));
    return t;
}

/// A tuner plugin's training row: the variant whose time (`times`, variant_times) is nearest the measured one (the
/// plugin's pick for its size range, which its table does not publish, fitted as the rest of the constants are).
std::size_t nearest(const Prepared& p, const std::vector<double>& times) {
    std::size_t best = 0;
    double err = std::numeric_limits<double>::infinity();
    for (std::size_t v = 0; v < times.size(); ++v)
        if (const double e = rel(times[v], p.c->measured); e < err) best = v, err = e;
    return best;
}

/// The case's time and the variant from its variants' `times`: with a tuner plugin `pick` (pick_tuned; between two
/// picks the geometric mean of their times); else the variant NCCL ran (where NCCL's model times none of those
/// allowed, the fastest).
std::pair<double, const Variant*> timed(const Prepared& p, const std::vector<double>& times) {
    if (tuned(p)) return {p.also ? std::sqrt(times[p.pick] * times[*p.also]) : times[p.pick], &p.variants[p.pick]};
    std::pair<double, const Variant*> best{std::numeric_limits<double>::infinity(), nullptr};
    for (std::size_t v = 0; v < times.size(); ++v)
        if (times[v] < best.first) best = {times[v], &p.variants[v]};
    return best;
}

/// A training row's time from its variants' `times`: a tuner plugin's, its nearest variant's.
double train_time(const Prepared& p, const std::vector<double>& times) {
    return tuned(p) ? times[nearest(p, times)] : timed(p, times).first;
}

/// The training rows' summed relative error at x; nullopt once `deadline` passes (checked row by row: the rows of
/// a sweep take from milliseconds to half a second each). Each row's variant times at x land in `times`.
std::optional<double> loss(const std::vector<Prepared*>& train, const ExecutorModel& base, const X& x, const Deadline& deadline,
                           std::vector<std::vector<double>>& times) {
    double s = 0;
    times.resize(train.size());
    for (std::size_t i = 0; i < train.size(); ++i) {
        if (deadline.passed()) return std::nullopt;
        times[i] = variant_times(*train[i], base, x);
        s += rel(train_time(*train[i], times[i]), train[i]->c->measured);
    }
    return s;
}

/// What a tuner plugin ran at each size of a sweep (rows sorted by size), at x: a training row its nearest variant; a
/// held-out row the pick of the training rows of the next smaller and next larger size where they agree (or where it has
/// one of them), and where they differ, the plugin's range boundary lying between them, both: its time the geometric
/// mean of theirs (a plugin's table holds one pick for each range of sizes: NVIDIA/nccl v2.21.5-1
/// src/include/nccl_tuner.h:27-49, getCollInfo sets algorithm, protocol and nChannels for each nBytes).
void pick_tuned(const std::vector<Prepared*>& rows) {
    for (Prepared* p : rows)
        if (tuned(*p) && p->result.train) p->pick = nearest(*p, p->times), p->picked = "nearest the measured time";
    // the variant of p with the algorithm and protocol of `from`'s pick
    constexpr std::size_t none = std::numeric_limits<std::size_t>::max();
    auto same = [](const Prepared& p, const Prepared* from) {
        if (!from) return none;
        const Variant& want = from->variants[from->pick];
        for (std::size_t v = 0; v < p.variants.size(); ++v)
            if (p.variants[v].algorithm == want.algorithm && p.variants[v].protocol == want.protocol) return v;
        return none;
    };
    for (std::size_t i = 0; i < rows.size(); ++i) {
        Prepared& p = *rows[i];
        if (!tuned(p) || p.result.train) continue;
        const Prepared *below = nullptr, *above = nullptr;
        for (std::size_t j = i; j-- > 0 && !below;)
            if (rows[j]->result.train && tuned(*rows[j])) below = rows[j];
        for (std::size_t j = i + 1; j < rows.size() && !above; ++j)
            if (rows[j]->result.train && tuned(*rows[j])) above = rows[j];
        const std::size_t lo = same(p, below), hi = same(p, above);
        p.also.reset();
        if (lo == none && hi == none) continue;
        p.pick = lo != none ? lo : hi;
        if (lo != none && hi != none && lo != hi) p.also = hi;
        const auto name = [&](const Prepared& q) { return support::format_bytes(q.c->size); };
        p.picked = p.also ? fmt::format("{} as at {}, {} as at {}: the geometric mean", p.variants[p.pick].algorithm, name(*below),
                                        p.variants[*p.also].algorithm, name(*above))
                   : lo != none && hi != none ? fmt::format("as the training rows of {} and {}", name(*below), name(*above))
                                              : fmt::format("as the training row of {}", name(lo != none ? *below : *above));
    }
}

/// One round's linear program: minimize sum_r (u_r + v_r) / m_r subject to
/// T_r + g_r . (y - x) - m_r = u_r - v_r, y within [x - radius, x + radius] and the ranges.
/// Returns y, or nullopt when GLPK finds no optimum; `cut` when the deadline stopped it (the round is not used).
std::optional<X> lp_round(const std::vector<Prepared*>& train, const std::vector<double>& t, const std::vector<X>& g, const X& x,
                          const X& radius, const Deadline& deadline, bool& cut) {
    // in microseconds, rows and time-valued columns alike, so that every coefficient is near 1:
    // GLPK's simplex cycled on the same program in seconds (coefficients from 1e-6 to 1e5)
    constexpr double U = 1e6;
    X scale;
    for (std::size_t k = 0; k < NP; ++k) scale[k] = k < INV_EFF || k == NET_HOP ? U : 1;
    glp_term_out(GLP_OFF);  // GLPK prints to standard output otherwise (glp_scale_prob's "Scaling...")
    glp_prob* lp = glp_create_prob();
    glp_set_obj_dir(lp, GLP_MIN);
    const int R = static_cast<int>(train.size());
    glp_add_cols(lp, static_cast<int>(NP) + 2 * R);
    for (std::size_t k = 0; k < NP; ++k) {
        const double lo = std::max(lower[k], x[k] - radius[k]) * scale[k], hi = std::min(upper[k], x[k] + radius[k]) * scale[k];
        glp_set_col_bnds(lp, static_cast<int>(k) + 1, lo < hi ? GLP_DB : GLP_FX, lo, std::max(lo, hi));
    }
    for (int r = 0; r < R; ++r) {
        const double w = 1 / (train[static_cast<std::size_t>(r)]->c->measured * U);
        for (int s = 0; s < 2; ++s) {
            const int col = static_cast<int>(NP) + 2 * r + s + 1;
            glp_set_col_bnds(lp, col, GLP_LO, 0, 0);
            glp_set_obj_coef(lp, col, w);
        }
    }
    glp_add_rows(lp, R);
    std::vector<int> ia{0}, ja{0};
    std::vector<double> ar{0};
    for (int r = 0; r < R; ++r) {
        const std::size_t i = static_cast<std::size_t>(r);
        // g . y - u + v = m - T + g . x, in microseconds
        double rhs = (train[i]->c->measured - t[i]) * U;
        for (std::size_t k = 0; k < NP; ++k) {
            const double a = g[i][k] * U / scale[k];
            rhs += a * x[k] * scale[k];
            if (a != 0) ia.push_back(r + 1), ja.push_back(static_cast<int>(k) + 1), ar.push_back(a);
        }
        ia.push_back(r + 1), ja.push_back(static_cast<int>(NP) + 2 * r + 1), ar.push_back(-1);
        ia.push_back(r + 1), ja.push_back(static_cast<int>(NP) + 2 * r + 2), ar.push_back(1);
        glp_set_row_bnds(lp, r + 1, GLP_FX, rhs, rhs);
    }
    glp_load_matrix(lp, static_cast<int>(ia.size()) - 1, ia.data(), ja.data(), ar.data());
    glp_scale_prob(lp, GLP_SF_AUTO);
    glp_smcp parm;
    glp_init_smcp(&parm);
    parm.msg_lev = GLP_MSG_OFF;
    parm.presolve = GLP_ON;
    // a bound on every round in iterations (a round that ends without an optimum shrinks the region), and the time left
    // of the run's deadline: a round the clock stops ends the fit, its constants the best so far (a round that shrank
    // the region when cut by a fixed 2 s under load fitted other constants than the same command at rest)
    parm.it_lim = 20000;
    if (!deadline.none()) parm.tm_lim = static_cast<int>(std::clamp(deadline.left() * 1e3, 1.0, 2e9));
    std::optional<X> y;
    const int status = glp_simplex(lp, &parm);
    if (status == GLP_ETMLIM) cut = true;
    else if (status == 0 && glp_get_status(lp) == GLP_OPT) {
        y.emplace();
        for (std::size_t k = 0; k < NP; ++k)
            (*y)[k] = std::clamp(glp_get_col_prim(lp, static_cast<int>(k) + 1) / scale[k], lower[k], upper[k]);
    }
    glp_delete_prob(lp);
    return y;
}

double median(std::vector<double> v) {
    if (v.empty()) return 0;
    std::sort(v.begin(), v.end());
    const std::size_t n = v.size();
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/// The constants that fit the training rows: rounds of lp_round in a trust region from the built-in
/// constants (a tuner plugin's rows each round at their nearest variant), as many as end within the deadline.
/// The rows' `times` are at the built-in constants on entry and at the returned ones on return.
X fit(const std::vector<Prepared*>& train, const ExecutorModel& base, const Deadline& deadline, std::uint32_t& rounds, bool& cut) {
    X x = start_of(base);
    X radius;
    for (std::size_t k = 0; k < NP; ++k) radius[k] = (upper[k] - lower[k]) / 4;
    double current = 0;
    for (const Prepared* p : train) current += rel(train_time(*p, p->times), p->c->measured);
    std::vector<double> t(train.size());
    std::vector<X> g(train.size());
    std::vector<std::vector<double>> next_times;
    for (std::uint32_t round = 0; round < 40; ++round) {
        if (deadline.passed()) {  // the best constants so far, said
            cut = true;
            break;
        }
        // each row's time and slope at x (the active piece: one-sided differences small enough to stay on it; the rate's
        // a secant, from 100 GB/s where it is not bounded, so that a rate that binds below shows)
        // a round the deadline stops half done is not used: a round's rows took 1.5 s of a --timeout 3, the largest
        // row's slopes half a second, each of its times 60 ms
        for (std::size_t i = 0; i < train.size(); ++i) {
            const Prepared& p = *train[i];
            const Variant* v = tuned(p) ? &p.variants[nearest(p, p.times)] : nullptr;
            auto at = [&](const X& y) { return v ? variant_time(p, *v, base, y) : timed(p, variant_times(p, base, y)).first; };
            const auto [now, which] = v ? std::pair<double, const Variant*>{p.times[static_cast<std::size_t>(v - p.variants.data())], v}
                                        : timed(p, p.times);
            t[i] = now;
            // exact without a run: the launch of the row's protocol enters once (1), the others' and, but in Simple, the
            // rate not at all (0)
            const Protocol q = which->protocol;
            for (std::size_t k = 0; k < NP; ++k) {
                if (k < INV_EFF || (k == INV_RATE && q != Protocol::simple)) {
                    g[i][k] = k == LAUNCH + protocol_index(q) ? 1.0 : 0.0;
                    continue;
                }
                if (deadline.passed()) {
                    cut = true;
                    return x;
                }
                X h = x;
                const double d = k < INV_EFF ? 1e-7 : k < NET_HOP ? 1e-4 : k == NET_HOP ? 1e-7 : k == MESSAGE ? 1e-4 : 1e-2;
                h[k] = x[k] + d <= upper[k] ? x[k] + d : x[k] - d;
                g[i][k] = (at(h) - t[i]) / (h[k] - x[k]);
            }
        }
        const std::optional<X> y = lp_round(train, t, g, x, radius, deadline, cut);
        if (cut) return x;
        rounds = round + 1;
        bool moved = false;
        if (y) {
            const std::optional<double> next = loss(train, base, *y, deadline, next_times);
            if (!next) {
                cut = true;
                return x;
            }
            if (*next < current - 1e-9 * current) {
                x = *y;
                current = *next;
                for (std::size_t i = 0; i < train.size(); ++i) train[i]->times = std::move(next_times[i]);
                moved = true;
            }
        }
        if (!moved) {
            bool small = true;
            for (std::size_t k = 0; k < NP; ++k) {
                radius[k] /= 2;
                small = small && radius[k] < (upper[k] - lower[k]) * 1e-4;
            }
            if (small) break;
        }
    }
    return x;
}

/// Every case's times under the fitted constants (the rows' `times`; their built-in ones were set before the fit),
/// and the held-out errors (the training rows' when nothing is held out) beside NCCL's model's.
void errors(CalibrationReport& report, std::vector<Prepared>& prepared, const std::map<std::string, std::vector<Prepared*>>& series) {
    for (const auto& [name, rows] : series) pick_tuned(rows);
    std::vector<double> held, nccl_held, builtin_held;
    for (Prepared& p : prepared) {
        CalibrationResult& r = p.result;
        if (r.skipped.empty()) {
            const auto [fitted, which] = timed(p, p.times);
            r.fitted = fitted;
            r.algorithm = which->algorithm + (tuned(p) && p.also ? "/" + p.variants[*p.also].algorithm : std::string());
            r.protocol = which->protocol;
            r.layout = which->layout;
            if (tuned(p)) r.layout += (r.layout.empty() ? "" : "; ") + std::string("the tuner plugin's pick: ") + p.picked;
            if (!r.train) {
                held.push_back(rel(r.fitted, r.measured));
                builtin_held.push_back(rel(r.builtin, r.measured));
                if (r.nccl_model) nccl_held.push_back(rel(*r.nccl_model, r.measured));
            }
        }
        report.rows.push_back(r);
    }
    if (held.empty())  // no held-out rows (hold_out off, or series of one): report on the training rows
        for (const CalibrationResult& r : report.rows)
            if (r.skipped.empty()) {
                held.push_back(rel(r.fitted, r.measured));
                builtin_held.push_back(rel(r.builtin, r.measured));
                if (r.nccl_model) nccl_held.push_back(rel(*r.nccl_model, r.measured));
            }
    report.heldout_median = median(held);
    report.heldout_worst = held.empty() ? 0 : *std::max_element(held.begin(), held.end());
    report.nccl_median = median(nccl_held);
    report.nccl_worst = nccl_held.empty() ? 0 : *std::max_element(nccl_held.begin(), nccl_held.end());
    report.builtin_median = median(builtin_held);
}

}  // namespace

CalibrationReport calibrate(const std::vector<CalibrationCase>& cases, const CalibrationOptions& options) {
    const ExecutorModel& base = builtin_executor(options.executor);
    std::vector<Prepared> prepared(cases.size());
    for (std::size_t i = 0; i < cases.size(); ++i) {
        if (options.deadline.passed()) throw LimitReached("time limit (calibrate: building the tables)");
        prepared[i].c = &cases[i];
        prepare(prepared[i], options.deadline);
    }
    // the held-out split: within each series (sorted by size), every other timed row
    std::map<std::string, std::vector<Prepared*>> series;
    for (Prepared& p : prepared)
        if (p.result.skipped.empty()) series[p.c->series].push_back(&p);
    std::vector<Prepared*> train, all;
    for (auto& [name, rows] : series) {
        std::stable_sort(rows.begin(), rows.end(), [](const Prepared* a, const Prepared* b) { return a->c->size < b->c->size; });
        for (std::size_t i = 0; i < rows.size(); ++i) {
            rows[i]->result.train = !options.hold_out || i % 2 == 0 || rows.size() == 1;
            if (rows[i]->result.train) train.push_back(rows[i]);
            all.push_back(rows[i]);
        }
    }
    if (train.empty()) {
        std::string why;
        for (const Prepared& p : prepared)
            if (!p.result.skipped.empty()) {
                why = fmt::format(" ({}: {})", p.result.label, p.result.skipped);
                break;
            }
        throw InputError(fmt::format("calibrate: none of the {} measurements can be timed here{}", cases.size(), why));
    }

    // every row's variants timed at the built-in constants: the report's built-in column, the fit's start and its
    // screening; this pass's time is what timing the held-out rows again at the fitted constants takes, after the fit
    const X builtin = start_of(base);
    const auto pass = Clock::now();
    Clock::duration held_took{};
    for (Prepared* p : all) {
        if (options.deadline.passed()) throw LimitReached("time limit (calibrate: timing the rows at the built-in constants)");
        const auto t0 = Clock::now();
        p->builtin = p->times = variant_times(*p, base, builtin);
        if (!p->result.train) held_took += Clock::now() - t0;
    }
    for (const auto& [name, rows] : series) pick_tuned(rows);
    for (Prepared* p : all) p->result.builtin = timed(*p, p->times).first;

    // a time a million times off the built-in model's is not a time of this collective on this machine (a unit slip,
    // a corrupted row): refused, where the fit's program would take coefficients GLPK's presolver aborts on (a row of
    // 1e20 us: its weight 1e-20, "Assertion failed ... npp1.c", exit 134; the fifth hostile campaign)
    for (const Prepared* p : all) {
        const double predicted = p->result.builtin, ratio = p->c->measured / predicted;
        if (!(ratio <= 1e6 && ratio >= 1e-6))
            throw InputError(fmt::format("calibrate: {}: measured {} is {:.3g} times the executor model's {} (more than a factor of "
                                         "10^6 either way: not a time of this collective on this machine; check the units)",
                                         p->result.label, support::format_seconds(p->c->measured), ratio, support::format_seconds(predicted)));
    }

    // the fit ends early enough to time the held-out rows at its constants (the training rows' times it keeps): twice
    // what they took at the built-in ones, and the rest of the pass once, for the report (a --timeout 6 on a loaded
    // machine ended at 9.4 s when the report timed every row twice again after the fit; 4.2 s of a --timeout 3 at rest)
    const auto reserve = 2 * held_took + (Clock::now() - pass - held_took);
    const Deadline fit_until = options.deadline.none() ? options.deadline : Deadline::at(options.deadline.when() - reserve);
    CalibrationReport report;
    X x = fit(train, base, fit_until, report.rounds, report.cut);
    if (x != builtin) {
        std::vector<Prepared*> held;
        for (Prepared* p : all)
            if (!p->result.train) held.push_back(p);
        bool whole = true;
        for (Prepared* p : held) {
            if (options.deadline.passed()) {
                whole = false;
                break;
            }
            p->times = variant_times(*p, base, x);
        }
        if (!whole) {  // the held-out rows cannot be timed at the fitted constants within the limit: the built-in ones, said
            x = builtin;
            report.rounds = 0;
            report.cut = true;
            for (Prepared* p : all) p->times = p->builtin;
        }
    }

    Calibration& cal = report.calibration;
    cal.executor = options.executor;
    cal.machine = options.machine;
    cal.fitted_on = fmt::format("{} ({} rows fitted, {} held out)", options.fitted_on.empty() ? "measurements" : options.fitted_on,
                                train.size(), all.size() - train.size());
    std::array<bool, 3> used{false, false, false};
    for (const Prepared* p : train)
        for (const Variant& v : p->variants) used[protocol_index(v.protocol)] = true;
    for (Protocol p : {Protocol::simple, Protocol::ll128, Protocol::ll}) {
        Calibration::Entry e;
        e.protocol = p;
        if (used[protocol_index(p)]) e.launch = x[LAUNCH + protocol_index(p)];
        for (std::size_t k = 0; k < link_classes; ++k) e.efficiency[k] = 1 / x[INV_EFF + k];
        e.hop[idx_of(LinkClass::network)] = base.row(p).hop[idx_of(LinkClass::network)].value + x[NET_HOP];
        for (std::size_t k = 0; k < link_classes; ++k) e.message[k] = base.row(p).message[k].value * x[MESSAGE];
        if (p == Protocol::simple) e.rate = rate_of(x[INV_RATE]);
        cal.entries.push_back(e);
    }
    report.model = calibrated(base, cal);

    errors(report, prepared, series);
    // the fit's held-out error is the calibrated model's: ties are judged within it
    cal.heldout_median = report.heldout_median;
    report.model = calibrated(base, cal);
    return report;
}

std::string calibration_text(const CalibrationReport& r) {
    std::string out = fmt::format("executor {} calibrated ({}; {} rounds of GLPK's simplex{})\n", r.model.name, r.calibration.fitted_on, r.rounds,
                                  !r.cut           ? ""
                                  : r.rounds == 0 ? ", stopped by the time limit before the fit converged: the built-in constants, no round kept (--timeout)"
                                                  : ", stopped by the time limit before the fit converged: the best constants so far (--timeout)");
    for (const Calibration::Entry& e : r.calibration.entries) {
        out += fmt::format("  {:<7}", to_string(e.protocol));
        out += e.launch ? fmt::format(" launch {:>7.2f} us", *e.launch * 1e6) : std::string(" launch    (not fitted)");
        out += fmt::format("  efficiency box {:.3f} network {:.3f} switch {:.3f}  network hop +{:.2f} us  message {:.3g}/{:.3g} us{}\n",
                           *e.efficiency[0], *e.efficiency[1], *e.efficiency[2], *e.hop[1] * 1e6, *e.message[0] * 1e6, *e.message[1] * 1e6,
                           !e.rate ? std::string() : *e.rate > 0 ? fmt::format("  rate {:.1f} GB/s a connection", *e.rate / 1e9)
                                                                 : std::string("  rate not bounded"));
    }
    // the measurement column as wide as its longest label (a log's file name and its row), so columns stay aligned
    std::size_t w = 28;
    for (const CalibrationResult& c : r.rows) w = std::max(w, c.label.size());
    out += fmt::format("  {:<{}} {:<10} {:<7} {:>9} {:>11} {:>11} {:>11} {:>7} {:>7} {:>7}\n", "measurement", w, "algorithm", "proto", "size",
                       "measured", "built-in", "fitted", "error", "NCCL", "set");
    for (const CalibrationResult& c : r.rows) {
        if (!c.skipped.empty()) {
            out += fmt::format("  {:<{}} skipped: {}\n", c.label, w, c.skipped);
            continue;
        }
        const std::string nccl = c.nccl_model ? fmt::format("{:+.0f}%", (*c.nccl_model / c.measured - 1) * 100) : std::string("-");
        out += fmt::format("  {:<{}} {:<10} {:<7} {:>9} {:>11} {:>11} {:>11} {:>+6.0f}% {:>7} {:>7}{}\n", c.label, w, c.algorithm, to_string(c.protocol),
                           support::format_bytes(c.size), support::format_seconds(c.measured), support::format_seconds(c.builtin),
                           support::format_seconds(c.fitted), (c.fitted / c.measured - 1) * 100, nccl, c.train ? "fit" : "held",
                           c.layout.empty() ? std::string() : "  " + c.layout);
    }
    out += fmt::format("held-out error (|predicted - measured| / measured): median {:.1f} %, worst {:.1f} %; built-in constants median {:.1f} %; "
                       "NCCL's own tuning model on the same rows: median {:.1f} %, worst {:.1f} %\n",
                       r.heldout_median * 100, r.heldout_worst * 100, r.builtin_median * 100, r.nccl_median * 100, r.nccl_worst * 100);
    return out;
}

}  // namespace collsched
