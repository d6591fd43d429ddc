/** \file
 * What each MPI rank of `collsched mpirun` executes, read from the per-rank JSON
 * (`collsched.ranks/1`, compiler/io/export_ranks.hpp) that the command writes for its ranks, and
 * the deterministic payload every rank checks. No MPI here: the rank program
 * (runtime/mpi_rank.cpp, the only file that includes <mpi.h>) and the tests share it.
 *
 * Execution rule: MPI step s carries every endpoint transfer *sent* in table step s: the sender
 * posts a non-blocking send, the receiver a non-blocking receive, both wait, then all ranks meet
 * at a barrier. An endpoint transfer of the table arrives in step a >= s, so the MPI run
 * delivers every message no later than the table does, and a rank sends in step s only what the
 * table lets it hold at the end of step s-1.
 */
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "compiler/core/ids.hpp"

namespace collsched::mpi {

/// Byte i of message m's payload: a mix of both, so a message that lands in the wrong place or
/// shifted by a few bytes fails the check.
constexpr std::uint8_t payload_byte(std::uint32_t message, std::uint64_t i) {
    std::uint64_t h = (std::uint64_t{message} + 1) * 0x9E3779B97F4A7C15ull ^ (i + 0x632BE59BD9B4E019ull) * 0xBF58476D1CE4E5B9ull;
    h ^= h >> 29;
    h *= 0x94D049BB133111EBull;
    h ^= h >> 32;
    return static_cast<std::uint8_t>(h);
}

struct PeerMessage {
    std::uint32_t peer;
    std::uint32_t message;
    bool operator==(const PeerMessage&) const = default;
};

/// One MPI step of one rank: sends issued in this table step, and receives of messages other
/// ranks send in this table step (whatever step the table says they arrive in).
struct RankStep {
    Step step = 0;
    std::vector<PeerMessage> sends;  ///< sorted by (peer, message)
    std::vector<PeerMessage> recvs;  ///< sorted by (peer, message)
    std::vector<Step> recv_arrives;  ///< per recv: the table step in which it arrives (>= step)
};

struct RankPlan {
    std::vector<std::uint32_t> initial;  ///< messages held at time 0
    std::vector<std::uint32_t> final;    ///< messages that must be held at the end
    std::vector<RankStep> steps;         ///< steps with something to do, in order
};

/// A partial of a reduction (docs/semantics.md, "Reductions"): its chunk and contributor set.
struct PlanPartial {
    std::uint32_t chunk = 0;
    std::vector<std::uint32_t> sources;  ///< sorted
};

struct Plan {
    std::string topology, collective;
    std::uint32_t chunks = 1;  ///< C: a reduction's buffer is C chunks
    std::uint32_t processors = 0;
    Step steps = 0;
    std::uint64_t endpoint_transfers = 0;
    std::vector<RankPlan> ranks;  ///< one per processor
    std::vector<std::string> message_names;  ///< id -> name, for the messages the plan mentions
    /// Reductions (allreduce, reduce_scatter, scan, reduce with partials): id -> the partial a
    /// value a(s) or a({...}) stands for; empty for other collectives.
    std::vector<std::optional<PlanPartial>> partials;
    bool reduction = false;

    /// The partial message m stands for, or null.
    const PlanPartial* partial(std::uint32_t m) const {
        return m < partials.size() && partials[m] ? &*partials[m] : nullptr;
    }
};

/// The MPI reduction that does the same job as a reduction collective ("MPI_Allreduce",
/// "MPI_Reduce_scatter_block", "MPI_Reduce", "MPI_Scan"), or "".
std::string reduction_baseline(std::string_view collective);

/// Reads a per-rank JSON text. Throws InputError naming the file and the record.
Plan read_plan(std::string_view text, std::string_view name);

/// The MPI collective that does the same job as `collective` ("MPI_Alltoall", ...), or "" when
/// there is none (multicast, custom).
std::string baseline_name(std::string_view collective);

}  // namespace collsched::mpi
