// The shapes of allreduce, reduce-scatter and allgather in boxes and along rails (allreduce.hpp),
// as plans of logical sends (plan.hpp). A phase runs on groups of processors (a box, or a rail:
// GPU j of every box) with the items each member owns at the end; pieces are staggered by one
// logical step, so the in-box phases of one piece overlap the rail phases of the others.
#include "verifier/constructions/compose/allreduce.hpp"

#include <algorithm>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "support/error.hpp"
#include "support/trace.hpp"
#include "verifier/constructions/compose/leaf.hpp"
#include "verifier/constructions/compose/plan.hpp"

namespace collsched::compose {

namespace {

bool power_of_two(std::size_t n) { return n >= 1 && (n & (n - 1)) == 0; }
std::uint32_t log2_of(std::size_t n) {
    std::uint32_t l = 0;
    while ((std::size_t{1} << l) < n) ++l;
    return l;
}

using Group = std::vector<Node>;
using Owned = std::vector<std::vector<std::uint32_t>>;  // per member: the items it owns at the end

/// The phases on one group, from logical step t0 + 1; each returns the steps it took.
class Phases {
public:
    explicit Phases(Plan& plan) : plan_(plan) {}

    /// Reduce-scatter (every member holds a partial of every item; owner o ends with the group's
    /// combination of its items): direct (1 step), ring (n - 1), halving (log n, n a power of two).
    std::uint32_t reduce_scatter(const Group& g, const Owned& own, Across mode, std::uint32_t t0) {
        const std::uint32_t n = static_cast<std::uint32_t>(g.size());
        if (n == 1) return 0;
        if (mode == Across::ring) {
            for (std::uint32_t s = 1; s < n; ++s)
                for (std::uint32_t m = 0; m < n; ++m) send_all(t0 + s, g[m], g[(m + 1) % n], own[(m + n - s) % n]);
            return n - 1;
        }
        if (mode == Across::halving) {
            const std::uint32_t L = log2_of(n);
            for (std::uint32_t k = 1; k <= L; ++k) {
                const std::uint32_t h = n >> k;
                for (std::uint32_t m = 0; m < n; ++m) {
                    const std::uint32_t lo = ((m ^ h) >> (L - k)) << (L - k);
                    for (std::uint32_t o = lo; o < lo + h; ++o) send_all(t0 + k, g[m], g[m ^ h], own[o]);
                }
            }
            return L;
        }
        for (std::uint32_t m = 0; m < n; ++m)
            for (std::uint32_t o = 0; o < n; ++o)
                if (o != m) send_all(t0 + 1, g[m], g[o], own[o]);
        return 1;
    }

    /// Allgather of what every owner holds: direct (1 step), ring (n - 1), doubling (log n).
    std::uint32_t allgather(const Group& g, const Owned& own, Across mode, std::uint32_t t0) {
        const std::uint32_t n = static_cast<std::uint32_t>(g.size());
        if (n == 1) return 0;
        if (mode == Across::ring) {
            for (std::uint32_t u = 1; u < n; ++u)
                for (std::uint32_t m = 0; m < n; ++m) send_all(t0 + u, g[m], g[(m + 1) % n], own[(m + n + 1 - u) % n]);
            return n - 1;
        }
        if (mode == Across::halving || mode == Across::doubling) {
            const std::uint32_t L = log2_of(n);
            for (std::uint32_t k = 1; k <= L; ++k) {
                const std::uint32_t h = 1u << (k - 1);
                for (std::uint32_t m = 0; m < n; ++m) {
                    const std::uint32_t lo = (m >> (k - 1)) << (k - 1);
                    for (std::uint32_t o = lo; o < lo + h; ++o) send_all(t0 + k, g[m], g[m ^ h], own[o]);
                }
            }
            return L;
        }
        return one_to_each(g, [&](std::uint32_t o) -> const std::vector<std::uint32_t>& { return own[o]; }, t0);
    }

    /// Allreduce without splitting the items: direct (every member sends every item to every
    /// other, 1 step) or recursive doubling (log n steps, n a power of two).
    std::uint32_t allreduce(const Group& g, const std::vector<std::uint32_t>& items, Across mode, std::uint32_t t0) {
        const std::uint32_t n = static_cast<std::uint32_t>(g.size());
        if (n == 1) return 0;
        if (mode == Across::doubling) {
            const std::uint32_t L = log2_of(n);
            for (std::uint32_t k = 1; k <= L; ++k)
                for (std::uint32_t m = 0; m < n; ++m) send_all(t0 + k, g[m], g[m ^ (1u << (k - 1))], items);
            return L;
        }
        for (std::uint32_t m = 0; m < n; ++m)
            for (std::uint32_t o = 0; o < n; ++o)
                if (o != m) send_all(t0 + 1, g[m], g[o], items);
        return 1;
    }

    /// Sums sent to many one destination per logical step (one_to_each): allreduce's; data only through a
    /// router under replicate=no.
    void stagger() { stagger_ = true; }

private:
    /// Every member sends what(m) to every other: in one logical step, or (stagger) one destination
    /// per logical step, member m to m + 1, m + 2, ... Through a router under replicate=no each departure
    /// forwards the copy the step semantics matches it with, first in, first out, and among the copies of
    /// one step by channel (docs/time.md, "Routers and copies"): n - 1 copies sent in one step would leave
    /// in channel order, every owner's first copy on the lowest channel at once (a sum, until 2026-11-26,
    /// waited there for every value of its chunk instead, so all n - 1 copies had to enter the rail switch
    /// before the first left it: rail 128 x 8 allreduce at 1 GiB 16.1 ms with one piece, 10.8 ms one
    /// destination a step, bound 10.7 ms; allgather at 1 MiB 13.8 us against 8.57 us). So sums and data
    /// go one a step there. Between GPUs joined by channels the sends are ready at once and taken in table
    /// order, step first: in one step every owner sent to member 0 first, one a step spreads them over the
    /// receivers (h100rail 128 x 8 allreduce at 16 MiB: 99.5 us against 90.3 us, bound 85.9 us): sums go one
    /// a step there too. Not through a router under replicate=yes: there the sends of one step share their
    /// hop into the router (plan.hpp), and one a step each would pay its own (rail 16 x 8 allreduce at
    /// 1 GiB: 10.157 ms against 10.206 ms).
    template <class What>
    std::uint32_t one_to_each(const Group& g, What what, std::uint32_t t0) {
        const std::uint32_t n = static_cast<std::uint32_t>(g.size());
        const bool routed = !plan_.joined(g[0], g[1]), replicate = plan_.model().replicate;
        const bool stagger = routed ? !replicate : stagger_;
        for (std::uint32_t m = 0; m < n; ++m)
            for (std::uint32_t i = 1; i < n; ++i) send_all(stagger ? t0 + i : t0 + 1, g[m], g[(m + i) % n], what(m));
        return stagger ? n - 1 : 1;
    }

    void send_all(std::uint32_t step, Node from, Node to, const std::vector<std::uint32_t>& items) {
        for (std::uint32_t x : items) plan_.send(step, from, to, x);
    }
    Plan& plan_;
    bool stagger_ = false;
};

/// The rails: GPU i of every box, in box order.
std::vector<Group> rails_of(const std::vector<Group>& boxes) {
    std::vector<Group> rails(boxes[0].size());
    for (const Group& b : boxes)
        for (std::size_t i = 0; i < b.size(); ++i) rails[i].push_back(b[i]);
    return rails;
}

/// The items of a box's members (in box order) in the order of its cycle.
Owned along(const Group& box, const Group& cycle, const Owned& by_member) {
    Owned out;
    for (Node n : cycle) out.push_back(by_member[static_cast<std::size_t>(std::find(box.begin(), box.end(), n) - box.begin())]);
    return out;
}

bool splits(Across a) { return a == Across::direct_rsag || a == Across::ring || a == Across::halving; }

/// The order in which box b's in-box reduce-scatter completes the rail owners' shares (of K), so
/// that the rail phase that follows finds its first sends ready in the order it makes them:
/// direct and halving to the other boxes from b + 1 on (halving: the far half first), the ring
/// to b - 1, b - 2, ...; box b's own share last (it does not leave the box). Without it every
/// box completed share 0 first and the rails' first sends all went to box 0 at once (h100rail
/// 4 x 8 reduce_scatter at 16 MiB: 40.6 us against the bound's 33.3).
std::vector<std::uint32_t> rail_order(std::uint32_t b, std::uint32_t K, Across mode) {
    std::vector<std::uint32_t> order;
    for (std::uint32_t i = 1; i <= K; ++i) order.push_back(mode == Across::ring ? (b + K - i) % K : (b + i) % K);
    if (mode == Across::halving) {  // by the step of the recursive halving that sends it: the highest bit of r ^ b first
        auto level = [&](std::uint32_t x) { return log2_of((x ^ b) + 1); };
        std::stable_sort(order.begin(), order.end(), [&](std::uint32_t x, std::uint32_t y) { return level(x) > level(y); });
    }
    return order;
}

/// In-box reduce-scatter of one piece in every box, the shares of the rail owners in K logical
/// steps from t0 + 1 in each box's rail order (`item(j, r)`: in-box owner j's items for rail
/// owner r); the box's own share at own_t0 + 1 instead when own_t0 > 0; returns the steps used (K).
template <class Item>
std::uint32_t inbox_reduce_scatter(Phases& ph, const std::vector<Group>& boxes, std::uint32_t K, Across mode, std::uint32_t t0, Item item,
                                   std::uint32_t own_t0 = 0) {
    const std::uint32_t B = static_cast<std::uint32_t>(boxes[0].size());
    for (std::uint32_t b = 0; b < boxes.size(); ++b) {
        const std::vector<std::uint32_t> order = rail_order(b, K, mode);
        for (std::uint32_t i = 0; i < K; ++i) {
            Owned by_j(B);
            for (std::uint32_t j = 0; j < B; ++j) by_j[j] = item(j, order[i]);
            ph.reduce_scatter(boxes[b], by_j, Across::direct_rsag, order[i] == b && own_t0 ? own_t0 : t0 + i);
        }
    }
    return K;
}

/// Allreduce: in-box reduce-scatter (or allreduce), the rails' allreduce of what each GPU owns,
/// in-box allgather. A piece has U slots, slot u owned in the box by GPU owners[u] (one slot per GPU
/// when the shares are even, shares.hpp); chunk (q, u, r) = (q U + u) Kp + r: piece q, slot u, rail
/// owner r. Pieces start Kp logical steps apart (the in-box reduce-scatter takes one per rail owner).
void allreduce_plan(Plan& plan, const std::vector<Group>& boxes, const std::vector<Group>& cycles, const Shape& sh, std::uint32_t pieces,
                    const std::vector<std::uint32_t>& owners) {
    const std::uint32_t K = static_cast<std::uint32_t>(boxes.size()), B = static_cast<std::uint32_t>(boxes[0].size());
    const bool split = sh.inbox == InBox::rsag || sh.inbox == InBox::ring || sh.inbox == InBox::halving;
    const std::uint32_t Bp = split ? B : 1, U = split ? static_cast<std::uint32_t>(owners.size()) : 1, Kp = splits(sh.across) ? K : 1;
    auto chunk = [&](std::uint32_t q, std::uint32_t u, std::uint32_t r) { return (q * U + u) * Kp + r; };
    std::vector<std::vector<std::uint32_t>> slots(Bp);  // per in-box owner, its slots
    for (std::uint32_t u = 0; u < U; ++u) slots[split ? owners[u] : 0].push_back(u);
    const std::vector<Group> rails = rails_of(boxes);
    Phases ph(plan);
    ph.stagger();
    for (std::uint32_t q = 0; q < pieces; ++q) {
        std::uint32_t t = sh.inbox == InBox::rsag ? q * Kp : q, used = 0;
        // owner j's items for rail owner r (every r: kAll)
        constexpr std::uint32_t kAll = ~0u;
        auto items = [&](std::uint32_t j, std::uint32_t r) {
            std::vector<std::uint32_t> v;
            for (std::uint32_t u : slots[j])
                for (std::uint32_t x = r == kAll ? 0 : r; x < (r == kAll ? Kp : r + 1); ++x) v.push_back(chunk(q, u, x));
            return v;
        };
        Owned by_j(Bp);
        for (std::uint32_t j = 0; j < Bp; ++j) by_j[j] = items(j, kAll);
        if (sh.inbox == InBox::rsag) used = inbox_reduce_scatter(ph, boxes, Kp, sh.across, t, items);
        if (sh.inbox == InBox::ring)
            for (std::size_t b = 0; b < boxes.size(); ++b) used = ph.reduce_scatter(cycles[b], along(boxes[b], cycles[b], by_j), Across::ring, t);
        if (sh.inbox == InBox::halving)
            for (const Group& b : boxes) used = ph.reduce_scatter(b, by_j, Across::halving, t);
        if (sh.inbox == InBox::ar)
            for (const Group& b : boxes) used = ph.allreduce(b, by_j[0], Across::direct_ar, t);
        t += used;
        used = 0;
        for (std::uint32_t i = 0; i < B; ++i) {
            const std::uint32_t j = split ? i : 0;
            if (splits(sh.across)) {
                Owned by_r(K);
                for (std::uint32_t r = 0; r < K; ++r) by_r[r] = items(j, r);
                used = ph.reduce_scatter(rails[i], by_r, sh.across, t);
                used += ph.allgather(rails[i], by_r, sh.across, t + used);
            } else if (sh.across != Across::none) {
                used = ph.allreduce(rails[i], items(j, 0), sh.across, t);
            }
        }
        t += used;
        if (sh.inbox == InBox::rsag)
            for (const Group& b : boxes) ph.allgather(b, by_j, Across::direct_rsag, t);
        if (sh.inbox == InBox::ring)
            for (std::size_t b = 0; b < boxes.size(); ++b) ph.allgather(cycles[b], along(boxes[b], cycles[b], by_j), Across::ring, t);
        if (sh.inbox == InBox::halving)
            for (const Group& b : boxes) ph.allgather(b, by_j, Across::halving, t);
    }
}

/// Reduce-scatter: processor p ends with chunks p k .. p k + k - 1 (piece q: chunk p k + q);
/// in-box reduce-scatter to GPU j of the chunks of every box's GPU j (K logical steps, in each
/// box's rail order; the box's own shares of every piece after all the others), then along rail
/// j. Pieces start K logical steps apart (1 in boxes of one).
void reduce_scatter_plan(Plan& plan, const std::vector<Group>& boxes, const std::vector<Group>& cycles, const Shape& sh, std::uint32_t pieces) {
    const std::uint32_t K = static_cast<std::uint32_t>(boxes.size()), B = static_cast<std::uint32_t>(boxes[0].size());
    const std::vector<Group> rails = rails_of(boxes);
    Phases ph(plan);
    for (std::uint32_t q = 0; q < pieces; ++q) {
        auto item = [&](std::uint32_t r, std::uint32_t j) { return idx(boxes[r][j]) * pieces + q; };
        const std::uint32_t t = sh.inbox == InBox::rsag ? q * K : q;
        std::uint32_t used = 0;
        // box b's own share of every piece does not leave the box: after every piece's shares for the
        // rails, so that the last sends a GPU makes over its box's links are ones with nothing after
        // them, and the last piece's rail sends start early enough to be hidden under them
        // (h100rail2x8 reduce_scatter at 16 MiB: 36.0 us with 64 pieces, 33.2 us with 16, bound 32.3)
        const std::uint32_t own_t0 = K > 1 ? pieces * K + q : 0;
        if (sh.inbox == InBox::rsag)
            used = inbox_reduce_scatter(ph, boxes, K, sh.across, t, [&](std::uint32_t j, std::uint32_t r) { return std::vector<std::uint32_t>{item(r, j)}; }, own_t0);
        if (sh.inbox == InBox::ring || sh.inbox == InBox::halving) {
            Owned by_j(B);
            for (std::uint32_t j = 0; j < B; ++j)
                for (std::uint32_t r = 0; r < K; ++r) by_j[j].push_back(item(r, j));
            for (std::size_t b = 0; b < boxes.size(); ++b)
                used = sh.inbox == InBox::ring ? ph.reduce_scatter(cycles[b], along(boxes[b], cycles[b], by_j), Across::ring, t)
                                               : ph.reduce_scatter(boxes[b], by_j, Across::halving, t);
        }
        for (std::uint32_t j = 0; j < B; ++j) {
            Owned by_r(K);
            for (std::uint32_t r = 0; r < K; ++r) by_r[r] = {item(r, j)};
            ph.reduce_scatter(rails[j], by_r, sh.across, t + used);
        }
    }
}

/// Allgather: piece q is chunk q of every datum; along rail j first, then in the box.
void allgather_plan(Plan& plan, const std::vector<Group>& boxes, const std::vector<Group>& cycles, const Shape& sh, std::uint32_t pieces) {
    const std::uint32_t K = static_cast<std::uint32_t>(boxes.size()), B = static_cast<std::uint32_t>(boxes[0].size());
    const std::vector<Group> rails = rails_of(boxes);
    const Messages ms(K * B, nullptr, pieces);
    Phases ph(plan);
    for (std::uint32_t q = 0; q < pieces; ++q) {
        auto item = [&](std::uint32_t r, std::uint32_t j) { return static_cast<std::uint32_t>(idx(ms.broadcast(idx(boxes[r][j]), q))); };
        std::uint32_t used = 0;
        for (std::uint32_t j = 0; j < B; ++j) {
            Owned by_r(K);
            for (std::uint32_t r = 0; r < K; ++r) by_r[r] = {item(r, j)};
            used = ph.allgather(rails[j], by_r, sh.across, q);
        }
        Owned by_j(B);
        for (std::uint32_t j = 0; j < B; ++j)
            for (std::uint32_t r = 0; r < K; ++r) by_j[j].push_back(item(r, j));
        if (sh.inbox == InBox::ring)
            for (std::size_t b = 0; b < boxes.size(); ++b) ph.allgather(cycles[b], along(boxes[b], cycles[b], by_j), Across::ring, q + used);
        else if (sh.inbox == InBox::halving)
            for (const Group& b : boxes) ph.allgather(b, by_j, Across::halving, q + used);
        else
            for (const Group& b : boxes) ph.allgather(b, by_j, Across::direct_rsag, q + used);
    }
}

/// Per in-box owner (rail), its slots of a piece (owners: slot -> owner).
std::vector<std::vector<std::uint32_t>> slots_of(const std::vector<std::uint32_t>& owners, std::uint32_t B) {
    std::vector<std::vector<std::uint32_t>> slots(B);
    for (std::uint32_t u = 0; u < owners.size(); ++u) slots[owners[u]].push_back(u);
    return slots;
}

/// Along a rail whose owner has `slots`: per box r, slot u of every GPU j of box r (item(r, j, u)).
template <class Item>
Owned by_box(std::uint32_t K, std::uint32_t B, const std::vector<std::uint32_t>& slots, Item item) {
    Owned by_r(K);
    for (std::uint32_t r = 0; r < K; ++r)
        for (std::uint32_t j = 0; j < B; ++j)
            for (std::uint32_t u : slots) by_r[r].push_back(item(r, j, u));
    return by_r;
}

/// Allgather with shares other than even (shares.hpp): slot u of every GPU's piece goes over NVLink to the
/// box's owner of u, along its rail, then from the owner of u in every box to the others. Piece q of
/// processor p, slot u, is chunk q U + u of p's datum; pieces start one logical step apart.
void allgather_shares_plan(Plan& plan, const std::vector<Group>& boxes, const Shape& sh, std::uint32_t pieces, const std::vector<std::uint32_t>& owners) {
    const std::uint32_t K = static_cast<std::uint32_t>(boxes.size()), B = static_cast<std::uint32_t>(boxes[0].size()), U = static_cast<std::uint32_t>(owners.size());
    const std::vector<Group> rails = rails_of(boxes);
    const std::vector<std::vector<std::uint32_t>> slots = slots_of(owners, B);
    const Messages ms(K * B, nullptr, pieces * U);
    Phases ph(plan);
    for (std::uint32_t q = 0; q < pieces; ++q) {
        auto item = [&](std::uint32_t r, std::uint32_t j, std::uint32_t u) { return static_cast<std::uint32_t>(idx(ms.broadcast(idx(boxes[r][j]), q * U + u))); };
        for (std::uint32_t b = 0; b < K; ++b)  // every GPU's slots to their owners in its box
            for (std::uint32_t j = 0; j < B; ++j)
                for (std::uint32_t u = 0; u < U; ++u)
                    if (owners[u] != j) plan.send(q + 1, boxes[b][j], boxes[b][owners[u]], item(b, j, u));
        std::uint32_t used = 0;
        for (std::uint32_t i = 0; i < B; ++i)
            if (!slots[i].empty()) used = ph.allgather(rails[i], by_box(K, B, slots[i], item), sh.across, q + 1);
        for (std::uint32_t b = 0; b < K; ++b)  // from each owner to the others in its box, but not a GPU's own datum
            for (std::uint32_t i = 0; i < B; ++i)
                for (std::uint32_t m = 0; m < B; ++m)
                    if (m != i)
                        for (std::uint32_t r = 0; r < K; ++r)
                            for (std::uint32_t j = 0; j < B; ++j)
                                if (r != b || j != m)
                                    for (std::uint32_t u : slots[i]) plan.send(q + 2 + used, boxes[b][i], boxes[b][m], item(r, j, u));
    }
}

/// Allreduce of Shape::chained (rsag in boxes, shares other than even): in a box with a GPU whose links in it are
/// slow, chunk (q, u, r) of slot u for rail owner r goes along a chain of the box's GPUs, those of no slot first (the
/// slow ones first of all), then the other owners from the slot's owner o on, o last (hop h of the i-th rail owner in
/// the box's rail order at logical step t + i + 1 + h), each GPU sending what its buffer holds: the bytes of the direct
/// exchange (each GPU sends and receives one copy of a chunk; o only receives, the first only sends), but only the slow
/// GPU's sends are ready at once, so the box's owners send the later pieces' partials as the slow GPU's data comes in,
/// between the earlier pieces' sums, instead of all of them first; in the last 1/32 of the pieces the slow GPUs send
/// straight to the chain's end and the others chain (their sends, ready at once, go early where the box has room, and
/// the slow GPU's last sends reach the owner in one hop, not behind 7 hops that wait on the sums). Other boxes exchange directly. Then the
/// rails' phase and the owners' sums to the others one a step (the slow GPUs first), as allreduce_plan. A slow GPU j
/// of no slot with a NIC (`every`: nic_share, D) takes one sum in D from GPU j of the next box over its NIC (that NIC
/// idle: rail j owns nothing) instead of from its box's owner. Of two boxes, the other's fast (`hosts`), those chunks
/// are *hosted* there: j sends its contribution to GPU j of the other box over its NIC (not over its slow links in the
/// box), the other box's GPUs but GPU j send their partials to the slot's owner, which adds the rail's sum from box b
/// in and sends it to GPU j; GPU j adds j's and its own, and sends the result to the owner (who sends it back along the
/// rail and to the GPU after it), to the rest of its box and to j. Else j sends one contribution in 2D over its NIC to the slot's owner in the next box
/// (whose NIC is its rail's: the half keeps that rail's load near the others').
void chained_allreduce_plan(Plan& plan, const std::vector<Group>& boxes, const Shape& sh, std::uint32_t pieces,
                            const std::vector<std::uint32_t>& owners, const std::vector<std::uint32_t>& every, const std::vector<char>& slow) {
    const std::uint32_t K = static_cast<std::uint32_t>(boxes.size()), B = static_cast<std::uint32_t>(boxes[0].size());
    const std::uint32_t U = static_cast<std::uint32_t>(owners.size()), Kp = splits(sh.across) ? K : 1;
    auto chunk = [&](std::uint32_t q, std::uint32_t u, std::uint32_t r) { return (q * U + u) * Kp + r; };
    const std::vector<std::vector<std::uint32_t>> slots = slots_of(owners, B);
    // per box and slot: the GPUs of no slot whose links in the box are slow, the other owners from the slot's owner o
    // on, the other GPUs of no slot, o (a fast GPU heading a chain would send every piece's chunk at once)
    std::vector<std::vector<std::vector<std::uint32_t>>> chains(K, std::vector<std::vector<std::uint32_t>>(U));
    for (std::uint32_t b = 0; b < K; ++b)
        for (std::uint32_t u = 0; u < U; ++u) {
            std::vector<std::uint32_t>& c = chains[b][u];
            for (std::uint32_t j = 0; j < B; ++j)
                if (slots[j].empty() && slow[idx(boxes[b][j])]) c.push_back(j);
            for (std::uint32_t j = 0; j < B; ++j)
                if (slots[j].empty() && !slow[idx(boxes[b][j])]) c.push_back(j);
            for (std::uint32_t i = 1; i <= B; ++i)
                if (!slots[(owners[u] + i) % B].empty()) c.push_back((owners[u] + i) % B);
        }
    // GPU j of box b sends chunk (q, u) over its NIC (to box b + 1, whose GPU j does not)
    // GPU j of box b takes one sum in D over its NIC (from GPU j of box b + 1, whose NIC is idle: j's rail owns
    // nothing) and sends one contribution in 2D over it (to the slot's owner in box b + 1, whose NIC is its rail's)
    auto nic = [&](std::uint32_t b, std::uint32_t j, std::uint32_t q, std::uint32_t u, std::uint32_t f) {
        const std::uint32_t D = every[idx(boxes[b][j])] * f;
        return D > 0 && slots[j].empty() && every[idx(boxes[(b + 1) % K][j])] == 0 && (q * U + (u + q) % U) % D == 0;
    };
    auto returned = [&](std::uint32_t b, std::uint32_t j, std::uint32_t q, std::uint32_t u) { return nic(b, j, q, u, 1); };
    auto paced = [&](std::uint32_t b) { return std::ranges::any_of(boxes[b], [&](Node p) { return slow[idx(p)] != 0; }); };
    // per box, its first GPU of no slot with a NIC share; `hosts`: of two boxes, the other's is fast
    std::vector<std::uint32_t> head(K, B);
    for (std::uint32_t b = 0; b < K; ++b)
        for (std::uint32_t j = B; j-- > 0;)
            if (every[idx(boxes[b][j])] > 0 && slots[j].empty()) head[b] = j;
    auto hosts = [&](std::uint32_t b) { return K == 2 && Kp == 1 && head[b] < B && !paced((b + 1) % K); };
    auto offloaded = [&](std::uint32_t b, std::uint32_t j, std::uint32_t q, std::uint32_t u) { return !(hosts(b) && j == head[b]) && nic(b, j, q, u, 2); };
    auto hosted = [&](std::uint32_t b, std::uint32_t q, std::uint32_t u) { return hosts(b) && returned(b, head[b], q, u); };
    const std::vector<Group> rails = rails_of(boxes);
    Phases ph(plan);
    ph.stagger();
    for (std::uint32_t q = 0; q < pieces; ++q) {
        std::uint32_t t = q * Kp;
        for (std::uint32_t u = 0; u < U; ++u)
            for (std::uint32_t b = 0; b < K; ++b) {
                const std::vector<std::uint32_t> order = rail_order(b, Kp, sh.across);
                const std::uint32_t p = (b + K - 1) % K, n = (b + 1) % K;
                std::vector<std::uint32_t> chain;
                for (std::uint32_t j : chains[b][u])
                    if (hosted(b, q, u) && j == head[b]) plan.send(t + 1, boxes[b][j], boxes[n][j], chunk(q, u, 0));
                    else if (!offloaded(b, j, q, u)) chain.push_back(j);
                    else
                        for (std::uint32_t i = 0; i < Kp; ++i) plan.send(t + i + 1, boxes[b][j], boxes[n][owners[u]], chunk(q, u, order[i]));
                if (hosted(p, q, u)) {  // the other box's slow GPU's chunk: every GPU of this box but GPU head[p] to the owner
                    for (std::uint32_t j = 0; j < B; ++j)
                        if (j != head[p] && j != owners[u]) plan.send(t + 1, boxes[b][j], boxes[b][owners[u]], chunk(q, u, 0));
                    continue;
                }
                for (std::uint32_t i = 0; i < Kp; ++i)
                    for (std::uint32_t h = 1; h < chain.size(); ++h) {
                        const std::uint32_t from = chain[h - 1];
                        if (!paced(b)) plan.send(t + i + 1, boxes[b][from], boxes[b][chain.back()], chunk(q, u, order[i]));
                        else if (q + pieces / 32 < pieces || !slow[idx(boxes[b][from])]) plan.send(t + i + 1 + h, boxes[b][from], boxes[b][chain[h]], chunk(q, u, order[i]));
                        else plan.send(t + i + 1 + h, boxes[b][from], boxes[b][chain.back()], chunk(q, u, order[i]));  // a tail piece's slow GPU
                    }
            }
        t += Kp + B - 1;
        for (std::uint32_t b = 0; b < K; ++b)  // a hosted chunk's box sum along the rail, added in there and sent to GPU head[b]
            for (std::uint32_t u = 0; u < U; ++u)
                if (hosted(b, q, u)) {
                    plan.send(t + 1, boxes[b][owners[u]], boxes[(b + 1) % K][owners[u]], chunk(q, u, 0));
                    plan.send(t + 2, boxes[(b + 1) % K][owners[u]], boxes[(b + 1) % K][head[b]], chunk(q, u, 0));
                }
        std::uint32_t used = 0;
        for (std::uint32_t j = 0; j < B; ++j) {
            if (slots[j].empty()) continue;
            Owned by_r(Kp);
            for (std::uint32_t r = 0; r < Kp; ++r)
                for (std::uint32_t u : slots[j])
                    if (!hosted(0, q, u) && !hosted(K - 1, q, u)) by_r[r].push_back(chunk(q, u, r));
            if (Kp > 1) {
                used = ph.reduce_scatter(rails[j], by_r, sh.across, t);
                used += ph.allgather(rails[j], by_r, sh.across, t + used);
            } else {
                used = ph.allreduce(rails[j], by_r[0], sh.across, t);
            }
        }
        t += used;
        // each owner's sums to the others in its box, one a step; an offloaded chunk's from the next box after them
        // (the GPUs whose links in the box are slow first: their links in carry the most)
        for (std::uint32_t b = 0; b < K; ++b)
            for (std::uint32_t u = 0; u < U; ++u) {
                const std::uint32_t p = (b + K - 1) % K, o = owners[u];
                if (hosted(p, q, u)) {  // from GPU head[p]: to the owner, who sends it along the rail, then the others
                    const std::uint32_t h = head[p];
                    plan.send(t + 2, boxes[b][h], boxes[b][o], chunk(q, u, 0));
                    plan.send(t + 3, boxes[b][o], boxes[p][o], chunk(q, u, 0));
                    for (std::uint32_t i = 1; i < B; ++i)
                        if ((h + i) % B != o) {
                            const bool by_o = (h + i) % B == (o + 1) % B;  // the owner's links out carry less
                            plan.send(t + 2 + i + (by_o ? 2 : 0), boxes[b][by_o ? o : h], boxes[b][(h + i) % B], chunk(q, u, 0));
                        }
                    continue;
                }
                const std::uint32_t late = hosted(b, q, u) ? 3 : 0;  // the owner has the result from the other box
                std::vector<std::uint32_t> to;
                for (std::uint32_t pass = 0; pass < 2; ++pass)
                    for (std::uint32_t i = 1; i < B; ++i)
                        if ((slow[idx(boxes[b][(o + i) % B])] != 0) == (pass == 0)) to.push_back((o + i) % B);
                for (std::uint32_t i = 0; i < to.size(); ++i)
                    for (std::uint32_t r = 0; r < Kp; ++r) {
                        if (!returned(b, to[i], q, u)) plan.send(t + 1 + i + late, boxes[b][o], boxes[b][to[i]], chunk(q, u, r));
                        else plan.send(t + B + 1, boxes[(b + 1) % K][to[i]], boxes[b][to[i]], chunk(q, u, r));
                    }
            }
    }
}

/// Reduce-scatter with shares other than even: in every box each GPU sends the owner of slot u its partial of
/// slot u of every processor's chunks (a processor not its own: the destination adds it last), the rail of the
/// owner reduces them across the boxes, and the owner in the destination's box sends it the sum. Processor p
/// ends with chunks (q U + u) of its own, p pieces U + q U + u.
void reduce_scatter_shares_plan(Plan& plan, const std::vector<Group>& boxes, const Shape& sh, std::uint32_t pieces, const std::vector<std::uint32_t>& owners) {
    const std::uint32_t K = static_cast<std::uint32_t>(boxes.size()), B = static_cast<std::uint32_t>(boxes[0].size()), U = static_cast<std::uint32_t>(owners.size());
    const std::vector<Group> rails = rails_of(boxes);
    const std::vector<std::vector<std::uint32_t>> slots = slots_of(owners, B);
    Phases ph(plan);
    // as reduce_scatter_plan: each box's shares for the other boxes one logical step each in its rail order, its own
    // box's after every piece's (they do not leave the box), then the owners' sums to the destinations
    const std::uint32_t own_t0 = pieces * K;
    for (std::uint32_t q = 0; q < pieces; ++q) {
        auto item = [&](std::uint32_t r, std::uint32_t j, std::uint32_t u) { return idx(boxes[r][j]) * pieces * U + q * U + u; };
        const std::uint32_t t = q * K;
        for (std::uint32_t b = 0; b < K; ++b) {
            const std::vector<std::uint32_t> order = rail_order(b, K, sh.across);
            for (std::uint32_t x = 0; x < K; ++x) {
                const std::uint32_t r = order[x], step = r == b ? own_t0 + q + 1 : t + x + 1;
                for (std::uint32_t m = 0; m < B; ++m)
                    for (std::uint32_t u = 0; u < U; ++u)
                        if (owners[u] != m)
                            for (std::uint32_t j = 0; j < B; ++j)
                                if (r != b || j != m) plan.send(step, boxes[b][m], boxes[b][owners[u]], item(r, j, u));
            }
        }
        std::uint32_t used = 0;
        for (std::uint32_t i = 0; i < B; ++i)
            if (!slots[i].empty()) used = ph.reduce_scatter(rails[i], by_box(K, B, slots[i], item), sh.across, t + K);
        const std::uint32_t last = std::max(t + K + used, own_t0 + q + 1) + 1;
        for (std::uint32_t r = 0; r < K; ++r)
            for (std::uint32_t u = 0; u < U; ++u)
                for (std::uint32_t j = 0; j < B; ++j)
                    if (owners[u] != j) plan.send(last, boxes[r][owners[u]], boxes[r][j], item(r, j, u));
    }
}

/// Why a shape does not apply to K boxes of B for a collective ("" when it does).
std::string shape_problem(CollectiveKind kind, std::size_t K, std::size_t B, const Shape& sh) {
    if ((B == 1) != (sh.inbox == InBox::none)) return "in-box phase and box size disagree";
    if ((K == 1) != (sh.across == Across::none)) return "rail phase and box count disagree";
    if ((sh.across == Across::halving || sh.across == Across::doubling) && !power_of_two(K)) return "recursive halving and doubling need a power of two of boxes";
    if (sh.shares != Shares::even && (sh.inbox != InBox::rsag || K < 2)) return "shares other than even are for the in-box direct exchange across boxes";
    if (sh.chained && (kind != CollectiveKind::allreduce || sh.shares == Shares::even || sh.shares == Shares::leaf))
        return "the chained reduce-scatter is for allreduce's rsag with shares by capacity or on full-speed rails";
    if (sh.shares == Shares::leaf && (sh.across != Across::direct_rsag || (kind == CollectiveKind::allreduce) != (sh.leaf_all > 0)))
        return "the leaf shares are for allreduce's rsag+direct (a NIC down) and reduce-scatter's and allgather's direct (a one-way NIC)";
    if (kind == CollectiveKind::allreduce) return "";
    if (sh.inbox == InBox::ar) return "the in-box allreduce is for allreduce only";
    if (sh.inbox == InBox::ring && B < 3) return "a ring in boxes of fewer than 3 is the direct exchange";
    if (sh.inbox == InBox::halving && (B < 4 || !power_of_two(B))) return "recursive halving in boxes needs a power of two of at least 4 processors";
    if (sh.across == Across::direct_ar) return "the direct rail allreduce is for allreduce only";
    if (kind == CollectiveKind::reduce_scatter && sh.across == Across::doubling) return "recursive doubling does not reduce-scatter";
    if (kind == CollectiveKind::allgather && sh.across == Across::doubling) return "allgather's recursive doubling is the shape `halving` (its second half)";
    return "";
}

/// build_shape of the leaf shares (leaf.hpp).
std::optional<SendTable> build_leaf(const SynthInstance& in, const std::vector<std::vector<Node>>& boxes, const Shape& sh, std::uint32_t pieces,
                                    std::string* why, Deadline deadline) {
    const bool rs = in.collective.kind != CollectiveKind::allreduce;  // reduce-scatter or allgather
    const LeafSlots slots = rs ? LeafSlots{} : leaf_slots(*in.topology, boxes, sh.leaf_all);
    const OneWayLeaf one_way = rs ? one_way_leaf(*in.topology, boxes, in.collective.kind) : OneWayLeaf{};
    if (const std::string& no = rs ? one_way.why : slots.why; !no.empty()) {
        if (why) *why = no;
        return std::nullopt;
    }
    // allreduce: a piece is all + 2 rounds of one slot per up rail, each kind in proportion (LeafSlots::at); reduce-scatter
    // and allgather: parts of every processor's piece
    const std::uint32_t rounds = pieces * (sh.leaf_all + 2);
    const std::uint32_t per_datum = in.collective.kind == CollectiveKind::allgather ? 1 : in.topology->processors();  // reduce-scatter: P blocks
    Collective coll = in.collective;
    try {
        coll.set_chunks(rs ? pieces * one_way.parts * per_datum : rounds * static_cast<std::uint32_t>(slots.up.size() * boxes.size()), *in.topology);
    } catch (const InputError& e) {  // the message space of 32-bit ids (docs/semantics.md, "Chunks")
        if (why) *why = e.what();
        return std::nullopt;
    }
    Plan plan(in.topology, in.model, coll, deadline);
    if (in.collective.kind == CollectiveKind::allgather) leaf_allgather_plan(plan, boxes, one_way, pieces);
    else if (rs) leaf_reduce_scatter_plan(plan, boxes, one_way, pieces);
    else leaf_allreduce_plan(plan, boxes, slots, rounds);
    return plan.lower(why, deadline);
}

}  // namespace

bool box_complete(const Topology& t, const std::vector<Node>& box) {
    for (Node a : box)
        for (Node b : box)
            if (a != b && !t.find_channel(a, b)) return false;
    return true;
}

std::vector<Node> box_cycle(const Topology& t, const std::vector<Node>& box) {
    const std::size_t n = box.size();
    if (n < 3 || n > 16) return {};
    auto joined = [&](std::size_t a, std::size_t b) { return t.find_channel(box[a], box[b]) && t.find_channel(box[b], box[a]); };
    std::vector<std::size_t> path{0};
    std::vector<char> used(n, 0);
    used[0] = 1;
    // depth first, the next member in increasing order
    std::vector<std::size_t> next(n + 1, 0);
    while (!path.empty()) {
        if (path.size() == n && joined(path.back(), 0)) break;
        std::size_t& from = next[path.size()];
        bool moved = false;
        for (; from < n && path.size() < n; ++from)
            if (!used[from] && joined(path.back(), from)) {
                used[from] = 1;
                path.push_back(from++);
                next[path.size()] = 0;
                moved = true;
                break;
            }
        if (!moved) {
            used[path.back()] = path.size() == 1 ? 1 : 0;
            path.pop_back();
        }
    }
    if (path.empty()) return {};
    std::vector<Node> cycle;
    for (std::size_t i : path) cycle.push_back(box[i]);
    return cycle;
}

std::string shape_name(const Shape& sh, CollectiveKind kind) {
    static constexpr const char* in[] = {"", "rsag", "ar", "ring-rsag", "hd-rsag"};
    static constexpr const char* across[] = {"", "direct-ar", "direct", "ring", "halving-doubling", "doubling"};
    std::string inbox = in[static_cast<int>(sh.inbox)], rail = across[static_cast<int>(sh.across)];
    if (kind == CollectiveKind::reduce_scatter) {  // the first halves
        if (sh.inbox == InBox::rsag) inbox = "rs";
        if (sh.inbox == InBox::ring) inbox = "ring-rs";
        if (sh.inbox == InBox::halving) inbox = "halving-rs";
        if (sh.across == Across::halving) rail = "halving";
    }
    if (kind == CollectiveKind::allgather) {  // the second halves
        if (sh.inbox == InBox::rsag) inbox = "ag";
        if (sh.inbox == InBox::ring) inbox = "ring-ag";
        if (sh.inbox == InBox::halving) inbox = "doubling-ag";
        if (sh.across == Across::halving) rail = "doubling";
    }
    std::string s = sh.flat ? "flat " : "hierarchical ";
    s += inbox;
    if (!inbox.empty() && !rail.empty()) s += "+";
    s += rail;
    if (sh.shares == Shares::capacity) s += ", shares by capacity";
    if (sh.shares == Shares::full) s += ", shares on full-speed rails";
    if (sh.chained) s += ", chained";
    if (sh.shares == Shares::leaf && sh.leaf_all == 0 && kind == CollectiveKind::allgather) s += ", a box's slots on a NIC that only receives sent out once through a box";
    else if (sh.shares == Shares::leaf && sh.leaf_all == 0) s += ", a box's slots on a NIC that only sends summed outside it first";
    else if (sh.shares == Shares::leaf) s += fmt::format(", a box with a NIC down a leaf in 2 of {} slots", sh.leaf_all + 2);
    return s;
}

std::vector<Shape> every_shape() {
    std::vector<Shape> s;
    for (InBox i : {InBox::none, InBox::rsag, InBox::ar, InBox::ring, InBox::halving})
        for (Across a : {Across::none, Across::direct_ar, Across::direct_rsag, Across::ring, Across::halving, Across::doubling}) s.push_back({i, a, false});
    return s;
}

std::optional<SendTable> build_shape(const SynthInstance& in, const std::vector<std::vector<Node>>& boxes, const Shape& sh, std::uint32_t pieces,
                                     std::string* why, Deadline deadline) {
    const CollectiveKind kind = in.collective.kind;
    const std::size_t K = boxes.size(), B = boxes.empty() ? 0 : boxes[0].size();
    std::string problem = K == 0 || pieces == 0 ? "no boxes or no pieces" : shape_problem(kind, K, B, sh);
    if (problem.empty() && kind != CollectiveKind::allreduce && kind != CollectiveKind::reduce_scatter && kind != CollectiveKind::allgather)
        problem = "only allreduce, reduce_scatter and allgather are constructed";
    if (!problem.empty()) {
        if (why) *why = problem;
        return std::nullopt;
    }
    const std::uint32_t P = static_cast<std::uint32_t>(K * B);
    if (sh.shares == Shares::leaf) return build_leaf(in, boxes, sh, pieces, why, deadline);
    // the in-box owner of each slot of a piece (one slot per GPU unless the shares follow capacities)
    const std::vector<std::uint32_t> owners = slot_owners(sh.shares == Shares::even ? std::vector<double>(B, 1.0) : rail_capacity(*in.topology, boxes), sh.shares);
    if (owners.empty()) {
        if (why) *why = "no rail carries anything";
        return std::nullopt;
    }
    if (sh.shares != Shares::even) trace("  slots of a piece per rail: {}", fmt::join(owners, " "));
    Collective coll = in.collective;
    std::uint32_t C = pieces;
    if (kind == CollectiveKind::allreduce) C = pieces * (sh.inbox == InBox::rsag || sh.inbox == InBox::ring || sh.inbox == InBox::halving ? static_cast<std::uint32_t>(owners.size()) : 1) * (splits(sh.across) ? K : 1);
    if (kind == CollectiveKind::reduce_scatter) C = pieces * P * (sh.shares == Shares::even ? 1 : static_cast<std::uint32_t>(owners.size()));
    if (kind == CollectiveKind::allgather && sh.shares != Shares::even) C = pieces * static_cast<std::uint32_t>(owners.size());
    try {
        coll.set_chunks(C, *in.topology);
    } catch (const InputError& e) {  // the message space of 32-bit ids (docs/semantics.md, "Chunks")
        if (why) *why = e.what();
        return std::nullopt;
    }
    std::vector<Group> cycles;
    if (sh.inbox == InBox::ring)
        for (const Group& b : boxes) {
            cycles.push_back(box_cycle(*in.topology, b));
            if (cycles.back().empty()) {
                if (why) *why = fmt::format("no Hamiltonian cycle in the box of processor {}", idx(b[0]));
                return std::nullopt;
            }
        }
    Plan plan(in.topology, in.model, coll, deadline);
    if (kind == CollectiveKind::allreduce && sh.chained) chained_allreduce_plan(plan, boxes, sh, pieces, owners, nic_share(*in.topology, boxes), slow_in_box(*in.topology, boxes));
    else if (kind == CollectiveKind::allreduce) allreduce_plan(plan, boxes, cycles, sh, pieces, owners);
    const bool even = sh.shares == Shares::even;
    if (kind == CollectiveKind::reduce_scatter) even ? reduce_scatter_plan(plan, boxes, cycles, sh, pieces) : reduce_scatter_shares_plan(plan, boxes, sh, pieces, owners);
    if (kind == CollectiveKind::allgather) even ? allgather_plan(plan, boxes, cycles, sh, pieces) : allgather_shares_plan(plan, boxes, sh, pieces, owners);
    return plan.lower(why, deadline);
}

}  // namespace collsched::compose
