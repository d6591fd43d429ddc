#include "compiler/io/table_printer.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "dsl/printer.hpp"

namespace collsched {

std::string dsl_node_name(const Topology& t, Node n) {
    if (t.is_processor(n)) return std::to_string(idx(n));
    std::string name = t.node_name(n);  // r<level>.<index>
    std::size_t dot = name.find('.');
    return fmt::format("r({}, {})", name.substr(1, dot - 1), name.substr(dot + 1));
}

namespace {

std::string model_text(const Model& m) {
    std::string args;
    if (m.timing == Timing::wormhole || m.ts != Model{}.ts || m.tc != Model{}.tc)
        args += fmt::format("ts = {}, tc = {}, ", m.ts, m.tc);
    args += fmt::format("ports = {}, queues = {}, replicate = {}", to_string(m.ports), queues_to_string(m), m.replicate ? "yes" : "no");
    return fmt::format("model {}({})", to_string(m.timing), args);
}

}  // namespace

std::string dsl_collective(const Collective& c) {
    const CollectiveRow& r = c.row();
    switch (r.args) {
        case coll::Args::none: return std::string(r.name);
        case coll::Args::root: return fmt::format("{}({})", r.name, idx(c.root));
        case coll::Args::root_members: {
            std::string s = fmt::format("{}({}, {{", r.name, idx(c.root));
            for (std::size_t i = 0; i < c.members.size(); ++i) s += fmt::format("{}{}", i ? ", " : "", idx(c.members[i]));
            return s + "})";
        }
    }
    return "custom";
}

void write_table_dsl(const SendTable& t, fmt::memory_buffer& out, const Flush& flush, std::string_view file) {
    const Topology& topo = *t.topology;
    Messages ms = t.messages();
    auto put = [&](std::string_view s) { out.append(s.data(), s.data() + s.size()); };
    fmt::format_to(std::back_inserter(out), "# A send table written as a schedule (transfers: {}, steps: {}).\n",
                   t.transfers.size(), t.steps());
    fmt::format_to(std::back_inserter(out), "topology {}\n{}\ncollective {}{}\n", dsl::quote(spec_written_at(topo.spec(), file)), model_text(t.model),
                   dsl_collective(t.collective), t.collective.chunks > 1 ? fmt::format(" chunks {}", t.collective.chunks) : std::string());
    for (const Requirement& r : t.requirements) fmt::format_to(std::back_inserter(out), "require {} at {}\n", ms.name(r.message), idx(r.at));
    for (const Claim& c : t.claims) fmt::format_to(std::back_inserter(out), "{}\n", c.statement());
    std::vector<std::string> names(topo.nodes());
    for (std::uint32_t v = 0; v < topo.nodes(); ++v) names[v] = dsl_node_name(topo, Node{v});
    const std::uint32_t P = topo.processors();
    const bool chunked = t.collective.chunks > 1;
    // A step of several rounds is written with them, also when it has no transfer.
    auto step_head = [&](Step s) {
        if (t.rounds(s) > 1) fmt::format_to(std::back_inserter(out), "step {} rounds {} {{\n", s, t.rounds(s));
        else fmt::format_to(std::back_inserter(out), "step {} {{\n", s);
    };
    Step written = 0;
    for (std::size_t i = 0; i < t.transfers.size();) {
        Step s = t.transfers[i].step;
        for (Step e = written + 1; e < s; ++e)
            if (t.rounds(e) > 1) {
                step_head(e);
                put("}\n");
            }
        written = s;
        step_head(s);
        for (; i < t.transfers.size() && t.transfers[i].step == s; ++i) {
            const Transfer& x = t.transfers[i];
            const Channel& c = topo.channel(x.channel);
            put("  hop ");
            put(names[idx(c.from)]);
            put(" -> ");
            put(names[idx(c.to)]);
            put(" msg ");
            std::uint64_t v = idx(x.message), pp = std::uint64_t{P} * P;
            if (chunked) fmt::format_to(std::back_inserter(out), "{}\n", ms.name(x.message));
            else if (v < pp) fmt::format_to(std::back_inserter(out), "m({},{})\n", v / P, v % P);
            else if (v < pp + P) fmt::format_to(std::back_inserter(out), "b({})\n", v - pp);
            else if (v < pp + 2ull * P) fmt::format_to(std::back_inserter(out), "a({})\n", v - pp - P);
            else fmt::format_to(std::back_inserter(out), "{}\n", ms.name(x.message));  // a(i..j), b(0)+b(4): DSL syntax too
            if (out.size() > (1u << 20) && flush) flush(out);
        }
        put("}\n");
    }
    if (flush) flush(out);
}

std::string table_to_dsl(const SendTable& t, std::string_view file) {
    fmt::memory_buffer out;
    write_table_dsl(t, out, {}, file);
    return fmt::to_string(out);
}

}  // namespace collsched
