/** \file
 * MSCCL-IR XML for endpoint-level schedules, in the dialect the MSCCL executor reads
 * (msccl-executor-nccl, `src/misc/msccl/msccl_parser.cc`): one `<algo>` with one `<gpu>` per
 * processor, thread blocks `<tb id send recv chan>` and their `<step s type srcbuf srcoff
 * dstbuf dstoff cnt depid deps hasdep/>`. docs/exports.md describes the mapping.
 *
 * The mapping, in short: every endpoint transfer (compiler/io/export_ranks.hpp) is one send step
 * in the sender's thread block for that peer and one receive step in the receiver's thread block
 * for that peer, on the same channel, in the same order (sent step, message), so the executor's
 * FIFO matching of sends and receives per connection pairs them exactly. A send of a message the
 * GPU received earlier depends (`depid`, `deps`) on that receive, which is marked `hasdep="1"`.
 * Leaner, as msccl-tools writes (MscclOptions): a GPU's sending and receiving thread blocks on a
 * channel share one thread block (steps in table order), a receive followed by the send of what it
 * wrote is one `rcs`/`rrcs` step, contiguous chunks one step sends over one connection are one
 * step of `cnt` chunks, and in place the copies of a chunk onto itself are left out.
 * Before that, every step moves one chunk (`cnt="1"`): chunk m(s,d) of an alltoall is input chunk d at s and
 * output chunk s at d; b(s) of an allgather is input chunk 0 at s and output chunk s everywhere;
 * b(r) of a broadcast is chunk 0. Messages a GPU only relays go to its scratch buffer. A local
 * copy thread block puts each GPU's own chunk into its output, as NCCL's collectives define.
 *
 * Refused (InputError, nothing written), each with the executor's rule it would break (file and
 * line in docs/exports.md): collectives other than alltoall, allgather and broadcast, a broadcast
 * whose root is not processor 0 (the executor selects an algorithm without looking at the root),
 * tables with extra requirements or composites, a copy that leaves and reaches the same GPU, a
 * send of data the GPU does not hold yet, and anything beyond the executor's load rules: more than
 * MSCCL_MAX_NUM_STEPS steps in a thread block (64 unless the executor is built otherwise:
 * `MscclOptions::max_steps`), more than 4095 XML elements loaded by one rank (MAX_NODES), more
 * than 1024 thread blocks on a GPU, more than 32 sending or 32 receiving thread blocks on one
 * channel, more than 32 channels, a dependency on a thread block id above 127 (int8_t), more than
 * 1024 GPUs (MAX_SUBS).
 */
#pragma once

#include <string>

#include "compiler/table/send_table.hpp"
#include "compiler/io/table_io.hpp"

namespace collsched {

/// The executor's load rules that the exporter enforces (msccl-executor-nccl: msccl_struct.h,
/// msccl_parser.h, common.mk; docs/exports.md cites the lines).
struct MscclLimits {
    static constexpr int default_max_steps = 64;      ///< MSCCL_MAX_NUM_STEPS ?= 64 (common.mk): s < 64 per thread block
    static constexpr int max_count = 72;              ///< MSCCL_MAX_COUNT: cnt < 72
    static constexpr int max_tbs_per_channel = 32;    ///< MSCCL_MAX_NUM_THREAD_BLOCKS_PER_CHANNEL (sends, receives)
    static constexpr int max_channels = 32;           ///< MAXCHANNELS
    static constexpr int max_tbs = 1024;              ///< MSCCL_MAX_NUM_THREAD_BLOCKS = 32 * MAXCHANNELS: bid < 1024
    static constexpr int max_dependency_tb = 127;     ///< dependentBid is an int8_t
    static constexpr int max_dependency_step = 32767; ///< dependentStep is an int16_t
    static constexpr int max_gpus = 1024;             ///< MAX_SUBS children of <algo>
    static constexpr int max_nodes = 4096;            ///< MAX_NODES: a rank loads at most 4095 elements
};

struct MscclOptions {
    /// The executor's MSCCL_MAX_NUM_STEPS (a build option of msccl-executor-nccl, default 64).
    int max_steps = MscclLimits::default_max_steps;
    /// Thread blocks (on channels of their own) per connection: the k-th transfer between two
    /// GPUs goes to instance k mod channels, as msccl-tools' instances spread chunks.
    int channels = 1;
    /// The `proto` attribute: Simple, LL or LL128 (the same data semantics; a performance choice).
    std::string proto = "Simple";
    /// In place only (inplace="1" outofplace="0"): copies of a chunk onto itself are dropped.
    bool inplace = false;
    /// One thread block per GPU, channel and pair of a send and a receive peer (as msccl-tools).
    bool pair = true;
    /// A receive followed by the send of what it wrote is one step (rcs, rrcs).
    bool fuse = true;
    /// Contiguous chunks sent in one step over one connection are one step of cnt chunks.
    bool coalesce = true;
    /// Copies of the program over I interleaved slices of every chunk, each on channels and
    /// thread blocks of its own (msccl-tools' instances; docs/exports.md "Instances").
    int instances = 1;
    /// An alltoall serves out-of-place calls only, without the waits that make it correct in
    /// place too (set by the exporter itself when those waits break the executor's limits).
    bool out_of_place_only = false;
};

void write_table_msccl(const SendTable&, const MscclOptions&, fmt::memory_buffer& out, const Flush& flush);
std::string table_to_msccl(const SendTable&, const MscclOptions& = {});

}  // namespace collsched
