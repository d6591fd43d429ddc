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
#include "support/assert.hpp"
#include "support/error.hpp"
#include "support/number.hpp"
#include "support/units.hpp"

namespace collsched {

namespace {

/// The next-hop table of a dense graph (issue 27: a 1,024-GPU multibox has a million channels,
/// and the BFS per destination below costs N * E, 2 * 10^9 steps): the same distances and the
/// same lowest-numbered next hops with rows of out-neighbours as bitsets. A node joins level L+1
/// when its row meets level L; its next hop is the first bit of its row within level L. Each
/// level costs (nodes left) * N/64 words, so this is for graphs of small diameter: the caller
/// takes it when E >= N^2 / 16. Returns false (table untouched) when some node cannot reach d,
/// for the caller's search to name the pair.
bool dense_next_hops(const Topology& t, std::vector<Node>& next, const std::function<void()>& poll) {
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
        poll();
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

void Topology::Impl::next_hops(Topology& top, std::string_view file, const RunLimits& limits) {
    auto where = [&](std::string_view what) { return fmt::format("{}: {}", file, what); };
    const std::string reading = fmt::format("the routes of {}", file);
    const auto poll = [&] { limits.check(reading); };
    Topology* t = &top;
    std::uint32_t N = t->nodes();
    t->next_.assign(std::size_t{N} * N, Node{0});
    if (N >= 64 && t->channels().size() >= std::size_t{N} * N / 16 && dense_next_hops(*t, t->next_, poll)) return;
    std::vector<std::uint32_t> dist(N), queue(N);
    constexpr std::uint32_t inf = std::numeric_limits<std::uint32_t>::max();
    for (std::uint32_t d = 0; d < N; ++d) {
        if (d % 16 == 0) poll();
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
    // a machine whose switches reduce or multicast runs with those functions on (docs/semantics.md)
    for (const SwitchFunctions& f : switches_) {
        m.combine_routers = m.combine_routers || f.reduce;
        m.multicast_routers = m.multicast_routers || f.multicast;
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
    // A product's channels: each factor's once per node of the others (product:complete:180*complete:180, 11.6
    // million channels, reached 331 MB under a budget of 200 MiB before this estimate), 24 bytes each as complete's.
    auto reserve_product = [&](const std::vector<std::shared_ptr<const Topology>>& factors) {
        std::uint64_t nodes = 1, channels = 0;
        for (const auto& f : factors) nodes = mul_sat(nodes, f->nodes());
        for (const auto& f : factors) channels += mul_sat(nodes / f->nodes(), f->channels().size());
        a.limits.reserve(mul_sat(channels, 24), fmt::format("the list of {} channels of {}", channels, spec));
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
        case Family::complete: {
            if (size(0) < 2) bad_spec(spec, "the size must be at least 2");
            // complete: n (n - 1) channels, about 24 bytes each with their in and out lists
            // (measured: complete:4096, 16.8 million channels, 395 MB): estimated against the
            // run's budget before they are built (LimitReached; no budget for callers without
            // RunLimits). A ring or a line has 2 n.
            if (fam == Family::complete) {
                const std::uint64_t n = size(0), channels = mul_sat(n, n - 1);
                a.limits.reserve(mul_sat(channels, 24), fmt::format("the list of {} channels of {}", channels, spec));
            }
            return Impl::base(spec, fam, size(0));
        }
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
            reserve_product(factors);
            return Impl::product(spec, fam, std::move(factors), false);
        }
        case Family::hypercube: {
            std::uint64_t d = size(0);
            if (d < 1 || d > 15) bad_spec(spec, "the dimension must be between 1 and 15");
            std::vector<std::shared_ptr<const Topology>> factors;
            for (std::uint64_t i = 0; i < d; ++i) factors.push_back(Impl::base("linear:2", Family::linear, 2));
            reserve_product(factors);
            return Impl::product(spec, Family::hypercube, std::move(factors), true);
        }
        case Family::product:
            if (a.factors.size() < 2) bad_spec(spec, "a product needs at least two factors separated by '*'");
            reserve_product(a.factors);
            return Impl::product(spec, Family::product, a.factors, false);
        case Family::graph:
            return Impl::graph(spec, a.file, a.limits);
        case Family::butterfly:
            return Impl::butterfly(spec, size(0));
    }
    COLLSCHED_ASSERT(false);
    return nullptr;
}

}  // namespace collsched
