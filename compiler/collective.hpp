/** \file
 * Messages and collectives (DESIGN.md section 4). Messages of a topology with P processors are
 * numbered densely: m(s,d) is s*P+d, b(s) is P*P+s, a(s) is P*P+P+s; the origin of a message
 * (s) is the only processor that can hold it at time 0. A collective fixes which messages are
 * initial data and which (message, processor) pairs must hold at the end.
 */
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "compiler/ids.hpp"

namespace collsched {

class Topology;

enum class MessageKind : std::uint8_t { personal, broadcast, value };

struct MessageKey {
    MessageKind kind;
    std::uint32_t src;
    std::uint32_t dst;  ///< personal messages only
    bool operator==(const MessageKey&) const = default;
};

/// The message space of a topology: the dense numbering above, names and their parser.
class Messages {
public:
    explicit Messages(std::uint32_t processors) : p_(processors) {}
    std::uint64_t size() const { return std::uint64_t{p_} * p_ + 2ull * p_; }
    MessageId personal(std::uint32_t s, std::uint32_t d) const { return MessageId{s * p_ + d}; }
    MessageId broadcast(std::uint32_t s) const { return MessageId{p_ * p_ + s}; }
    MessageId value(std::uint32_t s) const { return MessageId{p_ * p_ + p_ + s}; }
    MessageKey key(MessageId m) const;
    Node origin(MessageId m) const { return Node{key(m).src}; }
    /// `m(3,5)`, `b(3)`, `a(3)`.
    std::string name(MessageId m) const;
    /// Parses a name as written by name(); nullopt when malformed or out of range.
    std::optional<MessageId> parse(std::string_view) const;

private:
    std::uint32_t p_;
};

/// Most (message, processor) goal pairs a collective may have on a topology: 2^28, so alltoall and
/// allgather up to 16,384 processors. The checkers enumerate the pairs (a complete table needs a
/// transfer for each), so alltoall on 65,534 processors (4.3e9 pairs) would take 17 GB and about
/// half an hour to verify; it is refused when a table is read or compiled instead.
inline constexpr std::uint64_t max_goal_pairs = std::uint64_t{1} << 28;

enum class CollectiveKind : std::uint8_t { alltoall, allgather, broadcast, scatter, gather, multicast, custom };

struct Collective {
    CollectiveKind kind = CollectiveKind::custom;
    Node root{0};
    std::vector<Node> members;  ///< multicast targets, sorted
    bool operator==(const Collective&) const = default;

    /// `alltoall`, `allgather`, `broadcast:R`, `scatter:R`, `gather:R`, `multicast:R:a,b,c`, `custom`.
    /// Throws InputError for unknown names and processors that do not exist.
    static Collective parse(std::string_view text, const Topology&);
    std::string to_string() const;

    /// Whether m is part of the initial data (held by its origin at time 0).
    bool initial(const Messages&, MessageId m) const;
    /// Calls f(message, processor) for every pair of the postcondition, in message order.
    template <class F>
    void for_each_goal(std::uint32_t processors, F&& f) const;
    /// How many (message, processor) pairs the postcondition has.
    std::uint64_t goal_count(std::uint32_t processors) const;
    /// How many messages are initial data (held by their origins at time 0); `initial` counted.
    std::uint64_t initial_count(std::uint32_t processors) const;
    /// Throws InputError when the postcondition has more than max_goal_pairs pairs on `topo`.
    void check_goal_count(const Topology& topo) const;
};

template <class F>
void Collective::for_each_goal(std::uint32_t P, F&& f) const {
    Messages ms(P);
    std::uint32_t r = idx(root);
    switch (kind) {
        case CollectiveKind::alltoall:
            for (std::uint32_t s = 0; s < P; ++s)
                for (std::uint32_t d = 0; d < P; ++d)
                    if (s != d) f(ms.personal(s, d), Node{d});
            break;
        case CollectiveKind::scatter:
            for (std::uint32_t d = 0; d < P; ++d)
                if (d != r) f(ms.personal(r, d), Node{d});
            break;
        case CollectiveKind::gather:
            for (std::uint32_t s = 0; s < P; ++s)
                if (s != r) f(ms.personal(s, r), Node{r});
            break;
        case CollectiveKind::allgather:
            for (std::uint32_t s = 0; s < P; ++s)
                for (std::uint32_t d = 0; d < P; ++d)
                    if (s != d) f(ms.broadcast(s), Node{d});
            break;
        case CollectiveKind::broadcast:
            for (std::uint32_t d = 0; d < P; ++d)
                if (d != r) f(ms.broadcast(r), Node{d});
            break;
        case CollectiveKind::multicast:
            for (Node d : members)
                if (d != root) f(ms.broadcast(r), d);
            break;
        case CollectiveKind::custom: break;
    }
}

}  // namespace collsched
