// Port channels in MSCCL++ ops (export_mscclpp.cpp, TbWriter::program): which pairs of GPUs talk through them, and a
// step's port puts and port waits of a thread block, up to 8 channels an op (MAX_CHANNEL_PER_OPERATION,
// execution_common.hpp:16).
#include <algorithm>

#include "compiler/interop/export_mscclpp_moves.hpp"
#include "compiler/topology/topology.hpp"

namespace collsched::detail {

namespace {

/// Items (each with its key) dealt in order to the first group that lacks its key and has room for it.
template <class T, class Key>
std::vector<std::vector<T>> deal_distinct(const std::vector<T>& items, Key key) {
    std::vector<std::vector<T>> groups;
    for (const T& x : items) {
        auto fits = [&](const std::vector<T>& g) {
            return g.size() < 8 && std::none_of(g.begin(), g.end(), [&](const T& y) { return key(y) == key(x); });
        };
        auto it = std::find_if(groups.begin(), groups.end(), fits);
        if (it == groups.end()) it = groups.insert(groups.end(), std::vector<T>{});
        it->push_back(x);
    }
    return groups;
}

}  // namespace

bool needs_port(const Topology& topo, std::uint32_t p, std::uint32_t q) {
    for (ChannelId c : topo.route(Node{p}, Node{q})) {
        const Channel& ch = topo.channel(c);
        if (idx(ch.to) >= topo.processors() || idx(ch.from) >= topo.processors()) return true;
        for (std::uint32_t gi : topo.groups_of(c))
            if (topo.groups()[gi].name.starts_with("nic")) return true;
    }
    return false;
}

std::vector<std::vector<int>> distinct_groups(const std::vector<int>& channels) {
    return deal_distinct(channels, [](int c) { return c; });
}

std::vector<PlanOp> fuse_port_puts(std::string_view name, const std::vector<PortPut>& puts, std::map<int, int>& thread) {
    std::vector<PlanOp> out;
    for (const std::vector<PortPut>& group : deal_distinct(puts, [](const PortPut& p) { return p.channel; })) {
        // each channel at the thread that last pushed into it, where that thread is free and within the op
        const std::size_t n = group.size();
        std::vector<const PortPut*> at(n, nullptr);
        std::vector<const PortPut*> rest;
        for (const PortPut& p : group) {
            auto t = thread.find(p.channel);
            if (t != thread.end() && std::size_t(t->second) < n && !at[std::size_t(t->second)]) at[std::size_t(t->second)] = &p;
            else rest.push_back(&p);
        }
        std::size_t r = 0;
        for (auto& slot : at)
            if (!slot) slot = rest[r++];
        bool clash = false;
        for (std::size_t t = 0; t < n; ++t)
            if (auto it = thread.find(at[t]->channel); it != thread.end() && std::size_t(it->second) != t) clash = true;
        if (clash) {
            out.push_back({"nop"});
            thread.clear();
        }
        PlanOp op{name, {}, {}, {}, false, 'p'};
        for (std::size_t t = 0; t < n; ++t) {
            op.src.push_back(at[t]->src);
            op.dst.push_back(at[t]->dst);
            op.channel_ids.push_back(at[t]->channel);
            thread[at[t]->channel] = int(t);
        }
        out.push_back(std::move(op));
    }
    return out;
}

}  // namespace collsched::detail
