#include <iterator>
#include <string>
#include <vector>

#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "compiler/io/table_io.hpp"
#include "support/assert.hpp"
#include "support/error.hpp"

namespace collsched {

namespace {

using json = nlohmann::json;



void put(fmt::memory_buffer& out, std::string_view s) { out.append(s.data(), s.data() + s.size()); }
void put(fmt::memory_buffer& out, std::uint32_t v) {
    fmt::format_int f(v);
    out.append(f.data(), f.data() + f.size());
}
/// Messages::name(m) written straight into the buffer (no string per transfer).
void put_message(fmt::memory_buffer& out, const Messages& ms, MessageId m) {
    if (ms.is_composite(m)) return put(out, ms.name(m));  // a(i..j), b(0)+b(4): rare, by name
    MessageKey k = ms.key(m);
    switch (k.kind) {
        case MessageKind::personal:
            put(out, "m(");
            put(out, k.src);
            out.push_back(',');
            put(out, k.dst);
            break;
        case MessageKind::broadcast:
            put(out, "b(");
            put(out, k.src);
            break;
        case MessageKind::value:
            put(out, "a(");
            put(out, k.src);
            break;
        case MessageKind::combined:
        case MessageKind::bundle:
        case MessageKind::partial:
            COLLSCHED_ASSERT(false);  // composites are written by name above
    }
    if (ms.chunks() > 1) {
        out.push_back(',');
        put(out, k.chunk);
    }
    out.push_back(')');
}

}  // namespace

std::vector<std::string> node_names(const Topology& t) {
    std::vector<std::string> names(t.nodes());
    for (std::uint32_t v = 0; v < t.nodes(); ++v) names[v] = t.node_name(Node{v});
    return names;
}

void write_json_header(const SendTable& t, std::string_view format, fmt::memory_buffer& out, std::string_view file) {
    auto it = std::back_inserter(out);
    fmt::format_to(it, "{{\"format\": \"{}\", \"topology\": {},\n \"model\": {},\n \"collective\": \"{}\",\n", format,
                   json(spec_written_at(t.topology->spec(), file)).dump(), to_json(t.model).dump(), t.collective.to_string());
    if (t.uses_bandwidth_model()) {
        fmt::format_to(it, " \"chunks\": {},\n", t.collective.chunks);
        if (!t.step_rounds.empty()) fmt::format_to(it, " \"rounds\": [{}],\n", fmt::join(t.step_rounds, ", "));
    }
    if (!t.requirements.empty()) {
        Messages ms = t.messages();
        fmt::format_to(it, " \"requirements\": [");
        for (std::size_t i = 0; i < t.requirements.size(); ++i)
            fmt::format_to(it, "{}{{\"msg\": \"{}\", \"at\": \"{}\"}}", i ? ", " : "", ms.name(t.requirements[i].message),
                           idx(t.requirements[i].at));
        fmt::format_to(it, "],\n");
    }
    for (const auto& [k, v] : t.top_fields()) fmt::format_to(it, " {}: {},\n", json(k).dump(), v);
}

void write_table_json(const SendTable& t, fmt::memory_buffer& out, const Flush& flush, std::string_view file) {
    auto it = std::back_inserter(out);
    write_json_header(t, table_format_of(t), out, file);
    Messages ms = t.messages();
    fmt::format_to(it, " \"steps\": {},\n \"transfers\": [", t.steps());
    std::vector<std::string> names = node_names(*t.topology);
    auto extra = t.transfer_extras.begin();
    std::vector<std::string> origin_json;  // "at" of each origin, as JSON strings
    for (const std::string& o : t.origins) origin_json.push_back(json(o).dump());
    for (std::uint64_t i = 0; i < t.transfers.size(); ++i) {
        const Transfer& x = t.transfers[i];
        const Channel& c = t.topology->channel(x.channel);
        put(out, i ? ",\n  {\"step\": " : "\n  {\"step\": ");
        put(out, x.step);
        put(out, ", \"from\": \"");
        put(out, names[idx(c.from)]);
        put(out, "\", \"to\": \"");
        put(out, names[idx(c.to)]);
        put(out, "\", \"msg\": \"");
        put_message(out, ms, x.message);
        out.push_back('"');
        if (i < t.transfer_origins.size() && t.transfer_origins[i] < origin_json.size()) {
            put(out, ", \"at\": ");
            put(out, origin_json[t.transfer_origins[i]]);
        }
        if (extra != t.transfer_extras.end() && extra->first == i) {
            fmt::format_to(it, ", {}", extra->second);
            ++extra;
        }
        out.push_back('}');
        if (out.size() > table_flush_at) flush(out);
    }
    fmt::format_to(it, "\n ]}}\n");
    flush(out);
}

void write_table_csv(const SendTable& t, fmt::memory_buffer& out, const Flush& flush, std::string_view file) {
    auto it = std::back_inserter(out);
    fmt::format_to(it, "# format={}\n# topology={}\n# model={}\n# collective={}\n", table_format_of(t), spec_written_at(t.topology->spec(), file),
                   to_string(t.model), t.collective.to_string());
    if (t.uses_bandwidth_model()) {
        fmt::format_to(it, "# chunks={}\n", t.collective.chunks);
        if (!t.step_rounds.empty()) fmt::format_to(it, "# rounds={}\n", fmt::join(t.step_rounds, ","));
    }
    Messages ms = t.messages();
    // What the table holds besides its transfers, so that a CSV export reads back to the same table.
    if (!t.requirements.empty()) {
        put(out, "# requirements=");
        for (std::size_t i = 0; i < t.requirements.size(); ++i)
            fmt::format_to(it, "{}{}@{}", i ? " " : "", ms.name(t.requirements[i].message), idx(t.requirements[i].at));
        out.push_back('\n');
    }
    if (const auto fields = t.top_fields(); !fields.empty()) {
        put(out, "# fields={");
        for (std::size_t i = 0; i < fields.size(); ++i)
            fmt::format_to(it, "{}{}:{}", i ? "," : "", json(fields[i].first).dump(), fields[i].second);
        put(out, "}\n");
    }
    for (const auto& [i, text] : t.transfer_extras) fmt::format_to(it, "# extra[{}]={{{}}}\n", i, text);
    put(out, "step,from,to,message\n");
    std::vector<std::string> names = node_names(*t.topology);
    for (const Transfer& x : t.transfers) {
        const Channel& c = t.topology->channel(x.channel);
        put(out, x.step);
        out.push_back(',');
        put(out, names[idx(c.from)]);
        out.push_back(',');
        put(out, names[idx(c.to)]);
        put(out, ",\"");
        put_message(out, ms, x.message);
        put(out, "\"\n");
        if (out.size() > table_flush_at) flush(out);
    }
    flush(out);
}

std::string table_to_json(const SendTable& t) {
    return write_to_string([&](fmt::memory_buffer& b, const Flush& f) { write_table_json(t, b, f); });
}
std::string table_to_csv(const SendTable& t) {
    return write_to_string([&](fmt::memory_buffer& b, const Flush& f) { write_table_csv(t, b, f); });
}

}  // namespace collsched
