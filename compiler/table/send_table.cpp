#include "compiler/table/send_table.hpp"

#include <algorithm>
#include <numeric>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "support/assert.hpp"
#include "support/error.hpp"
#include "dsl/printer.hpp"

#include "compiler/table/partials.hpp"

namespace collsched {

namespace {

struct ClaimField {
    Claim::Kind kind;
    std::string_view key;        ///< without "_at_most"
    std::string_view statement;  ///< "claim steps", "bound lower", "cite"
};
constexpr ClaimField claim_fields[] = {
    {Claim::Kind::steps, "claim", "claim steps"},
    {Claim::Kind::queue, "claim_queue", "claim queue"},
    {Claim::Kind::buffer, "claim_buffer", "claim buffer"},
    {Claim::Kind::lower_bound, "lower_bound", "bound lower"},
    {Claim::Kind::cite, "cite", "cite"},
    {Claim::Kind::rounds, "claim_rounds", "claim rounds"},  // R (docs/semantics.md, bandwidth)
};

const ClaimField& field_of(Claim::Kind k) {
    for (const ClaimField& f : claim_fields)
        if (f.kind == k) return f;
    COLLSCHED_ASSERT(false);
    return claim_fields[0];
}

}  // namespace

std::string Claim::key() const { return std::string(field_of(kind).key) + (at_most ? "_at_most" : ""); }

std::string Claim::json() const {
    return std::visit([](const auto& v) { return nlohmann::json(v).dump(); }, value);
}

std::string Claim::statement() const {
    const ClaimField& f = field_of(kind);
    if (const auto* text = std::get_if<std::string>(&value)) return fmt::format("{} {}", f.statement, dsl::quote(*text));
    std::string v = std::holds_alternative<std::int64_t>(value) ? std::to_string(std::get<std::int64_t>(value))
                                                                : fmt::format("[{}]", fmt::join(std::get<std::vector<std::int64_t>>(value), ", "));
    return fmt::format("{} {} {}", f.statement, at_most ? "<=" : "=", v);
}

std::optional<Claim> Claim::of_key(std::string_view key) {
    Claim c;
    c.at_most = key.ends_with("_at_most");
    if (c.at_most) key.remove_suffix(8);
    const ClaimField* f = nullptr;
    for (const ClaimField& x : claim_fields)
        if (x.key == key) f = &x;
    if (!f || (c.at_most && (f->kind == Kind::lower_bound || f->kind == Kind::cite))) return std::nullopt;
    c.kind = f->kind;
    return c;
}

std::optional<Claim> Claim::from_field(std::string_view key, std::string_view json) {
    std::optional<Claim> of = of_key(key);
    if (!of) return std::nullopt;
    Claim& c = *of;
    nlohmann::json v = nlohmann::json::parse(json, nullptr, false);
    if (c.kind == Kind::cite) {
        if (!v.is_string()) return std::nullopt;
        c.value = v.get<std::string>();
    } else if (c.kind == Kind::queue) {
        if (!v.is_array()) return std::nullopt;
        std::vector<std::int64_t> items;
        for (const auto& x : v) {
            if (!x.is_number_integer()) return std::nullopt;
            items.push_back(x.get<std::int64_t>());
        }
        c.value = std::move(items);
    } else {
        if (!v.is_number_integer()) return std::nullopt;
        c.value = v.get<std::int64_t>();
    }
    if (c.json() != json) return std::nullopt;  // written back exactly as read, or kept as text
    return c;
}

std::vector<std::pair<std::string, std::string>> SendTable::top_fields() const {
    std::vector<std::pair<std::string, std::string>> out;
    for (const Claim& c : claims) out.emplace_back(c.key(), c.json());
    if (!claims.empty() && !extra_fields.empty()) {
        // Only a table read from a file has both, and it read them in key order: keep that order.
        out.insert(out.end(), extra_fields.begin(), extra_fields.end());
        std::stable_sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
        return out;
    }
    out.insert(out.end(), extra_fields.begin(), extra_fields.end());
    return out;
}

void SendTable::add_field(std::string key, std::string json) {
    if (auto c = Claim::from_field(key, json)) claims.push_back(std::move(*c));
    else extra_fields.emplace_back(std::move(key), std::move(json));
}

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

namespace {

/// A comparison of `less` that polls `deadline` every 2^20 calls, counted in `calls` (the sorts
/// copy their comparison into every recursion: a count of its own would start again in each);
/// LimitReached leaves the range in some order.
template <class Less>
auto polling(Less less, Deadline deadline, std::uint64_t& calls) {
    return [less, deadline, &calls](const auto& a, const auto& b) {
        if ((++calls & 0xfffff) == 0 && deadline.passed()) throw LimitReached("time limit (sorting a table)");
        return less(a, b);
    };
}

/// sort_transfers, polling `deadline`.
void sort_transfers_polled(std::vector<Transfer>& transfers, std::size_t channels, Deadline deadline) {
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
        std::uint64_t calls = 0;
        std::sort(transfers.begin(), transfers.end(), polling(std::less<Transfer>{}, deadline, calls));
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
    for (std::size_t s = 0; s + 1 < start.size(); ++s) {
        if ((s & 0x3ff) == 0 && deadline.passed()) throw LimitReached("time limit (sorting a table)");
        sorter.sort(std::span<Transfer>(out.data() + start[s], out.data() + start[s + 1]), channels);
    }
    transfers = std::move(out);
}

}  // namespace

void sort_transfers(std::vector<Transfer>& transfers, std::size_t channels) { sort_transfers_polled(transfers, channels, Deadline{}); }

bool SendTable::is_sorted() const { return std::is_sorted(transfers.begin(), transfers.end()); }

void SendTable::sort() { sort_table(*this, Deadline{}); }

void sort_table(SendTable& t, Deadline deadline) {
    auto& transfers = t.transfers;
    auto& transfer_extras = t.transfer_extras;
    auto& transfer_origins = t.transfer_origins;
    if (t.is_sorted()) return;
    if (transfer_extras.empty() && transfer_origins.empty() && t.transfer_ops.empty()) {
        sort_transfers_polled(transfers, t.topology ? t.topology->channels().size() : 0, deadline);
        return;
    }
    std::vector<std::uint64_t> order(transfers.size());
    std::iota(order.begin(), order.end(), 0);
    std::uint64_t calls = 0;
    std::stable_sort(order.begin(), order.end(), polling([&](auto a, auto b) { return transfers[a] < transfers[b]; }, deadline, calls));
    std::vector<std::uint64_t> where(order.size());
    std::vector<Transfer> sorted(transfers.size());
    for (std::uint64_t i = 0; i < order.size(); ++i) {
        sorted[i] = transfers[order[i]];
        where[order[i]] = i;
    }
    transfers = std::move(sorted);
    for (auto& [i, text] : transfer_extras) i = where[i];
    std::sort(transfer_extras.begin(), transfer_extras.end());
    for (std::vector<std::uint32_t>* per : {&transfer_origins, &t.transfer_ops})
        if (per->size() == order.size()) {
            std::vector<std::uint32_t> kept(order.size());
            for (std::uint64_t i = 0; i < order.size(); ++i) kept[i] = (*per)[order[i]];
            *per = std::move(kept);
        }
}

std::uint64_t SendTable::total_rounds(Step T) const {
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

BandwidthCost bandwidth_cost(const SendTable& t) { return bandwidth_cost(t, t.steps()); }
BandwidthCost bandwidth_cost(const SendTable& t, Step T) { return {T, t.total_rounds(T), t.collective.chunks}; }

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
    {
        const auto& items = t.composites->items();
        bool ordered = std::any_of(items.begin(), items.end(), [](const Composite& c) { return c.kind == MessageKind::combined; });
        bool sets = std::any_of(items.begin(), items.end(), [](const Composite& c) { return c.kind == MessageKind::partial; });
        if (sets && (ordered || t.collective.row().combine == coll::Combine::ordered))
            return "the table mixes partials a({...}) of a commutative reduction with the ordered rule (combined values a(i..j) or "
                   "prefix); a table uses one of the two (docs/semantics.md, \"Reductions\")";
        if (ordered && t.collective.reduces())
            return fmt::format("{} is a commutative reduction: its values are partials a({{...}}), not combined values a(i..j)",
                               t.collective.to_string());
    }
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

void SendTable::canonicalize_composites() { collsched::canonicalize_composites(*this, Deadline{}); }

void canonicalize_composites(SendTable& t, Deadline deadline) {
    auto poll = [&](std::size_t i) {
        if ((i & 0xffff) == 0 && deadline.passed()) throw LimitReached("time limit (the table's composites)");
    };
    if (std::string why = t.collective.reduction_problem(t.topology->processors(), t.collective.chunks); !why.empty()) throw InputError(why);
    const bool partial_goals = uses_partials(t);
    if (t.collective.combines() || partial_goals) t.composite_registry();  // the goals a(0..p) get ids too
    if (t.composites && t.composites->empty() && !t.collective.combines() && !partial_goals) t.composites.reset();  // the fast path: no pass
    if (!t.composites) return;
    const std::uint64_t base = t.composites->base();
    // Keep only the composites in use: rebuild the registry from them.
    std::vector<char> used(t.composites->size(), 0);
    for (const Transfer& x : t.transfers)
        if (idx(x.message) >= base) used[idx(x.message) - base] = 1;
    for (const Requirement& q : t.requirements)
        if (idx(q.message) >= base) used[idx(q.message) - base] = 1;
    auto fresh = std::make_shared<Composites>(base);
    std::vector<MessageId> first(t.composites->size());
    for (std::size_t i = 0; i < used.size(); ++i) {
        poll(i);
        if (used[i]) first[i] = fresh->intern(t.composites->items()[i]);
    }
    // The goals polled too: an allreduce on 1,024 GPUs interns a sum of up to 1,024 sources per
    // chunk and processor, seconds past --timeout unpolled.
    std::size_t goals = 0;
    if (!partial_goals) t.collective.for_each_value_goal(t.topology->processors(), [&](std::uint32_t lo, std::uint32_t hi, Node) {
        poll(++goals);
        fresh->intern({MessageKind::combined, lo, hi, {}, {}});
    });
    if (partial_goals) {
        const Messages ms = t.messages();
        std::optional<std::pair<std::uint32_t, std::uint32_t>> last;  // every processor of an allreduce has the same goal per chunk
        t.collective.for_each_partial_goal(t.topology->processors(), table_chunks(t), [&](std::uint32_t c, std::uint32_t hi, Node) {
            if ((++goals & 0x3ff) == 0 && deadline.passed()) throw LimitReached("time limit (the table's composites)");
            if (last == std::pair{c, hi}) return;
            last = {c, hi};
            partial_message(*fresh, ms, SourceSet::range(0, hi), c);
        });
    }
    poll(0);
    std::vector<MessageId> second = fresh->canonicalize();
    poll(0);
    auto map = [&](MessageId m) {
        if (idx(m) < base) return m;
        return second[idx(first[idx(m) - base]) - base];
    };
    for (Transfer& x : t.transfers) x.message = map(x.message);
    for (Requirement& q : t.requirements) q.message = map(q.message);
    t.composites = fresh->empty() ? nullptr : std::move(fresh);
    sort_table(t, deadline);
}

}  // namespace collsched
