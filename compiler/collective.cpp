#include "compiler/collective.hpp"

#include <algorithm>
#include <charconv>
#include <functional>

#include <fmt/format.h>

#include "compiler/names.hpp"
#include "compiler/topology.hpp"
#include "dsl/diagnostics.hpp"

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
    return {MessageKind::bundle, static_cast<std::uint32_t>(v - base_size()), 0};
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

std::vector<std::uint32_t> composite_key(const Composite& c) {
    std::vector<std::uint32_t> k{static_cast<std::uint32_t>(c.kind), c.lo, c.hi};
    for (MessageId p : c.parts) k.push_back(idx(p));
    return k;
}

}  // namespace

MessageId Composites::intern(Composite c) {
    std::vector<std::uint32_t> k = composite_key(c);
    auto [it, fresh] = index_.emplace(std::move(k), static_cast<std::uint32_t>(base_ + items_.size()));
    if (fresh) items_.push_back(std::move(c));
    return MessageId{it->second};
}

std::optional<MessageId> Composites::find(const Composite& c) const {
    auto it = index_.find(composite_key(c));
    if (it == index_.end()) return std::nullopt;
    return MessageId{it->second};
}

std::vector<MessageId> Composites::canonicalize() {
    std::vector<std::uint32_t> order(items_.size());
    for (std::uint32_t i = 0; i < order.size(); ++i) order[i] = i;
    std::sort(order.begin(), order.end(), [&](std::uint32_t a, std::uint32_t b) {
        return composite_key(items_[a]) < composite_key(items_[b]);
    });
    std::vector<MessageId> remap(items_.size());
    std::vector<Composite> sorted;
    sorted.reserve(items_.size());
    index_.clear();
    for (std::uint32_t i = 0; i < order.size(); ++i) {
        remap[order[i]] = MessageId{static_cast<std::uint32_t>(base_ + i)};
        index_.emplace(composite_key(items_[order[i]]), static_cast<std::uint32_t>(base_ + i));
        sorted.push_back(std::move(items_[order[i]]));
    }
    items_ = std::move(sorted);
    return remap;
}

namespace {

std::optional<std::uint32_t> number(std::string_view t) {
    while (!t.empty() && t.front() == ' ') t.remove_prefix(1);
    while (!t.empty() && t.back() == ' ') t.remove_suffix(1);
    std::uint32_t v = 0;
    if (t.empty()) return std::nullopt;
    auto [p, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
    if (ec != std::errc{} || p != t.data() + t.size()) return std::nullopt;
    return v;
}

}  // namespace

namespace {

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
    if (s[0] == 'a') {
        if (std::size_t dots = inner.find(".."); dots != std::string_view::npos) {
            auto i = number(inner.substr(0, dots)), j = number(inner.substr(dots + 2));
            if (!i || !j) return bad(fmt::format("'{}' is not a message name", s));
            if (*i > *j || *j >= P) return bad(fmt::format("{}: a combined value a(i..j) needs 0 <= i <= j < {}", s, P));
            if (ms.chunks() > 1) return bad(fmt::format("{}: combined values of chunks are not supported yet", s));
            if (*i == *j) return ms.value(*i);
            combined = Composite{MessageKind::combined, *i, *j, {}};
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
    Composite b{MessageKind::bundle, 0, 0, {}};
    for (std::string_view rest = text;;) {
        std::size_t plus = rest.find('+');
        std::string_view part = rest.substr(0, plus);
        auto m = parse_one(ms, P, part, combined, why);
        if (!m) {
            if (combined && why) *why = fmt::format("{}: a bundle joins base messages, not combined values", text);
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
    if (s.size() >= 4 && (s.find('+') != std::string_view::npos || s.find("..") != std::string_view::npos))
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

Collective Collective::parse(std::string_view text, const Topology& topo) {
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
    const compiler::CollectiveName* known = compiler::find_collective(name);
    if (!known) return fail(fmt::format("unknown collective: expected {}", compiler::name_list(compiler::collective_names, &compiler::CollectiveName::spec)));
    c.kind = known->kind;
    switch (c.kind) {
        case CollectiveKind::alltoall:
        case CollectiveKind::allgather:
        case CollectiveKind::custom:
            if (!rest.empty()) fail(fmt::format("'{}' takes no root", name));
            c.check_goal_count(topo);
            return c;
        case CollectiveKind::prefix:
            if (!rest.empty()) fail("'prefix' takes no root");
            return c;
        case CollectiveKind::broadcast:
        case CollectiveKind::scatter:
        case CollectiveKind::gather:
        case CollectiveKind::reduce:
            if (rest.empty()) fail(fmt::format("expected {}:R with R the root processor", name));
            c.root = proc(rest);
            return c;
        case CollectiveKind::multicast: break;
    }
    {  // multicast
        std::size_t c2 = rest.find(':');
        if (rest.empty() || c2 == std::string_view::npos) fail("expected multicast:R:a,b,c");
        c.kind = CollectiveKind::multicast;
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
        return c;
    }
}

std::string Collective::to_string() const {
    switch (kind) {
        case CollectiveKind::alltoall: return "alltoall";
        case CollectiveKind::allgather: return "allgather";
        case CollectiveKind::broadcast: return fmt::format("broadcast:{}", idx(root));
        case CollectiveKind::scatter: return fmt::format("scatter:{}", idx(root));
        case CollectiveKind::gather: return fmt::format("gather:{}", idx(root));
        case CollectiveKind::multicast: {
            std::string s = fmt::format("multicast:{}:", idx(root));
            for (std::size_t i = 0; i < members.size(); ++i) s += fmt::format("{}{}", i ? "," : "", idx(members[i]));
            return s;
        }
        case CollectiveKind::custom: return "custom";
        case CollectiveKind::reduce: return fmt::format("reduce:{}", idx(root));
        case CollectiveKind::prefix: return "prefix";
    }
    return "?";
}

bool Collective::initial(const Messages& ms, MessageId m) const {
    if (ms.is_composite(m)) return false;  // composites are made, never given
    MessageKey k = ms.key(m);
    std::uint32_t r = idx(root);
    switch (kind) {
        case CollectiveKind::alltoall: return k.kind == MessageKind::personal && k.src != k.dst;
        case CollectiveKind::scatter: return k.kind == MessageKind::personal && k.src == r && k.dst != r;
        case CollectiveKind::gather: return k.kind == MessageKind::personal && k.dst == r && k.src != r;
        case CollectiveKind::allgather: return k.kind == MessageKind::broadcast;
        case CollectiveKind::broadcast:
        case CollectiveKind::multicast: return k.kind == MessageKind::broadcast && k.src == r;
        case CollectiveKind::custom: return k.kind != MessageKind::personal || k.src != k.dst;
        case CollectiveKind::reduce:
        case CollectiveKind::prefix: return k.kind == MessageKind::value;
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

void Collective::set_chunks(std::uint64_t c, const Topology& topo) {
    if (c < 1 || c > max_chunks)
        throw InputError(fmt::format("chunks {}: a datum is split into 1 to {} chunks", c, max_chunks));
    if (c > 1 && combines())
        throw InputError(fmt::format("chunks {}: {} does not take chunks yet (reductions over chunks are issue 16)", c, to_string()));
    const std::uint64_t base = Messages(topo.processors()).base_size() * c;
    if (c > 1 && base > (std::uint64_t{1} << 32) - (std::uint64_t{1} << 24))
        throw InputError(fmt::format("chunks {}: {} processors with {} chunks make {} messages, more than 32-bit message ids hold "
                                     "(at most 2^32 - 2^24)",
                                     c, topo.processors(), c, base));
    chunks = static_cast<std::uint32_t>(c);
    check_goal_count(topo);
}

std::uint64_t Collective::initial_count(std::uint32_t P) const {
    if (chunks > 1) {
        Collective whole = *this;
        whole.chunks = 1;
        return whole.initial_count(P) * chunks;
    }
    std::uint64_t p = P;
    switch (kind) {
        case CollectiveKind::alltoall: return p * (p - 1);
        case CollectiveKind::scatter:
        case CollectiveKind::gather: return p - 1;
        case CollectiveKind::allgather: return p;
        case CollectiveKind::broadcast:
        case CollectiveKind::multicast: return 1;
        case CollectiveKind::custom: return p * p + p;  // all but m(s,s)
        case CollectiveKind::reduce:
        case CollectiveKind::prefix: return p;
    }
    return 0;
}

std::uint64_t Collective::goal_count(std::uint32_t P) const {
    if (chunks > 1) {
        Collective whole = *this;
        whole.chunks = 1;
        return whole.goal_count(P) * chunks;
    }
    std::uint64_t p = P;
    switch (kind) {
        case CollectiveKind::alltoall:
        case CollectiveKind::allgather: return p * (p - 1);
        case CollectiveKind::scatter:
        case CollectiveKind::gather:
        case CollectiveKind::broadcast: return p - 1;
        case CollectiveKind::multicast:
            return members.size() - static_cast<std::uint64_t>(std::count(members.begin(), members.end(), root));
        case CollectiveKind::custom: return 0;
        case CollectiveKind::reduce: return p > 1 ? 1 : 0;
        case CollectiveKind::prefix: return p > 0 ? p - 1 : 0;
    }
    return 0;
}

}  // namespace collsched
