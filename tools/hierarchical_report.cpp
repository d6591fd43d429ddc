// `optimize --hierarchical`: the composition's report (tools/hierarchical_report.hpp).
#include "tools/hierarchical_report.hpp"

#include <fmt/format.h>

namespace collsched::tools {

std::string hierarchical_text(const HierarchicalResult& h) {
    std::string s = fmt::format("hierarchical: {}\n", h.layout.how);
    for (const HierarchicalPhase& p : h.phases) {
        const OptimizeResult& r = p.result;
        s += fmt::format("  {} phase on {}, copied {} times: ", p.name, p.machine, p.copies);
        s += r.optimum ? fmt::format("{} steps, {} (lower bound {}; {}; by {})\n", *r.optimum, to_string(r.status), r.lower_bound,
                                     r.status == OptStatus::proved ? "over " + p.space : "not proved", r.upper_bound_source)
                       : fmt::format("no schedule ({})\n", to_string(r.status));
    }
    if (!h.compositions.empty()) {
        s += fmt::format("  compositions: {} of {} tried, each compacted and verified whole by the direct checker:\n", h.compositions.size(), h.space);
        for (const Composition& c : h.compositions)
            s += fmt::format("    {:>5} steps (laid out: {}){}  {}\n", c.steps, c.laid_out, c.name == h.best ? " best" : "     ", c.name);
    }
    if (h.table) s += fmt::format("  best: {} steps ({:.2f} s, verification {:.2f} s)\n", h.table->steps(), h.seconds, h.verify_seconds);
    if (!h.reason.empty()) s += fmt::format("  stopped: {}\n", h.reason);
    return s;
}

nlohmann::ordered_json hierarchical_json(const HierarchicalResult& h) {
    nlohmann::ordered_json j;
    j["boxes"] = h.layout.boxes;
    j["per_box"] = h.layout.per_box;
    j["layout"] = h.layout.how;
    auto& ph = j["phases"] = nlohmann::ordered_json::array();
    for (const HierarchicalPhase& p : h.phases)
        ph.push_back({{"name", p.name},
                      {"machine", p.machine},
                      {"copies", p.copies},
                      {"steps", p.result.optimum ? nlohmann::ordered_json(*p.result.optimum) : nlohmann::ordered_json()},
                      {"status", to_string(p.result.status)},
                      {"lower_bound", p.result.lower_bound},
                      {"space", p.space},
                      {"source", p.result.upper_bound_source}});
    auto& cs = j["compositions"] = nlohmann::ordered_json::array();
    for (const Composition& c : h.compositions) cs.push_back({{"name", c.name}, {"laid_out", c.laid_out}, {"steps", c.steps}});
    j["space"] = h.space;
    j["steps"] = h.table ? nlohmann::ordered_json(h.table->steps()) : nlohmann::ordered_json();
    j["best"] = h.best;
    j["seconds"] = h.seconds;
    j["verify_seconds"] = h.verify_seconds;
    if (!h.reason.empty()) j["reason"] = h.reason;
    return j;
}

}  // namespace collsched::tools
