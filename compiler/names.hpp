/** \file
 * One table per kind of name (as CaDiCaL keeps its options in one list): the topology families
 * and the collectives, as the DSL and the spec strings spell them. The DSL's resolver and
 * evaluator, the spec parsers and the printers read these lists, so that a new family or
 * collective is a line here (and its construction), and every "expected ..." message lists the
 * same names in the same order. The model's knobs are in compiler/model.hpp (model_keys), the
 * output formats in compiler/export_formats.hpp (output_formats).
 */
#pragma once

#include <string>
#include <string_view>

#include "compiler/collective.hpp"
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

/// A collective: its name, and how the DSL (`collective broadcast(r)`) and the spec strings
/// (`broadcast:R`) write it with its arguments, for messages.
struct CollectiveName {
    std::string_view name;
    CollectiveKind kind;
    std::string_view dsl;   ///< "broadcast(r)"
    std::string_view spec;  ///< "broadcast:R"
};

inline constexpr CollectiveName collective_names[] = {
    {"alltoall", CollectiveKind::alltoall, "alltoall", "alltoall"},
    {"allgather", CollectiveKind::allgather, "allgather", "allgather"},
    {"broadcast", CollectiveKind::broadcast, "broadcast(r)", "broadcast:R"},
    {"scatter", CollectiveKind::scatter, "scatter(r)", "scatter:R"},
    {"gather", CollectiveKind::gather, "gather(r)", "gather:R"},
    {"multicast", CollectiveKind::multicast, "multicast(r, {members})", "multicast:R:a,b,c"},
    {"reduce", CollectiveKind::reduce, "reduce(r)", "reduce:R"},
    {"prefix", CollectiveKind::prefix, "prefix", "prefix"},
    {"allreduce", CollectiveKind::allreduce, "allreduce", "allreduce"},
    {"reduce_scatter", CollectiveKind::reduce_scatter, "reduce_scatter", "reduce_scatter"},
    {"scan", CollectiveKind::scan, "scan", "scan"},
    {"custom", CollectiveKind::custom, "custom", "custom"},
};

/// The entry named `name`, or null.
inline const FamilyName* find_family(std::string_view name) {
    for (const FamilyName& f : family_names)
        if (f.name == name) return &f;
    return nullptr;
}
inline const CollectiveName* find_collective(std::string_view name) {
    for (const CollectiveName& c : collective_names)
        if (c.name == name) return &c;
    return nullptr;
}
inline const CollectiveName& collective_name(CollectiveKind kind) {
    for (const CollectiveName& c : collective_names)
        if (c.kind == kind) return c;
    return collective_names[std::size(collective_names) - 1];
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
