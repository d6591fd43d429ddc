// The round loop of `wormhole` timing.
#include "runtime/sim_replay.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "support/assert.hpp"
#include "support/error.hpp"
#include "compiler/table/step_runs.hpp"
#include <numeric>

namespace collsched::sim {

// `wormhole` timing: within a round a message may travel a whole path. A transfer is legal
// when its sender held the message at the end of the previous round or receives it in this
// round through a legal transfer, so legality is a reachability fixpoint per round: the round's
// transfers are ordered by source slot, every transfer whose source is ready fires, and each
// slot that gains the message (or, for a replicate=no router, a copy) wakes the transfers
// leaving it. Whatever never fires is the violation.
bool Simulator::run_wormhole() {
    return for_each_step_run(tr_, [&](Step r, std::size_t b, std::size_t e) {
        StepFaults f = check_step(b, e, r);
        if (f.capacity != no_index) return halt(capacity_violation(f.capacity, r));
        if (f.group != never) return halt(group_violation(f.group, b, e, r));
        if (f.ports != never) return halt(ports_violation(f.ports, b, e, r));
        if (f.injection != no_index) return halt(injection_violation(f.injection, r));
        std::size_t bad = propagate_round(b, e, r);
        if (bad != no_index) {
            SimViolation v = causality_violation(bad, r);
            for (std::uint32_t slot : round_gains_) held_[slot] = never;  // the round does not happen
            return halt(std::move(v));
        }
        commit(b, e, r);
        if (combine_fault_) return halt(std::move(*combine_fault_));
        // Routers do not store between rounds: a worm passes through within its round.
        for (std::size_t i = b; i < e; ++i) {
            const Channel& ch = channel_of(i);
            for (auto [slot, v] : {std::pair(slots_[i].src, idx(ch.from)), std::pair(slots_[i].dst, idx(ch.to))}) {
                if (processor(v)) continue;
                held_[slot] = never;
                if (!replicate_) stock_[slot] = 0;
            }
        }
        return true;
    });
}

std::size_t Simulator::propagate_round(std::size_t b, std::size_t e, Step r) {
    const auto n = static_cast<std::uint32_t>(e - b);
    order_.resize(n);
    std::iota(order_.begin(), order_.end(), 0u);
    std::sort(order_.begin(), order_.end(), [&](std::uint32_t x, std::uint32_t y) {
        return std::pair(slots_[b + x].src, x) < std::pair(slots_[b + y].src, y);
    });
    legal_.assign(n, 0);
    worklist_.clear();
    round_gains_.clear();
    auto attempt = [&](std::uint32_t k) {
        const std::size_t i = b + k;
        const std::uint32_t src = slots_[i].src;
        const Channel& ch = channel_of(i);
        if (have_ && processor(idx(ch.from))) {
            if (held_[src] != r && !have_->holds(idx(ch.from), tr_[i].message)) return;  // held before, or passing through
        } else {
            // A router's departure is legal once the router received the message in the round;
            // with replicate=no the copies are counted after the fixpoint (below), so which
            // departure takes which copy does not depend on the order they are tried in.
            if (held_[src] > r) return;
        }
        legal_[k] = 1;
        const std::uint32_t dst = slots_[i].dst;
        bool gained = false;
        if (!processor(idx(ch.to)) && !replicate_) {
            ++stock_[dst];
            gained = true;
        }
        if (held_[dst] > r) {
            held_[dst] = r;
            round_gains_.push_back(dst);
            gained = true;
        }
        if (gained) worklist_.push_back(dst);
    };
    for (std::uint32_t k : order_) attempt(k);
    while (!worklist_.empty()) {
        const std::uint32_t slot = worklist_.back();
        worklist_.pop_back();
        auto first = std::lower_bound(order_.begin(), order_.end(), slot,
                                      [&](std::uint32_t k, std::uint32_t x) { return slots_[b + k].src < x; });
        for (auto it = first; it != order_.end() && slots_[b + *it].src == slot; ++it)
            if (!legal_[*it]) attempt(*it);
    }
    // replicate=no: a router passes on at most as many copies of a message as it receives in
    // the round (docs/semantics.md). stock_ now holds the legal arrivals of each router slot;
    // the legal departures take them in table order, and the first one left without a copy
    // is the replication violation. It comes first: the hops downstream of an extra copy are
    // legal (the router did receive the message), as in the direct checker.
    if (!replicate_)
        for (std::uint32_t k = 0; k < n; ++k) {
            if (!legal_[k] || processor(idx(channel_of(b + k).from))) continue;
            const std::uint32_t src = slots_[b + k].src;
            if (stock_[src] == 0) return b + k;
            --stock_[src];
        }
    for (std::uint32_t k = 0; k < n; ++k)
        if (!legal_[k]) return b + k;
    return no_index;
}

}  // namespace collsched::sim
