/** \file
 * What the seeded table generators of the agreement tests share (random_tables.cpp,
 * random_switch_tables.cpp): a seeded random source and the channel and port occupancy of a
 * schedule being placed, so that sends are placed without contention.
 */
#pragma once

#include <cstdint>
#include <map>
#include <random>
#include <utility>
#include <vector>

#include "compiler/core/model.hpp"
#include "compiler/topology/topology.hpp"

namespace collsched::testing {

class Rng {
public:
    explicit Rng(std::uint64_t seed) : g_(seed * 0x9E3779B97F4A7C15ull + 12345) {}
    int in(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(g_); }
    bool chance(double p) { return std::uniform_real_distribution<double>(0, 1)(g_) < p; }
    template <class T>
    const T& pick(const std::vector<T>& v) { return v[static_cast<std::size_t>(in(0, static_cast<int>(v.size()) - 1))]; }

private:
    std::mt19937_64 g_;
};

/// Channel and port occupancy, for placing sends without contention (greedy).
class Grid {
public:
    Grid(const Topology& t, Ports p) : t_(t), ports_(p) {}

    bool fits(Step s, ChannelId c) const {
        const Channel& ch = t_.channel(c);
        auto it = used_.find({s, idx(c)});
        if (it != used_.end() && it->second >= ch.cap) return false;
        return port_free(s, ch.from, true) && port_free(s, ch.to, false);
    }
    void take(Step s, ChannelId c) {
        const Channel& ch = t_.channel(c);
        ++used_[{s, idx(c)}];
        if (t_.is_processor(ch.from)) ++sends_[{s, idx(ch.from)}];
        if (t_.is_processor(ch.to)) ++recvs_[{s, idx(ch.to)}];
    }
    /// A wormhole path in one round: its channels and the ports of every processor on it.
    bool fits_round(Step r, const std::vector<ChannelId>& path) const {
        std::map<std::uint32_t, std::pair<int, int>> port;
        std::map<std::uint32_t, std::uint32_t> chans;
        for (ChannelId c : path) {
            const Channel& ch = t_.channel(c);
            auto it = used_.find({r, idx(c)});
            if ((it == used_.end() ? 0 : it->second) + ++chans[idx(c)] > ch.cap) return false;
            ++port[idx(ch.from)].first;
            ++port[idx(ch.to)].second;
        }
        for (auto [n, sr] : port) {
            if (!t_.is_processor(Node{n})) continue;
            int snd = sr.first + count(sends_, r, n), rcv = sr.second + count(recvs_, r, n);
            if (ports_ == Ports::single && (snd > 1 || rcv > 1)) return false;
            if (ports_ == Ports::half && snd + rcv > 1) return false;
        }
        return true;
    }

private:
    static int count(const std::map<std::pair<Step, std::uint32_t>, int>& m, Step s, std::uint32_t n) {
        auto it = m.find({s, n});
        return it == m.end() ? 0 : it->second;
    }
    bool port_free(Step s, Node n, bool sending) const {
        if (!t_.is_processor(n) || ports_ == Ports::multi) return true;
        int snd = count(sends_, s, idx(n)), rcv = count(recvs_, s, idx(n));
        if (ports_ == Ports::single) return sending ? snd == 0 : rcv == 0;
        return snd + rcv == 0;
    }

    const Topology& t_;
    Ports ports_;
    std::map<std::pair<Step, std::uint32_t>, std::uint32_t> used_;
    std::map<std::pair<Step, std::uint32_t>, int> sends_, recvs_;
};

}  // namespace collsched::testing
