/** \file
 * A proved lower bound on the asynchronous time of NCCL's ring (allreduce, allgather,
 * reduce_scatter) on a machine, from its rings alone: for the machines where its table cannot be
 * built or timed (on 1,024 GPUs its allreduce needs 8,192 chunks, more than 32-bit message ids
 * hold with the buffers' partials; its allgather has 9.4 million transfers), so that a speed-up
 * over it can still be stated, as "at least". Two arguments, each a property of every run of the
 * ring's table in the asynchronous model (docs/time.md, "NCCL's ring without its table"):
 *
 *  - its busiest resource: a channel or link group serves one transfer at a time, each for
 *    b / B, so the last of its n transfers leaves at n b / B at the earliest and arrives alpha
 *    later;
 *  - its longest chain: a chunk's flow along the ring, each leg ready only once the leg before it
 *    has arrived (a partial waits for every partial of its chunk that reached its sender before,
 *    at a router under replicate=no for the copy it forwards; a datum of allgather for its first
 *    copy there, so a PXN relay that holds it already sends it on at once, but a router under
 *    replicate=no, multicasting or not, for the copy of its own crossing), each taking
 *    b / B + alpha.
 */
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/timing.hpp"
#include "verifier/constructions/nccl/nccl.hpp"

namespace collsched {

struct RingTimeBound {
    double seconds = 0;
    std::string argument;  ///< which resource or chain, in one line
};

/// The bound for `kind` (allreduce, allgather or reduce_scatter) on `rings` with `pieces` per
/// chunk (nccl::nccl_ring_routes) at the options' size, with the speeds the prediction takes (link
/// override, protocol with its network class). Ports are not counted (under ports=single or half
/// the bound is sound and looser), and it is rounded down by one part in 10^12.
RingTimeBound nccl_ring_time_bound(const Topology&, const Model&, CollectiveKind, const nccl::RingRoutes&, const TimeOptions&);

}  // namespace collsched
