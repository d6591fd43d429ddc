// Graph files (docs/topologies.md, "Graph files"): reading the JSON edge list, its link groups
// and speeds into a Topology.
#include "compiler/topology/topology.hpp"

#include <algorithm>
#include <bit>
#include <charconv>
#include <fstream>
#include <limits>
#include <map>
#include <ranges>
#include <tuple>
#include <numeric>
#include <set>
#include <sstream>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "compiler/core/input_file.hpp"
#include "compiler/core/json_error.hpp"
#include "compiler/topology/names.hpp"
#include "compiler/topology/topology_checks.hpp"
#include "compiler/topology/topology_impl.hpp"
#include "dsl/diagnostics.hpp"
#include "support/number.hpp"
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

/// Reads the speed fields of a graph file (docs/formats.md, "Units"): a bad value is refused with
/// the line and column of its text in the file.
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

}  // namespace

/// Graph file: {"processors": P, "routers": R (optional), "edges": [[u, v], [u, v, cap], ...]}
/// or edges as {"from": u, "to": v, "cap": c}; nodes are processor numbers or router names
/// "r1.<i>". Every edge is a bidirectional link (one channel each way). Optional "groups":
/// [{"name", "cap", "channels": [[u, v], ...], "out_of": u, "into": v}, ...], each group the union
/// of its listed channels and all channels out of `out_of` and into `into` (docs/topologies.md).
std::shared_ptr<Topology> Topology::Impl::graph(std::string_view spec, std::string_view file) {
    std::string text = read_file_text(spec, file);
    nlohmann::json j = parse_json_document(file, text, "JSON graph");
    auto where = [&](std::string_view what) { return fmt::format("{}: {}", file, what); };
    if (!j.is_object() || !j.contains("processors") || !j["processors"].is_number_unsigned() || !j.contains("edges") ||
        !j["edges"].is_array())
        throw InputError(where("expected {\"processors\": P, \"edges\": [[u, v], ...]} (optional \"routers\": R)"));
    std::uint64_t P = j["processors"].get<std::uint64_t>();
    std::uint64_t R = j.value("routers", std::uint64_t{0});
    if (P < 1) throw InputError(where("\"processors\" must be at least 1"));
    check_processors(spec, P);
    if (P + R > 4096) throw InputError(where(fmt::format("{} nodes; graph topologies are limited to 4096 nodes", P + R)));
    auto t = std::shared_ptr<Topology>(new Topology());
    t->spec_ = std::string(spec);
    t->family_ = Family::graph;
    t->processors_ = static_cast<std::uint32_t>(P);
    t->routers_ = static_cast<std::uint32_t>(R);
    // Link speeds (docs/formats.md, "Link speeds"): the file's defaults, its link types, then per edge.
    SpeedReader speeds(file, text);
    const LinkSpeed file_unit{j.contains("alpha") ? speeds.seconds(j["alpha"], "alpha") : default_alpha,
                              j.contains("bandwidth") ? speeds.bandwidth(j["bandwidth"], "bandwidth") : default_unit_bandwidth};
    std::map<std::string, LinkSpeed, std::less<>> types;
    if (j.contains("link_types")) {
        const nlohmann::json& lt = j["link_types"];
        if (!lt.is_object()) throw InputError(where("\"link_types\" must be an object {\"name\": {\"alpha\": \"1 us\", \"bandwidth\": \"25 GB/s\"}, ...}"));
        for (auto it = lt.begin(); it != lt.end(); ++it) {
            const std::string ctx = fmt::format("link_types.{}", it.key());
            if (!it.value().is_object()) throw InputError(where(fmt::format("{}: expected {{\"alpha\": TIME, \"bandwidth\": BANDWIDTH}}", ctx)));
            LinkSpeed sp = file_unit;
            for (auto f = it.value().begin(); f != it.value().end(); ++f) {
                if (f.key() == "alpha") sp.alpha = speeds.seconds(f.value(), ctx + ".alpha");
                else if (f.key() == "bandwidth") sp.bandwidth = speeds.bandwidth(f.value(), ctx + ".bandwidth");
                else if (f.key() != "note")
                    throw InputError(where(fmt::format("{}: unknown field \"{}\" (a link type has alpha, bandwidth, note)", ctx, f.key())));
            }
            types.emplace(it.key(), sp);
        }
    }
    bool speeds_given = j.contains("alpha") || j.contains("bandwidth") || !types.empty();
    auto type_of = [&](const nlohmann::json& v, std::size_t e) {
        if (!v.is_string()) throw InputError(where(fmt::format("edges[{}]: link type {} must be a name of \"link_types\"", e, v.dump())));
        auto it = types.find(v.get<std::string>());
        if (it == types.end()) {
            // A loop, not std::views::keys: clang 14 with libstdc++ 12 (the fuzzing build) refuses keys of a map.
            std::string names;
            for (const auto& [name, speed] : types) names += (names.empty() ? "" : ", ") + name;
            throw InputError(speeds.at(v, fmt::format("edges[{}]: unknown link type {} (\"link_types\" names {})", e, v.dump(),
                                                      types.empty() ? std::string("none") : names)));
        }
        return it->second;
    };
    std::vector<std::tuple<Node, Node, LinkSpeed>> edge_speeds;  // per unit of capacity, both directions
    std::size_t e_index = 0;
    auto node_of = [&](const nlohmann::json& v) -> std::uint32_t {
        std::optional<Node> n;
        if (v.is_number_unsigned()) {
            if (v.get<std::uint64_t>() < P) n = Node{v.get<std::uint32_t>()};
        } else if (v.is_string()) {
            n = t->find_node(v.get<std::string>());
        }
        if (!n) throw InputError(where(fmt::format("edges[{}]: node {} does not exist (processors 0..{}{})", e_index, v.dump(),
                                                    P - 1, R ? fmt::format(", routers r1.0..r1.{}", R - 1) : "")));
        return idx(*n);
    };
    for (const auto& e : j["edges"]) {
        std::uint32_t u, v, cap = 1;
        LinkSpeed unit = file_unit;
        if (e.is_array() && (e.size() == 2 || e.size() == 3 || e.size() == 4)) {
            u = node_of(e[0]);
            v = node_of(e[1]);
            if (e.size() == 4) unit = type_of(e[3], e_index);
            if (e.size() >= 3) {
                if (!e[2].is_number_unsigned() || e[2].get<std::uint64_t>() < 1 || e[2].get<std::uint64_t>() > 1u << 30)
                    throw InputError(where(fmt::format("edges[{}]: capacity {} must be a positive integer", e_index, e[2].dump())));
                cap = e[2].get<std::uint32_t>();
            }
        } else if (e.is_object() && e.contains("from") && e.contains("to")) {
            u = node_of(e["from"]);
            v = node_of(e["to"]);
            if (e.contains("cap")) {
                if (!e["cap"].is_number_unsigned() || e["cap"].get<std::uint64_t>() < 1 || e["cap"].get<std::uint64_t>() > 1u << 30)
                    throw InputError(where(fmt::format("edges[{}]: capacity {} must be a positive integer", e_index, e["cap"].dump())));
                cap = e["cap"].get<std::uint32_t>();
            }
            const std::string ctx = fmt::format("edges[{}]", e_index);
            if (e.contains("type")) unit = type_of(e["type"], e_index);
            if (e.contains("alpha")) unit.alpha = speeds.seconds(e["alpha"], ctx + ".alpha");
            if (e.contains("bandwidth")) unit.bandwidth = speeds.bandwidth(e["bandwidth"], ctx + ".bandwidth");
            speeds_given = speeds_given || e.contains("alpha") || e.contains("bandwidth");
        } else {
            throw InputError(where(fmt::format("edges[{}]: expected [u, v], [u, v, cap], [u, v, cap, \"type\"] or {{\"from\", \"to\", \"cap\"}}", e_index)));
        }
        edge_speeds.emplace_back(Node{u}, Node{v}, LinkSpeed{unit.alpha, unit.bandwidth * cap});
        edge_speeds.emplace_back(Node{v}, Node{u}, LinkSpeed{unit.alpha, unit.bandwidth * cap});
        if (u == v) throw InputError(where(fmt::format("edges[{}]: a self-loop on {}", e_index, t->node_name(Node{u}))));
        t->channels_.push_back({Node{u}, Node{v}, cap, 0});
        t->channels_.push_back({Node{v}, Node{u}, cap, 0});
        ++e_index;
    }
    std::sort(t->channels_.begin(), t->channels_.end(),
              [](const Channel& a, const Channel& b) { return std::pair(a.from, a.to) < std::pair(b.from, b.to); });
    for (std::size_t i = 1; i < t->channels_.size(); ++i)
        if (t->channels_[i].from == t->channels_[i - 1].from && t->channels_[i].to == t->channels_[i - 1].to)
            throw InputError(where(fmt::format("the edge {} -- {} is listed twice (give one edge with a capacity instead)",
                                               t->node_name(t->channels_[i].from), t->node_name(t->channels_[i].to))));
    t->finish();
    if (speeds_given) {
        t->speeds_.assign(t->channels_.size(), LinkSpeed{});
        for (const auto& [a, b, sp] : edge_speeds) t->speeds_[idx(*t->find_channel(a, b))] = sp;
        t->speeds_given_ = true;
    }
    if (j.contains("groups")) {
        const nlohmann::json& gs = j["groups"];
        if (!gs.is_array()) throw InputError(where("\"groups\" must be a list of {\"name\", \"cap\", \"channels\"} objects"));
        std::set<std::string> names;
        for (std::size_t gi = 0; gi < gs.size(); ++gi) {
            const nlohmann::json& g = gs[gi];
            auto gwhere = [&](std::string_view what) { return where(fmt::format("groups[{}]: {}", gi, what)); };
            if (!g.is_object() || !g.contains("name") || !g["name"].is_string() || !g.contains("cap"))
                throw InputError(gwhere("expected {\"name\": \"...\", \"cap\": k, \"channels\": [[u, v], ...]} (or \"out_of\": u, \"into\": v)"));
            for (auto it = g.begin(); it != g.end(); ++it)
                if (it.key() != "name" && it.key() != "cap" && it.key() != "channels" && it.key() != "out_of" && it.key() != "into" &&
                    it.key() != "bandwidth")
                    throw InputError(gwhere(fmt::format("unknown field \"{}\" (a group has name, cap, channels, out_of, into, bandwidth)", it.key())));
            LinkGroup lg;
            lg.name = g["name"].get<std::string>();
            if (lg.name.empty() || lg.name.find_first_of(" \t\n\",") != std::string::npos)
                throw InputError(gwhere(fmt::format("group name {} must be a non-empty word", g["name"].dump())));
            if (!names.insert(lg.name).second) throw InputError(gwhere(fmt::format("a second group named '{}'", lg.name)));
            if (!g["cap"].is_number_unsigned() || g["cap"].get<std::uint64_t>() < 1 || g["cap"].get<std::uint64_t>() > 1u << 30)
                throw InputError(gwhere(fmt::format("capacity {} must be a positive integer", g["cap"].dump())));
            lg.cap = g["cap"].get<std::uint32_t>();
            double unit_bw = file_unit.bandwidth;
            if (g.contains("bandwidth")) {
                unit_bw = speeds.bandwidth(g["bandwidth"], fmt::format("groups[{}].bandwidth", gi));
                if (!t->speeds_given_) {  // a group's speed alone: the channels take the file's defaults
                    t->speeds_.resize(t->channels_.size());
                    for (std::uint32_t c = 0; c < t->channels_.size(); ++c)
                        t->speeds_[c] = {file_unit.alpha, file_unit.bandwidth * t->channels_[c].cap};
                    t->speeds_given_ = true;
                }
            }
            t->group_bandwidth_.push_back(unit_bw * lg.cap);
            auto gnode = [&](const nlohmann::json& v) {
                std::optional<Node> n;
                if (v.is_number_unsigned()) {
                    if (v.get<std::uint64_t>() < P) n = Node{v.get<std::uint32_t>()};
                } else if (v.is_string()) {
                    n = t->find_node(v.get<std::string>());
                }
                if (!n) throw InputError(gwhere(fmt::format("node {} does not exist", v.dump())));
                return *n;
            };
            if (g.contains("channels")) {
                if (!g["channels"].is_array()) throw InputError(gwhere("\"channels\" must be a list of [u, v] pairs"));
                for (const auto& c : g["channels"]) {
                    if (!c.is_array() || c.size() != 2) throw InputError(gwhere(fmt::format("channel {} is not a pair [u, v]", c.dump())));
                    Node u = gnode(c[0]), v = gnode(c[1]);
                    auto ch = t->find_channel(u, v);
                    if (!ch) throw InputError(gwhere(fmt::format("there is no channel {} -> {}", t->node_name(u), t->node_name(v))));
                    lg.channels.push_back(*ch);
                }
            }
            if (g.contains("out_of"))
                for (ChannelId c : t->out_channels(gnode(g["out_of"]))) lg.channels.push_back(c);
            if (g.contains("into"))
                for (ChannelId c : t->in_channels(gnode(g["into"]))) lg.channels.push_back(c);
            std::sort(lg.channels.begin(), lg.channels.end());
            lg.channels.erase(std::unique(lg.channels.begin(), lg.channels.end()), lg.channels.end());
            if (lg.channels.empty()) throw InputError(gwhere(fmt::format("group '{}' has no channel", lg.name)));
            t->groups_.push_back(std::move(lg));
        }
        t->index_groups();
    }
    next_hops(*t, file);
    return t;
}

}  // namespace collsched
