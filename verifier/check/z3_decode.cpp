// The Z3 engine's counterexamples: the tuples a bad_* query derives, worded like the direct
// checker's violations (one method per property family).
#include "verifier/check/z3_engine_impl.hpp"

namespace collsched::z3e {

namespace {

MessageId mid(U64 m) { return MessageId{static_cast<std::uint32_t>(m)}; }
Node nid(U64 n) { return Node{static_cast<std::uint32_t>(n)}; }

/// The first eight names of `v`, then "...".
std::string list_of(const Messages& ms, const std::vector<MessageId>& v) {
    std::string out;
    for (std::size_t a = 0; a < v.size() && a < 8; ++a) out += fmt::format("{}{}", a ? ", " : "", ms.name(v[a]));
    if (v.size() > 8) out += ", ...";
    return out;
}

}  // namespace

void Engine::decode(Property p, const std::vector<std::vector<U64>>& tuples) {
    switch (p) {
        case Property::capacity: decode_capacity(tuples); break;
        case Property::ports: decode_ports(tuples); break;
        case Property::queues: decode_queues(tuples); break;
        case Property::replication: decode_replication(tuples); break;
        case Property::causality: decode_causality(tuples); break;
        case Property::routes: decode_routes(tuples); break;
        case Property::completeness: decode_completeness(tuples); break;
    }
}

/// bad_group(s, g): the transfers of step s on the channels of group g, as the direct checker words them.
void Engine::decode_groups(const std::vector<std::vector<U64>>& tuples) {
    const auto& xs = t_.transfers;
    for (const auto& tu : tuples) {
        const Step s = static_cast<Step>(tu[0]);
        const auto g = static_cast<std::uint32_t>(tu[1]);
        const LinkGroup& lg = topo_.groups()[g];
        std::vector<MessageId> msgs;
        for (auto it = std::lower_bound(xs.begin(), xs.end(), Transfer{s, ChannelId{0}, MessageId{0}}); it != xs.end() && it->step == s; ++it) {
            auto in = topo_.groups_of(it->channel);
            if (std::find(in.begin(), in.end(), g) != in.end()) msgs.push_back(it->message);
        }
        Violation v{Property::capacity, s, std::nullopt, std::nullopt, msgs, group_detail(lg, msgs.size(), message_list(ms_, msgs), t_.rounds(s))};
        v.group = g;
        add(Property::capacity, std::move(v));
    }
}

void Engine::decode_capacity(const std::vector<std::vector<U64>>& tuples) {
    const auto& xs = t_.transfers;
    const Property p = Property::capacity;
    for (const auto& tu : tuples) {
        Step s = static_cast<Step>(tu[0]);
        ChannelId c{static_cast<std::uint32_t>(tu[1])};
        auto lo = std::lower_bound(xs.begin(), xs.end(), Transfer{s, c, MessageId{0}});
        std::vector<MessageId> msgs;
        for (auto it = lo; it != xs.end() && it->step == s && it->channel == c; ++it) msgs.push_back(it->message);
        add(p, {p, s, c, std::nullopt, msgs,
                fmt::format("{} messages ({}) but capacity {}{}", msgs.size(), list_of(ms_, msgs), topo_.channel(c).cap,
                            times_rounds(topo_.channel(c).cap, t_.rounds(s)))});
    }
}

void Engine::decode_ports(const std::vector<std::vector<U64>>& tuples) {
    const auto& xs = t_.transfers;
    const Property p = Property::ports;
    for (const auto& tu : tuples) {
        Step s = static_cast<Step>(tu[0]);
        U64 node = tu[1];
        auto lo = std::lower_bound(xs.begin(), xs.end(), Transfer{s, ChannelId{0}, MessageId{0}});
        std::vector<MessageId> msgs;
        U64 snd = 0, rcv = 0;
        for (auto it = lo; it != xs.end() && it->step == s; ++it) {
            const Channel& ch = topo_.channel(it->channel);
            if (idx(ch.from) == node) ++snd, msgs.push_back(it->message);
            if (idx(ch.to) == node) ++rcv, msgs.push_back(it->message);
        }
        std::string detail = ports_detail(t_.model.ports, snd, rcv, list_of(ms_, msgs), t_.rounds(s));
        add(p, {p, s, std::nullopt, nid(node), msgs, detail});
    }
}

void Engine::decode_queues(const std::vector<std::vector<U64>>& tuples) {
    const auto& xs = t_.transfers;
    const Property p = Property::queues;
    std::set<std::pair<U64, U64>> seen;  // bounded queues: one violation per (router, boundary)
    for (const auto& tu : tuples) {
        U64 i = tu[0], m = tu[1], r = tu[2];
        Step b = static_cast<Step>(tu[3]);
        if (bounded_) {
            if (!seen.insert({r, b}).second) continue;
            add(p, {p, b, std::nullopt, nid(r), {},
                    fmt::format("more than {} messages wait in the router after step {} but the queue bound is {}",
                                t_.model.queue_bound, b, t_.model.queue_bound)});
        } else if (!replicate_) {
            add(p, {p, b, xs[i].channel, nid(r), {mid(m)},
                    fmt::format("{} entered {} in step {} (over {}) and does not leave in step {}; with queues=none every copy "
                                "leaves in the step after it arrives",
                                msg_name(m), node_name(r), b - 1, chan_name(xs[i].channel), b)});
        } else {
            add(p, {p, b, xs[i].channel, nid(r), {mid(m)},
                    fmt::format("{} sends {} in step {} but did not receive it in step {}; with queues=none a router sends "
                                "only in the step after an arrival",
                                node_name(r), msg_name(m), b, b - 1)});
        }
    }
}

void Engine::decode_replication(const std::vector<std::vector<U64>>& tuples) {
    const auto& xs = t_.transfers;
    const Property p = Property::replication;
    if (hop_) {
        // The first unmatched departure per (message, router) is the FIFO's; later ones
        // depend on how the first is resolved, so only the first is claimed.
        std::map<std::pair<U64, U64>, std::pair<U64, U64>> first;  // (m, r) -> (rank, transfer)
        for (const auto& tu : tuples) {
            auto key = std::pair<U64, U64>(tu[1], tu[2]);
            auto val = std::pair<U64, U64>(post_rank_.at(tu[0]), tu[0]);
            auto it = first.find(key);
            if (it == first.end() || val < it->second) first[key] = val;
        }
        for (const auto& [key, val] : first) {
            U64 i = val.second;
            add(p, {p, xs[i].step, xs[i].channel, nid(key.second), {mid(key.first)},
                    fmt::format("{} forwards {} in step {} but every copy it received before step {} has been sent on; "
                                "routers do not replicate (replicate=no)",
                                node_name(key.second), msg_name(key.first), xs[i].step, xs[i].step)});
        }
    } else {
        std::set<std::tuple<U64, U64, U64>> seen;
        for (const auto& tu : tuples) {
            if (!seen.insert({tu[1], tu[2], tu[3]}).second) continue;
            add(p, {p, static_cast<Step>(tu[3]), std::nullopt, nid(tu[2]), {mid(tu[1])},
                    fmt::format("{} sends {} more often than it receives it in round {}", node_name(tu[2]), msg_name(tu[1]),
                                tu[3])});
        }
    }
}

void Engine::decode_causality(const std::vector<std::vector<U64>>& tuples) {
    const auto& xs = t_.transfers;
    const Property p = Property::causality;
    for (const auto& tu : tuples) {
        U64 i = tu[0];
        const Transfer& x = xs[i];
        U64 u = from(i);
        std::string detail =
            !hop_ ? fmt::format("{} sends {} in round {} but does not hold it", node_name(u), msg_name(idx(x.message)), x.step)
            : is_router(u)
                ? fmt::format("{} forwards {} in step {} but has not received it", node_name(u), msg_name(idx(x.message)), x.step)
                : fmt::format("{} sends {} in step {} but does not hold it at the end of step {}", node_name(u),
                              msg_name(idx(x.message)), x.step, x.step - 1);
        add(p, {p, x.step, x.channel, nid(u), {x.message}, detail});
    }
}

void Engine::decode_routes(const std::vector<std::vector<U64>>& tuples) {
    const auto& xs = t_.transfers;
    const Property p = Property::routes;
    for (const auto& tu : tuples) {
        const Transfer& x = xs[tu[0]];
        MessageKey k = ms_.key(x.message);
        add(p, {p, x.step, x.channel, std::nullopt, {x.message},
                fmt::format("{} crosses {}, which is not on its route {} -> {}", ms_.name(x.message), chan_name(x.channel), k.src,
                            k.dst)});
    }
}

void Engine::decode_completeness(const std::vector<std::vector<U64>>& tuples) {
    const Property p = Property::completeness;
    for (const auto& tu : tuples)
        add(p, {p, 0, std::nullopt, nid(tu[1]), {mid(tu[0])},
                fmt::format("{} never reaches processor {}", msg_name(tu[0]), node_name(tu[1]))});
}

}  // namespace collsched::z3e
