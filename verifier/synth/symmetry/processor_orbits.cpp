// Orbits of processors under cheaply found, checked automorphisms.
#include "verifier/synth/symmetry/processor_orbits.hpp"

#include <algorithm>
#include <bit>
#include <map>
#include <numeric>
#include <optional>

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

AutomorphismCheck::AutomorphismCheck(const Topology& t, const RunLimits& limits) : t_(t), limits_(limits) {
    for (std::uint32_t g = 0; g < t.groups().size(); ++g) {
        if (g % 1024 == 0) limits_.check("checking a symmetry of the machine");
        std::vector<std::uint32_t> cs;
        for (ChannelId c : t.groups()[g].channels) cs.push_back(idx(c));  // sorted in a group
        groups_[std::move(cs)].push_back({t.groups()[g].cap, t.group_bandwidth(g)});
    }
    for (auto& [cs, attrs] : groups_) std::sort(attrs.begin(), attrs.end());
}

bool AutomorphismCheck::operator()(std::span<const std::uint32_t> image) const {
    const Topology& t = t_;
    const std::uint32_t N = t.nodes();
    // The image of every channel: node u's channels, sorted by the images of their heads, are
    // image(u)'s channels (sorted by head) one for one, with every attribute alike.
    std::vector<std::uint32_t> chan(t.channels().size());
    std::vector<std::pair<std::uint32_t, std::uint32_t>> outs;  // (image of the head, channel)
    for (std::uint32_t u = 0; u < N; ++u) {
        if (u % 64 == 0) limits_.check("checking a symmetry of the machine");
        const auto mine = t.out_channels(Node{u});
        const auto theirs = t.out_channels(Node{image[u]});
        if (mine.size() != theirs.size()) return false;
        outs.clear();
        for (ChannelId c : mine) outs.emplace_back(image[idx(t.channel(c).to)], idx(c));
        std::sort(outs.begin(), outs.end());
        for (std::size_t k = 0; k < outs.size(); ++k) {
            const ChannelId m = theirs[k], c{outs[k].second};
            const Channel &mc = t.channel(m), &ch = t.channel(c);
            if (idx(mc.to) != outs[k].first || mc.cap != ch.cap || mc.level != ch.level || !(t.speed(m) == t.speed(c))) return false;
            chan[idx(c)] = idx(m);
        }
    }
    std::vector<std::uint32_t> img;
    std::size_t since_poll = 0;
    for (const auto& [members, attrs] : groups_) {
        if ((since_poll += members.size()) >= 65536) {
            since_poll = 0;
            limits_.check("checking a symmetry of the machine");
        }
        img.clear();
        for (std::uint32_t c : members) img.push_back(chan[c]);
        std::sort(img.begin(), img.end());
        const auto it = groups_.find(img);
        if (it == groups_.end() || it->second != attrs) return false;
    }
    return true;
}

bool is_automorphism(const Topology& t, std::span<const std::uint32_t> image) { return AutomorphismCheck(t)(image); }

ProcessorOrbits processor_orbits(const Topology& t, const RunLimits& limits) {
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
    const AutomorphismCheck keeps(t);
    for (auto& img : candidates) {
        if (orbits == 1 || limits.reached()) break;
        // Only a candidate that would merge something is worth its check.
        bool merges = false;
        for (std::uint32_t u = 0; u < P && !merges; ++u) merges = uf.find(u) != uf.find(img[u]);
        if (!merges || !extend_to_routers(t, img) || !keeps(img)) continue;
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
