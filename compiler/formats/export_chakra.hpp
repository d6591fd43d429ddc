/** \file
 * Chakra execution traces for ASTRA-sim's custom collectives, and reading them back
 * (docs/exports.md, "Chakra traces for ASTRA-sim"). Protobuf stays inside export_chakra.cpp; the
 * schema is schema/chakra/et_def.proto, written from Chakra's published et_def.proto.
 *
 * `table_to_chakra` makes, for a table of an alltoall or allgather (the collectives ASTRA-sim
 * runs custom implementations of), one trace per rank, `PREFIX.<rank>.et`: a varint-length
 * delimited GlobalMetadata, then one COMM_SEND_NODE per endpoint transfer the rank sends and one
 * COMM_RECV_NODE per one it receives (compiler/io/export_ranks.hpp), with `comm_src`, `comm_dst`,
 * `comm_tag` (int32: the endpoint transfer's index, so every send pairs with exactly one
 * receive), `comm_size` (int64 bytes) and `comm_type`. A send of a message the rank received
 * has a data dependency on the receive that brought it first: that is the table's causal order.
 * Node ids are unique per file. Beside the traces: `PREFIX.system.json` (the custom
 * implementation and `preferred-dataset-splits` 1), `PREFIX.workload.<rank>.et` (one
 * COMM_COLL_NODE per rank that triggers the collective), `PREFIX.network.yml` and
 * `PREFIX.memory.json` for the analytical backend.
 *
 * `read_chakra` reads such traces back and replays them: it pairs sends and receives by
 * (tag, src, dst, size), resolves every dependency, levels the graph (refusing cycles and
 * unmatched nodes, named by rank and node), checks that every send of received data depends on a
 * receive of that message, and rebuilds the table from the steps in the node names; the test
 * compares it with the table the traces were written from.
 */
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "compiler/table/send_table.hpp"

namespace collsched {

struct ChakraOptions {
    /// The absolute path prefix of the traces, as the system file names it.
    std::string prefix;
    std::uint64_t bytes = 1024;  ///< bytes per message
};

struct ChakraFile {
    std::string path;  ///< prefix + suffix
    std::string content;
};

/// Every file of the export, made in memory (nothing written). Throws InputError for tables the
/// traces cannot express.
std::vector<ChakraFile> table_to_chakra(const SendTable&, const ChakraOptions&);

/// Reads `prefix.<rank>.et` for every rank (the number of ranks and the table's header come from
/// rank 0's GlobalMetadata), replays the traces and returns the table they encode. Throws
/// InputError naming the file, rank and node of the first problems. Before a byte of a trace is
/// read, the set is checked in one place (check_trace_set): every rank's file is there and is a
/// regular file (a FIFO would block the read forever), and no file of a rank beyond the last is.
SendTable read_chakra(const std::string& prefix);

/// The same from memory: `rank_file(r)` gives the bytes of rank r's trace (or throws InputError),
/// `check_set(P)` is called once rank 0 has named the number of ranks P, before any other rank
/// is read. Messages name the traces `prefix.<rank>.et`. The fuzz harness's entry point.
SendTable parse_chakra(const std::string& prefix, const std::function<std::string(std::uint32_t rank)>& rank_file,
                       const std::function<void(std::uint32_t ranks)>& check_set);

/// Whether a path names a trace of some rank (`PREFIX.<digits>.et`); `prefix` and `rank` are set.
bool chakra_trace_name(const std::string& path, std::string& prefix, std::uint64_t& rank);

/// Limits of the reader (docs/errors.md, "Chakra traces"): collsched names its nodes
/// `send MSG to RANK step N`, a few dozen bytes; a step lasts at most max_step_rounds rounds, as
/// in every table format.
inline constexpr std::size_t max_chakra_name = 1024;

}  // namespace collsched
