// Allreduce with a NIC down: the boxes with one are leaves in some slots (leaf.hpp).
#include "verifier/constructions/compose/leaf.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "verifier/constructions/compose/shares.hpp"

namespace collsched::compose {

LeafSlots leaf_slots(const Topology& t, const std::vector<std::vector<Node>>& boxes, std::uint32_t a) {
    LeafSlots s;
    const std::uint32_t K = static_cast<std::uint32_t>(boxes.size()), B = K == 0 ? 0 : static_cast<std::uint32_t>(boxes[0].size());
    const std::vector<char> off = cut_off(t, boxes);
    s.leaf.assign(K, 0);
    s.cut.assign(K, B);
    std::vector<char> down(B, 0);
    for (std::uint32_t b = 0; b < K; ++b)
        for (std::uint32_t j = 0; j < B; ++j)
            if (off[idx(boxes[b][j])]) s.leaf[b] = 1, down[j] = 1, s.cut[b] = std::min(s.cut[b], j);
    std::uint32_t leaves = 0, downs = 0;
    for (char l : s.leaf) leaves += l;
    for (char d : down) downs += d;
    if (K < 3 || B < 2 || leaves == 0 || leaves + 2 > K || downs == 0 || downs == B) {
        s.why = "the leaf shape needs a NIC down in fewer than K - 1 boxes, and a rail with every NIC up";
        return s;
    }
    for (std::uint32_t j = 0; j < B; ++j) (down[j] ? s.down : s.up).push_back(j);
    s.all = a;
    return s;
}

LeafSlots::Slot LeafSlots::at(std::uint32_t q, std::uint32_t u) const {
    const std::uint32_t k = (q + u) % (all + 2);
    return {k == 0 ? Kind::through : k == 1 ? Kind::around : Kind::all, up[u], down[(q * up.size() + u) % down.size()]};
}

void leaf_allreduce_plan(Plan& plan, const std::vector<std::vector<Node>>& boxes, const LeafSlots& ls, std::uint32_t pieces) {
    using Kind = LeafSlots::Kind;
    const std::uint32_t K = static_cast<std::uint32_t>(boxes.size()), B = static_cast<std::uint32_t>(boxes[0].size());
    const std::uint32_t U = static_cast<std::uint32_t>(ls.up.size());
    std::vector<std::uint32_t> others, leaves;  // the boxes that are not leaves, and the leaves
    std::vector<std::uint32_t> every(K);
    for (std::uint32_t b = 0; b < K; ++b) (ls.leaf[b] ? leaves : others).push_back(b), every[b] = b;
    for (std::uint32_t q = 0; q < pieces; ++q) {
        const std::uint32_t t0 = q * K;  // pieces K logical steps apart, as rsag's
        for (std::uint32_t u = 0; u < U; ++u) {
            const LeafSlots::Slot s = ls.at(q, u);
            const bool through = s.kind == Kind::through;
            // handed (leaf.hpp): in the later half of the pieces, the first up rail's slot of a leaf is reduced in its box
            // to its GPU without a NIC, which hands the sum to GPU `rail` and sends the result on to the others
            const std::uint32_t e = 2 * q >= pieces && u == 0 ? 1 : 0;
            auto target = [&](std::uint32_t b) { return e && ls.leaf[b] ? ls.cut[b] : (through && !ls.leaf[b] ? s.down : s.rail); };
            auto chunk = [&](std::uint32_t r) { return ((q * U + u) * K) + r; };
            // sub-chunk r is held by box r, but a leaf's (around, through) by the other boxes in turn
            auto holder = [&](std::uint32_t r) { return s.kind == Kind::all || !ls.leaf[r] ? r : others[(q * U + u + r) % others.size()]; };
            auto owner = [&](std::uint32_t b) { return through && !ls.leaf[b] ? s.down : s.rail; };
            auto at = [&](std::uint32_t b) { return boxes[b][owner(b)]; };
            const std::vector<std::uint32_t>& rail = through ? others : every;  // the boxes along the rail
            // through: the other boxes start after the leaves' sums have come in (K steps of reduce-scatter, 1 to send)
            const std::uint32_t late = through ? K + 1 + e : 0;
            // in-box reduce-scatter to the owner, the other boxes' sub-chunks first (from b + 1 on), its own last
            for (std::uint32_t b = 0; b < K; ++b) {
                const std::uint32_t start = t0 + (ls.leaf[b] ? 0 : late), o = target(b);
                for (std::uint32_t i = 0; i < K; ++i)
                    for (std::uint32_t m = 0; m < B; ++m)
                        if (m != o) plan.send(start + 1 + i, boxes[b][m], boxes[b][o], chunk((b + 1 + i) % K));
                if (o != owner(b))
                    for (std::uint32_t r = 0; r < K; ++r) plan.send(start + K + 1, boxes[b][o], at(b), chunk(r));
            }
            if (through)  // a leaf's sums to GPU `rail` of the boxes holding them, added in before their reduce-scatter
                for (std::uint32_t l : leaves)
                    for (std::uint32_t r = 0; r < K; ++r) plan.send(t0 + K + 1 + e, boxes[l][s.rail], boxes[holder(r)][s.rail], chunk(r));
            // along the rail: direct reduce-scatter to the holders, then each sum to the rail's others, one a step
            const std::uint32_t R = t0 + late + K + (through ? 0 : e), n = static_cast<std::uint32_t>(rail.size());
            for (std::uint32_t b : rail)
                for (std::uint32_t r = 0; r < K; ++r)
                    if (holder(r) != b) plan.send(R + 1, at(b), at(holder(r)), chunk(r));
            for (std::uint32_t r = 0; r < K; ++r) {
                const std::uint32_t h = holder(r);
                std::uint32_t pos = 0;
                while (rail[pos] != h) ++pos;
                for (std::uint32_t i = 1; i < n; ++i) plan.send(R + 1 + i, at(h), at(rail[(pos + i) % n]), chunk(r));
            }
            // in-box allgather from the owner, one box-mate a step
            const std::uint32_t G = R + n;
            // from GPU `from` of box b at G0 + 1 on, one box-mate a step; a handed slot's to its GPU without a NIC
            // first, which sends it on to the others
            auto gather = [&](std::uint32_t b, std::uint32_t from, std::uint32_t G0) {
                const std::uint32_t c = target(b);
                if (c == from) {
                    for (std::uint32_t i = 1; i < B; ++i)
                        for (std::uint32_t r = 0; r < K; ++r) plan.send(G0 + i, boxes[b][from], boxes[b][(from + i) % B], chunk(r));
                    return;
                }
                for (std::uint32_t r = 0; r < K; ++r) plan.send(G0 + 1, boxes[b][from], boxes[b][c], chunk(r));
                for (std::uint32_t i = 1; i < B; ++i)
                    if ((c + i) % B != from)
                        for (std::uint32_t r = 0; r < K; ++r) plan.send(G0 + 1 + i, boxes[b][c], boxes[b][(c + i) % B], chunk(r));
            };
            for (std::uint32_t b : rail) gather(b, owner(b), G);
            if (!through) continue;
            // the sums back to the leaves along `rail`, then the leaves' in-box allgather
            for (std::uint32_t l : leaves)
                for (std::uint32_t r = 0; r < K; ++r) plan.send(G + B, boxes[holder(r)][s.rail], boxes[l][s.rail], chunk(r));
            for (std::uint32_t l : leaves) gather(l, s.rail, G + B);
        }
    }
}

OneWayLeaf one_way_leaf(const Topology& t, const std::vector<std::vector<Node>>& boxes, CollectiveKind kind) {
    OneWayLeaf s;
    const std::uint32_t K = static_cast<std::uint32_t>(boxes.size()), B = K == 0 ? 0 : static_cast<std::uint32_t>(boxes[0].size());
    const Ways w = nic_ways(t, boxes);
    const bool gather = kind == CollectiveKind::allgather;
    s.way.assign(K, std::vector<char>(B, 1));
    bool one_way = false, back = true;  // a NIC that does not carry the way, and every NIC the other way
    for (std::uint32_t b = 0; b < K; ++b)
        for (std::uint32_t j = 0; j < B; ++j) {
            const std::uint32_t p = idx(boxes[b][j]);
            back = back && (gather ? w.receive[p] : w.send[p]) > 0;
            s.way[b][j] = (gather ? w.send[p] : w.receive[p]) > 0;
            one_way = one_way || !s.way[b][j];
        }
    s.parts = B;
    s.up.resize(K);
    for (std::uint32_t b = 0; b < K; ++b) {
        for (std::uint32_t c = 0; c < B; ++c)
            if (s.way[b][c]) s.up[b].push_back(c);
        const std::uint32_t n = static_cast<std::uint32_t>(s.up[b].size());
        if (n < B && n > 0) s.parts = std::min(s.parts, n);
    }
    bool fed = true;  // every box has a rail that carries the way, and on it another box whose NIC does
    for (std::uint32_t r = 0; r < K; ++r) {
        bool any = false;
        for (std::uint32_t c = 0; c < B; ++c)
            if (s.way[r][c]) {
                any = true;
                bool proxy = false;
                for (std::uint32_t b = 0; b < K; ++b) proxy = proxy || (b != r && s.way[b][c]);
                fed = fed && proxy;
            }
        fed = fed && any;
    }
    if (kind != CollectiveKind::reduce_scatter && !gather) s.why = "the leaf shape with a one-way NIC is for reduce-scatter and allgather";
    else if (K < 3 || B < 2 || !one_way || !back || !fed)
        s.why = fmt::format("the leaf {} needs 3 boxes or more, a NIC that {} nothing, every NIC {}, and on each rail that {} in a box "
                            "another box whose NIC on it does",
                            gather ? "allgather" : "reduce-scatter", gather ? "sends" : "receives", gather ? "receiving" : "sending",
                            gather ? "sends" : "receives");
    return s;
}

void leaf_reduce_scatter_plan(Plan& plan, const std::vector<std::vector<Node>>& boxes, const OneWayLeaf& ls, std::uint32_t pieces) {
    const std::uint32_t K = static_cast<std::uint32_t>(boxes.size()), B = static_cast<std::uint32_t>(boxes[0].size()), S = ls.parts;
    const std::vector<std::vector<std::uint32_t>>& up = ls.up;
    const std::uint32_t own_t0 = pieces * K;  // each box's shares for itself after every piece's for the others
    for (std::uint32_t q = 0; q < pieces; ++q) {
        const std::uint32_t t = q * K;
        for (std::uint32_t r = 0; r < K; ++r)
            for (std::uint32_t j = 0; j < B; ++j)
                for (std::uint32_t s = 0; s < S; ++s) {
                    // the rail o that reduces part s of (r, j)'s piece q: j where box r receives on it; else a rail that
                    // does, in turn, whose sum across the other boxes a proxy box x (in turn) makes and sends to box r
                    // the last pieces (one in 16) direct on that rail: a chain's hop more would end after them
                    const bool direct = ls.way[r][j] != 0 || q + (pieces + 8) / 16 >= pieces;
                    const std::uint32_t turn = (q * S + s) * B + j, n = static_cast<std::uint32_t>(up[r].size());
                    const std::uint32_t o = ls.way[r][j] ? j : up[r][turn % n];
                    std::vector<std::uint32_t> proxies;
                    for (std::uint32_t b = 0; b < K; ++b)
                        if (!direct && b != r && ls.way[b][o]) proxies.push_back(b);
                    const std::uint32_t x = direct ? r : proxies[(turn / n) % proxies.size()];
                    const std::uint32_t c = (idx(boxes[r][j]) * pieces + q) * S + s;
                    const std::uint32_t rail_end = t + K + (direct ? 1 : 2);
                    // box r's own partials of (r, j) after every piece's for the other boxes; but where a leaf's NIC on
                    // rail j receives nothing, in the turn of that leaf's (whose slot j GPU j does not take): GPU j's links
                    // in the box then take as much in every turn, so its NIC's sends keep their turn
                    std::uint32_t own = own_t0 + q + 1;
                    for (std::uint32_t l = 0; l < K; ++l)
                        if (l != r && !ls.way[l][j]) {
                            own = t + (l + K - r) % K;
                            break;
                        }
                    for (std::uint32_t b = 0; b < K; ++b) {
                        // in-box: every GPU's partial to the owner o, in box b's order of the boxes from b + 1 on; in box r
                        // to GPU j, but GPU o's, which sends what it gets
                        const std::uint32_t to = b == r ? j : o;
                        for (std::uint32_t m = 0; m < B; ++m)
                            if (m != to && (b != r || m != o)) plan.send(b == r ? own : t + (r + K - b) % K, boxes[b][m], boxes[b][to], c);
                        if (b != r && b != x) plan.send(t + K + 1, boxes[b][o], boxes[x][o], c);
                    }
                    if (!direct) plan.send(rail_end, boxes[x][o], boxes[r][o], c);
                    if (o != j) plan.send(std::max(rail_end, own) + 1, boxes[r][o], boxes[r][j], c);
                }
    }
}

void leaf_allgather_plan(Plan& plan, const std::vector<std::vector<Node>>& boxes, const OneWayLeaf& ls, std::uint32_t pieces) {
    const std::uint32_t K = static_cast<std::uint32_t>(boxes.size()), B = static_cast<std::uint32_t>(boxes[0].size()), S = ls.parts;
    const std::vector<std::vector<std::uint32_t>>& up = ls.up;
    const Messages ms(K * B, nullptr, pieces * S);
    for (std::uint32_t q = 0; q < pieces; ++q)
        for (std::uint32_t r = 0; r < K; ++r)
            for (std::uint32_t j = 0; j < B; ++j)
                for (std::uint32_t s = 0; s < S; ++s) {
                    // part s of (r, j)'s piece q goes along rail j where its NIC sends; else to GPU o of its box (a rail that
                    // sends, in turn), which sends it to a proxy box x (in turn) that passes it on to the others; the
                    // last pieces (one in 16) from GPU o to every box at once: a chain's hop more would end after them
                    const bool chained = ls.way[r][j] == 0, direct = !chained || q + (pieces + 8) / 16 >= pieces;
                    const std::uint32_t turn = (q * S + s) * B + j, n = static_cast<std::uint32_t>(up[r].size());
                    // in a box with a NIC that sends nothing every GPU's parts go out on its rails in turn (GPU j's own
                    // rail one part in n), so that what its NICs send is ready as the parts reach them, the chained
                    // parts' turn among the others (its GPUs' own parts, ready at 0, went first: every chain after them)
                    const std::uint32_t at = static_cast<std::uint32_t>(std::find(up[r].begin(), up[r].end(), j) - up[r].begin());
                    const std::uint32_t o = chained ? up[r][turn % n] : n < B ? up[r][(at + q * S + s) % n] : j;
                    std::vector<std::uint32_t> proxies;
                    for (std::uint32_t b = 0; b < K; ++b)
                        if (!direct && b != r && ls.way[b][o]) proxies.push_back(b);
                    const std::uint32_t x = direct ? r : proxies[(turn / n) % proxies.size()];
                    const std::uint32_t m = static_cast<std::uint32_t>(idx(ms.broadcast(idx(boxes[r][j]), q * S + s)));
                    const std::uint32_t rail = q + (o != j ? 2 : 1), inbox = rail + (direct ? 1 : 2);
                    if (o != j) plan.send(q + 1, boxes[r][j], boxes[r][o], m);
                    for (std::uint32_t b = 0; b < K; ++b) {
                        if (b != r && (direct || b == x)) plan.send(rail, boxes[r][o], boxes[b][o], m);
                        else if (b != r) plan.send(rail + 1, boxes[x][o], boxes[b][o], m);
                        // in the box from its GPU o (box r: GPU j, but to GPU o, which has it)
                        const std::uint32_t from = b == r ? j : o;
                        for (std::uint32_t v = 0; v < B; ++v)
                            if (v != from && (b != r || v != o)) plan.send(inbox, boxes[b][from], boxes[b][v], m);
                    }
                }
}

}  // namespace collsched::compose
