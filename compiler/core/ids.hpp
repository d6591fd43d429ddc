/** \file
 * Strong ids shared by every part of collsched. A `Node` is a processor or a router of a
 * topology, a `ChannelId` one direction of a link, a `MessageId` one message of the message
 * space of a topology, and a `Step` a time step (steps are numbered from 1; time 0 is the
 * initial state). Plain enums so that mixing them up is a compile error, not a wrong answer.
 */
#pragma once

#include <cstdint>

namespace collsched {

enum class Node : std::uint32_t {};
enum class ChannelId : std::uint32_t {};
enum class MessageId : std::uint32_t {};
using Step = std::uint32_t;

constexpr std::uint32_t idx(Node n) { return static_cast<std::uint32_t>(n); }
constexpr std::uint32_t idx(ChannelId c) { return static_cast<std::uint32_t>(c); }
constexpr std::uint32_t idx(MessageId m) { return static_cast<std::uint32_t>(m); }

}  // namespace collsched
