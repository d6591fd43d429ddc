// The single instantiation of the X3 grammar (dsl/parser_def.hpp) and the parse() entry point.
#include "dsl/parser.hpp"

#include "dsl/parser_def.hpp"

namespace collsched::dsl {

bool is_keyword(std::string_view word) { return parser::reserved(word); }

std::optional<ast::Program> parse(std::string_view text, std::string_view file, Diagnostics& diags) {
    (void)file;  // messages carry locations; the file name is diags.file()
    namespace x3 = boost::spirit::x3;
    parser::ParseState st(text, diags);
    ast::Program program;
    const auto grammar = x3::with<parser::state_tag>(st)[parser::stmts];
    parser::It it = st.begin();
    // The statement list stops at end of input or at a '}' that closes nothing; report such a
    // brace and go on after it.
    while (true) {
        x3::phrase_parse(it, st.end(), grammar, parser::skipper, program.statements);
        it = st.skip(it);
        if (it == st.end() || st.gave_up()) break;
        st.error("E002", it, fmt::format("found {} where a statement should start (no block is open)", st.describe(it)));
        ++it;
    }
    if (st.errors() != 0) return std::nullopt;
    return program;
}

}  // namespace collsched::dsl
