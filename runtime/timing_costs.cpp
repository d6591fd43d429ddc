// The time model's speeds and costs per channel and group (runtime/timing.hpp, docs/time.md
// "Executors"): the executor's efficiencies, wire factors, hop and message costs and NCCL's caps by
// link class, the sizes as NCCL counts them, and how many predictions may run at once.
#include <algorithm>

#include "runtime/timing.hpp"

namespace collsched {

namespace {

LinkSpeed raw_speed(const Topology& topo, ChannelId c, const TimeOptions& opt) {
    if (opt.uniform_unit) return {opt.uniform_unit->alpha, opt.uniform_unit->bandwidth * topo.channel(c).cap};
    return topo.speed(c);
}

}  // namespace

ExecutorCosts costs_of(const TimeOptions& opt) { return opt.executor ? *opt.executor : protocol_costs(opt.protocol); }

LinkClass link_class(const Topology& topo, ChannelId c, const TimeOptions& opt) {
    const Channel& ch = topo.channel(c);
    for (Node n : {ch.from, ch.to})
        if (!topo.is_processor(n)) {
            const SwitchFunctions f = topo.switch_functions(n);
            if (f.reduce || f.multicast) return LinkClass::in_switch;
        }
    return raw_speed(topo, c, opt).bandwidth < opt.network_below ? LinkClass::network : LinkClass::box;
}

TimeOptions with_network_class(const Topology& topo, TimeOptions opt) {
    if (opt.executor) opt.protocol = opt.executor->protocol;
    // NCCL's caps of the protocol, for this machine (executor.hpp nccl_protocol_caps), once
    if (opt.executor && opt.executor->nccl_caps && opt.executor->caps == ProtocolCaps{})
        opt.executor->caps = nccl_protocol_caps(opt.executor->protocol, cap_machine(topo));
    if ((opt.protocol == Protocol::none && (!opt.executor || opt.executor->ideal())) || opt.network_below > 0) return opt;
    // the fastest channel between processors; where routers join every pair (switches as routers), out of a processor
    double fastest = 0, out = 0;
    for (std::uint32_t c = 0; c < topo.channels().size(); ++c) {
        const Channel& ch = topo.channel(ChannelId{c});
        const double b = raw_speed(topo, ChannelId{c}, opt).bandwidth;
        if (topo.is_processor(ch.from) && topo.is_processor(ch.to)) fastest = std::max(fastest, b);
        if (topo.is_processor(ch.from)) out = std::max(out, b);
    }
    opt.network_below = (fastest > 0 ? fastest : out) / 4;
    return opt;
}

LinkSpeed channel_speed(const Topology& topo, ChannelId c, const TimeOptions& opt) {
    LinkSpeed s = raw_speed(topo, c, opt);
    if (opt.protocol == Protocol::none && !opt.executor) return s;
    const ExecutorCosts cost = costs_of(opt);
    const std::size_t k = idx_of(link_class(topo, c, opt));
    if (topo.is_processor(topo.channel(c).from)) s.alpha += cost.hop[k];
    s.bandwidth *= cost.efficiency[k] / cost.wire;
    // NCCL's cap on one network channel's data rate (LL128's perChMaxRingLL128Bw)
    if (cost.caps.network_channel > 0 && k == idx_of(LinkClass::network)) s.bandwidth = std::min(s.bandwidth, cost.caps.network_channel);
    return s;
}

double message_cost(const Topology& topo, ChannelId c, const TimeOptions& opt) {
    if (!opt.executor) return 0;
    // a put through a switch is one op of its sending GPU, paid on the channel out of the GPU: a switch declared to
    // only forward (an InfiniBand rail switch, an NVSwitch without NVLS) adds no message of its own
    const Node from = topo.channel(c).from;
    // the switch's own op (NVLS, SHARP: a multimem reduce's way down) keeps its message
    if (!topo.is_processor(from) && !switch_acts(topo, topo.default_model(), from)) return 0;
    return opt.executor->message[idx_of(link_class(topo, c, opt))];
}

std::uint32_t connections_per_channel(const ExecutorCosts& e) {
    // NVIDIA/nccl src/include/device.h:91 MAXCHANNELS; every NCCL channel has its own connection to
    // each peer with its own NCCL_STEPS slots (prims_simple.h:101-119 waitPeer, prims_ll.h:73-92
    // waitSend, on channel->peers[...]->send[connIndex], prims_ll.h:358-363) and its own thread
    // block (common.h:366-374, blockIdx.x to channelId)
    // MSCCL++: a plan's thread block has its own channel and connection (its own QP) to each peer
    // (execution_plan.cc:395-411, executor.cc:287-313 one connection per channel entry, :365-418 a semaphore each):
    // the writer's blocks to a peer, one per chain up to 32 (export_mscclpp.cpp spread_blocks)
    if (e.kind == ExecutorKind::nccl) return 64;
    return e.kind == ExecutorKind::mscclpp ? 32 : 1;
}

double datum_bytes(CollectiveKind k, std::uint32_t processors, double size) {
    switch (k) {
        case CollectiveKind::allgather:
        case CollectiveKind::alltoall:
        case CollectiveKind::gather:
        case CollectiveKind::scatter: return processors > 0 ? size / processors : size;
        default: return size;
    }
}

double bus_factor(CollectiveKind k, std::uint32_t processors) {
    const double P = processors, share = processors > 0 ? (P - 1) / P : 1;
    switch (k) {
        case CollectiveKind::allreduce: return 2 * share;
        case CollectiveKind::allgather:
        case CollectiveKind::reduce_scatter:
        case CollectiveKind::alltoall:
        case CollectiveKind::gather:
        case CollectiveKind::scatter: return share;
        default: return 1;
    }
}

bool switch_acts(const Topology& topo, const Model& m, Node u) {
    if (topo.declares_switches()) {
        const SwitchFunctions f = topo.switch_functions(u);
        return f.reduce || f.multicast;
    }
    return m.combine_routers || m.multicast_routers;
}

bool cuts_through(const Topology& topo, const Model& m, Node u) {
    return !topo.is_processor(u) && !m.replicate && !switch_acts(topo, m, u);
}

double group_speed(const Topology& topo, std::uint32_t g, const TimeOptions& opt) {
    const ExecutorCosts cost = costs_of(opt);
    // a group is charged at the efficiency of its channels' class (a GPU's NVLinks, a NIC's ports)
    const std::vector<ChannelId>& members = topo.groups()[g].channels;
    const double eff = opt.executor && !members.empty() ? cost.efficiency[idx_of(link_class(topo, members.front(), opt))] : 1.0;
    if (opt.uniform_unit) return opt.uniform_unit->bandwidth * topo.groups()[g].cap * eff / cost.wire;
    return topo.group_bandwidth(g) * eff / cost.wire;
}

unsigned prediction_threads(unsigned jobs, std::size_t transfers) {
    if (jobs <= 1) return 1;
    const MemoryBudget budget = MemoryBudget::standard();
    // per transfer: its times (32 bytes), its counters (12), the two queues (up to 48), its busy intervals (16 each,
    // about 3 resources), the waiters' flags
    const std::uint64_t each = std::max<std::uint64_t>(1, mul_sat(transfers, 160));
    const std::uint64_t room = budget.none() ? jobs : budget.left() / 2 / each;  // half of what is left: the rest is the run's
    return static_cast<unsigned>(std::clamp<std::uint64_t>(room, 1, std::max(jobs, 1u)));
}

}  // namespace collsched
