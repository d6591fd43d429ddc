// MSCCL++ plans through a switch that reduces and multicasts (NVLink SHARP; docs/exports.md,
// "Switch channels"): a table whose switch adds partials or copies one arrival to several GPUs is
// written with switch channels, one `glres` (multimem load-reduce over the group, store to every
// member) per allreduce chunk by its owner, one `gstore` (a local chunk stored to every member)
// per allgather datum by its source.
#include "compiler/interop/export_mscclpp_switch.hpp"

#include <algorithm>
#include <map>
#include <set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "compiler/table/partials.hpp"
#include "support/error.hpp"

namespace collsched::detail {

using json = nlohmann::ordered_json;

bool is_switch_node(const Topology& topo, Node n) {
    if (topo.is_processor(n)) return false;
    const SwitchFunctions f = topo.switch_functions(n);
    return f.reduce || f.multicast;
}

json plan_envelope(const SendTable& t, const MscclppOptions& opt, std::string_view collective, json gpus) {
    json plan;
    plan["name"] = fmt::format("collsched {} on {}", t.collective.to_string(), t.topology->spec());
    plan["collective"] = collective;
    plan["protocol"] = "Simple";
    plan["inplace"] = true;
    plan["reuse_resources"] = false;
    plan["gpus"] = std::move(gpus);
    plan["num_threads_per_block"] = 1024;
    plan["use_double_scratch_buffer"] = false;
    plan["buffer_alignment"] = 16;
    plan["min_message_size"] = opt.min_message_size;
    plan["max_message_size"] = opt.max_message_size;
    return plan;
}

namespace {

/// One hop to or from a switch: the processor at the other end, the step.
struct Hop {
    std::uint32_t gpu;
    Step step;
};

/// Per message, its hops up to a switch and down from it.
struct Hops {
    std::vector<Hop> up, down;
};

}  // namespace

bool uses_switch_functions(const SendTable& t) {
    const Topology& topo = *t.topology;
    std::map<std::pair<std::uint32_t, std::uint32_t>, std::pair<int, int>> count;  // (switch, message) -> (arrivals, departures)
    for (const Transfer& x : t.transfers) {
        const Channel& ch = topo.channel(x.channel);
        if (is_switch_node(topo, ch.to)) ++count[{idx(ch.to), idx(x.message)}].first;
        if (is_switch_node(topo, ch.from)) ++count[{idx(ch.from), idx(x.message)}].second;
    }
    for (const auto& [k, n] : count)
        if (n.second > n.first) return true;  // sent without arrival (a sum), or more often (a multicast)
    return false;
}

namespace {

/// Whether the table goes through more than one switch: the plan across boxes.
bool across_boxes(const SendTable& t) {
    const Topology& topo = *t.topology;
    std::optional<Node> sw;
    for (const Transfer& x : t.transfers) {
        const Channel& ch = topo.channel(x.channel);
        const Node s = is_switch_node(topo, ch.to) ? ch.to : ch.from;
        if (!is_switch_node(topo, s)) continue;
        if (sw && *sw != s) return true;
        sw = s;
    }
    return false;
}

/// Every transfer touches one switch, joined to every GPU both ways: the hops of each message.
std::map<std::uint32_t, Hops> collect_hops(const SendTable& t, const Messages& ms) {
    const Topology& topo = *t.topology;
    const std::uint32_t P = topo.processors();
    std::optional<Node> sw;
    std::map<std::uint32_t, Hops> hops;
    for (const Transfer& x : t.transfers) {
        const Channel& ch = topo.channel(x.channel);
        const bool up = is_switch_node(topo, ch.to), down = is_switch_node(topo, ch.from);
        if (up == down || !topo.is_processor(up ? ch.from : ch.to))
            refuse_plan(t, fmt::format("{} crosses {} -> {} in step {}: a plan with switch channels carries transfers between a GPU and the "
                                  "switch only (mixing them with puts is not written yet)",
                                  ms.name(x.message), topo.node_name(ch.from), topo.node_name(ch.to), x.step));
        const Node s = up ? ch.to : ch.from;
        if (sw && *sw != s) refuse_plan(t, "a plan with switch channels is written for one switch (one box)");
        sw = s;
        (up ? hops[idx(x.message)].up : hops[idx(x.message)].down).push_back({idx(up ? ch.from : ch.to), x.step});
    }
    if (!sw) refuse_plan(t, "the table has no transfers");
    for (std::uint32_t p = 0; p < P; ++p)
        if (!topo.find_channel(Node{p}, *sw) || !topo.find_channel(*sw, Node{p}))
            refuse_plan(t, fmt::format("GPU {} is not joined both ways to {}: a switch channel's group is every GPU", p, topo.node_name(*sw)));
    return hops;
}

/// Per GPU, the chunks of its glres (allreduce) or gstore (allgather); refuses any other use of the switch.
std::vector<std::vector<int>> switch_items(const SendTable& t, const Messages& ms, std::map<std::uint32_t, Hops>& hops, bool reduction, int C) {
    const std::uint32_t P = t.topology->processors();
    std::vector<std::vector<int>> items(P);
    auto others_once = [&](const std::vector<Hop>& down, std::uint32_t owner, Step after) {
        std::set<std::uint32_t> seen;
        for (const Hop& h : down)
            if (h.gpu == owner || h.step <= after || !seen.insert(h.gpu).second) return false;
        return seen.size() == P - 1;
    };
    std::size_t used = 0;
    if (!reduction) {
        for (const auto& [m, h] : hops) {
            const MessageKey k = ms.key(MessageId{m});
            if (k.kind != MessageKind::broadcast || h.up.size() != 1 || h.up[0].gpu != k.src || !others_once(h.down, k.src, h.up[0].step))
                refuse_plan(t, fmt::format("{} is not stored into the switch once by its source and multicast to every other GPU (the one "
                                      "switch pattern of an allgather: gstore)",
                                      ms.name(MessageId{m})));
            items[k.src].push_back(int(k.src) * C + int(k.chunk));
            used += 1 + h.down.size();
        }
    } else {
        // per chunk: values up, one partial down to the owner, the sum up from the owner, the sum down to the others
        std::map<std::uint32_t, std::vector<std::uint32_t>> by_chunk;
        for (const auto& [m, h] : hops) {
            auto pv = partial_of(ms, MessageId{m});
            if (!pv) refuse_plan(t, fmt::format("{} is not a partial of the reduction", ms.name(MessageId{m})));
            by_chunk[pv->chunk].push_back(m);
        }
        for (const auto& [c, list] : by_chunk) {
            std::set<std::uint32_t> contributed;
            Step last_up = 0;
            std::optional<std::uint32_t> owner;
            Step reduced = 0, stored = 0;
            std::vector<Hop> sum_down;
            for (std::uint32_t m : list) {
                const auto pv = partial_of(ms, MessageId{m});
                const Hops& h = hops[m];
                if (pv->sources.size() == 1) {
                    if (!h.down.empty() || h.up.size() != 1 || h.up[0].gpu != pv->sources[0])
                        refuse_plan(t, fmt::format("{} goes to the switch other than once from its GPU", ms.name(MessageId{m})));
                    contributed.insert(h.up[0].gpu);
                    last_up = std::max(last_up, h.up[0].step);
                } else if (pv->sources.size() == P) {
                    // the sum: up once from its owner, down to the others; in NCCL's form also down to
                    // the owner first (the switch's sum of every GPU, the owner's own share included)
                    if (h.up.size() != 1) refuse_plan(t, fmt::format("{} goes up to the switch other than once, from its owner", ms.name(MessageId{m})));
                    if (owner && *owner != h.up[0].gpu) refuse_plan(t, fmt::format("two GPUs own chunk {}", c));
                    owner = h.up[0].gpu;
                    stored = h.up[0].step;
                    for (const Hop& d : h.down) {
                        if (d.gpu == *owner && d.step < stored && reduced == 0) reduced = d.step;
                        else sum_down.push_back(d);
                    }
                } else {
                    if (!h.up.empty() || h.down.size() != 1) refuse_plan(t, fmt::format("{} is not the switch's sum sent to one owner", ms.name(MessageId{m})));
                    if (owner && *owner != h.down[0].gpu) refuse_plan(t, fmt::format("two owners of chunk {}", c));
                    owner = h.down[0].gpu;
                    reduced = h.down[0].step;
                    std::set<std::uint32_t> want(pv->sources.begin(), pv->sources.end());
                    want.insert(*owner);
                    if (want.size() != P || std::count(pv->sources.begin(), pv->sources.end(), *owner))
                        refuse_plan(t, fmt::format("{} is not the sum of every GPU but its owner {}", ms.name(MessageId{m}), *owner));
                }
                used += h.up.size() + h.down.size();
            }
            if (!owner || reduced == 0 || stored == 0)
                refuse_plan(t, fmt::format("chunk {} is not load-reduced by the switch to one owner and stored back by it (glres)", c));
            const std::size_t need = P - 1 + (contributed.count(*owner) ? 1 : 0);
            if (contributed.size() != need || reduced <= last_up || stored <= reduced || !others_once(sum_down, *owner, stored))
                refuse_plan(t, fmt::format("chunk {} does not follow values up, the sum down to its owner, the sum up and multicast to the "
                                      "others, in that order (glres)",
                                      c));
            items[*owner].push_back(int(c));
        }
    }
    if (used != t.transfers.size()) refuse_plan(t, "some transfers through the switch belong to no glres or gstore");
    return items;
}

/// The plan's JSON: per GPU, its items over K thread blocks with their channels.
std::string write_plan(const SendTable& t, const MscclppOptions& opt, const std::vector<std::vector<int>>& items, bool reduction, int C) {
    const Topology& topo = *t.topology;
    const std::uint32_t P = topo.processors();
    // thread blocks: the items of a GPU round-robin over K blocks; each block opens with a relaxed
    // handshake on its memory channels to every peer and closes with a signal and wait on them
    const int sync = 2 * int((P - 1 + 7) / 8);  // ops of one signal or wait round
    const int room = 64 - 2 * sync - 2;
    std::size_t most = 0;
    for (const auto& v : items) most = std::max(most, v.size());
    const int K = std::max(1, int((most + std::size_t(room) - 1) / std::size_t(room)));
    if (K > 16) refuse_plan(t, fmt::format("{} switch ops on one GPU need {} thread blocks", most, K));
    const char* buf = reduction ? "i" : "o";
    json gpus = json::array();
    for (std::uint32_t g = 0; g < P; ++g) {
        json gpu;
        gpu["id"] = g;
        gpu["input_chunks"] = C;
        gpu["output_chunks"] = reduction ? C : int(P) * C;
        gpu["scratch_chunks"] = 0;
        std::vector<int> peers;
        for (int j = 0; j < K; ++j)
            for (std::uint32_t p = 0; p < P; ++p)
                if (p != g) peers.push_back(int(p));
        json channels = json::array({{{"channel_type", "memory"}, {"connected_to", peers}}});
        std::vector<int> all(P);
        for (std::uint32_t p = 0; p < P; ++p) all[p] = int(p);
        for (int j = 0; j < K; ++j)
            channels.push_back({{"channel_type", "switch"}, {"buffer_type", buf}, {"rank_groups", json::array({{{"size", P}, {"ranks", all}}})}});
        json tbs = json::array();
        for (int j = 0; j < K; ++j) {
            std::vector<int> ids;
            for (std::uint32_t k = 0; k + 1 < P; ++k) ids.push_back(j * int(P - 1) + int(k));
            std::vector<int> local(ids.size());
            for (std::size_t k = 0; k < local.size(); ++k) local[k] = int(k);
            json ops = json::array();
            auto round = [&](const char* name) {
                for (std::size_t k = 0; k < local.size(); k += 8)
                    ops.push_back({{"name", name},
                                   {"channel_ids", std::vector<int>(local.begin() + std::ptrdiff_t(k), local.begin() + std::ptrdiff_t(std::min(local.size(), k + 8)))},
                                   {"channel_type", "memory"}});
            };
            round("rlxsignal");
            round("rlxwait");
            ops.push_back({{"name", "nop"}});
            for (std::size_t i = std::size_t(j); i < items[g].size(); i += std::size_t(K)) {
                const int c = items[g][i];
                json dst = json::array({{{"switch_channel_id", 0}, {"index", c}, {"size", 1}}});
                if (reduction)
                    ops.push_back({{"name", "glres"}, {"src_buff", json::array({{{"switch_channel_id", 0}, {"index", c}, {"size", 1}}})},
                                   {"dst_buff", dst}, {"channel_type", "switch"}, {"reduce_op", "sum"}});
                else
                    ops.push_back({{"name", "gstore"}, {"src_buff", json::array({{{"type", "o"}, {"index", c}, {"size", 1}}})},
                                   {"dst_buff", dst}, {"channel_type", "switch"}});
            }
            ops.push_back({{"name", "nop"}});
            round("signal");
            round("wait");
            json tb;
            tb["id"] = j;
            tb["ops"] = std::move(ops);
            tb["channels"] = json::array({{{"channel_type", "memory"}, {"channel_ids", ids}}, {{"channel_type", "switch"}, {"channel_ids", {j}}}});
            tb["remote_buffer_refs"] = json::array();
            tbs.push_back(std::move(tb));
        }
        gpu["threadblocks"] = std::move(tbs);
        gpu["channels"] = std::move(channels);
        gpu["remote_buffers"] = json::array();
        gpu["semaphores"] = json::array();
        gpus.push_back(std::move(gpu));
    }
    return plan_envelope(t, opt, reduction ? "allreduce" : "allgather", std::move(gpus)).dump(2);
}

}  // namespace

std::string switch_plan(const SendTable& t, const MscclppOptions& opt) {
    const CollectiveKind kind = t.collective.kind;
    const bool reduction = uses_partials(t);
    if (!(kind == CollectiveKind::allgather && !reduction) && kind != CollectiveKind::allreduce)
        refuse_plan(t, "through a switch, MSCCL++ plans are written for allreduce (glres) and allgather (gstore); a reduce-scatter would "
                  "need a load-reduce without the multicast store, which the executor has no op for");
    if (opt.proto != "Simple") refuse_plan(t, "plans with switch channels are written Simple (the switch's sums have no LL form: glres)");
    if (opt.instances != 1) refuse_plan(t, "plans with switch channels are written with one instance");
    if (opt.out_of_place) refuse_plan(t, "plans with switch channels are written in place (the switch reads and writes one buffer)");
    if (!t.requirements.empty()) refuse_plan(t, "extra requirements have no place in an MSCCL++ buffer layout");
    const int C = int(table_chunks(t));
    check_size_range(t, opt, std::uint64_t(C));
    const Messages ms = t.messages();
    if (kind == CollectiveKind::allreduce && across_boxes(t)) return boxes_plan(t, opt, ms);
    auto hops = collect_hops(t, ms);
    return write_plan(t, opt, switch_items(t, ms, hops, reduction, C), reduction, C);
}

}  // namespace collsched::detail
