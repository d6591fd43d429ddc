/** \file
 * One row per topology family (as CaDiCaL keeps its options in one list): its name as the DSL
 * and the spec strings spell it, the shape of its arguments, its keyword and its spec form. The
 * DSL's resolver and declarations, the spec reader and the printers read these rows, so that
 * every "expected ..." message lists the same names in the same order. The collectives are rows of
 * compiler/table/collective_kinds.hpp, the model's knobs are in compiler/core/model.hpp (model_keys), the
 * output formats in compiler/formats/export_formats.hpp (output_formats).
 */
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "compiler/topology/topology.hpp"

namespace collsched::compiler {

/// How a family's arguments look, the same in the DSL (`NAME(...)`) and in specs (`NAME:...`).
/// Both readers (compiler/lower/declarations.cpp `spec_of`, compiler/topology/topology_spec.cpp
/// `Topology::parse`) switch on it; the values go to Topology::make, which checks them in the
/// same words for both.
enum class FamilyShape : std::uint8_t {
    leaves,     ///< ebft(N), ebft:N: N leaves, a power of two; the capacities are the row's
    tree,       ///< bft(N, caps = [c1, ..., cL]), bft:N:c1,...,cL
    fattree,    ///< fattree(B, N, caps = [...]), fattree:B:N:c1,...,cL
    ideal,      ///< ideal(N, w = EXPR), ideal:N:w=EXPR
    size,       ///< ring(N), ring:N, N >= 2
    dimension,  ///< hypercube(D), hypercube:D
    dims,       ///< torus(A, B, ...), torus:AxB[x...]
    factors,    ///< product(G1, G2, ...), product:G1*G2[*...]
    file,       ///< graph("net.json"), graph:net.json
};

/// A topology family, one row: its name in `topology NAME(...)` and in spec strings `NAME:...`,
/// the family it builds (ebft and cbft are binary fat trees with fixed capacities), the shape of
/// its arguments, the DSL's keyword argument, and the spec's form for messages.
struct FamilyRow {
    std::string_view name;
    Family family;
    FamilyShape shape;
    std::string_view keyword;    ///< "caps", "w" or "" (no keyword argument)
    std::string_view spec_form;  ///< "ring:N": what a spec of the family looks like
    bool capacity_is_leaves = false;  ///< ebft: the channel above k leaves has capacity k (cbft: 1)
};

/// The rows, in the order of every "expected ..." list. To add a family: a row here, its
/// Family value and its construction in Topology::make (compiler/topology/topology.hpp, topology.cpp).
inline constexpr FamilyRow family_rows[] = {
    {"ebft", Family::bft, FamilyShape::leaves, "", "ebft:N with N a power of two", true},
    {"cbft", Family::bft, FamilyShape::leaves, "", "cbft:N with N a power of two"},
    {"bft", Family::bft, FamilyShape::tree, "caps", "bft:N:c1,c2,...,cL (one capacity per level, leaves first)"},
    {"fattree", Family::fattree, FamilyShape::fattree, "caps", "fattree:B:N:c1,...,cL (arity, leaves, capacities per level)"},
    {"ideal", Family::ideal, FamilyShape::ideal, "w", "ideal:N or ideal:N:w=EXPR (w of the subtree size n)"},
    {"ring", Family::ring, FamilyShape::size, "", "ring:N"},
    {"linear", Family::linear, FamilyShape::size, "", "linear:N"},
    {"mesh", Family::mesh, FamilyShape::dims, "", "mesh:AxB[x...]"},
    {"torus", Family::torus, FamilyShape::dims, "", "torus:AxB[x...]"},
    {"hypercube", Family::hypercube, FamilyShape::dimension, "", "hypercube:D"},
    {"complete", Family::complete, FamilyShape::size, "", "complete:N"},
    {"product", Family::product, FamilyShape::factors, "", "product:SPEC*SPEC[*...]"},
    {"butterfly", Family::butterfly, FamilyShape::dimension, "", "butterfly:D"},
    {"graph", Family::graph, FamilyShape::file, "", "graph:FILE.json"},
};

/// The row named `name`, or null.
inline const FamilyRow* find_family(std::string_view name) {
    for (const FamilyRow& f : family_rows)
        if (f.name == name) return &f;
    return nullptr;
}

/// The name of a family's row (bft for ebft and cbft: the row whose shape is not `leaves`).
inline std::string_view family_name(Family family) {
    for (const FamilyRow& f : family_rows)
        if (f.family == family && f.shape != FamilyShape::leaves) return f.name;
    return "?";
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
