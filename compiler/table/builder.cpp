#include "compiler/table/builder.hpp"

#include <fmt/format.h>

#include "compiler/table/partials.hpp"
#include "support/assert.hpp"
#include "support/budget.hpp"
#include "support/error.hpp"

namespace collsched {

TableBuilder::TableBuilder(std::shared_ptr<const Topology> topo, Model model, Collective coll) {
    table_.topology = std::move(topo);
    table_.model = model;
    table_.collective = std::move(coll);
}

Step TableBuilder::send_cut_through(Step step, Node src, Node dst, MessageId m) {
    route_.clear();
    table_.topology->route(src, dst, route_);
    Step s = step;
    for (ChannelId c : route_) hop(s++, c, m);
    return s - 1;
}

SendTable TableBuilder::finish(Deadline deadline) && {
    // A combining collective's goals (a(0..p), or partial sums per chunk) must be interned even when
    // no transfer carries a composite: the checkers and the simulator look them up.
    if (table_.composites || table_.collective.combines() || uses_partials(table_)) canonicalize_composites(table_, deadline);
    else sort_table(table_, deadline);
    return std::move(table_);
}

SendTable bft_phase_alltoall(std::shared_ptr<const Topology> topo, Deadline deadline) {
    auto poll = [&] {
        if (deadline.passed()) throw LimitReached("time limit (the phase total exchange)");
    };
    const Topology& t = *topo;
    if (t.family() != Family::bft) throw InputError(fmt::format("{}: the phase total exchange needs a binary fat tree", t.spec()));
    const std::uint32_t L = t.tree_levels(), n = t.processors();
    bool ebft = true, cbft = true;
    for (std::uint32_t i = 1; i <= L; ++i) {
        ebft = ebft && t.level_caps()[i - 1] == 1u << (i - 1);
        cbft = cbft && t.level_caps()[i - 1] == 1u;
    }
    if (!ebft && !cbft)
        throw InputError(fmt::format("{}: the built-in phase total exchange covers the constant and exponential "
                                     "capacity patterns; write other patterns as a schedule",
                                     t.spec()));
    Model model;
    model.queues = QueueKind::none;
    TableBuilder b(topo, model, Collective{CollectiveKind::alltoall, Node{0}, {}});
    Messages ms = b.messages();
    b.reserve(std::size_t{n} * (n - 1) * L);
    Step start = 1;
    for (std::uint32_t i = 0; i < L; ++i) {
        std::uint32_t h = L - i, S = 1u << (h - 1);
        if (ebft) {
            // Every leaf sends at once: in step l of the phase, k sends to k ^ S ^ l.
            for (std::uint32_t l = 0; l < S; ++l) {
                poll();
                for (std::uint32_t k = 0; k < n; ++k) {
                    std::uint32_t d = k ^ S ^ l;
                    b.send_cut_through(start + l, Node{k}, Node{d}, ms.personal(k, d));
                }
            }
            start += S + 2;
        } else {
            // One sender per side of every level-h router at a time: S periods of S messages.
            for (std::uint32_t base = 0; base < n; base += 2 * S) {
                poll();
                for (std::uint32_t k = 0; k < S; ++k)
                    for (std::uint32_t l = 0; l < S; ++l) {
                        Step s = start + k * S + l;
                        std::uint32_t a = base + k, bb = base + S + k;
                        b.send_cut_through(s, Node{a}, Node{base + S + l}, ms.personal(a, base + S + l));
                        b.send_cut_through(s, Node{bb}, Node{base + l}, ms.personal(bb, base + l));
                    }
            }
            start += S * S + 2;
        }
    }
    poll();
    return std::move(b).finish();
}

}  // namespace collsched
