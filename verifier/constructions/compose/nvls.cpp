// NVLS constructions (verifier/constructions/compose/nvls.hpp): send tables for a switch that reduces and
// multicasts, built transfer by transfer; the partials they send are the sets the buffer rule
// gives (docs/semantics.md, "Reductions").
#include "verifier/constructions/compose/nvls.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>

#include <fmt/format.h>

#include "compiler/table/builder.hpp"
#include "compiler/table/partials.hpp"
#include "compiler/topology/machine_view.hpp"
#include "support/error.hpp"

namespace collsched::compose {

namespace {

/// The largest bandwidth of a channel with a processor at one end or both.
double fastest_at_processors(const Topology& t) {
    double fastest = 0;
    for (std::uint32_t c = 0; c < t.channels().size(); ++c) {
        const Channel& ch = t.channel(ChannelId{c});
        if (t.is_processor(ch.from) || t.is_processor(ch.to)) fastest = std::max(fastest, t.speed(ChannelId{c}).bandwidth);
    }
    return fastest;
}

bool fabric_switch_below(const Topology& t, Node r, double fastest) {
    if (t.is_processor(r)) return false;
    const SwitchFunctions f = t.switch_functions(r);
    if (!f.reduce || !f.multicast) return false;
    for (ChannelId c : t.out_channels(r))
        if (t.is_processor(t.channel(c).to) && t.speed(c).bandwidth >= fastest / 4) return false;
    for (ChannelId c : t.in_channels(r))
        if (t.is_processor(t.channel(c).from) && t.speed(c).bandwidth >= fastest / 4) return false;
    return true;
}

}  // namespace

bool fabric_switch(const Topology& t, Node r) { return fabric_switch_below(t, r, fastest_at_processors(t)); }

std::vector<NvlsBox> nvls_boxes(const Topology& t) {
    std::vector<NvlsBox> boxes;
    std::vector<char> seen(t.processors(), 0);
    const double fastest = fastest_at_processors(t);
    for (std::uint32_t r = t.processors(); r < t.nodes(); ++r) {
        const SwitchFunctions f = t.switch_functions(Node{r});
        if (!f.reduce || !f.multicast || fabric_switch_below(t, Node{r}, fastest)) continue;
        NvlsBox b{{}, Node{r}};
        for (ChannelId c : t.out_channels(Node{r})) {
            const Node p = t.channel(c).to;
            if (t.is_processor(p) && t.find_channel(p, Node{r})) b.gpus.push_back(p);
        }
        std::sort(b.gpus.begin(), b.gpus.end());
        if (b.gpus.size() < 2) continue;
        for (Node p : b.gpus) {
            if (seen[idx(p)]) throw InputError(fmt::format("{}: processor {} is on two NVLS switches", t.spec(), idx(p)));
            seen[idx(p)] = 1;
        }
        boxes.push_back(std::move(b));
    }
    for (std::uint32_t p = 0; p < t.processors(); ++p)
        if (!seen[p])
            throw InputError(fmt::format("{}: processor {} is on no switch that reduces and multicasts (a router declared with "
                                         "\"reduce\" and \"multicast\" in the graph file's \"switches\", docs/topologies.md)",
                                         t.spec(), p));
    return boxes;
}

namespace {

/// Builds one table: transfers named by their sender and receiver, partials by their sets.
class Writer {
public:
    Writer(std::shared_ptr<const Topology> topo, std::string_view collective, std::uint32_t chunks)
        : topo_(topo), b_(topo, topo->default_model(), make(*topo, collective, chunks)), ms_(b_.messages()) {
        Model m = topo->default_model();
        if (!m.combine_routers || !m.multicast_routers)
            throw InputError(fmt::format("{}: NVLS needs a machine whose switches reduce and multicast", topo->spec()));
    }

    void send(Step s, Node from, Node to, MessageId m) {
        auto c = topo_->find_channel(from, to);
        if (!c) throw InputError(fmt::format("{}: no channel {} -> {}", topo_->spec(), topo_->node_name(from), topo_->node_name(to)));
        b_.hop(s, *c, m);
    }
    MessageId partial(const std::vector<std::uint32_t>& sources, std::uint32_t chunk) {
        return partial_message(b_.composites(), ms_, SourceSet(sources), chunk);
    }
    MessageId value(Node p, std::uint32_t chunk) const { return ms_.value(idx(p), chunk); }
    MessageId datum(Node p, std::uint32_t chunk) const { return ms_.broadcast(idx(p), chunk); }

    /// The sorted table, each step given the rounds its busiest channel or group needs.
    SendTable finish() && {
        SendTable t = std::move(b_).finish();
        std::map<Step, std::uint32_t> rounds;
        std::map<std::pair<Step, std::uint32_t>, std::uint64_t> load, gload;
        for (const Transfer& x : t.transfers) {
            ++load[{x.step, idx(x.channel)}];
            for (std::uint32_t g : topo_->groups_of(x.channel)) ++gload[{x.step, g}];
        }
        auto need = [&](Step s, std::uint64_t n, std::uint32_t cap) {
            auto r = static_cast<std::uint32_t>((n + cap - 1) / cap);
            rounds[s] = std::max(rounds[s], r);
        };
        for (const auto& [k, n] : load) need(k.first, n, topo_->channel(ChannelId{k.second}).cap);
        for (const auto& [k, n] : gload) need(k.first, n, topo_->groups()[k.second].cap);
        bool any = false;
        for (const auto& [s, r] : rounds) any = any || r > 1;
        if (any) {
            t.step_rounds.assign(t.steps(), 1);
            for (const auto& [s, r] : rounds) t.step_rounds[s - 1] = r;
            t.normalize_rounds();
        }
        return t;
    }

private:
    static Collective make(const Topology& t, std::string_view name, std::uint32_t chunks) {
        Collective c = Collective::parse(name, t);
        c.set_chunks(chunks, t);
        return c;
    }
    std::shared_ptr<const Topology> topo_;
    TableBuilder b_;
    Messages ms_;
};

std::vector<std::uint32_t> ids_except(const NvlsBox& b, Node skip) {
    std::vector<std::uint32_t> out;
    for (Node p : b.gpus)
        if (p != skip) out.push_back(idx(p));
    return out;
}

std::vector<std::uint32_t> ids(const NvlsBox& b) { return ids_except(b, Node{~0u}); }

const NvlsBox& one_box(const Topology& t, const std::vector<NvlsBox>& boxes) {
    if (boxes.size() != 1 || boxes[0].gpus.size() != t.processors())
        throw InputError(fmt::format("{}: this NVLS construction takes one box: every processor on one switch that reduces and "
                                     "multicasts ({} such switches)",
                                     t.spec(), boxes.size()));
    return boxes[0];
}

/// Reduce-scatter of one chunk through the switch: the GPUs other than `owner` send their
/// contribution (its set `parts(p)`) in step s, the switch sends the sum to the owner in s + 1.
void switch_reduce(Writer& w, const NvlsBox& b, Node owner, std::uint32_t chunk, Step s, bool with_owner = false) {
    for (Node p : b.gpus)
        if (p != owner || with_owner) w.send(s, p, b.sw, w.value(p, chunk));
    const auto others = with_owner ? ids(b) : ids_except(b, owner);
    w.send(s + 1, b.sw, owner, others.size() == 1 ? w.value(Node{others[0]}, chunk) : w.partial(others, chunk));
}

/// Multicast of message m held by `owner` through the switch to the other GPUs of the box.
void switch_multicast(Writer& w, const NvlsBox& b, Node owner, MessageId m, Step s) {
    w.send(s, owner, b.sw, m);
    for (Node p : b.gpus)
        if (p != owner) w.send(s + 1, b.sw, p, m);
}

}  // namespace

SendTable nvls_allreduce(std::shared_ptr<const Topology> topo, const NvlsPlan& plan) {
    const auto boxes = nvls_boxes(*topo);
    const NvlsBox& b = one_box(*topo, boxes);
    const std::uint32_t P = topo->processors(), k = std::max(1u, plan.pieces);
    Writer w(topo, "allreduce", k * P);
    const auto all = ids(b);
    for (std::uint32_t j = 0; j < k; ++j) {
        const Step s = j + 1;
        const bool direct = plan.direct_period > 0 && (j + 1) % plan.direct_period == 0;
        for (std::uint32_t i = 0; i < P; ++i) {
            const Node owner = b.gpus[i];
            const std::uint32_t c = j * P + i;
            const MessageId sum = w.partial(all, c);
            if (direct) {  // all-pairs over the GPUs' own channels: to the owner, then from it
                for (Node p : b.gpus)
                    if (p != owner) w.send(s, p, owner, w.value(p, c));
                for (Node p : b.gpus)
                    if (p != owner) w.send(s + 1, owner, p, sum);
                continue;
            }
            switch_reduce(w, b, owner, c, s, plan.owner_through_switch);
            switch_multicast(w, b, owner, sum, s + 2);
        }
    }
    return std::move(w).finish();
}

SendTable nccl_nvls_allreduce(std::shared_ptr<const Topology> topo, const NcclNvlsLayout& l) {
    const auto boxes = nvls_boxes(*topo);
    const NvlsBox& b = one_box(*topo, boxes);
    const std::uint32_t P = topo->processors();
    if (l.channels == 0 || l.loops == 0 || l.heads == 0 || l.heads > P)
        throw InputError(fmt::format("NCCL's NVLS layout: {} channels, {} loops, {} heads on {} GPUs", l.channels, l.loops, l.heads, P));
    const std::uint32_t B = l.channels, Q = l.loops * l.heads;
    Writer w(topo, "allreduce", B * Q);
    const auto all = ids(b);
    // a GPU's transfers into the switch in program order: the q-th scatter, then the store of the chunk a loop
    // (heads chunks) earlier, so that a store never holds up the scatters of the loop after its own
    for (std::uint32_t q = 0; q < Q; ++q)
        for (std::uint32_t ch = 0; ch < B; ++ch) {
            const std::uint32_t c = q * B + ch;
            const Node head = b.gpus[q % l.heads];
            const Step s = 4 * q + 1, t = 4 * (q + l.heads) + 2;
            for (Node p : b.gpus) w.send(s, p, b.sw, w.value(p, c));
            const MessageId sum = w.partial(all, c);
            w.send(t, b.sw, head, sum);
            switch_multicast(w, b, head, sum, t + 1);
        }
    return std::move(w).finish();
}

SendTable nvls_reduce_scatter(std::shared_ptr<const Topology> topo, const NvlsPlan& plan) {
    const auto boxes = nvls_boxes(*topo);
    const NvlsBox& b = one_box(*topo, boxes);
    const std::uint32_t P = topo->processors(), k = std::max(1u, plan.pieces);
    Writer w(topo, "reduce_scatter", k * P);
    for (std::uint32_t j = 0; j < k; ++j)
        for (std::uint32_t i = 0; i < P; ++i) switch_reduce(w, b, b.gpus[i], i * k + j, j + 1);
    return std::move(w).finish();
}

SendTable nvls_allgather(std::shared_ptr<const Topology> topo, const NvlsPlan& plan) {
    const auto boxes = nvls_boxes(*topo);
    const NvlsBox& b = one_box(*topo, boxes);
    const std::uint32_t k = std::max(1u, plan.pieces);
    Writer w(topo, "allgather", k);
    for (std::uint32_t j = 0; j < k; ++j)
        for (Node owner : b.gpus) switch_multicast(w, b, owner, w.datum(owner, j), j + 1);
    return std::move(w).finish();
}

SendTable nvls_rail_allreduce(std::shared_ptr<const Topology> topo, const NvlsPlan& plan) {
    const auto boxes = nvls_boxes(*topo);
    const std::uint32_t K = static_cast<std::uint32_t>(boxes.size()), P = static_cast<std::uint32_t>(boxes[0].gpus.size());
    for (const NvlsBox& b : boxes)
        if (b.gpus.size() != P) throw InputError(fmt::format("{}: the boxes differ in size", topo->spec()));
    const std::uint32_t k = std::max(1u, plan.pieces);
    Writer w(topo, "allreduce", k * P * K);
    // the sources of box b, and of boxes b-r .. b (mod K)
    auto boxes_sources = [&](std::uint32_t last, std::uint32_t count) {
        std::vector<std::uint32_t> out;
        for (std::uint32_t r = 0; r < count; ++r)
            for (Node p : boxes[(last + K - r) % K].gpus) out.push_back(idx(p));
        std::sort(out.begin(), out.end());
        return out;
    };
    for (std::uint32_t j = 0; j < k; ++j) {
        const Step s = j + 1;
        for (std::uint32_t i = 0; i < P; ++i)
            for (std::uint32_t q = 0; q < K; ++q) {
                const std::uint32_t c = (j * P + i) * K + q;
                for (const NvlsBox& b : boxes) switch_reduce(w, b, b.gpus[i], c, s);
            }
        // the owners of local index i form a ring over the boxes: reduce-scatter then allgather
        for (std::uint32_t i = 0; i < P; ++i) {
            for (std::uint32_t r = 0; r + 1 < K; ++r)
                for (std::uint32_t bi = 0; bi < K; ++bi) {  // box bi sends sub-chunk (bi - r) mod K
                    const std::uint32_t q = (bi + K - r) % K, c = (j * P + i) * K + q;
                    w.send(s + 2 + r, boxes[bi].gpus[i], boxes[(bi + 1) % K].gpus[i], w.partial(boxes_sources(bi, r + 1), c));
                }
            const auto all = boxes_sources(0, K);
            for (std::uint32_t r = 0; r + 1 < K; ++r)
                for (std::uint32_t bi = 0; bi < K; ++bi) {  // box bi holds the sum of sub-chunk (bi + 1 - r) mod K
                    const std::uint32_t q = (bi + 1 + K - r) % K, c = (j * P + i) * K + q;
                    w.send(s + 1 + K + r, boxes[bi].gpus[i], boxes[(bi + 1) % K].gpus[i], w.partial(all, c));
                }
            for (std::uint32_t q = 0; q < K; ++q) {
                const std::uint32_t c = (j * P + i) * K + q;
                for (const NvlsBox& b : boxes) switch_multicast(w, b, b.gpus[i], w.partial(all, c), s + 2 * K);
            }
        }
    }
    return std::move(w).finish();
}

namespace {

/// The parent of `rank` in NCCL's binary tree over n ranks rooted at 0, -1 for the root
/// (src/graph/trees.cc ncclGetBtree at 5067397c).
int btree_up(int n, int rank) {
    if (rank == 0) return -1;
    int bit = 1;
    for (; bit < n; bit <<= 1)
        if (bit & rank) break;
    int up = (rank ^ bit) | (bit << 1);
    if (up >= n) up = rank ^ bit;
    return up;
}

/// The parent of `rank` in tree t of NCCL's double binary tree (ncclGetDtree): tree 0 the binary
/// tree; tree 1 its mirror (n even) or the tree shifted by one rank (n odd).
int dtree_up(int n, int t, int rank) {
    if (t == 0) return btree_up(n, rank);
    if (n % 2 == 1) {
        const int u = btree_up(n, (rank - 1 + n) % n);
        return u == -1 ? -1 : (u + 1) % n;
    }
    const int u = btree_up(n, n - 1 - rank);
    return u == -1 ? -1 : n - 1 - u;
}

}  // namespace

SendTable nvls_tree_allreduce(std::shared_ptr<const Topology> topo, const NvlsPlan& plan) {
    const auto boxes = nvls_boxes(*topo);
    const int K = static_cast<int>(boxes.size());
    const std::uint32_t P = static_cast<std::uint32_t>(boxes[0].gpus.size());
    for (const NvlsBox& b : boxes)
        if (b.gpus.size() != P) throw InputError(fmt::format("{}: the boxes differ in size", topo->spec()));
    const std::uint32_t k = std::max(1u, plan.pieces);
    Writer w(topo, "allreduce", k * P * 2);
    for (int t = 0; t < 2; ++t) {
        // per box: parent, children, height (leaves 0) and depth (root 0) in tree t
        std::vector<int> up(K), height(K, 0), depth(K, 0);
        std::vector<std::vector<int>> down(K);
        for (int b = 0; b < K; ++b) {
            up[b] = dtree_up(K, t, b);
            if (up[b] >= 0) down[up[b]].push_back(b);
        }
        std::vector<std::vector<std::uint32_t>> below(K);  // the GPUs of the boxes in b's subtree
        std::function<void(int)> walk = [&](int b) {
            for (Node p : boxes[b].gpus) below[b].push_back(idx(p));
            for (int c : down[b]) {
                depth[c] = depth[b] + 1;
                walk(c);
                height[b] = std::max(height[b], height[c] + 1);
                below[b].insert(below[b].end(), below[c].begin(), below[c].end());
            }
            std::sort(below[b].begin(), below[b].end());
        };
        int root = 0;
        while (up[root] >= 0) ++root;
        walk(root);
        const Step H = static_cast<Step>(height[root]);
        for (std::uint32_t j = 0; j < k; ++j) {
            const Step s = j + 1;
            for (std::uint32_t i = 0; i < P; ++i) {
                const std::uint32_t c = (j * P + i) * 2 + static_cast<std::uint32_t>(t);
                // the box's sum at its head, NCCL's NVLS reduce (every GPU's value through the switch)
                for (const NvlsBox& b : boxes) switch_reduce(w, b, b.gpus[i], c, s, true);
                // up the tree: a head sends its subtree's sum once its children's have arrived
                for (int b = 0; b < K; ++b)
                    if (up[b] >= 0) w.send(s + 2 + height[b], boxes[b].gpus[i], boxes[up[b]].gpus[i], w.partial(below[b], c));
                // down the tree from the root, then every head multicasts the sum in its box
                const MessageId sum = w.partial(below[root], c);
                for (int b = 0; b < K; ++b) {
                    const Step at = s + 2 + H + static_cast<Step>(depth[b]);
                    for (int d : down[b]) w.send(at, boxes[b].gpus[i], boxes[d].gpus[i], sum);
                    switch_multicast(w, boxes[b], boxes[b].gpus[i], sum, at);
                }
            }
        }
    }
    return std::move(w).finish();
}

std::uint32_t nvls_pieces_for_size(std::uint32_t P, double bytes, double min_chunk_bytes) {
    const double per = bytes / std::max(1u, P) / std::max(1.0, min_chunk_bytes);
    if (!(per >= 2)) return 1;
    return static_cast<std::uint32_t>(std::min(256.0, std::floor(per)));
}

std::uint32_t nvls_direct_period(const Topology& t) {
    const auto boxes = nvls_boxes(t);
    const NvlsBox& b = boxes.front();
    const Node p = b.gpus.front();
    const double sw = t.speed(*t.find_channel(p, b.sw)).bandwidth;
    double links = 0;  // the GPU's out bandwidth: its group over the switch channel, else its channels
    for (std::uint32_t g : t.groups_of(*t.find_channel(p, b.sw))) links = links == 0 ? t.group_bandwidth(g) : std::min(links, t.group_bandwidth(g));
    if (links == 0)
        for (ChannelId c : t.out_channels(p)) links += t.speed(c).bandwidth;
    if (sw >= links) return 0;
    const double P = static_cast<double>(b.gpus.size()), d = 2 * (P - 1) / P;
    // f / sw = (f + d (1 - f)) / links  =>  f = d sw / (links - sw + d sw)
    const double f = d * sw / (links - sw + d * sw);
    if (f >= 1) return 0;
    return static_cast<std::uint32_t>(std::max(2.0, std::round(1 / (1 - f))));
}


namespace {

/// The boxes and the fabric trees of a SHARP machine (nvls.hpp, SharpPlan).
struct SharpLayout {
    std::vector<std::vector<Node>> boxes;  ///< per box its GPUs, increasing
    std::vector<Node> box_switch;          ///< per box its NVLS switch (empty: no NVLS)
    std::vector<std::uint32_t> heads;      ///< the local indices whose GPU reaches a fabric switch in every box
    /// Per head index, the tree over the fabric switches: per node its parent (-1: root or not in
    /// the tree), its height (heads 0) and its depth (root 0); the GPUs below each node.
    struct Tree {
        std::map<std::uint32_t, std::int64_t> parent;
        std::map<std::uint32_t, std::uint32_t> height, depth;
        std::map<std::uint32_t, std::vector<std::uint32_t>> below, children;
        std::uint32_t root = 0;
    };
    std::vector<Tree> trees;  ///< by position in `heads`
};

/// `heads[b]` is box b's GPU on the tree (`boxes[b]` its GPUs, whose sum it carries up).
SharpLayout::Tree fabric_tree(const Topology& t, const std::vector<Node>& heads, const std::vector<std::vector<Node>>& boxes,
                              const std::vector<char>& fabric) {
    const std::uint32_t P = t.processors(), N = t.nodes();
    auto both = [&](std::uint32_t a, std::uint32_t b) { return t.find_channel(Node{a}, Node{b}) && t.find_channel(Node{b}, Node{a}); };
    SharpLayout::Tree best;
    std::uint32_t best_depth = UINT32_MAX;
    for (std::uint32_t root = P; root < N; ++root) {
        if (!fabric[root]) continue;
        std::vector<std::int64_t> dist(N, -1), parent(N, -1);
        std::vector<std::uint32_t> queue{root};
        dist[root] = 0;
        for (std::size_t q = 0; q < queue.size(); ++q)
            for (ChannelId c : t.out_channels(Node{queue[q]})) {
                const std::uint32_t v = idx(t.channel(c).to);
                if (v < P || !fabric[v] || dist[v] >= 0 || !both(queue[q], v)) continue;
                dist[v] = dist[queue[q]] + 1, parent[v] = queue[q], queue.push_back(v);
            }
        std::uint32_t depth = 0;
        std::vector<std::int64_t> attach;
        for (Node h : heads) {
            std::int64_t at = -1;
            for (ChannelId c : t.out_channels(h)) {
                const std::uint32_t v = idx(t.channel(c).to);
                if (v >= P && dist[v] >= 0 && both(idx(h), v) && (at < 0 || dist[v] < dist[at])) at = v;
            }
            if (at < 0) break;
            attach.push_back(at);
            depth = std::max(depth, static_cast<std::uint32_t>(dist[at] + 1));
        }
        if (attach.size() != heads.size() || depth >= best_depth) continue;
        best_depth = depth;
        SharpLayout::Tree tr;
        tr.root = root;
        for (std::size_t k = 0; k < heads.size(); ++k) {
            std::int64_t x = idx(heads[k]), up = attach[k];
            while (x != static_cast<std::int64_t>(root) && !tr.parent.count(static_cast<std::uint32_t>(x))) {
                tr.parent[static_cast<std::uint32_t>(x)] = up;
                tr.children[static_cast<std::uint32_t>(up)].push_back(static_cast<std::uint32_t>(x));
                x = up, up = parent[up];
            }
        }
        tr.parent[root] = -1;
        std::function<void(std::uint32_t, std::uint32_t)> walk = [&](std::uint32_t x, std::uint32_t d) {
            tr.depth[x] = d, tr.height[x] = 0;
            if (x < P)
                for (std::size_t b = 0; b < heads.size(); ++b)
                    if (idx(heads[b]) == x)
                        for (Node g : boxes[b]) tr.below[x].push_back(idx(g));
            for (std::uint32_t y : tr.children[x]) {
                walk(y, d + 1);
                tr.height[x] = std::max(tr.height[x], tr.height[y] + 1);
                tr.below[x].insert(tr.below[x].end(), tr.below[y].begin(), tr.below[y].end());
            }
        };
        walk(root, 0);
        best = std::move(tr);
    }
    if (best_depth == UINT32_MAX) throw InputError(fmt::format("{}: no tree of fabric switches joins processors {}..", t.spec(), idx(heads[0])));
    return best;
}

SharpLayout sharp_layout(const Topology& t, bool nvls) {
    SharpLayout l;
    const double fastest = fastest_at_processors(t);
    std::vector<char> fabric(t.nodes(), 0);
    bool any = false;
    for (std::uint32_t r = t.processors(); r < t.nodes(); ++r) {
        fabric[r] = fabric_switch_below(t, Node{r}, fastest);
        any = any || fabric[r];
    }
    if (!any)
        throw InputError(fmt::format("{}: no switch between the boxes reduces and multicasts (SHARP: collsched machine ... --sharp)", t.spec()));
    if (nvls) {
        for (NvlsBox& b : nvls_boxes(t)) l.boxes.push_back(std::move(b.gpus)), l.box_switch.push_back(b.sw);
    } else {
        const double fast = fastest_processor_channel(t);
        if (fast <= 0) throw InputError(fmt::format("{}: no channels between the GPUs of a box (direct reduce-scatter needs them)", t.spec()));
        const auto comp = processor_components(t, fast / 4);
        for (std::uint32_t p = 0; p < t.processors(); ++p) {
            if (comp[p] >= l.boxes.size()) l.boxes.resize(comp[p] + 1);
            l.boxes[comp[p]].push_back(Node{p});
        }
    }
    if (l.boxes.size() < 2) throw InputError(fmt::format("{}: SHARP across boxes needs at least 2 boxes", t.spec()));
    const std::size_t per = l.boxes.front().size();
    for (const auto& b : l.boxes)
        if (b.size() != per) throw InputError(fmt::format("{}: the boxes differ in size", t.spec()));
    for (std::uint32_t i = 0; i < per; ++i) {
        bool all = true;
        for (const auto& b : l.boxes) {
            bool reaches = false;
            for (ChannelId c : t.out_channels(b[i])) reaches = reaches || fabric[idx(t.channel(c).to)];
            all = all && reaches;
        }
        if (all) l.heads.push_back(i);
    }
    if (l.heads.empty()) throw InputError(fmt::format("{}: no GPU of a box reaches a switch that reduces across the boxes", t.spec()));
    for (std::uint32_t i : l.heads) {
        std::vector<Node> hs;
        for (const auto& b : l.boxes) hs.push_back(b[i]);
        l.trees.push_back(fabric_tree(t, hs, l.boxes, fabric));
    }
    return l;
}

std::vector<std::uint32_t> sorted_ids(std::vector<std::uint32_t> v) {
    std::sort(v.begin(), v.end());
    return v;
}

/// A message of `sources`' values of `chunk`: the value itself for one source.
MessageId part_of(Writer& w, const std::vector<std::uint32_t>& sources, std::uint32_t chunk) {
    return sources.size() == 1 ? w.value(Node{sources[0]}, chunk) : w.partial(sorted_ids(sources), chunk);
}

/// The fabric part of one chunk: every head holds its box's sum at the end of step base - 1;
/// up the tree by height, the root adds and multicasts, down by depth. Returns per head the step
/// at whose end it holds the total.
std::vector<Step> fabric_round(Writer& w, const SharpLayout::Tree& tr, const std::vector<Node>& heads, std::uint32_t chunk, Step base) {
    const std::uint32_t H = tr.height.at(tr.root);
    for (const auto& [x, up] : tr.parent)
        if (up >= 0) w.send(base + tr.height.at(x), Node{x}, Node{static_cast<std::uint32_t>(up)}, part_of(w, tr.below.at(x), chunk));
    const MessageId sum = part_of(w, tr.below.at(tr.root), chunk);
    for (const auto& [x, kids] : tr.children)
        for (std::uint32_t y : kids) w.send(base + H + tr.depth.at(x), Node{x}, Node{y}, sum);
    std::vector<Step> got;
    for (Node h : heads) got.push_back(base + H + tr.depth.at(idx(h)) - 1);
    return got;
}

std::vector<Node> heads_at(const SharpLayout& l, std::uint32_t i) {
    std::vector<Node> out;
    for (const auto& b : l.boxes) out.push_back(b[i]);
    return out;
}

}  // namespace

SharpShape sharp_shape(const Topology& t) {
    for (bool nvls : {true, false}) {
        try {
            const SharpLayout l = sharp_layout(t, nvls);
            return {static_cast<std::uint32_t>(l.boxes.size()), static_cast<std::uint32_t>(l.boxes.front().size()), l.heads, nvls};
        } catch (const InputError&) {
        }
    }
    return {};
}

SendTable sharp_allreduce(std::shared_ptr<const Topology> topo, const SharpPlan& plan) {
    const SharpLayout l = sharp_layout(*topo, plan.nvls);
    const std::uint32_t H = static_cast<std::uint32_t>(l.heads.size()), k = std::max(1u, plan.pieces);
    Writer w(topo, "allreduce", k * H);
    for (std::uint32_t j = 0; j < k; ++j) {
        const Step s = j + 1;
        for (std::uint32_t h = 0; h < H; ++h) {
            const std::uint32_t c = j * H + h, i = l.heads[h];
            for (std::size_t b = 0; b < l.boxes.size(); ++b) {
                const Node head = l.boxes[b][i];
                if (plan.nvls) {
                    switch_reduce(w, NvlsBox{l.boxes[b], l.box_switch[b]}, head, c, s, plan.owner_through_switch);
                } else {
                    for (Node p : l.boxes[b])
                        if (p != head) w.send(s, p, head, w.value(p, c));
                }
            }
            const std::vector<Step> got = fabric_round(w, l.trees[h], heads_at(l, i), c, s + (plan.nvls ? 2 : 1));
            const MessageId sum = part_of(w, l.trees[h].below.at(l.trees[h].root), c);
            for (std::size_t b = 0; b < l.boxes.size(); ++b) {
                const Node head = l.boxes[b][i];
                if (plan.nvls) {
                    switch_multicast(w, NvlsBox{l.boxes[b], l.box_switch[b]}, head, sum, got[b] + 1);
                } else {
                    for (Node p : l.boxes[b])
                        if (p != head) w.send(got[b] + 1, head, p, sum);
                }
            }
        }
    }
    return std::move(w).finish();
}

SendTable collnet_chain_allreduce(std::shared_ptr<const Topology> topo, std::uint32_t channels, const SharpPlan& plan) {
    const SharpLayout l = sharp_layout(*topo, false);
    const std::uint32_t H = static_cast<std::uint32_t>(l.heads.size()), k = std::max(1u, plan.pieces), ch = std::max(1u, channels);
    const std::uint32_t P = static_cast<std::uint32_t>(l.boxes.front().size());
    Writer w(topo, "allreduce", k * ch);
    for (std::uint32_t j = 0; j < k; ++j) {
        const Step s = j + 1;
        for (std::uint32_t x = 0; x < ch; ++x) {
            const std::uint32_t c = j * ch + x, h = x % H, i = l.heads[h];
            for (const auto& box : l.boxes) {
                std::vector<std::uint32_t> tail;  // the chain's positions q .. P - 1, reduced up
                for (std::uint32_t q = P - 1; q >= 1; --q) {
                    tail.push_back(idx(box[(i + q) % P]));
                    w.send(s + (P - 1 - q), box[(i + q) % P], box[(i + q - 1) % P], part_of(w, tail, c));
                }
            }
            const std::vector<Step> got = fabric_round(w, l.trees[h], heads_at(l, i), c, s + (P - 1));
            const MessageId sum = part_of(w, l.trees[h].below.at(l.trees[h].root), c);
            for (std::size_t b = 0; b < l.boxes.size(); ++b)
                for (std::uint32_t q = 0; q + 1 < P; ++q) w.send(got[b] + 1 + q, l.boxes[b][(i + q) % P], l.boxes[b][(i + q + 1) % P], sum);
        }
    }
    return std::move(w).finish();
}

}  // namespace collsched::compose
