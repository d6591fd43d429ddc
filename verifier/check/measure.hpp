/** \file
 * Measurements of a send table that its claims are checked against (docs/dsl.md, "Claims"):
 * the queue high-water mark per router level (`claim queue`), the forwarding buffers of
 * processors (`claim buffer`), and the payload coefficient of a wormhole table's cost. Exact,
 * from the table alone; `collsched reproduce` compares them with the catalog's formulas.
 */
#pragma once

#include <cstdint>
#include <vector>

#include "compiler/table/send_table.hpp"

namespace collsched::verifier {

/// Per tree level of routers (index 0 is level 1): the most copies of messages waiting at a step
/// boundary for one outgoing channel of a router of that level. A copy that arrives at router u in
/// step a and leaves on channel c in step t waits for c at the boundaries a .. t-2. With
/// replicate=yes a departure is matched with the latest earlier arrival of the message, with
/// replicate=no the k-th departure of a message with its k-th arrival. Non-tree topologies report
/// one entry for all routers.
std::vector<std::uint32_t> link_queue_high_water(const SendTable&);

/// The forwarding buffers of processors: the most messages a processor holds (initially, or
/// received by the end of step b) that it still sends after step b, over all processors and
/// boundaries b = 0 .. T-1; and whether every processor sends the messages it forwards in the
/// order it got them (first in, first out).
struct BufferUse {
    std::uint32_t high_water = 0;
    bool fifo = true;
};
BufferUse processor_buffers(const SendTable&);

/// The payload coefficient of a wormhole table's cost: the sum over rounds 1..T of the largest
/// payload (number of parts) among the round's packets, 1 for a round without packets; so the
/// cost is T ts + W tc.
std::uint64_t wormhole_payload(const SendTable&);

}  // namespace collsched::verifier
