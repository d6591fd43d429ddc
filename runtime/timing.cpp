#include "runtime/timing.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <memory>
#include <unordered_map>
#include <utility>

#include <fmt/format.h>

#include "support/assert.hpp"
#include "support/error.hpp"
#include "runtime/timing_index.hpp"
#include "runtime/timing_values.hpp"

namespace collsched {

using timing_internal::subset;
using timing_internal::value_set;

namespace {

std::uint64_t key(Node n, std::uint32_t x) { return (std::uint64_t{idx(n)} << 32) | x; }

}  // namespace

using timing_internal::BusyList;
using timing_internal::Index;
using timing_internal::QuadHeap;
using timing_internal::RadixQueue;

/// The size-independent part of the asynchronous run (docs/time.md): per transfer its resources
/// and chunks, how many arrivals it waits for, and for each arrival whom it may satisfy.
struct TimingPlan::Impl {
    std::shared_ptr<const Topology> topo;
    Ports ports = Ports::multi;
    CollectiveKind kind = CollectiveKind::allgather;
    std::uint32_t chunks = 1;
    std::uint32_t steps = 0;               // the table's steps (step_seconds has one entry each)
    std::vector<Step> step;
    std::vector<ChannelId> channel;
    std::vector<std::uint32_t> moved;      // chunks a transfer moves (a bundle: its parts)
    /// per transfer: its rank among its step's transfers on its channel, the connection it runs on
    /// (docs/time.md, "Executors": the message cost is paid per connection); per channel the most
    /// transfers one step puts on it
    std::vector<std::uint32_t> lane, lanes;
    std::vector<std::uint32_t> pending;    // arrivals a transfer waits for (and its predecessor in program order)
    /// per transfer on an in-order channel (into a switch that reduces or multicasts, docs/time.md,
    /// "NVLS"): the next transfer on that channel in table order, which may not start before it
    std::vector<std::uint32_t> next_in_order;
    Index waiters;                         // (node, base part) -> transfers waiting for its first arrival
    // per transfer i (CSR): the ranges of `waiters` its arrival may satisfy, and the transfers
    // waiting for all value-like arrivals that it is one of
    std::vector<std::uint32_t> wake_off;
    std::vector<std::pair<std::uint32_t, std::uint32_t>> wake;
    std::vector<std::uint32_t> notify_off, notify;
    /// per transfer i (CSR): the departures from a router that cuts through (cuts_through) matched with its copy, ready
    /// when its first packet is in, ending no earlier than it arrived (docs/time.md, "Routers and copies")
    std::vector<std::uint32_t> cut_off, cut;
    // condition groups (a value's earlier arrivals at its sender, shared by every transfer that sends
    // it on in one step): per group the arrivals it waits for, and its member transfers (CSR); a
    // notify entry T + g is group g
    std::vector<std::uint32_t> group_pending;
    std::vector<std::uint32_t> member_off, members;
    std::vector<std::uint32_t> chain_next;  // per group: the group of the same sender and value in a later step, or none
    /// An op of several transfers (SendTable::transfer_ops: a plan's put of several chunks): per transfer the first of
    /// its op on its channel in its step, which starts for all of them, holds the connection once for their bytes and
    /// one message, and arrives for all (itself when alone); empty when every transfer is its own op. Per leader (CSR):
    /// the others.
    std::vector<std::uint32_t> lead, op_off, op_members;
    bool member(std::uint32_t j) const { return !lead.empty() && lead[j] != j; }
};

namespace {

/// Builds the plan: what each transfer's sender must hold first: each base part, the first copy
/// to arrive in an earlier step (or at time 0 when it is the sender's initial data); a
/// reduction's value, every value of the same chunk that arrived in an earlier step and could be
/// part of it (its contributors a subset of the value's), all of them. At a router that forwards
/// each copy once (replicate=no), the copy its departure is matched with (docs/time.md, "Routers
/// and copies").
class PlanBuilder {
public:
    PlanBuilder(const SendTable& t, TimingPlan::Impl& p, Deadline deadline) : t_(t), topo_(*t.topology), ms_(t.messages()), p_(p), deadline_(deadline) {}

    void build() {
        const std::uint32_t T = static_cast<std::uint32_t>(t_.transfers.size());
        p_.topo = t_.topology;
        p_.ports = t_.model.ports;
        p_.kind = t_.collective.kind;
        p_.chunks = t_.collective.chunks;
        p_.steps = t_.steps();
        p_.step.resize(T);
        p_.channel.resize(T);
        p_.moved.resize(T);
        p_.lane.resize(T);
        p_.lanes.assign(topo_.channels().size(), 0);
        leads();
        std::uint32_t ops = 0;  // the ops so far of the step's transfers on the channel
        for (std::uint32_t i = 0; i < T; ++i) {
            poll(i);
            const Transfer& x = t_.transfers[i];
            p_.step[i] = x.step;
            p_.channel[i] = x.channel;
            p_.moved[i] = ms_.part_count(x.message);
            // sorted by (step, channel, message): a step's transfers on a channel are consecutive; the k-th op runs on
            // the k-th connection
            const bool next = i > 0 && t_.transfers[i - 1].step == x.step && t_.transfers[i - 1].channel == x.channel;
            if (!next) ops = 0;
            if (p_.member(i)) {
                p_.lane[i] = p_.lane[p_.lead[i]];
                p_.moved[p_.lead[i]] += p_.moved[i];
                continue;
            }
            p_.lane[i] = ops++;
            p_.lanes[idx(x.channel)] = std::max(p_.lanes[idx(x.channel)], ops);
        }
        // between the passes too: their indexes sort millions of entries on 1,024 GPUs (an
        // allgather's plan ran 3 s past --timeout)
        index_arrivals();
        poll(0xffff);
        add_conditions();
        poll(0xffff);
        program_order();
        poll(0xffff);
        wakes();
        // an op waits for what each of its transfers waits for, and starts for all of them
        for (std::uint32_t j = 0; j < T; ++j)
            if (p_.member(j)) p_.pending[p_.lead[j]] += std::exchange(p_.pending[j], 0);
    }

    /// The ops of several transfers (SendTable::transfer_ops): per (op, channel, step) its first transfer leads. Not on a
    /// channel served in program order (into a switch that reduces or multicasts: each transfer its own).
    void leads() {
        const std::uint32_t T = static_cast<std::uint32_t>(t_.transfers.size());
        if (t_.transfer_ops.size() != T) return;
        p_.lead.resize(T);
        std::unordered_map<std::uint64_t, std::uint32_t> first;  // (op, channel) -> its first transfer in this step
        std::vector<std::pair<std::uint32_t, std::uint32_t>> pairs;  // (leader, member)
        for (std::uint32_t i = 0; i < T; ++i) {
            const Transfer& x = t_.transfers[i];
            if (i > 0 && t_.transfers[i - 1].step != x.step) first.clear();
            p_.lead[i] = i;
            if (t_.transfer_ops[i] == own_op || in_order(x.channel)) continue;
            const auto [it, fresh] = first.try_emplace(std::uint64_t(t_.transfer_ops[i]) << 32 | idx(x.channel), i);
            if (!fresh) p_.lead[i] = it->second, pairs.emplace_back(it->second, i);
        }
        grouped(pairs, T, p_.op_off, p_.op_members);
    }

    /// (key, value) pairs with keys below n as CSR, each key's values in the pairs' order (a counting sort).
    static void grouped(const std::vector<std::pair<std::uint32_t, std::uint32_t>>& pairs, std::size_t n, std::vector<std::uint32_t>& off,
                        std::vector<std::uint32_t>& values) {
        off.assign(n + 1, 0);
        for (const auto& [k, v] : pairs) ++off[k + 1];
        for (std::size_t k = 0; k < n; ++k) off[k + 1] += off[k];
        values.resize(pairs.size());
        std::vector<std::uint32_t> fill(off.begin(), off.end() - 1);
        for (const auto& [k, v] : pairs) values[fill[k]++] = v;
    }

    /// A channel from a processor into a router that reduces or multicasts (program_order).
    bool in_order(ChannelId c) const {
        const Channel& ch = topo_.channel(c);
        if (!topo_.is_processor(ch.from) || topo_.is_processor(ch.to)) return false;
        const SwitchFunctions f = topo_.switch_functions(ch.to);
        return f.reduce || f.multicast;
    }

private:
    void poll(std::uint32_t i) const {
        if ((i & 0xffff) == 0xffff && deadline_.passed()) throw LimitReached("time limit (the timing plan)");
    }

    void index_arrivals() {
        for (std::uint32_t i = 0; i < t_.transfers.size(); ++i) {
            poll(i);
            const Transfer& x = t_.transfers[i];
            const Node to = topo_.channel(x.channel).to;
            ms_.for_each_part(x.message, [&](MessageId p) {
                if (!ms_.is_composite(p)) base_arrivals_.add(key(to, idx(p)), i);
                else if (!topo_.is_processor(to) && forwards_sums(to)) sum_arrivals_.add(key(to, idx(p)), i);
                if (auto v = value_set(ms_, p)) value_arrivals_.add(key(to, v->chunk), i);
            });
        }
        poll(0xffff);
        base_arrivals_.build();
        poll(0xffff);
        sum_arrivals_.build();
        poll(0xffff);
        value_arrivals_.build();
    }

    std::string describe(std::uint32_t i) const {
        const Transfer& x = t_.transfers[i];
        const Channel& c = topo_.channel(x.channel);
        return fmt::format("step {}, {}->{}, {}", x.step, topo_.node_name(c.from), topo_.node_name(c.to), ms_.name(x.message));
    }

    void add_conditions() {
        const std::uint32_t T = static_cast<std::uint32_t>(t_.transfers.size());
        p_.pending.assign(T, 0);
        Index notify;  // arrival -> transfer j (value j) or condition group g (value T + g)
        Index cut;     // arrival -> a departure that cuts through from it
        std::unordered_map<std::uint64_t, std::uint32_t> group_of;  // (sender, value) -> its group in this step, or none
        Step group_step = 0;
        // (sender, value) -> its latest group (or none) and where its scan of the arrivals stopped: a value sent
        // on in several steps (a sum sent through a router to one destination a step) waits in each for that
        // group and the arrivals since, not for every arrival again (K - 1 steps of K arrivals: 2K edges, not K^2)
        struct Latest {
            std::uint32_t group = none;
            std::size_t scanned = 0;
        };
        std::unordered_map<std::uint64_t, Latest> latest;
        std::vector<std::pair<std::uint32_t, std::uint32_t>> members;  // (group, transfer)
        base_taken_.assign(t_.model.replicate ? 0 : base_arrivals_.size(), Taken{});
        relayed_.assign(base_arrivals_.size(), 0);
        sum_taken_.assign(sum_arrivals_.size(), Taken{});
        for (std::uint32_t j = 0; j < T; ++j) {
            poll(j);
            const Transfer& x = t_.transfers[j];
            const Node u = topo_.channel(x.channel).from;
            const bool processor = topo_.is_processor(u);
            ms_.for_each_part(x.message, [&](MessageId p) {
                if (ms_.is_composite(p)) {
                    // a router that only forwards sends on the copy of this very sum it is matched with
                    if (!processor && forwards_sums(u) && takes_copy(sum_arrivals_, sum_taken_, u, key(u, idx(p)), x.step, j, notify, cut)) return;
                    auto v = value_set(ms_, p);
                    if (!v) return;
                    // the arrivals it waits for depend only on (sender, value, step): one condition group for
                    // every transfer of the same, found once (a value sent on to K - 1 others after K - 1
                    // arrivals: K - 1 edges instead of (K - 1)^2)
                    if (x.step != group_step) group_of.clear(), group_step = x.step;
                    auto [at, fresh] = group_of.try_emplace(key(u, idx(p)), none);
                    if (fresh) {
                        std::uint32_t n = 0;
                        const std::uint32_t g = static_cast<std::uint32_t>(p_.group_pending.size());
                        auto [first, last] = value_arrivals_.find(key(u, v->chunk));  // none: the sender's own value only
                        const auto before = latest.try_emplace(key(u, idx(p)), Latest{none, first}).first;
                        const std::uint32_t earlier = before->second.group;
                        if (earlier != none) ++n;  // that group, met (chain_next)
                        std::size_t pos = before->second.scanned;
                        for (; pos < last; ++pos) {
                            const std::uint32_t i = value_arrivals_.value(pos);
                            if (t_.transfers[i].step >= x.step) break;
                            bool fits = true;
                            ms_.for_each_part(t_.transfers[i].message, [&](MessageId q) {
                                auto w = value_set(ms_, q);
                                if (w && w->chunk == v->chunk && !subset(*w, *v)) fits = false;
                            });
                            if (!fits) continue;
                            notify.add(i, T + g);
                            ++n;
                        }
                        before->second.scanned = pos;
                        if (n > 0) {
                            at->second = g, p_.group_pending.push_back(n);
                            p_.chain_next.push_back(none);
                            if (earlier != none) p_.chain_next[earlier] = g;
                            before->second.group = g;
                        }
                    }
                    if (at->second == none) return;
                    members.emplace_back(at->second, j);
                    ++p_.pending[j];
                    return;
                }
                if (processor && ms_.origin(p) == u && t_.collective.initial(ms_, p)) return;
                auto [first, last] = base_arrivals_.find(key(u, idx(p)));
                if (first == last || t_.transfers[base_arrivals_.value(first)].step >= x.step)
                    throw InputError(fmt::format("cannot predict the time: the transfer in {} sends {}, which {} holds by no earlier step "
                                                 "(the table breaks causality; `collsched verify` says where)",
                                                 describe(j), ms_.name(p), topo_.node_name(u)));
                // a router that forwards copies sends on the one it is matched with; with none left (the table breaks
                // replication: `collsched verify` says where) from the first, as a router that keeps what it receives
                if (!processor && forwards_copies() && takes_copy(base_arrivals_, base_taken_, u, key(u, idx(p)), x.step, j, notify, cut)) return;
                if (processor && relays_copy(key(u, idx(p)), x.step, j, notify)) return;
                p_.waiters.add(key(u, idx(p)), j);
                ++p_.pending[j];
            });
        }
        poll(0xffff);
        p_.waiters.build();
        poll(0xffff);
        compress(notify, T, p_.notify_off, p_.notify);
        poll(0xffff);
        compress(cut, T, p_.cut_off, p_.cut);
        grouped(members, p_.group_pending.size(), p_.member_off, p_.members);  // each group's in transfer order
    }

    /// An index keyed by transfer as CSR.
    static void compress(Index& index, std::uint32_t T, std::vector<std::uint32_t>& off, std::vector<std::uint32_t>& values) {
        index.build();
        off.assign(T + 1, 0);
        values.reserve(index.size());
        for (std::size_t pos = 0; pos < index.size(); ++pos) {
            ++off[index.key(pos) + 1];
            values.push_back(index.value(pos));
        }
        for (std::uint32_t i = 0; i < T; ++i) off[i + 1] += off[i];
    }

    /// A channel from a processor into a router that reduces or multicasts carries the memory
    /// operations of the GPUs' programs (multimem.ld_reduce pulls each GPU's contribution when the
    /// owner's program reaches it, multimem.st pushes the owner's sum), so it serves its transfers
    /// in program order, the table's (step, then table order): each waits until the one before it
    /// on the channel has started (docs/time.md, "NVLS").
    void program_order() {
        const std::uint32_t T = static_cast<std::uint32_t>(t_.transfers.size());
        p_.next_in_order.assign(T, none);
        std::vector<std::uint32_t> last(topo_.channels().size(), none);
        for (std::uint32_t j = 0; j < T; ++j) {
            const ChannelId c = t_.transfers[j].channel;
            if (!in_order(c)) continue;
            std::uint32_t& before = last[idx(c)];
            if (before != none) {
                p_.next_in_order[before] = j;
                ++p_.pending[j];
            }
            before = j;
        }
    }

    static constexpr std::uint32_t none = std::numeric_limits<std::uint32_t>::max();

    /// Whether router u passes each copy it receives on once (replicate=no), so that a departure waits for
    /// the copy it forwards, not for the first to arrive (docs/time.md, "Routers and copies").
    bool forwards_copies() const { return !t_.model.replicate; }
    /// The same for sums, at a router that does not combine them (combine=routers, a switch that reduces:
    /// there a sum may be made of the partials that arrived, rule 1's value condition).
    bool forwards_sums(Node u) const { return forwards_copies() && !(t_.model.combine_routers && topo_.can_reduce(u)); }
    /// Whether u's departures of one step share one copy (multicast=routers, a switch that multicasts).
    bool shares_copies(Node u) const { return t_.model.multicast_routers && topo_.can_multicast(u); }

    /// The copies a router's departures of one message took so far, and the step of the last that took one.
    struct Taken {
        std::uint32_t n = 0;
        Step step = 0;  // none: steps start at 1
    };

    /// Departure j of step `step` from router u, which forwards copies: it waits for the copy the step
    /// semantics matches it with, the earliest not yet taken that arrived in an earlier step (first in, first
    /// out by step, then channel: `arrivals` holds each key's in that order, and the departures come in it,
    /// j); at a switch that multicasts, the departures of one step share the copy the first of them took. At a
    /// router that cuts through, j is made ready by the copy's start (`cut`), else by its arrival (`notify`).
    /// False when there is none left.
    bool takes_copy(const Index& arrivals, std::vector<Taken>& taken, Node u, std::uint64_t k, Step step, std::uint32_t j, Index& notify,
                    Index& cut) {
        auto [first, last] = arrivals.find(k);
        if (first == last) return false;
        Taken& t = taken[first];
        const std::size_t n = last - first;
        const std::size_t at = timing_internal::matched_copy(n, t.n, t.step, step, shares_copies(u),
                                                             [&](std::size_t r) { return t_.transfers[arrivals.value(first + r)].step; });
        if (at == n) return false;
        const std::uint32_t i = arrivals.value(first + at);
        (cuts_through(topo_, t_.model, u) ? cut : notify).add(i, j);
        ++p_.pending[j];
        return true;
    }

    /// Per key of an arrivals index, at the first position of its range (takes_copy).
    std::vector<Taken> base_taken_, sum_taken_;

    /// Departure j of step `step` of a base part from the processor of key k: a copy that arrived there after the first
    /// (in a later step than the first's) is relayed, passed on once by the processor's first departure of the part in a
    /// later step (NCCL's PXN: u -> d -> w forwards what came from u, not d's own copy; docs/time.md, "Asynchronous time",
    /// rule 1); each such copy in step order, the departures in table order. False when none is left for j: it waits for
    /// the first copy.
    bool relays_copy(std::uint64_t k, Step step, std::uint32_t j, Index& notify) {
        auto [first, last] = base_arrivals_.find(k);
        const std::size_t n = last - first;
        const std::size_t i = timing_internal::relayed_copy(n, relayed_[first], step, [&](std::size_t r) {
            return t_.transfers[base_arrivals_.value(first + r)].step;
        });
        if (i == n) return false;
        notify.add(base_arrivals_.value(first + i), j);
        ++p_.pending[j];
        return true;
    }
    /// Per key of base_arrivals_, at the first position of its range: the next copy to relay, within the range (relays_copy).
    std::vector<std::size_t> relayed_;

    /// Per transfer, the ranges of waiters its arrival may satisfy (its base parts at its receiver).
    void wakes() {
        const std::uint32_t T = static_cast<std::uint32_t>(t_.transfers.size());
        p_.wake_off.assign(T + 1, 0);
        for (std::uint32_t i = 0; i < T; ++i) {
            poll(i);
            const Transfer& x = t_.transfers[i];
            const Node v = topo_.channel(x.channel).to;
            ms_.for_each_part(x.message, [&](MessageId p) {
                if (ms_.is_composite(p)) return;
                auto [first, last] = p_.waiters.find(key(v, idx(p)));
                if (first < last) p_.wake.emplace_back(static_cast<std::uint32_t>(first), static_cast<std::uint32_t>(last));
            });
            p_.wake_off[i + 1] = static_cast<std::uint32_t>(p_.wake.size());
        }
    }

    const SendTable& t_;
    const Topology& topo_;
    Messages ms_;
    TimingPlan::Impl& p_;
    Deadline deadline_;
    Index base_arrivals_;   // (node, base part) -> transfers that bring it there
    Index value_arrivals_;  // (node, chunk) -> transfers that bring a value of that chunk there
    Index sum_arrivals_;    // (router, sum) -> transfers that bring that sum there (forwards_sums)
};

/// The asynchronous run at one size: the state of the event-driven simulation (docs/time.md).
class AsyncRun {
public:
    /// `each`: the times of every transfer and the busiest channel too (else only the run's end: `asynchronous`).
    AsyncRun(const TimingPlan::Impl& p, const TimeOptions& opt, TimePrediction& out, bool each)
        : p_(p), topo_(*p.topo), opt_(opt), out_(out), each_(each) {}

    /// False (and the run left unfinished) as soon as an event comes later than `above` (the launch included).
    bool run(double above = std::numeric_limits<double>::infinity());

private:
    void arrive(std::uint32_t i, double time, std::uint64_t seq);
    void arrive_one(std::uint32_t i, double time, std::uint64_t seq);
    void start(std::uint32_t j, double time);
    /// One arrival (or the earlier group of its sender and value) of condition group g at `time`: when it is
    /// the last, every member as if by the group's arrivals one by one (the latest time, this seq), and the
    /// group of the same sender and value in a later step.
    void met(std::uint32_t g, double time, std::uint64_t seq) {
        for (; g != std::numeric_limits<std::uint32_t>::max(); g = p_.chain_next[g]) {
            group_ready_[g] = std::max(group_ready_[g], time);
            if (--group_pending_[g] != 0) return;
            for (std::uint32_t m = p_.member_off[g]; m < p_.member_off[g + 1]; ++m) satisfied(p_.members[m], group_ready_[g], seq);
            time = group_ready_[g];
        }
    }

    /// One condition of transfer j met at `time` by the arrival (or, in program order, the start)
    /// of the transfer started `seq`-th. A predecessor's start may lie after the arrivals it is
    /// counted with, so j is ready at the latest of its conditions.
    void satisfied(std::uint32_t j, double time, std::uint64_t seq) {
        if (!p_.lead.empty()) j = p_.lead[j];  // an op starts for all its transfers
        ready_at_[j] = std::max(ready_at_[j], time);
        if (--pending_[j] == 0) ready_.push(event(ready_at_[j], seq, j));
    }

    /// At equal times every arrival first, then the transfers that became ready; among arrivals,
    /// and among ready transfers, in the order the transfers they come from started (ASTRA-sim's
    /// event queue runs the events of one time in the order they were scheduled), then in table
    /// order (the order of the nodes in a Chakra trace).
    struct Event {  // 16 bytes: the heaps move less and compare two fields
        double time;
        std::uint64_t key;  // seq << 32 | transfer (seq and transfers below 2^32); the kind is the queue's
        std::uint32_t transfer() const { return static_cast<std::uint32_t>(key); }
        std::uint64_t seq() const { return key >> 32; }
        /// Within one queue (one kind): by time, seq, transfer. Without branches: the times are never negative (nor
        /// NaN), and such doubles are ordered as their bits are.
        bool operator>(const Event& o) const {
            const std::uint64_t a = std::bit_cast<std::uint64_t>(time), b = std::bit_cast<std::uint64_t>(o.time);
            return (a > b) | ((a == b) & (key > o.key));
        }
    };
    static Event event(double time, std::uint64_t seq, std::uint32_t transfer) { return {time, seq << 32 | transfer}; }
    /// Across queues: by time, kind, seq, transfer.
    static bool later(const Event& x, int kx, const Event& y, int ky) {
        return x.time > y.time || (x.time == y.time && (kx > ky || (kx == ky && x.key > y.key)));
    }

    const TimingPlan::Impl& p_;
    const Topology& topo_;
    const TimeOptions& opt_;
    TimePrediction& out_;
    std::vector<std::uint32_t> pending_;
    std::vector<double> ready_at_;   // per transfer: the latest of its conditions met so far
    std::vector<double> floor_;      // per transfer: the latest arrival of a copy it cuts through from (0: none)
    std::vector<std::uint32_t> group_pending_;  // per condition group: arrivals still to come
    std::vector<double> group_ready_;           // and the latest so far
    std::vector<char> waiter_done_;  // per entry of the plan's waiters
    std::vector<LinkSpeed> speed_;   // per channel
    std::vector<double> group_bw_;   // per group
    std::vector<double> message_;    // per channel: the executor's hold per transfer beyond its bytes
    // per channel: the first of its connections' resources and how many (none: the message holds the channel)
    std::vector<std::pair<std::size_t, std::uint32_t>> connection_;
    double grain_ = 0;               // the executor's smallest transfer: a smaller one holds as long as this many bytes
    double rate_ = 0;                // the executor's rate a connection out of a GPU (bytes/s; 0: not bounded)
    double gpu_cap_ = 0;             // NCCL's per-GPU cap on the data a GPU sends (bytes/s; 0: none)
    // per channel: the hold of its sending GPU's proxy thread per transfer (MSCCL++'s port channels; 0: none)
    std::vector<double> proxy_;
    std::size_t proxy_base_ = 0;     // the first of the per-node proxy resources
    std::vector<std::pair<std::size_t, double>> use_;  // (resource, seconds held) of the transfer being started
    RadixQueue<Event> events_;  // arrivals (many: every started transfer's until it arrives)
    QuadHeap<Event> ready_;   // transfers made ready (few at a time: started soon after)
    std::vector<BusyList> busy_;  // per resource: channels, groups, ports
    std::uint64_t started_ = 0;
    bool each_ = true;
};

void AsyncRun::arrive(std::uint32_t i, double time, std::uint64_t seq) {
    arrive_one(i, time, seq);
    if (!p_.lead.empty())  // an op's transfers arrive together
        for (std::uint32_t k = p_.op_off[i]; k < p_.op_off[i + 1]; ++k) arrive_one(p_.op_members[k], time, seq);
}

void AsyncRun::arrive_one(std::uint32_t i, double time, std::uint64_t seq) {
    const Step s = p_.step[i];
    for (std::uint32_t w = p_.wake_off[i]; w < p_.wake_off[i + 1]; ++w)
        for (std::size_t pos = p_.wake[w].first; pos < p_.wake[w].second; ++pos) {
            const std::uint32_t j = p_.waiters.value(pos);
            if (!waiter_done_[pos] && p_.step[j] > s) {
                waiter_done_[pos] = 1;
                satisfied(j, time, seq);
            }
        }
    const std::uint32_t T = static_cast<std::uint32_t>(p_.step.size());
    for (std::uint32_t pos = p_.notify_off[i]; pos < p_.notify_off[i + 1]; ++pos) {
        const std::uint32_t x = p_.notify[pos];
        if (x < T) {
            satisfied(x, time, seq);
            continue;
        }
        met(x - T, time, seq);
    }
}

void AsyncRun::start(std::uint32_t j, double ready) {
    const ChannelId c = p_.channel[j];
    const Channel& ch = topo_.channel(c);
    // below the executor's grain a transfer holds its resources as one of the grain's bytes (executor.hpp)
    const double bytes = std::max(out_.chunk_bytes * p_.moved[j], grain_);
    const LinkSpeed sp = speed_[idx(c)];
    const std::size_t E = topo_.channels().size(), G = topo_.groups().size(), N = topo_.nodes();
    use_.clear();
    // one connection a channel: the message holds the channel beyond the bytes
    use_.emplace_back(idx(c), (connection_.empty() ? message_[idx(c)] : 0.0) + bytes / sp.bandwidth);
    for (std::uint32_t g : topo_.groups_of(c)) use_.emplace_back(E + g, bytes / group_bw_[g]);
    // NCCL's per-GPU cap (LL's llMaxBw): a resource of the sending GPU, held for the bytes at the cap (what a GPU receives
    // was capped at the GPU that sent it)
    if (gpu_cap_ > 0 && topo_.is_processor(ch.from)) use_.emplace_back(E + G + 2 * N + idx(ch.from), bytes / gpu_cap_);
    // several (NCCL's channels): the k-th transfer of its step on the channel runs on the k-th connection,
    // which it holds for the message beyond its bytes while the channel carries other connections' bytes
    double hold = connection_.empty() ? 0.0 : message_[idx(c)] + bytes / sp.bandwidth;
    // the executor's rate: out of a GPU, a connection (a thread block) moves its bytes at most this fast, whatever the
    // channel's free bandwidth; with one connection a channel, the channel is held as long
    if (rate_ > 0 && topo_.is_processor(ch.from)) {
        const double paced = message_[idx(c)] + bytes / rate_;
        hold = std::max(hold, paced);
        if (connection_.empty()) use_.front().second = std::max(use_.front().second, paced);
    }
    for (const auto& [r, d] : use_) hold = std::max(hold, d);
    if (!connection_.empty()) use_.emplace_back(connection_[idx(c)].first + p_.lane[j] % connection_[idx(c)].second, hold);
    // one proxy thread a GPU takes its port channels' triggers in turn, each for the proxy's hold (executor.hpp)
    if (!proxy_.empty() && proxy_[idx(c)] > 0) use_.emplace_back(proxy_base_ + idx(ch.from), proxy_[idx(c)]);
    if (p_.ports == Ports::single) {
        if (topo_.is_processor(ch.from)) use_.emplace_back(E + G + idx(ch.from), hold);
        if (topo_.is_processor(ch.to)) use_.emplace_back(E + G + N + idx(ch.to), hold);
    } else if (p_.ports == Ports::half) {
        if (topo_.is_processor(ch.from)) use_.emplace_back(E + G + idx(ch.from), hold);
        if (topo_.is_processor(ch.to)) use_.emplace_back(E + G + idx(ch.to), hold);
    }
    // the earliest time from `ready` on at which every resource is free for as long as it is held; cutting through a
    // router, its last byte (then its message) leaves no earlier than the copy it forwards arrived
    double begin = std::max(ready, floor_[j] + message_[idx(c)] - hold);
    for (bool moved = true; moved;) {
        moved = false;
        for (const auto& [r, d] : use_)
            if (double later = busy_[r].first_free(begin, d); later > begin) begin = later, moved = true;
    }
    for (const auto& [r, d] : use_) busy_[r].take(begin, begin + d, ready);
    const double end = begin + hold, arrive = end + sp.alpha;
    if (each_) out_.transfers[j] = TransferTime{ready, begin, end, arrive};
    events_.push(event(arrive, ++started_, j));
    // the departures that cut through from it (and from the other transfers of its op): ready once its first packet
    // is in (after its message, at the channel's speed), ending no earlier than it arrives
    const double head = begin + message_[idx(c)] + sp.alpha + std::min(bytes, router_packet_bytes) / sp.bandwidth;
    auto cut_through = [&](std::uint32_t i) {
        for (std::uint32_t pos = p_.cut_off[i]; pos < p_.cut_off[i + 1]; ++pos) {
            floor_[p_.cut[pos]] = std::max(floor_[p_.cut[pos]], arrive);
            satisfied(p_.cut[pos], head, started_);
        }
    };
    cut_through(j);
    if (!p_.lead.empty())
        for (std::uint32_t k = p_.op_off[j]; k < p_.op_off[j + 1]; ++k) {
            const std::uint32_t m = p_.op_members[k];
            if (each_) out_.transfers[m] = out_.transfers[j];
            ++started_;
            cut_through(m);
        }
    if (const std::uint32_t next = p_.next_in_order[j]; next != std::numeric_limits<std::uint32_t>::max()) satisfied(next, begin, started_);
}

bool AsyncRun::run(double above) {
    const std::uint32_t T = static_cast<std::uint32_t>(p_.step.size());
    if (each_) out_.transfers.assign(T, TransferTime{});
    gpu_cap_ = opt_.executor ? opt_.executor->caps.gpu : 0.0;
    std::size_t resources = topo_.channels().size() + topo_.groups().size() + (gpu_cap_ > 0 ? 3 : 2) * std::size_t{topo_.nodes()};
    speed_.resize(topo_.channels().size());
    for (std::uint32_t c = 0; c < speed_.size(); ++c) speed_[c] = channel_speed(topo_, ChannelId{c}, opt_);
    message_.assign(topo_.channels().size(), 0.0);
    grain_ = opt_.executor ? opt_.executor->grain : 0.0;
    rate_ = opt_.executor ? opt_.executor->rate : 0.0;
    if (opt_.executor)
        for (std::uint32_t c = 0; c < message_.size(); ++c) message_[c] = message_cost(topo_, ChannelId{c}, opt_);
    // the connections of each channel, when the executor runs more than one a channel (NCCL's channels)
    connection_.clear();
    if (const std::uint32_t most = opt_.executor ? connections_per_channel(*opt_.executor) : 1; most > 1) {
        connection_.resize(message_.size());
        for (std::uint32_t c = 0; c < message_.size(); ++c) {
            connection_[c] = {resources, std::clamp(p_.lanes[c], 1u, most)};
            resources += connection_[c].second;
        }
    }
    // one proxy thread a GPU (MSCCL++'s ProxyService): a resource per node, held by the transfers of network channels
    // out of it
    proxy_.clear();
    if (opt_.executor && opt_.executor->proxy > 0) {
        proxy_.assign(message_.size(), 0.0);
        for (std::uint32_t c = 0; c < message_.size(); ++c)
            if (topo_.is_processor(topo_.channel(ChannelId{c}).from) && link_class(topo_, ChannelId{c}, opt_) == LinkClass::network)
                proxy_[c] = opt_.executor->proxy;
        proxy_base_ = resources;
        resources += topo_.nodes();
    }
    busy_.assign(resources, BusyList{});
    group_bw_.resize(topo_.groups().size());
    for (std::uint32_t g = 0; g < group_bw_.size(); ++g) group_bw_[g] = group_speed(topo_, g, opt_);
    pending_ = p_.pending;
    ready_at_.assign(T, 0.0);
    floor_.assign(T, 0.0);
    group_pending_ = p_.group_pending;
    group_ready_.assign(group_pending_.size(), 0.0);
    waiter_done_.assign(p_.waiters.size(), 0);
    const double launch = opt_.executor ? opt_.executor->launch : 0.0;
    std::vector<Event> initial;
    for (std::uint32_t j = 0; j < T; ++j)
        if (pending_[j] == 0 && !p_.member(j)) initial.push_back(event(0.0, 0, j));
    // the transfers ready at time 0 are in event order already (by transfer): they wait in their own list; the
    // arrivals (many: every started transfer's) and the transfers made ready since (few) in two queues. The least of
    // the three fronts comes next: the same order as one queue of all, each queue smaller
    for (std::size_t next = 0, polls = 0; next < initial.size() || !events_.empty() || !ready_.empty();) {
        if ((++polls & 0x3fff) == 0 && opt_.deadline.passed()) throw LimitReached("time limit (a prediction)");
        const Event* least = next < initial.size() ? &initial[next] : nullptr;
        int kind = 1;  // 0 arrival, 1 ready
        if (!events_.empty() && (!least || later(*least, kind, events_.top(), 0))) least = &events_.top(), kind = 0;
        if (!ready_.empty() && (!least || later(*least, kind, ready_.top(), 1))) least = &ready_.top(), kind = 1;
        const Event e = *least;
        // the events come in order of time, and the run ends at an arrival no earlier than any of them
        if (e.time + launch > above) return false;
        if (next < initial.size() && least == &initial[next]) ++next;
        else if (kind == 0) events_.pop();
        else ready_.pop();
        if (kind == 0) {
            arrive(e.transfer(), e.time, e.seq());
            out_.asynchronous = std::max(out_.asynchronous, e.time);
        } else {
            start(e.transfer(), e.time);
        }
    }
    // every transfer waits only on transfers of earlier steps, so all of them run
    if (started_ != T) throw InputError("cannot predict the time: some transfers never hold their data (a bug in collsched)");
    if (opt_.executor) out_.asynchronous += opt_.executor->launch;  // the launch comes before the first transfer
    if (!each_) return true;
    std::vector<double> busy(topo_.channels().size(), 0.0);
    for (std::uint32_t j = 0; j < T; ++j)
        if (!p_.member(j)) busy[idx(p_.channel[j])] += out_.transfers[j].end - out_.transfers[j].start;
    for (std::uint32_t c = 0; c < busy.size(); ++c)
        if (busy[c] > out_.busiest_seconds) {
            out_.busiest_seconds = busy[c];
            out_.busiest = ChannelId{c};
        }
    return true;
}

/// Per step: the bytes on every channel and group; the step lasts max over its channels of
/// alpha_e + max(bytes_e / bandwidth_e, bytes_g / bandwidth_g for its groups g).
double sync_time(const TimingPlan::Impl& p, const TimeOptions& opt, std::vector<double>* step_seconds) {
    const Topology& topo = *p.topo;
    const double chunk = datum_bytes(p.kind, topo.processors(), opt.size) / p.chunks;
    std::vector<double> chan(topo.channels().size(), 0.0), group(topo.groups().size(), 0.0);
    std::vector<std::uint32_t> used, count(opt.executor ? topo.channels().size() : 0, 0);
    // the executor's rate: per channel out of a GPU the step's largest transfer, which its connection moves at the rate
    const double rate = opt.executor ? opt.executor->rate : 0.0;
    std::vector<double> largest(rate > 0 ? topo.channels().size() : 0, 0.0);
    // NCCL's per-GPU cap (LL's llMaxBw): per processor the step's bytes sent
    const double cap = opt.executor ? opt.executor->caps.gpu : 0.0;
    std::vector<double> sent(cap > 0 ? topo.nodes() : 0, 0.0);
    const std::uint32_t connections = opt.executor ? connections_per_channel(*opt.executor) : 1;
    // MSCCL++'s proxy: per processor the step's transfers on its network channels, each its turn on the one thread
    const double proxy = opt.executor ? opt.executor->proxy : 0.0;
    std::vector<std::uint32_t> triggers(proxy > 0 ? topo.nodes() : 0, 0);
    auto proxied = [&](std::uint32_t c) {
        return proxy > 0 && topo.is_processor(topo.channel(ChannelId{c}).from) && link_class(topo, ChannelId{c}, opt) == LinkClass::network;
    };
    double total = 0;
    if (step_seconds) step_seconds->assign(p.steps, 0.0);
    for (std::size_t i = 0; i < p.step.size();) {
        const Step s = p.step[i];
        used.clear();
        for (; i < p.step.size() && p.step[i] == s; ++i) {
            if (p.member(i)) continue;  // its op's first transfer moves its bytes
            const std::uint32_t c = idx(p.channel[i]);
            const double bytes = std::max(chunk * p.moved[i], opt.executor ? opt.executor->grain : 0.0);
            if (chan[c] == 0) used.push_back(c);
            chan[c] += bytes;
            if (opt.executor) ++count[c];
            if (rate > 0) largest[c] = std::max(largest[c], bytes);
            if (cap > 0) sent[idx(topo.channel(p.channel[i]).from)] += bytes;
            if (proxied(c)) ++triggers[idx(topo.channel(p.channel[i]).from)];
            for (std::uint32_t g : topo.groups_of(p.channel[i])) group[g] += bytes;
        }
        double longest = 0;
        for (std::uint32_t c : used) {
            const LinkSpeed sp = channel_speed(topo, ChannelId{c}, opt);
            double d = chan[c] / sp.bandwidth;
            // the step's transfers on c spread over its connections (one, or NCCL's channels), each paying its
            // messages in turn beyond the channel's bytes
            const double turns = opt.executor ? std::ceil(double(count[c]) / connections) : 0.0;
            const double message = opt.executor ? message_cost(topo, ChannelId{c}, opt) : 0.0;
            d += turns * message;
            // each connection's turns at the rate (a connection's transfers are taken as long as the step's largest)
            if (rate > 0 && topo.is_processor(topo.channel(ChannelId{c}).from)) d = std::max(d, turns * (message + largest[c] / rate));
            for (std::uint32_t g : topo.groups_of(ChannelId{c})) d = std::max(d, group[g] / group_speed(topo, g, opt));
            if (cap > 0 && topo.is_processor(topo.channel(ChannelId{c}).from)) d = std::max(d, sent[idx(topo.channel(ChannelId{c}).from)] / cap);
            if (proxied(c)) d = std::max(d, triggers[idx(topo.channel(ChannelId{c}).from)] * proxy);
            longest = std::max(longest, sp.alpha + d);
        }
        for (std::uint32_t c : used) {
            chan[c] = 0;
            if (opt.executor) count[c] = 0;
            if (rate > 0) largest[c] = 0;
            if (cap > 0) sent[idx(topo.channel(ChannelId{c}).from)] = 0;
            if (proxied(c)) triggers[idx(topo.channel(ChannelId{c}).from)] = 0;
            for (std::uint32_t g : topo.groups_of(ChannelId{c})) group[g] = 0;
        }
        if (step_seconds) (*step_seconds)[s - 1] = longest;
        total += longest;
    }
    return total + (opt.executor ? opt.executor->launch : 0.0);  // the launch comes before the first step
}

}  // namespace

TimingPlan::TimingPlan(const SendTable& t, Deadline deadline) {
    COLLSCHED_ASSERT(t.is_sorted());
    auto p = std::make_shared<Impl>();
    PlanBuilder(t, *p, deadline).build();
    impl_ = std::move(p);
}

namespace {

/// The asynchronous run at `given` (and the synchronous pass too when `both`).
/// The prediction (both kinds, or the asynchronous only); a run sure to end after `above` stops there, its time +inf.
TimePrediction predict_with(const TimingPlan::Impl& plan, const TimeOptions& given, bool both,
                            double above = std::numeric_limits<double>::infinity()) {
    const TimeOptions opt = with_network_class(*plan.topo, given);
    TimePrediction p;
    p.size = opt.size;
    p.datum_bytes = datum_bytes(plan.kind, plan.topo->processors(), opt.size);
    p.chunk_bytes = p.datum_bytes / plan.chunks;
    if (both) p.synchronous = sync_time(plan, opt, &p.step_seconds);
    if (!AsyncRun(plan, opt, p, both).run(above)) p.asynchronous = std::numeric_limits<double>::infinity();
    return p;
}

}  // namespace

TimePrediction TimingPlan::predict(const TimeOptions& given) const { return predict_with(*impl_, given, true); }

double TimingPlan::synchronous(const TimeOptions& given) const { return sync_time(*impl_, with_network_class(*impl_->topo, given), nullptr); }

double TimingPlan::asynchronous(const TimeOptions& given) const { return predict_with(*impl_, given, false).asynchronous; }

double TimingPlan::asynchronous(const TimeOptions& given, double above) const { return predict_with(*impl_, given, false, above).asynchronous; }

std::size_t TimingPlan::transfers() const { return impl_->step.size(); }

double synchronous_time(const SendTable& t, const TimeOptions& given, std::vector<double>* step_seconds) {
    // the plan's conditions are not needed: only steps, channels and chunks moved
    TimingPlan::Impl p;
    p.topo = t.topology;
    p.kind = t.collective.kind;
    p.chunks = t.collective.chunks;
    p.steps = t.steps();
    const Messages ms = t.messages();
    p.step.reserve(t.transfers.size());
    for (const Transfer& x : t.transfers) {
        p.step.push_back(x.step);
        p.channel.push_back(x.channel);
        p.moved.push_back(ms.part_count(x.message));
    }
    return sync_time(p, with_network_class(*t.topology, given), step_seconds);
}

TimePrediction predict_time(const SendTable& t, const TimeOptions& opt) { return TimingPlan(t).predict(opt); }

}  // namespace collsched
