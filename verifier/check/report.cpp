#include "verifier/check/report.hpp"

#include <algorithm>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "compiler/topology/coordinates.hpp"
#include "support/text.hpp"

namespace collsched {

std::string_view to_string(Property p) {
    switch (p) {
        case Property::capacity: return "capacity";
        case Property::ports: return "ports";
        case Property::queues: return "queues";
        case Property::replication: return "replication";
        case Property::causality: return "causality";
        case Property::routes: return "routes";
        case Property::completeness: return "completeness";
    }
    return "?";
}

std::string_view to_string(Status s) {
    switch (s) {
        case Status::holds: return "holds";
        case Status::violated: return "violated";
        case Status::unknown: return "unknown";
        case Status::skipped: return "skipped";
    }
    return "?";
}

bool VerifyReport::holds() const {
    for (Status s : status)
        if (s == Status::violated || s == Status::unknown) return false;
    return true;
}

std::string_view VerifyReport::verdict() const {
    bool unknown = false;
    for (Status s : status) {
        if (s == Status::violated) return "violated";
        unknown = unknown || s == Status::unknown;
    }
    return unknown ? "unknown" : "holds";
}

std::string times_rounds(std::uint64_t cap, std::uint32_t rounds) {
    return rounds > 1 ? fmt::format(" x {} rounds = {}", rounds, cap * rounds) : std::string();
}

std::string ports_detail(Ports ports, std::uint64_t sends, std::uint64_t receives, const std::string& messages, std::uint32_t rounds) {
    const std::string per = rounds > 1 ? fmt::format("round ({} rounds in this step)", rounds) : "step";
    return ports == Ports::single
               ? fmt::format("{} sends and {} receives ({}) but single-port allows one of each per {}", sends, receives, messages, per)
               : fmt::format("{} sends and {} receives ({}) but half-duplex allows one transfer per {}", sends, receives, messages, per);
}

std::string group_detail(const LinkGroup& g, std::uint64_t count, const std::string& messages, std::uint32_t rounds) {
    return fmt::format("{} messages ({}) on its {} channels together but capacity {}{}", count, messages, g.channels.size(), g.cap,
                       times_rounds(g.cap, rounds));
}

std::string message_list(const Messages& ms, const std::vector<MessageId>& list) {
    std::string s;
    for (std::size_t i = 0; i < list.size() && i < 8; ++i) s += fmt::format("{}{}", i ? ", " : "", ms.name(list[i]));
    if (list.size() > 8) s += ", ...";
    return s;
}

namespace {

/// A channel by its node names; on meshes and tori with the coordinates a schedule uses too:
/// "3->7 (0, 3)->(1, 3)".
std::string channel_name(const SendTable& t, ChannelId c) {
    const Channel& ch = t.topology->channel(c);
    std::string s = fmt::format("{}->{}", t.topology->node_name(ch.from), t.topology->node_name(ch.to));
    auto a = compiler::coordinates(*t.topology, idx(ch.from)), b = compiler::coordinates(*t.topology, idx(ch.to));
    if (a && b) s += fmt::format(" {}->{}", *a, *b);
    return s;
}

std::string where(const Violation& v, const SendTable& t) {
    std::string s;
    if (v.step) s += fmt::format("step {}", v.step);
    if (v.channel) s += fmt::format("{}channel {}", s.empty() ? "" : ", ", channel_name(t, *v.channel));
    if (v.group) s += fmt::format("{}group {}", s.empty() ? "" : ", ", t.topology->groups()[*v.group].name);
    if (v.node) {
        s += fmt::format("{}{} {}", s.empty() ? "" : ", ", t.topology->is_processor(*v.node) ? "processor" : "router",
                         t.topology->node_name(*v.node));
        if (auto c = compiler::coordinates(*t.topology, idx(*v.node))) s += " " + *c;
    }
    return s;
}

/// The text report's word for a status: a property that does not apply to the model says why
/// (JSON keeps the status "skipped").
std::string status_text(Property p, Status s, const SendTable& t) {
    if (s != Status::skipped) return std::string(to_string(s));
    switch (p) {
        case Property::ports: return "not applicable (multi-port)";
        case Property::queues:
            return t.model.timing == Timing::wormhole ? "not applicable (wormhole timing)" : "not applicable (queues unbounded)";
        case Property::routes: return "not checked (routes are checked with --routes fixed)";
        default: return "not applicable";
    }
}

}  // namespace

std::optional<std::uint64_t> violation_transfer(const SendTable& t, const Violation& v) {
    if (v.step && !v.channel && v.group && !v.messages.empty()) {
        // A link group over its capacity: the first transfer of the step on one of its channels
        // that carries the first message named (a group has no channel of its own to look up).
        auto it = std::lower_bound(t.transfers.begin(), t.transfers.end(), v.step, [](const Transfer& x, Step s) { return x.step < s; });
        for (; it != t.transfers.end() && it->step == v.step; ++it) {
            if (it->message != v.messages.front()) continue;
            auto in = t.topology->groups_of(it->channel);
            if (std::find(in.begin(), in.end(), *v.group) != in.end()) return static_cast<std::uint64_t>(it - t.transfers.begin());
        }
        return std::nullopt;
    }
    if (!v.step || !v.channel || v.messages.empty()) return std::nullopt;
    Transfer key{v.step, *v.channel, v.messages.front()};
    auto it = std::lower_bound(t.transfers.begin(), t.transfers.end(), key);
    if (it == t.transfers.end() || *it != key) return std::nullopt;
    return static_cast<std::uint64_t>(it - t.transfers.begin());
}

std::string transfer_origin(const SendTable& t, std::uint64_t i) {
    if (i < t.transfer_origins.size() && t.transfer_origins[i] < t.origins.size()) return t.origins[t.transfer_origins[i]];
    return {};
}

void attach_origins(VerifyReport& r, const SendTable& t) {
    if (t.transfer_origins.empty()) return;
    for (Violation& v : r.violations)
        if (auto i = violation_transfer(t, v)) v.origin = transfer_origin(t, *i);
}

std::string claim_check(const Claim& c, Step steps) {
    const auto* v = std::get_if<std::int64_t>(&c.value);
    if (c.kind == Claim::Kind::steps && v) {
        const bool holds = c.at_most ? std::int64_t{steps} <= *v : std::int64_t{steps} == *v;
        return holds ? "holds" : "violated";
    }
    if (c.kind == Claim::Kind::lower_bound && v) return std::int64_t{steps} >= *v ? "holds" : "violated";
    if (c.kind == Claim::Kind::cite) return {};
    return "not checked";  // queue and buffer high-water marks: collsched reproduce measures them
}

std::string format_report(const VerifyReport& r, const SendTable& t) {
    std::string out = fmt::format("verdict: {} ({}, {}; engine {}, {:.3f} s)\n", r.verdict(), support::count_of(r.steps, "step"),
                                  support::count_of(r.transfers, "transfer"), r.engine, r.seconds);
    if (t.model.timing == Timing::wormhole) {
        std::string how = cost_breakdown(t);
        out += how.empty() ? fmt::format("wormhole cost: {}\n", r.cost) : fmt::format("wormhole cost: {} ({})\n", r.cost, how);
    }
    for (std::size_t i = 0; i < property_count; ++i) {
        out += fmt::format("  {:<13} {}", to_string(static_cast<Property>(i)), status_text(static_cast<Property>(i), r.status[i], t));
        if (r.violation_count[i]) out += fmt::format(" ({} violation{})", r.violation_count[i], r.violation_count[i] == 1 ? "" : "s");
        out += '\n';
    }
    for (const std::string& note : r.notes) out += fmt::format("note: {}\n", note);
    if (!t.claims.empty()) {
        out += "claims:\n";
        for (const Claim& c : t.claims) {
            const std::string check = claim_check(c, r.steps);
            out += check.empty() ? fmt::format("  {}\n", c.statement())
                   : check == "not checked" ? fmt::format("  {}: not checked (collsched reproduce measures it)\n", c.statement())
                                            : fmt::format("  {}: {} ({})\n", c.statement(), check, support::count_of(r.steps, "step"));
        }
    }
    if (!r.violations.empty()) {
        out += "counterexamples:\n";
        for (const Violation& v : r.violations)
            out += fmt::format("  {}: {}: {}{}\n", to_string(v.property), where(v, t), v.detail,
                               v.origin.empty() ? ""
                               : v.when.empty() ? fmt::format(" (at {})", v.origin)
                                                : fmt::format(" (at {}, when {})", v.origin, v.when));
        for (std::size_t i = 0; i < property_count; ++i) {
            std::uint64_t shown = 0;
            for (const Violation& v : r.violations) shown += static_cast<std::size_t>(v.property) == i;
            if (r.violation_count[i] > shown)
                out += fmt::format("  ({} more {} violations not shown)\n", r.violation_count[i] - shown,
                                   to_string(static_cast<Property>(i)));
        }
    }
    return out;
}

nlohmann::ordered_json report_to_json(const VerifyReport& r, const SendTable& t) {
    nlohmann::ordered_json j;
    j["verdict"] = std::string(r.verdict());
    j["engine"] = r.engine;
    j["steps"] = r.steps;
    j["transfers"] = r.transfers;
    if (t.model.timing == Timing::wormhole) j["cost"] = r.cost;
    nlohmann::ordered_json props = nlohmann::ordered_json::object(), counts = nlohmann::ordered_json::object();
    for (std::size_t i = 0; i < property_count; ++i) {
        props[std::string(to_string(static_cast<Property>(i)))] = std::string(to_string(r.status[i]));
        counts[std::string(to_string(static_cast<Property>(i)))] = r.violation_count[i];
    }
    j["properties"] = props;
    j["violation_counts"] = counts;
    nlohmann::ordered_json list = nlohmann::ordered_json::array();
    Messages ms = t.messages();
    for (const Violation& v : r.violations) {
        nlohmann::ordered_json x;
        x["property"] = std::string(to_string(v.property));
        x["step"] = v.step ? nlohmann::ordered_json(v.step) : nlohmann::ordered_json(nullptr);
        if (v.channel) {
            const Channel& c = t.topology->channel(*v.channel);
            x["channel"] = {{"from", t.topology->node_name(c.from)}, {"to", t.topology->node_name(c.to)}};
        } else {
            x["channel"] = nullptr;
        }
        x["node"] = v.node ? nlohmann::ordered_json(t.topology->node_name(*v.node)) : nlohmann::ordered_json(nullptr);
        if (v.group) x["group"] = t.topology->groups()[*v.group].name;
        nlohmann::ordered_json msgs = nlohmann::ordered_json::array();
        for (MessageId m : v.messages) msgs.push_back(ms.name(m));
        x["messages"] = msgs;
        x["detail"] = v.detail;
        if (!v.origin.empty()) x["origin"] = v.origin;
        if (!v.when.empty()) x["when"] = v.when;
        list.push_back(x);
    }
    j["violations"] = list;
    if (!t.claims.empty()) {
        nlohmann::ordered_json claims = nlohmann::ordered_json::array();
        for (const Claim& c : t.claims) {
            nlohmann::ordered_json x;
            x["statement"] = c.statement();
            x["field"] = c.key();
            x["value"] = nlohmann::ordered_json::parse(c.json());
            if (std::string check = claim_check(c, r.steps); !check.empty()) x["check"] = check;
            claims.push_back(x);
        }
        j["claims"] = claims;
    }
    if (!r.notes.empty()) j["notes"] = r.notes;
    j["seconds"] = r.seconds;
    return j;
}

std::vector<Disagreement> disagreements(const VerifyReport& direct, const VerifyReport& z3) {
    std::vector<Disagreement> out;
    for (std::size_t i = 0; i < property_count; ++i)
        if (direct.status[i] != z3.status[i] && direct.status[i] != Status::unknown && z3.status[i] != Status::unknown)
            out.push_back({static_cast<Property>(i), direct.status[i], z3.status[i]});
    return out;
}

Agreement agreement(const VerifyReport& direct, const VerifyReport& z3) {
    Agreement a;
    a.disagreements = disagreements(direct, z3);
    bool violated = false;
    for (std::size_t i = 0; i < property_count; ++i) {
        Status x = direct.status[i], y = z3.status[i];
        a.status[i] = x == y                                          ? std::string(to_string(x))
                      : x == Status::unknown || y == Status::unknown ? "unknown"
                                                                     : "disagreement";
        a.unknown = a.unknown || a.status[i] == "unknown";
        violated = violated || a.status[i] == "violated";
    }
    a.verdict = !a.disagreements.empty() ? "disagreement" : violated ? "violated" : a.unknown ? "unknown" : "holds";
    return a;
}

}  // namespace collsched
