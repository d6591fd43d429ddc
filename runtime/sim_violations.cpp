// The messages of broken rules: one sentence per rule, naming the step, the node or channel and
// the messages. Error paths: plain scans of the table are fine.
#include "runtime/sim_replay.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "support/assert.hpp"
#include "support/error.hpp"
#include <map>

namespace collsched::sim {

std::string Simulator::node_label(std::uint32_t v) const {
    return fmt::format("{} {}", processor(v) ? "processor" : "router", topo_.node_name(Node{v}));
}

std::string Simulator::channel_name(ChannelId c) const {
    const Channel& ch = topo_.channel(c);
    return fmt::format("{}->{}", topo_.node_name(ch.from), topo_.node_name(ch.to));
}

std::string Simulator::message_list(std::span<const MessageId> ms) const {
    std::string out;
    for (std::size_t i = 0; i < ms.size() && i < listed_in_message; ++i) out += fmt::format("{}{}", i ? ", " : "", msgs_.name(ms[i]));
    if (ms.size() > listed_in_message) out += fmt::format(", ... {} in all", ms.size());
    return out;
}

SimViolation Simulator::capacity_violation(std::size_t run, Step s) const {
    SimViolation v;
    v.rule = SimRule::capacity;
    v.step = s;
    v.channel = tr_[run].channel;
    for (std::size_t i = run; i < tr_.size() && tr_[i].step == s && tr_[i].channel == tr_[run].channel; ++i)
        v.messages.push_back(tr_[i].message);
    v.message = fmt::format("{} {}: channel {} carries {} messages ({}) but its capacity is {}{}", unit(), s,
                            channel_name(*v.channel), v.messages.size(), message_list(v.messages),
                            topo_.channel(*v.channel).cap, rounds_text(topo_.channel(*v.channel).cap));
    return v;
}

/// Link group g carries more than its capacity (times the rounds) in step s: a capacity violation naming the group.
SimViolation Simulator::group_violation(std::uint32_t g, std::size_t b, std::size_t e, Step s) const {
    const LinkGroup& lg = topo_.groups()[g];
    SimViolation v;
    v.rule = SimRule::capacity;
    v.step = s;
    v.group = g;
    for (std::size_t i = b; i < e; ++i) {
        auto in = topo_.groups_of(tr_[i].channel);
        if (std::find(in.begin(), in.end(), g) != in.end()) v.messages.push_back(tr_[i].message);
    }
    v.message = fmt::format("{} {}: group {} carries {} messages ({}) on its {} channels but its capacity is {}{}", unit(), s, lg.name,
                            v.messages.size(), message_list(v.messages), lg.channels.size(), lg.cap, rounds_text(lg.cap));
    return v;
}

SimViolation Simulator::ports_violation(std::uint32_t p, std::size_t b, std::size_t e, Step s) const {
    SimViolation v;
    v.rule = SimRule::ports;
    v.step = s;
    v.node = Node{p};
    std::vector<std::string> sends, recvs;
    std::vector<MessageId> sm, rm;
    for (std::size_t i = b; i < e; ++i) {
        const Channel& ch = channel_of(i);
        std::string what = fmt::format("{} on {}", msgs_.name(tr_[i].message), channel_name(tr_[i].channel));
        if (idx(ch.from) == p) {
            sends.push_back(what);
            sm.push_back(tr_[i].message);
        }
        if (idx(ch.to) == p) {
            recvs.push_back(what);
            rm.push_back(tr_[i].message);
        }
    }
    auto join = [](const std::vector<std::string>& xs) {
        std::string out;
        for (std::size_t i = 0; i < xs.size() && i < listed_in_message; ++i) out += fmt::format("{}{}", i ? ", " : "", xs[i]);
        if (xs.size() > listed_in_message) out += ", ...";
        return out;
    };
    auto plural = [](std::size_t k) { return k == 1 ? "message" : "messages"; };
    if (model_.ports == Ports::half) {
        v.messages = sm;
        v.messages.insert(v.messages.end(), rm.begin(), rm.end());
        std::vector<std::string> all = sends;
        all.insert(all.end(), recvs.begin(), recvs.end());
        v.message = fmt::format("{} {}: processor {} sends {} and receives {} {} ({}) but ports=half allows one send or one "
                                "receive per {}{}",
                                unit(), s, topo_.node_name(Node{p}), sends.size(), recvs.size(), plural(recvs.size()),
                                join(all), r_ > 1 ? "round" : unit(), r_ > 1 ? fmt::format(" ({} rounds in this step)", r_) : "");
    } else if (sends.size() > r_) {
        v.messages = sm;
        v.message = fmt::format("{} {}: processor {} sends {} messages ({}) but ports=single allows one send per {}{}", unit(),
                                s, topo_.node_name(Node{p}), sends.size(), join(sends), r_ > 1 ? "round" : unit(),
                                r_ > 1 ? fmt::format(" ({} rounds in this step)", r_) : "");
    } else {
        v.messages = rm;
        v.message = fmt::format("{} {}: processor {} receives {} messages ({}) but ports=single allows one receive per {}{}",
                                unit(), s, topo_.node_name(Node{p}), recvs.size(), join(recvs), r_ > 1 ? "round" : unit(),
                                r_ > 1 ? fmt::format(" ({} rounds in this step)", r_) : "");
    }
    return v;
}

SimViolation Simulator::injection_violation(std::size_t i, Step s) const {
    const MessageId m = tr_[i].message;
    const Node u = channel_of(i).from;
    SimViolation v;
    v.rule = SimRule::replication;
    v.step = s;
    v.node = u;
    v.channel = tr_[i].channel;
    v.messages = {m};
    if (u != msgs_.origin(m)) {
        v.message = fmt::format("step {}: {} sends {} on {}, back toward its source {}; inject=once: a datum is injected once "
                                "and only moves away from its source",
                                s, topo_.node_name(u), msgs_.name(m), channel_name(tr_[i].channel),
                                topo_.node_name(msgs_.origin(m)));
        return v;
    }
    const auto& [step0, chan0] = injected_.at(idx(m));
    v.message = fmt::format("step {}: processor {} injects {} again on {} (first in step {} on {}); inject=once: each source "
                            "injects its datum exactly once",
                            s, topo_.node_name(u), msgs_.name(m), channel_name(tr_[i].channel), step0, channel_name(chan0));
    return v;
}

SimViolation Simulator::causality_violation(std::size_t i, Step s) const {
    const Channel& ch = channel_of(i);
    const std::uint32_t u = idx(ch.from);
    const MessageId m = tr_[i].message;
    const std::uint32_t src = slots_[i].src;
    SimViolation v;
    v.step = s;
    v.node = Node{u};
    v.channel = tr_[i].channel;
    v.messages = {m};
    const Step held_by = wormhole_ ? s : s - 1;
    if (!processor(u) && !replicate_ && held_[src] <= held_by && streamed_) {
        v.rule = SimRule::replication;
        v.message = fmt::format("step {}: router {} forwards {} on {} but has no copy left (replicate=no: a router forwards "
                                "each copy it receives exactly once)",
                                s, topo_.node_name(Node{u}), msgs_.name(m), channel_name(tr_[i].channel));
        return v;
    }
    if (wormhole_ && !processor(u) && !replicate_ && held_[src] <= held_by) {
        // The round's legal transfers (legal_ is indexed from the round's first transfer).
        std::size_t b = i;
        while (b > 0 && tr_[b - 1].step == s) --b;
        std::uint64_t arrived = 0, sent = 0;
        for (std::size_t j = b; j < tr_.size() && tr_[j].step == s; ++j) {
            if (tr_[j].message != m || !legal_[j - b]) continue;
            const Channel& c = channel_of(j);
            if (idx(c.to) == u) ++arrived;
            if (idx(c.from) == u) ++sent;
        }
        v.rule = SimRule::replication;
        v.message = fmt::format("round {}: router {} forwards {} on {} but has no copy left: it receives {} {} in round {} and "
                                "forwards {} (replicate=no: a router passes on at most as many copies as it receives in the round)",
                                s, topo_.node_name(Node{u}), msgs_.name(m), channel_name(tr_[i].channel), arrived,
                                arrived == 1 ? "copy" : "copies", s, sent);
        return v;
    }
    if (!processor(u) && !replicate_ && held_[src] <= held_by) {
        std::uint64_t arrived = 0, sent = 0;
        for (std::size_t j = 0; j < tr_.size() && tr_[j].step <= s; ++j) {
            if (tr_[j].message != m) continue;
            const Channel& c = channel_of(j);
            if (idx(c.to) == u && tr_[j].step <= held_by) ++arrived;
            if (idx(c.from) == u) ++sent;
        }
        v.rule = SimRule::replication;
        v.message = fmt::format(
            "{} {}: router {} forwards {} on {} but has no copy left: it received {} {} by the end of {} {} and forwards {} "
            "by {} {} (replicate=no: a router forwards each copy it receives exactly once)",
            unit(), s, topo_.node_name(Node{u}), msgs_.name(m), channel_name(tr_[i].channel), arrived,
            arrived == 1 ? "copy" : "copies", unit(), held_by, sent, unit(), s);
        return v;
    }
    v.rule = SimRule::causality;
    if (have_ && processor(u)) {
        std::string why = have_->why_not(u, m);
        if (!why.empty()) {
            v.message = fmt::format("{} {}: {} sends {} on {} but at the end of {} {} it {}", unit(), s, node_label(u), msgs_.name(m),
                                    channel_name(tr_[i].channel), unit(), s - 1, why);
            return v;
        }
    }
    if (wormhole_) {
        v.message = fmt::format("round {}: {} sends {} on {} but neither holds it at the end of round {} nor receives it "
                                "in round {} through a legal transfer",
                                s, node_label(u), msgs_.name(m), channel_name(tr_[i].channel), s - 1, s);
        return v;
    }
    Step first = never;
    if (streamed_) {  // no table to look ahead in: what is known by now
        v.message = fmt::format("step {}: {} sends {} on {} but does not hold it at the end of step {} ({})", s, node_label(u),
                                msgs_.name(m), channel_name(tr_[i].channel), s - 1,
                                held_[src] == never ? std::string("it has not received it so far")
                                                    : fmt::format("it first receives it in step {}", held_[src]));
        return v;
    }
    for (std::size_t j = 0; j < tr_.size(); ++j)
        if (tr_[j].message == m && idx(channel_of(j).to) == u) {
            first = tr_[j].step;
            break;
        }
    std::string why = first == never ? "it never receives it"
                      : first == s   ? fmt::format("it receives it in step {}, and what arrives in a step cannot be sent on "
                                                   "in the same step", s)
                                     : fmt::format("it first receives it in step {}", first);
    v.message = fmt::format("step {}: {} sends {} on {} but does not hold it at the end of step {} ({})", s, node_label(u),
                            msgs_.name(m), channel_name(tr_[i].channel), s - 1, why);
    return v;
}

SimViolation Simulator::queue_send_violation(std::size_t i, Step s) const {
    const std::uint32_t u = idx(channel_of(i).from);
    const MessageId m = tr_[i].message;
    SimViolation v;
    v.rule = SimRule::queues;
    v.step = s;
    v.node = Node{u};
    v.channel = tr_[i].channel;
    v.messages = {m};
    v.message = fmt::format(
        "step {}: router {} sends {} on {} but {} did not arrive at {} in step {} (it last arrived in step {}); with "
        "queues=none a router sends a message only in the step after it arrives",
        s, topo_.node_name(Node{u}), msgs_.name(m), channel_name(tr_[i].channel), msgs_.name(m),
        topo_.node_name(Node{u}), s - 1, last_arrival_[slots_[i].src]);
    return v;
}

// Names the copies (replicate=no) or messages (replicate=yes) waiting in router r at the
// boundary after step `boundary`, recomputed from the table.
SimViolation Simulator::queue_violation(Step boundary, std::uint32_t r) const {
    const std::uint32_t node = P_ + r;
    std::map<std::uint32_t, std::int64_t> copies;                      // replicate=no: message -> balance
    std::map<std::uint32_t, std::pair<Step, Step>> residence;          // replicate=yes: first arrival, last send
    for (std::size_t j = 0; j < tr_.size(); ++j) {
        const Transfer& t = tr_[j];
        const Channel& ch = channel_of(j);
        if (!replicate_) {
            if (t.step > boundary + 1) break;
            if (idx(ch.to) == node && t.step <= boundary) ++copies[idx(t.message)];
            if (idx(ch.from) == node) --copies[idx(t.message)];
        } else {
            if (idx(ch.to) == node) residence.try_emplace(idx(t.message), t.step, 0);
            if (idx(ch.from) == node) {
                auto it = residence.find(idx(t.message));
                if (it != residence.end()) it->second.second = t.step;
            }
        }
    }
    if (streamed_) {  // only the current step is at hand: the waiting messages are not named
        copies.clear();
        residence.clear();
    }
    SimViolation v;
    v.rule = SimRule::queues;
    v.node = Node{node};
    for (auto [m, k] : copies)
        for (std::int64_t c = 0; c < k; ++c) v.messages.push_back(MessageId{m});
    for (auto [m, iv] : residence)
        if (iv.first <= boundary && iv.second >= boundary + 2) v.messages.push_back(MessageId{m});
    const std::int64_t w = waiting_[r];
    const std::string name = topo_.node_name(Node{node});
    if (model_.queues == QueueKind::bounded) {
        v.step = boundary;
        v.message = fmt::format(
            "step {}: after step {}, router {} has {} {} waiting ({}) but queues={} allows at most {} ({})", boundary,
            boundary, name, w, replicate_ ? (w == 1 ? "message" : "messages") : (w == 1 ? "copy" : "copies"),
            message_list(v.messages), model_.queue_bound, model_.queue_bound,
            replicate_ ? fmt::format("a message waits from its first arrival, by step {}, to its last send, in step {} or later",
                                     boundary, boundary + 2)
                       : fmt::format("a copy waits when it arrived by step {} and leaves in step {} or later, or never",
                                     boundary, boundary + 2));
    } else {
        v.step = boundary + 1;
        const bool last = boundary == rep_.steps;
        v.message = fmt::format(
            "step {}: {} entered router {} in step {} but {} (queues=none: a copy leaves a router in the step after it "
            "arrives)",
            boundary + 1, message_list(v.messages), name, boundary,
            last ? fmt::format("the table ends with step {}", boundary)
                 : fmt::format("{} not leave it in step {}", v.messages.size() == 1 ? "does" : "do", boundary + 1));
    }
    return v;
}

}  // namespace collsched::sim
