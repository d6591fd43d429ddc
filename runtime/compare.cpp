#include "runtime/compare.hpp"

#include <algorithm>
#include <numeric>
#include <array>
#include <atomic>
#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "support/assert.hpp"
#include "support/parallel.hpp"
#include "support/error.hpp"
#include "support/units.hpp"
#include "support/text.hpp"
#include "support/trace.hpp"
#include "runtime/cost_report.hpp"

namespace collsched {

namespace {

/// The fastest asynchronous run over the protocols `ps` (the first of the fastest in their order: index and time), its
/// runs tried in order of their synchronous times `sync` (the likely fastest first), each passed the best so far: a
/// run sure to end after it stops there (+inf), and one that ties it runs to the end (then the earlier protocol wins).
std::pair<std::size_t, double> fastest_run(const TimingPlan& plan, double size, const TimeBasis& basis, const std::vector<Protocol>& ps,
                                           const std::vector<double>& sync, Deadline deadline = {}) {
    std::vector<std::size_t> order(ps.size());
    std::iota(order.begin(), order.end(), std::size_t{0});
    std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return sync[a] < sync[b]; });
    std::pair<std::size_t, double> best{ps.size(), std::numeric_limits<double>::infinity()};
    for (std::size_t k : order) {
        TimeOptions o = basis.at(size, ps[k]);
        o.deadline = deadline;
        if (const double t = plan.asynchronous(o, best.second); t < best.second || (t == best.second && k < best.first)) best = {k, t};
    }
    return best;
}

/// The deciding kind's time only: the least over the basis's protocols.
double time_of(const TimingPlan& t, double size, const TimeBasis& basis, TimeKind kind) {
    const std::vector<Protocol> ps = basis.protocols();
    double best = std::numeric_limits<double>::infinity();
    if (kind == TimeKind::synchronous || ps.size() == 1) {
        for (Protocol p : ps) best = std::min(best, kind == TimeKind::synchronous ? t.synchronous(basis.at(size, p)) : t.asynchronous(basis.at(size, p)));
        return best;
    }
    std::vector<double> sync;
    for (Protocol p : ps) sync.push_back(t.synchronous(basis.at(size, p)));
    return fastest_run(t, size, basis, ps, sync).second;
}

/// Tables this large (transfers of the two together) are predicted on two threads at each probe of a crossover:
/// below it a thread costs more than it saves.
constexpr std::size_t pair_on_threads = 1 << 14;

/// A chord's probe this far from zero (a share of the smaller |d| at the bracket's ends) ends the chords.
constexpr double far_from_chord = 0.25;

}  // namespace

std::string TimeBasis::executor_name() const { return executor ? executor->name : std::string("ideal"); }

std::vector<Protocol> TimeBasis::protocols() const {
    if (ideal()) return {Protocol::none};
    std::vector<Protocol> out;
    for (const ProtocolRow& r : executor->protocols) out.push_back(r.protocol);
    return out;
}

TimeOptions TimeBasis::at(double size, Protocol p) const {
    TimeOptions o{size, link};
    if (!ideal()) o.executor = executor_costs(*executor, p);
    return o;
}

bool TimeBasis::tie(double a, double b) const {
    const double e = ideal() ? 0.0 : executor->error.value;
    return std::max(a, b) <= std::min(a, b) * (1 + e);
}

BasisTime time_on(const TimingPlan& plan, double size, const TimeBasis& basis, TimeKind decides, Deadline deadline) {
    // the two times only (predict() also keeps every transfer's times), the other kind once, for the protocol chosen
    BasisTime best{std::numeric_limits<double>::infinity(), 0, Protocol::none};
    const std::vector<Protocol> ps = basis.protocols();
    if (decides == TimeKind::asynchronous && ps.size() > 1) {  // every protocol's synchronous time orders the runs
        std::vector<double> sync;
        for (Protocol p : ps) sync.push_back(plan.synchronous(basis.at(size, p)));
        const auto [k, t] = fastest_run(plan, size, basis, ps, sync, deadline);
        return {t, sync[k], ps[k]};
    }
    for (Protocol p : ps) {
        TimeOptions o = basis.at(size, p);
        o.deadline = deadline;
        const double t = decides == TimeKind::asynchronous ? plan.asynchronous(o) : plan.synchronous(o);
        if (t < best.seconds) best = {t, 0, p};
    }
    TimeOptions o = basis.at(size, best.protocol);
    o.deadline = deadline;
    best.other = decides == TimeKind::asynchronous ? plan.synchronous(o) : plan.asynchronous(o);
    return best;
}

double find_crossover(const std::function<double(double)>& d, double lo, double hi, double dlo, double dhi, int* probes,
                      std::pair<double, double>* bracket) {
    const double inside = std::sqrt(crossover_ratio);  // a chord's probe lies at least this factor inside the bracket
    const bool lo_negative = dlo < 0;
    const double start = std::log(hi / lo);
    double flo = dlo, fhi = dhi;  // the chord's values at the ends: Illinois halves the one at an end kept twice in a row
    int kept = 0;                 // the end the last probe kept: +1 hi (it moved lo), -1 lo
    bool chord = true;
    for (int n = 0; hi / lo > crossover_ratio && n < 200; ++n) {
        // chords while they pay: at most one probe more than the halvings of the bracket (on log size) so far
        if (chord && n > std::log2(start / std::log(hi / lo)) + 1) chord = false;
        double x = std::sqrt(lo * hi);
        if (chord && lo * inside < hi / inside && fhi != flo) x = std::clamp(lo + flo * (lo - hi) / (fhi - flo), lo * inside, hi / inside);
        const double v = d(x);
        if (probes) ++*probes;
        // far from the chord's zero: the event order changed in between (often a jump of one time); bisection from here
        if (chord && std::abs(v) > far_from_chord * std::min(std::abs(dlo), std::abs(dhi))) chord = false;
        if ((v < 0) == lo_negative) {
            lo = x, dlo = flo = v;
            if (kept == 1) fhi /= 2;
            kept = 1;
        } else {
            hi = x, dhi = fhi = v;
            if (kept == -1) flo /= 2;
            kept = -1;
        }
    }
    if (bracket) *bracket = {lo, hi};
    return std::sqrt(lo * hi);
}

double find_table_crossover(const std::function<double(std::size_t, double)>& time, double lo, double hi, std::array<double, 2> at_lo,
                            std::array<double, 2> at_hi, bool two_threads, std::array<int, 2>* predictions) {
    struct Point {
        double m;
        std::array<double, 2> t;
        std::array<bool, 2> exact;  // t[s] predicted, not taken from the line
    };
    std::vector<Point> pts{{lo, at_lo, {true, true}}, {hi, at_hi, {true, true}}};
    auto predict = [&](Point& p, bool first, bool second) {
        const bool want[2] = {first, second};
        run_indexed(2, two_threads && first && second ? 2 : 1, [&](std::size_t s) {
            if (!want[s]) return true;
            p.t[s] = time(s, p.m), p.exact[s] = true;
            if (predictions) ++(*predictions)[s];  // one element per thread
            return true;
        });
    };
    auto line_at = [&](std::size_t s, double m) {  // table s's time at m from its exact times around m
        const Point *below = nullptr, *above = nullptr;
        for (const Point& p : pts)
            if (p.exact[s]) {
                if (p.m <= m && (!below || p.m > below->m)) below = &p;
                if (p.m >= m && (!above || p.m < above->m)) above = &p;
            }
        return above->m == below->m ? below->t[s] : below->t[s] + (above->t[s] - below->t[s]) * (m - below->m) / (above->m - below->m);
    };
    const double dlo = at_lo[0] - at_lo[1], dhi = at_hi[0] - at_hi[1];
    // the winners at the grid points break ties within 1e-12 by order (compare_predicted): the two may tie at lo, or
    // the later winner already be ahead there by less than that; no sign change lies between, the crossover is lo
    if (dlo == 0 || (dlo < 0) == (dhi < 0)) return lo;
    const double smaller = std::min(std::abs(dlo), std::abs(dhi));
    int line = -1;      // the table whose time the line gives (-1: none)
    bool lined = false;  // and whether it ever gave one
    double off_line = 0;  // how far that table was from the line at the first probe
    bool first = true;
    auto d = [&](double m) {
        Point p{m, {0, 0}, {false, false}};
        predict(p, line != 0, line != 1);
        if (line >= 0) p.t[line] = line_at(line, m);
        double v = p.t[0] - p.t[1];
        if (line >= 0 && std::abs(v) <= 4 * off_line) {  // too close to zero for the line to tell the sign: exact from here
            predict(p, line == 0, line == 1);
            v = p.t[0] - p.t[1];
            line = -1;
        }
        if (first && std::abs(v) > far_from_chord * smaller) {  // find_crossover bisects from here
            std::array<double, 2> off{};
            for (std::size_t s : {0, 1}) off[s] = std::abs(p.t[s] - (pts[0].t[s] + (pts[1].t[s] - pts[0].t[s]) * (m - lo) / (hi - lo)));
            const std::size_t s = off[0] <= off[1] ? 0 : 1;
            if (off[s] <= far_from_chord * std::min(smaller, std::abs(v))) line = static_cast<int>(s), lined = true, off_line = off[s];
        }
        first = false;
        pts.push_back(p);
        return v;
    };
    std::pair<double, double> br;
    const double x = find_crossover(d, lo, hi, dlo, dhi, nullptr, &br);
    if (!lined) return x;
    // the bracket's ends predicted exactly: the answer when the exact difference changes sign between them
    const bool lo_negative = dlo < 0;
    auto on_lo_side = [&](const Point& p) { return (p.t[0] - p.t[1] < 0) == lo_negative; };
    bool holds = true;
    for (Point& p : pts)
        if (p.m == br.first || p.m == br.second) {
            if (!p.exact[0] || !p.exact[1]) predict(p, !p.exact[0], !p.exact[1]);
            holds = holds && on_lo_side(p) == (p.m == br.first);
        }
    if (holds) return x;
    std::vector<Point> exact;
    for (const Point& p : pts)
        if (p.exact[0] && p.exact[1]) exact.push_back(p);
    std::sort(exact.begin(), exact.end(), [](const Point& u, const Point& v) { return u.m < v.m; });
    const Point* best = nullptr;  // the narrowest bracket of a sign change among them
    for (std::size_t i = 0; i + 1 < exact.size(); ++i)
        if (on_lo_side(exact[i]) && !on_lo_side(exact[i + 1]) && (!best || exact[i + 1].m / exact[i].m < best[1].m / best[0].m)) best = &exact[i];
    COLLSCHED_ASSERT(best);  // lo is on its side, hi on the other
    line = -1;
    return find_crossover(d, best[0].m, best[1].m, best[0].t[0] - best[0].t[1], best[1].t[0] - best[1].t[1]);
}

Comparison compare(const std::vector<Contender>& cs, const std::vector<double>& sizes, const TimeBasis& basis,
                   TimeKind kind, std::size_t baseline, unsigned jobs, Deadline deadline) {
    if (cs.empty()) throw InputError("compare needs at least one schedule or table");
    const SendTable& first = *cs.front().table;
    for (const Contender& c : cs) {
        const SendTable& t = *c.table;
        if (t.topology->processors() != first.topology->processors() || t.collective.kind != first.collective.kind ||
            t.collective.root != first.collective.root)
            throw InputError(fmt::format("{} runs {} on {} processors, {} runs {} on {}: compare schedules of one collective on one "
                                         "machine", cs.front().file, first.collective.to_string(), first.topology->processors(), c.file,
                                         t.collective.to_string(), t.topology->processors()));
    }
    std::vector<TimingPlan> plans;  // built once per table, run at every size and for the crossovers
    plans.reserve(cs.size());
    for (const Contender& c : cs) plans.emplace_back(*c.table, deadline);
    return compare(cs, plans, sizes, basis, kind, baseline, jobs, deadline);
}

Comparison compare(const std::vector<Contender>& cs, const std::vector<TimingPlan>& plans, const std::vector<double>& sizes,
                   const TimeBasis& basis, TimeKind kind, std::size_t baseline, unsigned jobs, Deadline deadline) {
    COLLSCHED_ASSERT(plans.size() == cs.size());
    const std::size_t S = sizes.size();
    std::vector<std::vector<double>> seconds(cs.size(), std::vector<double>(S)), other = seconds;
    std::vector<std::vector<Protocol>> protocol(basis.ideal() ? 0 : cs.size(), std::vector<Protocol>(S));
    std::size_t largest = 0;
    for (const TimingPlan& p : plans) largest = std::max(largest, p.transfers());
    std::atomic<std::size_t> made = 0;
    run_indexed(cs.size() * S, prediction_threads(jobs, largest), [&](std::size_t k) {
        if (deadline.passed()) return false;
        const std::size_t c = k / S, i = k % S;
        const BasisTime t = time_on(plans[c], sizes[i], basis, kind);
        seconds[c][i] = t.seconds, other[c][i] = t.other;
        if (!protocol.empty()) protocol[c][i] = t.protocol;
        ++made;
        return true;
    });
    if (made < cs.size() * S)
        throw LimitReached(fmt::format("time limit: {} of the {} predictions (tables x sizes) were made", made.load(), cs.size() * S));
    return compare_predicted(plans, std::move(seconds), std::move(other), sizes, basis, kind, baseline, jobs, deadline, std::move(protocol));
}

Comparison compare_predicted(const std::vector<TimingPlan>& plans, std::vector<std::vector<double>> seconds, std::vector<std::vector<double>> other,
                             const std::vector<double>& sizes, const TimeBasis& basis, TimeKind kind, std::size_t baseline,
                             unsigned jobs, Deadline deadline, std::vector<std::vector<Protocol>> protocol, std::vector<TimeBasis> bases) {
    COLLSCHED_ASSERT(plans.size() == seconds.size() && plans.size() == other.size());
    Comparison r;
    r.sizes = sizes;
    r.kind = kind;
    r.baseline = baseline;
    r.seconds = std::move(seconds);
    r.other = std::move(other);
    r.protocol = std::move(protocol);
    for (std::size_t i = 0; i < sizes.size(); ++i) {
        std::size_t best = 0;
        for (std::size_t c = 1; c < plans.size(); ++c)
            if (r.seconds[c][i] < r.seconds[best][i] * (1 - 1e-12)) best = c;
        r.winner.push_back(best);
    }
    std::vector<std::size_t> at;  // the grid points above which the winner changes
    std::size_t largest = 0;
    for (std::size_t i = 1; i < sizes.size(); ++i)
        if (r.winner[i] != r.winner[i - 1]) {
            at.push_back(i);
            largest = std::max({largest, plans[r.winner[i]].transfers(), plans[r.winner[i - 1]].transfers()});
        }
    // each crossover searched on its own thread, the two predictions of a probe on two where threads are left
    const unsigned threads = prediction_threads(jobs, largest);
    const unsigned outer = static_cast<unsigned>(std::min<std::size_t>(threads, at.size())), inner = threads / std::max(outer, 1u);
    r.crossovers.resize(at.size());
    run_indexed(at.size(), outer, [&](std::size_t k) {
        const std::size_t i = at[k], a = r.winner[i - 1], b = r.winner[i];
        const bool two = inner >= 2 && plans[a].transfers() + plans[b].transfers() >= pair_on_threads;
        auto time = [&](std::size_t s, double m) {
            if (deadline.passed()) throw LimitReached("time limit (a crossover's search)");
            const std::size_t p = s == 0 ? a : b;
            return time_of(plans[p], m, bases.empty() ? basis : bases[p], kind);
        };
        r.crossovers[k] = {0, a, b, sizes[i - 1], sizes[i]};
        std::array<int, 2> made{0, 0};
        trace("crossover between sizes {} and {}: start ({} and {} transfers)", sizes[i - 1], sizes[i], plans[a].transfers(), plans[b].transfers());
        try {
            r.crossovers[k].size = find_table_crossover(time, sizes[i - 1], sizes[i], {r.seconds[a][i - 1], r.seconds[b][i - 1]},
                                                        {r.seconds[a][i], r.seconds[b][i]}, two, &made);
        } catch (const LimitReached&) {  // left unsearched: its grid points say where it lies
        }
        trace("crossover between sizes {} and {}: {} and {} predictions", sizes[i - 1], sizes[i], made[0], made[1]);
        return true;
    });
    return r;
}

namespace {

constexpr const char* palette[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#7f7f7f", "#bcbd22"};

}  // namespace

std::string comparison_svg(const std::vector<Contender>& cs, const Comparison& cmp, PlotKind plot, const std::string& title) {
    // the legend's labels: names cut at 26 characters, the baseline's marked
    std::vector<std::string> labels;
    std::size_t longest = 0;
    for (std::size_t c = 0; c < cs.size(); ++c) {
        std::string name = cs[c].name.size() > 26 ? cs[c].name.substr(0, 25) + "…" : cs[c].name;
        if (c == cmp.baseline) name += " (baseline)";
        longest = std::max(longest, name.size());
        labels.push_back(std::move(name));
    }
    // the legend's column is as wide as its longest label (8 px a character at 13 px DejaVu Sans)
    const double left = 90, top = 60, bottom = 70, pw = 620, H = 600;
    const double right = std::max(250.0, 60 + 8.0 * static_cast<double>(longest)), W = left + pw + right;
    const double ph = H - top - bottom;
    // values: seconds, or algorithm bandwidth in bytes per second
    std::vector<std::vector<double>> v = cmp.seconds;
    for (std::size_t c = 0; c < cs.size(); ++c)
        for (std::size_t i = 0; i < cmp.sizes.size(); ++i)
            v[c][i] = plot == PlotKind::time ? cmp.seconds[c][i] : algbw(cmp.sizes[i], cmp.seconds[c][i]);
    double ymin = 1e300, ymax = 0;
    for (const auto& row : v)
        for (double y : row)
            if (y > 0 && std::isfinite(y)) ymin = std::min(ymin, y), ymax = std::max(ymax, y);
    if (ymax <= 0) ymin = 1e-6, ymax = 1;
    const double ylo = std::floor(std::log10(ymin)), yhi = std::max(ylo + 1, std::ceil(std::log10(ymax)));
    const double xlo = std::log2(cmp.sizes.front()), xhi = std::max(xlo + 1, std::log2(cmp.sizes.back()));
    auto X = [&](double size) { return left + (std::log2(size) - xlo) / (xhi - xlo) * pw; };
    auto Y = [&](double y) { return top + ph - (std::log10(y) - ylo) / (yhi - ylo) * ph; };
    std::string s = fmt::format(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" height=\"{1}\" viewBox=\"0 0 {0} {1}\" "
        "font-family=\"DejaVu Sans, Helvetica, Arial, sans-serif\" font-size=\"13\">\n"
        "<rect width=\"{0}\" height=\"{1}\" fill=\"white\"/>\n"
        "<text x=\"{2}\" y=\"28\" font-size=\"16\" font-weight=\"bold\">{3}</text>\n",
        W, H, left, support::xml_escape(title));
    // grid and y ticks: every power of ten
    for (double e = ylo; e <= yhi + 1e-9; e += 1) {
        const double y = Y(std::pow(10, e));
        const std::string label = plot == PlotKind::time ? support::format_seconds(std::pow(10, e)) : support::format_bandwidth(std::pow(10, e));
        s += fmt::format("<line x1=\"{}\" y1=\"{:.1f}\" x2=\"{}\" y2=\"{:.1f}\" stroke=\"#dddddd\"/>\n", left, y, left + pw, y);
        s += fmt::format("<text x=\"{}\" y=\"{:.1f}\" text-anchor=\"end\" dominant-baseline=\"middle\">{}</text>\n", left - 8, y, support::xml_escape(label));
    }
    // x ticks: every power of two, labelled every power of four (at most 12 labels)
    const int xspan = static_cast<int>(std::round(xhi - xlo));
    const int every = std::max(2, (xspan + 11) / 12 + ((xspan + 11) / 12) % 2);
    for (int e = static_cast<int>(std::ceil(xlo)); e <= static_cast<int>(std::floor(xhi)); ++e) {
        const double x = X(std::ldexp(1.0, e));
        const bool labelled = (e - static_cast<int>(std::ceil(xlo))) % every == 0;
        s += fmt::format("<line x1=\"{:.1f}\" y1=\"{}\" x2=\"{:.1f}\" y2=\"{}\" stroke=\"{}\"/>\n", x, top, x, top + ph,
                         labelled ? "#dddddd" : "#f0f0f0");
        if (labelled)
            s += fmt::format("<text x=\"{:.1f}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n", x, top + ph + 20,
                             support::xml_escape(support::format_bytes(std::ldexp(1.0, e))));
    }
    s += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"none\" stroke=\"#333333\"/>\n", left, top, pw, ph);
    s += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">size M, NCCL's (log scale)</text>\n", left + pw / 2, H - 22);
    s += fmt::format("<text transform=\"translate(22,{}) rotate(-90)\" text-anchor=\"middle\">{}</text>\n", top + ph / 2,
                     plot == PlotKind::time ? (cmp.kind == TimeKind::asynchronous ? "asynchronous time (log scale)" : "synchronous time (log scale)")
                                            : "algorithm bandwidth, nccl-tests' (log scale)");
    // crossovers
    for (const Crossover& x : cmp.crossovers) {
        if (!x.searched()) continue;
        const double cx = X(x.size);
        s += fmt::format("<line x1=\"{0:.1f}\" y1=\"{1}\" x2=\"{0:.1f}\" y2=\"{2}\" stroke=\"#555555\" stroke-dasharray=\"5,4\"/>\n", cx, top, top + ph);
        s += fmt::format("<text x=\"{:.1f}\" y=\"{}\" font-size=\"11\" fill=\"#555555\" text-anchor=\"middle\">{}</text>\n", cx, top - 6,
                         support::xml_escape(support::format_bytes(x.size)));
    }
    // lines
    for (std::size_t c = 0; c < cs.size(); ++c) {
        const char* colour = palette[c % std::size(palette)];
        std::string pts;
        for (std::size_t i = 0; i < cmp.sizes.size(); ++i)
            if (v[c][i] > 0) pts += fmt::format("{:.1f},{:.1f} ", X(cmp.sizes[i]), Y(v[c][i]));
        s += fmt::format("<polyline fill=\"none\" stroke=\"{}\" stroke-width=\"2.5\" points=\"{}\"/>\n", colour, pts);
        for (std::size_t i = 0; i < cmp.sizes.size(); ++i)
            if (v[c][i] > 0)
                s += fmt::format("<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"3\" fill=\"{}\"><title>{}: {} at {}</title></circle>\n",
                                 X(cmp.sizes[i]), Y(v[c][i]), colour, support::xml_escape(cs[c].name),
                                 support::xml_escape(plot == PlotKind::time ? support::format_seconds(v[c][i]) : support::format_bandwidth(v[c][i])),
                                 support::xml_escape(support::format_bytes(cmp.sizes[i])));
    }
    // legend, right of the plot
    const double lx = left + pw + 20;
    s += fmt::format("<text x=\"{}\" y=\"{}\" font-weight=\"bold\">schedules</text>\n", lx, top + 4);
    for (std::size_t c = 0; c < cs.size(); ++c) {
        const double ly = top + 26 + 22 * static_cast<double>(c);
        s += fmt::format("<line x1=\"{}\" y1=\"{:.1f}\" x2=\"{}\" y2=\"{:.1f}\" stroke=\"{}\" stroke-width=\"3\"/>\n", lx, ly, lx + 24, ly,
                         palette[c % std::size(palette)]);
        s += fmt::format("<text x=\"{}\" y=\"{:.1f}\" dominant-baseline=\"middle\">{}</text>\n", lx + 30, ly, support::xml_escape(labels[c]));
    }
    if (!cmp.crossovers.empty()) {
        const double ly = top + 40 + 22 * static_cast<double>(cs.size());
        s += fmt::format("<line x1=\"{0}\" y1=\"{1:.1f}\" x2=\"{2}\" y2=\"{1:.1f}\" stroke=\"#555555\" stroke-dasharray=\"5,4\"/>\n", lx, ly, lx + 24);
        s += fmt::format("<text x=\"{}\" y=\"{:.1f}\" dominant-baseline=\"middle\">crossover</text>\n", lx + 30, ly);
    }
    s += "</svg>\n";
    return s;
}

}  // namespace collsched
