/** \file
 * The endpoint view of a send table and its per-rank JSON (`collsched.ranks/1`, described in
 * docs/exports.md, schema in schema/collsched.ranks.schema.json).
 *
 * An *endpoint transfer* is one copy's trip from processor `src` to processor `dst` through
 * routers only: it is *sent* in the step of its hop out of `src` and *arrives* in the step of
 * its hop into `dst`. On a direct channel between two processors both steps are the same.
 * Multi-hop routes through processors (rings, tori, hypercubes) are several endpoint transfers,
 * one per processor-to-processor leg, because each processor on the way receives and sends.
 *
 * The view is what a communication library needs (every rank's sends and receives per step),
 * what the MPI runner executes and what the MSCCL exporter turns into thread blocks. A table is
 * *cut-through regular* when its endpoint transfers, expanded by the cut-through rule (hop k of
 * a copy sent in step s crosses the k-th channel of the topology's route from src to dst in step
 * s+k-1; under wormhole timing every hop in round s), give back exactly its transfers. Only then
 * can the per-rank JSON omit the hops; otherwise it lists them (`"hops": "listed"`).
 */
#pragma once

#include <compare>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <tuple>
#include <vector>

#include "compiler/table/send_table.hpp"
#include "compiler/io/table_io.hpp"

namespace collsched {

inline constexpr std::string_view ranks_format = "collsched.ranks/1";
/// Per-rank files of chunked tables or tables with rounds (docs/formats.md): /1 plus "chunks" and "rounds".
inline constexpr std::string_view ranks_format_2 = "collsched.ranks/2";

struct EndpointTransfer {
    Step sent;      ///< the step of the hop out of src
    Node src;       ///< the sending processor
    Node dst;       ///< the receiving processor
    MessageId message;
    Step arrived;   ///< the step of the hop into dst
    friend bool operator==(const EndpointTransfer&, const EndpointTransfer&) = default;
    friend auto operator<=>(const EndpointTransfer& a, const EndpointTransfer& b) {
        return std::tuple(a.sent, idx(a.src), idx(a.dst), idx(a.message), a.arrived) <=>
               std::tuple(b.sent, idx(b.src), idx(b.dst), idx(b.message), b.arrived);
    }
};

struct EndpointView {
    std::vector<EndpointTransfer> transfers;  ///< sorted by (sent, src, dst, message, arrived)
    /// The cut-through rule rebuilds the table's transfers exactly from `transfers`.
    bool cut_through = true;
    std::uint64_t stranded = 0;  ///< copies that entered a router and never left it
    std::uint64_t fanout = 0;    ///< router copies sent on more than one channel (replication)
};

/// Traces every copy from the processor that sends it, through routers, to the processors it
/// reaches. Inside a router the k-th departure of message m is matched to an arrival of m in an
/// earlier step (the same round under wormhole timing): preferably one not matched yet that
/// arrived in the step just before (cut-through), not over the channel it leaves on, else the
/// earliest one not matched yet, else (replication) the earliest one. Copies of one message are
/// indistinguishable, so any such matching is a faithful reading of the table. Throws
/// InputError when a router sends a message it has not received (the table is not causal).
EndpointView endpoint_view(const SendTable&);

/// The first transfer by which a router sends a value it combined itself: under combine=routers
/// (NVLS, SHARP) a reducing router that sends a message no transfer brings it, the reduction of
/// the partials it received. Endpoint transfers go from processor to processor and cannot say
/// that, so the endpoint view and the formats built on it (MSCCL-IR, per-rank JSON, Chakra) refuse
/// such a table with this description ("router r1.0 sends a({1..7},0) in step 2, a value it
/// combined from the partials it received"); nullopt when no router combines.
std::optional<std::string> in_switch_reduction(const SendTable&);

/// Appends the hops of `t` by the cut-through rule. Returns a description of the first
/// endpoint transfer whose `arrived` disagrees with the rule (or that has src == dst), with
/// nothing appended for it; nullopt when every transfer follows the rule.
std::optional<std::string> cut_through_hops(const Topology&, Timing, std::span<const EndpointTransfer> t,
                                            std::vector<Transfer>& out);

/// The messages a processor holds at time 0 and those it must hold at the end (the
/// collective's postcondition plus the table's requirements), each sorted.
std::vector<MessageId> initial_messages(const SendTable&, Node processor);
std::vector<std::vector<MessageId>> final_messages(const SendTable&);

/// The per-rank JSON: per processor, per step in which it sends or receives, its sends
/// `{"to", "msg", "arrive"}` and receives `{"from", "msg", "sent"}`; the hops too when the
/// table is not cut-through regular.
void write_table_ranks(const SendTable&, fmt::memory_buffer& out, const Flush& flush, std::string_view file = {});
std::string table_to_ranks(const SendTable&);

}  // namespace collsched
