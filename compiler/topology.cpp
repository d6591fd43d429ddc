#include "compiler/topology.hpp"

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

#include "compiler/input_file.hpp"
#include "compiler/json_error.hpp"
#include "compiler/names.hpp"
#include "compiler/topology_checks.hpp"
#include "dsl/diagnostics.hpp"
#include "support/number.hpp"
#include "support/units.hpp"

namespace collsched {

using topology_checks::bad_spec;
using topology_checks::check_channels;
using topology_checks::check_processors;
using topology_checks::is_power_of;
using topology_checks::log_base;
using topology_checks::split;

struct Topology::Impl {
    static std::shared_ptr<Topology> tree(std::string_view spec, Family fam, std::uint64_t b, std::uint64_t n,
                                          std::vector<std::uint32_t> caps) {
        if (b < 2) bad_spec(spec, "the arity must be at least 2");
        if (n < b || !is_power_of(n, b))
            bad_spec(spec, fmt::format("{} leaves is not a power of {} (at least {})", n, b, b));
        check_processors(spec, n);
        std::uint32_t L = log_base(n, b);
        if (caps.size() != L)
            bad_spec(spec, fmt::format("{} capacities given, the tree has {} levels (one capacity per level, leaves first)",
                                       caps.size(), L));
        for (std::uint32_t i = 0; i < L; ++i) {
            if (caps[i] < 1) bad_spec(spec, fmt::format("capacity of level {} is {}; capacities must be at least 1", i + 1, caps[i]));
            if (fam != Family::ideal && i > 0 && caps[i] < caps[i - 1])
                bad_spec(spec, fmt::format("capacity pattern decreases at level {} ({} after {}); it must be non-decreasing toward the root",
                                           i + 1, caps[i], caps[i - 1]));
        }
        auto t = std::shared_ptr<Topology>(new Topology());
        t->spec_ = std::string(spec);
        t->family_ = fam;
        t->arity_ = static_cast<std::uint32_t>(b);
        t->tree_levels_ = L;
        t->level_caps_ = std::move(caps);
        t->processors_ = static_cast<std::uint32_t>(n);
        std::uint64_t per_level = n, first = 0, routers = 0;
        for (std::uint32_t l = 0; l <= L; ++l) {
            t->level_first_.push_back(static_cast<std::uint32_t>(first));
            first += per_level;
            if (l > 0) routers += per_level;
            per_level /= b;
        }
        t->level_first_.push_back(static_cast<std::uint32_t>(first));
        t->routers_ = static_cast<std::uint32_t>(routers);
        std::uint32_t N = t->nodes();
        t->level_.resize(N);
        t->parent_.assign(N, Node{std::numeric_limits<std::uint32_t>::max()});
        t->channels_.reserve(2 * (N - 1));
        for (std::uint32_t l = 0; l <= L; ++l) {
            for (std::uint32_t v = t->level_first_[l]; v < t->level_first_[l + 1]; ++v) {
                t->level_[v] = l;
                if (l == L) continue;
                std::uint32_t j = v - t->level_first_[l];
                Node p{t->level_first_[l + 1] + j / static_cast<std::uint32_t>(b)};
                t->parent_[v] = p;
                std::uint32_t cap = t->level_caps_[l];
                t->channels_.push_back({Node{v}, p, cap, l + 1});
                t->channels_.push_back({p, Node{v}, cap, l + 1});
            }
        }
        t->finish();
        return t;
    }

    static std::shared_ptr<Topology> base(std::string_view spec, Family fam, std::uint64_t n) {
        if (n < 1) bad_spec(spec, "the size must be at least 1");
        check_processors(spec, n);
        if (fam == Family::complete) check_channels(spec, n * (n - 1));
        auto t = std::shared_ptr<Topology>(new Topology());
        t->spec_ = std::string(spec);
        t->family_ = fam;
        t->processors_ = static_cast<std::uint32_t>(n);
        std::uint32_t N = t->processors_;
        auto add = [&](std::uint32_t u, std::uint32_t v) {
            if (u != v) t->channels_.push_back({Node{u}, Node{v}, 1, 0});
        };
        if (fam == Family::complete) {
            for (std::uint32_t u = 0; u < N; ++u)
                for (std::uint32_t v = 0; v < N; ++v) add(u, v);
        } else {
            for (std::uint32_t u = 0; u + 1 < N; ++u) {
                add(u, u + 1);
                add(u + 1, u);
            }
            if (fam == Family::ring && N > 2) {
                add(N - 1, 0);
                add(0, N - 1);
            }
        }
        t->finish();
        return t;
    }

    static std::shared_ptr<Topology> product(std::string_view spec, Family fam,
                                             std::vector<std::shared_ptr<const Topology>> factors,
                                             bool lowest_first) {
        std::uint64_t n = 1, chans = 0;
        for (const auto& f : factors) {
            if (f->routers() != 0) bad_spec(spec, fmt::format("factor '{}' has routers; products take graphs of processors only", f->spec()));
            n *= f->processors();
            check_processors(spec, n);
        }
        for (const auto& f : factors) chans += n / f->processors() * f->channels().size();
        check_channels(spec, chans);
        auto t = std::shared_ptr<Topology>(new Topology());
        t->spec_ = std::string(spec);
        t->family_ = fam;
        t->processors_ = static_cast<std::uint32_t>(n);
        std::size_t k = factors.size();
        t->strides_.assign(k, 1);
        for (std::size_t i = k; i-- > 1;) t->strides_[i - 1] = t->strides_[i] * factors[i]->processors();
        for (const auto& f : factors) t->dims_.push_back(f->processors());
        for (std::size_t i = 0; i < k; ++i) t->route_order_.push_back(static_cast<std::uint32_t>(lowest_first ? k - 1 - i : i));
        t->channels_.reserve(chans);
        for (std::uint32_t v = 0; v < n; ++v) {
            for (std::size_t i = 0; i < k; ++i) {
                std::uint32_t c = v / t->strides_[i] % t->dims_[i];
                for (ChannelId fc : factors[i]->out_channels(Node{c})) {
                    const Channel& ch = factors[i]->channel(fc);
                    std::uint32_t w = v + (idx(ch.to) - c) * t->strides_[i];  // unsigned wrap is intended
                    t->channels_.push_back({Node{v}, Node{w}, ch.cap, 0});
                }
            }
        }
        t->factors_ = std::move(factors);
        t->finish();
        return t;
    }

    static std::shared_ptr<Topology> graph(std::string_view spec, std::string_view file);

    /// The wrapped butterfly of dimension d: processor (l, x), level l in 0 .. d-1 and row x in
    /// 0 .. 2^d - 1, is l 2^d + x; it is linked to (l + 1 mod d, x) (straight) and to
    /// (l + 1 mod d, x XOR 2^l) (cross). Routes: next-hop tables as for graphs.
    static std::shared_ptr<Topology> butterfly(std::string_view spec, std::uint64_t d) {
        if (d < 3 || d > 8) bad_spec(spec, "the dimension must be between 3 and 8 (d 2^d processors; below 3 links coincide)");
        auto t = std::shared_ptr<Topology>(new Topology());
        t->spec_ = std::string(spec);
        t->family_ = Family::butterfly;
        const std::uint32_t rows = 1u << d, D = static_cast<std::uint32_t>(d);
        t->processors_ = D * rows;
        t->channels_.reserve(4 * std::size_t{t->processors_});
        for (std::uint32_t l = 0; l < D; ++l)
            for (std::uint32_t x = 0; x < rows; ++x) {
                std::uint32_t u = l * rows + x, up = (l + 1) % D * rows;
                for (std::uint32_t v : {up + x, up + (x ^ (1u << l))}) {
                    t->channels_.push_back({Node{u}, Node{v}, 1, 0});
                    t->channels_.push_back({Node{v}, Node{u}, 1, 0});
                }
            }
        t->finish();
        next_hops(*t, spec);
        return t;
    }

    /// Next hops by BFS from every destination, ties to the lowest-numbered neighbour (graphs and
    /// butterflies). Throws InputError naming two nodes when the graph is not connected.
    static void next_hops(Topology& t, std::string_view where);
};

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

namespace {

/// The next-hop table of a dense graph (issue 27: a 1,024-GPU multibox has a million channels,
/// and the BFS per destination below costs N * E, 2 * 10^9 steps): the same distances and the
/// same lowest-numbered next hops with rows of out-neighbours as bitsets. A node joins level L+1
/// when its row meets level L; its next hop is the first bit of its row within level L. Each
/// level costs (nodes left) * N/64 words, so this is for graphs of small diameter: the caller
/// takes it when E >= N^2 / 16. Returns false (table untouched) when some node cannot reach d,
/// for the caller's search to name the pair.
bool dense_next_hops(const Topology& t, std::vector<Node>& next) {
    const std::uint32_t N = t.nodes(), W = (N + 63) / 64;
    std::vector<std::uint64_t> rows(std::size_t{N} * W, 0);
    for (std::uint32_t u = 0; u < N; ++u)
        for (ChannelId c : t.out_channels(Node{u})) {
            const std::uint32_t v = idx(t.channel(c).to);
            rows[std::size_t{u} * W + v / 64] |= std::uint64_t{1} << (v % 64);
        }
    std::vector<std::uint64_t> levels;  // level L at [L * W, (L+1) * W)
    std::vector<std::uint32_t> left, still;
    for (std::uint32_t d = 0; d < N; ++d) {
        levels.assign(W, 0);
        levels[d / 64] |= std::uint64_t{1} << (d % 64);
        left.clear();
        for (std::uint32_t v = 0; v < N; ++v)
            if (v != d) left.push_back(v);
        for (std::size_t L = 0; !left.empty(); ++L) {
            levels.resize(levels.size() + W, 0);  // level L+1 (the pointers below after growing)
            const std::uint64_t* lv = levels.data() + L * W;
            std::uint64_t* nx = levels.data() + (L + 1) * W;
            still.clear();
            for (std::uint32_t v : left) {
                const std::uint64_t* r = rows.data() + std::size_t{v} * W;
                std::uint32_t w = 0;
                while (w < W && (r[w] & lv[w]) == 0) ++w;
                if (w == W) {
                    still.push_back(v);
                    continue;
                }
                next[std::size_t{d} * N + v] = Node{w * 64 + static_cast<std::uint32_t>(std::countr_zero(r[w] & lv[w]))};
                nx[v / 64] |= std::uint64_t{1} << (v % 64);
            }
            if (still.size() == left.size()) return false;  // some node cannot reach d
            left.swap(still);
        }
    }
    return true;
}

}  // namespace

void Topology::Impl::next_hops(Topology& top, std::string_view file) {
    auto where = [&](std::string_view what) { return fmt::format("{}: {}", file, what); };
    Topology* t = &top;
    std::uint32_t N = t->nodes();
    t->next_.assign(std::size_t{N} * N, Node{0});
    if (N >= 64 && t->channels().size() >= std::size_t{N} * N / 16 && dense_next_hops(*t, t->next_)) return;
    std::vector<std::uint32_t> dist(N), queue(N);
    constexpr std::uint32_t inf = std::numeric_limits<std::uint32_t>::max();
    for (std::uint32_t d = 0; d < N; ++d) {
        std::fill(dist.begin(), dist.end(), inf);
        std::size_t head = 0, tail = 0;
        dist[d] = 0;
        queue[tail++] = d;
        while (head < tail) {
            std::uint32_t x = queue[head++];
            for (ChannelId c : t->in_channels(Node{x})) {
                std::uint32_t y = idx(t->channel(c).from);
                if (dist[y] == inf) {
                    dist[y] = dist[x] + 1;
                    queue[tail++] = y;
                }
            }
        }
        for (std::uint32_t at = 0; at < N; ++at) {
            if (dist[at] == inf)
                throw InputError(where(fmt::format("the graph is not connected: no path from {} to {}", t->node_name(Node{at}),
                                                   t->node_name(Node{d}))));
            if (at == d) continue;
            std::uint32_t best = inf;
            for (ChannelId c : t->out_channels(Node{at})) {
                std::uint32_t y = idx(t->channel(c).to);
                if (dist[y] + 1 == dist[at]) best = std::min(best, y);
            }
            t->next_[std::size_t{d} * N + at] = Node{best};
        }
    }
}

void Topology::index_groups() {
    group_begin_.assign(channels_.size() + 1, 0);
    for (const LinkGroup& g : groups_)
        for (ChannelId c : g.channels) ++group_begin_[idx(c) + 1];
    std::partial_sum(group_begin_.begin(), group_begin_.end(), group_begin_.begin());
    group_ids_.assign(group_begin_.back(), 0);
    std::vector<std::uint32_t> at(group_begin_.begin(), group_begin_.end() - 1);
    for (std::uint32_t g = 0; g < groups_.size(); ++g)
        for (ChannelId c : groups_[g].channels) group_ids_[at[idx(c)]++] = g;
}

void Topology::finish() {
    std::sort(channels_.begin(), channels_.end(),
              [](const Channel& a, const Channel& b) { return std::pair(a.from, a.to) < std::pair(b.from, b.to); });
    channels_.erase(std::unique(channels_.begin(), channels_.end(),
                                [](const Channel& a, const Channel& b) { return a.from == b.from && a.to == b.to; }),
                    channels_.end());
    std::uint32_t N = nodes();
    out_begin_.assign(N + 1, 0);
    in_begin_.assign(N + 1, 0);
    for (const Channel& c : channels_) {
        ++out_begin_[idx(c.from) + 1];
        ++in_begin_[idx(c.to) + 1];
    }
    std::partial_sum(out_begin_.begin(), out_begin_.end(), out_begin_.begin());
    std::partial_sum(in_begin_.begin(), in_begin_.end(), in_begin_.begin());
    out_ids_.resize(channels_.size());
    in_ids_.resize(channels_.size());
    std::vector<std::uint32_t> fill_in(in_begin_.begin(), in_begin_.end() - 1);
    for (std::uint32_t i = 0; i < channels_.size(); ++i) {
        out_ids_[i] = ChannelId{i};  // channels are sorted by from, so out lists are contiguous
        in_ids_[fill_in[idx(channels_[i].to)]++] = ChannelId{i};
    }
    // Trees: the channels to and from each node's parent, so routing does no searching.
    up_.assign(parent_.size(), ChannelId{0});
    down_.assign(parent_.size(), ChannelId{0});
    for (std::uint32_t v = 0; v < parent_.size(); ++v) {
        if (idx(parent_[v]) >= N) continue;
        up_[v] = *find_channel(Node{v}, parent_[v]);
        down_[v] = *find_channel(parent_[v], Node{v});
    }
}

std::optional<ChannelId> Topology::find_channel(Node from, Node to) const {
    if (idx(from) >= nodes() || idx(to) >= nodes()) return std::nullopt;
    auto outs = out_channels(from);
    auto it = std::lower_bound(outs.begin(), outs.end(), to,
                               [&](ChannelId c, Node t) { return idx(channels_[idx(c)].to) < idx(t); });
    if (it != outs.end() && channels_[idx(*it)].to == to) return *it;
    return std::nullopt;
}

std::string Topology::node_name(Node n) const {
    std::uint32_t v = idx(n);
    if (v < processors_) return std::to_string(v);
    if (is_tree()) {
        std::uint32_t l = level_[v];
        return fmt::format("r{}.{}", l, v - level_first_[l]);
    }
    return fmt::format("r1.{}", v - processors_);
}

std::optional<Node> Topology::find_node(std::string_view s) const {
    auto number = [](std::string_view t) -> std::optional<std::uint32_t> {
        if (t.size() > 1 && t[0] == '0') return std::nullopt;  // a node has one name: 3, not 03 (support/number.hpp)
        return support::parse_decimal<std::uint32_t>(t);
    };
    if (!s.empty() && s[0] == 'r') {
        std::size_t dot = s.find('.');
        if (dot == std::string_view::npos) return std::nullopt;
        auto l = number(s.substr(1, dot - 1));
        auto i = number(s.substr(dot + 1));
        if (!l || !i) return std::nullopt;
        if (is_tree()) {
            if (*l < 1 || *l > tree_levels_ || *i >= level_first_[*l + 1] - level_first_[*l]) return std::nullopt;
            return Node{level_first_[*l] + *i};
        }
        if (*l != 1 || *i >= routers_) return std::nullopt;
        return Node{processors_ + *i};
    }
    if (!s.empty() && s[0] == '(' && s.back() == ')' && !dims_.empty()) {
        auto parts = split(s.substr(1, s.size() - 2), ',');
        if (parts.size() != dims_.size()) return std::nullopt;
        std::uint32_t v = 0;
        for (std::size_t i = 0; i < parts.size(); ++i) {
            std::string_view p = parts[i];
            while (!p.empty() && p.front() == ' ') p.remove_prefix(1);
            while (!p.empty() && p.back() == ' ') p.remove_suffix(1);
            auto c = number(p);
            if (!c || *c >= dims_[i]) return std::nullopt;
            v += *c * strides_[i];
        }
        return Node{v};
    }
    auto v = number(s);
    if (!v || *v >= processors_) return std::nullopt;
    return Node{*v};
}

void Topology::route(Node src, Node dst, std::vector<ChannelId>& out) const {
    COLLSCHED_ASSERT(idx(src) < nodes() && idx(dst) < nodes());
    if (src == dst) return;
    auto must = [&](Node a, Node b) {
        auto c = find_channel(a, b);
        COLLSCHED_ASSERT(c.has_value());
        return *c;
    };
    if (is_tree()) {
        // Count the hops up from src and from dst to the lowest common ancestor, then write the
        // up half forward and the down half backward from dst (no searching, no allocation:
        // this is the lowering's hot path).
        std::uint32_t a = idx(src), b = idx(dst), ua = 0, ub = 0;
        while (level_[a] < level_[b]) a = idx(parent_[a]), ++ua;
        while (level_[b] < level_[a]) b = idx(parent_[b]), ++ub;
        while (a != b) a = idx(parent_[a]), b = idx(parent_[b]), ++ua, ++ub;
        const std::size_t base = out.size();
        out.resize(base + ua + ub);
        a = idx(src);
        for (std::uint32_t k = 0; k < ua; ++k, a = idx(parent_[a])) out[base + k] = up_[a];
        b = idx(dst);
        for (std::uint32_t k = 0; k < ub; ++k, b = idx(parent_[b])) out[base + ua + ub - 1 - k] = down_[b];
        return;
    }
    switch (family_) {
        case Family::ring: {
            std::uint32_t n = processors_, s = idx(src), d = idx(dst);
            std::uint32_t fwd = (d + n - s) % n;
            bool up = fwd <= n - fwd;
            for (std::uint32_t at = s; at != d;) {
                std::uint32_t nx = up ? (at + 1) % n : (at + n - 1) % n;
                out.push_back(must(Node{at}, Node{nx}));
                at = nx;
            }
            return;
        }
        case Family::linear: {
            std::uint32_t s = idx(src), d = idx(dst);
            for (std::uint32_t at = s; at != d;) {
                std::uint32_t nx = at < d ? at + 1 : at - 1;
                out.push_back(must(Node{at}, Node{nx}));
                at = nx;
            }
            return;
        }
        case Family::complete: out.push_back(must(src, dst)); return;
        case Family::graph:
        case Family::butterfly: {
            std::uint32_t N = nodes();
            for (Node at = src; at != dst;) {
                Node nx = next_[std::size_t{idx(dst)} * N + idx(at)];
                out.push_back(must(at, nx));
                at = nx;
            }
            return;
        }
        default: break;
    }
    // Products: correct one coordinate at a time, each by its factor's route.
    std::uint32_t at = idx(src);
    std::vector<ChannelId> fr;
    for (std::uint32_t i : route_order_) {
        std::uint32_t c = at / strides_[i] % dims_[i];
        std::uint32_t want = idx(dst) / strides_[i] % dims_[i];
        fr.clear();
        factors_[i]->route(Node{c}, Node{want}, fr);
        for (ChannelId fc : fr) {
            const Channel& ch = factors_[i]->channel(fc);
            std::uint32_t nx = at + (idx(ch.to) - idx(ch.from)) * strides_[i];
            out.push_back(must(Node{at}, Node{nx}));
            at = nx;
        }
    }
    COLLSCHED_ASSERT(at == idx(dst));
}

std::uint32_t Topology::distance(Node src, Node dst) const {
    if (is_tree()) {
        std::uint32_t a = idx(src), b = idx(dst), d = 0;
        while (a != b) {
            if (level_[a] < level_[b]) {
                a = idx(parent_[a]);
                d += 1;
            } else if (level_[b] < level_[a]) {
                b = idx(parent_[b]);
                d += 1;
            } else {
                a = idx(parent_[a]);
                b = idx(parent_[b]);
                d += 2;
            }
        }
        return d;
    }
    thread_local std::vector<ChannelId> r;
    r.clear();
    route(src, dst, r);
    return static_cast<std::uint32_t>(r.size());
}

std::uint32_t Topology::diameter() const {
    if (is_tree()) return 2 * tree_levels_;
    std::uint32_t best = 0;
    std::uint32_t P = processors_;
    if (std::uint64_t{P} * P > (1u << 22)) {
        for (std::uint32_t d = 0; d < P; ++d) best = std::max(best, distance(Node{0}, Node{d}));
        return best;  // vertex-transitive families; a bound for the others
    }
    for (std::uint32_t s = 0; s < P; ++s)
        for (std::uint32_t d = 0; d < P; ++d) best = std::max(best, distance(Node{s}, Node{d}));
    return best;
}

Model Topology::default_model() const {
    Model m;
    if (family_ == Family::ideal) {
        m.ports = Ports::single;
        m.queues = QueueKind::none;
    }
    return m;
}

std::shared_ptr<const Topology> Topology::make(Family fam, const TopologyArgs& a, std::string_view spec) {
    auto size = [&](std::size_t i) {
        COLLSCHED_ASSERT(i < a.sizes.size());
        return a.sizes[i];
    };
    auto tree_size = [&](std::uint64_t n, std::uint64_t b) {
        if (n > max_processors) check_processors(spec, n);
        if (n < b || !is_power_of(n, b)) bad_spec(spec, fmt::format("{} leaves is not a power of {} (at least {})", n, b, b));
        return n;
    };
    auto given_caps = [&] {
        std::vector<std::uint32_t> caps;
        for (std::int64_t v : a.caps) {
            if (v < 0) bad_spec(spec, fmt::format("'{}' is not a valid capacity (expected a positive integer)", v));
            if (v > (1 << 30)) bad_spec(spec, fmt::format("capacity {} is too large", v));
            caps.push_back(static_cast<std::uint32_t>(v));
        }
        return caps;
    };
    // Binary trees: the capacities given, else w of the subtree size per level (no w: 1).
    auto binary_caps = [&](std::uint64_t n) {
        if (!a.caps.empty()) return given_caps();
        std::vector<std::uint32_t> caps;
        for (std::uint32_t i = 1; i <= log_base(n, 2); ++i) {
            std::int64_t sub = std::int64_t{1} << (i - 1);
            std::int64_t c = a.w ? a.w(sub) : 1;
            if (c < 1 || c > (1ll << 30)) bad_spec(spec, fmt::format("w({}) = {}; capacities must be between 1 and 2^30", sub, c));
            caps.push_back(static_cast<std::uint32_t>(c));
        }
        return caps;
    };
    switch (fam) {
        case Family::bft:
        case Family::ideal: {
            std::uint64_t n = tree_size(size(0), 2);
            return Impl::tree(spec, fam, 2, n, binary_caps(n));
        }
        case Family::fattree: {
            std::uint64_t b = size(0);
            if (b < 2 || b > 1024) bad_spec(spec, "the arity must be between 2 and 1024");
            std::uint64_t n = tree_size(size(1), b);
            return Impl::tree(spec, Family::fattree, b, n, given_caps());
        }
        case Family::ring:
        case Family::linear:
        case Family::complete:
            if (size(0) < 2) bad_spec(spec, "the size must be at least 2");
            return Impl::base(spec, fam, size(0));
        case Family::mesh:
        case Family::torus: {
            // All dimensions first, so that a refusal names the real size (10^12 for 10^6 x 10^6).
            std::uint64_t total = 1;
            bool overflow = a.sizes.empty();
            for (std::uint64_t d : a.sizes) {
                if (d < 2) bad_spec(spec, fmt::format("dimension {} must be at least 2", d));
                if (total > std::numeric_limits<std::uint64_t>::max() / d) overflow = true;
                else total *= d;
            }
            if (overflow || total > max_processors)
                bad_spec(spec, fmt::format("{} processors ({}) is more than collsched supports ({})",
                                           overflow ? std::string("more than 2^64") : std::to_string(total), fmt::join(a.sizes, "x"),
                                           max_processors));
            const Family line = fam == Family::mesh ? Family::linear : Family::ring;
            std::vector<std::shared_ptr<const Topology>> factors;
            for (std::uint64_t d : a.sizes) factors.push_back(Impl::base(fmt::format("{}:{}", to_string(line), d), line, d));
            return Impl::product(spec, fam, std::move(factors), false);
        }
        case Family::hypercube: {
            std::uint64_t d = size(0);
            if (d < 1 || d > 15) bad_spec(spec, "the dimension must be between 1 and 15");
            std::vector<std::shared_ptr<const Topology>> factors;
            for (std::uint64_t i = 0; i < d; ++i) factors.push_back(Impl::base("linear:2", Family::linear, 2));
            return Impl::product(spec, Family::hypercube, std::move(factors), true);
        }
        case Family::product:
            if (a.factors.size() < 2) bad_spec(spec, "a product needs at least two factors separated by '*'");
            return Impl::product(spec, Family::product, a.factors, false);
        case Family::graph:
            return Impl::graph(spec, a.file);
        case Family::butterfly:
            return Impl::butterfly(spec, size(0));
    }
    COLLSCHED_ASSERT(false);
    return nullptr;
}

}  // namespace collsched
