// A verify run (verifier/check/verify_run.hpp), moved from tools/cmd_verify.cpp (issue 42): the
// engines' reports with every counterexample named back to its statement and loop values, and
// the two engines taken together; the command adds the cost lines and prints.
#include "verifier/check/verify_run.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "verifier/check/direct.hpp"
#include "verifier/check/z3_engine.hpp"

namespace collsched {

namespace {

/// The loop values of the statement runs behind the counterexamples that name a transfer
/// (Violation::when), for a schedule: its program is run again once for all of them.
void attach_contexts(VerifyReport& r, const SendTable& t, const ScheduleSource& source) {
    if (source.text.empty() || r.violations.empty()) return;
    std::vector<Transfer> wanted;
    for (const Violation& v : r.violations)
        if (auto i = violation_transfer(t, v)) wanted.push_back(t.transfers[*i]);
    if (wanted.empty()) return;
    std::sort(wanted.begin(), wanted.end());
    wanted.erase(std::unique(wanted.begin(), wanted.end()), wanted.end());
    std::vector<std::string> when = transfer_contexts(source.text, source.name, source.defines, source.options, wanted);
    for (Violation& v : r.violations)
        if (auto i = violation_transfer(t, v)) {
            auto it = std::lower_bound(wanted.begin(), wanted.end(), t.transfers[*i]);
            v.when = when[static_cast<std::size_t>(it - wanted.begin())];
        }
}

/// Counterexamples named back to the schedule: the statement (origin) and its loop values.
void name_sources(VerifyReport& r, const SendTable& t, const ScheduleSource& source) {
    attach_origins(r, t);
    attach_contexts(r, t, source);
}

}  // namespace

VerifyReport verify_table(const SendTable& table, const ScheduleSource& source, bool z3, const VerifyOptions& opt, const Z3Options& zopt) {
    VerifyReport r = z3 ? verify_z3(table, zopt) : verify_direct(table, opt);
    name_sources(r, table, source);
    return r;
}

BothReports verify_both(const SendTable& table, const ScheduleSource& source, const VerifyOptions& opt, const Z3Options& zopt) {
    VerifyReport d = verify_direct(table, opt);
    name_sources(d, table, source);
    VerifyReport z = verify_z3(table, zopt);
    name_sources(z, table, source);
    Agreement both = agreement(d, z);
    return {std::move(d), std::move(z), std::move(both)};
}

nlohmann::ordered_json both_json(const BothReports& b, const SendTable& table) {
    const VerifyReport& d = b.direct;
    const VerifyReport& z = b.z3;
    nlohmann::ordered_json j;
    j["verdict"] = b.both.verdict;
    j["engine"] = "both";
    j["steps"] = d.steps;
    j["transfers"] = d.transfers;
    if (table.model.timing == Timing::wormhole) j["cost"] = d.cost;
    nlohmann::ordered_json props = nlohmann::ordered_json::object();
    for (std::size_t i = 0; i < property_count; ++i) props[std::string(to_string(static_cast<Property>(i)))] = b.both.status[i];
    j["properties"] = props;
    nlohmann::ordered_json direct = report_to_json(d, table);
    nlohmann::ordered_json z3 = report_to_json(z, table);
    j["violations"] = direct["violations"];
    nlohmann::ordered_json list = nlohmann::ordered_json::array();
    for (const Disagreement& x : b.both.disagreements)
        list.push_back({{"property", std::string(to_string(x.property))},
                        {"direct", std::string(to_string(x.direct))},
                        {"z3", std::string(to_string(x.z3))}});
    j["disagreements"] = list;
    j["engines"] = {{"direct", direct}, {"z3", z3}};
    j["seconds"] = d.seconds + z.seconds;
    return j;
}

std::string both_text(const BothReports& b, const SendTable& table) {
    return "engine direct\n" + format_report(b.direct, table) + "\nengine z3\n" + format_report(b.z3, table) + "\n";
}

std::string both_verdict_text(const BothReports& b) {
    return b.both.disagreements.empty()
               ? fmt::format("both engines: {}{}\n", b.both.verdict,
                             b.both.unknown ? " (the Z3 engine could not decide every property; see its notes)" : "")
               : "both engines: DISAGREEMENT (a bug in collsched; see stderr)\n";
}

}  // namespace collsched
