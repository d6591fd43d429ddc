/** \file
 * The topology families as the DSL and the spec strings spell them. The DSL's resolver and
 * evaluator, the spec parsers and the printers read this list, so that every "expected ..."
 * message lists the same names in the same order. The collectives are rows of
 * compiler/collective_kinds.hpp, the model's knobs are in compiler/model.hpp (model_keys), the
 * output formats in compiler/export_formats.hpp (output_formats).
 */
#pragma once

#include <string>
#include <string_view>

#include "compiler/topology.hpp"

namespace collsched::compiler {

/// A topology family: its name in `topology NAME(...)` and in spec strings `NAME:...`.
struct FamilyName {
    std::string_view name;
    Family family;  ///< ebft and cbft are binary fat trees with fixed capacities
};

inline constexpr FamilyName family_names[] = {
    {"ebft", Family::bft},      {"cbft", Family::bft},          {"bft", Family::bft},           {"fattree", Family::fattree},
    {"ideal", Family::ideal},   {"ring", Family::ring},         {"linear", Family::linear},     {"mesh", Family::mesh},
    {"torus", Family::torus},   {"hypercube", Family::hypercube}, {"complete", Family::complete}, {"product", Family::product},
    {"butterfly", Family::butterfly}, {"graph", Family::graph},
};

/// The entry named `name`, or null.
inline const FamilyName* find_family(std::string_view name) {
    for (const FamilyName& f : family_names)
        if (f.name == name) return &f;
    return nullptr;
}

/// "a, b, c or d": the `field` of every entry of `table`.
template <class Table, class Field>
std::string name_list(const Table& table, Field field) {
    std::string out;
    const std::size_t n = std::size(table);
    for (std::size_t i = 0; i < n; ++i) {
        if (i > 0) out += i + 1 == n ? " or " : ", ";
        out += table[i].*field;
    }
    return out;
}

}  // namespace collsched::compiler
