/** \file
 * The replay behind simulate() and StreamSimulator (runtime/simulator.hpp), internal to
 * runtime/: one class whose methods live in one file per concern. sim_slots.cpp loads the table
 * and assigns the slots; sim_stream.cpp is the streamed replay; sim_hop.cpp the step loop of `hop`
 * timing (phase 1 checks, phase 2 commits, queue boundaries); sim_wormhole.cpp the round loop of
 * `wormhole` timing; sim_violations.cpp the sentences of broken rules; sim_finish.cpp the end of
 * a run (deliveries, statistics, completeness). What processors hold when messages combine is
 * runtime/sim_holdings.hpp; the text and JSON reports are sim_report.cpp.
 */
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "compiler/core/flat_map.hpp"
#include "runtime/sim_holdings.hpp"
#include "runtime/simulator.hpp"

namespace collsched::sim {

constexpr std::uint32_t never = std::numeric_limits<std::uint32_t>::max();
constexpr std::size_t no_index = std::numeric_limits<std::size_t>::max();
constexpr std::size_t listed_missing = 10;
constexpr std::size_t listed_busiest = 5;
constexpr std::size_t listed_in_message = 8;

/// What phase 1 of a step found: the first offending transfer (table index) per rule.
struct StepFaults {
    std::size_t capacity = no_index;    ///< first transfer of the first over-full channel run
    std::uint32_t ports = never;        ///< lowest processor over its port limit
    std::size_t causality = no_index;   ///< first send of a message the sender cannot send
    std::size_t queue_send = no_index;  ///< queues=none, replicate=yes: first send without arrival in s-1
    std::size_t injection = no_index;   ///< inject=once: first second injection of a datum by its origin
    std::uint32_t group = never;        ///< lowest link group over its capacity in the step
};

/// The slots of a transfer's sender and receiver.
struct SlotPair {
    std::uint32_t src;
    std::uint32_t dst;
};

/// A change of a router's waiting count at a boundary (replicate=yes: residence intervals).
struct QueueEvent {
    Step boundary;
    std::uint32_t router;
    std::int32_t delta;
};

/// One replay of one table.
///
/// State. The simulator needs "does node x hold message m" for the (node, message) pairs a table
/// touches, which are few compared with nodes x messages (n=1024: 2047 nodes, 10^6 messages, but
/// only ~2*10^7 pairs used). So every pair that occurs as the sender or receiver of a transfer, or
/// as the origin of an initial message, gets a dense *slot*. Slots are assigned once, message by
/// message: the transfers are bucketed by message with a counting sort (dense message ids when the
/// message space is not much larger than the table, otherwise a sorted list of the messages in the
/// table), each bucket's nodes are sorted, and every transfer records its source and destination
/// slot. The step loop then reads the table and the slot pairs in sequence and the slot state at
/// random, with no hashing and no allocation per transfer. Memory: 8 bytes per transfer for the
/// slot pairs (plus 8 while slots are assigned) and about 12 per slot.
///
/// Per slot: `held_` is the first step at the end of which the node has the message (0 for
/// initial data, `never` if not yet), `stock_` (replicate=no) the copies a router has now, and
/// `last_arrival_` (queues=none with replicate=yes) the last step in which it arrived.
class Simulator {
public:
    Simulator(const SendTable& table, const SimOptions& options);
    SimReport run();

    // ---- streaming (StreamSimulator, compiler/lower/stream.hpp): the table arrives step by step ----
    void stream_begin();
    /// One step (sorted by channel, message). False once the run has halted.
    bool stream_step(Step s, std::span<const Transfer> step);
    SimReport stream_finish();

private:
    struct RouterRequest {
        std::uint64_t key;  ///< router_key(router, message)
        std::uint32_t at;   ///< 2 * transfer index + (0: source, 1: destination)
    };
    struct RouterCopy {
        std::uint64_t key;
        std::uint32_t held, stock;
    };

    std::uint64_t router_key(std::uint32_t v, MessageId m) const { return (std::uint64_t{v - P_} << message_bits_) | idx(m); }
    static std::uint64_t stream_key(std::uint32_t v, MessageId m) { return (std::uint64_t{idx(m)} << 32) | v; }
    void sort_requests();
    void merge_routers();
    std::uint32_t stream_slot(std::uint32_t v, MessageId m);
    std::uint32_t stream_find(std::uint32_t v, MessageId m) const;

    bool processor(std::uint32_t v) const { return v < P_; }
    bool queues_none() const { return model_.queues == QueueKind::none; }
    const Channel& channel_of(std::size_t i) const { return topo_.channel(tr_[i].channel); }
    std::string_view unit() const { return wormhole_ ? "round" : "step"; }

    // ---- loading and slots (sim_slots.cpp) -------------------------------------------------
    void load_transfers();
    void assign_slots();
    void allocate_state();
    std::uint32_t bucket_count() const { return dense_ ? static_cast<std::uint32_t>(msgs_.size()) : static_cast<std::uint32_t>(uniq_.size()); }
    /// The bucket of a message, or `never` when the table does not mention it.
    std::uint32_t bucket(MessageId m) const {
        if (dense_) return idx(m);
        auto it = std::lower_bound(uniq_.begin(), uniq_.end(), idx(m));
        return it != uniq_.end() && *it == idx(m) ? static_cast<std::uint32_t>(it - uniq_.begin()) : never;
    }
    MessageId bucket_message(std::uint32_t b) const { return dense_ ? MessageId{b} : MessageId{uniq_[b]}; }

    // ---- the step loop (sim_hop.cpp) and the rounds of wormhole timing (sim_wormhole.cpp) ----
    void touch_router(std::uint32_t r) {
        if (touch_gen_[r] != gen_) {
            touch_gen_[r] = gen_;
            touched_.push_back(r);
        }
    }

    void count_port(std::uint32_t v, Step s, bool send, StepFaults& f) {
        if (port_stamp_[v] != s) {
            port_stamp_[v] = s;
            sends_[v] = recvs_[v] = 0;
        }
        ++(send ? sends_[v] : recvs_[v]);
        bool over = model_.ports == Ports::half ? sends_[v] + recvs_[v] > r_ : sends_[v] > r_ || recvs_[v] > r_;
        if (over) f.ports = std::min(f.ports, v);
    }

    StepFaults check_step(std::size_t b, std::size_t e, Step s);
    bool combine_at_router(std::size_t i, std::uint32_t u);
    void commit(std::size_t b, std::size_t e, Step s);
    std::optional<SimViolation> check_boundary(Step boundary);
    bool halt(SimViolation v);
    bool run_hop();
    bool hop_step(std::size_t b, std::size_t e, Step s);
    bool hop_end();
    bool run_wormhole();
    std::size_t propagate_round(std::size_t b, std::size_t e, Step r);
    void trace_step(std::size_t b, std::size_t e, Step s);

    // ---- the messages of broken rules (sim_violations.cpp) ---------------------------------
    std::string node_label(std::uint32_t v) const;
    std::string channel_name(ChannelId c) const;
    std::string message_list(std::span<const MessageId> ms) const;
    /// " x 2 rounds = 4" in a step of more than one round.
    std::string rounds_text(std::uint64_t cap) const { return r_ > 1 ? fmt::format(" x {} rounds = {}", r_, cap * r_) : ""; }
    SimViolation capacity_violation(std::size_t run, Step s) const;
    SimViolation group_violation(std::uint32_t g, std::size_t b, std::size_t e, Step s) const;
    SimViolation ports_violation(std::uint32_t p, std::size_t b, std::size_t e, Step s) const;
    SimViolation injection_violation(std::size_t i, Step s) const;
    SimViolation causality_violation(std::size_t i, Step s) const;
    SimViolation queue_send_violation(std::size_t i, Step s) const;
    SimViolation queue_violation(Step boundary, std::uint32_t r) const;

    // ---- the end of the run (sim_finish.cpp) -----------------------------------------------
    bool holds(MessageId m, Node d) const;
    void count_deliveries();
    void finish(bool ran_through);


    const SendTable& table_;
    std::uint32_t r_ = 1;                        ///< the rounds of the step being checked
    std::vector<std::uint64_t> group_load_;      ///< per link group: transfers in the step so far
    const Topology& topo_;
    const Model& model_;
    const Messages msgs_;
    const SimOptions options_;
    const std::uint32_t P_, R_;
    const bool wormhole_, replicate_;

    std::span<const Transfer> tr_;
    std::vector<Transfer> sorted_copy_;

    bool dense_ = true;
    std::vector<std::uint32_t> uniq_;        // sparse message space: the messages of the table, sorted
    std::vector<std::uint32_t> slot_begin_;  // per bucket: its first slot (bucket b: [begin[b], begin[b+1]))
    std::vector<std::uint32_t> slot_node_;   // per slot: its node; sorted within a bucket
    std::vector<SlotPair> slots_;  // per transfer: the sender's and the receiver's slot
    std::vector<std::uint32_t> held_, stock_, last_arrival_;  // per slot
    std::vector<std::uint32_t> took_;  // per slot, multicast=routers: the step in which a send last took a copy or combined
    std::unordered_map<std::uint32_t, std::pair<Step, ChannelId>> injected_;  // inject=once: message -> first injection

    std::vector<std::int64_t> waiting_;  // per router: copies (or messages) waiting at the current boundary
    std::vector<std::uint32_t> touch_gen_, touched_;
    std::uint32_t gen_ = 1;
    std::vector<QueueEvent> events_;
    std::size_t next_event_ = 0;
    Step prev_ = 0;  // hop: the last step replayed

    bool streamed_ = false, halted_ = false;  // streaming
    FlatMap proc_map_;                         // processors beyond the dense slots: (message, node) -> slot
    std::vector<std::uint32_t> proc_node_;     // per dense processor slot 2m, 2m+1: its processor, or never
    std::uint32_t pool_base_ = 0;              // the first slot that is not a dense processor slot
    static constexpr std::uint64_t dense_processor_limit = std::uint64_t{1} << 25;  // messages: at most 768 MiB of dense slots
    std::size_t proc_end_ = 0;                 // processor slots are [0, proc_end_); the step's router slots follow
    std::vector<RouterRequest> requests_, request_buf_;  // the step's router endpoints, sorted by key
    std::vector<std::size_t> count_;                     // radix buckets
    std::vector<std::uint64_t> router_keys_;             // per router slot of the step: its key, increasing
    std::vector<RouterCopy> carry_;                      // the copies in flight after the last step, by key
    int message_bits_ = 32, radix_passes_ = 1, radix_digit_ = 11;

    std::vector<std::uint32_t> port_stamp_, sends_, recvs_;  // per processor, for the current step
    std::vector<std::uint32_t> recv_stamp_, recv_steps_;     // per processor: last step with a receive, steps with one

    std::vector<std::uint32_t> order_, worklist_, round_gains_;  // wormhole rounds
    std::optional<Holdings> have_;  // tables with composites or a combining collective
    std::optional<SimViolation> combine_fault_;  // partials: the first arrival that counts a contribution twice
    /// combine=routers: per (router << 32 | chunk), the router's slots of partials and their contributors
    std::unordered_map<std::uint64_t, std::vector<std::pair<std::uint32_t, std::vector<std::uint32_t>>>> router_partials_;
    std::vector<std::uint8_t> legal_;

    std::vector<std::string> names_;  // node names, for the trace
    SimReport rep_;
};

}  // namespace collsched::sim
