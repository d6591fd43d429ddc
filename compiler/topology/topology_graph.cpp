// Graph files (docs/topologies.md, "Graph files"): reading the JSON edge list, its link groups
// and speeds into a Topology.
#include "compiler/topology/topology.hpp"

#include <algorithm>
#include <bit>
#include <charconv>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <memory>
#include <ranges>
#include <tuple>
#include <utility>
#include <variant>
#include <vector>
#include <numeric>
#include <set>
#include <sstream>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "compiler/core/input_file.hpp"
#include "compiler/core/json_error.hpp"
#include "compiler/core/json_tree.hpp"
#include "compiler/topology/graph_head.hpp"
#include "compiler/topology/names.hpp"
#include "compiler/topology/topology_checks.hpp"
#include "compiler/topology/topology_impl.hpp"
#include "dsl/diagnostics.hpp"
#include "support/number.hpp"
#include "support/text.hpp"
#include "support/units.hpp"

namespace collsched {

namespace {

/// Largest graph file read: a graph has at most 4096 nodes, so at most 8,386,560 edges, which
/// take about 120 MB as JSON. The bound stops `graph:/dev/zero` before it fills the memory.
constexpr std::size_t max_graph_file_bytes = std::size_t{256} << 20;

std::string read_file_text(std::string_view spec, std::string_view file) {
    std::string text;
    std::string error = read_input_file(std::string(file), "graph file", max_graph_file_bytes,
                                        "a graph has at most 4096 nodes", text);
    if (!error.empty()) bad_spec(spec, fmt::format("graph file '{}': {}", file, error));
    return text;
}

}  // namespace

namespace detail {

/// Reads the speed fields of a graph file (docs/formats.md, "Units"): a bad value is refused with
/// the line and column of its text in the file. Not in the anonymous namespace: GraphFile, a
/// member of Topology, holds one (-Wsubobject-linkage under the unity build).
class SpeedReader {
public:
    SpeedReader(std::string_view file, std::string_view text) : file_(file), text_(text) {}
    double seconds(const nlohmann::json& v, std::string_view field) const {
        std::string why = "expected a time such as \"1.5 us\"";
        std::optional<double> x = v.is_string() ? support::parse_seconds(v.get<std::string>(), &why) : std::nullopt;
        if (!x) throw InputError(at(v, fmt::format("{}: bad latency {}: {}", field, v.dump(), why)));
        return *x;
    }
    double bandwidth(const nlohmann::json& v, std::string_view field) const {
        std::string why = "expected a bandwidth such as \"25 GB/s\"";
        std::optional<double> x = v.is_string() ? support::parse_bandwidth(v.get<std::string>(), &why) : std::nullopt;
        if (!x) throw InputError(at(v, fmt::format("{}: bad bandwidth {}: {}", field, v.dump(), why)));
        return *x;
    }
    /// "file:line:col: what", the place of the first occurrence of the value's JSON text (a speed
    /// is a string, rarely repeated wrong; "file: what" when it cannot be found).
    std::string at(const nlohmann::json& v, std::string_view what) const {
        const std::string needle = v.dump();
        std::size_t p = text_.find(needle);
        if (p == std::string_view::npos) return fmt::format("{}: {}", file_, what);
        SourceLoc loc = location_of(text_, p);
        return fmt::format("{}:{}:{}: {}", file_, loc.line, loc.column, what);
    }

private:
    std::string_view file_, text_;
};

}  // namespace detail

/// Reads one graph file into a new Topology: the header, the link types, the edges with their
/// speeds, then the groups. Graph file: {"processors": P, "routers": R (optional), "edges": [[u, v],
/// [u, v, cap], ...]} or edges as {"from": u, "to": v, "cap": c}; nodes are processor numbers or
/// router names "r1.<i>". Every edge is a bidirectional link (one channel each way), or one channel
/// from -> to with "one_way": true. Optional
/// "groups": [{"name", "cap", "channels": [[u, v], ...], "out_of": u, "into": v}, ...], each group
/// the union of its listed channels and all channels out of `out_of` and into `into`
/// (docs/topologies.md).
class Topology::Impl::GraphFile {
public:
    GraphFile(std::string_view spec, std::string_view file, const RunLimits& limits)
        : spec_(spec), file_(file), limits_(limits), reading_(fmt::format("reading {}", spec)), text_(read_file_text(spec, file)),
          j_(parse_json_document(file, text_, "JSON graph", &limits_)), speeds_(file, text_) {}
    GraphFile(const GraphFile&) = delete;
    GraphFile& operator=(const GraphFile&) = delete;
    /// The document of a large file is millions of small blocks (0.9 GB for 4,096 GPUs): freed
    /// on a background thread, whether the file was read or a limit or an error stopped it.
    ~GraphFile() {
        if (text_.size() > (std::size_t{4} << 20)) free_in_background(std::make_unique<nlohmann::json>(std::move(j_)));
    }

    std::shared_ptr<Topology> read() {
        header();
        link_types();
        for (const auto& e : j_["edges"]) {
            tick();
            edge(e);
        }
        finish_channels();
        if (j_.contains("groups")) groups();
        if (j_.contains("switches")) switches();
        next_hops(*t_, file_, limits_);
        return t_;
    }

private:
    std::string where(std::string_view what) const { return fmt::format("{}: {}", file_, what); }
    /// Polls the limits every 65,536 items (LimitReached: "time limit (reading graph:FILE)").
    void tick() {
        if ((++ticks_ & 0xffff) == 0) limits_.check(reading_);
    }

    /// A step of a JSON path: an object's key or an array's index.
    using PathStep = std::variant<std::string, std::size_t>;
    /// "file:line:col: what" at the value the path names (docs/errors.md, "JSON graph files"). The
    /// file is read with nlohmann, which keeps no places: only on an error is it read again by the
    /// reader that does (compiler/core/json_tree.hpp); "file: what" when the path does not lead there.
    std::string at(const std::vector<PathStep>& path, std::string_view what) const {
        try {
            const json_tree::Value root = json_tree::parse(text_, file_);
            const json_tree::Value* v = &root;
            for (const PathStep& step : path) {
                if (const auto* key = std::get_if<std::string>(&step)) v = v->kind == json_tree::Kind::object ? v->find(*key) : nullptr;
                else {
                    const std::size_t i = std::get<std::size_t>(step);
                    v = v->kind == json_tree::Kind::array && i < v->items.size() ? &v->items[i] : nullptr;
                }
                if (!v) return where(what);
            }
            return fmt::format("{}:{}:{}: {}", file_, v->line, v->col, what);
        } catch (const InputError&) {
            return where(what);
        }
    }

    void header() {
        const std::string shape = "expected {\"processors\": P, \"edges\": [[u, v], ...]} (optional \"routers\": R)";
        if (!j_.is_object() || !j_.contains("processors") || !j_.contains("edges")) throw InputError(where(shape));
        // each at its value: a "routers" that is no number used to end the run with an uncaught JSON type error (exit 134)
        for (const char* key : {"processors", "routers"})
            if (j_.contains(key) && !j_[key].is_number_unsigned())
                throw InputError(at({std::string(key)}, fmt::format("\"{}\" is {}, not a whole number; {}", key, j_[key].dump(), shape)));
        if (!j_["edges"].is_array()) throw InputError(at({"edges"}, "\"edges\" must be a list; " + shape));
        P_ = j_["processors"].get<std::uint64_t>();
        R_ = j_.value("routers", std::uint64_t{0});
        if (P_ < 1) throw InputError(at({"processors"}, "\"processors\" must be at least 1"));
        check_processors(spec_, P_);
        if (P_ + R_ > 4096)
            throw InputError(at({R_ > 4096 ? "routers" : "processors"}, fmt::format("{} nodes; graph topologies are limited to 4096 nodes", P_ + R_)));
        t_ = std::shared_ptr<Topology>(new Topology());
        t_->spec_ = std::string(spec_);
        t_->family_ = Family::graph;
        t_->processors_ = static_cast<std::uint32_t>(P_);
        t_->routers_ = static_cast<std::uint32_t>(R_);
        if (j_.contains("boxes")) {
            const auto& b = j_["boxes"];
            if (!b.is_number_unsigned() || b.get<std::uint64_t>() < 1 || P_ % b.get<std::uint64_t>() != 0)
                throw InputError(at({"boxes"}, fmt::format("\"boxes\" is {}: expected a whole number that divides the {} processors "
                                                           "(K boxes of P/K consecutive processors)", b.dump(), P_)));
            t_->boxes_ = static_cast<std::uint32_t>(b.get<std::uint64_t>());
        }
    }

    /// Link speeds (docs/formats.md, "Link speeds"): the file's defaults, its link types, then per edge.
    void link_types() {
        file_unit_ = {j_.contains("alpha") ? speeds_.seconds(j_["alpha"], "alpha") : default_alpha,
                      j_.contains("bandwidth") ? speeds_.bandwidth(j_["bandwidth"], "bandwidth") : default_unit_bandwidth};
        if (j_.contains("link_types")) {
            const nlohmann::json& lt = j_["link_types"];
            if (!lt.is_object()) throw InputError(at({"link_types"}, "\"link_types\" must be an object {\"name\": {\"alpha\": \"1 us\", \"bandwidth\": \"25 GB/s\"}, ...}"));
            for (auto it = lt.begin(); it != lt.end(); ++it) {
                if (!support::is_word(it.key()))
                    throw InputError(at({"link_types", it.key()}, fmt::format("link type name {} must be a non-empty word",
                                                                           nlohmann::json(it.key()).dump())));
                const std::string ctx = fmt::format("link_types.{}", it.key());
                if (!it.value().is_object())
                    throw InputError(at({"link_types", it.key()}, fmt::format("{}: expected {{\"alpha\": TIME, \"bandwidth\": BANDWIDTH}}", ctx)));
                LinkSpeed sp = file_unit_;
                for (auto f = it.value().begin(); f != it.value().end(); ++f) {
                    if (f.key() == "alpha") sp.alpha = speeds_.seconds(f.value(), ctx + ".alpha");
                    else if (f.key() == "bandwidth") sp.bandwidth = speeds_.bandwidth(f.value(), ctx + ".bandwidth");
                    else if (f.key() != "note")
                        throw InputError(at({"link_types", it.key(), f.key()},
                                            fmt::format("{}: unknown field \"{}\" (a link type has alpha, bandwidth, note)", ctx, f.key())));
                }
                types_.emplace(it.key(), sp);
            }
        }
        speeds_given_ = j_.contains("alpha") || j_.contains("bandwidth") || !types_.empty();
    }

    LinkSpeed type_of(const nlohmann::json& v, std::size_t e, PathStep step) const {
        if (!v.is_string())
            throw InputError(at({"edges", e, std::move(step)}, fmt::format("edges[{}]: link type {} must be a name of \"link_types\"", e, v.dump())));
        auto it = types_.find(v.get<std::string>());
        if (it == types_.end()) {
            // A loop, not std::views::keys: clang 14 with libstdc++ 12 (the fuzzing build) refuses keys of a map.
            std::string names;
            for (const auto& [name, speed] : types_) names += (names.empty() ? "" : ", ") + name;
            throw InputError(speeds_.at(v, fmt::format("edges[{}]: unknown link type {} (\"link_types\" names {})", e, v.dump(),
                                                       types_.empty() ? std::string("none") : names)));
        }
        return it->second;
    }

    /// A node named by a processor number or a router name; nullopt when there is none.
    std::optional<Node> find(const nlohmann::json& v) const {
        if (v.is_number_unsigned()) {
            if (v.get<std::uint64_t>() < P_) return Node{v.get<std::uint32_t>()};
            return std::nullopt;
        }
        if (v.is_string()) return t_->find_node(v.get<std::string>());
        return std::nullopt;
    }

    std::uint32_t node_of(const nlohmann::json& v) const {
        std::optional<Node> n = find(v);
        if (!n) throw InputError(at({"edges", e_index_}, fmt::format("edges[{}]: node {} does not exist (processors 0..{}{})", e_index_, v.dump(),
                                                    P_ - 1, R_ ? fmt::format(", routers r1.0..r1.{}", R_ - 1) : "")));
        return idx(*n);
    }

    std::uint32_t capacity(const nlohmann::json& c) const {
        if (!c.is_number_unsigned() || c.get<std::uint64_t>() < 1 || c.get<std::uint64_t>() > 1u << 30)
            throw InputError(at({"edges", e_index_}, fmt::format("edges[{}]: capacity {} must be a positive integer", e_index_, c.dump())));
        return c.get<std::uint32_t>();
    }

    /// An edge object's "one_way": true makes it one channel, from -> to (docs/formats.md, "One-way
    /// links"); a link with a speed per direction is two one-way edges.
    bool one_way(const nlohmann::json& e) const {
        if (!e.is_object() || !e.contains("one_way")) return false;
        if (!e["one_way"].is_boolean())
            throw InputError(at({"edges", e_index_, std::string("one_way")},
                                fmt::format("edges[{}]: \"one_way\" is {}: expected true or false", e_index_, e["one_way"].dump())));
        return e["one_way"].get<bool>();
    }

    void edge(const nlohmann::json& e) {
        std::uint32_t u, v, cap = 1;
        LinkSpeed unit = file_unit_;
        if (e.is_array() && (e.size() == 2 || e.size() == 3 || e.size() == 4)) {
            u = node_of(e[0]);
            v = node_of(e[1]);
            if (e.size() == 4) unit = type_of(e[3], e_index_, std::size_t{3});
            if (e.size() >= 3) cap = capacity(e[2]);
        } else if (e.is_object() && e.contains("from") && e.contains("to")) {
            u = node_of(e["from"]);
            v = node_of(e["to"]);
            if (e.contains("cap")) cap = capacity(e["cap"]);
            const std::string ctx = fmt::format("edges[{}]", e_index_);
            if (e.contains("type")) unit = type_of(e["type"], e_index_, std::string("type"));
            if (e.contains("alpha")) unit.alpha = speeds_.seconds(e["alpha"], ctx + ".alpha");
            if (e.contains("bandwidth")) unit.bandwidth = speeds_.bandwidth(e["bandwidth"], ctx + ".bandwidth");
            speeds_given_ = speeds_given_ || e.contains("alpha") || e.contains("bandwidth");
        } else {
            throw InputError(at({"edges", e_index_},
                                fmt::format("edges[{}]: expected [u, v], [u, v, cap], [u, v, cap, \"type\"] or {{\"from\", \"to\", \"cap\"}}", e_index_)));
        }
        const bool both = !one_way(e);
        if (u == v) throw InputError(at({"edges", e_index_}, fmt::format("edges[{}]: a self-loop on {}", e_index_, t_->node_name(Node{u}))));
        edge_speeds_.emplace_back(Node{u}, Node{v}, LinkSpeed{unit.alpha, unit.bandwidth * cap});
        t_->channels_.push_back({Node{u}, Node{v}, cap, 0});
        channel_edge_.push_back(e_index_);
        if (both) {
            edge_speeds_.emplace_back(Node{v}, Node{u}, LinkSpeed{unit.alpha, unit.bandwidth * cap});
            t_->channels_.push_back({Node{v}, Node{u}, cap, 0});
            channel_edge_.push_back(e_index_);
        }
        ++e_index_;
    }

    /// Sorts the channels, refuses an edge listed twice, and gives each channel its speed: the
    /// speeds are listed with the channels, in the same order, and sorted with them (a search per
    /// channel took seconds for the 2 million channels of 4,096 GPUs).
    void finish_channels() {
        std::vector<Channel>& channels = t_->channels_;
        std::vector<std::pair<std::uint64_t, std::uint32_t>> order(channels.size());  // ((from, to), listed)
        for (std::uint32_t i = 0; i < channels.size(); ++i)
            order[i] = {std::uint64_t{idx(channels[i].from)} << 32 | idx(channels[i].to), i};
        std::sort(order.begin(), order.end());
        limits_.check(reading_);
        std::vector<Channel> sorted(channels.size());
        for (std::size_t k = 0; k < order.size(); ++k) sorted[k] = channels[order[k].second];
        for (std::size_t i = 1; i < sorted.size(); ++i)
            if (sorted[i].from == sorted[i - 1].from && sorted[i].to == sorted[i - 1].to) {
                // channels are listed two per edge (one for a one-way edge): the later listing, with the first named
                const std::size_t a = channel_edge_[order[i - 1].second], b = channel_edge_[order[i].second];
                throw InputError(at({"edges", std::max(a, b)},
                                    fmt::format("edges[{}]: the edge {} -- {} is listed twice (first as edges[{}]; give one edge with a "
                                                "capacity instead, or two one-way edges for a speed per direction)",
                                                std::max(a, b), t_->node_name(sorted[i].from), t_->node_name(sorted[i].to), std::min(a, b))));
            }
        channels = std::move(sorted);
        t_->finish();
        if (speeds_given_) {
            t_->speeds_.resize(channels.size());
            for (std::size_t k = 0; k < order.size(); ++k) t_->speeds_[k] = std::get<2>(edge_speeds_[order[k].second]);
            t_->speeds_given_ = true;
        }
        limits_.check(reading_);
    }

    /// find_channel, but for the lists of a group: they name the channels out of one node, or
    /// into one node, in the order of the other end, so each cursor steps to the next channel
    /// instead of searching (4 million grouped channels on 4,096 GPUs).
    std::optional<ChannelId> channel_between(Node u, Node v) {
        if (idx(u) == out_.node) {
            const auto outs = t_->out_channels(u);
            for (std::size_t k = out_.pos; k < outs.size() && k < out_.pos + 8; ++k) {
                const Node to = t_->channel(outs[k]).to;
                if (to == v) {
                    out_.pos = k + 1;
                    return outs[k];
                }
                if (idx(to) > idx(v)) break;
            }
        }
        if (idx(v) == in_.node) {
            const auto ins = t_->in_channels(v);
            if (in_.pos == Cursor::unknown)
                in_.pos = static_cast<std::size_t>(std::lower_bound(ins.begin(), ins.end(), u, [&](ChannelId c, Node n) {
                                                       return idx(t_->channel(c).from) < idx(n);
                                                   }) - ins.begin());
            for (std::size_t k = in_.pos; k < ins.size() && k < in_.pos + 8; ++k) {
                const Node from = t_->channel(ins[k]).from;
                if (from == u) {
                    in_.pos = k + 1;
                    return ins[k];
                }
                if (idx(from) > idx(u)) break;
            }
        }
        const std::optional<ChannelId> c = t_->find_channel(u, v);
        if (c) {
            // out lists are contiguous runs of channel ids (channels are sorted by from)
            out_ = {idx(u), static_cast<std::size_t>(idx(*c) - idx(t_->out_channels(u).front())) + 1};
            in_ = {idx(v), Cursor::unknown};
        }
        return c;
    }

    void groups() {
        const nlohmann::json& gs = j_["groups"];
        if (!gs.is_array()) throw InputError(at({"groups"}, "\"groups\" must be a list of {\"name\", \"cap\", \"channels\"} objects"));
        for (std::size_t gi = 0; gi < gs.size(); ++gi) group(gs[gi], gi);
        t_->index_groups();
    }

    void group(const nlohmann::json& g, std::size_t gi) {
        // each problem at the value it names (the group, a field, a channel), as for edges
        auto gwhere = [&](std::string_view what, std::initializer_list<PathStep> below = {}) {
            std::vector<PathStep> path{std::string("groups"), gi};
            path.insert(path.end(), below.begin(), below.end());
            return at(path, fmt::format("groups[{}]: {}", gi, what));
        };
        if (!g.is_object() || !g.contains("name") || !g["name"].is_string() || !g.contains("cap"))
            throw InputError(gwhere("expected {\"name\": \"...\", \"cap\": k, \"channels\": [[u, v], ...]} (or \"out_of\": u, \"into\": v)"));
        for (auto it = g.begin(); it != g.end(); ++it)
            if (it.key() != "name" && it.key() != "cap" && it.key() != "channels" && it.key() != "out_of" && it.key() != "into" &&
                it.key() != "bandwidth")
                throw InputError(gwhere(fmt::format("unknown field \"{}\" (a group has name, cap, channels, out_of, into, bandwidth)", it.key()),
                                        {it.key()}));
        LinkGroup lg;
        lg.name = g["name"].get<std::string>();
        if (!support::is_word(lg.name))
            throw InputError(gwhere(fmt::format("group name {} must be a non-empty word", g["name"].dump()), {std::string("name")}));
        if (!group_names_.insert(lg.name).second) throw InputError(gwhere(fmt::format("a second group named '{}'", lg.name), {std::string("name")}));
        if (!g["cap"].is_number_unsigned() || g["cap"].get<std::uint64_t>() < 1 || g["cap"].get<std::uint64_t>() > 1u << 30)
            throw InputError(gwhere(fmt::format("capacity {} must be a positive integer", g["cap"].dump()), {std::string("cap")}));
        lg.cap = g["cap"].get<std::uint32_t>();
        double unit_bw = file_unit_.bandwidth;
        if (g.contains("bandwidth")) {
            unit_bw = speeds_.bandwidth(g["bandwidth"], fmt::format("groups[{}].bandwidth", gi));
            state_speeds();  // a group's speed alone: the channels take the file's defaults
        }
        t_->group_bandwidth_.push_back(unit_bw * lg.cap);
        auto gnode = [&](const nlohmann::json& v, std::initializer_list<PathStep> place) {
            std::optional<Node> n = find(v);
            if (!n) throw InputError(gwhere(fmt::format("node {} does not exist", v.dump()), place));
            return *n;
        };
        if (g.contains("channels")) {
            if (!g["channels"].is_array()) throw InputError(gwhere("\"channels\" must be a list of [u, v] pairs", {std::string("channels")}));
            std::size_t ci = 0;
            for (const auto& c : g["channels"]) {
                tick();
                const std::initializer_list<PathStep> place{std::string("channels"), ci++};
                if (!c.is_array() || c.size() != 2) throw InputError(gwhere(fmt::format("channel {} is not a pair [u, v]", c.dump()), place));
                Node u = gnode(c[0], place), v = gnode(c[1], place);
                auto ch = channel_between(u, v);
                if (!ch) throw InputError(gwhere(fmt::format("there is no channel {} -> {}", t_->node_name(u), t_->node_name(v)), place));
                lg.channels.push_back(*ch);
            }
        }
        if (g.contains("out_of"))
            for (ChannelId c : t_->out_channels(gnode(g["out_of"], {std::string("out_of")}))) lg.channels.push_back(c);
        if (g.contains("into"))
            for (ChannelId c : t_->in_channels(gnode(g["into"], {std::string("into")}))) lg.channels.push_back(c);
        std::sort(lg.channels.begin(), lg.channels.end());
        lg.channels.erase(std::unique(lg.channels.begin(), lg.channels.end()), lg.channels.end());
        if (lg.channels.empty()) throw InputError(gwhere(fmt::format("group '{}' has no channel", lg.name)));
        t_->groups_.push_back(std::move(lg));
    }

    /// Gives every channel its speed explicitly (the file's defaults) when no edge stated one.
    void state_speeds() {
        if (t_->speeds_given_) return;
        t_->speeds_.resize(t_->channels_.size());
        for (std::uint32_t c = 0; c < t_->channels_.size(); ++c) t_->speeds_[c] = {file_unit_.alpha, file_unit_.bandwidth * t_->channels_[c].cap};
        t_->speeds_given_ = true;
    }

    /// "switches": [{"router": "r1.0", "reduce": true, "multicast": true, "efficiency": 0.85,
    /// "note": "..."}]: the routers that add partials and multicast (docs/topologies.md). The
    /// efficiency scales the bandwidth of every channel into and out of the router.
    void switches() {
        const nlohmann::json& ss = j_["switches"];
        if (!ss.is_array() || ss.empty())
            throw InputError(at({"switches"}, "\"switches\" must be a non-empty list of {\"router\": \"r1.0\", \"reduce\": true, \"multicast\": true} objects"));
        t_->switches_.assign(R_, SwitchFunctions{});
        std::vector<char> seen(R_, 0);
        for (std::size_t si = 0; si < ss.size(); ++si) {
            const nlohmann::json& s = ss[si];
            auto swhere = [&](std::string_view what) { return at({"switches", si}, fmt::format("switches[{}]: {}", si, what)); };
            if (!s.is_object() || !s.contains("router"))
                throw InputError(swhere("expected {\"router\": \"r1.0\", \"reduce\": true, \"multicast\": true, \"efficiency\": 0.85}"));
            SwitchFunctions f;
            for (auto it = s.begin(); it != s.end(); ++it) {
                const std::string& k = it.key();
                if (k == "reduce" || k == "multicast") {
                    if (!it.value().is_boolean()) throw InputError(swhere(fmt::format("\"{}\" must be true or false", k)));
                    (k == "reduce" ? f.reduce : f.multicast) = it.value().get<bool>();
                } else if (k == "efficiency") {
                    if (!it.value().is_number() || !(it.value().get<double>() > 0) || it.value().get<double>() > 1)
                        throw InputError(swhere(fmt::format("efficiency {} must be a number in (0, 1]", it.value().dump())));
                    f.efficiency = it.value().get<double>();
                } else if (k == "note") {
                    if (!it.value().is_string()) throw InputError(swhere("\"note\" must be a string"));
                    f.note = it.value().get<std::string>();
                } else if (k != "router") {
                    throw InputError(swhere(fmt::format("unknown field \"{}\" (a switch has router, reduce, multicast, efficiency, note)", k)));
                }
            }
            std::optional<Node> r = find(s["router"]);
            if (!r || t_->is_processor(*r))
                throw InputError(swhere(fmt::format("{} is not a router (routers r1.0..r1.{})", s["router"].dump(), R_ == 0 ? 0 : R_ - 1)));
            const std::uint32_t ri = idx(*r) - static_cast<std::uint32_t>(P_);
            if (seen[ri]++) throw InputError(swhere(fmt::format("router {} is listed twice", t_->node_name(*r))));
            t_->switches_[ri] = f;
            if (f.efficiency < 1) {
                state_speeds();
                for (ChannelId c : t_->out_channels(*r)) t_->speeds_[idx(c)].bandwidth *= f.efficiency;
                for (ChannelId c : t_->in_channels(*r)) t_->speeds_[idx(c)].bandwidth *= f.efficiency;
            }
        }
    }

    std::string_view spec_, file_;
    const RunLimits& limits_;
    const std::string reading_;  ///< "reading graph:FILE", the stage a limit names
    std::uint64_t ticks_ = 0;
    struct Cursor {
        static constexpr std::size_t unknown = ~std::size_t{0};
        std::uint32_t node = ~0u;  ///< the node whose list it is in (none yet)
        std::size_t pos = 0;       ///< the index in that list after the last channel found
    };
    Cursor out_, in_;  ///< channel_between's cursors in an out list and an in list
    std::string text_;
    nlohmann::json j_;
    detail::SpeedReader speeds_;
    std::uint64_t P_ = 0, R_ = 0;
    std::shared_ptr<Topology> t_;
    LinkSpeed file_unit_;
    std::map<std::string, LinkSpeed, std::less<>> types_;
    bool speeds_given_ = false;
    std::vector<std::tuple<Node, Node, LinkSpeed>> edge_speeds_;  ///< per unit of capacity, both directions
    std::size_t e_index_ = 0;
    std::vector<std::size_t> channel_edge_;  ///< per listed channel, the edge that lists it
    std::set<std::string> group_names_;
};

namespace {

/// Reads the top level's "processors" and "faults" from a graph file's first keys: stops at the
/// first array (the edges), or at the end of the text it is given.
struct HeadSax : nlohmann::json_sax<nlohmann::json> {
    enum class Want : std::uint8_t { none, processors, faults };
    int depth = 0;
    Want want = Want::none;
    GraphHead head;

    bool value() {
        want = Want::none;
        return !(head.processors && head.faults);  // both read: stop
    }
    bool null() override { return value(); }
    bool boolean(bool) override { return value(); }
    bool number_integer(number_integer_t) override { return value(); }
    bool number_unsigned(number_unsigned_t v) override {
        if (want == Want::processors) head.processors = v;
        return value();
    }
    bool number_float(number_float_t, const string_t&) override { return value(); }
    bool string(string_t& v) override {
        if (want == Want::faults) head.faults = v;
        return value();
    }
    bool binary(binary_t&) override { return value(); }
    bool start_object(std::size_t) override {
        want = Want::none;
        return ++depth > 0;
    }
    bool key(string_t& k) override {
        want = depth != 1 ? Want::none : k == "processors" ? Want::processors : k == "faults" ? Want::faults : Want::none;
        return true;
    }
    bool end_object() override { return --depth >= 0; }
    bool start_array(std::size_t) override { return false; }
    bool end_array() override { return false; }
    bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) override { return false; }
};

}  // namespace

GraphHead read_graph_head(std::string_view spec) {
    if (!spec.starts_with("graph:")) return {};
    const std::string file(spec.substr(6));
    std::error_code ec;
    if (!std::filesystem::is_regular_file(file, ec)) return {};  // a pipe is read once, by the reader
    std::ifstream in(file, std::ios::binary);
    std::string text(std::size_t{64} << 10, '\0');
    in.read(text.data(), static_cast<std::streamsize>(text.size()));
    text.resize(static_cast<std::size_t>(std::max<std::streamsize>(0, in.gcount())));
    HeadSax sax;
    nlohmann::json::sax_parse(text.begin(), text.end(), &sax);
    return sax.head;
}

std::optional<std::uint64_t> Topology::declared_processors(std::string_view spec) { return read_graph_head(spec).processors; }

std::shared_ptr<Topology> Topology::Impl::graph(std::string_view spec, std::string_view file, const RunLimits& limits) {
    return GraphFile(spec, file, limits).read();
}

}  // namespace collsched
