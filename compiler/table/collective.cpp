#include "compiler/table/collective.hpp"
#include "compiler/table/collective_hint.hpp"

#include <algorithm>
#include <charconv>
#include <functional>

#include <fmt/format.h>

#include "compiler/topology/topology.hpp"
#include "support/assert.hpp"
#include "support/edit_distance.hpp"
#include "support/error.hpp"
#include "support/hash.hpp"
#include "support/number.hpp"

namespace collsched {

MessageKey Messages::key(MessageId m) const {
    std::uint64_t v = idx(m), pp = std::uint64_t{p_} * p_;
    if (v < base_size()) {
        const std::uint32_t c = static_cast<std::uint32_t>(v % chunks_);
        v /= chunks_;
        if (v < pp) return {MessageKind::personal, static_cast<std::uint32_t>(v / p_), static_cast<std::uint32_t>(v % p_), c};
        if (v < pp + p_) return {MessageKind::broadcast, static_cast<std::uint32_t>(v - pp), 0, c};
        return {MessageKind::value, static_cast<std::uint32_t>(v - pp - p_), 0, c};
    }
    if (!c_) return {MessageKind::bundle, static_cast<std::uint32_t>(v - base_size()), 0};  // a composite id without its registry
    const Composite& c = composite(m);
    if (c.kind == MessageKind::combined) return {MessageKind::combined, c.lo, c.hi};
    return {c.kind, static_cast<std::uint32_t>(v - base_size()), 0};
}

std::string source_set_name(const std::vector<std::uint32_t>& s) {
    std::string out = "{";
    for (std::size_t i = 0; i < s.size();) {
        std::size_t j = i;
        while (j + 1 < s.size() && s[j + 1] == s[j] + 1) ++j;
        if (i) out += ',';
        if (j >= i + 2) out += fmt::format("{}..{}", s[i], s[j]);
        else if (j == i + 1) out += fmt::format("{},{}", s[i], s[j]);
        else out += fmt::format("{}", s[i]);
        i = j + 1;
    }
    return out + "}";
}

std::string Messages::name(MessageId m) const {
    if (is_composite(m) && !c_) return fmt::format("composite #{}", idx(m) - base_size());
    MessageKey k = key(m);
    switch (k.kind) {
        case MessageKind::personal:
            return chunks_ > 1 ? fmt::format("m({},{},{})", k.src, k.dst, k.chunk) : fmt::format("m({},{})", k.src, k.dst);
        case MessageKind::broadcast: return chunks_ > 1 ? fmt::format("b({},{})", k.src, k.chunk) : fmt::format("b({})", k.src);
        case MessageKind::value: return chunks_ > 1 ? fmt::format("a({},{})", k.src, k.chunk) : fmt::format("a({})", k.src);
        case MessageKind::combined: return fmt::format("a({}..{})", k.src, k.dst);
        case MessageKind::partial: {
            const Composite& c = composite(m);
            if (c.sources.empty()) return fmt::format("partial({},{})", idx(c.parts[0]), c.lo);  // a DSL reference not yet resolved
            return chunks_ > 1 ? fmt::format("a({},{})", source_set_name(c.sources), c.lo) : fmt::format("a({})", source_set_name(c.sources));
        }
        case MessageKind::bundle: {
            std::string s;
            for (MessageId p : composite(m).parts) {
                if (!s.empty()) s += '+';
                s += name(p);
            }
            return s;
        }
    }
    return "?";
}

namespace {

/// The hash of a composite's key: kind, lo, hi, then its parts and its sources as one sequence of words (two
/// composites are the same when these are), two words a multiplication (a partial has up to P sources: the
/// multiplications in a chain were most of interning them), then the sequence's length.
std::uint64_t key_hash(MessageKind kind, std::uint32_t lo, std::uint32_t hi, std::span<const MessageId> parts, std::span<const std::uint32_t> sources) {
    std::uint64_t h = 0xcbf29ce484222325ull;
    auto mix = [&h](std::uint64_t x) { h = (h ^ x) * 0x9e3779b97f4a7c15ull; };
    mix(static_cast<std::uint32_t>(kind));
    mix(lo);
    mix(hi);
    std::uint64_t carry = 0;
    bool odd = false;
    auto word = [&](std::uint32_t x) {
        if (odd) mix(carry | (std::uint64_t{x} << 32));
        else carry = x;
        odd = !odd;
    };
    for (MessageId p : parts) word(idx(p));
    std::size_t i = 0;
    if (!odd)
        for (; i + 1 < sources.size(); i += 2) mix(sources[i] | (std::uint64_t{sources[i + 1]} << 32));
    for (; i < sources.size(); ++i) word(sources[i]);
    if (odd) mix(carry);
    mix(parts.size() + sources.size());
    return murmur3_fmix64(h);  // the slot is taken from the low bits, the tag from the high
}

std::uint64_t composite_hash(const Composite& c) { return key_hash(c.kind, c.lo, c.hi, c.parts, c.sources); }

/// composite_hash(Composite{MessageKind::partial, lo, 0, {}, sources}).
std::uint64_t partial_hash(std::uint32_t lo, std::span<const std::uint32_t> sources) { return key_hash(MessageKind::partial, lo, 0, {}, sources); }

/// The i-th word of a composite's parts and sources as one sequence.
std::uint32_t key_word(const Composite& c, std::size_t i) { return i < c.parts.size() ? idx(c.parts[i]) : c.sources[i - c.parts.size()]; }

/// same_key(a, Composite{MessageKind::partial, lo, 0, {}, sources}).
bool same_partial(const Composite& a, std::uint32_t lo, std::span<const std::uint32_t> sources) {
    if (a.kind != MessageKind::partial || a.lo != lo || a.hi != 0 || a.parts.size() + a.sources.size() != sources.size()) return false;
    if (a.parts.empty()) return std::equal(sources.begin(), sources.end(), a.sources.begin());
    for (std::size_t i = 0; i < sources.size(); ++i)
        if (key_word(a, i) != sources[i]) return false;
    return true;
}


bool same_key(const Composite& a, const Composite& b) {
    if (a.kind != b.kind || a.lo != b.lo || a.hi != b.hi || a.parts.size() + a.sources.size() != b.parts.size() + b.sources.size())
        return false;
    for (std::size_t i = 0, n = a.parts.size() + a.sources.size(); i < n; ++i)
        if (key_word(a, i) != key_word(b, i)) return false;
    return true;
}

}  // namespace

namespace {

std::uint64_t tag_of(std::uint64_t hash) { return hash & 0xffffffff00000000ull; }

}  // namespace

std::size_t Composites::slot_of(const Composite& c, std::uint64_t h) const {
    const std::size_t mask = slots_.size() - 1;
    const std::uint64_t tag = tag_of(h);
    for (std::size_t i = h & mask;; i = (i + 1) & mask)
        if (slots_[i] == 0 || (tag_of(slots_[i]) == tag && same_key(items_[(slots_[i] & 0xffffffffu) - 1], c))) return i;
}

void Composites::place(std::size_t i) {
    const std::size_t mask = slots_.size() - 1;
    std::size_t at = hashes_[i] & mask;
    while (slots_[at] != 0) at = (at + 1) & mask;  // the items are distinct: the first empty slot
    slots_[at] = tag_of(hashes_[i]) | (i + 1);
}

void Composites::grow() {
    slots_.assign(std::max<std::size_t>(64, slots_.size() * 2), 0);
    for (std::size_t i = 0; i < items_.size(); ++i) place(i);
}

MessageId Composites::intern(Composite c) {
    if (2 * (items_.size() + 1) > slots_.size()) grow();
    const std::uint64_t h = composite_hash(c);
    const std::size_t s = slot_of(c, h);
    if (slots_[s] == 0) {
        slots_[s] = tag_of(h) | (items_.size() + 1);
        items_.push_back(std::move(c));
        hashes_.push_back(h);
    }
    return MessageId{static_cast<std::uint32_t>(base_ + (slots_[s] & 0xffffffffu) - 1)};
}

MessageId Composites::intern_partial(std::uint32_t chunk, std::span<const std::uint32_t> sources) {
    if (2 * (items_.size() + 1) > slots_.size()) grow();
    const std::size_t mask = slots_.size() - 1;
    const std::uint64_t h = partial_hash(chunk, sources), tag = tag_of(h);
    for (std::size_t i = h & mask;; i = (i + 1) & mask) {
        if (slots_[i] == 0) {
            Composite c{MessageKind::partial, chunk, 0, {}, {sources.begin(), sources.end()}};  // before items_ may move
            slots_[i] = tag | (items_.size() + 1);
            items_.push_back(std::move(c));
            hashes_.push_back(h);
            return MessageId{static_cast<std::uint32_t>(base_ + items_.size() - 1)};
        }
        if (tag_of(slots_[i]) == tag && same_partial(items_[(slots_[i] & 0xffffffffu) - 1], chunk, sources))
            return MessageId{static_cast<std::uint32_t>(base_ + (slots_[i] & 0xffffffffu) - 1)};
    }
}

std::optional<MessageId> Composites::find(const Composite& c) const {
    if (slots_.empty()) return std::nullopt;
    const std::size_t s = slot_of(c, composite_hash(c));
    if (slots_[s] == 0) return std::nullopt;
    return MessageId{static_cast<std::uint32_t>(base_ + (slots_[s] & 0xffffffffu) - 1)};
}

std::vector<MessageId> Composites::canonicalize() {
    // Every key once, side by side in one buffer (a key vector per comparison allocated 40 million vectors for the
    // million partials of a reduce-scatter on 1,024 processors; one vector per composite was still a tenth of the
    // interning): kind, lo, hi, then the parts and the sources as one sequence, compared lexicographically.
    std::vector<std::uint32_t> words;
    std::vector<std::size_t> at(items_.size() + 1, 0);
    for (std::size_t i = 0; i < items_.size(); ++i) {
        const Composite& c = items_[i];
        words.insert(words.end(), {static_cast<std::uint32_t>(c.kind), c.lo, c.hi});
        for (MessageId p : c.parts) words.push_back(idx(p));
        words.insert(words.end(), c.sources.begin(), c.sources.end());
        at[i + 1] = words.size();
    }
    std::vector<std::uint32_t> order(items_.size());
    for (std::uint32_t i = 0; i < order.size(); ++i) order[i] = i;
    std::sort(order.begin(), order.end(), [&](std::uint32_t a, std::uint32_t b) {
        return std::lexicographical_compare(words.begin() + static_cast<std::ptrdiff_t>(at[a]), words.begin() + static_cast<std::ptrdiff_t>(at[a + 1]),
                                            words.begin() + static_cast<std::ptrdiff_t>(at[b]), words.begin() + static_cast<std::ptrdiff_t>(at[b + 1]));
    });
    std::vector<MessageId> remap(items_.size());
    std::vector<Composite> sorted;
    std::vector<std::uint64_t> hashes;
    sorted.reserve(items_.size());
    hashes.reserve(items_.size());
    for (std::uint32_t i = 0; i < order.size(); ++i) {
        remap[order[i]] = MessageId{static_cast<std::uint32_t>(base_ + i)};
        sorted.push_back(std::move(items_[order[i]]));
        hashes.push_back(hashes_[order[i]]);
    }
    items_ = std::move(sorted);
    hashes_ = std::move(hashes);
    for (std::uint64_t& s : slots_) s = 0;
    for (std::size_t i = 0; i < items_.size(); ++i) place(i);
    return remap;
}

namespace {

std::optional<std::uint32_t> number(std::string_view t) {
    while (!t.empty() && t.front() == ' ') t.remove_prefix(1);
    while (!t.empty() && t.back() == ' ') t.remove_suffix(1);
    return support::parse_decimal<std::uint32_t>(t);
}

}  // namespace

namespace {

/// `a({0..3,6})` or `a({0..3,6},c)`: a partial of chunk c (0 when not written). A set of one
/// source is that source's value a(s) (chunk 0; chunked names after the foundation).
std::optional<MessageId> parse_partial(const Messages& ms, std::uint32_t P, std::string_view s, std::string_view inner,
                                       std::optional<Composite>& out, std::string* why) {
    auto bad = [&](std::string text) -> std::optional<MessageId> {
        if (why) *why = std::move(text);
        return std::nullopt;
    };
    std::size_t close = inner.find('}');
    if (close == std::string_view::npos) return bad(fmt::format("'{}': a partial is a({{sources}}) or a({{sources}},chunk)", s));
    std::string_view set = inner.substr(1, close - 1), rest = inner.substr(close + 1);
    std::uint32_t chunk = 0;
    const std::uint32_t C = ms.chunks();
    if (!rest.empty()) {
        if (rest.front() != ',') return bad(fmt::format("'{}': a partial is a({{sources}}) or a({{sources}},chunk)", s));
        auto c = number(rest.substr(1));
        if (!c) return bad(fmt::format("'{}': the chunk is not a number", s));
        // As for base names (Messages::parse_base): a chunk argument is refused under C = 1.
        if (C == 1)
            return bad(fmt::format("'{}' names a chunk, but the collective does not split its data (chunks 1): write a({{{}}})", s, set));
        chunk = *c;
        if (chunk >= C) return bad(fmt::format("'{}': chunk {} does not exist (the collective has {} chunk{})", s, chunk, C, C == 1 ? "" : "s"));
    } else if (C > 1) {
        return bad(fmt::format("'{}' names a whole buffer, but the collective splits it into {} chunks: write a({{...}},c) with a "
                               "chunk 0..{}",
                               s, C, C - 1));
    }
    std::vector<std::uint32_t> src;
    while (!set.empty()) {
        std::size_t comma = set.find(',');
        std::string_view item = set.substr(0, comma);
        std::size_t dots = item.find("..");
        auto lo = number(item.substr(0, dots));
        auto hi = dots == std::string_view::npos ? lo : number(item.substr(dots + 2));
        if (!lo || !hi || *lo > *hi) return bad(fmt::format("'{}': '{}' is not a source or a range i..j of sources", s, item));
        if (*hi >= P) return bad(fmt::format("'{}': source {} is not a processor (0..{})", s, *hi, P - 1));
        for (std::uint32_t v = *lo; v <= *hi; ++v) src.push_back(v);
        if (comma == std::string_view::npos) break;
        set = set.substr(comma + 1);
    }
    if (src.empty()) return bad(fmt::format("'{}': a partial needs at least one source", s));
    std::sort(src.begin(), src.end());
    if (std::adjacent_find(src.begin(), src.end()) != src.end())
        return bad(fmt::format("'{}': a source is listed twice (a partial counts each contribution once)", s));
    if (src.size() == 1) return ms.value(src[0], chunk);
    out = Composite{MessageKind::partial, chunk, 0, {}, std::move(src)};
    return std::nullopt;
}

/// A base message name, or `a(i..j)`; `ms` names the base range.
std::optional<MessageId> parse_one(const Messages& ms, std::uint32_t P, std::string_view s, std::optional<Composite>& combined,
                                   std::string* why) {
    auto bad = [&](std::string text) -> std::optional<MessageId> {
        if (why) *why = std::move(text);
        return std::nullopt;
    };
    while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
    while (!s.empty() && s.back() == ' ') s.remove_suffix(1);
    if (s.size() < 4 || s[1] != '(' || s.back() != ')') return bad(fmt::format("'{}' is not a message name", s));
    std::string_view inner = s.substr(2, s.size() - 3);
    if (s[0] == 'a' && !inner.empty() && inner.front() == '{') return parse_partial(ms, P, s, inner, combined, why);
    if (s[0] == 'a') {
        if (std::size_t dots = inner.find(".."); dots != std::string_view::npos) {
            auto i = number(inner.substr(0, dots)), j = number(inner.substr(dots + 2));
            if (!i || !j) return bad(fmt::format("'{}' is not a message name", s));
            if (*i > *j || *j >= P) return bad(fmt::format("{}: a combined value a(i..j) needs 0 <= i <= j < {}", s, P));
            if (ms.chunks() > 1) return bad(fmt::format("{}: combined values of chunks are not supported yet", s));
            if (*i == *j) return ms.value(*i);
            combined = Composite{MessageKind::combined, *i, *j, {}, {}};
            return std::nullopt;
        }
    }
    std::string reason;
    if (auto m = ms.parse_base(s, &reason)) return m;
    if (!reason.empty()) return bad(std::move(reason));
    return bad(fmt::format("'{}' is not a message of a topology with {} processors", s, P));
}

std::optional<MessageId> parse_any(std::string_view text, std::uint32_t P, std::uint32_t C,
                                   const std::function<std::optional<MessageId>(Composite)>& lookup, std::string* why) {
    Messages ms(P, nullptr, C);
    std::optional<Composite> combined;
    if (text.find('+') == std::string_view::npos) {
        if (auto m = parse_one(ms, P, text, combined, why)) return m;
        return combined ? lookup(*combined) : std::nullopt;
    }
    Composite b{MessageKind::bundle, 0, 0, {}, {}};
    for (std::string_view rest = text;;) {
        std::size_t plus = rest.find('+');
        std::string_view part = rest.substr(0, plus);
        auto m = parse_one(ms, P, part, combined, why);
        if (!m) {
            if (combined && why) *why = fmt::format("{}: a bundle joins base messages, not combined values or partials", text);
            return std::nullopt;
        }
        b.parts.push_back(*m);
        if (plus == std::string_view::npos) break;
        rest = rest.substr(plus + 1);
    }
    std::sort(b.parts.begin(), b.parts.end(), [](MessageId x, MessageId y) { return idx(x) < idx(y); });
    if (std::adjacent_find(b.parts.begin(), b.parts.end()) != b.parts.end()) {
        if (why) *why = fmt::format("{}: a bundle lists a message twice", text);
        return std::nullopt;
    }
    return lookup(std::move(b));
}

}  // namespace

std::optional<MessageId> parse_message(std::string_view text, std::uint32_t P, Composites& reg, std::string* why, std::uint32_t C) {
    return parse_any(text, P, C, [&](Composite c) -> std::optional<MessageId> { return reg.intern(std::move(c)); }, why);
}

std::optional<MessageId> Messages::parse(std::string_view s) const {
    if (auto m = parse_base(s)) return m;  // the fast path
    if (s.size() >= 4 && (s.find('+') != std::string_view::npos || s.find("..") != std::string_view::npos || s.find('{') != std::string_view::npos))
        return parse_any(s, p_, chunks_, [&](Composite c) -> std::optional<MessageId> { return c_ ? c_->find(c) : std::nullopt; }, nullptr);
    return std::nullopt;
}

std::optional<MessageId> Messages::parse_base(std::string_view s, std::string* why) const {
    if (s.size() < 4 || s[1] != '(' || s.back() != ')') return std::nullopt;
    const char kind = s[0];
    if (kind != 'm' && kind != 'b' && kind != 'a') return std::nullopt;
    std::string_view inner = s.substr(2, s.size() - 3);
    // Up to three comma-separated numbers: m(s,d[,c]), b(s[,c]), a(s[,c]).
    std::string_view parts[4];
    std::size_t n = 0;
    for (std::string_view rest = inner; n < 4;) {
        std::size_t comma = rest.find(',');
        parts[n++] = rest.substr(0, comma);
        if (comma == std::string_view::npos) break;
        rest = rest.substr(comma + 1);
        if (n == 4) return std::nullopt;
    }
    const std::size_t whole = kind == 'm' ? 2 : 1;  // arguments of a whole datum
    if (n != whole && n != whole + 1) return std::nullopt;
    std::uint32_t v[3] = {0, 0, 0};
    for (std::size_t i = 0; i < n; ++i) {
        auto x = number(parts[i]);
        if (!x) return std::nullopt;
        v[i] = *x;
    }
    for (std::size_t i = 0; i < whole; ++i)
        if (v[i] >= p_) return std::nullopt;
    std::uint32_t c = 0;
    if (n == whole + 1) {
        if (chunks_ == 1) {
            if (why) *why = fmt::format("'{}' names a chunk, but the collective does not split its data (chunks 1): write {}", s,
                                        kind == 'm' ? fmt::format("m({},{})", v[0], v[1]) : fmt::format("{}({})", kind, v[0]));
            return std::nullopt;
        }
        c = v[whole];
        if (c >= chunks_) {
            if (why) *why = fmt::format("'{}': chunk {} does not exist (the collective has {} chunks, 0..{})", s, c, chunks_, chunks_ - 1);
            return std::nullopt;
        }
    } else if (chunks_ > 1) {
        if (why)
            *why = fmt::format("'{}' names a whole datum, but the collective splits every datum into {} chunks: write {} with a chunk 0..{}",
                               s, chunks_, kind == 'm' ? fmt::format("m({},{},c)", v[0], v[1]) : fmt::format("{}({},c)", kind, v[0]),
                               chunks_ - 1);
        return std::nullopt;
    }
    if (kind == 'm') return personal(v[0], v[1], c);
    if (kind == 'b') return broadcast(v[0], c);
    return value(v[0], c);
}

namespace {

/// The row's name with its arguments written as `root` or `members` say.
std::string args_form(const CollectiveRow& r, std::string_view root, std::string_view members) {
    switch (r.args) {
        case coll::Args::none: break;
        case coll::Args::root: return fmt::format("{}{}", r.name, root);
        case coll::Args::root_members: return fmt::format("{}{}", r.name, members);
    }
    return std::string(r.name);
}

}  // namespace

std::string CollectiveRow::dsl_form() const { return args_form(*this, "(r)", "(r, {members})"); }
std::string CollectiveRow::spec_form() const { return args_form(*this, ":R", ":R:a,b,c"); }

std::string collective_suggestion(std::string_view name) {
    std::string_view best;
    std::size_t best_d = 3;
    for (const CollectiveRow& r : collective_rows) {
        std::size_t d = support::edit_distance(name, r.name);
        if (d < best_d) best_d = d, best = r.name;
    }
    return best.empty() ? std::string() : fmt::format(" (did you mean '{}'?)", best);
}

Collective Collective::parse(std::string_view text, const Topology& topo, bool check_size) {
    auto fail = [&](std::string_view what) -> Collective {
        throw InputError(fmt::format("collective '{}': {}", text, what));
    };
    auto proc = [&](std::string_view t) {
        auto v = number(t);
        if (!v || *v >= topo.processors())
            fail(fmt::format("'{}' is not a processor of {} (0..{})", t, topo.spec(), topo.processors() - 1));
        return Node{*v};
    };
    std::size_t colon = text.find(':');
    std::string_view name = text.substr(0, colon);
    std::string_view rest = colon == std::string_view::npos ? std::string_view{} : text.substr(colon + 1);
    Collective c;
    const CollectiveRow* row = find_collective_row(name);
    if (!row) return fail(fmt::format("unknown collective{}: expected {}", collective_suggestion(name), collective_list(&CollectiveRow::spec_form, [](auto&) { return true; })));
    c.kind = row->kind;
    switch (row->args) {
        case coll::Args::none:
            if (!rest.empty()) fail(fmt::format("'{}' takes no root", name));
            break;  // reduce_scatter's chunks are checked when they are set (set_chunks, SendTable::canonicalize_composites)
        case coll::Args::root:
            if (rest.empty()) fail(fmt::format("expected {}:R with R the root processor", name));
            c.root = proc(rest);
            break;
        case coll::Args::root_members: {
            std::size_t c2 = rest.find(':');
            if (rest.empty() || c2 == std::string_view::npos) fail(fmt::format("expected {}", row->spec_form()));
            c.root = proc(rest.substr(0, c2));
            std::string_view list = rest.substr(c2 + 1);
            while (true) {
                std::size_t comma = list.find(',');
                c.members.push_back(proc(list.substr(0, comma)));
                if (comma == std::string_view::npos) break;
                list = list.substr(comma + 1);
            }
            std::sort(c.members.begin(), c.members.end());
            if (std::adjacent_find(c.members.begin(), c.members.end()) != c.members.end()) fail("a member is listed twice");
            break;
        }
    }
    if (check_size) c.check_goal_count(topo);
    return c;
}

std::string Collective::to_string() const {
    const CollectiveRow& r = row();
    switch (r.args) {
        case coll::Args::none: return std::string(r.name);
        case coll::Args::root: return fmt::format("{}:{}", r.name, idx(root));
        case coll::Args::root_members: {
            std::string s = fmt::format("{}:{}:", r.name, idx(root));
            for (std::size_t i = 0; i < members.size(); ++i) s += fmt::format("{}{}", i ? "," : "", idx(members[i]));
            return s;
        }
    }
    return "?";
}

std::string Collective::reduction_problem(std::uint32_t P, std::uint32_t chunks) const {
    if (row().to == coll::Reach::block_owner && chunks % P != 0)
        return fmt::format("{} on {} processors needs a chunk count that is a multiple of {} (processor p ends with "
                           "block p of the buffer: chunks p*C/{} .. (p+1)*C/{}-1); it has {}",
                           row().name, P, P, P, P, chunks);
    return "";
}

namespace {

/// Whether processor p is in the row's set `reach` of collective c.
bool in_reach(const Collective& c, coll::Reach reach, std::uint32_t p) {
    switch (reach) {
        case coll::Reach::every: return true;
        case coll::Reach::root: return p == idx(c.root);
        case coll::Reach::members: return std::binary_search(c.members.begin(), c.members.end(), Node{p});
        case coll::Reach::none:
        case coll::Reach::block_owner: return false;
    }
    return false;
}

/// How many processors the row's set `reach` holds on P processors.
std::uint64_t reach_size(const Collective& c, coll::Reach reach, std::uint32_t P) {
    std::uint64_t n = 0;
    if (reach == coll::Reach::every) return P;
    c.for_each_in(reach, P, [&](Node) { ++n; });
    return n;
}

}  // namespace

bool Collective::initial(const Messages& ms, MessageId m) const {
    if (ms.is_composite(m)) return false;  // composites are made, never given
    MessageKey k = ms.key(m);
    const CollectiveRow& r = row();
    switch (r.data) {
        case coll::Data::personal:
            return k.kind == MessageKind::personal && k.src != k.dst && in_reach(*this, r.from, k.src) && in_reach(*this, r.to, k.dst);
        case coll::Data::broadcast: return k.kind == MessageKind::broadcast && in_reach(*this, r.from, k.src);
        case coll::Data::values: return k.kind == MessageKind::value;
        case coll::Data::any: return k.kind != MessageKind::personal || k.src != k.dst;
    }
    return false;
}

void Collective::check_goal_count(const Topology& topo) const {
    std::uint64_t n = goal_count(topo.processors());
    if (n > max_goal_pairs)
        throw InputError(fmt::format("collective {} on {} has {} goal pairs (message, processor); collsched checks at most "
                                     "{} (alltoall and allgather up to 16384 processors)",
                                     to_string(), topo.spec(), n, max_goal_pairs));
}

void Collective::set_chunks(std::uint64_t c, const Topology& topo, bool check_size) {
    if (c < 1 || c > max_chunks)
        throw InputError(fmt::format("chunks {}: a datum is split into 1 to {} chunks", c, max_chunks));
    if (c > 1 && row().combine == coll::Combine::ordered)
        throw InputError(fmt::format("chunks {}: prefix combines values in order (a(i..j)) and takes no chunks; scan is the chunked, "
                                     "commutative prefix",
                                     c));
    if (std::string why = reduction_problem(topo.processors(), static_cast<std::uint32_t>(c)); !why.empty()) throw InputError(why);
    const std::uint64_t base = Messages(topo.processors()).base_size() * c;
    if (c > 1 && base > (std::uint64_t{1} << 32) - (std::uint64_t{1} << 24))
        throw InputError(fmt::format("chunks {}: {} processors with {} chunks make {} messages, more than 32-bit message ids hold "
                                     "(at most 2^32 - 2^24)",
                                     c, topo.processors(), c, base));
    chunks = static_cast<std::uint32_t>(c);
    if (check_size) check_goal_count(topo);
}

/// The (source, sink) pairs of personal or broadcast data: every source of the row's `from`
/// with every sink of its `to` but itself.
std::uint64_t Collective::pair_count(std::uint32_t P) const {
    const CollectiveRow& r = row();
    std::uint64_t both = 0;  // processors in both sets: the pairs (s, s) that are not goals
    if (r.from == coll::Reach::every) both = reach_size(*this, r.to, P);
    else if (r.to == coll::Reach::every) both = reach_size(*this, r.from, P);
    else for_each_in(r.from, P, [&](Node s) { both += in_reach(*this, r.to, idx(s)) ? 1 : 0; });
    return reach_size(*this, r.from, P) * reach_size(*this, r.to, P) - both;
}

std::uint64_t Collective::initial_count(std::uint32_t P) const {
    if (chunks > 1) {
        Collective whole = *this;
        whole.chunks = 1;
        return whole.initial_count(P) * chunks;
    }
    std::uint64_t p = P;
    switch (row().data) {
        case coll::Data::personal: return pair_count(P);
        case coll::Data::broadcast: return reach_size(*this, row().from, P);
        case coll::Data::values: return p;
        case coll::Data::any: return p * p + p;  // all but m(s,s)
    }
    return 0;
}

std::uint64_t Collective::goal_count(std::uint32_t P) const {
    if (chunks > 1) {
        Collective whole = *this;
        whole.chunks = 1;
        return whole.goal_count(P) * chunks;
    }
    switch (row().data) {
        case coll::Data::personal:
        case coll::Data::broadcast: return pair_count(P);
        case coll::Data::values: {  // per chunk: the sinks whose goal is more than their own value
            if (row().to == coll::Reach::block_owner) return P > 1 ? 1 : 0;
            std::uint64_t n = 0;
            for_each_in(row().to, P, [&](Node p) { n += upto(P, p) > 0 ? 1 : 0; });
            return n;
        }
        case coll::Data::any: return 0;
    }
    return 0;
}

}  // namespace collsched
