/** \file
 * Allgather on boxes joined by links between their GPUs (docs/time.md, "Constructions for time"): a
 * machine of boxes without routers whose boxes are joined by channels from a GPU of one box to a GPU
 * of another, one-way or not (TE-CCL's DGX-2 pairs: odd GPU 2j+1 of a box -> GPU 2j of the other;
 * its NDv2 boxes: GPU 0 of each box -> GPU 1 of every other, one uplink per box). Every chunk of a
 * datum takes a tree: along the shortest paths in its own box from its owner, over one link to every
 * other box (the link whose sender is nearest the owner, the least loaded of those), and on in that box.
 * Every parent is chosen greedily to keep the busiest channel or link group least (in seconds at their
 * bandwidths, as multipath_alltoall). Two forms: `shortest` spreads from the GPU that receives the chunk
 * along the shortest paths (every datum on a shortest path: small sizes); `balanced` has that GPU pass
 * it to a relay (itself or a GPU one channel away, in turn over the chunks) that spreads it, so that the
 * box's ports share the forwarding of every datum (pipelined in C chunks: large sizes). Hop h of a tree
 * is logical step h. On TE-CCL's DGX-2 x 2 this is bench/teccl/dgx2x2_allgather.sched's schedule with
 * the forwarding spread over the whole box instead of a pair, on its NDv2 x 4 ndv2x4_allgather.sched's.
 */
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "compiler/table/send_table.hpp"
#include "support/budget.hpp"
#include "verifier/synth/problem/instance.hpp"

namespace collsched::compose {

enum class LinkTrees : std::uint8_t { shortest, balanced };

/// "shortest", "balanced".
std::string link_trees_name(LinkTrees);

/// The allgather table with C chunks per datum, or nullopt with `why` (not allgather, routers, no
/// boxes, a box not connected inside, two boxes without a link from one to the other, more than 256
/// processors, too many chunks). Not verified. LimitReached past `deadline`.
std::optional<SendTable> box_link_allgather(const SynthInstance&, std::uint32_t chunks, LinkTrees, std::string* why, Deadline deadline = {});

}  // namespace collsched::compose
