/** \file
 * The first pass of the lowering: names to slots, static types (integer, condition, node,
 * message), placement rules (sends inside steps, declarations at the top level, each at most
 * once, before the schedule), and `-D` overrides checked against the params. It turns the AST
 * (dsl/ast.hpp) into the IR (compiler/lower/ir.hpp) and reports every error it finds (E007, E010..E019,
 * E034); the IR is usable only when `diags` has no errors afterwards.
 */
#pragma once

#include <span>

#include "compiler/lower/ir.hpp"
#include "compiler/lower/lower.hpp"

namespace collsched::compiler {

/// Resolves `program`; `defines` are the -D overrides (an unknown name is E007). Without
/// `topology_required`, a program with no `topology` is fine (formulas: compiler/lower/formula.hpp).
IR resolve(const ast::Program& program, std::span<const Define> defines, Diagnostics& diags, bool topology_required = true);

/// Whether `name` is a topology family of the DSL (`topology NAME(...)`).
bool is_family(std::string_view name);

}  // namespace collsched::compiler
