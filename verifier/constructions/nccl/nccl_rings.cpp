// NCCL's rings on a machine, and the tables on them (docs/time.md, "NCCL's algorithms and NCCL's
// model"): what src/graph/search.cc builds (one ring per channel through every box, entering at
// the GPU of the channel's NIC and leaving through the same NIC) and what
// src/device/all_gather.h, reduce_scatter.h and all_reduce.h run on it (runRing).
#include <algorithm>
#include <functional>

#include <fmt/format.h>

#include "compiler/table/builder.hpp"
#include "compiler/table/partials.hpp"
#include "support/assert.hpp"
#include "support/error.hpp"
#include "verifier/constructions/nccl/nccl_impl.hpp"

namespace collsched::nccl {

std::vector<ChannelId> connection(const Topology& t, Node u, Node v, std::optional<Node> via) {
    std::vector<ChannelId> path;
    if (via && *via != u) t.route(u, *via, path);
    t.route(via ? *via : u, v, path);
    return path;
}

namespace {

/// Whether u reaches v in one hop, or through one router (an NVSwitch drawn as a router).
bool linked(const Topology& t, Node u, Node v) {
    if (t.find_channel(u, v)) return true;
    for (ChannelId c : t.out_channels(u)) {
        const Node r = t.channel(c).to;
        if (!t.is_processor(r) && t.find_channel(r, v)) return true;
    }
    return false;
}

/// The order in which channel c's ring visits a box's GPUs (their indices in the box): from
/// `start`, NCCL's NVSwitch preference (search.cc ncclTopoSearchNextGpuSort: the next GPU, then
/// the previous one), else any GPU linked to the last, by depth-first search; `closed` asks that the
/// last be linked back to the first (one box). Empty when the box has no such path; LimitReached
/// once `deadline` passes (polled every 1,024 steps: on some numberings of a machine the step
/// budget alone, once per channel, took minutes).
std::vector<std::uint32_t> box_order(const Topology& t, const std::vector<Node>& box, std::uint32_t start, bool closed, Deadline deadline) {
    const auto n = static_cast<std::uint32_t>(box.size());
    std::vector<std::uint32_t> order{start};
    std::vector<char> used(n, 0);
    used[start] = 1;
    std::uint64_t budget = 200000;
    std::function<bool()> grow = [&]() -> bool {
        if (order.size() == n) return !closed || n == 1 || linked(t, box[order.back()], box[start]);
        if (budget == 0) return false;  // spent: every caller up the recursion gives up too (it wrapped past 0 before)
        --budget;
        if (budget % 1024 == 0) poll_deadline(deadline, "ring search");
        const std::uint32_t last = order.back();
        std::vector<std::uint32_t> next{(last + 1) % n, (last + n - 1) % n};
        for (std::uint32_t i = 0; i < n; ++i) next.push_back((last + 1 + i) % n);
        for (std::uint32_t g : next) {
            if (used[g] || !linked(t, box[last], box[g])) continue;
            used[g] = 1;
            order.push_back(g);
            if (grow()) return true;
            order.pop_back();
            used[g] = 0;
        }
        return false;
    };
    if (!grow()) return {};
    return order;
}

}  // namespace

std::vector<Ring> nccl_rings(const Topology& t, const Layout& l, const System& s, std::uint32_t channels, Deadline deadline) {
    const std::uint32_t B = s.nodes, G = s.gpus_per_node;
    std::vector<Ring> rings;
    // each node's nets in its own PCI order (search.cc:1400-1414): its GPUs with a NIC beside them, in index order (with
    // NIC 0 down, box 0's net c is GPU c+1's NIC, the other boxes' GPU c's)
    std::vector<std::vector<std::uint32_t>> nets(B);
    for (std::uint32_t b = 0; b < B; ++b)
        for (std::uint32_t g = 0; g < G; ++g)
            if (l.nic_gpu[idx(l.boxes[b][g])]) nets[b].push_back(g);
    for (std::uint32_t c = 0; c < channels; ++c) {
        // search.cc:736: each node's search starts channel c at its net c (mod its nets); net k is a GPU's own NIC
        // (entered at that GPU), or the box's router, entered at GPU c
        std::vector<std::uint32_t> start(B);
        for (std::uint32_t b = 0; b < B; ++b)
            start[b] = s.nic_per_gpu && !nets[b].empty() ? nets[b][c % nets[b].size()] : c % G;
        // one mesh box: the ring NCCL's search found for channel c (nccl_search.cpp)
        std::vector<std::uint32_t> order = s.ring_search && c < s.ring_search->rings.size() ? s.ring_search->rings[c]
                                                                                           : box_order(t, l.boxes.front(), start[0], B == 1, deadline);
        if (order.empty())
            throw InputError(fmt::format("{}: no ring through the GPUs of a box over their own links (NCCL's search would fall back "
                                         "to PCIe, which the machine does not describe)",
                                         t.spec()));
        Ring r;
        for (std::uint32_t b = 0; b < B; ++b) {
            // a node whose net c is another GPU than box 0's searches its own order from there
            const std::vector<std::uint32_t> own = start[b] == start[0] ? order : box_order(t, l.boxes[b], start[b], false, deadline);
            if (own.empty())
                throw InputError(fmt::format("{}: no ring through the GPUs of box {} over their own links from GPU {}", t.spec(), b, start[b]));
            for (std::uint32_t g : own) r.order.push_back(l.boxes[b][g]);
        }
        const std::size_t P = r.order.size();
        for (std::size_t i = 0; i < P; ++i) {
            const Node u = r.order[i], v = r.order[(i + 1) % P];
            const std::uint32_t bu = l.box_of[idx(u)];
            const bool leaves = bu != l.box_of[idx(v)];
            // NCCL_CROSS_NIC=0: the ring leaves through the NIC it entered by; the last GPU reaches
            // it over NVLink (PXN) when the NIC is a GPU's own.
            std::optional<Node> via;
            if (leaves && s.nic_per_gpu) via = l.boxes[bu][start[bu]];
            r.hops.push_back(connection(t, u, v, via));
        }
        rings.push_back(std::move(r));
    }
    return rings;
}

namespace {

/// Puts one message along a path from step `at`: hop k in step at + k. `message(k)` names what
/// hop k carries (a reduction's reference to its sender's buffer is renewed at every processor
/// on the way; routers pass on what they received).
template <class F>
void along(TableBuilder& b, const Topology& t, const std::vector<ChannelId>& path, Step at, F&& message) {
    MessageId m{};
    for (std::size_t k = 0; k < path.size(); ++k) {
        const Node from = t.channel(path[k]).from;
        if (k == 0 || t.is_processor(from)) m = message(from, static_cast<Step>(at + k));
        b.hop(static_cast<Step>(at + k), path[k], m);
    }
}

}  // namespace

/// NCCL's runRing per channel and piece: allgather, in logical step s position i forwards the
/// datum of position i - s + 1; reduce-scatter, the partial for the owner at position i - s
/// (leaving its owner's successor, combined on the way); allreduce, reduce-scatter over the
/// ring's own P chunks and then the complete chunk P - 1 steps more. A logical step lasts as many
/// table steps as the longest connection; piece j runs j logical steps after piece 0.
SendTable ring_table(std::shared_ptr<const Topology> topo, const Model& model, CollectiveKind kind, const std::vector<Ring>& rings,
                     std::uint32_t pieces, Deadline deadline) {
    const Topology& t = *topo;
    const auto P = static_cast<std::uint32_t>(t.processors()), K = static_cast<std::uint32_t>(rings.size());
    std::size_t L = 1;
    for (const Ring& r : rings)
        for (const auto& h : r.hops) L = std::max(L, h.size());
    Collective coll;
    coll.kind = kind;
    const std::uint64_t C = std::uint64_t{K} * pieces * (kind == CollectiveKind::allgather ? 1 : P);
    coll.set_chunks(C, t);
    TableBuilder b(topo, model, coll);
    const Messages ms = b.messages();
    const bool reduces = kind != CollectiveKind::allgather;
    const std::uint32_t span = kind == CollectiveKind::allreduce ? 2 * (P - 1) : P - 1;
    b.reserve(std::size_t{span} * P * K * pieces * L);
    // position of each processor on each ring (reduce_scatter: a chunk's owner is a processor)
    std::vector<std::vector<std::uint32_t>> pos(K, std::vector<std::uint32_t>(P));
    for (std::uint32_t r = 0; r < K; ++r)
        for (std::uint32_t i = 0; i < P; ++i) pos[r][idx(rings[r].order[i])] = i;
    Composites* reg = reduces ? &b.composites() : nullptr;
    for (std::uint32_t r = 0; r < K; ++r)
        for (std::uint32_t j = 0; j < pieces; ++j)
            for (std::uint32_t s = 1; s <= span; ++s) {
                poll_deadline(deadline, "ring table");
                const Step at = static_cast<Step>((s - 1 + j) * L + 1);
                for (std::uint32_t i = 0; i < P; ++i) {
                    const std::uint32_t q = (i + 2 * P - s) % P;  // the owner's position (allgather: the source's is q + 1)
                    std::uint32_t chunk = 0;
                    if (kind == CollectiveKind::allgather) chunk = r * pieces + j;
                    else if (kind == CollectiveKind::allreduce) chunk = (r * pieces + j) * P + q;
                    else chunk = idx(rings[r].order[q]) * (K * pieces) + r * pieces + j;  // block of the owner processor
                    along(b, t, rings[r].hops[i], at, [&](Node from, Step step) {
                        if (!reduces) return ms.broadcast(idx(rings[r].order[(q + 1) % P]), chunk);
                        return reg->intern({MessageKind::partial, chunk, static_cast<std::uint32_t>(step), {MessageId{idx(from)}}, {}});
                    });
                }
            }
    SendTable table = std::move(b).finish(deadline);
    if (reduces) {
        resolve_partials(table, deadline);
        canonicalize_composites(table, deadline);
    }
    fit_rounds(table);
    return table;
}

/// NCCL's runRing of broadcast and reduce per channel and piece (src/device/broadcast.h:14-60,
/// reduce.h:14-55): broadcast, the root sends to its successor and every position but the last
/// forwards (directRecvCopyDirectSend), so chunk j crosses hop i (from the root's position + i) in
/// logical step i + j; reduce, the root's successor sends its value (prevRank == root: send), every
/// position combines and sends on (recvReduceSend) and the root receives the last (recvReduceCopy),
/// hop i from the root's position + 1 + i. C = channels x pieces, chunk r x pieces + j.
SendTable nccl_rooted_ring_table(std::shared_ptr<const Topology> topo, const Model& model, const Collective& want, const std::vector<Ring>& rings,
                                 std::uint32_t pieces, Deadline deadline) {
    const Topology& t = *topo;
    const auto P = static_cast<std::uint32_t>(t.processors()), K = static_cast<std::uint32_t>(rings.size());
    COLLSCHED_ASSERT_MSG(want.kind == CollectiveKind::broadcast || want.kind == CollectiveKind::reduce, "a rooted collective");
    std::size_t L = 1;
    for (const Ring& r : rings)
        for (const auto& h : r.hops) L = std::max(L, h.size());
    Collective coll = want;
    coll.set_chunks(std::uint64_t{K} * pieces, t);
    TableBuilder b(topo, model, coll);
    const Messages ms = b.messages();
    const bool reduces = coll.kind == CollectiveKind::reduce;
    const std::uint32_t root = idx(coll.root);
    b.reserve(std::size_t{P - 1} * K * pieces * L);
    Composites* reg = reduces ? &b.composites() : nullptr;
    for (std::uint32_t r = 0; r < K; ++r) {
        std::uint32_t at_root = 0;
        while (idx(rings[r].order[at_root]) != root) ++at_root;
        const std::uint32_t first = reduces ? at_root + 1 : at_root;
        for (std::uint32_t j = 0; j < pieces; ++j) {
            poll_deadline(deadline, "rooted ring table");
            const std::uint32_t chunk = r * pieces + j;
            for (std::uint32_t i = 0; i + 1 < P; ++i) {
                const Step at = static_cast<Step>((i + j) * L + 1);
                along(b, t, rings[r].hops[(first + i) % P], at, [&](Node from, Step step) {
                    if (!reduces) return ms.broadcast(root, chunk);
                    return reg->intern({MessageKind::partial, chunk, static_cast<std::uint32_t>(step), {MessageId{idx(from)}}, {}});
                });
            }
        }
    }
    SendTable table = std::move(b).finish(deadline);
    if (reduces) {
        resolve_partials(table, deadline);
        canonicalize_composites(table, deadline);
    }
    fit_rounds(table);
    return table;
}

void poll_deadline(Deadline deadline, std::string_view what) {
    if (deadline.passed()) throw LimitReached(fmt::format("time limit (NCCL's {})", what));
}

void fit_rounds(SendTable& table) {
    const Topology& t = *table.topology;
    const Step T = table.steps();
    std::vector<std::uint32_t> rounds(T, 1);
    std::vector<std::uint32_t> on_channel(t.channels().size(), 0), on_group(t.groups().size(), 0), out(t.nodes(), 0), in(t.nodes(), 0);
    const Ports ports = table.model.ports;
    std::size_t i = 0;
    while (i < table.transfers.size()) {
        const Step s = table.transfers[i].step;
        std::size_t e = i;
        std::uint32_t need = 1;
        for (; e < table.transfers.size() && table.transfers[e].step == s; ++e) {
            const ChannelId c = table.transfers[e].channel;
            const Channel& ch = t.channel(c);
            need = std::max(need, (++on_channel[idx(c)] + ch.cap - 1) / ch.cap);
            for (std::uint32_t g : t.groups_of(c)) need = std::max(need, (++on_group[g] + t.groups()[g].cap - 1) / t.groups()[g].cap);
            if (ports == Ports::single) need = std::max({need, ++out[idx(ch.from)], ++in[idx(ch.to)]});
            if (ports == Ports::half) {
                need = std::max(need, ++out[idx(ch.from)]);
                need = std::max(need, ++out[idx(ch.to)]);
            }
        }
        for (std::size_t k = i; k < e; ++k) {  // reset the counters this step touched
            const ChannelId c = table.transfers[k].channel;
            on_channel[idx(c)] = 0;
            for (std::uint32_t g : t.groups_of(c)) on_group[g] = 0;
            out[idx(t.channel(c).from)] = in[idx(t.channel(c).to)] = out[idx(t.channel(c).to)] = 0;
        }
        rounds[s - 1] = need;
        i = e;
    }
    table.step_rounds = std::move(rounds);
    table.normalize_rounds();
}

}  // namespace collsched::nccl
