// The step loop of `hop` timing: phase 1 checks a step, phase 2 commits it, the queue rule is
// checked at the boundaries between steps; the trace line of a step.
#include "runtime/sim_replay.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "support/assert.hpp"
#include "support/error.hpp"

#include "compiler/table/partials.hpp"
#include "compiler/table/step_runs.hpp"

namespace collsched::sim {

/// combine=routers (docs/semantics.md, "Reductions"), this witness's own reading: router u
/// sends the partial of transfer i without a copy of it. Its inputs are the partials of the
/// same chunk that u has copies of and that lie inside it; when their contributor sets are
/// pairwise disjoint and cover it exactly, one copy of each is taken (they leave the router's
/// queue now) and the send is legal.
bool Simulator::combine_at_router(std::size_t i, std::uint32_t u) {
    if (!have_) return false;
    auto px = partial_of(msgs_, tr_[i].message);
    if (!px) return false;
    auto list = router_partials_.find((std::uint64_t{u} << 32) | px->chunk);
    if (list == router_partials_.end()) return false;
    std::vector<std::uint32_t> cover(px->sources.size(), 0);  // per source of X: inputs that hold it
    std::vector<std::uint32_t> inputs;
    for (const auto& [slot, sources] : list->second) {
        if (stock_[slot] == 0) continue;
        bool inside = true;
        for (std::uint32_t src : sources) {
            auto at = std::lower_bound(px->sources.begin(), px->sources.end(), src);
            inside = inside && at != px->sources.end() && *at == src;
        }
        if (!inside) continue;
        inputs.push_back(slot);
        for (std::uint32_t src : sources) ++cover[std::lower_bound(px->sources.begin(), px->sources.end(), src) - px->sources.begin()];
    }
    if (inputs.empty() || std::any_of(cover.begin(), cover.end(), [](std::uint32_t c) { return c != 1; })) return false;
    for (std::uint32_t slot : inputs) {
        --stock_[slot];
        --waiting_[u - P_];
    }
    touch_router(u - P_);
    return true;
}

// Phase 1 of step s: checks capacity and ports for [b, e) and, under `hop` timing, whether each
// sender has the message at the end of step s-1. Router departures (replicate=no) take a copy
// from the router's stock and its waiting count here; arrivals of step s are applied only in
// commit(), so nothing received in step s can be sent on in step s.
StepFaults Simulator::check_step(std::size_t b, std::size_t e, Step s) {
    StepFaults f;
    const bool ports = model_.ports != Ports::multi, none_sends = replicate_ && queues_none();
    r_ = table_.rounds(s);  // a step of r rounds: r times every capacity and port limit
    const auto& groups = topo_.groups();
    if (!groups.empty()) group_load_.assign(groups.size(), 0);
    std::size_t run = b;
    for (std::size_t i = b; i < e; ++i) {
        const Channel& ch = channel_of(i);
        if (i + 1 == e || tr_[i + 1].channel != tr_[i].channel) {
            if (i + 1 - run > std::uint64_t{ch.cap} * r_ && f.capacity == no_index) f.capacity = run;
            run = i + 1;
        }
        if (!groups.empty())
            for (std::uint32_t g : topo_.groups_of(tr_[i].channel))
                if (++group_load_[g] > std::uint64_t{groups[g].cap} * r_) f.group = std::min(f.group, g);
        const std::uint32_t u = idx(ch.from), v = idx(ch.to);
        if (ports) {
            if (processor(u)) count_port(u, s, true, f);
            if (processor(v)) count_port(v, s, false, f);
        }
        if (model_.inject_once && f.injection == no_index) {
            const MessageId m = tr_[i].message;
            if (table_.collective.initial(msgs_, m)) {
                const Node o = msgs_.origin(m);
                if (o != Node{u}) {  // every other transfer moves the datum away from its source
                    if (topo_.distance(o, Node{v}) != topo_.distance(o, Node{u}) + 1) f.injection = i;
                } else if (!injected_.try_emplace(idx(m), s, tr_[i].channel).second) {
                    f.injection = i;
                }
            }
        }
        if (wormhole_) continue;
        const std::uint32_t src = slots_[i].src;
        if (have_ && processor(u)) {
            if (!have_->holds(u, tr_[i].message) && f.causality == no_index) f.causality = i;
        } else if (processor(u) || replicate_) {
            if (held_[src] >= s) {
                if (f.causality == no_index) f.causality = i;
            } else if (none_sends && !processor(u) && last_arrival_[src] != s - 1 && f.queue_send == no_index) {
                f.queue_send = i;
            }
        } else if (!took_.empty() && took_[src] == s && topo_.can_multicast(Node{u})) {
            // multicast=routers: this send shares the copy an earlier send of step s took
        } else if (stock_[src] > 0) {
            --stock_[src];
            --waiting_[u - P_];
            touch_router(u - P_);
            if (!took_.empty()) took_[src] = s;
        } else if (model_.combine_routers && topo_.can_reduce(Node{u}) && combine_at_router(i, u)) {
            // in-network reduction: the inputs' copies were taken from the router's stock
            if (!took_.empty()) took_[src] = s;
        } else {
            if (f.causality == no_index) f.causality = i;
            // A queue bound counts every departure, matched to a copy or not (docs/semantics.md):
            // the count is A_r(<= b) - D_r(<= b+1) over the table's transfers.
            if (model_.queues == QueueKind::bounded) {
                --waiting_[u - P_];
                touch_router(u - P_);
            }
        }
    }
    return f;
}

// Phase 2 of step s: the transfers of [b, e) arrive; statistics and trace.
void Simulator::commit(std::size_t b, std::size_t e, Step s) {
    const bool track_last = !last_arrival_.empty();
    for (std::size_t i = b; i < e; ++i) {
        const std::uint32_t v = idx(channel_of(i).to);
        if (!wormhole_) {
            const std::uint32_t dst = slots_[i].dst;
            if (held_[dst] > s) held_[dst] = s;
            if (!processor(v)) {
                if (!replicate_) {
                    ++stock_[dst];
                    ++waiting_[v - P_];
                    touch_router(v - P_);
                }
                if (track_last) last_arrival_[dst] = s;
            }
        }
        if (have_ && processor(v))
            if (auto twice = have_->receive(v, tr_[i].message); twice && !combine_fault_) {
                SimViolation x;
                x.rule = SimRule::causality;
                x.step = s;
                x.node = Node{v};
                x.channel = tr_[i].channel;
                x.messages = {tr_[i].message};
                x.message = fmt::format("{} {}: {} receives {} on {} while its buffer holds {}", unit(), s, node_label(v),
                                        msgs_.name(tr_[i].message), channel_name(tr_[i].channel), *twice);
                combine_fault_ = std::move(x);
            }
        if (processor(v) && recv_stamp_[v] != s) {
            recv_stamp_[v] = s;
            ++recv_steps_[v];
        }
        ++rep_.channel_transfers[idx(tr_[i].channel)];
    }
    rep_.transfers_replayed += e - b;
    if (options_.trace) trace_step(b, e, s);
}

// The waiting counts of the routers touched since the last boundary are final for `boundary`
// (arrivals up to `boundary`, departures up to `boundary + 1`): fold them into the high-water
// marks and check the queue rule. Routers not touched keep a count already checked.
std::optional<SimViolation> Simulator::check_boundary(Step boundary) {
    if (replicate_)
        for (; next_event_ < events_.size() && events_[next_event_].boundary <= boundary; ++next_event_) {
            waiting_[events_[next_event_].router] += events_[next_event_].delta;
            touch_router(events_[next_event_].router);
        }
    std::uint32_t bad = never;
    for (std::uint32_t r : touched_) {
        const std::int64_t w = waiting_[r];  // negative only after a departure without a copy (bounded queues)
        COLLSCHED_ASSERT(w >= 0 || model_.queues == QueueKind::bounded);
        rep_.router_high_water[r] = std::max(rep_.router_high_water[r], static_cast<std::uint32_t>(std::max<std::int64_t>(w, 0)));
        bool over = model_.queues == QueueKind::bounded ? w > model_.queue_bound
                                                        : model_.queues == QueueKind::none && !replicate_ && w > 0;
        if (over) bad = std::min(bad, r);
    }
    touched_.clear();
    ++gen_;
    if (bad == never) return std::nullopt;
    return queue_violation(boundary, bad);
}

bool Simulator::halt(SimViolation v) {
    rep_.status = SimStatus::halted;
    // A bounded-queue violation is at the boundary after its step: steps 1..s are complete.
    rep_.simulated_steps = v.rule == SimRule::queues && model_.queues == QueueKind::bounded ? v.step : v.step - 1;
    rep_.violation = std::move(v);
    return false;
}

// `hop` timing. For every step that has transfers: the boundary after the previous step when
// steps without transfers lie between (nothing leaves in them), phase 1, the boundary before
// this step, then the first violation in the order boundary (bounded queues), capacity, ports,
// causality/replication, queues=none; then phase 2.
bool Simulator::run_hop() {
    return for_each_step_run(tr_, [&](Step s, std::size_t b, std::size_t e) { return hop_step(b, e, s); }) && hop_end();
}

/// Step s of a `hop` run: the transfers [b, e) of tr_. False when the run halts.
bool Simulator::hop_step(std::size_t b, std::size_t e, Step s) {
    if (prev_ != 0 && s > prev_ + 1)
        if (auto v = check_boundary(prev_)) return halt(std::move(*v));
    StepFaults f = check_step(b, e, s);
    std::optional<SimViolation> qv;
    if (s >= 2) qv = check_boundary(s - 1);
    if (qv && qv->step < s) return halt(std::move(*qv));
    if (f.capacity != no_index) return halt(capacity_violation(f.capacity, s));
    if (f.group != never) return halt(group_violation(f.group, b, e, s));
    if (f.ports != never) return halt(ports_violation(f.ports, b, e, s));
    if (f.causality != no_index) return halt(causality_violation(f.causality, s));
    if (f.injection != no_index) return halt(injection_violation(f.injection, s));
    if (qv) return halt(std::move(*qv));
    if (f.queue_send != no_index) return halt(queue_send_violation(f.queue_send, s));
    commit(b, e, s);
    if (combine_fault_) return halt(std::move(*combine_fault_));
    prev_ = s;
    return true;
}

/// After the last step of a `hop` run. queues=none: a copy that entered a router in the last
/// step would have to leave in the step after it, which the table does not have.
bool Simulator::hop_end() {
    if (queues_none() && !replicate_ && prev_ != 0)
        if (auto v = check_boundary(prev_)) return halt(std::move(*v));
    return true;
}

void Simulator::trace_step(std::size_t b, std::size_t e, Step s) {
    std::string line = fmt::format("{} {}:", unit(), s);
    for (std::size_t i = b; i < e; ++i) {
        const Channel& ch = channel_of(i);
        line += fmt::format("{} {}->{} {}", i == b ? "" : ",", names_[idx(ch.from)], names_[idx(ch.to)],
                            msgs_.name(tr_[i].message));
    }
    rep_.trace.push_back(std::move(line));
}

}  // namespace collsched::sim
