// Allreduce with a NIC down: the boxes with one are leaves in some slots (leaf.hpp).
#include "verifier/constructions/compose/leaf.hpp"

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

}  // namespace collsched::compose
