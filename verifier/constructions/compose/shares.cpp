// Shares by capacity (shares.hpp): what each rail carries, and the slots of a piece its owner gets.
#include "verifier/constructions/compose/shares.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <numeric>

#include "runtime/timing.hpp"

namespace collsched::compose {

namespace {

/// What processor p can send over `channels` (its channels in or out of its box): the sum of their
/// speeds, where the part of them in one link group is capped by the group's speed (the group of
/// another GPU's port that holds one of them caps that one only).
double carries(const Topology& t, const std::vector<ChannelId>& channels) {
    const TimeOptions opt{};
    double sum = 0;
    std::map<std::uint32_t, double> in_group;  // per group, the speeds of the channels in it
    for (ChannelId c : channels) {
        const double b = channel_speed(t, c, opt).bandwidth;
        sum += b;
        for (std::uint32_t g : t.groups_of(c)) in_group[g] += b;
    }
    double most = sum;
    for (const auto& [g, b] : in_group) most = std::min(most, sum - b + std::min(b, group_speed(t, g, opt)));
    return most;
}

/// What each processor can carry out of its box and in it (carries), by processor.
struct Carry {
    std::vector<double> out, in;
    Ways ways;  ///< out of the box, each way
};

Carry box_carry(const Topology& t, const std::vector<std::vector<Node>>& boxes) {
    std::vector<std::uint32_t> box_of(t.processors(), 0);
    for (std::size_t b = 0; b < boxes.size(); ++b)
        for (Node p : boxes[b]) box_of[idx(p)] = static_cast<std::uint32_t>(b);
    // a router is in a box when every processor it reaches is (a box's NVSwitch), else it is the network
    constexpr std::uint32_t none = ~0u, many = ~0u - 1;
    std::vector<std::uint32_t> router_box(t.nodes(), none);
    for (const Channel& ch : t.channels())
        for (auto [r, p] : {std::pair{ch.from, ch.to}, std::pair{ch.to, ch.from}})
            if (!t.is_processor(r) && t.is_processor(p)) {
                std::uint32_t& x = router_box[idx(r)];
                x = x == none || x == box_of[idx(p)] ? box_of[idx(p)] : many;
            }
    const std::vector<double> zero(t.processors(), 0);
    Carry c{zero, zero, {zero, zero}};
    const auto inside = [&](std::uint32_t p, Node other) {
        return t.is_processor(other) ? box_of[idx(other)] == box_of[p] : router_box[idx(other)] == box_of[p];
    };
    for (std::uint32_t p = 0; p < t.processors(); ++p) {
        // each way: a one-way link (a NIC that only sends) carries a share out and none in, so the slower way counts
        std::vector<ChannelId> leave, stay, arrive, come;
        for (ChannelId ch : t.out_channels(Node{p})) (inside(p, t.channel(ch).to) ? stay : leave).push_back(ch);
        for (ChannelId ch : t.in_channels(Node{p})) (inside(p, t.channel(ch).from) ? come : arrive).push_back(ch);
        c.ways.send[p] = carries(t, leave), c.ways.receive[p] = carries(t, arrive);
        c.out[p] = std::min(c.ways.send[p], c.ways.receive[p]), c.in[p] = std::min(carries(t, stay), carries(t, come));
    }
    return c;
}

}  // namespace

std::vector<double> rail_capacity(const Topology& t, const std::vector<std::vector<Node>>& boxes) {
    const std::size_t K = boxes.size(), B = boxes.empty() ? 0 : boxes[0].size();
    const Carry c = box_carry(t, boxes);
    const std::vector<double>&out = c.out, &in = c.in;
    const double most_out = *std::max_element(out.begin(), out.end()), most_in = *std::max_element(in.begin(), in.end());
    std::vector<double> cap(B, 1.0);
    for (std::size_t j = 0; j < B; ++j)
        for (std::size_t b = 0; b < K; ++b) {
            const std::uint32_t p = idx(boxes[b][j]);
            if (K > 1) cap[j] = std::min(cap[j], most_out > 0 ? out[p] / most_out : 0.0);
            if (B > 1) cap[j] = std::min(cap[j], most_in > 0 ? in[p] / most_in : 0.0);
        }
    return cap;
}

Ways nic_ways(const Topology& t, const std::vector<std::vector<Node>>& boxes) { return box_carry(t, boxes).ways; }

std::vector<char> cut_off(const Topology& t, const std::vector<std::vector<Node>>& boxes) {
    const Carry c = box_carry(t, boxes);
    std::vector<char> off(t.processors(), 0);
    for (std::uint32_t p = 0; p < t.processors(); ++p) off[p] = c.out[p] <= 0;
    return off;
}

std::vector<std::uint32_t> nic_share(const Topology& t, const std::vector<std::vector<Node>>& boxes) {
    const Carry c = box_carry(t, boxes);
    const double most_in = c.in.empty() ? 0.0 : *std::max_element(c.in.begin(), c.in.end());
    std::vector<std::uint32_t> d(t.processors(), 0);
    for (std::uint32_t p = 0; p < t.processors(); ++p)
        if (c.in[p] < most_in * (1 - 1e-9) && c.out[p] > 0) d[p] = static_cast<std::uint32_t>(std::max(2.0, std::round((c.in[p] + c.out[p]) / c.out[p])));
    return d;
}

std::vector<char> slow_in_box(const Topology& t, const std::vector<std::vector<Node>>& boxes) {
    const Carry c = box_carry(t, boxes);
    const double most_in = c.in.empty() ? 0.0 : *std::max_element(c.in.begin(), c.in.end());
    std::vector<char> slow(t.processors(), 0);
    for (std::uint32_t p = 0; p < t.processors(); ++p) slow[p] = c.in[p] < most_in * (1 - 1e-9);
    return slow;
}

std::vector<std::uint32_t> slot_owners(const std::vector<double>& capacity, Shares shares) {
    const std::uint32_t B = static_cast<std::uint32_t>(capacity.size());
    std::vector<double> w(capacity);
    if (shares == Shares::full)
        for (double& x : w) x = x >= 1 - 1e-9 ? 1.0 : 0.0;
    const bool even = shares == Shares::even || std::all_of(w.begin(), w.end(), [](double x) { return x >= 1 - 1e-9; });
    std::vector<std::uint32_t> owners;
    if (even) {
        owners.resize(B);
        std::iota(owners.begin(), owners.end(), 0u);
        return owners;
    }
    const double total = std::accumulate(w.begin(), w.end(), 0.0);
    if (total <= 0) return owners;
    double best = std::numeric_limits<double>::infinity();
    std::vector<std::uint32_t> best_n;
    for (std::uint32_t U = B; U <= 4 * B; ++U) {
        // largest remainder: the floors, then one more slot each to the largest remainders
        std::vector<std::uint32_t> n(B);
        std::vector<std::uint32_t> by_rest(B);
        std::uint32_t given = 0;
        for (std::uint32_t j = 0; j < B; ++j) n[j] = static_cast<std::uint32_t>(std::floor(U * w[j] / total)), given += n[j];
        std::iota(by_rest.begin(), by_rest.end(), 0u);
        std::stable_sort(by_rest.begin(), by_rest.end(), [&](std::uint32_t a, std::uint32_t b) { return U * w[a] / total - n[a] > U * w[b] / total - n[b]; });
        for (std::uint32_t i = 0; given < U; ++i, ++given) ++n[by_rest[i]];
        // the most a rail carries above its weight (slots per unit of weight, against the piece's)
        double over = 0;
        for (std::uint32_t j = 0; j < B; ++j)
            if (n[j] > 0) over = std::max(over, (n[j] / static_cast<double>(U)) / (w[j] / total));
        if (over < best - 1e-9) best = over, best_n = n;
    }
    for (std::uint32_t j = 0; j < B; ++j) owners.insert(owners.end(), best_n[j], j);
    return owners;
}

}  // namespace collsched::compose
