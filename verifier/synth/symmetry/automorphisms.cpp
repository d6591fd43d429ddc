// The automorphisms of a topology that keep a collective's goals (automorphisms.hpp).
#include "verifier/synth/symmetry/automorphisms.hpp"

#include <algorithm>
#include <functional>

#include "verifier/synth/symmetry/processor_orbits.hpp"

namespace collsched {

std::vector<std::vector<std::uint32_t>> automorphisms(const SynthInstance& in, std::size_t limit, std::chrono::steady_clock::time_point deadline) {
    const Topology& t = *in.topology;
    std::vector<std::vector<std::uint32_t>> out;
    if (t.routers() != 0 || in.collective.kind == CollectiveKind::custom) return out;
    const std::uint32_t P = t.processors();
    std::vector<std::uint32_t> cap(std::size_t{P} * P, 0);
    for (const Channel& ch : t.channels()) cap[idx(ch.from) * P + idx(ch.to)] = ch.cap;
    // A node's signature (its sorted out- and in-capacities) must be kept.
    std::vector<std::vector<std::uint32_t>> sig(P);
    for (std::uint32_t u = 0; u < P; ++u) {
        std::vector<std::uint32_t> o, i;
        for (std::uint32_t v = 0; v < P; ++v) {
            if (cap[u * P + v]) o.push_back(cap[u * P + v]);
            if (cap[v * P + u]) i.push_back(cap[v * P + u]);
        }
        std::sort(o.begin(), o.end());
        std::sort(i.begin(), i.end());
        sig[u] = o;
        sig[u].push_back(0);
        sig[u].insert(sig[u].end(), i.begin(), i.end());
    }
    const bool rooted = !in.collective.row().symmetric();  // a renaming must keep the root, members, order, blocks
    std::vector<char> member(P, 0);
    for (Node m : in.collective.members) member[idx(m)] = 1;
    // Every channel and link group must keep its attributes (capacities, speeds: AutomorphismCheck).
    const AutomorphismCheck keeps(t);
    std::vector<std::uint32_t> pi(P, 0);
    std::vector<char> used(P, 0);
    bool late = false;
    std::function<void(std::uint32_t)> go = [&](std::uint32_t u) {
        if (out.size() >= limit || late) return;
        if (std::chrono::steady_clock::now() >= deadline) {  // each call tries P images at O(P) each: checked every time
            late = true;
            return;
        }
        if (u == P) {
            bool identity = true;
            for (std::uint32_t v = 0; v < P; ++v) identity = identity && pi[v] == v;
            if (!identity && keeps(pi)) out.push_back(pi);
            return;
        }
        for (std::uint32_t x = 0; x < P; ++x) {
            if (used[x] || sig[x] != sig[u] || member[x] != member[u]) continue;
            if (rooted && (u == idx(in.collective.root)) != (x == idx(in.collective.root))) continue;
            bool ok = true;
            for (std::uint32_t v = 0; v < u && ok; ++v)
                ok = cap[u * P + v] == cap[x * P + pi[v]] && cap[v * P + u] == cap[pi[v] * P + x];
            if (!ok) continue;
            pi[u] = x;
            used[x] = 1;
            go(u + 1);
            used[x] = 0;
        }
    };
    go(0);
    return out;
}

}  // namespace collsched
