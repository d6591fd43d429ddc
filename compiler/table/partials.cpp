#include "compiler/table/partials.hpp"

#include <algorithm>
#include <iterator>

#include <fmt/format.h>

#include "compiler/table/send_table.hpp"

namespace collsched {

SourceSet SourceSet::range(std::uint32_t lo, std::uint32_t hi) {
    std::vector<std::uint32_t> v;
    for (std::uint32_t x = lo; x <= hi; ++x) v.push_back(x);
    return SourceSet(std::move(v));
}

std::optional<PartialValue> partial_of(const Messages& ms, MessageId m) {
    if (ms.is_composite(m)) {
        if (!ms.composites()) return std::nullopt;
        const Composite& c = ms.composite(m);
        if (c.kind != MessageKind::partial) return std::nullopt;
        return PartialValue{c.lo, c.sources};
    }
    MessageKey k = ms.key(m);
    if (k.kind != MessageKind::value) return std::nullopt;
    return PartialValue{k.chunk, {k.src}};
}

MessageId partial_message(Composites& reg, const Messages& ms, const SourceSet& s, std::uint32_t chunk) {
    if (s.size() == 1) return ms.value(s.items()[0], chunk);
    return reg.intern(Composite{MessageKind::partial, chunk, 0, {}, s.items()});
}

std::optional<MessageId> find_partial(const Messages& ms, const SourceSet& s, std::uint32_t chunk) {
    if (s.size() == 1) return ms.value(s.items()[0], chunk);
    if (!ms.composites()) return std::nullopt;
    return ms.composites()->find(Composite{MessageKind::partial, chunk, 0, {}, s.items()});
}

std::string partial_name(const Messages& ms, const SourceSet& s, std::uint32_t chunk) {
    std::string set = s.size() == 1 ? fmt::format("{}", s.items()[0]) : source_set_name(s.items());
    return ms.chunks() > 1 ? fmt::format("a({},{})", set, chunk) : fmt::format("a({})", set);
}

namespace {

std::string list_values(const std::vector<std::uint32_t>& v) {
    std::string out;
    for (std::size_t i = 0; i < v.size() && i < 2; ++i) {
        if (i) out += v.size() == 2 ? " and " : ", ";
        out += fmt::format("a({})", v[i]);
    }
    if (v.size() > 2) out += fmt::format(" and {} more", v.size() - 2);
    return out;
}

}  // namespace

Arrival apply_arrival(SourceSet& buffer, const std::vector<std::uint32_t>& sources, std::string* twice) {
    const auto& b = buffer.items();
    std::vector<std::uint32_t> common;
    std::set_intersection(b.begin(), b.end(), sources.begin(), sources.end(), std::back_inserter(common));
    if (common.empty()) {
        std::vector<std::uint32_t> u;
        std::set_union(b.begin(), b.end(), sources.begin(), sources.end(), std::back_inserter(u));
        buffer = SourceSet(std::move(u));
        return Arrival::combined;
    }
    if (common.size() == b.size()) {  // the arrival covers the buffer: a copy
        buffer = SourceSet(sources);
        return Arrival::replaced;
    }
    if (twice) *twice = list_values(common);
    return Arrival::counted_twice;
}

std::string goal_gap(const SourceSet& have, const SourceSet& want) {
    std::vector<std::uint32_t> miss, extra;
    std::set_difference(want.items().begin(), want.items().end(), have.items().begin(), have.items().end(), std::back_inserter(miss));
    std::set_difference(have.items().begin(), have.items().end(), want.items().begin(), want.items().end(), std::back_inserter(extra));
    std::string out;
    if (!miss.empty()) out = "it misses " + list_values(miss);
    if (!extra.empty()) out += (out.empty() ? "it also counts " : "; it also counts ") + list_values(extra);
    return out;
}

void resolve_partials(SendTable& t, Deadline deadline) {
    if (!t.has_composites()) return;
    Composites& reg = *t.composites;
    const std::size_t n = reg.size();
    bool any = false;
    for (const Composite& c : reg.items()) any = any || (c.kind == MessageKind::partial && c.sources.empty());
    if (!any) return;
    const Messages ms = t.messages();
    const std::uint32_t P = t.topology->processors(), C = table_chunks(t);
    std::vector<SourceSet> buffer;
    for (std::uint32_t p = 0; p < P; ++p)
        for (std::uint32_t c = 0; c < C; ++c) buffer.emplace_back(p);
    std::vector<std::optional<MessageId>> resolved(n);
    auto& xs = t.transfers;
    for (std::size_t i = 0; i < xs.size();) {
        if (deadline.passed()) throw LimitReached("time limit (resolving the partials)");
        std::size_t end = i;
        while (end < xs.size() && xs[end].step == xs[i].step) ++end;
        for (std::size_t k = i; k < end; ++k) {
            const std::uint64_t v = idx(xs[k].message);
            if (v < reg.base() || v - reg.base() >= n) continue;
            const Composite ref = reg.items()[v - reg.base()];  // a copy: interning may grow the registry
            if (ref.kind != MessageKind::partial || !ref.sources.empty()) continue;
            auto& r = resolved[v - reg.base()];
            if (!r) r = partial_message(reg, ms, buffer[std::size_t{idx(ref.parts[0])} * C + ref.lo], ref.lo);
            xs[k].message = *r;
        }
        for (std::size_t k = i; k < end; ++k) {
            Node to = t.topology->channel(xs[k].channel).to;
            if (!t.topology->is_processor(to)) continue;
            const Messages now = t.messages();
            if (auto pv = partial_of(now, xs[k].message)) apply_arrival(buffer[std::size_t{idx(to)} * C + pv->chunk], pv->sources);
        }
        i = end;
    }
    sort_table(t, deadline);
}

bool uses_partials(const SendTable& t) {
    if (t.collective.reduces()) return true;
    if (!t.has_composites()) return false;
    for (const Composite& c : t.composites->items())
        if (c.kind == MessageKind::partial) return true;
    return false;
}

std::uint32_t table_chunks(const SendTable& t) { return t.collective.chunks; }

}  // namespace collsched
