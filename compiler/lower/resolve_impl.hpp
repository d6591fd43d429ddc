/** \file
 * The resolver (compiler/lower/resolve.hpp: stage 1, names, types and placement), private to its
 * two files: resolve.cpp (the program, scopes and expressions) and resolve_stmt.cpp (statements
 * and the header declarations: topology, model, collective, claims, bounds, citations).
 */
#pragma once

#include "compiler/lower/resolve.hpp"

#include <algorithm>
#include <limits>
#include <tuple>

#include <fmt/format.h>

#include "compiler/topology/names.hpp"
#include "dsl/printer.hpp"
#include "support/edit_distance.hpp"

namespace collsched::compiler {

class Resolver {
public:
    Resolver(IR& ir, Diagnostics& diags) : ir_(ir), diags_(diags) {}

    void program(const ast::Program& p, std::span<const Define> defines, bool topology_required);

private:
    struct Var {
        std::string name;
        std::uint32_t slot;
        Type type;
        SourceLoc loc;
    };

    // -- scopes --------------------------------------------------------------------------------

    const Var* lookup(std::string_view name) const;

    /// Declares a variable; a name already visible is E011 (no shadowing: two loops over `i`
    /// nested in each other are almost always a mistake).
    std::uint32_t declare(const ast::Ident& id, Type type);

    /// " (did you mean 'partial'?)" for a misspelled function of the language, or nothing. Names
    /// of one or two letters (m, a, b, r) get no hint: any short typo would be near them.
    static std::string function_hint(std::string_view f);

    void unknown_name(const ast::Ident& id);

    // -- expressions ---------------------------------------------------------------------------

    std::uint32_t add(XExpr x);
    std::uint32_t bad(SourceLoc loc) { return add({Op::constant, Type::bad, 0, 0, 0, loc}); }
    Type type(std::uint32_t e) const { return ir_.exprs[e].type; }

    bool need_topology(SourceLoc loc, std::string_view what);

    /// An expression that must have type `want`; `what` names it in the message.
    std::uint32_t want(const ast::Expr& e, Type want_type, std::string_view what) { return checked(expr(e), e, want_type, what); }

    /// The compiled expression x of e, checked to have type `want_type`.
    std::uint32_t checked(std::uint32_t x, const ast::Expr& e, Type want_type, std::string_view what);

    /// A node: an integer is a processor number, checked when evaluated.
    std::uint32_t node(const ast::Expr& e, std::string_view what);

    /// A processor number (message arguments, collective roots): an integer or a processor node.
    std::uint32_t proc(const ast::Expr& e, std::string_view what);

    std::uint32_t expr(const ast::Expr& e);

    std::uint32_t expr_node(const ast::IntLit& n) { return add({Op::constant, Type::integer, 0, 0, n.value, n.loc}); }

    std::uint32_t expr_node(const ast::Ident& n);

    std::uint32_t expr_node(const ast::Tuple& n);

    std::uint32_t expr_node(const ast::Unary& n);

    std::uint32_t expr_node(const ast::Binary& n);

    std::uint32_t expr_node(const ast::Call& n);

    bool arity(const ast::Call& n, std::size_t lo, std::size_t hi, std::string_view shape);

    /// A partial a({0 .. 3, 6}[, c]).
    std::uint32_t partial_set(const ast::Call& n);

    /// A combined value a(i .. j).
    std::uint32_t value_range(const ast::Call& n);

    /// bundle(), sum(), cap(), log2(), abs(), min(), max(); the others are constructor_call's.
    std::uint32_t function_call(const ast::Call& n);

    /// r(level, index), m(s, d[, c]), partial(p[, c]), b(s[, c]), a(s[, c]); anything else is unknown.
    std::uint32_t constructor_call(const ast::Call& n);

    /// `sum(e for i in a .. b)`, `min(...)`, `max(...)`: the range is resolved outside the
    /// variable's scope, the body inside it.
    std::uint32_t comprehension(const ast::Call& n);

    /// Resolves `body for var in first .. last [if c]`: (first, last, body, slot of var); the
    /// condition goes to *cond (none without one; an `if` is refused where cond is null).
    std::array<std::uint32_t, 4> comprehension_parts(const ast::Comprehension& c, const ast::Expr& body, std::string_view what,
                                                     Type body_type = Type::integer, std::uint32_t* cond = nullptr);

    // -- statements ----------------------------------------------------------------------------

    std::pair<std::uint32_t, std::uint32_t> block(const ast::Block& b);

    std::pair<std::uint32_t, std::uint32_t> nested(const ast::Block& b);

    static XStmt make(SKind kind, SourceLoc loc);

    std::uint32_t add(XStmt s);

    void schedule_statement();

    /// Placement of topology, model and collective: at the top level, once, before the schedule.
    /// `seen` is the first declaration of the kind (null before it).
    void declaration(const void* decl, SourceLoc loc, std::string_view what, const void*& seen, SourceLoc& seen_loc);

    std::uint32_t stmt(const ast::Param& s);

    std::uint32_t stmt(const ast::Let& s);

    std::uint32_t stmt(const ast::For& s);

    std::uint32_t stmt(const ast::If& s);

    std::uint32_t stmt(const ast::StepBlock& s);

    std::uint32_t stmt(const ast::Send& s);

    std::uint32_t stmt(const ast::Hop& s);

    std::uint32_t stmt(const ast::Require& s);

    /// `assert c, "message"`: evaluated where it stands, like a let. The variables c names
    /// (visible here, not bound inside c) go to `lists` as their load expressions, once per
    /// variable, so a failure can show their values.
    std::uint32_t stmt(const ast::Assert& s);

    // Claims, bounds and citations: metadata at the top level, once per key, carried into the
    // table as extra fields (docs/dsl.md, "Claims").

    /// Placement of metadata: top level; a key at most once (`what` names it in messages).
    void metadata(const std::string& key, SourceLoc loc, std::string_view what);

    std::uint32_t stmt(const ast::Claim& s);

    std::uint32_t stmt(const ast::Bound& s);

    std::uint32_t stmt(const ast::Cite& s);

    // Declarations: their expressions are resolved here and evaluated once by the machine.

    void header_int(const ast::Expr& e, std::string_view what) { ir_.header_exprs[&e] = want(e, Type::integer, what); }

    void topo_args(std::string_view family, const std::vector<ast::TopoArg>& args);

    void product_factor(const ast::Call& c);

    /// `w = EXPR` of an ideal fat tree: `n` is the subtree size; other names are variables,
    /// printed as their values into the spec string.
    void w_expr(const ast::Expr& e);

    /// `{name}` in a topology string (a spec string or a graph file's path) stands for the value
    /// of a param or let: `graph("omega-{n}.json")`.
    void topo_string(const ast::StringLit& str);

    std::uint32_t stmt(const ast::TopologyDecl& s);

    std::uint32_t stmt(const ast::ModelDecl& s);

    std::uint32_t stmt(const ast::CollectiveDecl& s);

    IR& ir_;
    Diagnostics& diags_;
    std::vector<Var> vars_;
    int depth_ = 0;
    bool in_step_ = false;
    bool started_ = false;
    bool reported_no_topology_ = false;
    const void* topology_ = nullptr;
    const void* model_ = nullptr;
    const void* collective_ = nullptr;
    SourceLoc topology_loc_, model_loc_, collective_loc_;
    std::unordered_map<std::string, SourceLoc> metadata_;  // claim/bound/cite keys stated so far
};

}  // namespace collsched::compiler
