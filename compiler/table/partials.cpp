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
    return reg.intern_partial(chunk, s.items());
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

PartialBuffers::PartialBuffers(std::uint32_t processors, std::uint32_t chunks)
    : processors_(processors), chunks_(chunks), buffer_(std::size_t{processors} * chunks), singles_(processors), sets_(0) {
    for (std::uint32_t p = 0; p < processors; ++p) {
        singles_[p] = p;
        std::fill_n(buffer_.begin() + std::ptrdiff_t{p} * chunks, chunks, p);
    }
}

std::span<const std::uint32_t> PartialBuffers::sources(SetId s) const {
    if (s < processors_) return {&singles_[s], 1};
    if (s == empty) return {};
    return sets_.items()[s - processors_].sources;
}

PartialBuffers::SetId PartialBuffers::intern(std::span<const std::uint32_t> sorted) {
    if (sorted.empty()) return empty;
    if (sorted.size() == 1) return sorted[0];
    return processors_ + idx(sets_.intern_partial(0, sorted));
}

std::optional<std::pair<std::uint32_t, PartialBuffers::SetId>> PartialBuffers::set_of(const Messages& ms, MessageId m) {
    if (!ms.is_composite(m)) {
        const MessageKey k = ms.key(m);
        if (k.kind != MessageKind::value) return std::nullopt;
        return std::pair{k.chunk, SetId{k.src}};
    }
    if (!ms.composites()) return std::nullopt;
    const Composite& c = ms.composite(m);
    if (c.kind != MessageKind::partial) return std::nullopt;
    const std::uint64_t i = idx(m) - ms.base_size();
    if (i >= of_composite_.size()) of_composite_.resize(std::max<std::uint64_t>(i + 1, 2 * of_composite_.size()), ~SetId{0});
    if (of_composite_[i] == ~SetId{0}) of_composite_[i] = intern(c.sources);
    return std::pair{c.lo, of_composite_[i]};
}

Arrival PartialBuffers::arrive(std::uint32_t p, std::uint32_t chunk, SetId arriving, std::string* twice) {
    SetId& b = buffer_[std::size_t{p} * chunks_ + chunk];
    // a copy of the same sum, or a sum of every source (which covers any buffer): replaced
    if (arriving == b || size(arriving) == processors_) {
        b = arriving;
        return Arrival::replaced;
    }
    const std::span<const std::uint32_t> have = sources(b), come = sources(arriving);
    std::size_t common = 0;
    for (std::size_t i = 0, j = 0; i < have.size() && j < come.size();) {
        if (have[i] < come[j]) ++i;
        else if (come[j] < have[i]) ++j;
        else ++common, ++i, ++j;
    }
    if (common == 0) {
        union_.clear();
        std::set_union(have.begin(), have.end(), come.begin(), come.end(), std::back_inserter(union_));
        b = intern(union_);
        return Arrival::combined;
    }
    if (common == have.size()) {  // the arrival covers the buffer: a copy
        b = arriving;
        return Arrival::replaced;
    }
    if (twice) {
        std::vector<std::uint32_t> both;
        std::set_intersection(have.begin(), have.end(), come.begin(), come.end(), std::back_inserter(both));
        *twice = list_values(both);
    }
    return Arrival::counted_twice;
}

MessageId PartialBuffers::message(SetId s, std::uint32_t chunk, Composites& reg, const Messages& ms) {
    if (s < processors_) return ms.value(s, chunk);
    auto [it, fresh] = named_.try_emplace((std::uint64_t{s} << 32) | chunk);
    if (fresh) it->second = reg.intern_partial(chunk, sets_.items()[s - processors_].sources);
    return it->second;
}

std::string PartialBuffers::name(const Messages& ms, SetId s, std::uint32_t chunk) const {
    const std::span<const std::uint32_t> v = sources(s);
    return partial_name(ms, SourceSet(std::vector<std::uint32_t>(v.begin(), v.end())), chunk);
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
    PartialBuffers buffers(t.topology->processors(), table_chunks(t));
    std::vector<std::optional<MessageId>> resolved(n);
    auto& xs = t.transfers;
    for (std::size_t i = 0; i < xs.size();) {
        if (deadline.passed()) throw LimitReached("time limit (resolving the partials)");
        std::size_t end = i;
        while (end < xs.size() && xs[end].step == xs[i].step) ++end;
        for (std::size_t k = i; k < end; ++k) {
            const std::uint64_t v = idx(xs[k].message);
            if (v < reg.base() || v - reg.base() >= n) continue;
            const Composite& ref = reg.items()[v - reg.base()];
            if (ref.kind != MessageKind::partial || !ref.sources.empty()) continue;
            auto& r = resolved[v - reg.base()];
            if (!r) {
                const std::uint32_t from = idx(ref.parts[0]), chunk = ref.lo;  // copied: interning may grow the registry
                r = buffers.message(buffers.held(from, chunk), chunk, reg, ms);
            }
            xs[k].message = *r;
        }
        for (std::size_t k = i; k < end; ++k) {
            Node to = t.topology->channel(xs[k].channel).to;
            if (!t.topology->is_processor(to)) continue;
            if (auto s = buffers.set_of(ms, xs[k].message)) buffers.arrive(idx(to), s->first, s->second);
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
