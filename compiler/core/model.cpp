#include "compiler/core/model.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <iterator>
#include <limits>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "support/assert.hpp"
#include "support/error.hpp"

namespace collsched {

std::string_view to_string(Timing t) { return t == Timing::hop ? "hop" : "wormhole"; }

std::string_view to_string(Ports p) {
    switch (p) {
        case Ports::multi: return "multi";
        case Ports::single: return "single";
        case Ports::half: return "half";
    }
    return "?";
}

std::string queues_to_string(const Model& m) {
    switch (m.queues) {
        case QueueKind::unbounded: return "unbounded";
        case QueueKind::none: return "none";
        case QueueKind::bounded: return std::to_string(m.queue_bound);
    }
    return "?";
}

std::string to_string(const Model& m) {
    std::string timing = m.timing == Timing::hop
                             ? std::string("hop")
                             : fmt::format("wormhole,ts={},tc={}", m.ts, m.tc);
    return fmt::format("timing={},ports={},queues={},replicate={}{}{}{}", timing, to_string(m.ports), queues_to_string(m),
                       m.replicate ? "yes" : "no", m.inject_once ? ",inject=once" : "", m.combine_routers ? ",combine=routers" : "",
                       m.multicast_routers ? ",multicast=routers" : "");
}

namespace {

/// A bad value for a knob: the message says what the knob accepts (its line in `keys` below).
[[noreturn]] void bad_value(std::string_view key, std::string_view value) {
    const ModelKey* k = find_model_key(key);
    throw InputError(fmt::format("model: bad value '{}' for '{}': expected {}", value, key, k ? k->values : "?"));
}

std::uint32_t parse_bound(std::string_view key, std::string_view v) {
    std::uint32_t b = 0;
    auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), b);
    if (ec != std::errc{} || p != v.data() + v.size())
        bad_value(key, v);
    return b;
}

double parse_cost(std::string_view key, std::string_view v) {
    // std::from_chars for double is available in libstdc++ 11+.
    double d = 0;
    auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), d);
    if (ec != std::errc{} || p != v.data() + v.size() || !std::isfinite(d) || d < 0)
        bad_value(key, v);
    return d;
}

void set_queues(Model& m, std::string_view key, std::string_view v) {
    if (v == "unbounded") {
        m.queues = QueueKind::unbounded;
    } else if (v == "none") {
        m.queues = QueueKind::none;
    } else {
        m.queues = QueueKind::bounded;
        m.queue_bound = parse_bound(key, v);
    }
}

void set_timing(Model& m, std::string_view key, std::string_view v) {
    if (v == "hop") m.timing = Timing::hop;
    else if (v == "wormhole") m.timing = Timing::wormhole;
    else bad_value(key, v);
}

void set_ports(Model& m, std::string_view key, std::string_view v) {
    if (v == "multi") m.ports = Ports::multi;
    else if (v == "single") m.ports = Ports::single;
    else if (v == "half") m.ports = Ports::half;
    else bad_value(key, v);
}

void set_replicate(Model& m, std::string_view key, std::string_view v) {
    if (v == "yes" || v == "true") m.replicate = true;
    else if (v == "no" || v == "false") m.replicate = false;
    else bad_value(key, v);
}

void set_combine(Model& m, std::string_view key, std::string_view v) {
    if (v == "routers") m.combine_routers = true;
    else if (v == "processors") m.combine_routers = false;
    else bad_value(key, v);
}

void set_multicast(Model& m, std::string_view key, std::string_view v) {
    if (v == "routers") m.multicast_routers = true;
    else if (v == "no") m.multicast_routers = false;
    else bad_value(key, v);
}

void set_inject(Model& m, std::string_view key, std::string_view v) {
    if (v == "once") m.inject_once = true;
    else if (v == "any") m.inject_once = false;
    else bad_value(key, v);
}

/// The model's knobs, one line each (as CaDiCaL keeps its options): the `--model` option, the
/// table readers, the DSL's `model` declaration and the messages listing the keys all read this
/// list, so a new knob is one line here, its field in Model, and its printers.
constexpr ModelKey keys[] = {
    {"timing", "hop or wormhole", "hop", false, set_timing},
    {"ts", "a non-negative number", "1", true, [](Model& m, std::string_view k, std::string_view v) { m.ts = parse_cost(k, v); }},
    {"tc", "a non-negative number", "0", true, [](Model& m, std::string_view k, std::string_view v) { m.tc = parse_cost(k, v); }},
    {"ports", "multi, single or half", "multi", false, set_ports},
    {"queues", "unbounded, none, or a queue bound B >= 0", "unbounded", false, set_queues},
    {"replicate", "yes or no", "no", false, set_replicate},
    {"inject", "once or any", "any", false, set_inject},  // a restriction, printed only when once
    {"combine", "processors or routers", "processors", false, set_combine},  // printed only when routers
    {"multicast", "no or routers", "no", false, set_multicast},               // printed only when routers
};

}  // namespace

std::span<const ModelKey> model_keys() { return keys; }

const ModelKey* find_model_key(std::string_view name) {
    for (const ModelKey& k : keys)
        if (k.name == name) return &k;
    return nullptr;
}

std::string model_key_names(std::string_view last_word) {
    std::string out;
    for (std::size_t i = 0; i < std::size(keys); ++i) {
        if (i > 0) out += i + 1 == std::size(keys) && !last_word.empty() ? fmt::format(" {} ", last_word) : std::string(", ");
        out += keys[i].name;
    }
    return out;
}

void set_model_key(Model& m, std::string_view key, std::string_view value) {
    const ModelKey* k = find_model_key(key);
    if (!k) throw UnknownModelKey(fmt::format("model: unknown key '{}': expected one of {}", key, model_key_names()));
    k->set(m, key, value);
}

Model apply_model_options(Model m, std::string_view options) {
    std::vector<std::string_view> seen;  // a key given twice is an error, as E032 is in the DSL
    while (!options.empty()) {
        std::size_t comma = options.find(',');
        std::string_view item = options.substr(0, comma);
        options = comma == std::string_view::npos ? std::string_view{} : options.substr(comma + 1);
        if (item.empty()) continue;
        std::size_t eq = item.find('=');
        if (eq == std::string_view::npos)
            throw InputError(fmt::format("model: '{}' is not key=value (for example ports=single)", item));
        std::string_view key = item.substr(0, eq);
        if (std::find(seen.begin(), seen.end(), key) != seen.end())
            throw InputError(fmt::format("model: '{}' is given twice", key.substr(0, 40)));
        seen.push_back(key);
        set_model_key(m, key, item.substr(eq + 1));
    }
    // combine=routers outside the models it is defined for: refused where the model is read, so
    // that the message names the file or option (and compile does not write a table that verify
    // and simulate refuse).
    if (std::string why = combine_problem(m); !why.empty()) throw InputError("model: " + why);
    return m;
}

std::string combine_problem(const Model& m) {
    if (m.multicast_routers && !m.replicate) {
        if (m.timing != Timing::hop) return "multicast=routers (a router sends one copy on several channels) is defined under hop timing";
        if (m.queues == QueueKind::bounded)
            return "multicast=routers (a router sends one copy on several channels) is defined with queues=none or queues=unbounded, "
                   "not with a queue bound";
    }
    if (!m.combine_routers) return "";
    if (m.timing != Timing::hop) return "combine=routers (in-network reduction) is defined under hop timing";
    if (m.replicate) return "combine=routers (in-network reduction) is defined with replicate=no (a combination consumes its inputs)";
    if (m.queues == QueueKind::bounded)
        return "combine=routers (in-network reduction) is defined with queues=none or queues=unbounded, not with a queue bound";
    return "";
}

nlohmann::json to_json(const Model& m) {
    nlohmann::json out = nlohmann::json::object();
    out["timing"] = std::string(to_string(m.timing));
    if (m.timing == Timing::wormhole) {
        out["ts"] = m.ts;
        out["tc"] = m.tc;
    }
    out["ports"] = std::string(to_string(m.ports));
    if (m.queues == QueueKind::bounded) out["queues"] = m.queue_bound;
    else out["queues"] = queues_to_string(m);
    out["replicate"] = m.replicate;
    if (m.inject_once) out["inject"] = "once";
    if (m.combine_routers) out["combine"] = "routers";
    if (m.multicast_routers) out["multicast"] = "routers";
    return out;
}

Model model_from_json(const nlohmann::json& j, Model m) {
    if (!j.is_object()) throw InputError("table: \"model\" must be an object such as {\"timing\": \"hop\"}");
    for (const auto& [key, value] : j.items()) {
        if (key == "replicate" && value.is_boolean()) {
            m.replicate = value.get<bool>();
        } else if ((key == "ts" || key == "tc") && value.is_number()) {
            double d = value.get<double>();
            if (!std::isfinite(d) || d < 0) bad_value(key, value.dump());
            (key == "ts" ? m.ts : m.tc) = d;
        } else if (key == "queues" && value.is_number_unsigned()) {
            // range-checked before narrowing: 4294967296 must not wrap to a bound of 0
            std::uint64_t b = value.get<std::uint64_t>();
            if (b > std::numeric_limits<std::uint32_t>::max())
                throw InputError(fmt::format("model: bad value '{}' for '{}': expected unbounded, none, or a queue bound 0 <= B <= {}",
                                             value.dump(), key, std::numeric_limits<std::uint32_t>::max()));
            m.queues = QueueKind::bounded;
            m.queue_bound = static_cast<std::uint32_t>(b);
        } else if (value.is_string()) {
            set_model_key(m, key, value.get<std::string>());
        } else {
            throw InputError(fmt::format("table: model key '{}' has value {} of the wrong type", key, value.dump()));
        }
    }
    if (std::string why = combine_problem(m); !why.empty()) throw InputError("model: " + why);
    return m;
}

}  // namespace collsched
