#include "compiler/lower/declarations.hpp"

#include <algorithm>
#include <filesystem>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "compiler/table/collective_hint.hpp"
#include "compiler/topology/names.hpp"
#include "compiler/lower/resolve.hpp"
#include "dsl/printer.hpp"

namespace collsched::compiler {

namespace {

/// A positional or keyword argument of a topology family, from a declaration or a factor.
struct Arg {
    SourceLoc loc;
    std::string_view key;
    const ast::Expr* expr = nullptr;
    const ast::ListLit* list = nullptr;
    const ast::StringLit* str = nullptr;
};

/// A topology as the declaration states it: the family, its arguments as values, and the spec
/// string that names it (printed in tables and messages; Topology::parse of it builds the same
/// topology).
struct TopoSpec {
    Family family = Family::graph;
    TopologyArgs args;
    std::string name;
};

std::string substitute(const Env& env, const ast::StringLit& str);
TopoSpec factor_spec(Env& env, const ast::Call& c);
std::shared_ptr<const Topology> build(const TopoSpec& t, SourceLoc loc);

/// w(n) of `ideal(N, w = EXPR)`, evaluated on the AST exactly as the spec reader evaluates the
/// printed `w=` (topology.cpp, CapExpr), so that the table's spec names the same capacities:
/// integers, n, params and lets, + - * / % (truncating), unary minus, log2/log and sqrt (floor, of
/// values >= 1), min and max; every value within +-2^40.
std::int64_t eval_w(const Env& env, const ast::Expr& e, std::int64_t n) {
    auto bad = [&](SourceLoc loc, std::string_view what) -> std::int64_t {
        fail("E031", loc, fmt::format("in w: {} (w may use integers, n, + - * / %, log2(), sqrt(), min(,), max(,))", what));
    };
    auto bounded = [&](SourceLoc loc, std::int64_t v) {
        if (v > (1ll << 40) || v < -(1ll << 40)) bad(loc, "value too large");
        return v;
    };
    return std::visit(
        [&](const auto& x) -> std::int64_t {
            using T = std::decay_t<decltype(x)>;
            if constexpr (std::is_same_v<T, ast::IntLit>) {
                if (x.value > (1ll << 40)) bad(x.loc, "number too large");
                return x.value;
            } else if constexpr (std::is_same_v<T, ast::Ident>) {
                if (x.name == "n") return n;
                auto it = env.ir.w_vars.find(&x);
                if (it == env.ir.w_vars.end()) return bad(x.loc, fmt::format("unknown name '{}'", x.name));
                std::int64_t v = env.slots[it->second];
                if (v > (1ll << 40) || v < -(1ll << 40)) bad(x.loc, "number too large");
                return v;
            } else if constexpr (std::is_same_v<T, ast::Unary>) {
                if (x.op != ast::UnOp::neg) return bad(x.loc, "operator not allowed");
                return bounded(x.loc, -eval_w(env, *x.operand, n));
            } else if constexpr (std::is_same_v<T, ast::Binary>) {
                std::int64_t a = eval_w(env, *x.lhs, n), b = eval_w(env, *x.rhs, n), v = 0;
                switch (x.op) {
                    case ast::BinOp::add: return bounded(x.loc, a + b);
                    case ast::BinOp::sub: return bounded(x.loc, a - b);
                    case ast::BinOp::mul:
                        if (__builtin_mul_overflow(a, b, &v)) bad(x.loc, "value too large");
                        return bounded(x.loc, v);
                    case ast::BinOp::div:
                    case ast::BinOp::mod:
                        if (b == 0) bad(x.loc, "division by zero");
                        return bounded(x.loc, x.op == ast::BinOp::div ? a / b : a % b);
                    default: return bad(x.loc, "operator not allowed");
                }
            } else if constexpr (std::is_same_v<T, ast::Call>) {
                const std::string& f = x.name;
                if (!x.over.empty() || x.range) return bad(x.loc, fmt::format("{}() takes plain arguments here", f));
                if (f == "log2" || f == "log" || f == "sqrt") {
                    if (x.args.size() != 1) return bad(x.loc, fmt::format("{}() takes one argument", f));
                    std::int64_t a = eval_w(env, x.args[0], n);
                    if (a < 1) bad(x.loc, fmt::format("{} of {}", f, a));
                    std::int64_t r = 0;
                    if (f == "sqrt") {
                        while ((r + 1) * (r + 1) <= a) ++r;
                    } else {
                        for (; a > 1; a /= 2) ++r;
                    }
                    return r;
                }
                if (f == "min" || f == "max") {
                    if (x.args.size() != 2) return bad(x.loc, fmt::format("{}() takes two arguments", f));
                    std::int64_t a = eval_w(env, x.args[0], n), b = eval_w(env, x.args[1], n);
                    return f == "min" ? std::min(a, b) : std::max(a, b);
                }
                return bad(x.loc, fmt::format("unknown name '{}'", f));
            } else {
                return bad(x.loc, "a tuple is not a value");
            }
        },
        e.node);
}

/// The keys a `model` declaration takes: the model's knobs but the timing (which is the
/// declaration's name), and the lowering policy.
std::string dsl_model_keys() {
    std::vector<std::string_view> names;
    for (const ModelKey& k : model_keys())
        if (k.name != "timing" && !k.wormhole_only) names.push_back(k.name);
    names.push_back("policy");
    for (const ModelKey& k : model_keys())
        if (k.wormhole_only) names.push_back(k.name);
    std::string out;
    for (std::size_t i = 0; i < names.size(); ++i) out += fmt::format("{}{}", i == 0 ? "" : i + 1 == names.size() ? " or " : ", ", names[i]);
    return out;
}

/// The topology `family(args)` names: its family, arguments and spec string. One method per shape
/// of the family's arguments (FamilyShape), each checking them as the spec reader does.
class FamilyCall {
public:
    FamilyCall(Env& env, std::string_view family, SourceLoc loc, const std::vector<Arg>& args)
        : env_(env), family_(family), loc_(loc), row_(find_family(family)) {
        sort_args(args);
    }

    TopoSpec spec() {
        t_.family = row_->family;
        switch (row_->shape) {
            case FamilyShape::leaves:
            case FamilyShape::size:
            case FamilyShape::dimension: one_size(); break;
            case FamilyShape::tree: tree(); break;
            case FamilyShape::fattree: fattree(); break;
            case FamilyShape::ideal: ideal(); break;
            case FamilyShape::dims: dims(); break;
            case FamilyShape::factors: factors(); break;
            case FamilyShape::file: file(); break;
        }
        return std::move(t_);
    }

private:
    /// Positional arguments in order, the family's keyword argument (caps = [...] or w = EXPR);
    /// any other keyword, or an unknown family, is refused.
    void sort_args(const std::vector<Arg>& args) {
        const std::string_view keyword = row_ ? row_->keyword : std::string_view{};
        for (const Arg& a : args) {
            if (a.key.empty()) {
                pos_.push_back(&a);
            } else if (!keyword.empty() && a.key == keyword) {
                (keyword == "w" ? w_ : caps_) = &a;
            } else {
                std::string accepted = keyword.empty()   ? ""
                                       : keyword == "w" ? " (it takes w = EXPR)"
                                                        : fmt::format(" (it takes {} = [...])", keyword);
                fail("E031", a.loc, fmt::format("{}() has no argument '{}'{}", family_, a.key, accepted));
            }
        }
        if (!row_)
            fail("E030", loc_,
                 fmt::format("unknown topology family '{}': expected {}", family_, name_list(family_rows, &FamilyRow::name)));
    }

    void count(std::size_t lo, std::size_t hi, std::string_view shape) const {
        if (pos_.size() < lo || pos_.size() > hi)
            fail("E031", loc_, fmt::format("{}() takes {}, found {} positional argument{}", family_, shape, pos_.size(), pos_.size() == 1 ? "" : "s"));
    }

    std::int64_t integer(const Arg& a) const {
        if (!a.expr) fail("E031", a.loc, fmt::format("expected an integer argument of {}()", family_));
        return env_.header(*a.expr);
    }

    /// A size as the spec reader reads it: a negative one is refused in its words, naming the spec.
    std::uint64_t size(std::int64_t v, std::string_view what) const {
        if (v < 0) throw InputError(fmt::format("topology '{}': '{}' is not a valid {} (expected a positive integer)", t_.name, v, what));
        return static_cast<std::uint64_t>(v);
    }

    /// The values of a list argument, a comprehension evaluated for at most `most` items.
    std::vector<std::int64_t> list_values(const Arg& a, std::int64_t most) {
        std::vector<std::int64_t> out;
        if (auto it = env_.ir.list_comps.find(a.list); it != env_.ir.list_comps.end()) {
            auto [first, last, body, slot] = it->second;
            std::int64_t lo = env_.eval(first), hi = env_.eval(last);
            for (std::int64_t v = lo; v <= hi && v - lo < most; ++v) {
                env_.slots[slot] = v;
                out.push_back(env_.eval(body));
            }
        } else {
            for (const ast::Expr& e : a.list->items) out.push_back(env_.header(e));
        }
        return out;
    }

    void cap_list(const Arg* a) {
        if (!a || !a->list)
            fail("E031", a ? a->loc : loc_, fmt::format("{}() needs the capacities per level: caps = [c1, ..., cL]", family_));
        t_.args.caps = list_values(*a, 64);
        t_.name += fmt::format(":{}", fmt::join(t_.args.caps, ","));
    }

    /// caps = [...] may also come as the last positional argument.
    void caps_last(std::size_t positional) {
        if (!caps_ && pos_.size() == positional + 1 && pos_[positional]->list) {
            caps_ = pos_[positional];
            pos_.pop_back();
        }
    }

    void one_size() {
        count(1, 1, "1 argument");
        std::int64_t n = integer(*pos_[0]);
        t_.name = fmt::format("{}:{}", family_, n);
        t_.args.sizes = {size(n, row_->shape == FamilyShape::dimension ? "dimension"
                                 : row_->shape == FamilyShape::leaves  ? "number of leaves"
                                                                       : "size")};
        if (row_->capacity_is_leaves) t_.args.w = [](std::int64_t k) { return k; };
    }

    void tree() {
        caps_last(1);
        count(1, 1, "the number of leaves and caps = [...]");
        std::int64_t n = integer(*pos_[0]);
        t_.name = fmt::format("{}:{}", family_, n);
        cap_list(caps_);
        t_.args.sizes = {size(n, "number of leaves")};
    }

    void fattree() {
        caps_last(2);
        count(2, 2, "the arity, the number of leaves and caps = [...]");
        std::int64_t b = integer(*pos_[0]), n = integer(*pos_[1]);
        t_.name = fmt::format("{}:{}:{}", family_, b, n);
        cap_list(caps_);
        t_.args.sizes = {size(b, "arity")};
        t_.args.sizes.push_back(size(n, "number of leaves"));
    }

    void ideal() {
        count(1, 1, "the number of leaves (and w = EXPR)");
        std::int64_t n = integer(*pos_[0]);
        t_.name = fmt::format("{}:{}", family_, n);
        if (w_) {
            if (!w_->expr) fail("E031", w_->loc, "w must be an expression of the subtree size n, for example w = n");
            // The name prints w with the params and lets substituted; the capacities come from
            // evaluating the expression itself.
            Env& env = env_;
            dsl::NameSubst subst = [&env](const ast::Ident& id) -> std::optional<std::string> {
                auto it = env.ir.w_vars.find(&id);
                if (it == env.ir.w_vars.end()) return std::nullopt;
                return std::to_string(env.slots[it->second]);
            };
            std::string text = dsl::print(*w_->expr, subst);
            text.erase(std::remove(text.begin(), text.end(), ' '), text.end());
            t_.name += ":w=" + text;
            const ast::Expr* expr = w_->expr;
            t_.args.w = [&env, expr](std::int64_t k) { return eval_w(env, *expr, k); };
        }
        t_.args.sizes = {size(n, "number of leaves")};
    }

    void dims() {
        count(1, 16, "the size of each dimension");
        std::vector<std::int64_t> dims;
        if (pos_.size() == 1 && pos_[0]->list) {
            // torus([k for i in 1 .. d]): the number of dimensions is a value of the schedule.
            dims = list_values(*pos_[0], 17);
            if (dims.empty() || dims.size() > 16)
                fail("E031", pos_[0]->loc, fmt::format("{}() takes 1 to 16 dimensions, found {}", family_, dims.size()));
        } else {
            for (const Arg* a : pos_) dims.push_back(integer(*a));
        }
        t_.name = fmt::format("{}:{}", family_, fmt::join(dims, "x"));
        for (std::int64_t d : dims) {
            t_.args.sizes.push_back(size(d, "dimension"));
            if (d < 2) throw InputError(fmt::format("topology '{}': dimension {} must be at least 2", t_.name, d));
        }
    }

    void factors() {
        count(2, 16, "at least 2 factors");
        t_.name = fmt::format("{}:", family_);
        for (std::size_t i = 0; i < pos_.size(); ++i) {
            const Arg& a = *pos_[i];
            const ast::Call* call = a.expr ? std::get_if<ast::Call>(&a.expr->node) : nullptr;
            if (a.str) {
                std::string factor = substitute(env_, *a.str);
                t_.name += (i ? "*" : "") + factor;
                t_.args.factors.push_back(Topology::parse(factor));  // a spec the schedule writes as text
            } else if (call) {
                TopoSpec factor = factor_spec(env_, *call);
                t_.name += (i ? "*" : "") + factor.name;
                t_.args.factors.push_back(build(factor, call->loc));
            } else {
                fail("E031", a.loc, "a factor of product() is a topology such as ring(3) or \"ring:3\"");
            }
        }
    }

    void file() {
        count(1, 1, "the path of a JSON edge list");
        if (!pos_[0]->str) fail("E031", pos_[0]->loc, "graph() takes the path of a JSON edge list as a string, for example graph(\"net.json\")");
        std::filesystem::path path(substitute(env_, *pos_[0]->str));
        if (path.is_relative() && !env_.options.base_dir.empty()) path = std::filesystem::path(env_.options.base_dir) / path;
        t_.args.file = path.string();
        t_.name = fmt::format("{}:{}", family_, t_.args.file);
    }

    Env& env_;
    std::string_view family_;
    SourceLoc loc_;
    const FamilyRow* row_;
    std::vector<const Arg*> pos_;
    const Arg* caps_ = nullptr;  ///< the keyword argument: caps = [...]
    const Arg* w_ = nullptr;     ///< or w = EXPR
    TopoSpec t_;
};

TopoSpec spec_of(Env& env, std::string_view family, SourceLoc loc, const std::vector<Arg>& args) {
    return FamilyCall(env, family, loc, args).spec();
}

/// The topology a TopoSpec names; the spec reader's checks, in its words (InputError).
std::shared_ptr<const Topology> build(const TopoSpec& t, SourceLoc) { return Topology::make(t.family, t.args, t.name); }

/// A topology string with every `{name}` replaced by the value of the param or let.
std::string substitute(const Env& env, const ast::StringLit& str) {
    auto it = env.ir.string_vars.find(&str);
    if (it == env.ir.string_vars.end()) return str.value;
    std::string out = str.value;
    for (const auto& [name, slot] : it->second) {
        std::string key = "{" + name + "}";
        for (std::size_t at = out.find(key); at != std::string::npos; at = out.find(key, at))
            out.replace(at, key.size(), std::to_string(env.slots[slot]));
    }
    return out;
}

TopoSpec factor_spec(Env& env, const ast::Call& c) {
    std::vector<Arg> args;
    for (const ast::Expr& e : c.args) args.push_back({ast::start_loc(e), {}, &e, nullptr, nullptr});
    return spec_of(env, c.name, c.loc, args);
}

}  // namespace

void build_topology(Env& env, const XStmt& s) {
    const auto& d = *static_cast<const ast::TopologyDecl*>(s.decl);
    if (!env.options.topology.empty()) {
        try {
            env.topo = Topology::parse(env.options.topology);  // --topology replaces the statement
        } catch (const InputError& e) {
            fail("E031", d.loc, fmt::format("--topology {}: {}", env.options.topology, e.what()));
        }
    } else if (const auto* lit = std::get_if<ast::StringLit>(&d.spec)) {
        try {
            // the schedule writes a spec: read it, a graph file relative to the schedule's directory
            // as in graph("FILE")
            const std::string dir = env.options.base_dir.empty() ? std::string() : env.options.base_dir + "/";
            env.topo = Topology::parse(spec_read_from(substitute(env, *lit), dir));
        } catch (const InputError& e) {
            fail("E031", lit->loc, e.what());
        }
    } else {
        const auto& call = std::get<ast::TopoCall>(d.spec);
        std::vector<Arg> args;
        for (const ast::TopoArg& a : call.args)
            args.push_back({a.loc, a.key, std::get_if<ast::Expr>(&a.value), std::get_if<ast::ListLit>(&a.value),
                            std::get_if<ast::StringLit>(&a.value)});
        try {
            env.topo = build(spec_of(env, call.family, call.loc, args), call.loc);  // values, no spec to read again
        } catch (const InputError& e) {
            fail("E031", call.loc, e.what());
        }
    }
    env.processors = env.topo->processors();
    env.composites = std::make_shared<Composites>(Messages(env.topo->processors()).base_size());
    env.messages = Messages(env.topo->processors(), env.composites.get());
    // Router numbering per level, for r(level, index).
    if (env.topo->is_tree()) {
        std::uint64_t count = env.topo->processors();
        for (std::uint32_t l = 1; l <= env.topo->tree_levels(); ++l) {
            count /= env.topo->arity();
            auto first = env.topo->find_node(fmt::format("r{}.0", l));
            COLLSCHED_ASSERT(first.has_value());
            env.level_first.push_back(idx(*first));
            env.level_count.push_back(static_cast<std::int64_t>(count));
        }
    } else if (env.topo->routers() > 0) {
        env.level_first.push_back(env.topo->processors());
        env.level_count.push_back(env.topo->routers());
    }
}


Model build_model(Env& env, const ast::ModelDecl& d, Model base, LoweringPolicy& policy) {
    Model m = base;
    if (d.timing.name == "hop") m.timing = Timing::hop;
    else if (d.timing.name == "wormhole") m.timing = Timing::wormhole;
    else fail("E032", d.timing.loc, fmt::format("unknown timing '{}': expected hop or wormhole", d.timing.name));
    std::set<std::string> seen;
    bool bad = false;
    for (const ast::ModelArg& a : d.args) {
        try {
            const std::string& key = a.key.name;
            if (!seen.insert(key).second) fail("E032", a.key.loc, fmt::format("'{}' is given twice", key));
            std::string value;
            if (a.value.expr) {
                value = std::to_string(env.header(*a.value.expr));
            } else if (auto it = env.ir.model_vars.find(&a.value); it != env.ir.model_vars.end()) {
                value = std::to_string(env.slots[it->second]);
            } else {
                value = a.value.word;
            }
            if (key == "policy") {
                if (value == "cut-through") policy = LoweringPolicy::cut_through;
                else if (value == "fifo") policy = LoweringPolicy::fifo;
                else if (value == "flood") policy = LoweringPolicy::flood;
                else if (value == "adaptive") policy = LoweringPolicy::adaptive;
                else fail("E032", a.value.loc, fmt::format("unknown policy '{}': expected cut-through, fifo, flood or adaptive", value));
                continue;
            }
            if (key == "timing")
                fail("E032", a.key.loc, fmt::format("the timing is the model's name: model hop(...) or model wormhole(ts = .., tc = ..)"));
            const ModelKey* knob = find_model_key(key);
            if (!knob) fail("E032", a.key.loc, fmt::format("unknown model key '{}': expected {}", key, dsl_model_keys()));
            try {
                knob->set(m, key, value);
            } catch (const InputError& e) {
                std::string_view msg = e.what();
                if (msg.starts_with("model: ")) msg.remove_prefix(7);
                fail("E032", a.value.loc, std::string(msg));
            }
        } catch (const EvalError& e) {
            env.reporter.report(e.code, e.loc, e.message);
            bad = true;
        }
    }
    if (!bad && policy != LoweringPolicy::cut_through && m.timing == Timing::wormhole)
        fail("E032", d.loc, fmt::format("policy {} needs hop timing (under wormhole a send crosses its whole route in one round)", to_string(policy)));
    if (std::string why = combine_problem(m); !bad && !why.empty()) fail("E032", d.loc, why);
    return m;
}

Collective build_collective(Env& env, const ast::CollectiveDecl& d) {
    const std::string& name = d.name.name;
    const CollectiveRow* row = find_collective_row(name);
    if (!row)
        fail("E033", d.name.loc,
             fmt::format("unknown collective '{}'{}: expected {}", name, collective_suggestion(name), collective_list(&CollectiveRow::dsl_form, [](auto&) { return true; })));
    Collective c;
    c.kind = row->kind;
    auto expr_arg = [&](std::size_t i) -> const ast::Expr& {
        const auto* e = std::get_if<ast::Expr>(&d.args[i]);
        if (!e) fail("E033", std::get<ast::SetLit>(d.args[i]).loc, fmt::format("argument {} of {} is a processor, not a set", i + 1, name));
        return *e;
    };
    switch (row->args) {
        case coll::Args::none:
            if (!d.args.empty()) fail("E033", d.loc, fmt::format("{} takes no arguments", name));
            break;
        case coll::Args::root:
            if (d.args.size() != 1) fail("E033", d.loc, fmt::format("{} takes the root processor: {}(r)", name, name));
            c.root = Node{static_cast<std::uint32_t>(env.header(expr_arg(0)))};
            break;
        case coll::Args::root_members: {
            if (d.args.size() != 2 || !std::holds_alternative<ast::SetLit>(d.args[1]))
                fail("E033", d.loc, fmt::format("{} takes the root and the set of members: {}(r, {{a, b, c}})", name, name));
            c.root = Node{static_cast<std::uint32_t>(env.header(expr_arg(0)))};
            for (const ast::SetItem& item : std::get<ast::SetLit>(d.args[1]).items) {
                std::int64_t lo = env.header(item.first), hi = item.last ? env.header(*item.last) : lo;
                for (std::int64_t v = lo; v <= hi; ++v) {
                    Node n{static_cast<std::uint32_t>(v)};
                    if (std::find(c.members.begin(), c.members.end(), n) != c.members.end())
                        fail("E033", item.loc, fmt::format("processor {} is listed twice in the {} set", v, name));
                    c.members.push_back(n);
                }
            }
            std::sort(c.members.begin(), c.members.end());
            break;
        }
    }
    try {
        c.check_goal_count(*env.topo);
    } catch (const InputError& e) {
        fail("E053", d.loc, e.what());
    }
    if (d.chunks) {
        env.chunks_stated = true;
        std::int64_t v = env.header(*d.chunks);
        try {
            c.set_chunks(v < 0 ? 0 : static_cast<std::uint64_t>(v), *env.topo);
        } catch (const InputError& e) {
            fail(std::string_view(e.what()).find("goal pairs") != std::string_view::npos ? "E053" : "E054", ast::start_loc(*d.chunks), e.what());
        }
        if (c.chunks > 1 && env.named_message)
            fail("E054", ast::start_loc(*d.chunks), "a message is named before the collective: with chunks, declare the collective first");
        // The message space depends on the chunks: number the composites after the chunked base range.
        env.composites = std::make_shared<Composites>(Messages(env.topo->processors(), nullptr, c.chunks).base_size());
        env.messages = Messages(env.topo->processors(), env.composites.get(), c.chunks);
    }
    if (std::string why = c.reduction_problem(env.topo->processors(), c.chunks); !why.empty())
        fail("E054", d.chunks ? ast::start_loc(*d.chunks) : d.loc, why);
    env.chunks = c.chunks;
    env.reduces = c.reduces();
    env.prefix = c.row().combine == coll::Combine::ordered;
    return c;
}

}  // namespace collsched::compiler
