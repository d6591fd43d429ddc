#include "runtime/compare.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "support/assert.hpp"
#include "support/error.hpp"
#include "support/units.hpp"
#include "support/text.hpp"
#include "runtime/cost_report.hpp"

namespace collsched {

namespace {

double time_of(const TimingPlan& t, double size, const std::optional<LinkSpeed>& link, TimeKind kind) {
    const TimeOptions opt{size, link};
    return kind == TimeKind::synchronous ? t.synchronous(opt) : t.predict(opt).asynchronous;
}

/// The size between lo and hi where a and b take equal time (the difference changes sign between
/// lo and hi, `dlo` and `dhi` its values there), to 0.1 %. Times are close to linear in the size
/// between changes of the event order, so each round probes just below and above the point where
/// the difference's chord crosses zero: one round brackets a linear difference to 0.1 % (four
/// predictions where bisection on log(size) took 24); a round that does not halve the bracket (on
/// log size) is followed by a bisection step, so it never takes more rounds than bisection.
double crossover(const TimingPlan& a, const TimingPlan& b, double lo, double hi, double dlo, double dhi, const std::optional<LinkSpeed>& link,
                 TimeKind kind) {
    auto diff = [&](double m) { return time_of(a, m, link, kind) - time_of(b, m, link, kind); };
    const bool lo_sign = dlo < 0;
    auto take = [&](double m, double d) {
        if ((d < 0) == lo_sign) lo = m, dlo = d;
        else hi = m, dhi = d;
    };
    constexpr double half = 1.0005;  // a probe pair spans 0.1 %
    for (int k = 0; k < 60 && hi / lo > 1.001; ++k) {
        const double width = std::log(hi / lo);
        double x = dhi != dlo ? lo + dlo * (lo - hi) / (dhi - dlo) : std::sqrt(lo * hi);
        x = std::clamp(x, lo * half, hi / half);
        if (hi / lo <= half * half) x = std::sqrt(lo * hi);
        const double below = std::max(lo, x / half), above = std::min(hi, x * half);
        take(below, diff(below));
        if (above > lo && above < hi) take(above, diff(above));
        if (hi / lo > 1.001 && std::log(hi / lo) > width / 2) {
            const double mid = std::sqrt(lo * hi);
            take(mid, diff(mid));
        }
    }
    return std::sqrt(lo * hi);
}

}  // namespace

Comparison compare(const std::vector<Contender>& cs, const std::vector<double>& sizes, const std::optional<LinkSpeed>& link,
                   TimeKind kind, std::size_t baseline) {
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
    for (const Contender& c : cs) plans.emplace_back(*c.table);
    return compare(cs, plans, sizes, link, kind, baseline);
}

Comparison compare(const std::vector<Contender>& cs, const std::vector<TimingPlan>& plans, const std::vector<double>& sizes,
                   const std::optional<LinkSpeed>& link, TimeKind kind, std::size_t baseline) {
    COLLSCHED_ASSERT(plans.size() == cs.size());
    std::vector<std::vector<double>> seconds(cs.size(), std::vector<double>(sizes.size())), other = seconds;
    for (std::size_t c = 0; c < cs.size(); ++c)
        for (std::size_t i = 0; i < sizes.size(); ++i) {
            TimePrediction p = plans[c].predict(TimeOptions{sizes[i], link});
            seconds[c][i] = kind == TimeKind::asynchronous ? p.asynchronous : p.synchronous;
            other[c][i] = kind == TimeKind::asynchronous ? p.synchronous : p.asynchronous;
        }
    return compare_predicted(plans, std::move(seconds), std::move(other), sizes, link, kind, baseline);
}

Comparison compare_predicted(const std::vector<TimingPlan>& plans, std::vector<std::vector<double>> seconds, std::vector<std::vector<double>> other,
                             const std::vector<double>& sizes, const std::optional<LinkSpeed>& link, TimeKind kind, std::size_t baseline) {
    COLLSCHED_ASSERT(plans.size() == seconds.size() && plans.size() == other.size());
    Comparison r;
    r.sizes = sizes;
    r.kind = kind;
    r.baseline = baseline;
    r.seconds = std::move(seconds);
    r.other = std::move(other);
    for (std::size_t i = 0; i < sizes.size(); ++i) {
        std::size_t best = 0;
        for (std::size_t c = 1; c < plans.size(); ++c)
            if (r.seconds[c][i] < r.seconds[best][i] * (1 - 1e-12)) best = c;
        r.winner.push_back(best);
    }
    for (std::size_t i = 1; i < sizes.size(); ++i)
        if (r.winner[i] != r.winner[i - 1]) {
            const std::size_t a = r.winner[i - 1], b = r.winner[i];
            r.crossovers.push_back({crossover(plans[a], plans[b], sizes[i - 1], sizes[i], r.seconds[a][i - 1] - r.seconds[b][i - 1],
                                              r.seconds[a][i] - r.seconds[b][i], link, kind),
                                    a, b});
        }
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
