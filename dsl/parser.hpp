/** \file
 * The schedule parser: source text to ast::Program. The grammar (docs/dsl.md) is written with
 * Boost.Spirit X3 in dsl/parser_def.hpp and instantiated once in dsl/parser.cpp; this header
 * exposes project types only.
 *
 * Syntax errors are reported as diagnostics with the column of the offending token and what was
 * expected (E001 "expected X, found Y", E002 stray text where a statement should start, E003 an
 * integer literal that does not fit in 64 bits, E004 an unterminated string). The parser
 * recovers at the next line (keeping braces balanced), so one run reports every syntax error
 * it can, up to `max_syntax_errors`.
 */
#pragma once

#include <cstddef>
#include <optional>
#include <string_view>

#include "dsl/ast.hpp"
#include "dsl/diagnostics.hpp"

namespace collsched::dsl {

inline constexpr std::size_t max_syntax_errors = 20;

/// Parses a whole program. `text` must be the text `diags` was made with (its locations point
/// into it); `file` names it in messages that have no location. Returns nullopt when any
/// syntax error was reported.
std::optional<ast::Program> parse(std::string_view text, std::string_view file, Diagnostics& diags);

/// Whether `word` is a reserved word of the language (it cannot name a param or variable).
bool is_keyword(std::string_view word);

}  // namespace collsched::dsl
