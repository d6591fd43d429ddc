// The replay's start: the table loaded and checked, the slots assigned, the state allocated
// (the class comment in sim_replay.hpp says what a slot is).
#include "runtime/sim_replay.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "support/assert.hpp"
#include "support/error.hpp"
#include <numeric>
#include <tuple>
#include <unordered_set>

#include "compiler/table/partials.hpp"

namespace collsched::sim {

Simulator::Simulator(const SendTable& table, const SimOptions& options)
    : table_(table),
      topo_(*table.topology),
      model_(table.model),
      msgs_(table.messages()),
      options_(options),
      P_(topo_.processors()),
      R_(topo_.routers()),
      wormhole_(table.model.timing == Timing::wormhole),
      replicate_(table.model.replicate) {
    if (table.has_composites() || table.collective.combines() || table.collective.reduces())
        have_.emplace(table, msgs_, P_, table_chunks(table), uses_partials(table));
}

SimReport Simulator::run() {
    load_transfers();
    rep_.transfers = tr_.size();
    rep_.steps = tr_.empty() ? 0 : tr_.back().step;
    rep_.wormhole = wormhole_;
    rep_.queues_apply = !wormhole_;
    rep_.cost = table_cost(table_);  // wormhole: payloads of bundles count
    assign_slots();
    allocate_state();
    if (options_.trace) {
        names_.reserve(topo_.nodes());
        for (std::uint32_t v = 0; v < topo_.nodes(); ++v) names_.push_back(topo_.node_name(Node{v}));
    }
    bool ran_through = wormhole_ ? run_wormhole() : run_hop();
    finish(ran_through);
    return std::move(rep_);
}

void Simulator::load_transfers() {
    const std::uint64_t C = topo_.channels().size(), M = msgs_.size();
    const auto& all = table_.transfers;
    if (all.size() >= never)
        throw InputError(fmt::format("the table has {} transfers; the simulator replays at most {}", all.size(), never - 1));
    bool sorted = true;
    for (std::size_t i = 0; i < all.size(); ++i) {
        const Transfer& t = all[i];
        if (t.step < 1) throw InputError(fmt::format("transfers[{}]: step {} is below 1 (steps are numbered from 1)", i, t.step));
        if (t.step >= never - 2) throw InputError(fmt::format("transfers[{}]: step {} is too large", i, t.step));
        if (idx(t.channel) >= C)
            throw InputError(fmt::format("transfers[{}] (step {}): channel id {} does not exist in {} ({} channels)", i,
                                         t.step, idx(t.channel), topo_.spec(), C));
        if (idx(t.message) >= M)
            throw InputError(fmt::format("transfers[{}] (step {}): message id {} does not exist ({} messages)", i, t.step,
                                         idx(t.message), M));
        if (i > 0 && t < all[i - 1]) sorted = false;
    }
    if (sorted) {
        tr_ = all;
    } else {
        sorted_copy_ = all;
        std::sort(sorted_copy_.begin(), sorted_copy_.end());
        tr_ = sorted_copy_;
    }
}

// Assigns the slots (see the class comment). The bucketing keeps the transfers of one message in
// table order, so the first arrival and last send of a router slot (for replicate=yes queue
// residence) fall out of the same pass.
void Simulator::assign_slots() {
    const std::size_t N = tr_.size();
    const std::uint64_t M = msgs_.size();
    dense_ = M <= (std::uint64_t{1} << 22) || M <= 2 * std::uint64_t{N};
    if (!dense_) {
        uniq_.reserve(N);
        for (const Transfer& t : tr_) uniq_.push_back(idx(t.message));
        std::sort(uniq_.begin(), uniq_.end());
        uniq_.erase(std::unique(uniq_.begin(), uniq_.end()), uniq_.end());
        uniq_.shrink_to_fit();
    }
    const std::uint32_t U = bucket_count();
    // Counting sort by bucket; afterwards end[b] is the end of bucket b, which starts at end[b-1].
    std::vector<std::uint32_t> end(std::size_t{U} + 1, 0);
    for (const Transfer& t : tr_) ++end[bucket(t.message) + 1];
    std::partial_sum(end.begin(), end.end(), end.begin());
    // The bucketed copy keeps the channel next to the index, so the pass over the buckets reads
    // it in sequence instead of going back to the table.
    struct Entry {
        std::uint32_t index;
        ChannelId channel;
    };
    std::vector<Entry> by_msg(N);
    for (std::size_t i = 0; i < N; ++i)
        by_msg[end[bucket(tr_[i].message)]++] = {static_cast<std::uint32_t>(i), tr_[i].channel};

    const bool residence = replicate_ && !wormhole_;
    slot_begin_.assign(std::size_t{U} + 1, 0);
    slot_node_.reserve(N + std::min<std::size_t>(U, N) + 1);
    held_.reserve(slot_node_.capacity());
    slots_.resize(N);
    std::vector<std::uint32_t> nodes, first_arrival, last_send;
    std::vector<std::uint32_t> local_of(topo_.nodes());  // node -> its index in `nodes`, for the current bucket
    std::uint64_t S = 0;
    for (std::uint32_t b = 0; b < U; ++b) {
        slot_begin_[b] = static_cast<std::uint32_t>(S);
        const std::uint32_t lo = b == 0 ? 0 : end[b - 1], hi = end[b];
        if (lo == hi) continue;  // not in the table: answered from the initial data
        const MessageId m = bucket_message(b);
        nodes.clear();
        for (std::uint32_t k = lo; k < hi; ++k) {
            const Channel& ch = topo_.channel(by_msg[k].channel);
            nodes.push_back(idx(ch.from));
            nodes.push_back(idx(ch.to));
        }
        const bool initial = table_.collective.initial(msgs_, m);
        if (initial) nodes.push_back(idx(msgs_.origin(m)));
        std::sort(nodes.begin(), nodes.end());
        nodes.erase(std::unique(nodes.begin(), nodes.end()), nodes.end());
        for (std::uint32_t j = 0; j < nodes.size(); ++j) local_of[nodes[j]] = j;
        auto local = [&](Node v) { return local_of[idx(v)]; };
        for (std::uint32_t v : nodes) {
            slot_node_.push_back(v);
            held_.push_back(never);
        }
        if (initial) held_[S + local(msgs_.origin(m))] = 0;
        if (residence) {
            first_arrival.assign(nodes.size(), never);
            last_send.assign(nodes.size(), 0);
        }
        for (std::uint32_t k = lo; k < hi; ++k) {
            const std::uint32_t i = by_msg[k].index;
            const Channel& ch = topo_.channel(by_msg[k].channel);
            const std::uint32_t a = local(ch.from), z = local(ch.to);
            slots_[i] = {static_cast<std::uint32_t>(S + a), static_cast<std::uint32_t>(S + z)};
            if (residence) {
                first_arrival[z] = std::min(first_arrival[z], tr_[i].step);
                last_send[a] = std::max(last_send[a], tr_[i].step);
            }
        }
        if (residence)
            for (std::size_t j = 0; j < nodes.size(); ++j)
                if (!processor(nodes[j]) && first_arrival[j] != never && last_send[j] >= first_arrival[j] + 2) {
                    events_.push_back({first_arrival[j], nodes[j] - P_, +1});
                    events_.push_back({last_send[j] - 1, nodes[j] - P_, -1});
                }
        S += nodes.size();
        if (S >= never) throw InputError(fmt::format("the table touches more than {} (node, message) pairs; too large to simulate", never - 1));
    }
    slot_begin_[U] = static_cast<std::uint32_t>(S);
    std::sort(events_.begin(), events_.end(), [](const QueueEvent& x, const QueueEvent& y) {
        return std::tie(x.boundary, x.router, x.delta) < std::tie(y.boundary, y.router, y.delta);
    });
}

void Simulator::allocate_state() {
    const std::size_t S = slot_node_.size();
    if (model_.combine_routers && have_) {  // per (router, chunk): the router slots of partials
        std::unordered_set<std::uint32_t> seen;
        for (std::size_t i = 0; i < tr_.size(); ++i) {
            const std::uint32_t v = idx(channel_of(i).to);
            if (processor(v) || !seen.insert(slots_[i].dst).second) continue;
            if (auto pv = partial_of(msgs_, tr_[i].message))
                router_partials_[(std::uint64_t{v} << 32) | pv->chunk].emplace_back(slots_[i].dst, pv->sources);
        }
    }
    if (!replicate_) stock_.assign(S, 0);
    if (!replicate_ && model_.multicast_routers) took_.assign(S, 0);
    if (replicate_ && queues_none() && !wormhole_) last_arrival_.assign(S, never);
    waiting_.assign(R_, 0);
    touch_gen_.assign(R_, 0);
    rep_.router_high_water.assign(R_, 0);
    port_stamp_.assign(P_, 0);
    sends_.assign(P_, 0);
    recvs_.assign(P_, 0);
    recv_stamp_.assign(P_, 0);
    recv_steps_.assign(P_, 0);
    rep_.channel_transfers.assign(topo_.channels().size(), 0);
}

}  // namespace collsched::sim
