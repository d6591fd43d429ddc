/** \file
 * Topologies (DESIGN.md section 2): nodes, channels with capacities, node names and the
 * deterministic routing function of every family. A topology is built from a spec string
 * (`ebft:8`, `torus:3x5`, `product:ring:3*ring:5`, `graph:FILE.json`, ...) and is immutable
 * afterwards. Processors are nodes 0..P-1, routers follow; channels are sorted by (from, to) and
 * there is at most one channel per ordered pair of nodes.
 *
 * Routing rules (also in docs/topologies.md):
 *  - trees (bft, cbft, ebft, fattree, ideal): the unique path, up to the lowest common ancestor
 *    and down again;
 *  - ring: the shorter way round; a tie (distance n/2) goes the increasing way (i -> i+1);
 *  - linear, complete: the only shortest path;
 *  - mesh, torus, product: dimension by dimension in the order written (the first dimension,
 *    which is the most significant in the row-major numbering, first), each by its factor's rule;
 *  - hypercube: e-cube, lowest differing bit first;
 *  - graph, butterfly: shortest paths; at each node the next hop is the lowest-numbered neighbour
 *    that is one step closer to the destination.
 */
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "compiler/core/ids.hpp"
#include "compiler/core/model.hpp"
#include "support/budget.hpp"

namespace collsched {

enum class Family : std::uint8_t { bft, fattree, ideal, ring, linear, mesh, torus, hypercube, complete, product, graph, butterfly };

std::string_view to_string(Family);

struct Channel {
    Node from;
    Node to;
    std::uint32_t cap;
    std::uint32_t level;  ///< fat trees: the branch level i (between levels i-1 and i); else 0
    bool operator==(const Channel&) const = default;
};

/// A link group (docs/semantics.md, "Link groups"): channels that share one capacity per step, as
/// the port budget of a GPU on an NVSwitch or a NIC. In a step of r rounds the group carries at
/// most r * cap transfers over all its channels together.
struct LinkGroup {
    std::string name;
    std::uint32_t cap = 1;
    std::vector<ChannelId> channels;  ///< sorted, distinct
    bool operator==(const LinkGroup&) const = default;
};

/// What a router can do besides forwarding (graph files' "switches", docs/topologies.md): add
/// partials of one chunk (reduce: NVLink SHARP's multimem.ld_reduce, InfiniBand SHARP) and send
/// one copy on several channels in one step (multicast: multimem.st), at `efficiency` of its
/// ports' bandwidth (NCCL's nvlsEfficiency: 0.85 on Hopper, 0.74 on Blackwell).
struct SwitchFunctions {
    bool reduce = false;
    bool multicast = false;
    double efficiency = 1.0;  ///< in (0, 1]: the bandwidth of its channels is their links' times this
    std::string note;
    bool operator==(const SwitchFunctions&) const = default;
};

/// The speed of a channel for predicted times (docs/time.md): a latency alpha in seconds and a
/// bandwidth in bytes per second (the channel's, each direction: its capacity times the
/// bandwidth of one unit of capacity). Capacities stay what they are for the step model.
struct LinkSpeed {
    double alpha = 0;
    double bandwidth = 1;
    bool operator==(const LinkSpeed&) const = default;
};

/// The speeds a topology takes where nothing else is said (the built-in families, graph files
/// without speeds): 1 us of latency and 10 GB/s per unit of capacity (docs/time.md).
inline constexpr double default_alpha = 1e-6;
inline constexpr double default_unit_bandwidth = 10e9;

/// Most processors a topology may have: messages m(s,d), b(s), a(s) are numbered densely in 32 bits.
inline constexpr std::uint32_t max_processors = 65534;
/// Most channels a topology may have (bounds memory before anything is allocated): 2^24, so a
/// topology takes at most about 400 MB, and the verifier and simulator a few bytes more per
/// channel. complete:4096 (16,773,120 channels) is the largest complete graph, as for graphs
/// given as files (at most 4096 nodes).
#ifndef FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION
inline constexpr std::uint64_t max_channels = 1ull << 24;
#else
/// Fuzzing builds (fuzz/, the libFuzzer convention): the same checks with a smaller bound, so that
/// one input stays fast under coverage instrumentation.
inline constexpr std::uint64_t max_channels = 1ull << 18;
#endif

class Topology;

/// A family's arguments as values: what a spec string says, for Topology::make.
struct TopologyArgs {
    /// ring, linear, complete, bft, ideal: {n}; fattree: {arity, leaves}; mesh, torus: the
    /// dimensions; hypercube, butterfly: {d}.
    std::vector<std::uint64_t> sizes = {};
    /// bft, fattree: the capacity per level, leaves first (checked: 1 .. 2^30).
    std::vector<std::int64_t> caps = {};
    /// bft, ideal, when `caps` is empty: the capacity of the channel above a subtree of k leaves,
    /// w(k) for k = 1, 2, 4, ... (ebft: k; cbft and ideal without w: 1). May throw.
    std::function<std::int64_t(std::int64_t)> w = {};
    /// product: the factors, first most significant.
    std::vector<std::shared_ptr<const Topology>> factors = {};
    /// graph: the JSON file.
    std::string file = {};
    /// graph: the limits of the run, polled while the file is read (a 4,096-GPU machine is 85 MB of
    /// JSON, seconds to read): LimitReached ("time limit (reading graph:FILE)") once reached.
    RunLimits limits = {};
};

class Topology {
public:
    /// Builds a topology from its spec. Throws InputError with what was wrong and what was expected.
    /// `limits`: polled while a graph file is read (TopologyArgs::limits).
    static std::shared_ptr<const Topology> parse(std::string_view spec, const RunLimits& limits = {});
    /// Builds a topology of `family` from typed arguments (the lowering's way, which checks them
    /// as parse() does); `name` is only printed: it is spec() and names the topology in messages
    /// and files, so it should be the spec that parse() would build the same topology from.
    /// Throws InputError.
    static std::shared_ptr<const Topology> make(Family family, const TopologyArgs& args, std::string_view name);
    /// The processor count of a `graph:FILE` spec as its file's first keys state it, read from
    /// the first 64 KiB without building anything (files written by `collsched machine` state it
    /// first): refusals that follow from the size alone come before seconds of reading. nullopt
    /// for other specs, pipes, and files that state it later, after the edges, or not as a count.
    /// Not checked: parse() checks it.
    static std::optional<std::uint64_t> declared_processors(std::string_view spec);

    const std::string& spec() const { return spec_; }
    Family family() const { return family_; }
    std::uint32_t processors() const { return processors_; }
    std::uint32_t routers() const { return routers_; }
    std::uint32_t nodes() const { return processors_ + routers_; }
    bool is_processor(Node n) const { return idx(n) < processors_; }

    std::span<const Channel> channels() const { return channels_; }
    const Channel& channel(ChannelId c) const { return channels_[idx(c)]; }
    std::span<const ChannelId> out_channels(Node n) const {
        return {out_ids_.data() + out_begin_[idx(n)], out_ids_.data() + out_begin_[idx(n) + 1]};
    }
    std::span<const ChannelId> in_channels(Node n) const {
        return {in_ids_.data() + in_begin_[idx(n)], in_ids_.data() + in_begin_[idx(n) + 1]};
    }
    /// The link groups (graph files' "groups"); empty for the built-in families.
    const std::vector<LinkGroup>& groups() const { return groups_; }
    /// Per channel, the indices of the groups it belongs to (empty when there are no groups).
    std::span<const std::uint32_t> groups_of(ChannelId c) const {
        if (group_begin_.empty()) return {};
        return {group_ids_.data() + group_begin_[idx(c)], group_ids_.data() + group_begin_[idx(c) + 1]};
    }

    /// The speed of a channel (docs/time.md): a graph file's, else default_alpha and
    /// cap * default_unit_bandwidth.
    LinkSpeed speed(ChannelId c) const {
        if (!speeds_.empty()) return speeds_[idx(c)];
        return {default_alpha, channel(c).cap * default_unit_bandwidth};
    }
    /// The bandwidth of a link group in bytes per second: its cap times its bandwidth per unit.
    double group_bandwidth(std::uint32_t g) const {
        return g < group_bandwidth_.size() ? group_bandwidth_[g] : groups_[g].cap * default_unit_bandwidth;
    }
    /// Whether the graph file declares switch functions for some router ("switches"). When it
    /// does not, the model knobs combine=routers and multicast=routers apply to every router.
    bool declares_switches() const { return !switches_.empty(); }
    /// The declared functions of router r (all false, efficiency 1, when it declares none).
    SwitchFunctions switch_functions(Node r) const {
        return switches_.empty() || is_processor(r) ? SwitchFunctions{} : switches_[idx(r) - processors_];
    }
    /// Whether router r may add partials under combine=routers: every router when the file
    /// declares no switches, else the routers declared with "reduce" (docs/semantics.md).
    bool can_reduce(Node r) const { return switches_.empty() || (!is_processor(r) && switches_[idx(r) - processors_].reduce); }
    /// Whether router r sends one copy on several channels under multicast=routers (as can_reduce).
    bool can_multicast(Node r) const { return switches_.empty() || (!is_processor(r) && switches_[idx(r) - processors_].multicast); }

    /// Whether a graph file stated speeds (else every channel has the defaults).
    bool has_speeds() const { return speeds_given_; }
    /// The boxes a graph file declares (`"boxes": K`: K boxes of P/K consecutive processors, as
    /// `collsched machine` numbers them; docs/formats.md); 0 when the file does not say.
    std::uint32_t declared_boxes() const { return boxes_; }

    /// The channel from -> to, if the two nodes are adjacent.
    std::optional<ChannelId> find_channel(Node from, Node to) const;

    /// Processors: decimal; fat-tree routers `r<level>.<index>`; graph routers `r1.<index>`.
    std::string node_name(Node n) const;
    /// Accepts node_name() spellings and, for mesh, torus and product, `(x,y,...)` coordinates.
    std::optional<Node> find_node(std::string_view name) const;

    /// Tree families: levels 1..L of the routers (0 for processors), the number of levels L, the arity.
    std::uint32_t level(Node n) const { return level_.empty() ? 0 : level_[idx(n)]; }
    std::uint32_t tree_levels() const { return tree_levels_; }
    std::uint32_t arity() const { return arity_; }
    bool is_tree() const { return family_ == Family::bft || family_ == Family::fattree || family_ == Family::ideal; }
    /// Capacities per tree level 1..L (index 0 is level 1).
    const std::vector<std::uint32_t>& level_caps() const { return level_caps_; }

    /// Mesh, torus, product and hypercube: the factor sizes, first factor most significant.
    const std::vector<std::uint32_t>& dims() const { return dims_; }

    /// Appends the channels of the route from src to dst (empty when src == dst).
    void route(Node src, Node dst, std::vector<ChannelId>& out) const;
    std::vector<ChannelId> route(Node src, Node dst) const {
        std::vector<ChannelId> r;
        route(src, dst, r);
        return r;
    }
    std::uint32_t distance(Node src, Node dst) const;
    std::uint32_t diameter() const;

    /// The family's default model (the ideal fat tree: single ports, no queues; others: hop, multi).
    Model default_model() const;

    /// Graphviz DOT and the JSON description (processors, routers, channels with from/to/cap).
    std::string to_dot() const;
    std::string to_json() const;

    struct Impl;  // construction helpers (topology.cpp)

private:
    Topology() = default;
    void finish();  // sorts channels, builds adjacency

    std::string spec_;
    Family family_ = Family::graph;
    std::uint32_t processors_ = 0;
    std::uint32_t routers_ = 0;
    std::vector<Channel> channels_;
    std::vector<std::uint32_t> out_begin_, in_begin_;
    std::vector<ChannelId> out_ids_, in_ids_;
    // trees
    std::uint32_t arity_ = 0, tree_levels_ = 0;
    std::vector<std::uint32_t> level_caps_, level_, level_first_;  // level_first_[l]: first node id of level l
    std::vector<Node> parent_;
    std::vector<ChannelId> up_, down_;  // per node: the channel to its parent, and from its parent
    // products (mesh, torus, hypercube, product): factors, first most significant
    std::vector<std::shared_ptr<const Topology>> factors_;
    std::vector<std::uint32_t> dims_, strides_, route_order_;
    // graph, butterfly: next hop table, next_[dst * nodes + at]
    std::vector<Node> next_;
    // link groups, and per channel the groups it is in (CSR)
    std::vector<LinkGroup> groups_;
    std::vector<std::uint32_t> group_begin_, group_ids_;
    void index_groups();
    // link speeds (graph files): per channel, and per group in bytes per second; empty = defaults
    std::vector<LinkSpeed> speeds_;
    std::vector<double> group_bandwidth_;
    bool speeds_given_ = false;
    std::uint32_t boxes_ = 0;  // graph files' "boxes"; 0 = not declared
    // switch functions per router (graph files' "switches"); empty = none declared
    std::vector<SwitchFunctions> switches_;
};

/// The spec with the file of every `graph:FILE` in it (alone or as a factor of a product)
/// replaced by `map(FILE)`; other specs unchanged.
std::string map_graph_files(std::string_view spec, const std::function<std::string(const std::string&)>& map);
/// The spec to write into `file`: a relative graph file (relative to the working directory)
/// becomes relative to the directory of `file`, so the written file can be read from anywhere
/// and moved with its graph (docs/formats.md, "Graph files in saved files"). Absolute paths
/// stay; `file` "-" or "<...>" (no file) leaves the spec as it is.
std::string spec_written_at(std::string_view spec, std::string_view file);
/// The spec read from `file`, for Topology::parse: a relative graph file is relative to the
/// directory of `file`, or, when no such file exists there and one exists relative to the working
/// directory, to the working directory (files written before this rule).
std::string spec_read_from(std::string_view spec, std::string_view file);

}  // namespace collsched
