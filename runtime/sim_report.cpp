// The simulator's reports: the names of statuses and rules, the short text report and the JSON
// object (runtime/simulator.hpp).
#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "runtime/simulator.hpp"
#include "support/text.hpp"

namespace collsched {

std::string_view to_string(SimStatus s) {
    switch (s) {
        case SimStatus::completed: return "completed";
        case SimStatus::halted: return "halted";
        case SimStatus::incomplete: return "incomplete";
    }
    return "?";
}

std::string_view to_string(SimRule r) {
    switch (r) {
        case SimRule::capacity: return "capacity";
        case SimRule::ports: return "ports";
        case SimRule::queues: return "queues";
        case SimRule::replication: return "replication";
        case SimRule::causality: return "causality";
        case SimRule::completeness: return "completeness";
    }
    return "?";
}

double SimReport::utilization(const SendTable& t, ChannelId c) const {
    if (simulated_steps == 0 || idx(c) >= channel_transfers.size()) return 0;
    return static_cast<double>(channel_transfers[idx(c)]) /
           (static_cast<double>(t.topology->channel(c).cap) * static_cast<double>(simulated_steps));
}

namespace {

/// Six decimals are plenty for a ratio and keep golden files stable.
double rounded(double x) { return std::round(x * 1e6) / 1e6; }

}  // namespace

std::string format_sim_report(const SimReport& r, const SendTable& t) {
    const Topology& topo = *t.topology;
    const Messages ms = t.messages();
    auto unit_of = [&](std::uint64_t k) {
        return std::string(r.wormhole ? "round" : "step") + (k == 1 ? "" : "s");
    };
    auto chan = [&](ChannelId c) {
        const Channel& ch = topo.channel(c);
        return fmt::format("{}->{}", topo.node_name(ch.from), topo.node_name(ch.to));
    };
    std::string out;
    for (const std::string& line : r.trace) out += line + '\n';
    out += fmt::format("simulate {}: {}, {}\n", topo.spec(), t.collective.to_string(), to_string(t.model));
    switch (r.status) {
        case SimStatus::completed:
            out += fmt::format("status: completed in {} {} ({})\n", r.steps, unit_of(r.steps), support::count_of(r.transfers, "transfer"));
            break;
        case SimStatus::halted:
            out += fmt::format("status: halted on rule '{}' after {} of {} {}\n  {}\n", to_string(r.violation->rule),
                               r.simulated_steps, r.steps, unit_of(r.steps), r.violation->message);
            break;
        case SimStatus::incomplete:
            out += fmt::format("status: incomplete after {} {} ({})\n  {}\n", r.steps, unit_of(r.steps), support::count_of(r.transfers, "transfer"),
                               r.violation->message);
            break;
    }
    if (r.wormhole) {
        std::string how = cost_breakdown(t);  // bundles: payloads differ from round to round
        out += how.empty() ? fmt::format("cost: {} rounds x (ts + tc) = {}\n", r.steps, r.cost) : fmt::format("cost: {} = {}\n", how, r.cost);
    }
    out += fmt::format("deliveries: {} of {}", r.deliveries_done, r.deliveries_required);
    if (!r.missing.empty()) {
        out += "; missing ";
        for (std::size_t i = 0; i < r.missing.size() && i < 4; ++i)
            out += fmt::format("{}{} at {}", i ? ", " : "", ms.name(r.missing[i].message), topo.node_name(r.missing[i].at));
        if (r.missing_count > 4) out += fmt::format(", ... ({} in all)", r.missing_count);
    }
    out += '\n';
    std::uint64_t used = 0, moved = 0, capacity = 0;
    for (std::size_t c = 0; c < r.channel_transfers.size(); ++c) {
        used += r.channel_transfers[c] > 0;
        moved += r.channel_transfers[c];
        capacity += topo.channels()[c].cap;
    }
    const double mean = r.simulated_steps == 0 || capacity == 0
                            ? 0.0
                            : static_cast<double>(moved) / (static_cast<double>(capacity) * r.simulated_steps);
    out += fmt::format("channels: {} of {} used over {} {}, mean utilization {:.3f}\n", used, r.channel_transfers.size(),
                       r.simulated_steps, unit_of(r.simulated_steps), mean);
    if (!r.busiest.empty()) {
        out += "busiest:";
        for (std::size_t i = 0; i < r.busiest.size(); ++i)
            out += fmt::format("{} {} {:.3f} ({})", i ? "," : "", chan(r.busiest[i]), r.utilization(t, r.busiest[i]),
                               r.channel_transfers[idx(r.busiest[i])]);
        out += '\n';
    }
    if (!r.queues_apply) {
        out += "queues: do not apply (wormhole timing)\n";
    } else if (topo.routers() > 0) {
        out += fmt::format("queue high-water: max {}", r.max_high_water);
        if (r.level_high_water.size() > 1) {
            out += " (";
            for (std::size_t l = 0; l < r.level_high_water.size(); ++l)
                out += fmt::format("{}level {}: {}", l ? ", " : "", l + 1, r.level_high_water[l]);
            out += ")";
        }
        out += '\n';
    }
    if (!r.holes.empty()) {
        auto most = std::max_element(r.holes.begin(), r.holes.end());
        out += fmt::format("holes: {} idle receive {} in all; most at processor {} ({} of {})\n", r.total_holes, unit_of(r.total_holes),
                           topo.node_name(Node{static_cast<std::uint32_t>(most - r.holes.begin())}), *most, r.simulated_steps);
    }
    return out;
}

std::string sim_report_to_json(const SimReport& r, const SendTable& t) {
    const Topology& topo = *t.topology;
    const Messages ms = t.messages();
    fmt::memory_buffer b;
    auto it = std::back_inserter(b);
    auto channel_obj = [&](ChannelId c) {
        const Channel& ch = topo.channel(c);
        fmt::format_to(it, "{{\"from\": {}, \"to\": {}, \"cap\": {}, \"transfers\": {}, \"utilization\": {}}}",
                       support::json_string(topo.node_name(ch.from)), support::json_string(topo.node_name(ch.to)), ch.cap,
                       r.channel_transfers[idx(c)], rounded(r.utilization(t, c)));
    };
    fmt::format_to(it, "{{\"status\": \"{}\", \"rule\": ", to_string(r.status));
    if (r.violation) fmt::format_to(it, "\"{}\"", to_string(r.violation->rule));
    else fmt::format_to(it, "null");
    fmt::format_to(it, ", \"steps\": {}, \"simulated_steps\": {}, \"timing\": \"{}\", \"cost\": {}, \"transfers\": {}", r.steps,
                   r.simulated_steps, r.wormhole ? "wormhole" : "hop", r.cost, r.transfers);
    fmt::format_to(it, ", \"deliveries\": {{\"done\": {}, \"required\": {}}}", r.deliveries_done, r.deliveries_required);
    fmt::format_to(it, ", \"halt\": ");
    if (r.status == SimStatus::halted) {
        const SimViolation& v = *r.violation;
        fmt::format_to(it, "{{\"rule\": \"{}\", \"step\": {}, \"message\": {}, \"node\": ", to_string(v.rule), v.step,
                       support::json_string(v.message));
        if (v.node) fmt::format_to(it, "{}", support::json_string(topo.node_name(*v.node)));
        else fmt::format_to(it, "null");
        fmt::format_to(it, ", \"channel\": ");
        if (v.channel) {
            const Channel& ch = topo.channel(*v.channel);
            fmt::format_to(it, "{{\"from\": {}, \"to\": {}}}", support::json_string(topo.node_name(ch.from)), support::json_string(topo.node_name(ch.to)));
        } else {
            fmt::format_to(it, "null");
        }
        if (v.group) fmt::format_to(it, ", \"group\": {}", support::json_string(topo.groups()[*v.group].name));
        fmt::format_to(it, ", \"messages\": [");
        for (std::size_t i = 0; i < v.messages.size(); ++i) fmt::format_to(it, "{}\"{}\"", i ? ", " : "", ms.name(v.messages[i]));
        fmt::format_to(it, "]}}");
    } else {
        fmt::format_to(it, "null");
    }
    fmt::format_to(it, ", \"missing\": [");
    for (std::size_t i = 0; i < r.missing.size(); ++i)
        fmt::format_to(it, "{}{{\"message\": \"{}\", \"at\": {}}}", i ? ", " : "", ms.name(r.missing[i].message),
                       support::json_string(topo.node_name(r.missing[i].at)));
    fmt::format_to(it, "], \"queue_high_water\": ");
    if (r.queues_apply) {
        fmt::format_to(it, "{{\"max\": {}, \"per_level\": {{", r.max_high_water);
        for (std::size_t l = 0; l < r.level_high_water.size(); ++l)
            fmt::format_to(it, "{}\"{}\": {}", l ? ", " : "", l + 1, r.level_high_water[l]);
        fmt::format_to(it, "}}, \"per_router\": {{");
        for (std::size_t i = 0; i < r.router_high_water.size(); ++i)
            fmt::format_to(it, "{}{}: {}", i ? ", " : "", support::json_string(topo.node_name(Node{topo.processors() + static_cast<std::uint32_t>(i)})),
                           r.router_high_water[i]);
        fmt::format_to(it, "}}}}");
    } else {
        fmt::format_to(it, "null");
    }
    fmt::format_to(it, ", \"holes\": {{\"total\": {}, \"per_processor\": [", r.total_holes);
    for (std::size_t p = 0; p < r.holes.size(); ++p) fmt::format_to(it, "{}{}", p ? ", " : "", r.holes[p]);
    fmt::format_to(it, "]}}, \"busiest\": [");
    for (std::size_t i = 0; i < r.busiest.size(); ++i) {
        if (i) fmt::format_to(it, ", ");
        channel_obj(r.busiest[i]);
    }
    fmt::format_to(it, "], \"channels\": [");
    for (std::uint32_t c = 0; c < r.channel_transfers.size(); ++c) {
        if (c) fmt::format_to(it, ", ");
        channel_obj(ChannelId{c});
    }
    fmt::format_to(it, "]");
    if (!r.trace.empty()) {
        fmt::format_to(it, ", \"trace\": [");
        for (std::size_t i = 0; i < r.trace.size(); ++i) fmt::format_to(it, "{}{}", i ? ", " : "", support::json_string(r.trace[i]));
        fmt::format_to(it, "]");
    }
    fmt::format_to(it, "}}\n");
    return fmt::to_string(b);
}

}  // namespace collsched
