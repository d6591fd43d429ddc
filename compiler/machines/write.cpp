// write_machine_json(): the graph file of a machine, laid out as scripts/machines.py laid out the
// shipped files (so that `collsched machine` reproduces them byte for byte, tests/tools/test_machine.cpp).
#include "compiler/machines/machine.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace collsched::machines {

namespace {

/// A JSON string as Python's json.dumps writes it (non-ASCII as \uXXXX).
std::string json_quote(std::string_view s) { return nlohmann::json(std::string(s)).dump(-1, ' ', true); }

std::string end_text(const End& e) { return e.proc >= 0 ? std::to_string(e.proc) : json_quote(fmt::format("r1.{}", e.router)); }

std::string speed_object(const Speed& s) {
    return fmt::format("{{\"alpha\": {}, \"bandwidth\": {}, \"note\": {}}}", json_quote(speed_text(s.alpha_us, "us")),
                       json_quote(speed_text(s.bandwidth, s.unit)), json_quote(s.note));
}

/// `typed`: the edge names its link type (in the compact layout the box's own type is the file's
/// top-level speed, not an entry of "link_types", so its edges name none).
std::string edge_text(const Edge& e, bool typed) {
    if (e.one_way)
        return fmt::format("{{\"from\": {}, \"to\": {}, \"cap\": {}, {}{}\"one_way\": true}}", end_text(e.u), end_text(e.v), e.cap,
                           typed ? fmt::format("\"type\": {}, ", json_quote(e.type)) : "",
                           e.bandwidth ? fmt::format("\"bandwidth\": {}, ", json_quote(*e.bandwidth)) : "");
    if (e.bandwidth)
        return fmt::format("{{\"from\": {}, \"to\": {}, \"cap\": {}, {}\"bandwidth\": {}}}", end_text(e.u), end_text(e.v), e.cap,
                           typed ? fmt::format("\"type\": {}, ", json_quote(e.type)) : "", json_quote(*e.bandwidth));
    if (!typed) return fmt::format("[{}, {}, {}]", end_text(e.u), end_text(e.v), e.cap);
    return fmt::format("[{}, {}, {}, {}]", end_text(e.u), end_text(e.v), e.cap, json_quote(e.type));
}

std::string group_text(const Group& g) {
    std::string s = fmt::format("{{\"name\": {}, \"cap\": {}, ", json_quote(g.name), g.cap);
    if (g.out_of >= 0) {
        s += fmt::format("\"out_of\": {}", g.out_of);
    } else if (g.into >= 0) {
        s += fmt::format("\"into\": {}", g.into);
    } else {
        s += "\"channels\": [";
        for (std::size_t i = 0; i < g.channels.size(); ++i)
            s += fmt::format("{}[{}, {}]", i ? ", " : "", end_text(g.channels[i].first), end_text(g.channels[i].second));
        s += "]";
    }
    return s + fmt::format(", \"bandwidth\": {}}}", json_quote(g.bandwidth));
}

std::string types_text(const Machine& m, bool skip_base) {
    std::string s;
    for (const LinkType& t : m.types) {
        if (skip_base && t.name == m.base_type) continue;
        s += fmt::format("{}{}: {}", s.empty() ? "" : ", ", json_quote(t.name), speed_object(t.speed));
    }
    return s;
}

}  // namespace

std::string speed_text(double value, std::string_view unit) {
    std::string v = fmt::format("{:.6g}", value);
    return v + " " + std::string(unit);
}

std::string write_machine_json(const Machine& m) {
    std::string s = "{";
    if (m.note) s += fmt::format("\"note\": {},\n ", json_quote(*m.note));
    if (!m.faults.empty()) {  // one string, not a list: Topology::declared_processors reads the head and stops at a list
        std::string all;
        for (const std::string& f : m.faults) all += (all.empty() ? "" : "; ") + f;
        s += fmt::format("\"faults\": {},\n ", json_quote(all));
    }
    s += fmt::format("\"processors\": {}, \"routers\": {}, ", m.processors, m.routers);
    s += m.boxes ? fmt::format("\"boxes\": {},\n", m.boxes) : std::string("\n");
    const bool compact = !m.base_type.empty();
    if (compact) {
        const auto& base = *std::find_if(m.types.begin(), m.types.end(), [&](const LinkType& t) { return t.name == m.base_type; });
        s += fmt::format(" \"alpha\": {}, \"bandwidth\": {},\n", json_quote(speed_text(base.speed.alpha_us, "us")),
                         json_quote(speed_text(base.speed.bandwidth, base.speed.unit)));
        s += fmt::format(" \"speed_note\": {},\n", json_quote(base.speed.note));
    }
    if (std::string types = types_text(m, compact); !types.empty()) s += fmt::format(" \"link_types\": {{{}}},\n", types);
    if (compact) {
        s += " \"edges\": [";
        for (std::size_t i = 0; i < m.edges.size(); ++i)
            s += (i ? ",\n           " : "") + edge_text(m.edges[i], m.edges[i].type != m.base_type);
        return s + "]}\n";
    }
    if (!m.switches.empty()) {
        s += " \"switches\": [\n";
        for (std::size_t i = 0; i < m.switches.size(); ++i)
            s += fmt::format("{}{{\"router\": \"r1.{}\", \"reduce\": true, \"multicast\": true, \"efficiency\": {}, \"note\": {}}}",
                             i ? ",\n   " : "   ", m.switches[i].router, m.switches[i].efficiency, json_quote(m.switches[i].note));
        s += "],\n";
    }
    s += " \"edges\": [\n";
    for (std::size_t i = 0; i < m.edges.size(); ++i) s += (i ? ",\n   " : "   ") + edge_text(m.edges[i], true);
    if (m.groups.empty()) return s + "]}\n";
    s += "],\n \"groups\": [\n";
    for (std::size_t i = 0; i < m.groups.size(); ++i) s += (i ? ",\n   " : "   ") + group_text(m.groups[i]);
    return s + "]}\n";
}

}  // namespace collsched::machines
