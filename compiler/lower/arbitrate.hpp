/** \file
 * The third pass of the lowering: the arbitration of the policies that decide when endpoint
 * sends cross their channels (docs/dsl.md, "Lowering: from sends to hops"). Under `fifo` every outgoing channel
 * keeps a FIFO queue; `flood` is fifo with the sends of one message by one processor in one step
 * travelling as one multicast; `adaptive` is the Connection Machine router (Stanfill 1987), which
 * sends a waiting message over any channel that brings it one step closer. Under cut-through
 * there is nothing to arbitrate (the evaluate pass placed every hop). The transfers go to the
 * Evaluated's sink; explicit hops take their room first.
 */
#pragma once

#include "compiler/lower/evaluate.hpp"

namespace collsched::compiler {

/// Places every send of `ev.sends` by `ev.policy` into `ev.sink`. Running past step 2^31 is E025
/// (reported, then Stop).
void arbitrate(Evaluated& ev, Reporter& reporter);

}  // namespace collsched::compiler
