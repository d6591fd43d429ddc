/** \file
 * What the processors hold when messages combine, for the simulator's replay
 * (runtime/sim_replay.hpp): the received messages, a bundle's parts and the source ranges per
 * processor, and the buffers of partials. Internal to runtime/.
 */
#pragma once

#include <algorithm>
#include <bit>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <unordered_set>
#include <vector>

#include <fmt/format.h>

#include "compiler/table/send_table.hpp"

namespace collsched::sim {

/// What the processors hold when messages combine (docs/semantics.md, "Combined values and
/// bundles"): per processor the messages received (a bundle's parts, each) and, for combining,
/// the source ranges held, as a map start -> ends. Used only for tables with composites or a
/// reduce/prefix collective; the slot state below stays the fast path for all others.
class Holdings {
public:
    Holdings(const SendTable& t, const Messages& ms, std::uint32_t P, std::uint32_t chunks, bool partials)
        : t_(t), ms_(ms), got_(P), starts_(P), words_((P + 63) / 64), partials_(partials) {
        for (std::uint32_t p = 0; p < P; ++p)
            if (t.collective.initial(ms, ms.value(p))) starts_[p][p].push_back(p);
        if (partials_) {
            buffer_.assign(std::size_t{P} * chunks, Bits(words_, 0));
            for (std::uint32_t p = 0; p < P; ++p)
                for (std::uint32_t c = 0; c < chunks; ++c) buffer_[std::size_t{p} * chunks + c][p / 64] |= std::uint64_t{1} << (p % 64);
            chunks_ = chunks;
        }
    }

    /// The buffer rule of partials (docs/semantics.md, "Reductions"), on bit sets: a disjoint
    /// arrival is combined into the buffer of its chunk, one that covers the buffer replaces it,
    /// anything else would count a contribution twice: then the buffer stays and the sentence
    /// (after "processor p receives m in step s while its buffer holds ...") is returned.
    std::optional<std::string> receive(std::uint32_t p, MessageId m) {
        if (partials_) {
            std::uint32_t c = 0;
            if (Bits in = bits_of(m, c); !in.empty()) {
                Bits& b = buffer_[std::size_t{p} * chunks_ + c];
                bool disjoint = true, covers = true;
                std::uint32_t first_common = 0;
                for (std::size_t w = words_; w-- > 0;) {
                    if (b[w] & in[w]) disjoint = false, first_common = static_cast<std::uint32_t>(w * 64 + std::countr_zero(b[w] & in[w]));
                    if (b[w] & ~in[w]) covers = false;
                }
                if (disjoint) {
                    for (std::size_t w = 0; w < words_; ++w) b[w] |= in[w];
                } else if (covers) {
                    b = in;
                } else {
                    return fmt::format("{}: a({}) would be counted twice", set_name(b, c), first_common);
                }
                return std::nullopt;
            }
        }
        ms_.for_each_part(m, [&](MessageId q) {
            if (!got_[p].insert(idx(q)).second) return;
            MessageKey k = ms_.key(q);
            if (k.kind == MessageKind::value) starts_[p][k.src].push_back(k.src);
            if (k.kind == MessageKind::combined) starts_[p][k.src].push_back(k.dst);
        });
        return std::nullopt;
    }

    /// Breadth-first over the positions a chain of held ranges can reach from lo, within hi.
    /// Returns the farthest end reached (lo - 1 when none starts at lo).
    std::int64_t farthest(std::uint32_t p, std::uint32_t lo, std::uint32_t hi) const {
        std::vector<std::uint32_t> todo{lo};
        std::set<std::uint32_t> seen{lo};
        std::int64_t best = std::int64_t{lo} - 1;
        while (!todo.empty()) {
            std::uint32_t at = todo.back();
            todo.pop_back();
            auto it = starts_[p].find(at);
            if (it == starts_[p].end()) continue;
            for (std::uint32_t end : it->second) {
                if (end > hi) continue;
                best = std::max<std::int64_t>(best, end);
                if (end < hi && seen.insert(end + 1).second) todo.push_back(end + 1);
            }
        }
        return best;
    }

    bool holds(std::uint32_t p, MessageId m) const {
        if (partials_) {
            std::uint32_t c = 0;
            if (Bits in = bits_of(m, c); !in.empty()) return buffer_[std::size_t{p} * chunks_ + c] == in;
        }
        MessageKey k = ms_.key(m);
        switch (k.kind) {
            case MessageKind::value: return farthest(p, k.src, k.src) == k.src;
            case MessageKind::combined: return got_[p].count(idx(m)) || farthest(p, k.src, k.dst) == k.dst;
            case MessageKind::bundle: {
                const auto& parts = ms_.composite(m).parts;
                return std::all_of(parts.begin(), parts.end(), [&](MessageId q) { return holds(p, q); });
            }
            default: return got_[p].count(idx(m)) || (k.src == p && t_.collective.initial(ms_, m));
        }
    }

    /// "holds only a(0..1)": what p can form of a(lo..hi) (combined values and a(k)).
    std::string formed(std::uint32_t p, std::uint32_t lo, std::uint32_t hi) const {
        std::int64_t f = farthest(p, lo, hi);
        if (f < lo) return fmt::format("holds nothing that starts at a({})", lo);
        return f == lo ? fmt::format("holds only a({})", lo) : fmt::format("holds only a({}..{})", lo, f);
    }

    /// Why p does not hold m, for a message; empty when m is not a value, combined or bundle.
    std::string why_not(std::uint32_t p, MessageId m) const {
        if (partials_) {
            std::uint32_t c = 0;
            if (Bits in = bits_of(m, c); !in.empty()) return "its buffer holds " + set_name(buffer_[std::size_t{p} * chunks_ + c], c);
        }
        MessageKey k = ms_.key(m);
        if (k.kind == MessageKind::value) return formed(p, k.src, k.src);
        if (k.kind == MessageKind::combined) return formed(p, k.src, k.dst);
        if (k.kind == MessageKind::bundle)
            for (MessageId q : ms_.composite(m).parts)
                if (!holds(p, q)) return fmt::format("lacks its part {}", ms_.name(q));
        return "";
    }

private:
    using Bits = std::vector<std::uint64_t>;

    /// The contributor bits of a value a(s) or partial a({...}) and its chunk; empty for others.
    Bits bits_of(MessageId m, std::uint32_t& chunk) const {
        Bits out;
        auto set = [&](std::uint32_t s) { out[s / 64] |= std::uint64_t{1} << (s % 64); };
        if (ms_.is_composite(m)) {
            const Composite& cp = ms_.composite(m);
            if (cp.kind != MessageKind::partial) return out;
            out.assign(words_, 0);
            for (std::uint32_t s : cp.sources) set(s);
            chunk = cp.lo;
            return out;
        }
        MessageKey k = ms_.key(m);
        if (k.kind != MessageKind::value) return out;
        out.assign(words_, 0);
        set(k.src);
        chunk = k.chunk;
        return out;
    }

    /// `a({0..3})` of a bit set, written out by the simulator's own printer.
    std::string set_name(const Bits& b, std::uint32_t chunk) const {
        std::vector<std::uint32_t> v;
        for (std::size_t w = 0; w < b.size(); ++w)
            for (std::uint64_t x = b[w]; x; x &= x - 1) v.push_back(static_cast<std::uint32_t>(w * 64 + std::countr_zero(x)));
        std::string inner;
        if (v.size() == 1) {
            inner = std::to_string(v[0]);
        } else {
            inner = "{";
            for (std::size_t i = 0; i < v.size();) {
                std::size_t j = i;
                while (j + 1 < v.size() && v[j + 1] == v[j] + 1) ++j;
                if (i) inner += ',';
                if (j >= i + 2) inner += fmt::format("{}..{}", v[i], v[j]);
                else if (j == i + 1) inner += fmt::format("{},{}", v[i], v[j]);
                else inner += std::to_string(v[i]);
                i = j + 1;
            }
            inner += "}";
        }
        return ms_.chunks() > 1 ? fmt::format("a({},{})", inner, chunk) : fmt::format("a({})", inner);
    }

    const SendTable& t_;
    const Messages& ms_;
    std::vector<std::unordered_set<std::uint32_t>> got_;
    std::vector<std::map<std::uint32_t, std::vector<std::uint32_t>>> starts_;
    std::size_t words_;
    bool partials_;
    std::uint32_t chunks_ = 1;
    std::vector<Bits> buffer_;  ///< partials: processor * chunks + chunk -> contributor bits
};

}  // namespace collsched::sim
