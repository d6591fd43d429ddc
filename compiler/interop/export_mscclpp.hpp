/** \file
 * Send tables as MSCCL++ execution plans (`--format mscclpp`): the JSON microsoft/mscclpp's
 * executor loads (compiler/interop/mscclpp_plan.hpp reads it back exactly as that executor does).
 * docs/exports.md ("Writing MSCCL++ plans") states the mapping:
 *
 *  - every endpoint transfer p -> q is a one-sided put by p into q's buffer; a pair of GPUs
 *    whose route crosses a router or a link group named `nic...` talks through port channels
 *    (the proxy, InfiniBand), any other pair through memory channels (NVLink, NVSwitch);
 *  - data readiness is explicit: per step and thread block, the puts, a `nop`, one signal per
 *    peer, one wait per peer that put, a `nop` (port channels: `pws`, put-with-signal, which the
 *    proxy orders on its channel); under `--proto LL` the puts write LL packets and the reader
 *    unpacks them (the packet flags synchronize, no signal or wait);
 *  - the transfers are split over thread blocks by chain (copies: per message; reductions: per
 *    chunk), so no thread block depends on another of its GPU: one block per chain up to 32
 *    (round-robin beyond, `chains_a_block` consecutive chains at a time), more only where a block
 *    would pass 64 ops;
 *  - `--instances N` replicates the plan over N interleaved slices of every chunk, each with its
 *    own thread blocks and channels.
 *
 * Every plan is read back and verified (deadlock, races, result, and that its data movement is
 * the table's endpoint transfers) before a byte is written; a table the format cannot express
 * is refused with InputError.
 */
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "compiler/table/send_table.hpp"
#include "compiler/io/table_io.hpp"
#include "support/budget.hpp"

namespace collsched {

struct MscclppOptions {
    std::string proto = "Simple";  ///< "Simple" or "LL"
    int instances = 1;
    /// In place (the default for allgather and allreduce, the two that are correct both ways
    /// here); out of place for alltoall and reduce_scatter.
    bool out_of_place = false;
    /// The sizes the plan is meant for (`--size-range A..B`; the executor picks a plan by them):
    /// min_message_size and max_message_size, bytes as MSCCL++ counts the message.
    std::uint64_t min_message_size = 0;
    std::uint64_t max_message_size = ~std::uint64_t{0};
    /// A handshake at the start of every thread block (Simple): one relaxed signal and wait on
    /// each of its memory channels (a signal and wait on its port channels), so that no put of a
    /// launch lands in a peer still running the previous one (docs/exports.md, "Between launches").
    bool handshake = true;
    /// The chains dealt round-robin to the thread blocks this many consecutive ones (by id) at a time, so that a
    /// block puts them one after another in their steps (1: one at a time; docs/exports.md, "Writing MSCCL++ plans").
    int chains_a_block = 1;
    /// Past it the writer and the check of the plan stop: LimitReached ("time limit (...)"), nothing written.
    Deadline deadline = {};
    /// When set: the plan as read back and checked, its copies between GPUs as a table on the table's topology
    /// (mscclpp::plan_table: what `verify PLAN.json --topology --size` times), or nullopt where the plan has none.
    std::optional<SendTable>* read_back = nullptr;
};

/// Parses `--size-range A..B` (sizes as support::parse_bytes reads them, `1M..64M`; either side
/// may be left out: `..64K`, `1G..`) into opt's min and max_message_size. Throws InputError
/// naming what was expected.
void parse_size_range(const std::string& text, MscclppOptions& opt);

/// The plan's JSON text (verified as described above).
std::string table_to_mscclpp(const SendTable&, const MscclppOptions&);

void write_table_mscclpp(const SendTable&, const MscclppOptions&, fmt::memory_buffer& out, const Flush& flush);

/// What the table moves between GPUs, as the plan reader reports it (mscclpp::Movement): per
/// endpoint transfer p -> q, the input pieces (rank, input chunk) of its message, chunk indices
/// in the plan's layout for `instances` = 1.
std::vector<std::tuple<int, int, std::vector<std::pair<int, int>>>> table_movement(const SendTable&);

}  // namespace collsched
