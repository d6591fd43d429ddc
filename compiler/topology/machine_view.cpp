#include "compiler/topology/machine_view.hpp"

#include <algorithm>
#include <map>
#include <numeric>
#include <set>
#include <vector>

#include <fmt/format.h>

#include "support/text.hpp"
#include "support/units.hpp"

namespace collsched {

namespace {

/// "gpu3.out" -> "gpu#.out": the name with every run of digits replaced by '#'.
std::string pattern_of(const std::string& name) {
    std::string out;
    for (std::size_t i = 0; i < name.size(); ++i) {
        if (std::isdigit(static_cast<unsigned char>(name[i]))) {
            if (out.empty() || out.back() != '#') out += '#';
        } else {
            out += name[i];
        }
    }
    return out;
}

/// A set of speeds, "25 GB/s, 2.7 us" or "25 GB/s .. 50 GB/s, 2.7 us".
std::string speeds_text(double blo, double bhi, double alo, double ahi) {
    std::string b = blo == bhi ? support::format_bandwidth(blo)
                               : fmt::format("{} .. {}", support::format_bandwidth(blo), support::format_bandwidth(bhi));
    std::string a = alo == ahi ? support::format_seconds(alo)
                               : fmt::format("{} .. {}", support::format_seconds(alo), support::format_seconds(ahi));
    return fmt::format("{} per channel, latency {}", b, a);
}

}  // namespace

double fastest_processor_channel(const Topology& topo) {
    double fastest = 0;
    for (std::uint32_t c = 0; c < topo.channels().size(); ++c) {
        const Channel& ch = topo.channel(ChannelId{c});
        if (topo.is_processor(ch.from) && topo.is_processor(ch.to)) fastest = std::max(fastest, topo.speed(ChannelId{c}).bandwidth);
    }
    return fastest;
}

ProcessorChannelSpeeds processor_channel_speeds(const Topology& topo) {
    ProcessorChannelSpeeds s;
    for (std::uint32_t c = 0; c < topo.channels().size(); ++c) {
        const Channel& ch = topo.channel(ChannelId{c});
        if (!topo.is_processor(ch.from) && !topo.is_processor(ch.to)) continue;
        const double bw = topo.speed(ChannelId{c}).bandwidth;
        s.fastest = std::max(s.fastest, bw);
        s.slowest = s.slowest == 0 ? bw : std::min(s.slowest, bw);
    }
    return s;
}

std::vector<std::uint32_t> processor_components(const Topology& topo, double min_bandwidth) {
    const std::uint32_t P = topo.processors();
    std::vector<std::uint32_t> parent(P);
    std::iota(parent.begin(), parent.end(), 0u);
    auto find = [&](std::uint32_t x) {
        while (parent[x] != x) x = parent[x] = parent[parent[x]];
        return x;
    };
    for (std::uint32_t c = 0; c < topo.channels().size(); ++c) {
        const Channel& ch = topo.channel(ChannelId{c});
        if (!topo.is_processor(ch.from) || !topo.is_processor(ch.to) || topo.speed(ChannelId{c}).bandwidth < min_bandwidth) continue;
        const std::uint32_t a = find(idx(ch.from)), b = find(idx(ch.to));
        if (a != b) parent[std::max(a, b)] = std::min(a, b);
    }
    std::vector<std::uint32_t> number(P, P), set(P);
    std::uint32_t sets = 0;
    for (std::uint32_t p = 0; p < P; ++p) {
        const std::uint32_t r = find(p);
        if (number[r] == P) number[r] = sets++;
        set[p] = number[r];
    }
    return set;
}

/// The band under the boxes: what every processor has inside its box and in the fabric, the
/// routers, and the link groups by name pattern.
std::vector<std::string> summary_lines(const Topology& topo, const std::vector<std::uint32_t>& box,
                                       const std::vector<std::vector<std::uint32_t>>& members) {
    const std::uint32_t B = static_cast<std::uint32_t>(members.size());
    const std::uint32_t P = topo.processors();
    // What a box holds and what joins the boxes, from the channels.
    struct Side {
        std::uint64_t channels = 0;
        double blo = 1e300, bhi = 0, alo = 1e300, ahi = 0;
        std::set<std::uint32_t> degree;  ///< channels out of one processor, over processors
        bool same_index_only = true;     ///< every fabric channel joins processors of the same index in their boxes
        void add(const LinkSpeed& s) {
            ++channels;
            blo = std::min(blo, s.bandwidth), bhi = std::max(bhi, s.bandwidth);
            alo = std::min(alo, s.alpha), ahi = std::max(ahi, s.alpha);
        }
    } inside, fabric;
    std::vector<std::uint32_t> rank_in_box(P);
    for (const auto& m : members)
        for (std::uint32_t i = 0; i < m.size(); ++i) rank_in_box[m[i]] = i;
    std::vector<std::uint32_t> in_deg(P, 0), out_deg(P, 0);
    std::uint64_t to_routers = 0;
    for (std::uint32_t c = 0; c < topo.channels().size(); ++c) {
        const Channel& ch = topo.channel(ChannelId{c});
        if (!topo.is_processor(ch.from) || !topo.is_processor(ch.to)) {
            ++to_routers;
            continue;
        }
        const std::uint32_t u = idx(ch.from), v = idx(ch.to);
        if (box[u] == box[v]) {
            inside.add(topo.speed(ChannelId{c}));
            ++in_deg[u];
        } else {
            fabric.add(topo.speed(ChannelId{c}));
            ++out_deg[u];
            if (rank_in_box[u] != rank_in_box[v]) fabric.same_index_only = false;
        }
    }
    for (std::uint32_t p = 0; p < P; ++p) inside.degree.insert(in_deg[p]), fabric.degree.insert(out_deg[p]);
    auto degree_text = [](const std::set<std::uint32_t>& d) {
        return d.size() == 1 ? support::count_of(*d.begin(), "channel") : fmt::format("{} .. {} channels", *d.begin(), *d.rbegin());
    };
    // Link groups by name pattern.
    struct GroupKind {
        std::uint32_t count = 0, cap = 0;
        double bandwidth = 0;
    };
    std::map<std::string, GroupKind> kinds;
    for (std::uint32_t g = 0; g < topo.groups().size(); ++g) {
        GroupKind& k = kinds[pattern_of(topo.groups()[g].name)];
        ++k.count;
        k.cap = topo.groups()[g].cap;
        k.bandwidth = topo.group_bandwidth(g);
    }

    std::vector<std::string> lines;
    lines.push_back(fmt::format("inside a box: {} per processor, {}", degree_text(inside.degree),
                                inside.channels ? speeds_text(inside.blo, inside.bhi, inside.alo, inside.ahi) : std::string("none")));
    if (B > 1)
        lines.push_back(fmt::format("between boxes: {} per processor, {}; {}", degree_text(fabric.degree),
                                    fabric.channels ? speeds_text(fabric.blo, fabric.bhi, fabric.alo, fabric.ahi) : std::string("none"),
                                    fabric.same_index_only ? "rails: each processor reaches the processors of the same index in other boxes"
                                                           : "each processor reaches processors of other boxes at any index"));
    if (topo.routers() > 0) lines.push_back(fmt::format("{} routers, {} channels to or from routers", topo.routers(), to_routers));
    // switches that reduce or multicast (NVLS, SHARP), counted by what they do
    std::map<std::string, std::uint32_t> functions;
    for (std::uint32_t r = topo.processors(); r < topo.nodes(); ++r) {
        const SwitchFunctions f = topo.switch_functions(Node{r});
        if (!f.reduce && !f.multicast) continue;
        ++functions[fmt::format("{}{}{}{}", f.reduce ? "reduce" : "", f.reduce && f.multicast ? " and multicast" : "",
                                !f.reduce ? "multicast" : "", f.efficiency < 1 ? fmt::format(" at {:g} of their ports' bandwidth", f.efficiency) : "")];
    }
    for (const auto& [what, n] : functions) lines.push_back(fmt::format("{} switch{} {} in the network (NVLS, SHARP)", n, n == 1 ? "" : "es", what));
    for (const auto& [name, k] : kinds)
        lines.push_back(fmt::format("link groups {}: {} of them, {} chunk{} per step each, {}", name, k.count, k.cap, k.cap == 1 ? "" : "s",
                                    support::format_bandwidth(k.bandwidth)));
    return lines;
}

std::string machine_svg(const Topology& topo) {
    using support::xml_escape;
    const std::uint32_t P = topo.processors();
    const double fastest = fastest_processor_channel(topo);
    const std::vector<std::uint32_t> box = processor_components(topo, fastest / 4);
    const std::uint32_t B = P == 0 ? 0 : *std::max_element(box.begin(), box.end()) + 1;
    std::vector<std::vector<std::uint32_t>> members(B);
    for (std::uint32_t p = 0; p < P; ++p) members[box[p]].push_back(p);
    std::size_t largest = 0;
    for (const auto& m : members) largest = std::max(largest, m.size());

    // Layout: up to 16 boxes a row; detailed boxes (their processors drawn) up to 32 boxes of
    // at most 16 processors, compact ones (number and count) beyond.
    // At most max_tiles tiles (16 rows of 16): past that, the first max_tiles - 1 boxes and one tile
    // for the rest (a 16,384-box machine was a 4.9 MB page 51,410 px high).
    const bool detailed = B <= 32 && largest <= 16;
    const std::uint32_t drawn = B > max_tiles ? max_tiles - 1 : B, tiles = B > max_tiles ? max_tiles : B;
    const std::uint32_t cols = std::max<std::uint32_t>(1, std::min<std::uint32_t>(tiles, tiles <= 4 ? tiles : tiles <= 64 ? 8 : 16));
    const std::uint32_t rows = (tiles + cols - 1) / std::max<std::uint32_t>(cols, 1);
    const double bw = detailed ? 150 : 58, bh = detailed ? 96 : 40, gapx = detailed ? 24 : 8, gapy = detailed ? 28 : 10;
    const double left = 24, top = 84;
    const double grid_w = cols * bw + (cols - 1) * gapx, grid_h = rows * bh + (rows - 1) * gapy;
    const std::vector<std::string> lines = summary_lines(topo, box, members);
    std::size_t longest = 0;
    for (const std::string& l : lines) longest = std::max<std::size_t>(longest, l.size());
    const double fabric_y = top + grid_h + 40, fabric_h = 24 + 16.0 * static_cast<double>(lines.size());
    const double W = std::max({left * 2 + grid_w, 24 + 6.4 * static_cast<double>(longest), 640.0});
    const double H = fabric_y + fabric_h + 24;

    std::string s = fmt::format(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0:.0f}\" height=\"{1:.0f}\" viewBox=\"0 0 {0:.0f} {1:.0f}\" "
        "font-family=\"DejaVu Sans, Helvetica, Arial, sans-serif\" font-size=\"11\">\n"
        "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n",
        W, H);
    s += fmt::format("<text x=\"{}\" y=\"26\" font-size=\"15\" font-weight=\"bold\">{}</text>\n", left, xml_escape(topo.spec()));
    s += fmt::format("<text x=\"{}\" y=\"46\">{} processors in {} box{} of {}{}{}</text>\n", left, P, B, B == 1 ? "" : "es",
                     largest == 0 ? 0 : largest, std::all_of(members.begin(), members.end(), [&](const auto& m) { return m.size() == largest; })
                                                     ? ""
                                                     : " or fewer",
                     drawn < B ? fmt::format(" (boxes 0 .. {} drawn, the other {} in the last tile)", drawn - 1, B - drawn) : "");
    s += fmt::format("<text x=\"{}\" y=\"62\" font-size=\"10\" fill=\"#555555\">a box: processors joined by channels of at least a quarter "
                     "of the fastest ({}); the fabric: the channels between boxes</text>\n",
                     left, support::format_bandwidth(fastest));
    // The fabric: a band under the boxes, a line from every box to it (up to 64 boxes), drawn first so
    // that the boxes cover them: a bus per column.
    s += fmt::format("<rect x=\"{}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{:.1f}\" rx=\"6\" fill=\"#fdf1e6\" stroke=\"#d95f02\"/>\n", left,
                     fabric_y, W - 2 * left, fabric_h);
    if (B > 1 && B <= 64)
        for (std::uint32_t b = 0; b < B; ++b) {
            const double x = left + (b % cols) * (bw + gapx) + bw / 2, y = top + (b / cols) * (bh + gapy) + bh;
            s += fmt::format("<line x1=\"{0:.1f}\" y1=\"{1:.1f}\" x2=\"{0:.1f}\" y2=\"{2:.1f}\" stroke=\"#d95f02\" stroke-opacity=\"0.35\"/>\n", x,
                             y, fabric_y);
        }
    s += "<g id=\"boxes\">\n";
    if (drawn < B) {
        const double x = left + (drawn % cols) * (bw + gapx), y = top + (drawn / cols) * (bh + gapy);
        s += fmt::format("<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{:.1f}\" rx=\"6\" fill=\"white\" stroke=\"#2171b5\" "
                         "stroke-dasharray=\"4 3\"><title>boxes {} .. {} (processors {} .. {}): not drawn</title></rect>\n",
                         x, y, bw, bh, drawn, B - 1, members[drawn].front(), P - 1);
        s += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\" font-size=\"9\">+{}</text>\n", x + bw / 2, y + 16, B - drawn);
        s += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\" font-size=\"9\" fill=\"#555555\">boxes</text>\n", x + bw / 2,
                         y + 30);
    }
    for (std::uint32_t b = 0; b < drawn; ++b) {
        const double x = left + (b % cols) * (bw + gapx), y = top + (b / cols) * (bh + gapy);
        const auto& m = members[b];
        s += fmt::format("<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{:.1f}\" rx=\"6\" fill=\"#eef3fb\" stroke=\"#2171b5\">"
                         "<title>box {}: processors {}{}</title></rect>\n",
                         x, y, bw, bh, b, m.front(), m.size() > 1 ? fmt::format(" .. {} ({})", m.back(), m.size()) : "");
        if (!detailed) {
            s += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\" font-size=\"10\">{}</text>\n", x + bw / 2, y + 16, b);
            s += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\" font-size=\"9\" fill=\"#555555\">{} P</text>\n", x + bw / 2,
                             y + 30, m.size());
            continue;
        }
        s += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" font-size=\"10\" font-weight=\"bold\">box {}</text>\n", x + 8, y + 15, b);
        const std::uint32_t per_row = m.size() <= 4 ? static_cast<std::uint32_t>(m.size()) : m.size() <= 8 ? 4 : 8;
        const double cell = per_row <= 4 ? 30 : 16;
        for (std::uint32_t i = 0; i < m.size(); ++i) {
            const double cx = x + 8 + (i % per_row) * (cell + 3), cy = y + 24 + (i / per_row) * (cell + 3);
            s += fmt::format("<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{:.1f}\" fill=\"#2171b5\"><title>{}</title></rect>\n", cx,
                             cy, cell, cell, xml_escape(topo.node_name(Node{m[i]})));
            s += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\" font-size=\"{}\" fill=\"white\">{}</text>\n", cx + cell / 2,
                             cy + cell / 2 + 3.5, cell >= 30 ? 10 : 7, m[i]);
        }
    }
    s += "</g>\n";
    s += "<g id=\"summary\">\n";
    for (std::size_t i = 0; i < lines.size(); ++i)
        s += fmt::format("<text x=\"{}\" y=\"{:.1f}\">{}</text>\n", left + 10, fabric_y + 20 + 16.0 * static_cast<double>(i), xml_escape(lines[i]));
    s += "</g>\n</svg>\n";
    return s;
}

}  // namespace collsched
