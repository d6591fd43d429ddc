#include "compiler/send_table.hpp"

#include <algorithm>
#include <numeric>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace collsched {

void StepSorter::sort(std::span<Transfer> step, std::size_t channels) {
    const std::size_t n = step.size();
    if (n < 2) return;
    auto by_channel = [](const Transfer& a, const Transfer& b) {
        return std::pair(idx(a.channel), idx(a.message)) < std::pair(idx(b.channel), idx(b.message));
    };
    auto by_message = [](const Transfer& a, const Transfer& b) { return idx(a.message) < idx(b.message); };
    if (n * 8 < channels) {
        if (!std::is_sorted(step.begin(), step.end(), by_channel)) std::sort(step.begin(), step.end(), by_channel);
        return;
    }
    at_.assign(channels + 1, 0);
    for (const Transfer& t : step) ++at_[idx(t.channel) + 1];
    for (std::size_t c = 1; c <= channels; ++c) at_[c] += at_[c - 1];
    buf_.resize(n);
    for (const Transfer& t : step) buf_[at_[idx(t.channel)]++] = t;
    std::copy(buf_.begin(), buf_.end(), step.begin());
    for (auto run = step.begin(); run != step.end();) {
        auto end = run + 1;
        while (end != step.end() && end->channel == run->channel) ++end;
        if (end - run > 1 && !std::is_sorted(run, end, by_message)) std::sort(run, end, by_message);
        run = end;
    }
}

void sort_transfers(std::vector<Transfer>& transfers, std::size_t channels) {
    const std::size_t N = transfers.size();
    if (N < 2) return;
    Step max_step = 0;
    std::uint32_t max_channel = 0;
    for (const Transfer& t : transfers) {
        max_step = std::max(max_step, t.step);
        max_channel = std::max(max_channel, idx(t.channel));
    }
    // Sparse steps, or channel ids the topology does not have (a table not checked yet): one
    // comparison sort, which needs no array indexed by either.
    if (max_step > 4 * N + 1024 || max_channel >= channels) {
        std::sort(transfers.begin(), transfers.end());
        return;
    }
    std::vector<std::uint64_t> start(std::size_t{max_step} + 2, 0);
    for (const Transfer& t : transfers) ++start[std::size_t{t.step} + 1];
    for (std::size_t s = 1; s < start.size(); ++s) start[s] += start[s - 1];
    std::vector<Transfer> out(N);
    {
        std::vector<std::uint64_t> pos(start.begin(), start.end() - 1);
        for (const Transfer& t : transfers) out[pos[t.step]++] = t;
    }
    StepSorter sorter;
    for (std::size_t s = 0; s + 1 < start.size(); ++s)
        sorter.sort(std::span<Transfer>(out.data() + start[s], out.data() + start[s + 1]), channels);
    transfers = std::move(out);
}

bool SendTable::is_sorted() const { return std::is_sorted(transfers.begin(), transfers.end()); }

void SendTable::sort() {
    if (is_sorted()) return;
    if (transfer_extras.empty() && transfer_origins.empty()) {
        sort_transfers(transfers, topology ? topology->channels().size() : 0);
        return;
    }
    std::vector<std::uint64_t> order(transfers.size());
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](auto a, auto b) { return transfers[a] < transfers[b]; });
    std::vector<std::uint64_t> where(order.size());
    std::vector<Transfer> sorted(transfers.size());
    for (std::uint64_t i = 0; i < order.size(); ++i) {
        sorted[i] = transfers[order[i]];
        where[order[i]] = i;
    }
    transfers = std::move(sorted);
    for (auto& [i, text] : transfer_extras) i = where[i];
    std::sort(transfer_extras.begin(), transfer_extras.end());
    if (transfer_origins.size() == order.size()) {
        std::vector<std::uint32_t> origin(order.size());
        for (std::uint64_t i = 0; i < order.size(); ++i) origin[i] = transfer_origins[order[i]];
        transfer_origins = std::move(origin);
    }
}

std::uint64_t SendTable::total_rounds() const {
    const Step T = steps();
    std::uint64_t r = T;
    for (std::size_t i = 0; i < step_rounds.size() && i < T; ++i) r += step_rounds[i] - 1;
    return r;
}

void SendTable::normalize_rounds() {
    if (step_rounds.size() > steps()) step_rounds.resize(steps());
    while (!step_rounds.empty() && step_rounds.back() == 1) step_rounds.pop_back();
}

std::string BandwidthCost::fraction() const {
    std::uint64_t a = rounds, b = chunks;
    std::uint64_t g = std::gcd(a, b);
    if (g > 1) a /= g, b /= g;
    return b == 1 ? fmt::format("{}", a) : fmt::format("{}/{}", a, b);
}

BandwidthCost bandwidth_cost(const SendTable& t) { return {t.steps(), t.total_rounds(), t.collective.chunks}; }

std::string bandwidth_fields_json(const SendTable& t) {
    if (!t.uses_bandwidth_model()) return "";
    std::string s = fmt::format(" \"chunks\": {},\n", t.collective.chunks);
    if (!t.step_rounds.empty()) s += fmt::format(" \"rounds\": [{}],\n", fmt::join(t.step_rounds, ", "));
    return s;
}

std::string rounds_problem(const SendTable& t) {
    if (t.model.timing != Timing::wormhole) return "";
    for (std::size_t i = 0; i < t.step_rounds.size(); ++i)
        if (t.step_rounds[i] > 1)
            return fmt::format("step {} has {} rounds, but under wormhole timing the steps are rounds already (rounds need hop timing)", i + 1,
                               t.step_rounds[i]);
    return "";
}

std::uint32_t payload(const Messages& ms, MessageId m) {
    if (!ms.is_composite(m) || ms.composite(m).kind != MessageKind::bundle) return 1;
    return static_cast<std::uint32_t>(ms.composite(m).parts.size());
}

double table_cost(const SendTable& t) {
    const Step T = t.steps();
    if (t.model.timing != Timing::wormhole) return T;
    if (!t.has_composites()) return T * (t.model.ts + t.model.tc);
    Messages ms = t.messages();
    double cost = 0;
    Step done = 0;  // rounds costed so far
    for (std::size_t i = 0; i < t.transfers.size();) {
        Step r = t.transfers[i].step;
        std::uint32_t most = 1;
        for (; i < t.transfers.size() && t.transfers[i].step == r; ++i) most = std::max(most, payload(ms, t.transfers[i].message));
        cost += (r - 1 - done) * (t.model.ts + t.model.tc) + t.model.ts + t.model.tc * most;
        done = r;
    }
    return cost;
}

std::string cost_breakdown(const SendTable& t) {
    if (t.model.timing != Timing::wormhole || !t.has_composites()) return "";
    Messages ms = t.messages();
    std::vector<std::uint32_t> most(t.steps(), 1);
    for (const Transfer& x : t.transfers) most[x.step - 1] = std::max(most[x.step - 1], payload(ms, x.message));
    std::string list;
    for (std::size_t r = 0; r < most.size() && r < 16; ++r) list += fmt::format("{}{}", r ? ", " : "", most[r]);
    if (most.size() > 16) list += ", ...";
    return fmt::format("sum over {} rounds of ts + tc * payload, largest payload per round: {}", most.size(), list);
}

std::string composite_problem(const SendTable& t) {
    if (!t.has_composites()) return "";
    Messages ms = t.messages();
    for (const Requirement& q : t.requirements)
        if (ms.is_composite(q.message) && ms.composite(q.message).kind == MessageKind::bundle)
            return fmt::format("requirement {} at {}: require each part of a bundle, not the bundle", ms.name(q.message), idx(q.at));
    if (t.model.timing == Timing::wormhole) return "";
    for (const Transfer& x : t.transfers)
        if (ms.is_composite(x.message) && ms.composite(x.message).kind == MessageKind::bundle)
            return fmt::format("step {}: {} is a bundle, and bundles need timing=wormhole: under hop timing a step moves one message "
                               "per unit of capacity",
                               x.step, ms.name(x.message));
    return "";
}

void SendTable::canonicalize_composites() {
    if (collective.combines()) composite_registry();  // the goals a(0..p) get ids too
    if (composites && composites->empty() && !collective.combines()) composites.reset();  // the fast path: no pass
    if (!composites) return;
    const std::uint64_t base = composites->base();
    // Keep only the composites in use: rebuild the registry from them.
    std::vector<char> used(composites->size(), 0);
    for (const Transfer& x : transfers)
        if (idx(x.message) >= base) used[idx(x.message) - base] = 1;
    for (const Requirement& q : requirements)
        if (idx(q.message) >= base) used[idx(q.message) - base] = 1;
    auto fresh = std::make_shared<Composites>(base);
    std::vector<MessageId> first(composites->size());
    for (std::size_t i = 0; i < used.size(); ++i)
        if (used[i]) first[i] = fresh->intern(composites->items()[i]);
    collective.for_each_value_goal(topology->processors(), [&](std::uint32_t lo, std::uint32_t hi, Node) {
        fresh->intern({MessageKind::combined, lo, hi, {}});
    });
    std::vector<MessageId> second = fresh->canonicalize();
    auto map = [&](MessageId m) {
        if (idx(m) < base) return m;
        return second[idx(first[idx(m) - base]) - base];
    };
    for (Transfer& x : transfers) x.message = map(x.message);
    for (Requirement& q : requirements) q.message = map(q.message);
    composites = fresh->empty() ? nullptr : std::move(fresh);
    sort();
}

}  // namespace collsched
