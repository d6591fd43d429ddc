// Upper bounds from schedules: the known algorithms of the papers where one applies,
// collsched's own constructions, and the greedy list schedules (verifier/constructions/steps/greedy.cpp).
// Every schedule returned here has been verified by the direct checker under the instance's
// model.
//
// How the constructions work (moved from docs/synthesis.md; the user's summary stays there):
//
// - `bft_phase_alltoall`: the paper's pipelined phase algorithm (total exchange on cbft and ebft).
// - **XOR-invariant total exchange** (ours): processor s sends m(s, s^k) in step f(k). Translations s
//   -> s^a are tree automorphisms, so the table is valid iff f and f + dist - 1 are injective (half
//   duplex: starts and ends disjoint too), a one-processor problem of n-1 items solved by seeded
//   min-conflicts search from its sum bound up. Meets the send/receive sums for every n from 8 to
//   4096 tried (findings.md, Theorem 1 gives it in closed form).
// - **Translation-invariant total exchange** (ours; rings, tori, hypercubes: Cayley graphs of Z_d1 x
//   ... x Z_dk with equal capacities): every s sends m(s, s+k) along the same shortest moves at the
//   same steps, valid iff each (direction, step) has at most cap moves: an edge colouring of offsets x
//   directions with max(load / cap, longest message) colours (Koenig). Meets channel counting where
//   loads balance: torus:4x4 8 (fixed routes: 12), hypercube:d 2^(d-1), odd rings (n^2-1)/8.
// - **Mirrored ring total exchange** (ours; even rings): odd sources use the even sources' pattern
//   mirrored; moves alternate two classes, a two-machine problem solved greedily. Meets n^2/8 on every
//   even ring tried (ring:4 to ring:64; ring:6: 5, fixed-route optimum 6).
// - **Direct total exchange by edge colouring** (ours; every goal pair joined by a channel: complete
//   graphs, `dgx2.json`, `nvswitch8.json`): the demand, a bipartite multigraph of degree D, coloured
//   with D matchings, k colours a step (k the least per-step transfers of any processor): ceil(D/k)
//   one-hop steps. Meets the send/receive sums when every processor has the same k (`dgx2.json`
//   alltoall 15, `nvswitch8.json` 7).
// - **Translates** (ours, `constructions/translate_packing.cpp`; machines with a checked translation
//   group Z_B x Z_K, "The bandwidth end" below; tried first, and the search stops when they meet the
//   bound): allgather, the translates of **one spanning tree** for processor 0's datum; total
//   exchange, the translates of one processor's messages (processor 0's message to d on a
//   Cayley-graph shortest path, every g's message to g + d the same path moved by g at the same
//   steps). Valid iff per step the hops of each difference, and of each link group or port, are
//   within capacity; built by seeded first-fit list scheduling with restarts. They meet the counting
//   bounds on every machine of boxes in "At scale" (32 to 1,024 GPUs) and on tori (torus:40x40
//   allgather 400, torus:5x5 alltoall 15).
// - **Ring algorithm on a Hamiltonian cycle** (allgather without routers; single-port paper, section
//   3): everybody sends every step (full duplex), every other processor (half duplex, even n), or
//   positions j, j+2, ..., j+n-3 in step j (half duplex, odd n): n-1, 2(n-1), 2n steps, optimal.
//
// - Greedy: personalized first fit (farthest first, each segment at the earliest step with room);
//   with any route also first fit along earliest-arrival paths in the time-expanded network;
//   dissemination flooding (oldest message first, to neighbours closer to a goal lacking it);
//   end-to-end nearest-first sends.
#include <algorithm>
#include <chrono>
#include <random>
#include <cmath>
#include <deque>
#include <functional>
#include <limits>
#include <map>
#include <queue>

#include <fmt/format.h>

#include "compiler/table/builder.hpp"
#include "support/assert.hpp"
#include "support/error.hpp"
#include "support/trace.hpp"
#include "verifier/check/direct.hpp"
#include "verifier/constructions/steps/known.hpp"
#include "verifier/synth/problem/network.hpp"
#include "verifier/constructions/steps/greedy.hpp"
#include "verifier/synth/problem/internal.hpp"
#include "verifier/constructions/steps/translate_packing.hpp"

namespace collsched {

using namespace synth_internal;

namespace {

/// Total exchange on a binary fat tree that is invariant under the translations s -> s ^ a
/// (each is an automorphism of the tree: it swaps children at some levels): processor s sends
/// m(s, s^k) in step f(k), for every s. A processor's injections are then distinct iff f is
/// injective, and its arrivals f(k) + len(k) - 1 (len(k), the distance from s to s^k, is the
/// same for every s) are distinct iff f + len - 1 is injective (half duplex: and no step holds
/// both a start and an end). That is a problem of n-1 items for one processor, solved here by
/// min-conflicts local search (fixed seed, so the result is reproducible) for T from its own
/// sum bound up to max_T. Inner channels are left to the verification: on the EBFT they cannot
/// overflow (a subtree of s leaves has channels of capacity s above it, and its leaves inject
/// and receive one message per step, all moving in lockstep).
std::optional<SendTable> xor_invariant_alltoall(const SynthInstance& in, Step max_T, Deadline deadline) {
    const Topology& t = *in.topology;
    const std::uint32_t n = t.processors();
    if (t.family() != Family::bft || in.collective.kind != CollectiveKind::alltoall || n < 4 || (n & (n - 1)) != 0) return std::nullopt;
    const std::uint32_t m = n - 1;
    std::vector<Step> len(n);
    std::uint64_t sum = 0;
    for (std::uint32_t k = 1; k < n; ++k) sum += (len[k] = t.distance(Node{0}, Node{k})) - 1;
    const bool half = in.model.ports == Ports::half;
    std::mt19937 rng(20240601);
    for (Step T = static_cast<Step>(m + (sum + m - 1) / m); T <= max_T; ++T) {
        // occupancy per step: starts in starts[], ends in ends[] (the same array under half duplex)
        std::vector<std::uint32_t> starts(T + 2, 0), ends_own(T + 2, 0);
        std::vector<std::uint32_t>& ends = half ? starts : ends_own;
        std::vector<Step> f(n, 0);
        bool room = true;
        for (std::uint32_t k = 1; k < n && room; ++k) {
            if (len[k] > T) room = false;
            else {
                f[k] = 1 + static_cast<Step>(rng() % (T - len[k] + 1));
                ++starts[f[k]];
                ++ends[f[k] + len[k] - 1];
            }
        }
        if (!room) continue;
        auto clash = [&](std::uint32_t k) { return starts[f[k]] > 1 || ends[f[k] + len[k] - 1] > 1; };
        std::vector<std::uint32_t> bad, best;
        for (std::uint64_t move = 0; move < 400000; ++move) {
            // each move scans the n - 1 offsets: on 1,024 GPUs the search and the table of 18.8 million
            // transfers ran 5 s past --timeout 10 before the deadline was polled here
            if ((move & 255) == 0 && deadline.passed()) return std::nullopt;
            bad.clear();
            for (std::uint32_t k = 1; k < n; ++k)
                if (clash(k)) bad.push_back(k);
            if (bad.empty()) {
                TableBuilder b(in.topology, in.model, in.collective);
                Messages ms(n);
                for (std::uint32_t k = 1; k < n; ++k) {
                    if (deadline.passed()) return std::nullopt;
                    for (std::uint32_t p = 0; p < n; ++p) b.send_cut_through(f[k], Node{p}, Node{p ^ k}, ms.personal(p, p ^ k));
                }
                return std::move(b).finish();
            }
            std::uint32_t k = bad[rng() % bad.size()];
            --starts[f[k]];
            --ends[f[k] + len[k] - 1];
            std::uint32_t low = std::numeric_limits<std::uint32_t>::max();
            best.clear();
            for (Step s = 1; s + len[k] - 1 <= T; ++s) {
                std::uint32_t c = starts[s] + ends[s + len[k] - 1];
                if (c < low) {
                    low = c;
                    best.clear();
                }
                if (c == low) best.push_back(s);
            }
            // Mostly the least-conflict step; now and then a random one, to leave plateaus.
            f[k] = rng() % 10 == 0 ? 1 + static_cast<Step>(rng() % (T - len[k] + 1)) : best[rng() % best.size()];
            ++starts[f[k]];
            ++ends[f[k] + len[k] - 1];
        }
    }
    return std::nullopt;
}

/// Edge colouring of a bipartite multigraph with `colors` >= its largest degree (Koenig's
/// theorem; alternating-path recolouring). edges[e] = (left, right); returns a colour per edge.
/// Polls `deadline` every 4096 edges (LimitReached: an alternating path is as long as the graph).
std::vector<std::uint32_t> bipartite_edge_coloring(std::uint32_t left, std::uint32_t right,
                                                   const std::vector<std::pair<std::uint32_t, std::uint32_t>>& edges,
                                                   std::uint32_t colors, Deadline deadline = {}) {
    constexpr std::uint32_t none = std::numeric_limits<std::uint32_t>::max();
    // at[side][vertex * colors + c]: the edge of colour c at the vertex, or none.
    std::vector<std::uint32_t> atL(std::size_t{left} * colors, none), atR(std::size_t{right} * colors, none);
    std::vector<std::uint32_t> col(edges.size(), none);
    auto free_at = [&](std::vector<std::uint32_t>& at, std::uint32_t v) {
        for (std::uint32_t c = 0; c < colors; ++c)
            if (at[std::size_t{v} * colors + c] == none) return c;
        return none;
    };
    for (std::uint32_t e = 0; e < edges.size(); ++e) {
        if ((e & 0xfff) == 0 && deadline.passed()) throw LimitReached("time limit (an edge colouring)");
        auto [u, v] = edges[e];
        std::uint32_t a = free_at(atL, u), b = free_at(atR, v);
        if (atR[std::size_t{v} * colors + a] != none) {
            // Swap a and b along the path from v that alternates a, b, a, ... (it cannot reach u).
            std::vector<std::uint32_t> path;
            std::uint32_t x = v, want = a;
            bool on_right = true;
            for (;;) {
                std::uint32_t f = (on_right ? atR : atL)[std::size_t{x} * colors + want];
                if (f == none) break;
                path.push_back(f);
                x = on_right ? edges[f].first : edges[f].second;
                on_right = !on_right;
                want = want == a ? b : a;
            }
            for (std::uint32_t f : path) {
                atL[std::size_t{edges[f].first} * colors + col[f]] = none;
                atR[std::size_t{edges[f].second} * colors + col[f]] = none;
            }
            for (std::uint32_t f : path) {
                col[f] = col[f] == a ? b : a;
                atL[std::size_t{edges[f].first} * colors + col[f]] = f;
                atR[std::size_t{edges[f].second} * colors + col[f]] = f;
            }
        }
        col[e] = a;
        atL[std::size_t{u} * colors + a] = e;
        atR[std::size_t{v} * colors + a] = e;
    }
    return col;
}

/// Total exchange on a torus, ring or hypercube (a Cayley graph of Z_d1 x ... x Z_dk) that is
/// invariant under translations: every processor s sends m(s, s+k) along the same moves at the
/// same steps. Message k takes a shortest path: |k_i| moves in direction +-i (antipodal offsets
/// on even rings pick the direction with the smaller load so far). A channel in direction D
/// then carries, in step t, exactly the moves of direction D that the pattern puts in step t,
/// whatever its position; so the schedule is valid iff every (direction, step) holds at most
/// cap moves and every message moves at most once per step: an edge colouring of the bipartite
/// multigraph messages x directions (direction D split into cap copies), which exists with
/// max(largest direction load / cap, longest message) colours (Koenig). That is the channel
/// counting bound whenever the loads balance, e.g. torus:4x4 (8) and every hypercube (P/2).
std::optional<SendTable> translation_invariant_alltoall(const SynthInstance& in) {
    const Topology& t = *in.topology;
    if (in.collective.kind != CollectiveKind::alltoall || t.routers() != 0) return std::nullopt;
    std::vector<std::uint32_t> dims;
    if (t.family() == Family::ring) dims = {t.processors()};
    else if (t.family() == Family::torus || t.family() == Family::hypercube) dims = t.dims();
    else return std::nullopt;
    const std::uint32_t P = t.processors(), k = static_cast<std::uint32_t>(dims.size());
    if (P > 4096) return std::nullopt;
    std::vector<std::uint32_t> stride(k, 1);
    for (std::uint32_t i = k; i-- > 1;) stride[i - 1] = stride[i] * dims[i];
    auto coord = [&](std::uint32_t v, std::uint32_t i) { return v / stride[i] % dims[i]; };
    auto add = [&](std::uint32_t v, std::uint32_t i, std::uint32_t delta) {
        std::uint32_t c = coord(v, i);
        return v - c * stride[i] + (c + delta) % dims[i] * stride[i];
    };
    auto shift = [&](std::uint32_t v, std::uint32_t i, int sgn) { return add(v, i, sgn > 0 ? 1 : dims[i] - 1); };
    // Directions: (i, +1) for every i; (i, -1) where dims[i] > 2.
    std::vector<std::pair<std::uint32_t, int>> dirs;
    for (std::uint32_t i = 0; i < k; ++i) {
        dirs.push_back({i, 1});
        if (dims[i] > 2) dirs.push_back({i, -1});
    }
    // Channel of direction d at node v; all capacities equal.
    std::uint32_t cap = 0;
    std::vector<ChannelId> chan(std::size_t{P} * dirs.size());
    for (std::uint32_t v = 0; v < P; ++v)
        for (std::size_t d = 0; d < dirs.size(); ++d) {
            auto c = t.find_channel(Node{v}, Node{shift(v, dirs[d].first, dirs[d].second)});
            if (!c) return std::nullopt;
            if (cap == 0) cap = t.channel(*c).cap;
            if (t.channel(*c).cap != cap) return std::nullopt;
            chan[std::size_t{v} * dirs.size() + d] = *c;
        }
    // Moves of every offset (offset = node id of 0 + k).
    std::vector<std::vector<std::uint32_t>> moves(P);  // direction indices
    std::vector<std::uint64_t> load(dirs.size(), 0);
    std::vector<std::pair<std::uint32_t, std::uint32_t>> antipodal;  // (offset, dimension)
    auto dir_index = [&](std::uint32_t i, int sgn) {
        for (std::size_t d = 0; d < dirs.size(); ++d)
            if (dirs[d].first == i && (dirs[d].second == sgn || dims[i] == 2)) return static_cast<std::uint32_t>(d);
        return std::uint32_t{0};
    };
    for (std::uint32_t o = 1; o < P; ++o)
        for (std::uint32_t i = 0; i < k; ++i) {
            std::uint32_t c = coord(o, i), d = dims[i];
            if (c == 0) continue;
            if (d == 2) {
                moves[o].push_back(dir_index(i, 1));
            } else if (2 * c < d) {
                moves[o].insert(moves[o].end(), c, dir_index(i, 1));
            } else if (2 * c > d) {
                moves[o].insert(moves[o].end(), d - c, dir_index(i, -1));
            } else {
                antipodal.push_back({o, i});
                continue;
            }
        }
    for (std::uint32_t o = 1; o < P; ++o)
        for (std::uint32_t m : moves[o]) ++load[m];
    for (auto [o, i] : antipodal) {
        std::uint32_t plus = dir_index(i, 1), minus = dir_index(i, -1);
        std::uint32_t pick = load[plus] <= load[minus] ? plus : minus;
        moves[o].insert(moves[o].end(), dims[i] / 2, pick);
        load[pick] += dims[i] / 2;
    }
    // Bipartite multigraph: offsets x (direction, copy); copies spread round robin.
    std::vector<std::pair<std::uint32_t, std::uint32_t>> edges;
    std::vector<std::uint32_t> next_copy(dirs.size(), 0), deg(dirs.size() * cap, 0);
    std::uint32_t colors = 0;
    for (std::uint32_t o = 1; o < P; ++o) {
        colors = std::max<std::uint32_t>(colors, static_cast<std::uint32_t>(moves[o].size()));
        for (std::uint32_t d : moves[o]) {
            std::uint32_t r = d * cap + next_copy[d]++ % cap;
            edges.push_back({o, r});
            colors = std::max(colors, ++deg[r]);
        }
    }
    std::vector<std::uint32_t> col = bipartite_edge_coloring(P, static_cast<std::uint32_t>(dirs.size() * cap), edges, colors);
    // Per offset: its moves in step order.
    std::vector<std::vector<std::pair<Step, std::uint32_t>>> plan(P);
    for (std::size_t e = 0; e < edges.size(); ++e) plan[edges[e].first].push_back({col[e] + 1, edges[e].second / cap});
    TableBuilder b(in.topology, in.model, in.collective);
    Messages ms(P);
    for (std::uint32_t o = 1; o < P; ++o) {
        std::sort(plan[o].begin(), plan[o].end());
        for (std::uint32_t src = 0; src < P; ++src) {
            std::uint32_t dst = src;
            for (std::uint32_t i = 0; i < k; ++i) dst = add(dst, i, coord(o, i));
            std::uint32_t at = src;
            for (auto [step, d] : plan[o]) {
                b.hop(step, chan[std::size_t{at} * dirs.size() + d], ms.personal(src, dst));
                at = shift(at, dirs[d].first, dirs[d].second);
            }
        }
    }
    return std::move(b).finish();
}

}  // namespace

/// Total exchange where every goal pair has a channel of its own (complete graphs, switch boxes
/// such as dgx2.json): colour the demand (a bipartite multigraph of senders and receivers,
/// degree D) with D matchings (Koenig), and send k colours per step, k the least per-step
/// capacity of any processor's out- and in-channels (ports, link groups). ceil(D / k) steps,
/// which meets the send/receive bound when every processor has the same k. The caller verifies
/// the result. Polls `deadline` (LimitReached) while it lists, colours and writes the P(P-1) sends.
std::optional<SendTable> direct_alltoall(const SynthInstance& in, Deadline deadline) {
    const Topology& t = *in.topology;
    if (in.collective.kind != CollectiveKind::alltoall) return std::nullopt;
    const std::uint32_t P = t.processors();
    if (P > 4096) return std::nullopt;
    auto goals = goal_pairs(in);
    std::vector<std::pair<std::uint32_t, std::uint32_t>> edges;
    std::vector<ChannelId> chan;
    std::vector<std::uint32_t> out_deg(P, 0), in_deg(P, 0);
    for (const GoalPair& g : goals) {
        if ((chan.size() & 0xffff) == 0 && deadline.passed()) throw LimitReached("time limit (the direct total exchange)");
        auto c = t.find_channel(g.src, g.dst);
        if (!c) return std::nullopt;
        chan.push_back(*c);
        edges.emplace_back(idx(g.src), idx(g.dst));
        ++out_deg[idx(g.src)];
        ++in_deg[idx(g.dst)];
    }
    if (edges.empty()) return std::nullopt;
    std::uint64_t k = std::numeric_limits<std::uint64_t>::max();
    std::uint32_t D = 0;
    for (std::uint32_t p = 0; p < P; ++p) {
        D = std::max({D, out_deg[p], in_deg[p]});
        if (out_deg[p]) k = std::min(k, synth::step_capacity(t, in.model.ports, t.out_channels(Node{p})).hops);
        if (in_deg[p]) k = std::min(k, synth::step_capacity(t, in.model.ports, t.in_channels(Node{p})).hops);
    }
    if (k == 0) return std::nullopt;
    auto colour = bipartite_edge_coloring(P, P, edges, D, deadline);
    TableBuilder b(in.topology, in.model, in.collective);
    for (std::size_t e = 0; e < edges.size(); ++e) b.hop(static_cast<Step>(colour[e] / k + 1), chan[e], goals[e].m);
    return std::move(b).finish(deadline);
}

namespace {

/// Total exchange on an even ring invariant under translations by 2 and mirrored between the
/// two classes: an even source s sends m(s, s+k) along pattern A, an odd one along A mirrored
/// (directions swapped). A move of A in direction + from a relative position of parity p (or -
/// from parity 1-p) loads, in its step, the + channels out of nodes of parity p and the -
/// channels out of nodes of parity 1-p, once each (the odd sources' mirrored moves fill the
/// other parity), so the table is valid iff each step has at most one move of class X (+ from
/// even, - from odd) and one of class Y (the others). A message's moves alternate X, Y, ...
/// (+) or Y, X, ... (-): a two-machine problem of chains, scheduled greedily (longest remaining
/// chain first). The antipodal message takes the direction that balances X and Y. Meets the
/// counting bound n^2/8 when the greedy packs both machines.
std::optional<SendTable> mirrored_ring_alltoall(const SynthInstance& in) {
    const Topology& t = *in.topology;
    const std::uint32_t n = t.processors();
    if (t.family() != Family::ring || in.collective.kind != CollectiveKind::alltoall || n < 4 || n % 2 != 0 || n > 4096)
        return std::nullopt;
    struct Chain {
        std::uint32_t offset;
        int dir;              // +1 or -1
        std::uint32_t left;   // moves still to do
        std::uint32_t cls;    // class of the next move: 0 = X, 1 = Y
        Step ready = 1;       // earliest step of the next move
        std::vector<Step> steps;
    };
    std::vector<Chain> chains;
    std::uint64_t load[2] = {0, 0};
    for (std::uint32_t k = 1; k < n / 2; ++k) {
        chains.push_back({k, +1, k, 0, 1, {}});
        chains.push_back({n - k, -1, k, 1, 1, {}});
        load[0] += k;  // the two chains of length k have k moves of each class in all
        load[1] += k;
    }
    {
        // Antipodal: n/2 moves, starting with X (+) or Y (-); the odd one out goes to the lighter class.
        std::uint32_t h = n / 2;
        bool plus = h % 2 == 0 || load[0] <= load[1];
        chains.push_back({h, plus ? +1 : -1, h, plus ? 0u : 1u, 1, {}});
    }
    std::size_t pending = chains.size();
    const Step cap = static_cast<Step>(n) * n;
    for (Step s = 1; pending > 0; ++s) {
        if (s > cap) return std::nullopt;
        for (std::uint32_t cls : {0u, 1u}) {
            Chain* best = nullptr;
            for (Chain& c : chains)
                if (c.left > 0 && c.cls == cls && c.ready <= s && (!best || c.left > best->left)) best = &c;
            if (!best) continue;
            best->steps.push_back(s);
            best->ready = s + 1;
            best->cls ^= 1;
            if (--best->left == 0) --pending;
        }
    }
    TableBuilder b(in.topology, in.model, in.collective);
    Messages ms(n);
    for (const Chain& c : chains)
        for (std::uint32_t src = 0; src < n; ++src) {
            int dir = src % 2 == 0 ? c.dir : -c.dir;
            std::uint32_t off = src % 2 == 0 ? c.offset : n - c.offset;
            std::uint32_t at = src;
            for (Step st : c.steps) {
                std::uint32_t next = (at + n + static_cast<std::uint32_t>(dir + static_cast<int>(n))) % n;
                auto ch = t.find_channel(Node{at}, Node{next});
                if (!ch) return std::nullopt;
                b.hop(st, *ch, ms.personal(src, (src + off) % n));
                at = next;
            }
        }
    return std::move(b).finish();
}

/// A Hamiltonian cycle of a router-free topology (depth-first search, fewest onward choices
/// first, a bounded number of backtracking steps); empty when none is found or `deadline` passes
/// (polled every 1,024 steps: a step costs the square of the degree, and on some numberings of
/// a machine the budget alone took minutes).
std::vector<std::uint32_t> hamiltonian_cycle(const Topology& t, std::chrono::steady_clock::time_point deadline) {
    const std::uint32_t P = t.processors();
    if (t.routers() != 0 || P < 3) return {};
    std::vector<std::vector<std::uint32_t>> adj(P);
    for (const Channel& c : t.channels()) adj[idx(c.from)].push_back(idx(c.to));
    std::vector<std::uint32_t> path{0};
    std::vector<char> used(P, 0);
    used[0] = 1;
    std::uint64_t budget = 2000000;
    auto closes = [&](std::uint32_t v) { return std::find(adj[v].begin(), adj[v].end(), 0u) != adj[v].end(); };
    bool stopped = false;
    std::function<bool()> dfs = [&]() -> bool {
        if (stopped || budget-- == 0) return false;
        if (budget % 1024 == 0 && std::chrono::steady_clock::now() >= deadline) return !(stopped = true);
        std::uint32_t u = path.back();
        if (path.size() == P) return closes(u);
        std::vector<std::pair<std::size_t, std::uint32_t>> next;
        for (std::uint32_t v : adj[u])
            if (!used[v]) {
                std::size_t deg = 0;
                for (std::uint32_t w : adj[v]) deg += !used[w];
                next.push_back({deg, v});
            }
        std::sort(next.begin(), next.end());
        for (auto [deg, v] : next) {
            used[v] = 1;
            path.push_back(v);
            if (dfs()) return true;
            path.pop_back();
            used[v] = 0;
        }
        return false;
    };
    return dfs() && !stopped ? path : std::vector<std::uint32_t>{};
}

/// Multinode broadcast along a Hamiltonian cycle, as in the single-port paper (Dimakopoulos,
/// section 3): messages rotate one way round the cycle through FIFO buffers, a message is
/// forwarded until it has made n-1 hops. Who transmits in step j (position i on the cycle):
/// everybody (full duplex), positions of the parity of j (half duplex, n even), positions
/// j, j+2, ..., j+n-3 (half duplex, n odd: position j-1 idles). 2n steps for odd n, 2(n-1) for
/// even n under half duplex, n-1 under full duplex, which are the lower bounds.
std::optional<SendTable> ring_allgather(const SynthInstance& in, std::chrono::steady_clock::time_point deadline) {
    const Topology& t = *in.topology;
    if (in.collective.kind != CollectiveKind::allgather) return std::nullopt;
    std::vector<std::uint32_t> cyc = hamiltonian_cycle(t, deadline);
    if (cyc.empty()) return std::nullopt;
    const std::uint32_t n = static_cast<std::uint32_t>(cyc.size());
    const bool half = in.model.ports == Ports::half;
    Messages ms(n);
    struct Copy {
        std::uint32_t origin;
        std::uint32_t hops;
    };
    std::vector<std::deque<Copy>> fifo(n);
    for (std::uint32_t i = 0; i < n; ++i) fifo[i].push_back({cyc[i], 0});
    TableBuilder b(in.topology, in.model, in.collective);
    std::uint64_t pending = std::uint64_t{n} * (n - 1);
    for (Step j = 1; pending > 0; ++j) {
        if (j > 4 * n + 8) return std::nullopt;
        std::vector<std::pair<std::uint32_t, Copy>> moves;
        for (std::uint32_t i = 0; i < n; ++i) {
            bool sends = !half || (n % 2 == 0 ? (i + j) % 2 == 0 : ((i + n - j % n) % n) % 2 == 0 && (i + 1) % n != j % n);
            if (!sends || fifo[i].empty()) continue;
            moves.push_back({i, fifo[i].front()});
            fifo[i].pop_front();
        }
        for (auto [i, c] : moves) {
            std::uint32_t to = (i + 1) % n;
            b.hop(j, *t.find_channel(Node{cyc[i]}, Node{cyc[to]}), ms.broadcast(c.origin));
            --pending;
            if (c.hops + 1 < n - 1) fifo[to].push_back({c.origin, c.hops + 1});
        }
    }
    return std::move(b).finish();
}

}  // namespace

namespace {

bool personal_kind(EncodingKind k) { return k == EncodingKind::personal || k == EncodingKind::free_route; }

/// A table not yet verified, with the row's source (constructed_schedule verifies it).
std::optional<KnownSchedule> unverified(std::optional<SendTable> t) {
    if (!t) return std::nullopt;
    return KnownSchedule{std::move(*t), ""};
}

}  // namespace

std::string alltoall_on_bft(const SynthInstance& in, EncodingKind k) {
    if (!personal_kind(k) || in.collective.kind != CollectiveKind::alltoall) return "alltoall only";
    return in.topology->family() == Family::bft ? "" : "binary fat trees only";
}
std::string personal_only(const SynthInstance&, EncodingKind k) { return personal_kind(k) ? "" : "personalized collectives only"; }
std::string any_route_only(const SynthInstance&, EncodingKind k) { return k == EncodingKind::free_route ? "" : "any route only"; }
std::string dissemination_only(const SynthInstance&, EncodingKind k) { return k == EncodingKind::dissemination ? "" : "dissemination only"; }
std::string end_to_end_only(const SynthInstance&, EncodingKind k) { return k == EncodingKind::end_to_end ? "" : "end-to-end only"; }

std::optional<KnownSchedule> bft_phase_schedule(const StepBuild& b) {
    try {
        SendTable s = bft_phase_alltoall(b.in.topology, Deadline::at(b.deadline));
        trace("known: bft_phase_alltoall built ({} transfers)", s.transfers.size());
        return KnownSchedule{std::move(s), ""};
    } catch (const InputError&) {
        // capacity pattern not covered by the built-in algorithm: the greedy below applies
    } catch (const LimitReached&) {
        // the deadline passed while its table was written: the others below are not started either
    }
    return std::nullopt;
}

std::optional<KnownSchedule> xor_invariant_schedule(const StepBuild& b) {
    // within fewer steps than the paper's algorithm, when it applied
    const Step cap = b.found.empty() ? 4 * b.in.topology->processors() + 4 * b.in.topology->tree_levels() + 8 : b.found.front().table.steps() - 1;
    return unverified(xor_invariant_alltoall(b.in, cap, Deadline::at(b.deadline)));
}

std::optional<KnownSchedule> translation_invariant_schedule(const StepBuild& b) { return unverified(translation_invariant_alltoall(b.in)); }
std::optional<KnownSchedule> mirrored_ring_schedule(const StepBuild& b) { return unverified(mirrored_ring_alltoall(b.in)); }

std::optional<KnownSchedule> direct_alltoall_schedule(const StepBuild& b) {
    try {
        return unverified(direct_alltoall(b.in, Deadline::at(b.deadline)));
    } catch (const LimitReached&) {
        return std::nullopt;  // the deadline passed while it was built: the greedy schedules below are not started either
    }
}

std::optional<KnownSchedule> greedy_personal_schedule(const StepBuild& b) { return unverified(greedy_personal(b.in, b.deadline)); }
std::optional<KnownSchedule> greedy_free_route_schedule(const StepBuild& b) { return unverified(greedy_free_route(b.in, b.deadline)); }
std::optional<KnownSchedule> ring_allgather_schedule(const StepBuild& b) { return unverified(ring_allgather(b.in, b.deadline)); }
std::optional<KnownSchedule> greedy_flood_schedule(const StepBuild& b) { return unverified(greedy_flood(b.in, b.deadline)); }
std::optional<KnownSchedule> greedy_end_to_end_schedule(const StepBuild& b) { return unverified(greedy_end_to_end(b.in, b.deadline)); }

std::optional<KnownSchedule> translates_schedule(const StepBuild& b) {
    const SynthInstance& in = b.in;
    if (in.chunked()) return std::nullopt;
    const RunLimits limits{Deadline::at(b.deadline), b.memory};
    try {
        if (!translation_group(*in.topology, limits)) return std::nullopt;
        const EncodingKind k = encoding_for(in);
        const std::string group = translation_group_name(*in.topology, limits);
        if (k == EncodingKind::free_route && in.collective.kind == CollectiveKind::alltoall) {
            if (auto x = translate_alltoall(in, b.lower_bound, b.deadline, limits); x && holds(*x, in, false, b.deadline))
                return KnownSchedule{std::move(*x), fmt::format("translates of one processor's messages under {} (collsched construction, docs/synthesis.md)", group)};
        } else if (k == EncodingKind::dissemination && in.collective.kind == CollectiveKind::allgather) {
            if (auto p = pack_translates(in, 1, std::max<Step>(b.lower_bound, 1), b.deadline, limits); p && holds(p->table, in, false, b.deadline))
                return KnownSchedule{std::move(p->table), fmt::format("translates of one spanning tree under {} (collsched construction, docs/synthesis.md)", group)};
        }
    } catch (const LimitReached&) {  // the table did not fit, or the limits stopped its writing
    }
    return std::nullopt;
}

std::optional<KnownSchedule> rings_schedule(const StepBuild& b) { return ring_schedule(b.in, b.deadline); }

namespace {

/// Whether a row of `stage` is tried on the instance: its stage, collsched's own only with `constructions`, and it
/// applies.
bool tried(const Construction& row, StepStage stage, const SynthInstance& in, EncodingKind k, bool constructions) {
    return row.stage == stage && row.build && (!row.own || constructions) && (!row.why_not || row.why_not(in, k).empty());
}

}  // namespace

std::optional<KnownSchedule> stage_schedule(StepStage stage, const StepBuild& b, const ConstructionRows& registry, bool constructions) {
    const EncodingKind k = encoding_for(b.in);
    for (const Construction& row : registry.rows()) {
        if (!tried(row, stage, b.in, k, constructions)) continue;
        if (auto x = row.build(b)) {
            if (x->source.empty()) x->source = row.what;
            return x;
        }
    }
    return std::nullopt;
}

std::optional<KnownSchedule> translation_schedule(const SynthInstance& in, const ConstructionRows& registry, Step lower_bound,
                                                  std::chrono::steady_clock::time_point deadline, const MemoryBudget& memory) {
    const std::vector<KnownSchedule> none;
    return stage_schedule(StepStage::translates, {in, deadline, none, lower_bound, memory}, registry);
}

std::optional<KnownSchedule> constructed_schedule(const SynthInstance& in, const ConstructionRows& registry, bool constructions,
                                                  std::chrono::steady_clock::time_point deadline, const MemoryBudget& memory) {
    EncodingKind k = encoding_for(in);
    if (k == EncodingKind::combining) return std::nullopt;  // the duality's (search/duality.cpp, known_schedule)
    std::vector<KnownSchedule> found;
    const Topology& t = *in.topology;
    // The constructions without a deadline of their own are not started once it has passed, nor
    // when the least table they can write does not fit what is left of the memory budget: every
    // goal's message crosses at least its distance (personalized; the mean from processor 0) or
    // one channel, at bytes_per_transfer while the table is built and verified.
    std::uint64_t least_transfers = 0;
    if (!memory.none()) {
        std::uint64_t hops = 1;
        if (personal_kind(k)) {
            const std::vector<std::uint32_t> d = synth::bfs_distances(t, Node{0});
            std::uint64_t sum = 0, n = 0;
            for (std::uint32_t p = 1; p < t.processors(); ++p)
                if (d[p] != std::numeric_limits<std::uint32_t>::max()) sum += d[p], ++n;
            hops = std::max<std::uint64_t>(1, n ? sum / n : 1);
        }
        least_transfers = mul_sat(in.collective.goal_count(t.processors()), hops);
    }
    auto late = [&] {
        return std::chrono::steady_clock::now() >= deadline || memory.exceeded(0.9) || !memory.fits(mul_sat(least_transfers, bytes_per_transfer));
    };
    // the registry's rows of stage `known` in order: those that apply, collsched's own only with `constructions`
    for (const Construction& row : registry.rows()) {
        if (!tried(row, StepStage::known, in, k, constructions) || (row.stops_when_late && late())) continue;
        if (auto x = row.build({in, deadline, found, 0, memory}); x && holds(x->table, in, row.fixed_routes, deadline))
            found.push_back({std::move(x->table), x->source.empty() ? row.what : std::move(x->source)});
        trace("known: {} done", row.name);
    }
    if (found.empty()) return std::nullopt;
    std::size_t best = 0;
    for (std::size_t i = 1; i < found.size(); ++i)
        if (found[i].table.steps() < found[best].table.steps()) best = i;
    return std::move(found[best]);
}

}  // namespace collsched
