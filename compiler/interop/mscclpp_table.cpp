// An MSCCL++ plan's copies between GPUs as a send table, for its predicted time (`verify PLAN.json
// --topology M --size S`; compiler/interop/mscclpp_check.hpp plan_table, docs/time.md "Protocols"); and what a
// table moves between GPUs as a plan's report lists it (table_movement, the writer's last check).
#include <algorithm>
#include <map>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "compiler/interop/export_mscclpp.hpp"
#include "compiler/interop/mscclpp_check.hpp"
#include "compiler/io/export_ranks.hpp"
#include "compiler/table/builder.hpp"
#include "compiler/table/partials.hpp"
#include "support/error.hpp"

namespace collsched::mscclpp {

namespace {

bool uses_packet_switch(const Plan& plan) {
    for (const Gpu& g : plan.gpus)
        for (const Tb& tb : g.tbs)
            for (const Op& op : tb.ops)
                if (op.code == Code::gstorepkt) return true;
    return false;
}

/// The switch of a switch channel's group: the router that reduces or multicasts, joined both ways
/// to every GPU of the group.
Node group_switch(const Topology& t, const std::vector<int>& group) {
    for (std::uint32_t n = t.processors(); n < t.nodes(); ++n) {
        const SwitchFunctions f = t.switch_functions(Node{n});
        if (!f.reduce && !f.multicast) continue;
        if (std::all_of(group.begin(), group.end(), [&](int g) {
                return t.find_channel(Node{std::uint32_t(g)}, Node{n}) && t.find_channel(Node{n}, Node{std::uint32_t(g)});
            }))
            return Node{n};
    }
    throw InputError(fmt::format("{} has no switch that reduces and multicasts joined to every GPU of a switch channel's group ({})", t.spec(),
                                 fmt::join(group, ",")));
}

/// A copy between two GPUs goes over a link of theirs or through routers alone (as MSCCL-IR's
/// sends are checked): a route through a third GPU would be a relay the plan does not make.
void check_link(const Topology& t, int from, int to) {
    const std::vector<ChannelId> route = t.route(Node{std::uint32_t(from)}, Node{std::uint32_t(to)});
    for (std::size_t i = 0; i + 1 < route.size(); ++i)
        if (const Node n = t.channel(route[i]).to; t.is_processor(n))
            throw InputError(fmt::format("{} has no link from GPU {} to GPU {} (its route passes processor {})", t.spec(), from, to, idx(n)));
}

}  // namespace

SendTable plan_table(const Plan& plan, const PlanReport& report, std::shared_ptr<const Topology> topo) {
    const auto P = std::uint32_t(plan.gpus.size());
    if (!report.holds()) throw InputError("the plan does not hold");
    if (uses_packet_switch(plan)) throw InputError("gstorepkt: packets through a switch are not timed");
    if (topo->processors() != P)
        throw InputError(fmt::format("the plan has {} GPUs and {} has {} processors", P, topo->spec(), topo->processors()));
    const Model model = topo->default_model();
    if (model.timing != Timing::hop) throw InputError(fmt::format("{} is timed as wormhole rounds; plans are timed as hop tables", topo->spec()));
    const std::string& name = plan.collective;
    const std::int64_t Ci = plan.gpus.empty() ? 0 : plan.gpus[0].input_chunks;
    Collective coll;
    std::int64_t C = Ci;
    if (name == "allgather") coll.kind = CollectiveKind::allgather;
    else if (name == "allreduce") coll.kind = CollectiveKind::allreduce;
    else if (name == "reducescatter") coll.kind = CollectiveKind::reduce_scatter;
    else if (name == "alltoall") coll.kind = CollectiveKind::alltoall, C = Ci / std::max<std::int64_t>(P, 1);
    else throw InputError(fmt::format("collective \"{}\" has no table form (allgather, allreduce, reducescatter, alltoall)", name));
    for (const Gpu& g : plan.gpus)
        if (g.input_chunks != Ci) throw InputError("the GPUs have different input chunk counts");
    if (C < 1) throw InputError("no whole chunk per datum");
    coll.set_chunks(std::uint64_t(C), *topo);
    TableBuilder b(topo, model, coll);
    const Messages ms = b.messages();
    const bool reduces = coll.kind == CollectiveKind::allreduce || coll.kind == CollectiveKind::reduce_scatter;
    Composites* reg = reduces ? &b.composites() : nullptr;
    // the message a copy carries, named from its input pieces
    auto message = [&](const std::vector<std::pair<int, int>>& value, int from, int to) -> std::optional<MessageId> {
        const auto [r0, c0] = value.front();
        if (reduces) {
            std::vector<std::uint32_t> ranks;
            for (auto [r, c] : value) {
                if (c != c0) throw InputError(fmt::format("GPU {} sends GPU {} a sum of different chunks, which a table cannot name", from, to));
                ranks.push_back(std::uint32_t(r));
            }
            return partial_message(*reg, ms, SourceSet(std::move(ranks)), std::uint32_t(c0));
        }
        if (value.size() != 1) throw InputError(fmt::format("GPU {} sends GPU {} several chunks in one, which a table cannot name", from, to));
        if (coll.kind == CollectiveKind::allgather) return ms.broadcast(std::uint32_t(r0), std::uint32_t(c0));
        if (c0 / C != r0) return ms.personal(std::uint32_t(r0), std::uint32_t(c0 / C), std::uint32_t(c0 % C));  // alltoall: d * C + j of r0
        return std::nullopt;  // its own stays
    };
    // A step of the plan's run is H steps of the table, H the most channels a copy crosses (a route through an
    // NVSwitch or a rail switch as routers: 2 and more): a copy the run puts in step s crosses its route in steps
    // (s-1)H + 1 on, arriving before any copy of a later step of the run leaves, so what depends on it waits for it.
    std::set<std::pair<int, int>> linked;
    std::uint32_t H = 1;
    for (const auto& [step, m] : report.schedule)
        if (!m.value.empty() && linked.insert({m.from, m.to}).second) {
            check_link(*topo, m.from, m.to);
            H = std::max(H, std::uint32_t(topo->route(Node{std::uint32_t(m.from)}, Node{std::uint32_t(m.to)}).size()));
        }
    for (const auto& [step, sm] : report.switch_schedule) H = std::max(H, 2u);  // up, then down
    auto at = [H](std::uint32_t s) { return Step((s - 1) * H + 1); };
    for (std::size_t i = 0; i < report.schedule.size(); ++i) {
        const auto& [step, m] = report.schedule[i];
        if (m.value.empty()) continue;
        const std::optional<MessageId> msg = message(m.value, m.from, m.to);
        // the chunks of one entry of a data op: one put (SendTable::transfer_ops)
        b.op(i < report.schedule_ops.size() ? report.schedule_ops[i] : own_op);
        if (msg) b.send_cut_through(at(step), Node{std::uint32_t(m.from)}, Node{std::uint32_t(m.to)}, *msg);
    }
    b.op(own_op);
    // switch ops: up to the group's switch (glres: every member its own pieces of the sum; gstore: the
    // GPU the value), then the value down to every member (gstore: but the GPU)
    std::map<std::vector<int>, Node> switches;
    for (const auto& [step, sm] : report.switch_schedule) {
        if (sm.value.empty()) continue;
        auto it = switches.find(sm.group);
        if (it == switches.end()) it = switches.emplace(sm.group, group_switch(*topo, sm.group)).first;
        const Node sw = it->second;
        auto hop = [&](Step s, Node from, Node to, const std::vector<std::pair<int, int>>& value) {
            const auto ch = topo->find_channel(from, to);
            if (!ch) throw InputError(fmt::format("{} has no channel {} -> {}", topo->spec(), topo->node_name(from), topo->node_name(to)));
            if (auto msg = message(value, int(idx(from)), int(idx(to)))) b.hop(s, *ch, *msg);
        };
        for (int g : sm.group) {
            if (!sm.reduce && g != sm.gpu) continue;
            std::vector<std::pair<int, int>> own;
            for (auto piece : sm.value)
                if (!sm.reduce || piece.first == g) own.push_back(piece);
            if (!own.empty()) hop(at(step), Node{std::uint32_t(g)}, sw, own);
        }
        for (int g : sm.group)
            if (sm.reduce || g != sm.gpu) hop(at(step) + 1, sw, Node{std::uint32_t(g)}, sm.value);
    }
    return std::move(b).finish();
}

}  // namespace collsched::mscclpp

namespace collsched {

std::vector<std::tuple<int, int, std::vector<std::pair<int, int>>>> table_movement(const SendTable& t) {
    const Messages ms = t.messages();
    const int C = int(table_chunks(t));
    std::vector<std::tuple<int, int, std::vector<std::pair<int, int>>>> out;
    for (const EndpointTransfer& e : endpoint_view(t).transfers) {
        std::vector<std::pair<int, int>> v;
        if (auto pv = partial_of(ms, e.message)) {
            for (std::uint32_t s : pv->sources) v.emplace_back(int(s), int(pv->chunk));
        } else {
            MessageKey k = ms.key(e.message);
            if (k.kind == MessageKind::broadcast) v.emplace_back(int(k.src), int(k.chunk));
            else v.emplace_back(int(k.src), int(k.dst) * C + int(k.chunk));
        }
        std::sort(v.begin(), v.end());
        out.emplace_back(int(idx(e.src)), int(idx(e.dst)), std::move(v));
    }
    std::sort(out.begin(), out.end());
    return out;
}

}  // namespace collsched
