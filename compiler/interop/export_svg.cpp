#include "compiler/interop/export_svg.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <unordered_map>

#include "support/assert.hpp"
#include "support/error.hpp"
#include "support/text.hpp"

namespace collsched {

namespace {

constexpr std::size_t svg_flush_at = 1 << 20;
constexpr std::uint64_t max_cells = 4'000'000;
constexpr const char* idle_colour = "#eeeeee";
constexpr const char* shade[4] = {"#c6dbef", "#6baed6", "#2171b5", "#08306b"};
constexpr const char* over_colour = "#d62728";
constexpr const char* shade_label[4] = {"up to 1/4", "up to 1/2", "up to 3/4", "full"};

const char* colour(std::uint32_t load, std::uint32_t cap) {
    if (load == 0) return idle_colour;
    if (load > cap) return over_colour;
    int b = static_cast<int>(std::ceil(4.0 * load / cap)) - 1;
    return shade[std::clamp(b, 0, 3)];
}

/// How much a link group carries: its largest load in one step (the first such step, with its
/// rounds) and whether some step puts more on it than cap * rounds (docs/semantics.md, "Link
/// groups"). The DOT and SVG drawings label every group with it.
struct GroupUse {
    std::uint64_t peak = 0;
    Step step = 0;
    std::uint32_t rounds = 1, cap = 1;
    bool over = false;
    std::string text() const {
        if (peak == 0) return "idle";
        return fmt::format("peak {} in step {}{}{}", peak, step, rounds > 1 ? fmt::format(" ({} rounds: {} allowed)", rounds, cap * rounds) : "",
                           over ? ", over capacity" : "");
    }
};

std::vector<GroupUse> group_use(const SendTable& t) {
    const auto& groups = t.topology->groups();
    std::vector<GroupUse> use(groups.size());
    std::vector<std::uint64_t> load(groups.size(), 0);
    for (std::size_t g = 0; g < groups.size(); ++g) use[g].cap = groups[g].cap;
    for (std::size_t i = 0; i < t.transfers.size();) {  // sorted by step
        std::size_t j = i;
        std::fill(load.begin(), load.end(), 0);
        for (; j < t.transfers.size() && t.transfers[j].step == t.transfers[i].step; ++j)
            for (std::uint32_t g : t.topology->groups_of(t.transfers[j].channel)) ++load[g];
        const Step s = t.transfers[i].step;
        const std::uint32_t r = t.rounds(s);
        for (std::size_t g = 0; g < groups.size(); ++g) {
            if (load[g] > use[g].peak) use[g] = {load[g], s, r, groups[g].cap, use[g].over};
            if (load[g] > std::uint64_t{groups[g].cap} * r) use[g].over = true;
        }
        i = j;
    }
    return use;
}


std::string model_text(const Model& m) {
    std::string s = fmt::format("{}, ports={}, queues={}, replicate={}", to_string(m.timing), to_string(m.ports),
                                queues_to_string(m), m.replicate ? "yes" : "no");
    return s;
}

/// The most router-link rows `auto` draws for a fat tree too large for all its channels
/// (ebft:64 has 124; ebft:128 has 252, drawn with processors instead).
constexpr std::size_t max_router_rows = 128;

/// What the timeline draws: rows, their capacities and per (row, step) loads.
struct Grid {
    bool processors = false;
    std::uint32_t rows = 0;
    Step steps = 0;
    std::vector<std::string> labels;
    std::vector<std::uint32_t> cap;          ///< channel view: per row, the channel's capacity per round
    std::vector<std::uint32_t> load, load2;  ///< rows * steps; load2: processors' receives
    struct Group {
        std::uint32_t first, count;
        std::string label;
    };
    std::vector<Group> groups;
    /// Processor view: per cell, the fullest resource the processor's sends (receives) of the
    /// step use: a channel, a link group of one of its channels, or its port; its load against its
    /// capacity times the step's rounds. The cell's colour is this use (what limits the step).
    struct Use {
        std::uint32_t load = 0, cap = 1;
        std::int64_t resource = -1;  ///< a channel (>= 0), a group (-2 - g), the port (-1)
        bool fuller_than(const Use& o) const { return std::uint64_t{load} * o.cap > std::uint64_t{o.load} * cap; }
    };
    std::vector<Use> full, full2;
    std::unordered_map<std::uint64_t, std::vector<MessageId>> msgs, msgs2;  ///< titles only
    std::uint64_t cell(std::uint32_t row, Step s) const { return std::uint64_t{row} * steps + (s - 1); }
};

std::string arrow(const Topology& t, const Channel& c) { return fmt::format("{}\u2192{}", t.node_name(c.from), t.node_name(c.to)); }

/// The processor view's colours: for every processor and step, the fullest resource its sends
/// and its receives use (Grid::Use). Channels and groups are counted per step from the table; a
/// port (ports=single: one send and one receive per round; half: one of either) from the cells.
void fill_fullest(const SendTable& t, Grid& g) {
    const Topology& topo = *t.topology;
    g.full.assign(g.load.size(), {});
    g.full2.assign(g.load.size(), {});
    std::vector<std::uint32_t> by_step(t.transfers.size());
    for (std::uint32_t j = 0; j < by_step.size(); ++j) by_step[j] = j;
    std::stable_sort(by_step.begin(), by_step.end(), [&](std::uint32_t a, std::uint32_t b) { return t.transfers[a].step < t.transfers[b].step; });
    std::unordered_map<std::uint32_t, std::uint32_t> chan, group;
    auto raise = [](Grid::Use& at, Grid::Use u) {
        if (at.load == 0 || u.fuller_than(at)) at = u;
    };
    for (std::size_t lo = 0; lo < by_step.size();) {
        const Step s = t.transfers[by_step[lo]].step;
        std::size_t hi = lo;
        chan.clear();
        group.clear();
        for (; hi < by_step.size() && t.transfers[by_step[hi]].step == s; ++hi) {
            const ChannelId c = t.transfers[by_step[hi]].channel;
            ++chan[idx(c)];
            for (std::uint32_t k : topo.groups_of(c)) ++group[k];
        }
        lo = hi;
        if (s < 1 || s > g.steps) continue;
        const std::uint32_t r = t.rounds(s);
        for (auto [ci, load] : chan) {
            const Channel& c = topo.channel(ChannelId{ci});
            Grid::Use u{load, c.cap * r, ci};
            for (std::uint32_t k : topo.groups_of(ChannelId{ci})) {
                Grid::Use v{group[k], topo.groups()[k].cap * r, -2 - static_cast<std::int64_t>(k)};
                if (v.fuller_than(u)) u = v;
            }
            if (topo.is_processor(c.from)) raise(g.full[g.cell(idx(c.from), s)], u);
            if (topo.is_processor(c.to)) raise(g.full2[g.cell(idx(c.to), s)], u);
        }
    }
    if (t.model.ports == Ports::multi) return;
    for (std::uint64_t cell = 0; cell < g.load.size(); ++cell) {
        const Step s = static_cast<Step>(cell % g.steps) + 1;
        const std::uint32_t r = t.rounds(s);
        const bool half = t.model.ports == Ports::half;
        const std::uint32_t out = half ? g.load[cell] + g.load2[cell] : g.load[cell], in = half ? out : g.load2[cell];
        if (g.load[cell]) raise(g.full[cell], {out, r, -1});
        if (g.load2[cell]) raise(g.full2[cell], {in, r, -1});
    }
}

Grid build_grid(const SendTable& t, const TimelineOptions& opt) {
    const Topology& topo = *t.topology;
    Grid g;
    g.steps = std::max<Step>(t.steps(), 1);
    TimelineRows rows = opt.rows;
    // Router links: the channels between routers of a fat tree (branch levels 2 and up).
    std::size_t router_links = 0;
    if (topo.is_tree())
        for (const Channel& c : topo.channels()) router_links += c.level >= 2;
    if (rows == TimelineRows::automatic)
        rows = topo.channels().size() <= 128                  ? TimelineRows::channels
               : topo.is_tree() && router_links <= max_router_rows ? TimelineRows::routers
                                                                  : TimelineRows::processors;
    if (rows == TimelineRows::routers && !topo.is_tree())
        throw InputError(fmt::format("--rows routers draws the router links of a fat tree; {} is not one", topo.spec()));
    const bool routers_only = rows == TimelineRows::routers;
    g.processors = rows == TimelineRows::processors;
    std::vector<std::uint32_t> row_of(topo.channels().size(), 0);
    if (!g.processors) {
        std::vector<ChannelId> order;
        auto add_group = [&](std::vector<ChannelId> list, std::string label) {
            if (list.empty()) return;
            std::uint32_t lo = ~0u, hi = 0;
            for (ChannelId c : list) {
                lo = std::min(lo, topo.channel(c).cap);
                hi = std::max(hi, topo.channel(c).cap);
            }
            label += lo == hi ? fmt::format(" \u00b7 cap {}", lo) : fmt::format(" \u00b7 cap {}\u2013{}", lo, hi);
            g.groups.push_back({static_cast<std::uint32_t>(order.size()), static_cast<std::uint32_t>(list.size()), label});
            order.insert(order.end(), list.begin(), list.end());
        };
        if (topo.is_tree()) {
            const std::uint32_t L = topo.tree_levels();
            std::vector<std::vector<ChannelId>> up(L + 1), down(L + 1);
            for (std::uint32_t i = 0; i < topo.channels().size(); ++i) {
                const Channel& c = topo.channel(ChannelId{i});
                if (routers_only && c.level < 2) continue;
                if (topo.level(c.from) < topo.level(c.to)) up[c.level].push_back(ChannelId{i});
                else down[c.level].push_back(ChannelId{i});
            }
            auto by = [&](bool from) {
                return [&, from](ChannelId a, ChannelId b) {
                    const Channel &x = topo.channel(a), &y = topo.channel(b);
                    return from ? idx(x.from) < idx(y.from) : idx(x.to) < idx(y.to);
                };
            };
            for (std::uint32_t l = 1; l <= L; ++l) {
                std::sort(up[l].begin(), up[l].end(), by(true));
                add_group(up[l], fmt::format("up {}", l));
            }
            for (std::uint32_t l = L; l >= 1; --l) {
                std::sort(down[l].begin(), down[l].end(), by(false));
                add_group(down[l], fmt::format("down {}", l));
            }
        } else {
            for (std::uint32_t i = 0; i < topo.channels().size(); ++i) order.push_back(ChannelId{i});
        }
        g.rows = static_cast<std::uint32_t>(order.size());
        for (std::uint32_t r = 0; r < g.rows; ++r) {
            const Channel& c = topo.channel(order[r]);
            row_of[idx(order[r])] = r;
            g.labels.push_back(arrow(topo, c));
            g.cap.push_back(c.cap);
        }
    } else {
        g.rows = topo.processors();
        for (std::uint32_t p = 0; p < g.rows; ++p) g.labels.push_back(fmt::format("P{}", p));
    }
    if (std::uint64_t{g.rows} * g.steps > max_cells)
        throw InputError(fmt::format("the timeline would have {} rows x {} steps, more than {} cells; draw a smaller instance", g.rows,
                                     g.steps, max_cells));
    g.load.assign(std::uint64_t{g.rows} * g.steps, 0);
    if (g.processors) g.load2.assign(g.load.size(), 0);
    for (const Transfer& x : t.transfers) {
        const Channel& c = topo.channel(x.channel);
        if (!g.processors) {
            std::uint64_t cell = g.cell(row_of[idx(x.channel)], x.step);
            ++g.load[cell];
            if (opt.titles) g.msgs[cell].push_back(x.message);
            continue;
        }
        if (topo.is_processor(c.from)) {
            std::uint64_t cell = g.cell(idx(c.from), x.step);
            ++g.load[cell];
            if (opt.titles) g.msgs[cell].push_back(x.message);
        }
        if (topo.is_processor(c.to)) {
            std::uint64_t cell = g.cell(idx(c.to), x.step);
            ++g.load2[cell];
            if (opt.titles) g.msgs2[cell].push_back(x.message);
        }
    }
    if (g.processors) fill_fullest(t, g);
    return g;
}

/// Writes the timeline; `html` adds a class and a <title> to every cell for the page's script.
/// The SVG (and HTML) timeline of a table, one method per part of the picture, in the order
/// write() draws them: the layout, the link groups' lines, the header, the step axis, the
/// group labels, the rows and cells (with their titles), the legend.
class SvgWriter {
public:
    SvgWriter(const SendTable& t, const TimelineOptions& opt, bool html, fmt::memory_buffer& out, const Flush& flush)
        : t_(t), opt_(opt), html_(html), out_(out), flush_(flush), g_(build_grid(t, opt)), titles_(opt.titles || html), ms_(t.messages()) {}

    void write() {
        layout();
        link_group_lines();
        size();
        header();
        step_axis();
        group_labels();
        rows();
        legend();
        flush_(out_);
    }

private:
    void layout() {
        T_ = g_.steps;
        cw_ = std::clamp(static_cast<int>(1100 / T_), 3, 22);
        rh_ = g_.processors ? (g_.rows <= 40 ? 18 : g_.rows <= 80 ? 12 : 10)
                                    : (g_.rows <= 40 ? 16 : g_.rows <= 80 ? 12 : g_.rows <= 140 ? 10 : 8);
        font_ = std::clamp(rh_ - 3, 7, 11);
        every_row_ = rh_ >= 9 ? 1 : 2;
        gap_ = cw_ >= 6 ? 1 : 0;
        std::size_t longest = 0;
        for (const auto& l : g_.labels) longest = std::max(longest, l.size());
        left_ = static_cast<int>(longest * font_ * 0.62) + 14;
        top_ = 70;
        group_gap_ = g_.groups.empty() ? 0 : 5;
        right_ = g_.groups.empty() ? 16 : 110;
        y_.resize(g_.rows + 1);
        {
            int at = top_;
            std::size_t gi = 0;
            for (std::uint32_t r = 0; r <= g_.rows; ++r) {
                if (gi < g_.groups.size() && g_.groups[gi].first == r && r > 0) at += group_gap_;
                if (gi < g_.groups.size() && g_.groups[gi].first == r) ++gi;
                y_[r] = at;
                at += rh_;
            }
        }
        grid_w_ = static_cast<int>(T_) * cw_;
        grid_bottom_ = y_[g_.rows];
        legend_y_ = grid_bottom_ + 26;
        width_of_grid_ = std::max(left_ + grid_w_ + right_, 660);
    }

    void link_group_lines() {
        // link groups, one line each under the legend: name, shared capacity, channels, peak load
        if (const auto& groups = t_.topology->groups(); !groups.empty()) {
            const std::vector<GroupUse> use = group_use(t_);
            constexpr std::size_t max_lines = 24, max_channels = 8;
            for (std::size_t k = 0; k < groups.size() && k < max_lines; ++k) {
                std::string chans;
                for (std::size_t c = 0; c < groups[k].channels.size() && c < max_channels; ++c) {
                    const Channel& ch = t_.topology->channel(groups[k].channels[c]);
                    chans += fmt::format("{}{}", c ? ", " : "", arrow(*t_.topology, ch));
                }
                if (groups[k].channels.size() > max_channels) chans += fmt::format(" and {} more", groups[k].channels.size() - max_channels);
                group_lines_.push_back(fmt::format("group {}: cap {} per step over {} channel{} ({}) \u00b7 {}", groups[k].name, groups[k].cap,
                                                  groups[k].channels.size(), groups[k].channels.size() == 1 ? "" : "s", chans, use[k].text()));
            }
            if (groups.size() > max_lines) group_lines_.push_back(fmt::format("and {} more groups", groups.size() - max_lines));
        }
    }

    void size() {
        height_ = legend_y_ + 44 + (group_lines_.empty() ? 0 : 14 * static_cast<int>(group_lines_.size() + 1));
        // the group lines (10 px type, about 6 px a character) widen the picture rather than run off it
        std::size_t longest_line = 0;
        for (const std::string& l : group_lines_)  // characters, not bytes: the arrows are 3 bytes of UTF-8
            longest_line = std::max<std::size_t>(longest_line, std::count_if(l.begin(), l.end(), [](char c) { return (c & 0xC0) != 0x80; }));
        width_ = std::max(width_of_grid_, 16 + 6 * static_cast<int>(longest_line));
    }

    void header() {
        fmt::format_to(it_,
                       "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" height=\"{1}\" viewBox=\"0 0 {0} {1}\" "
                       "font-family=\"DejaVu Sans, Helvetica, Arial, sans-serif\" font-size=\"{2}\">\n",
                       width_, height_, font_);
        fmt::format_to(it_, "<rect width=\"100%\" height=\"100%\" fill=\"#ffffff\"/>\n");
        fmt::format_to(it_, "<text x=\"{}\" y=\"18\" font-size=\"14\" font-weight=\"bold\">{} \u00b7 {} \u00b7 {} steps \u00b7 {} transfers</text>\n",
                       8, support::xml_escape(t_.topology->spec()), support::xml_escape(t_.collective.to_string()), t_.steps(), t_.transfers.size());
        fmt::format_to(it_, "<text x=\"8\" y=\"32\" font-size=\"10\" fill=\"#555555\">model: {}</text>\n", support::xml_escape(model_text(t_.model)));
        fmt::format_to(it_, "<text x=\"8\" y=\"45\" font-size=\"10\" fill=\"#555555\">rows: {} \u00b7 cell colour: load in the step against capacity</text>\n",
                       g_.processors ? "processors (upper half sends, lower half receives; the fullest channel, link group or port they use)"
                                    : t_.topology->is_tree() ? "channels, up the tree level by level, then down" : "channels");
    }

    void step_axis() {
        // step axis
        int label_every = 1;
        for (int k : {1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000}) {
            label_every = k;
            if (k * cw_ >= 22) break;
        }
        fmt::format_to(it_, "<g id=\"steps\" font-size=\"9\" fill=\"#333333\" text-anchor=\"middle\">\n");
        fmt::format_to(it_, "<text x=\"{}\" y=\"{}\" text-anchor=\"end\">step</text>\n", left_ - 4, top_ - 6);
        for (Step s = 1; s <= T_; ++s)
            if ((s == 1 && label_every != 2) || s % label_every == 0)
                fmt::format_to(it_, "<text x=\"{}\" y=\"{}\">{}</text>\n", left_ + (s - 1) * cw_ + cw_ / 2.0, top_ - 6, s);
        fmt::format_to(it_, "</g>\n");
    }

    void group_labels() {
        // group labels
        if (!g_.groups.empty()) {
            fmt::format_to(it_, "<g id=\"groups\" font-size=\"10\" fill=\"#333333\">\n");
            for (const auto& gr : g_.groups) {
                int y0 = y_[gr.first], y1 = y_[gr.first + gr.count - 1] + rh_;
                int x = left_ + grid_w_ + 6;
                fmt::format_to(it_, "<line x1=\"{0}\" y1=\"{1}\" x2=\"{0}\" y2=\"{2}\" stroke=\"#999999\"/>\n", x, y0 + 1, y1 - 1);
                fmt::format_to(it_, "<text x=\"{}\" y=\"{}\">{}</text>\n", x + 5, (y0 + y1) / 2 + 4, support::xml_escape(gr.label));
            }
            fmt::format_to(it_, "</g>\n");
        }
    }

    /// A cell's title: what it carries against its capacity, and the messages.
    std::string title(std::string_view what, std::uint32_t load, std::uint32_t cap, Step s, std::string_view row,
                     const std::unordered_map<std::uint64_t, std::vector<MessageId>>& msgs, std::uint64_t cell) {
        std::string text = fmt::format("step {} \u00b7 {} \u00b7 ", s, row);
        if (load == 0) {
            text += fmt::format("{}idle", what);
        } else {
            text += fmt::format("{}{}/{}", what, load, cap);
            if (load > cap) text += " OVER CAPACITY";
            if (auto m = msgs.find(cell); m != msgs.end()) {
                text += ": ";
                for (std::size_t i = 0; i < m->second.size() && i < 12; ++i) {
                    if (i) text += ", ";
                    text += ms_.name(m->second[i]);
                }
                if (m->second.size() > 12) text += fmt::format(" and {} more", m->second.size() - 12);
            }
        }
        return fmt::format("<title>{}</title>", support::xml_escape(text));
    }
    // a processor cell's title: its transfers and the fullest resource they use
    std::string use_title(std::string_view what, std::uint32_t count, const Grid::Use& u, Step s, std::string_view row,
                         const std::unordered_map<std::uint64_t, std::vector<MessageId>>& msgs, std::uint64_t cell) {
        if (count == 0) return title(std::string(what) + " ", 0, 1, s, row, msgs, cell);
        const std::string resource =
            u.resource >= 0 ? "channel " + arrow(*t_.topology, t_.topology->channel(ChannelId{static_cast<std::uint32_t>(u.resource)}))
            : u.resource == -1 ? std::string("port")
                               : "group " + t_.topology->groups()[static_cast<std::size_t>(-2 - u.resource)].name;
        return title(fmt::format("{} {} \u00b7 fullest: {} ", what, count, resource), u.load, u.cap, s, row, msgs, cell);
    }

    void rows() {
        // rows
        fmt::format_to(it_, "<g id=\"rows\" text-anchor=\"end\" fill=\"#222222\">\n");
        for (std::uint32_t r = 0; r < g_.rows; r += every_row_)
            fmt::format_to(it_, "<text x=\"{}\" y=\"{}\">{}</text>\n", left_ - 4, y_[r] + rh_ / 2.0 + font_ * 0.36, support::xml_escape(g_.labels[r]));
        fmt::format_to(it_, "</g>\n<g id=\"cells\">\n");
        const char* cls = html_ ? " class=\"c\"" : "";
        for (std::uint32_t r = 0; r < g_.rows; ++r) {
            for (Step s = 1; s <= T_; ++s) {
                std::uint64_t cell = g_.cell(r, s);
                int x = left_ + static_cast<int>(s - 1) * cw_;
                if (!g_.processors) {
                    std::uint32_t load = g_.load[cell], cap = g_.cap[r] * t_.rounds(s);  // a step of r rounds: r times the capacity
                    fmt::format_to(it_, "<rect{} x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{}\"", cls, x, y_[r], cw_ - gap_, rh_ - gap_,
                                   colour(load, cap));
                    if (titles_) fmt::format_to(it_, ">{}</rect>\n", title("", load, cap, s, g_.labels[r], g_.msgs, cell));
                    else fmt::format_to(it_, "/>\n");
                } else {
                    int h1 = rh_ / 2 - (rh_ >= 10 ? 1 : 0), h2 = rh_ - rh_ / 2 - gap_;
                    const Grid::Use su = g_.full[cell], ru = g_.full2[cell];
                    fmt::format_to(it_, "<rect{} x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{}\"", cls, x, y_[r], cw_ - gap_, h1,
                                   colour(su.load, su.cap));
                    if (titles_) fmt::format_to(it_, ">{}</rect>\n", use_title("sends", g_.load[cell], su, s, g_.labels[r], g_.msgs, cell));
                    else fmt::format_to(it_, "/>\n");
                    fmt::format_to(it_, "<rect{} x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{}\"", cls, x, y_[r] + rh_ / 2, cw_ - gap_,
                                   std::max(h2, 1), colour(ru.load, ru.cap));
                    if (titles_) fmt::format_to(it_, ">{}</rect>\n", use_title("receives", g_.load2[cell], ru, s, g_.labels[r], g_.msgs2, cell));
                    else fmt::format_to(it_, "/>\n");
                }
            }
            if (out_.size() > svg_flush_at) flush_(out_);
        }
        fmt::format_to(it_, "</g>\n");
    }

    void legend() {
        // legend
        fmt::format_to(it_, "<g id=\"legend\" font-size=\"10\" fill=\"#333333\">\n<text x=\"8\" y=\"{}\">load / capacity:</text>\n", legend_y_ + 11);
        int lx = 100;
        auto swatch = [&](const char* fill, std::string_view label) {
            fmt::format_to(it_, "<rect x=\"{}\" y=\"{}\" width=\"12\" height=\"12\" fill=\"{}\" stroke=\"#bbbbbb\" stroke-width=\"0.5\"/>\n", lx,
                           legend_y_ + 1, fill);
            fmt::format_to(it_, "<text x=\"{}\" y=\"{}\">{}</text>\n", lx + 16, legend_y_ + 11, support::xml_escape(label));
            lx += 16 + static_cast<int>(label.size() * 6.2) + 14;
        };
        swatch(idle_colour, "idle (hole)");
        for (int b = 0; b < 4; ++b) swatch(shade[b], shade_label[b]);
        swatch(over_colour, "over capacity");
        fmt::format_to(it_, "<text x=\"8\" y=\"{}\" fill=\"#777777\">collsched \u00b7 steps across, {} down</text>\n</g>\n",
                       legend_y_ + 32, g_.processors ? "processors" : "channels");
        if (!group_lines_.empty()) {
            fmt::format_to(it_, "<g id=\"link-groups\" font-size=\"10\" fill=\"#333333\">\n<text x=\"8\" y=\"{}\" font-weight=\"bold\">link "
                               "groups (channels sharing one capacity per step, times the step's rounds):</text>\n",
                           legend_y_ + 50);
            for (std::size_t k = 0; k < group_lines_.size(); ++k)
                fmt::format_to(it_, "<text x=\"8\" y=\"{}\"{}>{}</text>\n", legend_y_ + 64 + 14 * static_cast<int>(k),
                               group_lines_[k].find("over capacity") != std::string::npos ? fmt::format(" fill=\"{}\"", over_colour) : "",
                               support::xml_escape(group_lines_[k]));
            fmt::format_to(it_, "</g>\n");
        }
        fmt::format_to(it_, "</svg>\n");
    }

    const SendTable& t_;
    const TimelineOptions& opt_;
    const bool html_;
    fmt::memory_buffer& out_;
    const Flush& flush_;
    const Grid g_;
    const bool titles_;
    const Messages ms_;
    std::back_insert_iterator<fmt::memory_buffer> it_ = std::back_inserter(out_);
    Step T_ = 0;  ///< the layout: steps, cell width, row height, font, margins, and where the grid ends
    int cw_ = 0, rh_ = 0, font_ = 0, every_row_ = 0, gap_ = 0, left_ = 0, top_ = 0, group_gap_ = 0, right_ = 0;
    int grid_w_ = 0, grid_bottom_ = 0, legend_y_ = 0, width_of_grid_ = 0, height_ = 0, width_ = 0;
    std::vector<int> y_;                    ///< the top of every row, and the bottom of the last
    std::vector<std::string> group_lines_;  ///< link groups, one line each under the legend
};

void write_svg(const SendTable& t, const TimelineOptions& opt, bool html, fmt::memory_buffer& out, const Flush& flush) {
    SvgWriter(t, opt, html, out, flush).write();
}

}  // namespace

TimelineRows parse_timeline_rows(std::string_view s) {
    if (s == "auto") return TimelineRows::automatic;
    if (s == "channels") return TimelineRows::channels;
    if (s == "processors") return TimelineRows::processors;
    if (s == "routers") return TimelineRows::routers;
    throw InputError(fmt::format("unknown timeline rows '{}' (expected auto, channels, routers or processors)", s));
}

void write_table_svg(const SendTable& t, const TimelineOptions& opt, fmt::memory_buffer& out, const Flush& flush) {
    write_svg(t, opt, false, out, flush);
}

void write_table_html(const SendTable& t, const TimelineOptions& opt, fmt::memory_buffer& out, const Flush& flush) {
    auto it = std::back_inserter(out);
    std::string head = fmt::format("{} \u00b7 {} \u00b7 {} steps", t.topology->spec(), t.collective.to_string(), t.steps());
    fmt::format_to(it,
                   "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>collsched timeline: {0}</title>\n"
                   "<style>\nbody {{ font-family: DejaVu Sans, Helvetica, Arial, sans-serif; margin: 16px; }}\n"
                   "#info {{ position: sticky; top: 0; background: #ffffff; border: 1px solid #cccccc; padding: 6px 10px; "
                   "min-height: 1.3em; font-family: monospace; white-space: pre-wrap; }}\n"
                   "rect.c:hover {{ stroke: #000000; stroke-width: 1.5; }}\n</style>\n</head>\n<body>\n"
                   "<h1 style=\"font-size: 18px\">{0}</h1>\n"
                   "<p>{1} transfers, model {2}. Each cell is one step of one {3}; its colour is the load against the capacity. "
                   "Hover over a cell for its messages.</p>\n"
                   "<div id=\"info\">Hover over a cell.</div>\n",
                   support::xml_escape(head), t.transfers.size(), support::xml_escape(model_text(t.model)),
                   (opt.rows == TimelineRows::processors ||
                    (opt.rows == TimelineRows::automatic && t.topology->channels().size() > 128))
                       ? "processor"
                       : "channel");
    TimelineOptions o = opt;
    o.titles = true;
    write_svg(t, o, true, out, flush);
    fmt::format_to(it,
                   "<script>\n"
                   "const info = document.getElementById('info');\n"
                   "document.querySelector('svg').addEventListener('mouseover', (e) => {{\n"
                   "  const t = e.target.querySelector ? e.target.querySelector('title') : null;\n"
                   "  if (t) info.textContent = t.textContent;\n"
                   "}});\n"
                   "</script>\n</body>\n</html>\n");
    flush(out);
}

void write_table_dot(const SendTable& t, fmt::memory_buffer& out, const Flush& flush) {
    const Topology& topo = *t.topology;
    const std::size_t C = topo.channels().size();
    std::vector<std::uint64_t> total(C, 0);
    std::vector<std::uint32_t> peak(C, 0);
    if (t.is_sorted()) {
        std::size_t i = 0;
        while (i < t.transfers.size()) {
            std::size_t j = i;
            while (j < t.transfers.size() && t.transfers[j].step == t.transfers[i].step && t.transfers[j].channel == t.transfers[i].channel) ++j;
            std::uint32_t c = idx(t.transfers[i].channel);
            total[c] += j - i;
            peak[c] = std::max<std::uint32_t>(peak[c], static_cast<std::uint32_t>(j - i));
            i = j;
        }
    } else {
        std::map<std::pair<Step, std::uint32_t>, std::uint32_t> per;
        for (const Transfer& x : t.transfers) ++per[{x.step, idx(x.channel)}];
        for (auto& [k, n] : per) {
            total[k.second] += n;
            peak[k.second] = std::max(peak[k.second], n);
        }
    }
    auto it = std::back_inserter(out);
    auto q = [&](Node n) { return fmt::format("\"{}\"", support::xml_escape(topo.node_name(n))); };
    fmt::format_to(it, "digraph \"{}\" {{\n", support::xml_escape(topo.spec()));
    fmt::format_to(it,
                   "  label=\"{} \u00b7 {} \u00b7 {} steps \u00b7 {} transfers\\nedge label: capacity per step; messages carried "
                   "each way (from\u2192to) over the whole schedule; colour: peak load / capacity\";\n  labelloc=t;\n",
                   support::xml_escape(topo.spec()), support::xml_escape(t.collective.to_string()), t.steps(), t.transfers.size());
    fmt::format_to(it, "  fontname=\"Helvetica\";\n  node [fontname=\"Helvetica\", fontsize=10, shape=circle, width=0.3];\n"
                       "  edge [fontname=\"Helvetica\", fontsize=8, arrowsize=0.5];\n");
    for (std::uint32_t v = 0; v < topo.nodes(); ++v)
        fmt::format_to(it, "  {} [shape={}];\n", q(Node{v}), topo.is_processor(Node{v}) ? "box" : "circle");
    if (topo.is_tree()) {
        for (std::uint32_t l = 0; l <= topo.tree_levels(); ++l) {
            fmt::format_to(it, "  {{ rank=same;");
            for (std::uint32_t v = 0; v < topo.nodes(); ++v)
                if (topo.level(Node{v}) == l) fmt::format_to(it, " {};", q(Node{v}));
            fmt::format_to(it, " }}\n");
        }
    }
    for (std::uint32_t i = 0; i < C; ++i) {
        const Channel& c = topo.channel(ChannelId{i});
        auto back = topo.find_channel(c.to, c.from);
        // One edge per link, drawn from the parent (trees) or the lower node id.
        bool lead = topo.is_tree() ? topo.level(c.from) > topo.level(c.to) : idx(c.from) < idx(c.to);
        if (back && !lead) continue;
        std::uint32_t b = back ? idx(*back) : i;
        std::uint32_t cap_back = back ? topo.channel(*back).cap : 0;
        std::string label = !back ? fmt::format("cap {}", c.cap)
                            : c.cap == cap_back ? fmt::format("cap {}", c.cap)
                                                : fmt::format("cap {}/{}", c.cap, cap_back);
        if (!t.transfers.empty()) {
            // Which way each count goes, by name: "r2.0→r1.0 4, r1.0→r2.0 4".
            label += back ? fmt::format("\\n{} {}, {} {}", support::xml_escape(arrow(topo, c)), total[i], support::xml_escape(arrow(topo, topo.channel(*back))), total[b])
                          : fmt::format("\\n{} msgs", total[i]);
        }
        double ratio = std::max(c.cap ? double(peak[i]) / c.cap : 0.0, back && cap_back ? double(peak[b]) / cap_back : 0.0);
        std::uint32_t over = (peak[i] > c.cap || (back && peak[b] > cap_back)) ? 1 : 0;
        const char* col = over ? over_colour : ratio == 0 ? "#999999" : shade[std::clamp(int(std::ceil(4 * ratio)) - 1, 0, 3)];
        // link groups: the groups each direction belongs to, by name (their capacities are in the legend)
        auto group_names = [&](std::uint32_t ch) {
            std::string names;
            for (std::uint32_t g : topo.groups_of(ChannelId{ch})) names += (names.empty() ? "" : ", ") + support::xml_escape(topo.groups()[g].name);
            return names;
        };
        if (!topo.groups().empty()) {
            const std::string here = group_names(i), there = back ? group_names(b) : "";
            if (!here.empty()) label += fmt::format("\\n{} in {}", support::xml_escape(arrow(topo, c)), here);
            if (!there.empty()) label += fmt::format("\\n{} in {}", support::xml_escape(arrow(topo, topo.channel(*back))), there);
        }
        double width = 1.0 + std::log2(double(std::max(c.cap, cap_back)));
        fmt::format_to(it, "  {} -> {} [{}label=\"{}\", color=\"{}\", penwidth={:.1f}];\n", q(c.from), q(c.to),
                       back ? "dir=both, " : "", label, col, width);
        if (out.size() > svg_flush_at) flush(out);
    }
    // link groups: one legend entry per group with its shared capacity and, with transfers, its
    // peak load in a step against capacity * rounds (red when over, as the verifier would refuse it)
    if (const auto& groups = topo.groups(); !groups.empty()) {
        const std::vector<GroupUse> use = group_use(t);
        fmt::format_to(it, "  subgraph cluster_groups {{\n    label=\"link groups (channels sharing one capacity per step)\";\n"
                           "    fontsize=9;\n    node [shape=note, fontsize=8];\n");
        for (std::size_t g = 0; g < groups.size(); ++g) {
            std::string text = fmt::format("group {}: cap {} per step, {} channel{}", support::xml_escape(groups[g].name), groups[g].cap,
                                           groups[g].channels.size(), groups[g].channels.size() == 1 ? "" : "s");
            if (!t.transfers.empty()) text += "\\n" + support::xml_escape(use[g].text());
            fmt::format_to(it, "    \"group {}\" [label=\"{}\", color=\"{}\"];\n", support::xml_escape(groups[g].name), text,
                           use[g].over ? over_colour : "#555555");
        }
        fmt::format_to(it, "  }}\n");
    }
    fmt::format_to(it, "}}\n");
    flush(out);
}

std::string table_to_svg(const SendTable& t, const TimelineOptions& o) {
    return write_to_string([&](fmt::memory_buffer& b, const Flush& f) { write_table_svg(t, o, b, f); });
}
std::string table_to_html(const SendTable& t, const TimelineOptions& o) {
    return write_to_string([&](fmt::memory_buffer& b, const Flush& f) { write_table_html(t, o, b, f); });
}
std::string table_to_dot(const SendTable& t) {
    return write_to_string([&](fmt::memory_buffer& b, const Flush& f) { write_table_dot(t, b, f); });
}

}  // namespace collsched
