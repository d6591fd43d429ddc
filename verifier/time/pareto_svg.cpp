#include "verifier/time/pareto_svg.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

#include <fmt/format.h>

#include "support/text.hpp"

namespace collsched {

namespace {

struct Dot {
    Step steps;
    Ratio cost;
    std::uint32_t chunks;
    Step rounds;
    bool proved;
};

/// Tick values for [0, hi]: 1, 2 or 5 times a power of ten, about five of them.
double tick_step(double hi) {
    const double raw = hi / 5, p = std::pow(10, std::floor(std::log10(raw)));
    for (double m : {1.0, 2.0, 5.0})
        if (m * p >= raw) return m * p;
    return 10 * p;
}

}  // namespace

std::string frontier_svg(const ParetoResult& res, const std::string& title) {
    std::vector<Dot> dots;
    for (const ParetoRow& row : res.rows)
        if (row.frontier && row.best)
            dots.push_back({row.steps, row.best->rounds_per_chunk(), row.best->chunks, row.best->rounds, row.proved});
    const double W = 760, H = 480, left = 80, right = 40, top = 60, bottom = 80;
    const double pw = W - left - right, ph = H - top - bottom;
    double xmax = static_cast<double>(std::max<Step>(res.first_steps, 1)), ymax = res.bandwidth_bound.value();
    for (const Dot& d : dots) xmax = std::max(xmax, static_cast<double>(d.steps)), ymax = std::max(ymax, d.cost.value());
    const double xlo = std::max(0.0, static_cast<double>(res.first_steps) - 1), xhi = xmax + 1;
    const double yhi = std::max(1.0, ymax * 1.15);
    auto X = [&](double v) { return left + (v - xlo) / (xhi - xlo) * pw; };
    auto Y = [&](double v) { return top + ph - v / yhi * ph; };
    std::string s = fmt::format(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" height=\"{1}\" viewBox=\"0 0 {0} {1}\" "
        "font-family=\"DejaVu Sans, Helvetica, Arial, sans-serif\" font-size=\"12\">\n"
        "<rect width=\"{0}\" height=\"{1}\" fill=\"white\"/>\n"
        "<text x=\"{2}\" y=\"26\" font-size=\"15\" font-weight=\"bold\">{3}</text>\n"
        "<text x=\"{2}\" y=\"44\" font-size=\"11\" fill=\"#555555\">{4}</text>\n",
        W, H, left, support::xml_escape(title),
        res.complete ? "the frontier is proved complete within the search space"
                     : "NOT complete (the text report says why): grey steps were left open, hollow points not proved");
    // grid and ticks
    const double ys = tick_step(yhi);
    for (double v = 0; v <= yhi + 1e-9; v += ys) {
        s += fmt::format("<line x1=\"{0}\" y1=\"{1:.1f}\" x2=\"{2}\" y2=\"{1:.1f}\" stroke=\"#e5e5e5\"/>\n", left, Y(v), left + pw);
        s += fmt::format("<text x=\"{}\" y=\"{:.1f}\" text-anchor=\"end\" dominant-baseline=\"middle\">{}</text>\n", left - 6, Y(v),
                         fmt::format("{:g}", v));
    }
    const double xs = std::max(1.0, tick_step(xhi - xlo));
    for (double v = std::ceil(xlo / xs) * xs; v <= xhi + 1e-9; v += xs) {
        s += fmt::format("<line x1=\"{0:.1f}\" y1=\"{1}\" x2=\"{0:.1f}\" y2=\"{2}\" stroke=\"#e5e5e5\"/>\n", X(v), top, top + ph);
        s += fmt::format("<text x=\"{:.1f}\" y=\"{}\" text-anchor=\"middle\">{:g}</text>\n", X(v), top + ph + 18, v);
    }
    s += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"none\" stroke=\"#333333\"/>\n", left, top, pw, ph);
    s += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">steps S</text>\n", left + pw / 2, top + ph + 40);
    s += fmt::format("<text x=\"18\" y=\"{0}\" text-anchor=\"middle\" transform=\"rotate(-90 18 {0})\">rounds per chunk R/C</text>\n",
                     top + ph / 2);
    // steps the walk left open (a row not settled, or never reached before the last point)
    auto band = [&](Step steps, const std::string& why) {
        const double x = X(steps), w = 0.5 * pw / (xhi - xlo);
        s += fmt::format("<rect x=\"{:.1f}\" y=\"{}\" width=\"{:.1f}\" height=\"{}\" fill=\"#f0f0f0\"><title>{} steps: {}</title></rect>\n",
                         x - w / 2, top + 1, w, ph - 2, steps, support::xml_escape(why));
        s += fmt::format("<text x=\"{:.1f}\" y=\"{}\" text-anchor=\"middle\" fill=\"#777777\">open</text>\n", x, top + ph - 8);
    };
    std::vector<bool> seen;
    for (const ParetoRow& row : res.rows) {
        if (row.steps >= seen.size()) seen.resize(row.steps + 1, false);
        seen[row.steps] = true;
        if (!row.proved && !row.frontier) band(row.steps, "not settled (" + row.excluded + ")");
    }
    if (!dots.empty())
        for (Step st = std::max<Step>(res.first_steps, 1); st < dots.back().steps; ++st)
            if (st >= seen.size() || !seen[st]) band(st, "not searched (the walk ended first)");
    // the bounds
    if (res.bandwidth_bound.num > 0) {
        const double y = Y(res.bandwidth_bound.value());
        s += fmt::format("<line x1=\"{0}\" y1=\"{1:.1f}\" x2=\"{2}\" y2=\"{1:.1f}\" stroke=\"#d62728\" stroke-dasharray=\"6,4\"/>\n", left, y,
                         left + pw);
        const std::string why = res.bounds.empty() ? std::string() : ": " + res.bounds.front().name;
        s += fmt::format("<text x=\"{}\" y=\"{:.1f}\" text-anchor=\"end\" fill=\"#d62728\">bandwidth bound R/C \u2265 {}{}</text>\n",
                         left + pw - 6, y + 16, res.bandwidth_bound.text(), support::xml_escape(why));
    }
    if (res.first_steps > 0) {
        const double x = X(res.first_steps);
        s += fmt::format("<line x1=\"{0:.1f}\" y1=\"{1}\" x2=\"{0:.1f}\" y2=\"{2}\" stroke=\"#1f77b4\" stroke-dasharray=\"6,4\"/>\n", x, top,
                         top + ph);
        s += fmt::format("<text x=\"{:.1f}\" y=\"{}\" fill=\"#1f77b4\">S \u2265 {} (distance)</text>\n", x + 6, top + 14, res.first_steps);
    }
    // the staircase: a schedule with S steps also serves every S' > S
    if (!dots.empty()) {
        std::string pts;
        for (std::size_t i = 0; i < dots.size(); ++i) {
            pts += fmt::format("{:.1f},{:.1f} ", X(dots[i].steps), Y(dots[i].cost.value()));
            const double next = i + 1 < dots.size() ? static_cast<double>(dots[i + 1].steps) : xhi;
            pts += fmt::format("{:.1f},{:.1f} ", X(next), Y(dots[i].cost.value()));
        }
        s += fmt::format("<polyline fill=\"none\" stroke=\"#333333\" stroke-width=\"1.5\" points=\"{}\"/>\n", pts);
    }
    for (const Dot& d : dots) {
        const double x = X(d.steps), y = Y(d.cost.value());
        s += fmt::format("<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"6\" fill=\"{}\" stroke=\"#333333\" stroke-width=\"1.5\">"
                         "<title>{} steps, {} rounds, {} chunks: R/C = {}{}</title></circle>\n",
                         x, y, d.proved ? "#333333" : "white", d.steps, d.rounds, d.chunks, d.cost.text(), d.proved ? ", proved" : ", not proved");
        s += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\">({}, {})</text>\n", x + 9, y - 9, d.steps, d.cost.text());
    }
    s += fmt::format("<text x=\"{}\" y=\"{}\" font-size=\"11\" fill=\"#555555\">\u25cf proved point \u00b7 \u25cb found, not proved "
                     "\u00b7 grey: steps left open \u00b7 (S, R/C) per point; hover for details</text>\n",
                     left, H - 16);
    s += "</svg>\n";
    return s;
}

}  // namespace collsched
