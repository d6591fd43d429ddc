// Topology's printers: family names, DOT for Graphviz and the JSON listing of nodes and channels (`collsched topo`).
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "compiler/topology/topology.hpp"
#include "compiler/topology/names.hpp"

namespace collsched {

std::string_view to_string(Family f) { return compiler::family_name(f); }

std::string Topology::to_dot() const {
    std::string out = fmt::format("digraph \"{}\" {{\n  node [shape=circle];\n", spec_);
    for (std::uint32_t v = 0; v < nodes(); ++v) {
        bool proc = v < processors_;
        const SwitchFunctions f = switch_functions(Node{v});
        if (f.reduce || f.multicast)  // a switch that adds or multicasts: drawn as such, with what it does
            out += fmt::format("  \"{}\" [shape=doublecircle, label=\"{}\\n{}{}{}\"];\n", node_name(Node{v}), node_name(Node{v}),
                               f.reduce ? "reduce" : "", f.reduce && f.multicast ? "+" : "", f.multicast ? "multicast" : "");
        else
            out += fmt::format("  \"{}\" [shape={}];\n", node_name(Node{v}), proc ? "box" : "circle");
    }
    for (std::uint32_t i = 0; i < channels_.size(); ++i) {
        const Channel& c = channels_[i];
        auto back = find_channel(c.to, c.from);
        if (back && channels_[idx(*back)].cap == c.cap) {
            if (idx(c.from) > idx(c.to)) continue;
            out += fmt::format("  \"{}\" -> \"{}\" [dir=both, label=\"{}\"];\n", node_name(c.from), node_name(c.to), c.cap);
        } else {
            out += fmt::format("  \"{}\" -> \"{}\" [label=\"{}\"];\n", node_name(c.from), node_name(c.to), c.cap);
        }
    }
    out += "}\n";
    return out;
}

std::string Topology::to_json() const {
    std::string out = fmt::format("{{\"topology\": {}, \"family\": \"{}\",\n \"processors\": [", nlohmann::json(spec_).dump(),
                                  to_string(family_));
    for (std::uint32_t v = 0; v < processors_; ++v) out += fmt::format("{}\"{}\"", v ? ", " : "", v);
    out += "],\n \"routers\": [";
    for (std::uint32_t v = processors_; v < nodes(); ++v)
        out += fmt::format("{}\"{}\"", v > processors_ ? ", " : "", node_name(Node{v}));
    out += "],\n \"channels\": [";
    for (std::size_t i = 0; i < channels_.size(); ++i) {
        const Channel& c = channels_[i];
        out += fmt::format("{}\n  {{\"from\": \"{}\", \"to\": \"{}\", \"cap\": {}", i ? "," : "", node_name(c.from),
                           node_name(c.to), c.cap);
        if (is_tree()) out += fmt::format(", \"level\": {}", c.level);
        if (speeds_given_) out += fmt::format(", \"alpha_s\": {}, \"bandwidth_Bps\": {}", speeds_[i].alpha, speeds_[i].bandwidth);
        out += "}";
    }
    out += "]";
    if (!switches_.empty()) {
        out += ",\n \"switches\": [";
        bool first = true;
        for (std::uint32_t r = 0; r < routers_; ++r) {
            const SwitchFunctions& f = switches_[r];
            if (!f.reduce && !f.multicast && f.efficiency == 1) continue;
            out += fmt::format("{}\n  {{\"router\": \"{}\", \"reduce\": {}, \"multicast\": {}, \"efficiency\": {}}}", first ? "" : ",",
                               node_name(Node{processors_ + r}), f.reduce, f.multicast, f.efficiency);
            first = false;
        }
        out += "]";
    }
    if (!groups_.empty()) {
        out += ",\n \"groups\": [";
        for (std::size_t g = 0; g < groups_.size(); ++g) {
            out += fmt::format("{}\n  {{\"name\": {}, \"cap\": {}, ", g ? "," : "", nlohmann::json(groups_[g].name).dump(), groups_[g].cap);
            if (speeds_given_) out += fmt::format("\"bandwidth_Bps\": {}, ", group_bandwidth(static_cast<std::uint32_t>(g)));
            out += "\"channels\": [";
            for (std::size_t i = 0; i < groups_[g].channels.size(); ++i) {
                const Channel& c = channel(groups_[g].channels[i]);
                out += fmt::format("{}[\"{}\", \"{}\"]", i ? ", " : "", node_name(c.from), node_name(c.to));
            }
            out += "]}";
        }
        out += "]";
    }
    out += "}\n";
    return out;
}

}  // namespace collsched
