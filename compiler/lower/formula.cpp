#include "compiler/lower/formula.hpp"

#include <fmt/format.h>

#include "compiler/lower/env.hpp"
#include "compiler/lower/resolve.hpp"
#include "dsl/parser.hpp"

namespace collsched::compiler {

std::optional<std::int64_t> evaluate_formula(std::string_view formula, std::span<const Define> params,
                                             std::span<const std::string> lets, Diagnostics& diags) {
    // The names as declarations (their values come as overrides), the definitions, then the
    // formula as the last definition; one per line, so a diagnostic's line says which it is.
    std::string text;
    for (const Define& p : params) text += fmt::format("param {} = 0\n", p.name);
    for (const std::string& l : lets) text += fmt::format("let {}\n", l);
    text += fmt::format("let formula_value_ = {}\n", formula);
    diags = Diagnostics("formula", text);
    auto program = dsl::parse(text, "formula", diags);
    if (!program) return std::nullopt;
    IR ir = resolve(*program, params, diags, /*topology_required=*/false);
    if (diags.has_errors()) return std::nullopt;
    const XStmt& last = ir.stmts[ir.children[ir.top + ir.top_n - 1]];
    if (ir.exprs[last.e0].type != Type::integer) {
        diags.error("E012", ir.exprs[last.e0].loc, fmt::format("the formula must be an integer, found {}", type_name(ir.exprs[last.e0].type)));
        return std::nullopt;
    }
    CompileOptions options;
    Reporter reporter(diags);
    Env env(ir, options, reporter);
    std::int64_t value = 0;
    try {
        for (std::uint32_t k = 0; k < ir.top_n; ++k) {
            const XStmt& s = ir.stmts[ir.children[ir.top + k]];
            if (s.kind == SKind::param) {
                for (const Define& p : params)
                    if (p.name == s.name) env.slots[s.slot] = p.value;
            } else if (s.kind == SKind::let) {
                value = env.slots[s.slot] = env.eval(s.e0);
            }
        }
    } catch (const EvalError& e) {
        diags.error(e.code, e.loc, e.message);
    } catch (const Stop&) {
    }
    if (diags.has_errors()) return std::nullopt;
    return value;
}

}  // namespace collsched::compiler
