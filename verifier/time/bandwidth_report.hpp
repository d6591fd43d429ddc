/** \file
 * `collsched bandwidth` as a report (issue 42: built here, printed by the command): the exact cut
 * bound on rounds per chunk by max flow, with its cut; the tree packing that meets it where it
 * can (reduce_scatter: the allgather's packing reversed), verified by the direct checker; and
 * with sizes the proved lower bound on time and the packing's predicted time and gap
 * (docs/synthesis.md, "The bandwidth bound by flows"; docs/time.md). The command reads the
 * options and the instance, writes the witness file and prints the text.
 */
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "compiler/table/send_table.hpp"
#include "runtime/timing.hpp"
#include "support/budget.hpp"
#include "verifier/synth/problem/instance.hpp"

namespace collsched {

struct BandwidthRequest {
    Deadline deadline;              ///< for the whole run (--timeout); the memory budget is MemoryBudget::standard
    SynthInstance instance;         ///< any route
    std::uint32_t max_chunks = 256;  ///< the largest C the packing tries
    bool no_packing = false;        ///< only the bound
    bool json = false;              ///< the report as one JSON object instead of text
    std::vector<double> sizes;      ///< the proved lower bound on time (and the packing's time) at each
    std::optional<LinkSpeed> link;  ///< --link
    bool witness = false;           ///< return the packed table to write, with its comment
};

struct BandwidthReport {
    std::string text;                ///< the report, text or JSON, with its newline
    int exit_code = 3;               ///< 0: the schedule meets the bound; 3: above it, or none
    std::optional<SendTable> witness;  ///< the packed table (when asked and found)
    std::string witness_comment;     ///< its comment in the file
};

/// Throws InputError where the bound does not apply (wormhole timing; collectives without a flow
/// bound and no size).
BandwidthReport bandwidth_report(const BandwidthRequest&);

}  // namespace collsched
