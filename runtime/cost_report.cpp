// The cost lines and predicted times of a table (runtime/cost_report.hpp), moved from
// tools/bandwidth.cpp (issue 42): verify, simulate, pareto and compare print them, and the
// Python module reads the same JSON.
#include "runtime/cost_report.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "support/error.hpp"
#include "support/text.hpp"
#include "support/units.hpp"

namespace collsched {

void AlphaBeta::check() const {
    if ((alpha || beta) && !(alpha && beta && !sizes.empty()))
        throw InputError("the alpha-beta time needs all three of --alpha A, --beta B and --size M");
    if ((alpha || beta) && sizes.size() != 1) throw InputError("the alpha-beta time takes one --size M, not a list");
}

bool shows_bandwidth(const SendTable& t, const AlphaBeta& ab) { return t.uses_bandwidth_model() || ab.alpha_beta(); }

std::string bandwidth_text(const SendTable& t, const AlphaBeta& ab, std::optional<Step> steps) {
    if (!shows_bandwidth(t, ab)) return "";
    const BandwidthCost c = bandwidth_cost(t, steps.value_or(t.steps()));
    std::string out = fmt::format("bandwidth: S = {}, R = {}, C = {}, R/C = {} rounds per chunk\n", support::count_of(c.steps, "step"),
                                  support::count_of(c.rounds, "round"), support::count_of(c.chunks, "chunk"), c.fraction());
    if (ab.alpha_beta()) {
        const double d = datum_bytes(t.collective.kind, t.topology->processors(), ab.sizes[0]);
        out += fmt::format("alpha-beta time: S*alpha + R*(D/C)*beta = {}*{} + {}*({}/{})*{} = {} (D = {} bytes per datum at size {})\n", c.steps,
                           *ab.alpha, c.rounds, d, c.chunks, *ab.beta, c.time(*ab.alpha, *ab.beta, d), d, ab.sizes[0]);
    }
    return out;
}

void add_bandwidth_json(nlohmann::ordered_json& j, const SendTable& t, const AlphaBeta& ab, std::optional<Step> steps) {
    if (!shows_bandwidth(t, ab)) return;
    const BandwidthCost c = bandwidth_cost(t, steps.value_or(t.steps()));
    nlohmann::ordered_json b;
    b["steps"] = c.steps;
    b["rounds"] = c.rounds;
    b["chunks"] = c.chunks;
    b["rounds_per_chunk"] = c.fraction();
    if (ab.alpha_beta()) {
        b["alpha"] = *ab.alpha;
        b["beta"] = *ab.beta;
        b["size"] = ab.sizes[0];
        b["datum_bytes"] = datum_bytes(t.collective.kind, t.topology->processors(), ab.sizes[0]);
        b["time"] = c.time(*ab.alpha, *ab.beta, b["datum_bytes"].get<double>());
    }
    j["bandwidth"] = b;
}

double algbw(double size, double seconds) { return seconds > 0 ? size / seconds : 0; }

double busbw(const SendTable& t, double size, double seconds) {
    return algbw(size, seconds) * bus_factor(t.collective.kind, t.topology->processors());
}

std::string speeds_text(const Topology& topo, const std::optional<LinkSpeed>& link) {
    if (link)
        return fmt::format("link speeds: --link, alpha {} and {} per unit of capacity on every channel", support::format_seconds(link->alpha),
                           support::format_bandwidth(link->bandwidth));
    if (topo.channels().empty()) return "link speeds: no channels";
    double amin = 1e300, amax = 0, bmin = 1e300, bmax = 0;
    for (std::uint32_t c = 0; c < topo.channels().size(); ++c) {
        LinkSpeed s = topo.speed(ChannelId{c});
        amin = std::min(amin, s.alpha), amax = std::max(amax, s.alpha);
        bmin = std::min(bmin, s.bandwidth), bmax = std::max(bmax, s.bandwidth);
    }
    auto range = [](double lo, double hi, auto f) { return lo == hi ? f(lo) : fmt::format("{} .. {}", f(lo), f(hi)); };
    return fmt::format("link speeds: {}, alpha {}, {} per channel{}", topo.has_speeds() ? "from the graph file" : "the defaults",
                       range(amin, amax, support::format_seconds), range(bmin, bmax, support::format_bandwidth),
                       topo.groups().empty() ? "" : fmt::format(", {} link groups", topo.groups().size()));
}

TimeOptions AlphaBeta::time_options(double size) const {
    TimeOptions opt{size, link, protocol};
    opt.executor = executor_costs();
    return opt;
}

std::optional<ExecutorCosts> AlphaBeta::executor_costs() const {
    if (!executor) return std::nullopt;
    return collsched::executor_costs(*executor, protocol);
}

std::string executor_text(const ExecutorModel& m, const ExecutorCosts& c) {
    if (c.ideal() && c.protocol == Protocol::none)
        return fmt::format("executor ideal: {} (docs/time.md, \"Executors\")\n", m.note);
    std::string out = fmt::format("executor {} ({}{}): launch {:g} us; hop +{:g}/{:g}/{:g} us, message {:g}/{:g}/{:g} us, efficiency "
                                  "{:.3g}/{:.3g}/{:.3g} (box/network/switch); wire factor {:.4g}{} (docs/time.md, \"Executors\")\n",
                                  m.name, to_string(c.protocol), m.calibration.empty() ? "" : ", " + m.calibration, c.launch * 1e6, c.hop[0] * 1e6,
                                  c.hop[1] * 1e6, c.hop[2] * 1e6, c.message[0] * 1e6, c.message[1] * 1e6, c.message[2] * 1e6, c.efficiency[0],
                                  c.efficiency[1], c.efficiency[2], c.wire, "");
    return out;
}

std::string time_text(const SendTable& t, const AlphaBeta& ab) {
    if (ab.sizes.empty()) return "";
    std::string out = fmt::format("predicted time (docs/time.md), {}; {}:\n",
                                  ab.executor ? fmt::format("executor {}", ab.executor->name)
                                              : std::string("the network's share (executor ideal: no launch, synchronization or message cost, links at peak)"),
                                  speeds_text(*t.topology, ab.link));
    if (ab.executor) {
        out += executor_text(*ab.executor, *ab.executor_costs());
    } else if (ab.protocol != Protocol::none) {
        const ProtocolCost c = protocol_cost(ab.protocol);
        out += fmt::format("protocol {} (docs/time.md, \"Protocols\"): {:.4g} bytes on the wire per byte of data, +{:g} us a hop out of a "
                           "GPU inside a box, +{:g} us out of a box\n",
                           to_string(ab.protocol), c.wire, c.box_s * 1e6, c.network_s * 1e6);
    }
    out += fmt::format("  {:<10}  {:>12}  {:>12}  {:>14}  {:>14}\n", "size", "synchronous", "asynchronous", "algbw (async)", "busbw (async)");
    for (double m : ab.sizes) {
        TimePrediction p = predict_time(t, ab.time_options(m));
        out += fmt::format("  {:<10}  {:>12}  {:>12}  {:>14}  {:>14}\n", support::format_bytes(m), support::format_seconds(p.synchronous),
                           support::format_seconds(p.asynchronous), support::format_bandwidth(algbw(m, p.asynchronous)),
                           support::format_bandwidth(busbw(t, m, p.asynchronous)));
    }
    return out;
}

void add_time_json(nlohmann::ordered_json& j, const SendTable& t, const AlphaBeta& ab) {
    if (ab.sizes.empty()) return;
    nlohmann::ordered_json tj;
    tj["link_speeds"] = ab.link ? "--link" : t.topology->has_speeds() ? "graph file" : "defaults";
    tj["protocol"] = std::string(to_string(ab.executor ? ab.executor_costs()->protocol : ab.protocol));
    // every time names its executor: "ideal" is the network's share (docs/time.md, "Executors")
    tj["executor"] = ab.executor ? ab.executor->name : std::string("ideal");
    if (ab.executor && !ab.executor->calibration.empty()) tj["calibration"] = ab.executor->calibration;
    auto& arr = tj["sizes"] = nlohmann::ordered_json::array();
    for (double m : ab.sizes) {
        TimePrediction p = predict_time(t, ab.time_options(m));
        arr.push_back({{"size", m},
                       {"datum_bytes", p.datum_bytes},
                       {"synchronous_s", p.synchronous},
                       {"asynchronous_s", p.asynchronous},
                       {"algbw_Bps", algbw(m, p.asynchronous)},
                       {"busbw_Bps", busbw(t, m, p.asynchronous)}});
    }
    j["time"] = tj;
}

}  // namespace collsched
