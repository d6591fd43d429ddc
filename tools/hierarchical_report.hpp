/** \file
 * How `optimize --hierarchical` reports the composition (verifier/synth/search/hierarchical.hpp): the boxes,
 * each phase with its sub-machine, steps, status and search space, the compositions tried and
 * the best, in text and as the "hierarchical" object of `optimize --json`.
 */
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "verifier/synth/search/hierarchical.hpp"

namespace collsched::tools {

std::string hierarchical_text(const HierarchicalResult&);
nlohmann::ordered_json hierarchical_json(const HierarchicalResult&);

}  // namespace collsched::tools
