#include "compiler/collective.hpp"

#include <algorithm>
#include <charconv>

#include <fmt/format.h>

#include "compiler/topology.hpp"
#include "dsl/diagnostics.hpp"

namespace collsched {

MessageKey Messages::key(MessageId m) const {
    std::uint64_t v = idx(m), pp = std::uint64_t{p_} * p_;
    if (v < pp) return {MessageKind::personal, static_cast<std::uint32_t>(v / p_), static_cast<std::uint32_t>(v % p_)};
    if (v < pp + p_) return {MessageKind::broadcast, static_cast<std::uint32_t>(v - pp), 0};
    return {MessageKind::value, static_cast<std::uint32_t>(v - pp - p_), 0};
}

std::string Messages::name(MessageId m) const {
    MessageKey k = key(m);
    switch (k.kind) {
        case MessageKind::personal: return fmt::format("m({},{})", k.src, k.dst);
        case MessageKind::broadcast: return fmt::format("b({})", k.src);
        case MessageKind::value: return fmt::format("a({})", k.src);
    }
    return "?";
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

std::optional<MessageId> Messages::parse(std::string_view s) const {
    if (s.size() < 4 || s[1] != '(' || s.back() != ')') return std::nullopt;
    std::string_view inner = s.substr(2, s.size() - 3);
    if (s[0] == 'm') {
        std::size_t comma = inner.find(',');
        if (comma == std::string_view::npos) return std::nullopt;
        auto a = number(inner.substr(0, comma)), b = number(inner.substr(comma + 1));
        if (!a || !b || *a >= p_ || *b >= p_) return std::nullopt;
        return personal(*a, *b);
    }
    auto a = number(inner);
    if (!a || *a >= p_) return std::nullopt;
    if (s[0] == 'b') return broadcast(*a);
    if (s[0] == 'a') return value(*a);
    return std::nullopt;
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
    if (name == "alltoall" || name == "allgather" || name == "custom") {
        if (!rest.empty()) fail(fmt::format("'{}' takes no root", name));
        c.kind = name == "alltoall" ? CollectiveKind::alltoall
                 : name == "allgather" ? CollectiveKind::allgather
                                       : CollectiveKind::custom;
        c.check_goal_count(topo);
        return c;
    }
    if (name == "broadcast" || name == "scatter" || name == "gather") {
        if (rest.empty()) fail(fmt::format("expected {}:R with R the root processor", name));
        c.kind = name == "broadcast" ? CollectiveKind::broadcast
                 : name == "scatter" ? CollectiveKind::scatter
                                     : CollectiveKind::gather;
        c.root = proc(rest);
        return c;
    }
    if (name == "multicast") {
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
    return fail("unknown collective: expected alltoall, allgather, broadcast:R, scatter:R, gather:R, multicast:R:a,b,c or custom");
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
    }
    return "?";
}

bool Collective::initial(const Messages& ms, MessageId m) const {
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

std::uint64_t Collective::initial_count(std::uint32_t P) const {
    std::uint64_t p = P;
    switch (kind) {
        case CollectiveKind::alltoall: return p * (p - 1);
        case CollectiveKind::scatter:
        case CollectiveKind::gather: return p - 1;
        case CollectiveKind::allgather: return p;
        case CollectiveKind::broadcast:
        case CollectiveKind::multicast: return 1;
        case CollectiveKind::custom: return p * p + p;  // all but m(s,s)
    }
    return 0;
}

std::uint64_t Collective::goal_count(std::uint32_t P) const {
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
    }
    return 0;
}

}  // namespace collsched
