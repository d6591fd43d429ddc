// The NCCL tuner configuration as plugin.c's CSV, as `collsched tune`'s table and as JSON
// (verifier/time/nccl_tuner.hpp).
#include <algorithm>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "support/units.hpp"
#include "verifier/time/nccl_tuner.hpp"

namespace collsched {

namespace {

std::string choice_text(const TunerChoice& c) { return fmt::format("{} {}", c.algorithm, tuner_protocol_name(c.protocol)); }

/// NCCL's picks over a range's points, each once, in order ("ring ll128, ring simple").
std::string nccl_picks(const TunerCollective& c, const TunerRange& r) {
    std::vector<std::string> seen;
    for (std::size_t i = r.first; i <= r.last; ++i) {
        const TunerPoint& p = c.points[i];
        std::string s = p.nccl ? choice_text(*p.nccl) : std::string("none");
        if (p.nccl && p.nccl_seconds <= 0) s += " (not timed)";
        if (std::find(seen.begin(), seen.end(), s) == seen.end()) seen.push_back(s);
    }
    std::string out;
    for (const std::string& s : seen) out += (out.empty() ? "" : ", ") + s;
    return out;
}

/// The gains over a range's points: "1.32x" or "1.05x..1.32x".
std::string gains(const TunerCollective& c, const TunerRange& r) {
    double lo = 1e300, hi = 0;
    for (std::size_t i = r.first; i <= r.last; ++i) lo = std::min(lo, c.points[i].gain()), hi = std::max(hi, c.points[i].gain());
    const std::string a = fmt::format("{:.2f}x", lo), b = fmt::format("{:.2f}x", hi);
    return a == b ? a : a + ".." + b;
}

nlohmann::ordered_json choice_json(const TunerChoice& c) {
    return {{"algorithm", c.algorithm}, {"protocol", tuner_protocol_name(c.protocol)}, {"channels", c.channels}};
}

}  // namespace

std::string tuner_file(const TunerConfig& cfg) {
    std::string out = fmt::format(
        "# NCCL tuner configuration (NVIDIA/nccl plugins/tuner/example), written by collsched tune\n"
        "# machine: {} ({} nodes, {} ranks); executor model: {}; model error {:.0f} %\n"
        "# a size range without a line: NCCL's pick is within the model's error of the fastest, NCCL's own choice stays\n"
        "# collective,minBytes,maxBytes,algorithm,protocol,channels,nNodes,nRanks\n",
        cfg.machine, cfg.nodes, cfg.ranks, cfg.executor, 100 * cfg.error);
    for (const TunerCollective& c : cfg.collectives)
        for (const TunerRange& r : c.ranges)
            if (r.line)
                out += fmt::format("{},{},{},{},{},{},{},{}\n", tuner_collective_name(c.kind), r.min_bytes, r.max_bytes, r.line->algorithm,
                                   tuner_protocol_name(r.line->protocol), r.line->channels, cfg.nodes, cfg.ranks);
    return out;
}

std::string tuner_text(const TunerConfig& cfg) {
    std::string out = fmt::format("NCCL tuner configuration for {}: {} nodes, {} ranks; executor {} (gains within {:.0f} % are ties)\n",
                                  cfg.machine, cfg.nodes, cfg.ranks, cfg.executor, 100 * cfg.error);
    for (const TunerCollective& c : cfg.collectives) {
        out += fmt::format("{}:\n  {:<22} {:<34} {:<36} {}\n", tuner_collective_name(c.kind), "bytes", "line (algorithm protocol channels)",
                           "NCCL's own pick", "gain");
        for (const TunerRange& r : c.ranges) {
            const std::string bytes = fmt::format("{}..{}", support::format_bytes(static_cast<double>(r.min_bytes)),
                                                  support::format_bytes(static_cast<double>(r.max_bytes)));
            const std::string line = r.line ? fmt::format("{} {}", choice_text(*r.line), r.line->channels) : "tie: NCCL's own choice stays";
            out += fmt::format("  {:<22} {:<34} {:<36} {}\n", bytes, line, nccl_picks(c, r), gains(c, r));
        }
        for (const std::string& n : c.notes) out += fmt::format("  note: {}\n", n);
    }
    return out;
}

std::string tuner_json(const TunerConfig& cfg) {
    nlohmann::ordered_json j{{"format", "collsched.tune/1"}, {"machine", cfg.machine}, {"nodes", cfg.nodes},  {"ranks", cfg.ranks},
                             {"executor", cfg.executor},     {"error", cfg.error},     {"collectives", nlohmann::ordered_json::array()}};
    for (const TunerCollective& c : cfg.collectives) {
        nlohmann::ordered_json cj{{"collective", tuner_collective_name(c.kind)}, {"points", nlohmann::ordered_json::array()},
                                  {"ranges", nlohmann::ordered_json::array()}, {"notes", c.notes}};
        for (const TunerPoint& p : c.points) {
            nlohmann::ordered_json pj{{"bytes", static_cast<std::uint64_t>(p.size)}, {"best", choice_json(p.best)}, {"best_seconds", p.best_seconds}};
            pj["nccl"] = p.nccl ? choice_json(*p.nccl) : nlohmann::ordered_json();
            pj["nccl_seconds"] = p.nccl_seconds > 0 ? nlohmann::ordered_json(p.nccl_seconds) : nlohmann::ordered_json();
            pj["gain"] = p.gain();
            pj["line"] = p.line;
            cj["points"].push_back(std::move(pj));
        }
        for (const TunerRange& r : c.ranges)
            cj["ranges"].push_back({{"min_bytes", r.min_bytes}, {"max_bytes", r.max_bytes}, {"first", r.first}, {"last", r.last},
                                    {"line", r.line ? choice_json(*r.line) : nlohmann::ordered_json()}});
        j["collectives"].push_back(std::move(cj));
    }
    return j.dump(2) + "\n";
}

}  // namespace collsched
