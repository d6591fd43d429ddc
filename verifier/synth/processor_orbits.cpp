// Orbits of processors under cheaply found, checked automorphisms.
#include "verifier/synth/processor_orbits.hpp"

#include <algorithm>
#include <bit>
#include <map>
#include <numeric>
#include <tuple>

namespace collsched {

namespace {

/// Extends a permutation of the processors to the routers: a router goes to the router whose
/// neighbours are the images of its own (processors first, then routers already placed).
/// False when some router finds no unique image.
bool extend_to_routers(const Topology& t, std::vector<std::uint32_t>& image) {
    const std::uint32_t P = t.processors(), N = t.nodes();
    if (N == P) return true;
    constexpr std::uint32_t none = 0xffffffffu;
    for (std::uint32_t r = P; r < N; ++r) image[r] = none;
    std::vector<char> is_image(N, 0);  // routers already chosen as some router's image
    for (int pass = 0; pass < 8; ++pass) {
        // Routers keyed by their neighbours among the processors and the chosen images.
        std::map<std::vector<std::uint32_t>, std::vector<std::uint32_t>> by_set;
        for (std::uint32_t r = P; r < N; ++r) {
            std::vector<std::uint32_t> ns;
            for (ChannelId c : t.out_channels(Node{r})) {
                std::uint32_t v = idx(t.channel(c).to);
                if (v < P || is_image[v]) ns.push_back(v);
            }
            std::sort(ns.begin(), ns.end());
            by_set[ns].push_back(r);
        }
        bool progress = false, open = false;
        std::vector<std::pair<std::uint32_t, std::uint32_t>> placed;
        for (std::uint32_t r = P; r < N; ++r) {
            if (image[r] != none) continue;
            std::vector<std::uint32_t> ns;
            for (ChannelId c : t.out_channels(Node{r})) {
                std::uint32_t v = idx(t.channel(c).to);
                if (v < P || image[v] != none) ns.push_back(image[v]);
            }
            std::sort(ns.begin(), ns.end());
            auto it = by_set.find(ns);
            if (ns.empty() || it == by_set.end() || it->second.size() != 1) {
                open = true;
                continue;
            }
            placed.push_back({r, it->second.front()});
        }
        for (auto [r, img] : placed) {
            image[r] = img;
            is_image[img] = 1;
            progress = true;
        }
        if (!open) break;
        if (!progress) return false;
    }
    std::vector<char> hit(N, 0);
    for (std::uint32_t v = 0; v < N; ++v) {
        if (image[v] == none || hit[image[v]]) return false;
        hit[image[v]] = 1;
    }
    return true;
}

struct UnionFind {
    std::vector<std::uint32_t> up;
    explicit UnionFind(std::uint32_t n) : up(n) { std::iota(up.begin(), up.end(), 0u); }
    std::uint32_t find(std::uint32_t x) {
        while (up[x] != x) x = up[x] = up[up[x]];
        return x;
    }
    bool unite(std::uint32_t a, std::uint32_t b) {
        a = find(a), b = find(b);
        if (a == b) return false;
        if (b < a) std::swap(a, b);
        up[b] = a;
        return true;
    }
};

}  // namespace

bool is_automorphism(const Topology& t, const std::vector<std::uint32_t>& image, bool speeds) {
    for (std::uint32_t i = 0; i < t.channels().size(); ++i) {
        const Channel& ch = t.channel(ChannelId{i});
        auto c = t.find_channel(Node{image[idx(ch.from)]}, Node{image[idx(ch.to)]});
        if (!c || t.channel(*c).cap != ch.cap) return false;
        if (speeds) {
            const LinkSpeed a = t.speed(ChannelId{i}), b = t.speed(*c);
            if (a.alpha != b.alpha || a.bandwidth != b.bandwidth) return false;
        }
    }
    if (t.groups().empty()) return true;
    // with `speeds` a group's bandwidth is part of what must match (0 otherwise)
    std::map<std::tuple<std::vector<std::uint32_t>, std::uint32_t, double>, int> groups;
    for (std::uint32_t g = 0; g < t.groups().size(); ++g) {
        std::vector<std::uint32_t> cs;
        for (ChannelId c : t.groups()[g].channels) cs.push_back(idx(c));
        groups[{std::move(cs), t.groups()[g].cap, speeds ? t.group_bandwidth(g) : 0.0}] = 1;  // channels are sorted in a group
    }
    for (std::uint32_t g = 0; g < t.groups().size(); ++g) {
        std::vector<std::uint32_t> cs;
        for (ChannelId c : t.groups()[g].channels) {
            const Channel& ch = t.channel(c);
            cs.push_back(idx(*t.find_channel(Node{image[idx(ch.from)]}, Node{image[idx(ch.to)]})));
        }
        std::sort(cs.begin(), cs.end());
        if (!groups.count({cs, t.groups()[g].cap, speeds ? t.group_bandwidth(g) : 0.0})) return false;
    }
    return true;
}

ProcessorOrbits processor_orbits(const Topology& t, bool speeds) {
    const std::uint32_t P = t.processors();
    UnionFind uf(P);
    ProcessorOrbits out;
    std::vector<std::vector<std::uint32_t>> candidates;
    auto perm = [&](auto f) {
        std::vector<std::uint32_t> img(t.nodes());
        for (std::uint32_t u = 0; u < P; ++u) img[u] = f(u);
        return img;
    };
    for (std::uint32_t B = 2; B <= P; ++B) {
        if (P % B) continue;
        candidates.push_back(perm([&](std::uint32_t u) { return u / B * B + (u % B + 1) % B; }));
        if (B < P) candidates.push_back(perm([&](std::uint32_t u) { return (u + B) % P; }));
    }
    if (std::has_single_bit(P))
        for (std::uint32_t b = 1; b < P; b <<= 1) candidates.push_back(perm([&](std::uint32_t u) { return u ^ b; }));
    std::uint32_t orbits = P;
    for (auto& img : candidates) {
        if (orbits == 1) break;
        // Only a candidate that would merge something is worth its check.
        bool merges = false;
        for (std::uint32_t u = 0; u < P && !merges; ++u) merges = uf.find(u) != uf.find(img[u]);
        if (!merges || !extend_to_routers(t, img) || !is_automorphism(t, img, speeds)) continue;
        ++out.automorphisms;
        for (std::uint32_t u = 0; u < P; ++u) orbits -= uf.unite(u, img[u]) ? 1 : 0;
    }
    out.orbit.resize(P);
    for (std::uint32_t u = 0; u < P; ++u) {
        out.orbit[u] = uf.find(u);
        if (out.orbit[u] == u) out.representatives.push_back(u);
    }
    return out;
}

}  // namespace collsched
