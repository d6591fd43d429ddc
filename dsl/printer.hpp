/** \file
 * Prints an AST back as schedule text that parses to the same AST (up to locations and
 * comments, which are not kept). Expressions get the fewest parentheses the precedence table of
 * docs/dsl.md allows; blocks are indented by two spaces per level. Send tables are printed as
 * DSL by compiler/io/table_printer.hpp.
 */
#pragma once

#include <functional>
#include <optional>
#include <string>

#include "dsl/ast.hpp"

namespace collsched::dsl {

/// Replaces a name while printing an expression: return the text to print instead, or nullopt
/// to keep the name. (The compiler uses it to print `w=` of an ideal fat tree with values.)
using NameSubst = std::function<std::optional<std::string>(const ast::Ident&)>;

std::string print(const ast::Expr&, const NameSubst& subst = {});
std::string print(const ast::Program&);

/// The spelling of an operator (`**`, `<<`, ...).
std::string_view spelling(ast::BinOp);
std::string_view spelling(ast::UnOp);

/// A string literal with quotes and escapes.
std::string quote(std::string_view);

}  // namespace collsched::dsl
