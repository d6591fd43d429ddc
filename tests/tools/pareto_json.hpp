/** \file
 * What the pareto tests compare between runs: the `--json` report without its times (`seconds`,
 * `*_seconds` and `peak_memory` anywhere in it), which differ from run to run; everything else (the rows,
 * every attempt's answer, the frontier, the proofs) must be the same byte for byte.
 */
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace collsched::test {

inline nlohmann::json without_times(nlohmann::json j) {
    if (j.is_object()) {
        nlohmann::json out = nlohmann::json::object();
        for (auto& [k, v] : j.items())
            if (k != "seconds" && k != "peak_memory" && !k.ends_with("_seconds")) out[k] = without_times(v);
        return out;
    } else if (j.is_array()) {
        for (auto& v : j) v = without_times(v);
    }
    return j;
}

/// The report of one run without its times, as text.
inline std::string pareto_report(const std::string& json_output) { return without_times(nlohmann::json::parse(json_output)).dump(1); }

}  // namespace collsched::test
