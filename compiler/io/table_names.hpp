/** \file
 * The shortcuts every table reader takes to turn one transfer's strings into ids (internal to
 * compiler/; used by table_read::Resolver for CSV and the reference JSON reader, and inlined
 * into the fast JSON reader's walk). A table names the same few nodes and channels millions of
 * times, so the shortcuts remember:
 *   - node names of up to 7 bytes, packed with their length into one word and looked up once
 *     each (Topology::find_node parses the name every time);
 *   - channels by the pair of packed names, in an open-addressed table (one probe instead of two
 *     name lookups and a binary search of the sender's channels), and the channel of the previous
 *     transfer (tables are sorted by step and channel: runs of one channel);
 *   - messages written plainly, m(s,d), b(s), a(s) with a last argument c < C under chunks,
 *     decoded directly.
 * A name longer than 7 bytes is never remembered (its packed word would be 0 for every such
 * name: a cache keyed by it once put r2.5000 -> r1.10001 on the channel of r2.5000 -> r1.10000).
 * What the shortcuts do not settle, and every error, is the caller's general path, which gives
 * the same answer for everything the shortcuts accept (tests/compiler/test_table_io.cpp, "the
 * resolver's shortcuts give the general path's answer").
 */
#pragma once

#include <bit>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string_view>
#include <vector>

#include "compiler/core/flat_map.hpp"
#include "compiler/table/send_table.hpp"

namespace collsched::table_read {

// The word tricks below (a name packed from one load, digits and bytes found in a word) read the
// first byte of a string as the lowest byte of the word.
static_assert(std::endian::native == std::endian::little, "NameShortcuts and leading_digits assume a little-endian machine");

/// The leading decimal digits of the 8 bytes at p (all readable): how many (0 to 8), and when
/// there are 1 to 7, their value in `value`. SWAR: a byte is flagged when below '0' (the
/// subtraction's high bit), above '9' (the addition's) or not ASCII; the lowest flagged byte is
/// exact (a borrow or carry flags only bytes above a flagged one). The digits, shifted to the top
/// of the word, combine pairwise: 8 x 1 -> 4 x 2 -> 2 x 4 -> 1 x 8 digits.
[[gnu::always_inline]] inline unsigned leading_digits(const char* p, std::uint64_t& value) {
    std::uint64_t v;
    std::memcpy(&v, p, 8);
    const std::uint64_t d = v - 0x3030303030303030ull;
    const std::uint64_t flagged = (d | (v + 0x4646464646464646ull) | v) & 0x8080808080808080ull;
    const unsigned n = flagged ? static_cast<unsigned>(std::countr_zero(flagged)) >> 3 : 8;
    if (n == 0 || n == 8) return n;
    std::uint64_t x = d << (8 * (8 - n));
    x = (x * 10 + (x >> 8)) & 0x00FF00FF00FF00FFull;
    x = (x * 100 + (x >> 16)) & 0x0000FFFF0000FFFFull;
    value = (x * 10000 + (x >> 32)) & 0xFFFFFFFFull;
    return n;
}

class NameShortcuts {
public:
    NameShortcuts(const Topology& topology, const Messages& messages)
        : topo_(topology), ms_(messages), P_(messages.processors()), C_(messages.chunks()) {}

    /// The transfer, when the shortcuts settle it: then `out` is filled and true returned.
    /// `Padded`: the strings lie in a buffer readable for 8 bytes past each of them (the padded
    /// JSON document), so a name is packed from one 8-byte load.
    template <bool Padded>
    [[gnu::always_inline]] bool transfer(std::uint64_t step, std::string_view from, std::string_view to, std::string_view msg,
                                         Transfer& out) {
        if (step < 1 || step > (1u << 31)) return false;
        const std::uint64_t kf = pack<Padded>(from), kt = pack<Padded>(to);
        std::optional<ChannelId> c;
        if (kf != 0 && kf == last_from_ && kt == last_to_) {
            c = last_channel_;  // the run of one channel
        } else if (kf != 0 && kt != 0) {
            if (const std::uint32_t k = channel(kf, kt, from, to); k != none) {
                c = ChannelId{k};
                last_from_ = kf, last_to_ = kt, last_channel_ = *c;
            }
        } else if (auto u = node(from, kf), v = node(to, kt); u && v) {
            c = topo_.find_channel(*u, *v);
        }
        MessageId m{0};
        if (!c || !message<Padded>(msg, m)) return false;
        out = {static_cast<Step>(step), *c, m};
        return true;
    }

private:
    /// A name of at most 7 bytes packed with its length into one word (0: empty or longer).
    /// Padded: one 8-byte load, masked; else built in a register (a memcpy of the name's length
    /// into a word stalls the load that reads it back).
    template <bool Padded>
    [[gnu::always_inline]] static std::uint64_t pack(std::string_view s) {
        if (s.empty() || s.size() > 7) return 0;
        std::uint64_t k = 0;
        if constexpr (Padded) {
            std::memcpy(&k, s.data(), 8);
            k &= (std::uint64_t{1} << (8 * s.size())) - 1;
        } else {
            for (std::size_t i = 0; i < s.size(); ++i) k |= std::uint64_t{static_cast<unsigned char>(s[i])} << (8 * i);
        }
        return k | (std::uint64_t{s.size()} << 56);
    }

    /// The node named `s` (packed as k, 0 when long), Topology::find_node's answer, remembered.
    std::optional<Node> node(std::string_view s, std::uint64_t k) {
        if (k == 0) return topo_.find_node(s);
        if (std::uint32_t v = nodes_.find(k); v != FlatMap::none) return Node{v};
        auto n = topo_.find_node(s);
        if (n) nodes_.find_or_insert(k, [&] { return idx(*n); });
        return n;
    }

    static constexpr std::uint32_t none = ~std::uint32_t{0};

    /// The channel between the nodes with packed names kf and kt (both nonzero), remembered by
    /// the pair of names; `none` when there is none. A plain word, not an optional: the optional's
    /// flag byte, stored and read back as part of a word, stalled every call (store forwarding).
    [[gnu::always_inline]] std::uint32_t channel(std::uint64_t kf, std::uint64_t kt, std::string_view from, std::string_view to) {
        if (2 * (pairs_used_ + 1) <= pairs_.size()) {
            const std::size_t mask = pairs_.size() - 1;
            for (std::size_t i = pair_home(kf, kt) & mask; pairs_[i].from != 0; i = (i + 1) & mask)
                if (pairs_[i].from == kf && pairs_[i].to == kt) return pairs_[i].channel;
        }
        return new_channel(kf, kt, from, to);
    }

    /// The channel of a pair not remembered yet (the table grown when half full), remembered.
    [[gnu::noinline]] std::uint32_t new_channel(std::uint64_t kf, std::uint64_t kt, std::string_view from, std::string_view to) {
        if (2 * (pairs_used_ + 1) > pairs_.size()) grow_pairs();
        const std::size_t mask = pairs_.size() - 1;
        std::size_t i = pair_home(kf, kt) & mask;
        for (; pairs_[i].from != 0; i = (i + 1) & mask)
            if (pairs_[i].from == kf && pairs_[i].to == kt) return pairs_[i].channel;
        auto u = node(from, kf), v = node(to, kt);
        if (!u || !v) return none;
        auto c = topo_.find_channel(*u, *v);
        if (!c) return none;
        pairs_[i] = {kf, kt, idx(*c)};
        ++pairs_used_;
        return idx(*c);
    }

    static std::size_t pair_home(std::uint64_t kf, std::uint64_t kt) {
        return static_cast<std::size_t>(((kf * 0x9E3779B97F4A7C15ull) ^ kt) * 0xC2B2AE3D27D4EB4Full >> 32);
    }

    void grow_pairs() {
        std::vector<PairEntry> old(std::max<std::size_t>(2 * pairs_.size(), 1024));
        old.swap(pairs_);
        const std::size_t mask = pairs_.size() - 1;
        for (const PairEntry& e : old) {
            if (e.from == 0) continue;
            std::size_t i = pair_home(e.from, e.to) & mask;
            while (pairs_[i].from != 0) i = (i + 1) & mask;
            pairs_[i] = e;
        }
    }

    /// `d..d` (1 to 9 digits, as std::from_chars reads them) at the front of s: its value, and
    /// s advanced past it. Padded: up to 7 digits from one 8-byte load.
    template <bool Padded>
    [[gnu::always_inline]] static bool digits(std::string_view& s, std::uint32_t& out) {
        if constexpr (Padded) {
            std::uint64_t v = 0;
            const unsigned n = leading_digits(s.data(), v);
            if (n != 0 && n != 8 && n <= s.size()) {
                s.remove_prefix(n);
                out = static_cast<std::uint32_t>(v);
                return true;
            }
        }
        std::size_t k = 0;
        std::uint32_t v = 0;
        while (k < s.size() && k < 10 && s[k] >= '0' && s[k] <= '9') v = v * 10 + static_cast<std::uint32_t>(s[k++] - '0');
        if (k == 0 || k > 9) return false;
        s.remove_prefix(k);
        out = v;
        return true;
    }

    /// m(s,d), b(s), a(s) written plainly, with a last argument c < C under chunks, into `out`
    /// (Messages::parse accepts the same and more: spaces, composites). A flag and an
    /// out-parameter: an optional's flag byte, stored and read back as a word, stalled every call.
    template <bool Padded>
    [[gnu::always_inline]] bool message(std::string_view s, MessageId& out) const {
        if (s.size() < 4 || s[1] != '(' || s.back() != ')') return false;
        const char kind = s[0];
        s = s.substr(2, s.size() - 3);
        std::uint32_t a = 0, b = 0, c = 0;
        if (!digits<Padded>(s, a) || a >= P_) return false;
        if (kind == 'm') {
            if (s.empty() || s[0] != ',') return false;
            s.remove_prefix(1);
            if (!digits<Padded>(s, b) || b >= P_) return false;
        }
        if (C_ > 1) {
            if (s.empty() || s[0] != ',') return false;
            s.remove_prefix(1);
            if (!digits<Padded>(s, c) || c >= C_) return false;
        }
        if (!s.empty()) return false;
        if (kind == 'm') out = ms_.personal(a, b, c);
        else if (kind == 'b') out = ms_.broadcast(a, c);
        else if (kind == 'a') out = ms_.value(a, c);
        else return false;
        return true;
    }

    struct PairEntry {
        std::uint64_t from = 0, to = 0;  // packed names; from == 0: free
        std::uint32_t channel = 0;
    };

    const Topology& topo_;
    Messages ms_;
    std::uint32_t P_, C_;
    FlatMap nodes_{256};
    std::vector<PairEntry> pairs_;
    std::size_t pairs_used_ = 0;
    std::uint64_t last_from_ = 0, last_to_ = 0;
    ChannelId last_channel_{0};
};

}  // namespace collsched::table_read
