// NCCL's double binary tree allreduce, PAT and its alltoall on a machine (docs/time.md, "NCCL's
// algorithms and NCCL's model").
#include <algorithm>

#include "compiler/table/builder.hpp"
#include "compiler/table/partials.hpp"
#include "verifier/constructions/nccl/nccl_impl.hpp"

namespace collsched::nccl {

namespace {

/// src/graph/trees.cc ncclGetBtree: the parent of `rank` in the binary tree over n ranks (-1 for
/// the root 0): (rank ^ bit) | (bit << 1) for its lowest set bit, or rank ^ bit when that is not a
/// rank; the child type is 0 when rank is below its parent (its first child), else 1.
DtreeUp btree_up(int n, int rank) {
    if (rank == 0) return {-1, 0};
    int bit = 1;
    while (bit < n && !(bit & rank)) bit <<= 1;
    int up = (rank ^ bit) | (bit << 1);
    if (up >= n) up = rank ^ bit;
    return {up, rank < up ? 0 : 1};
}

int dtree_parent(int n, int tree, int node) { return dtree_up(n, tree, node).parent; }

}  // namespace

/// trees.cc ncclGetDtree: tree 0 the btree; tree 1 its mirror (n even) or shift (n odd), the child
/// type that of the mirrored or shifted rank.
DtreeUp dtree_up(int n, int tree, int node) {
    if (tree == 0) return btree_up(n, node);
    if (n % 2 == 1) {
        const DtreeUp u = btree_up(n, (node - 1 + n) % n);
        return {u.parent == -1 ? -1 : (u.parent + 1) % n, u.child_type};
    }
    const DtreeUp u = btree_up(n, n - 1 - node);
    return {u.parent == -1 ? -1 : n - 1 - u.parent, u.child_type};
}

/// Per channel c of the rings and tree t in {0, 1} (NCCL's channels c and c + nChannels,
/// connect.cc connectTrees): inside each box the chain of channel c's ring order in that box (up is
/// the previous GPU, connect.cc:61-62), across boxes the double binary tree over the boxes, every
/// edge between boxes at the first GPU of the chain (the GPU of the channel's NIC: NCCL's
/// NCCL_TOPO_PATTERN_TREE, connect.cc:55-60); the topology's routes.
SendTable tree_table(std::shared_ptr<const Topology> topo, const Model& model, const Layout& l, const std::vector<Ring>& rings,
                     std::uint32_t pieces, Deadline deadline) {
    const Topology& t = *topo;
    const auto P = t.processors(), B = static_cast<std::uint32_t>(l.boxes.size());
    const std::uint32_t G = P / B;
    std::vector<TreeLinks> links;
    for (const Ring& r : rings) {
        TreeLinks& x = links.emplace_back();
        for (int tree = 0; tree < 2; ++tree) {
            x.parent[tree].assign(P, -1);
            x.up[tree].assign(P, {});
            x.down[tree].assign(P, {});
            for (std::uint32_t bx = 0; bx < B; ++bx) {
                for (std::uint32_t i = 1; i < G; ++i) x.parent[tree][idx(r.order[bx * G + i])] = idx(r.order[bx * G + i - 1]);
                const int up = dtree_parent(static_cast<int>(B), tree, static_cast<int>(bx));
                if (up >= 0) x.parent[tree][idx(r.order[bx * G])] = idx(r.order[static_cast<std::uint32_t>(up) * G]);
            }
            for (std::uint32_t p = 0; p < P; ++p)
                if (const std::int64_t q = x.parent[tree][p]; q >= 0) {
                    x.up[tree][p] = connection(t, Node{p}, Node{static_cast<std::uint32_t>(q)}, std::nullopt);
                    x.down[tree][p] = connection(t, Node{static_cast<std::uint32_t>(q)}, Node{p}, std::nullopt);
                }
        }
    }
    return tree_table_of(std::move(topo), model, links, pieces, deadline);
}

/// Per channel c and tree, each GPU sends its partial up its path once its children's have
/// arrived, the root then sends the complete chunk down; piece j starts j steps after piece 0. A
/// processor on a path sends on what it holds of the chunk (a route through GPUs, as ndv2's).
SendTable tree_table_of(std::shared_ptr<const Topology> topo, const Model& model, const std::vector<TreeLinks>& links, std::uint32_t pieces,
                        Deadline deadline) {
    const Topology& t = *topo;
    const auto P = t.processors(), K = static_cast<std::uint32_t>(links.size());
    Collective coll;
    coll.kind = CollectiveKind::allreduce;
    coll.set_chunks(std::uint64_t{2} * K * pieces, t);
    TableBuilder b(topo, model, coll);
    Composites& reg = b.composites();
    for (std::uint32_t c = 0; c < K; ++c)
        for (int tree = 0; tree < 2; ++tree) {
            const std::vector<std::int64_t>& parent = links[c].parent[tree];
            const std::vector<std::vector<ChannelId>>& path = links[c].up[tree];
            std::vector<std::vector<std::uint32_t>> children(P);
            std::uint32_t root = 0;
            for (std::uint32_t p = 0; p < P; ++p) {
                if (parent[p] < 0) root = p;
                else children[static_cast<std::size_t>(parent[p])].push_back(p);
            }
            // up: a GPU sends when its children's partials have arrived (post-order by depth-first search)
            std::vector<Step> send_up(P, 0), arrive(P, 0);
            std::vector<std::uint32_t> post, stack{root};
            while (!stack.empty()) {
                const std::uint32_t p = stack.back();
                stack.pop_back();
                post.push_back(p);
                for (std::uint32_t ch : children[p]) stack.push_back(ch);
            }
            std::reverse(post.begin(), post.end());  // children before parents
            Step done = 0;
            for (std::uint32_t p : post) {
                Step ready = 0;
                for (std::uint32_t ch : children[p]) ready = std::max(ready, arrive[ch]);
                if (p == root) {
                    done = ready;
                    continue;
                }
                send_up[p] = ready + 1;
                arrive[p] = static_cast<Step>(send_up[p] + path[p].size() - 1);
            }
            // down: the reverse paths, from the root in pre-order
            std::vector<Step> holds(P, 0);
            holds[root] = done;
            std::reverse(post.begin(), post.end());
            std::vector<std::pair<std::uint32_t, Step>> down;  // (child, step its parent sends)
            for (std::uint32_t p : post)
                for (std::uint32_t ch : children[p]) {
                    down.push_back({ch, holds[p] + 1});
                    holds[ch] = static_cast<Step>(holds[p] + links[c].down[tree][ch].size());
                }
            for (std::uint32_t j = 0; j < pieces; ++j) {
                poll_deadline(deadline, "tree table");
                const std::uint32_t chunk = (static_cast<std::uint32_t>(tree) * K + c) * pieces + j;
                auto send = [&](const std::vector<ChannelId>& hops, Step at) {
                    MessageId m{};
                    for (std::size_t k = 0; k < hops.size(); ++k) {
                        const Node from = t.channel(hops[k]).from;
                        const Step s = static_cast<Step>(at + j + k);
                        if (k == 0 || t.is_processor(from)) m = reg.intern({MessageKind::partial, chunk, static_cast<std::uint32_t>(s), {MessageId{idx(from)}}, {}});
                        b.hop(s, hops[k], m);
                    }
                };
                for (std::uint32_t p = 0; p < P; ++p)
                    if (p != root) send(path[p], send_up[p]);
                for (auto [ch, at] : down) send(links[c].down[tree][ch], at);
            }
        }
    SendTable table = std::move(b).finish(deadline);
    resolve_partials(table, deadline);
    canonicalize_composites(table, deadline);
    fit_rounds(table);
    return table;
}

/// PAT with one GPU per box (NCCL 2.23+, src/device/prims_simple.h patReduce/patCopy): log2 P
/// rounds at doubling distances, every rank at once. Allgather: in round k rank r sends every
/// datum it holds to rank r - 2^k (the Bruck order, so the data a rank holds are contiguous);
/// reduce-scatter is its reverse: in round k (distances halving) rank r sends, for every block
/// it still combines for others, its partial to r + 2^k.
SendTable pat_table(std::shared_ptr<const Topology> topo, const Model& model, CollectiveKind kind, Deadline deadline) {
    const Topology& t = *topo;
    const std::uint32_t P = t.processors();
    Collective coll;
    coll.kind = kind;
    coll.set_chunks(kind == CollectiveKind::allgather ? 1 : P, t);  // reduce-scatter: chunk x is x's block
    TableBuilder b(topo, model, coll);
    const Messages ms = b.messages();
    Step at = 1;
    std::vector<std::uint32_t> dist;
    for (std::uint32_t d = 1; d < P; d *= 2) dist.push_back(d);
    if (kind == CollectiveKind::allgather) {
        for (std::uint32_t d : dist) {
            Step longest = 0;
            for (std::uint32_t r = 0; r < P; ++r) {
                if (r % 64 == 0) poll_deadline(deadline, "PAT table");
                const std::vector<ChannelId> path = connection(t, Node{r}, Node{(r + P - d) % P}, std::nullopt);
                longest = std::max<Step>(longest, static_cast<Step>(path.size()));
                for (std::uint32_t k = 0; k < std::min(d, P - d); ++k)  // r holds r .. r + d - 1
                    for (std::size_t h = 0; h < path.size(); ++h) b.hop(static_cast<Step>(at + h), path[h], ms.broadcast((r + k) % P));
            }
            at = static_cast<Step>(at + longest);
        }
    } else {
        // the allgather's transfers reversed in time and direction: its broadcast tree of each
        // datum becomes the reduction tree of that block, each rank sending its buffer once.
        Composites& reg = b.composites();
        std::vector<std::vector<std::pair<std::vector<ChannelId>, std::uint32_t>>> rounds;  // per round: (path, block)
        for (std::uint32_t d : dist) {
            auto& round = rounds.emplace_back();
            for (std::uint32_t r = 0; r < P; ++r) {
                std::vector<ChannelId> path = connection(t, Node{(r + P - d) % P}, Node{r}, std::nullopt);
                for (std::uint32_t k = 0; k < std::min(d, P - d); ++k) round.push_back({path, (r + k) % P});
            }
        }
        std::reverse(rounds.begin(), rounds.end());
        for (auto& round : rounds) {
            poll_deadline(deadline, "PAT table");
            Step longest = 0;
            for (auto& [path, block] : round) {
                longest = std::max<Step>(longest, static_cast<Step>(path.size()));
                MessageId m{};
                for (std::size_t h = 0; h < path.size(); ++h) {
                    const Node from = t.channel(path[h]).from;
                    if (h == 0 || t.is_processor(from))
                        m = reg.intern({MessageKind::partial, block, static_cast<std::uint32_t>(at + h), {MessageId{idx(from)}}, {}});
                    b.hop(static_cast<Step>(at + h), path[h], m);
                }
            }
            at = static_cast<Step>(at + longest);
        }
    }
    SendTable table = std::move(b).finish(deadline);
    if (kind != CollectiveKind::allgather) {
        resolve_partials(table, deadline);
        canonicalize_composites(table, deadline);
    }
    fit_rounds(table);
    return table;
}

/// NCCL's alltoall (grouped ncclSend/ncclRecv; src/enqueue.cc schedules peer (r + i) mod P in
/// round i): m(r, r + i) goes in round i, to another box through the GPU of r's box on the
/// destination's rail when the NIC is per GPU (PXN, the default for p2p), else by the route.
SendTable p2p_table(std::shared_ptr<const Topology> topo, const Model& model, const Layout& l, Deadline deadline) {
    const Topology& t = *topo;
    const std::uint32_t P = t.processors();
    Collective coll;
    coll.kind = CollectiveKind::alltoall;
    coll.set_chunks(1, t);
    TableBuilder b(topo, model, coll);
    const Messages ms = b.messages();
    Step at = 1;
    for (std::uint32_t i = 1; i < P; ++i) {
        poll_deadline(deadline, "alltoall table");
        Step longest = 0;
        for (std::uint32_t r = 0; r < P; ++r) {
            const std::uint32_t d = (r + i) % P;
            std::optional<Node> via;
            const std::uint32_t br = l.box_of[r], bd = l.box_of[d];
            if (br != bd) {
                const auto& src_box = l.boxes[br];
                const auto& dst_box = l.boxes[bd];
                const auto local = static_cast<std::size_t>(std::find(dst_box.begin(), dst_box.end(), Node{d}) - dst_box.begin());
                if (l.nic_gpu[d] && local < src_box.size() && l.nic_gpu[idx(src_box[local])]) via = src_box[local];
            }
            const std::vector<ChannelId> path = connection(t, Node{r}, Node{d}, via);
            longest = std::max<Step>(longest, static_cast<Step>(path.size()));
            for (std::size_t h = 0; h < path.size(); ++h) b.hop(static_cast<Step>(at + h), path[h], ms.personal(r, d));
        }
        at = static_cast<Step>(at + longest);
    }
    SendTable table = std::move(b).finish(deadline);
    fit_rounds(table);
    return table;
}

}  // namespace collsched::nccl
