// NVLS constructions (verifier/compose/nvls.hpp): send tables for a switch that reduces and
// multicasts, built transfer by transfer; the partials they send are the sets the buffer rule
// gives (docs/semantics.md, "Reductions").
#include "verifier/compose/nvls.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>

#include <fmt/format.h>

#include "compiler/table/builder.hpp"
#include "compiler/table/partials.hpp"
#include "support/error.hpp"

namespace collsched::compose {

std::vector<NvlsBox> nvls_boxes(const Topology& t) {
    std::vector<NvlsBox> boxes;
    std::vector<char> seen(t.processors(), 0);
    for (std::uint32_t r = t.processors(); r < t.nodes(); ++r) {
        const SwitchFunctions f = t.switch_functions(Node{r});
        if (!f.reduce || !f.multicast) continue;
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

}  // namespace collsched::compose
