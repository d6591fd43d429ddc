/** \file
 * MSCCL-IR XML for endpoint-level schedules, in the dialect the MSCCL executor reads
 * (msccl-executor-nccl, `src/misc/msccl/msccl_parser.cc`): one `<algo>` with one `<gpu>` per
 * processor, thread blocks `<tb id send recv chan>` and their `<step s type srcbuf srcoff
 * dstbuf dstoff cnt depid deps hasdep/>`. docs/exports.md describes the mapping.
 *
 * The mapping, in short: every endpoint transfer (compiler/export_ranks.hpp) is one send step
 * in the sender's thread block for that peer and one receive step in the receiver's thread block
 * for that peer, on the same channel, in the same order (sent step, message), so the executor's
 * FIFO matching of sends and receives per connection pairs them exactly. A send of a message the
 * GPU received earlier depends (`depid`, `deps`) on that receive, which is marked `hasdep="1"`.
 * Every step moves one chunk (`cnt="1"`): chunk m(s,d) of an alltoall is input chunk d at s and
 * output chunk s at d; b(s) of an allgather is input chunk 0 at s and output chunk s everywhere;
 * b(r) of a broadcast is chunk 0. Messages a GPU only relays go to its scratch buffer. A local
 * copy thread block puts each GPU's own chunk into its output, as NCCL's collectives define.
 *
 * Refused (InputError, nothing written): collectives other than alltoall, allgather and
 * broadcast, tables with extra requirements, a copy that leaves and reaches the same GPU, a
 * send of data the GPU does not hold yet, and anything beyond the executor's limits: more than
 * 256 steps in a thread block (s < 256), more than 32 thread blocks sending or receiving on one
 * channel, more than 32 channels, a dependency on a thread block id above 127 (the executor
 * stores it in an int8_t), more than 1024 GPUs.
 */
#pragma once

#include <string>

#include "compiler/send_table.hpp"
#include "compiler/table_io.hpp"

namespace collsched {

/// The executor's limits that the exporter enforces (from msccl_struct.h / msccl_parser.h).
struct MscclLimits {
    static constexpr int max_steps = 256;             ///< MSCCL_MAX_NUM_STEPS: s < 256 per thread block
    static constexpr int max_count = 72;              ///< MSCCL_MAX_COUNT: cnt < 72
    static constexpr int max_tbs_per_channel = 32;    ///< MSCCL_MAX_NUM_THREAD_BLOCKS_PER_CHANNEL (sends, receives)
    static constexpr int max_channels = 32;           ///< MAXCHANNELS
    static constexpr int max_dependency_tb = 127;     ///< dependentBid is an int8_t
    static constexpr int max_gpus = 1024;             ///< MAX_SUBS children of <algo>
    static constexpr int max_nodes = 32768;           ///< MAX_NODES loaded per rank
};

void write_table_msccl(const SendTable&, fmt::memory_buffer& out, const Flush& flush);
std::string table_to_msccl(const SendTable&);

}  // namespace collsched
