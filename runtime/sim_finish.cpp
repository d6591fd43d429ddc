// The end of a run: who holds what, the deliveries counted against the collective and the
// requirements, the statistics (holes, queue high-water marks, busiest channels) and the verdict.
#include "runtime/sim_replay.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "support/assert.hpp"
#include "support/error.hpp"

#include "compiler/table/partials.hpp"

namespace collsched::sim {

bool Simulator::holds(MessageId m, Node d) const {
    if (have_ && processor(idx(d))) return have_->holds(idx(d), m);
    if (streamed_) {
        const std::uint32_t slot = stream_find(idx(d), m);
        if (slot == never) return table_.collective.initial(msgs_, m) && msgs_.origin(m) == d;
        if (!processor(idx(d)) && !replicate_) return stock_[slot] > 0;
        return held_[slot] != never;
    }
    const std::uint32_t b = bucket(m);
    if (b == never || slot_begin_[b] == slot_begin_[b + 1])
        return table_.collective.initial(msgs_, m) && msgs_.origin(m) == d;
    auto first = slot_node_.begin() + slot_begin_[b], last = slot_node_.begin() + slot_begin_[b + 1];
    auto it = std::lower_bound(first, last, idx(d));
    if (it == last || *it != idx(d)) return false;
    const auto slot = static_cast<std::size_t>(it - slot_node_.begin());
    if (!processor(idx(d)) && !replicate_) return stock_[slot] > 0;
    return held_[slot] != never;
}

// Deliveries: every goal of the collective, then every requirement that is not one of them.
void Simulator::count_deliveries() {
    std::vector<Requirement> reqs = table_.requirements;
    auto key = [](const Requirement& x) { return std::pair(idx(x.message), idx(x.at)); };
    std::sort(reqs.begin(), reqs.end(), [&](const auto& x, const auto& y) { return key(x) < key(y); });
    reqs.erase(std::unique(reqs.begin(), reqs.end()), reqs.end());
    std::vector<std::uint8_t> is_goal(reqs.size(), 0);
    auto visit = [&](MessageId m, Node d) {
        ++rep_.deliveries_required;
        if (holds(m, d)) {
            ++rep_.deliveries_done;
        } else {
            ++rep_.missing_count;
            if (rep_.missing.size() < listed_missing) rep_.missing.push_back({m, d});
        }
    };
    table_.collective.for_each_goal(P_, [&](MessageId m, Node d) {
        if (!reqs.empty()) {
            Requirement r{m, d};
            auto it = std::lower_bound(reqs.begin(), reqs.end(), r, [&](const auto& x, const auto& y) { return key(x) < key(y); });
            if (it != reqs.end() && *it == r) is_goal[static_cast<std::size_t>(it - reqs.begin())] = 1;
        }
        visit(m, d);
    });
    for (std::size_t i = 0; i < reqs.size(); ++i)
        if (!is_goal[i]) visit(reqs[i].message, reqs[i].at);
    // reduce and prefix: the combined values a(lo..hi) (interned with the table's composites)
    if (!uses_partials(table_)) table_.collective.for_each_value_goal(P_, [&](std::uint32_t lo, std::uint32_t hi, Node d) {
        const Composites* reg = msgs_.composites();
        auto id = reg ? reg->find({MessageKind::combined, lo, hi, {}, {}}) : std::nullopt;
        COLLSCHED_ASSERT(id.has_value());  // SendTable::canonicalize_composites interns the goals
        visit(*id, d);
    });
    if (uses_partials(table_)) {
        table_.collective.for_each_partial_goal(P_, table_chunks(table_), [&](std::uint32_t c, std::uint32_t hi, Node d) {
            std::optional<MessageId> id = find_partial(msgs_, SourceSet::range(0, hi), c);
            COLLSCHED_ASSERT(id.has_value());  // SendTable::canonicalize_composites interns the goals
            visit(*id, d);
        });
    }
}

void Simulator::finish(bool ran_through) {
    if (ran_through) rep_.simulated_steps = rep_.steps;
    const Step W = rep_.simulated_steps;
    rep_.holes.resize(P_);
    for (std::uint32_t p = 0; p < P_; ++p) {
        rep_.holes[p] = W - recv_steps_[p];
        rep_.total_holes += rep_.holes[p];
    }
    if (!wormhole_) {
        for (std::uint32_t r = 0; r < R_; ++r) {
            const std::uint32_t level = std::max<std::uint32_t>(1, topo_.level(Node{P_ + r}));
            if (rep_.level_high_water.size() < level) rep_.level_high_water.resize(level, 0);
            rep_.level_high_water[level - 1] = std::max(rep_.level_high_water[level - 1], rep_.router_high_water[r]);
            rep_.max_high_water = std::max(rep_.max_high_water, rep_.router_high_water[r]);
        }
    } else {
        rep_.router_high_water.clear();
    }
    std::vector<ChannelId> used;
    for (std::uint32_t c = 0; c < rep_.channel_transfers.size(); ++c)
        if (rep_.channel_transfers[c] > 0) used.push_back(ChannelId{c});
    // Busiest by transfers / cap, compared exactly by cross-multiplication (both factors are
    // below 2^32); ties to the lower id.
    auto busier = [&](ChannelId x, ChannelId y) {
        const std::uint64_t a = rep_.channel_transfers[idx(x)] * topo_.channel(y).cap;
        const std::uint64_t z = rep_.channel_transfers[idx(y)] * topo_.channel(x).cap;
        return a != z ? a > z : idx(x) < idx(y);
    };
    const std::size_t top = std::min(listed_busiest, used.size());
    std::partial_sort(used.begin(), used.begin() + static_cast<std::ptrdiff_t>(top), used.end(), busier);
    rep_.busiest.assign(used.begin(), used.begin() + static_cast<std::ptrdiff_t>(top));
    count_deliveries();
    if (!ran_through) {
        rep_.missing.clear();  // obvious after a halt; the report names the broken rule instead
        return;
    }
    if (rep_.missing_count == 0) {
        rep_.status = SimStatus::completed;
        return;
    }
    rep_.status = SimStatus::incomplete;
    SimViolation v;
    v.rule = SimRule::completeness;
    v.step = rep_.steps;
    v.node = rep_.missing.front().at;
    v.messages = {rep_.missing.front().message};
    const std::uint64_t more = rep_.missing_count - 1;
    v.message = fmt::format("{} {}: processor {} does not hold {} at the end of {} {}{}", unit(), rep_.steps,
                            topo_.node_name(rep_.missing.front().at), msgs_.name(rep_.missing.front().message), unit(),
                            rep_.steps,
                            more == 0 ? std::string() : fmt::format(" ({} more {} missing)", more, more == 1 ? "delivery is" : "deliveries are"));
    rep_.violation = std::move(v);
}

}  // namespace collsched::sim
