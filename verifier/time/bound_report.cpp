// The proved lower bounds on time as the reports print them (verifier/time/bound_report.hpp),
// moved from tools/time_objective.cpp (issue 42).
#include "verifier/time/bound_report.hpp"

#include <fmt/format.h>

#include "support/units.hpp"

namespace collsched {

double gap_percent(double time, double bound) {
    if (bound <= 0 || time <= bound * (1 + 1e-9)) return 0;
    return 100 * (time / bound - 1);
}

nlohmann::ordered_json bound_json(const TimeBounds& b, const TimeBound& at) {
    const TimeTerm& t = b.terms[at.best];
    nlohmann::ordered_json j;
    j["seconds"] = at.seconds;
    j["term"] = t.name;
    j["detail"] = t.detail;
    j["latency_s"] = at.latency_s;
    j["bandwidth_s"] = at.bandwidth_s;
    j["model"] = b.model;
    j["assumptions"] = b.assumptions;
    j["certificate"] = {{"inside", t.inside}, {"crossing", t.crossing}, {"demand_per_byte", t.demand}, {"bandwidth_Bps", t.bandwidth()},
                        {"latency_s", t.latency}};
    j["max_flows"] = b.max_flows;
    return j;
}

nlohmann::ordered_json bound_json(const ExecutorBounds& b, const ExecutorBound& at) {
    const ExecutorBoundRow& row = b.rows[at.row];
    nlohmann::ordered_json j;
    j["seconds"] = at.seconds;
    j["given_by"] = at.exact ? "exact" : "bound";  // exact: the least time of the exact set's tables (time_bound_executor.hpp)
    j["executor"] = at.exact ? b.exact->executor : row.executor;
    j["protocol"] = std::string(to_string(at.exact ? b.exact->protocol[*at.exact] : row.protocol));
    j["launch_s"] = at.exact ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(row.launch);
    j["network_s"] = at.exact ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(at.at.seconds);
    j["space"] = b.space;
    // the rows narrowed to a family (NCCL graph files' rings): the family, and the bound on any table beside it
    j["family"] = b.family.empty() ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(b.family);
    j["any_table_s"] = any_table_seconds(b, at.size);
    j["assumptions"] = b.assumptions;
    auto per = nlohmann::ordered_json::array();
    for (const ExecutorBoundRow& r : b.rows)
        per.push_back({{"executor", r.executor}, {"protocol", std::string(to_string(r.protocol))},
                       {"seconds", r.launch + evaluate(r.bounds, at.size).seconds}});
    j["per_protocol"] = per;
    j["exact"] = nullptr;
    if (b.exact)
        for (std::size_t k = 0; k < b.exact->sizes.size(); ++k)
            if (b.exact->sizes[k] == at.size)
                j["exact"] = {{"executor", b.exact->executor}, {"tables", b.exact->what}, {"table", b.exact->table[k]},
                              {"protocol", std::string(to_string(b.exact->protocol[k]))}, {"seconds", b.exact->seconds[k]}};
    j["bound"] = at.exact || row.bounds.terms.empty() ? nlohmann::ordered_json(nullptr) : bound_json(row.bounds, at.at);
    return j;
}

std::string bound_lines(const TimeBounds& b, const std::vector<double>& sizes) {
    std::string s;
    for (double m : sizes) {
        const TimeBound at = evaluate(b, m);
        s += fmt::format("time bound at {}: {}", support::format_bytes(m), bound_text(b, at));
    }
    return s;
}

}  // namespace collsched
