// An MSCCL++ plan's copies between GPUs as a send table, for its predicted time (`verify PLAN.json
// --topology M --size S`; compiler/interop/mscclpp_check.hpp plan_table, docs/time.md "Protocols").
#include <algorithm>
#include <set>

#include <fmt/format.h>

#include "compiler/interop/mscclpp_check.hpp"
#include "compiler/table/builder.hpp"
#include "compiler/table/partials.hpp"
#include "support/error.hpp"

namespace collsched::mscclpp {

namespace {

bool uses_switch(const Plan& plan) {
    for (const Gpu& g : plan.gpus) {
        if (!g.switch_groups.empty()) return true;
        for (const Tb& tb : g.tbs)
            for (const Op& op : tb.ops)
                if (op.code == Code::glres || op.code == Code::gstore || op.code == Code::gstorepkt) return true;
    }
    return false;
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
    if (uses_switch(plan))
        throw InputError("switch channels: what the switch reduces and multicasts is no copy between GPUs, and is not timed");
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
    std::set<std::pair<int, int>> linked;
    for (const auto& [step, m] : report.schedule) {
        if (m.value.empty()) continue;
        const auto [r0, c0] = m.value.front();
        std::optional<MessageId> msg;
        if (reduces) {
            std::vector<std::uint32_t> ranks;
            for (auto [r, c] : m.value) {
                if (c != c0) throw InputError(fmt::format("GPU {} sends GPU {} a sum of different chunks, which a table cannot name", m.from, m.to));
                ranks.push_back(std::uint32_t(r));
            }
            msg = partial_message(*reg, ms, SourceSet(std::move(ranks)), std::uint32_t(c0));
        } else if (m.value.size() != 1) {
            throw InputError(fmt::format("GPU {} sends GPU {} several chunks in one, which a table cannot name", m.from, m.to));
        } else if (coll.kind == CollectiveKind::allgather) {
            msg = ms.broadcast(std::uint32_t(r0), std::uint32_t(c0));
        } else if (c0 / C != r0) {  // alltoall: input chunk d * C + j of r0 is m(r0, d, j); its own stays
            msg = ms.personal(std::uint32_t(r0), std::uint32_t(c0 / C), std::uint32_t(c0 % C));
        }
        if (linked.insert({m.from, m.to}).second) check_link(*topo, m.from, m.to);
        if (msg) b.send_cut_through(Step(step), Node{std::uint32_t(m.from)}, Node{std::uint32_t(m.to)}, *msg);
    }
    return std::move(b).finish();
}

}  // namespace collsched::mscclpp
