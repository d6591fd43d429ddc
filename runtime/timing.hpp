/** \file
 * Predicted time of a table for a buffer of M bytes per datum on the topology's link speeds
 * (docs/time.md), two ways:
 *
 *  - synchronous: the table runs step by step with a barrier between steps; a step lasts as long
 *    as its slowest channel, alpha_e + (bytes on e) / bandwidth_e, where a channel in link groups
 *    also waits for each group's bytes / bandwidth_g;
 *  - asynchronous: as executors run a table (MSCCL thread blocks, ASTRA-sim's custom
 *    collectives): no barrier; a transfer starts when its data is held at its sender and its
 *    channel, its groups and (single or half ports) its ports are free, holds each of them for
 *    bytes / bandwidth, and arrives alpha_e after its last byte left. Transfers are taken in the
 *    order they became ready (ties: by when the transfers that made them ready started, then
 *    table order), each at the earliest time all its resources are free for as long as it holds
 *    them. On a channel alone that is first come first served: ASTRA-sim's analytical
 *    congestion-aware link (a FIFO queue per link, busy for the serialization delay, the chunk
 *    arriving latency + size / bandwidth after it started). A channel from a processor into a
 *    router that reduces or multicasts (NVLS, SHARP) serves its transfers in program order, the
 *    table's: each waits until the one before it on that channel has started (multimem loads and
 *    stores are issued by the GPUs' programs in order: NCCL's NVLS reduce warps, MSCCL++'s
 *    thread blocks). A router that only forwards (cuts_through) passes a message on packet by packet.
 *    The transfers of one op over a channel in a step (SendTable::transfer_ops: a plan's put of several chunks)
 *    start together when all are ready, hold the connection once for their bytes and one message, and arrive
 *    together; a step's k-th op runs on the k-th connection.
 *
 * An event-driven simulation in O(T log T) for T transfers, about 100 bytes per transfer. The
 * table is trusted to be causal (verify it first): a transfer whose sender can never hold its
 * data is an error (InputError naming it).
 */
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "compiler/table/send_table.hpp"
#include "runtime/executor/executor.hpp"
#include "support/budget.hpp"

namespace collsched {

/// The size of a collective as NCCL and nccl-tests count it (docs/time.md, "Sizes"): the buffer
/// of one rank for allreduce, broadcast, reduce and scan, the output of allgather and gather, the
/// input of reduce_scatter, alltoall and scatter. The bytes of one datum of the table (b(s),
/// m(s,d), a(s)) at that size: size / P where the buffer holds one datum per processor
/// (allgather, alltoall, gather, scatter), else size (a reduce_scatter's value a(s) is the whole
/// input of s, its blocks are chunks).
double datum_bytes(CollectiveKind, std::uint32_t processors, double size);
/// nccl-tests' bus bandwidth factor (busbw = algbw x factor, algbw = size / time): allreduce
/// 2(P-1)/P; allgather, reduce_scatter, alltoall, gather and scatter (P-1)/P; others 1.
double bus_factor(CollectiveKind, std::uint32_t processors);

struct TimeOptions {
    double size = 0;  ///< M: the collective's size as NCCL counts it (datum_bytes gives a datum; a chunk is a datum / C)
    /// Replaces every speed of the topology: each channel and group gets this alpha and
    /// cap * unit_bandwidth (`--link "500 ns, 50 GB/s"`).
    std::optional<LinkSpeed> uniform_unit;
    Protocol protocol = Protocol::none;
    /// With a protocol: a channel below this bandwidth is the network's (a quarter of the fastest
    /// channel between processors; with_network_class sets it, predict_time calls it).
    double network_below = 0;
    /// The executor that runs the table (docs/time.md, "Executors"): its launch, synchronization,
    /// message costs and link efficiencies, and its protocol (which then replaces `protocol`).
    /// Unset: the ideal executor under `protocol`, the network's share.
    std::optional<ExecutorCosts> executor = std::nullopt;
    /// The asynchronous run throws LimitReached ("time limit (a prediction)") once this passes (polled every 16,384
    /// events): a table of half a million transfers takes seconds at one size (none: no limit).
    Deadline deadline = {};
};

/// The costs `opt` charges: its executor's, else `protocol`'s wire factor and hop latencies only.
ExecutorCosts costs_of(const TimeOptions&);
/// The class of channel c (docs/time.md, "Executors"): `switch` into or out of a router that
/// reduces or multicasts, `network` below `network_below`, else `box`.
LinkClass link_class(const Topology&, ChannelId c, const TimeOptions&);

/// `opt` with network_below set from the topology (nothing to do without a protocol).
TimeOptions with_network_class(const Topology&, TimeOptions opt);

struct TransferTime {
    double ready = 0;   ///< its data held at the sender (on an in-order channel: and its predecessor there started)
    double start = 0;   ///< its resources free: the first byte leaves
    double end = 0;     ///< the last byte left (the channel is free again)
    double arrive = 0;  ///< held by the receiver: end + alpha
};

struct TimePrediction {
    double size = 0;         ///< M, the collective's size (NCCL's)
    double datum_bytes = 0;  ///< one datum at M (datum_bytes())
    double chunk_bytes = 0;  ///< a datum / C
    double synchronous = 0;  ///< seconds
    double asynchronous = 0;
    std::vector<double> step_seconds;     ///< synchronous: the length of steps 1..T
    std::vector<TransferTime> transfers;  ///< asynchronous: per transfer of the table, in its order
    /// Asynchronous: the channel busy the longest (bytes / bandwidth summed), and for how long.
    std::optional<ChannelId> busiest;
    double busiest_seconds = 0;
};

/// The speed of channel c under `opt` (the topology's, or the uniform override; with a protocol,
/// the bandwidth divided by its wire factor and, on a channel out of a processor, its latency added).
LinkSpeed channel_speed(const Topology&, ChannelId c, const TimeOptions& opt);
/// How long a transfer holds its connection over channel c beyond its bytes under `opt`'s executor
/// (0 without one, and out of a router that only forwards: a put through a switch is one op of its GPU).
double message_cost(const Topology&, ChannelId c, const TimeOptions& opt);
/// The most connections an executor runs over one channel (docs/time.md, "Executors"): the k-th
/// transfer of a step on a channel runs on its k-th connection and holds it for its message beyond
/// its bytes, while the channel carries the bytes of every connection. NCCL: up to MAXCHANNELS
/// (64), one for each of its channels (a ring's, a tree's), each with its own slots and thread
/// block; MSCCL++: up to 32, a plan's thread block having its own channel and QP to each peer (the
/// writer's blocks, one per chain up to 32); MSCCL: 1 (the MSCCL-IR export runs a pair's transfers on
/// one thread block, in order), the message holding the channel.
std::uint32_t connections_per_channel(const ExecutorCosts&);
/// The bandwidth of link group g under `opt`.
double group_speed(const Topology&, std::uint32_t g, const TimeOptions& opt);
/// A switch's packet (docs/time.md, "Routers and copies"): a router that only forwards passes a message on packet by
/// packet, each once it is in whole. 4 KiB, InfiniBand's largest MTU.
inline constexpr double router_packet_bytes = 4096;
/// Whether router u passes what it forwards on packet by packet (cut through): under replicate=no, a router that
/// neither adds nor multicasts (a declared switch by its functions, any other by the model's combine and multicast).
/// Its departure starts once the first packet of the copy it is matched with is in, its last byte leaving no earlier
/// than that copy's last byte arrived; a departure elsewhere waits for its data whole.
bool cuts_through(const Topology&, const Model&, Node u);
/// Whether router u adds or multicasts: its declared functions, or (a machine that declares none) the model's combine
/// and multicast.
bool switch_acts(const Topology&, const Model&, Node u);

/// The part of the prediction that does not depend on the size, built once per table (what each
/// transfer waits for, what it moves): predicting at many sizes (compare, `optimize --sizes`, the
/// bisection of crossovers) then costs only the event-driven runs. It keeps the table's topology;
/// the table itself may go. Copies share one plan.
class TimingPlan {
public:
    /// Throws InputError when the table is not causal (as predict_time); LimitReached ("time
    /// limit (the timing plan)") once `deadline` passes while it is built (polled every 65,536
    /// transfers: 0.3 s for the 500,000 transfers of a table of 128 GPUs).
    explicit TimingPlan(const SendTable&, Deadline deadline = {});
    /// Both predictions at one size: the same as predict_time(table, opt).
    TimePrediction predict(const TimeOptions&) const;
    /// Only the synchronous time.
    double synchronous(const TimeOptions&) const;
    /// Only the asynchronous time (the same run as predict's, without the synchronous pass).
    double asynchronous(const TimeOptions&) const;
    /// The same, or +infinity as soon as the run is sure to end after `above` (an event later than it, launch
    /// included: the run takes its events in order of time, and ends at its last arrival): for a caller that wants
    /// the least of several runs (an executor's protocols), which this one cannot be below `above`.
    double asynchronous(const TimeOptions&, double above) const;
    /// The table's transfers.
    std::size_t transfers() const;

    struct Impl;

private:
    std::shared_ptr<const Impl> impl_;
};

/// How many predictions of plans of up to `transfers` transfers may run at once (on threads: each
/// prediction is const and holds only its own state): `jobs` (at least 1), fewer when the memory
/// budget (MemoryBudget::standard) has room for fewer of them beside what is resident.
unsigned prediction_threads(unsigned jobs, std::size_t transfers);

/// Both predictions for one size. Throws InputError when the table is not causal.
TimePrediction predict_time(const SendTable&, const TimeOptions&);
/// Only the synchronous time (cheap: one pass over the table).
double synchronous_time(const SendTable&, const TimeOptions&, std::vector<double>* step_seconds = nullptr);

/// Per channel, the least time a transfer over it adds between what its sender waits for and its arrival under `opt`
/// (runtime/timing_chain.cpp): its alpha (with the protocol's hop), its message, and out of a processor the grain's
/// bytes at its speed (through a router that cuts through the bytes may overlap the next channel's: not counted).
std::vector<double> chain_weights(const Topology&, const TimeOptions& opt);
/// The longest chain of a table under `opt` (verifier/time/OBJECTIVE.md, "The chain of a ring"): per transfer, in
/// table order, the latest of what its sender waits for in the time model (a base part: the least of its earlier-step
/// arrivals there; a value at a processor: the latest of the earlier arrivals of values of its chunk that may be part
/// of it; at a router the least of those or of its own copies) plus its chain_weights. Both times are at least the
/// launch plus this, at every size. LimitReached once `deadline` passes (polled every 65,536 transfers).
double chain_latency(const SendTable&, const TimeOptions& opt, Deadline deadline = {});

/// Per-channel busy intervals as JSON (`simulate --timeline FILE`, docs/time.md): the format
/// `collsched.timeline/1`, the size, both times, and per channel with traffic its speed and
/// every transfer's {step, msg, ready, start, end, arrive} in seconds, by start time.
std::string timeline_json(const SendTable&, const TimePrediction&, const TimeOptions&);

}  // namespace collsched
