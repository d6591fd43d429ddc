/** \file
 * Copies through routers that forward (replicate=no) in the dissemination encoding: a router
 * sends each copy it receives exactly once, so reaching k processors through it takes k copies
 * into it. The crossing of message i over a channel into a router in step t is therefore a count,
 * written in unary (bit k: "at least k+1 copies", ordered), and each router conserves copies per
 * message: under queues=unbounded its departures up to step t are at most its arrivals up to t-1;
 * under queues=none the departures of step t are exactly the arrivals of t-1 and nothing arrives
 * in the last step. The counts are cut by the processors a copy can still reach (every copy of a
 * schedule without useless transfers ends at a distinct processor that lacked the message;
 * docs/synthesis.md, "Routers that forward"), so the counters stay small.
 */
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "verifier/synth/sat/encode.hpp"

namespace collsched::synth {

/// A count in unary: lits[k] is true iff the count is at least k + 1 (lits ordered).
using Unary = std::vector<int>;

/// The sum of `parts` in unary, exact up to `cap` (the result has min(cap, total size) bits):
/// a totalizer tree of merges, each clause in both directions.
Unary unary_sum(Formula&, std::vector<Unary> parts, std::size_t cap);

/// The processors a copy entering node v can reach through routers only (v itself when it is a
/// processor), as a count per node.
std::vector<std::uint32_t> router_reach(const Topology&);

/// The copies of one message a channel carries per step in the encoding: 1 into a processor (a
/// second copy is useless), else min(capacity * most rounds per step, processors reachable beyond
/// it that do not hold the message).
std::uint32_t copy_width(const Topology&, const std::vector<std::uint32_t>& reach, ChannelId, std::uint64_t rounds_per_step);

/// Conservation of one message's copies at one router: `in[t]` and `out[t]` the unary counts of
/// arrivals and departures in step t (t = 1..H; index 0 unused), `bound` the most copies that can
/// usefully enter it (processors reachable from it, the origin excluded).
void conserve_copies(Formula&, QueueKind, std::span<const std::vector<Unary>> in, std::span<const std::vector<Unary>> out,
                     std::uint32_t bound);

}  // namespace collsched::synth
