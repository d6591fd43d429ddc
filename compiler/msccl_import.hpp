/** \file
 * Reading and checking MSCCL-IR XML (as msccl-tools' `ir_to_xml` and `collsched convert
 * --format msccl` write it) into a send table, so that `verify`, `simulate` and `convert` work on
 * programs made by MSCCLang. docs/exports.md ("Reading MSCCL-IR") states the model.
 *
 * The program is rebuilt per rank: thread blocks run their steps in order; a step with `depid`
 * waits until thread block `depid` has published a step at or after `deps` (the executor
 * publishes only steps marked `hasdep="1"`); sends and receives are matched first-in first-out
 * per connection (sender, receiver, channel); a send never waits for its receive (NCCL's
 * connection buffers). The steps are levelled by these dependencies: a send of `cnt` chunks
 * whose data and thread block are ready after level L puts chunk x on the wire in step L+1+x,
 * along the topology's route (cut-through), and a receive completes when the last chunk has
 * arrived and its thread block got there. Chunks are mapped to messages by `coll` and the
 * buffers: alltoall `i_chunks` = P*k, input chunk j of rank r is piece j mod k of m(r, j div k);
 * allgather `i_chunks` = k, input chunk j of rank r is piece j of b(r), output chunk c holds
 * piece c mod k of b(c div k); broadcast: rank 0 is the root (the executor has no root), its k
 * input chunks are b(0). In place (`inplace="1"`) the input aliases the output as the executor's
 * isInPlace test defines it; a file that allows both is checked both ways. k chunks per datum
 * become the table's chunks C (piece j of a datum is its chunk j). Reductions (allreduce,
 * reduce with root 0, reducescatter; steps rrc, rrs, rrcs, re) carry partials, sets of ranks'
 * contributions to one chunk, and send them as the messages a({...},c) of the buffer rule.
 *
 * Refused with file:line:col and the rank, thread block and step: a reduction that mixes chunks
 * or counts a contribution twice, other collectives,
 * malformed or inconsistent files, the executor's load rules (shared with the exporter,
 * compiler/export_msccl.hpp), unmatched sends or receives, waits that never end (a cycle, or a
 * dependency on a step nobody publishes), two unordered accesses to one chunk of which one writes
 * (a data race: a dependency is missing), a send of a chunk that holds no data, and output
 * buffers that do not hold what the collective needs.
 */
#pragma once

#include <string>
#include <string_view>

#include "compiler/send_table.hpp"

namespace collsched {

struct MscclImportOptions {
    /// The topology the program runs on; empty: `complete:P` for the file's P ranks.
    std::string topology;
    /// The executor's MSCCL_MAX_NUM_STEPS, checked as the exporter checks it.
    int max_steps = 64;
};

/// Whether a text looks like XML (its first non-blank character is '<').
bool looks_like_xml(std::string_view text);

/// Reads, checks and levels an MSCCL-IR program; `name` is used in messages. Throws InputError
/// with every problem found (one per line, up to 20), nothing returned.
SendTable parse_msccl_ir(std::string_view text, std::string_view name, const MscclImportOptions& = {});

}  // namespace collsched
