#include "compiler/lower/env.hpp"

#include <algorithm>
#include <bit>

#include <fmt/format.h>

#include "support/assert.hpp"

namespace collsched::compiler {

void Reporter::report(const char* code, SourceLoc loc, std::string message) {
    if (!reported_.insert(fmt::format("{}:{}:{}", code, loc.line, loc.column)).second) return;
    if (reported_.size() > max_eval_errors) {
        diags_.note(loc, fmt::format("stopping after {} errors", max_eval_errors));
        throw Stop{};
    }
    diags_.error(code, loc, std::move(message));
}

void Reporter::warn(const char* code, SourceLoc loc, std::string message, bool strict) {
    if (strict) return report(code, loc, std::move(message));
    if (!warned_.insert(fmt::format("{}:{}:{}", code, loc.line, loc.column)).second) return;
    warnings_.push_back({Severity::warning, code, loc, std::move(message)});
}

void Reporter::flush_warnings() {
    for (Diagnostic& w : warnings_) diags_.warning(std::move(w.code), w.loc, std::move(w.message));
    warnings_.clear();
}

/// The chunk of a base message expression (imm: the chunk's expression, -1 when none is written),
/// checked against the collective's C: a whole datum under chunks, a chunk without chunks, or a
/// chunk out of range is E054.
std::uint32_t Env::chunk_of(const XExpr& x, std::int64_t s, std::int64_t d) {
    const std::uint32_t C = messages.chunks();
    named_message = true;
    const char kind = x.op == Op::msg_m ? 'm' : x.op == Op::msg_b ? 'b' : 'a';
    const std::string whole = d >= 0 ? fmt::format("m({}, {})", s, d) : fmt::format("{}({})", kind, s);
    if (x.imm < 0) {
        if (C > 1)
            fail("E054", x.loc, fmt::format("{} names a whole datum, but the collective splits every datum into {} chunks: write {} with a chunk 0 .. {}",
                                            whole, C, d >= 0 ? fmt::format("m({}, {}, c)", s, d) : fmt::format("{}({}, c)", kind, s), C - 1));
        return 0;
    }
    std::int64_t c = eval(static_cast<std::uint32_t>(x.imm));
    if (!chunks_stated)
        fail("E054", x.loc, fmt::format("a chunk argument, but the collective does not split its data: write {}, or `collective ... chunks C`", whole));
    if (c < 0 || c >= C) fail("E054", x.loc, fmt::format("chunk {} does not exist (the collective has {} chunks, 0 .. {})", c, C, C - 1));
    return static_cast<std::uint32_t>(c);
}

void Env::check_rule(MessageKind kind, SourceLoc loc) {
    const bool combined = kind == MessageKind::combined;
    if (combined && reduces)
        fail("E048", loc, "a combined value a(i .. j) follows the ordered rule of prefix and reduce, but this collective is a commutative "
                          "reduction: its values are partials, partial(p) or a({i .. j})");
    if (!combined && prefix)
        fail("E048", loc, "a partial follows the buffer rule of commutative reductions, but prefix combines in order: its values are "
                          "a(i .. j)");
    SourceLoc& mine = combined ? first_combined : first_partial;
    const SourceLoc& other = combined ? first_partial : first_combined;
    if (other.line != 0)
        fail("E048", loc, fmt::format("a {} in a schedule that names a {} at line {}, column {}: a table follows one rule, partials "
                                      "a({{...}}) or combined values a(i .. j) (docs/semantics.md, \"Reductions\")",
                                      combined ? "combined value a(i .. j)" : "partial", combined ? "partial" : "combined value a(i .. j)",
                                      other.line, other.column));
    if (mine.line == 0) mine = loc;
}

std::int64_t Env::header(const ast::Expr& e) {
    auto it = ir.header_exprs.find(&e);
    COLLSCHED_ASSERT(it != ir.header_exprs.end());
    return eval(it->second);
}

std::uint64_t Env::range_size(std::int64_t first, std::int64_t last) {
    if (last < first) return 0;
    const auto span = static_cast<std::uint64_t>(last) - static_cast<std::uint64_t>(first);
    return span == std::numeric_limits<std::uint64_t>::max() ? span : span + 1;
}

void Env::count_iterations(std::uint64_t n, SourceLoc where) {
    if (n <= options.max_iterations && iterations <= options.max_iterations - n) {
        iterations += n;
        return;
    }
    bool in_loop = !loops.empty();
    reporter.report("E051", in_loop ? loops.front()->loc : where,
                    fmt::format("this {} runs more than {} iterations, the limit (a runaway loop?)", in_loop ? "loop" : "comprehension",
                                options.max_iterations));
    throw Stop{};
}

/// The values of the loops around the error, so a failure in one iteration can be found.
std::string Env::context() const {
    if (loops.empty()) return {};
    std::string s = " (when ";
    for (std::size_t i = 0; i < loops.size(); ++i)
        s += fmt::format("{}{} = {}", i ? ", " : "", loops[i]->name, slots[loops[i]->slot]);
    return s + ")";
}

/// The values of the variables an assert's condition names, but the loop variables that
/// context() shows: ` (wk = 5, n = 16)`, or nothing.
std::string Env::assert_values(const XStmt& s) const {
    std::string out;
    for (std::uint32_t k = 0; k < s.body_n; ++k) {
        const XExpr& load = ir.exprs[ir.lists[s.body + k]];
        if (std::any_of(loops.begin(), loops.end(), [&](const XStmt* l) { return l->slot == load.a; })) continue;
        std::int64_t v = slots[load.a];
        std::string text = std::to_string(v);
        if (load.type == Type::boolean) text = v ? "true" : "false";
        if (load.type == Type::node) text = node_text(v);
        if (load.type == Type::message)
            text = v == empty_bundle ? "a bundle of no message" : messages.name(MessageId{static_cast<std::uint32_t>(v)});
        out += fmt::format("{}{} = {}", out.empty() ? " (" : ", ", ir.slot_names[load.a], text);
    }
    return out.empty() ? out : out + ")";
}


void Env::overflow(const XExpr& x, std::int64_t a, std::string_view op, std::int64_t b) const {
    fail("E020", x.loc, fmt::format("integer overflow: {} {} {} does not fit in 64 bits", a, op, b));
}

std::string Env::node_text(std::int64_t v) const {
    if (v < topo->processors()) return processor_text(*topo, static_cast<std::uint32_t>(v));
    std::string name = topo->node_name(Node{static_cast<std::uint32_t>(v)});  // r<l>.<i>
    std::size_t dot = name.find('.');
    return fmt::format("r({}, {})", name.substr(1, dot - 1), name.substr(dot + 1));
}

std::string Env::processors_text() const { return fmt::format("{} has processors 0..{}", topo->spec(), topo->processors() - 1); }

std::int64_t Env::eval(std::uint32_t i) {
    const XExpr& x = ir.exprs[i];
    switch (x.op) {
        case Op::constant: return x.imm;
        case Op::load: return slots[x.a];
        case Op::bnot: return ~eval(x.a);
        case Op::lnot: return eval(x.a) == 0;
        case Op::neg:
        case Op::add:
        case Op::sub:
        case Op::mul:
        case Op::div:
        case Op::mod:
        case Op::pow:
        case Op::shl:
        case Op::shr:
        case Op::log2:
        case Op::abs: return arithmetic(x);
        case Op::band: return eval(x.a) & eval(x.b);
        case Op::bor: return eval(x.a) | eval(x.b);
        case Op::bxor: return eval(x.a) ^ eval(x.b);
        case Op::eq: return eval(x.a) == eval(x.b);
        case Op::ne: return eval(x.a) != eval(x.b);
        case Op::lt: return eval(x.a) < eval(x.b);
        case Op::le: return eval(x.a) <= eval(x.b);
        case Op::gt: return eval(x.a) > eval(x.b);
        case Op::ge: return eval(x.a) >= eval(x.b);
        case Op::land: return eval(x.a) && eval(x.b);
        case Op::lor: return eval(x.a) || eval(x.b);
        case Op::min: return std::min(eval(x.a), eval(x.b));
        case Op::max: return std::max(eval(x.a), eval(x.b));
        case Op::cap:
        case Op::node_of:
        case Op::proc_of: return node(x);
        case Op::fold_sum:
        case Op::fold_min:
        case Op::fold_max: return fold(x);
        case Op::router: return router(x, eval(x.a), eval(x.b));
        case Op::coord: return coord(x);
        case Op::msg_m:
        case Op::msg_b:
        case Op::msg_a:
        case Op::msg_range:
        case Op::msg_join: return message(x);
        case Op::msg_partial: return partial_ref(x);
        case Op::msg_set: return partial_set(x);
        case Op::fold_bundle: return fold_bundle(x);
    }
    return 0;
}

/// Integer arithmetic, checked: overflow, division by zero, shifts, exponents, log2.
std::int64_t Env::arithmetic(const XExpr& x) {
    switch (x.op) {
        case Op::neg: {
            std::int64_t v = eval(x.a);
            if (v == std::numeric_limits<std::int64_t>::min()) fail("E020", x.loc, fmt::format("integer overflow: -({}) does not fit in 64 bits", v));
            return -v;
        }
        case Op::add: {
            std::int64_t a = eval(x.a), b = eval(x.b), r;
            if (__builtin_add_overflow(a, b, &r)) overflow(x, a, "+", b);
            return r;
        }
        case Op::sub: {
            std::int64_t a = eval(x.a), b = eval(x.b), r;
            if (__builtin_sub_overflow(a, b, &r)) overflow(x, a, "-", b);
            return r;
        }
        case Op::mul: {
            std::int64_t a = eval(x.a), b = eval(x.b), r;
            if (__builtin_mul_overflow(a, b, &r)) overflow(x, a, "*", b);
            return r;
        }
        case Op::div:
        case Op::mod: {
            std::int64_t a = eval(x.a), b = eval(x.b);
            bool div = x.op == Op::div;
            if (b == 0) fail("E021", x.loc, fmt::format("{} by zero: {} {} 0", div ? "division" : "modulo", a, div ? "/" : "%"));
            if (b == -1) {
                if (!div) return 0;
                if (a == std::numeric_limits<std::int64_t>::min()) overflow(x, a, "/", b);
                return -a;
            }
            // Floor division; the remainder takes the divisor's sign, so (k - 1) % n is in 0..n-1.
            std::int64_t q = a / b, r = a % b;
            if (r != 0 && ((r < 0) != (b < 0))) {
                --q;
                r += b;
            }
            return div ? q : r;
        }
        case Op::pow: {
            std::int64_t a = eval(x.a), b = eval(x.b);
            if (b < 0) fail("E024", x.loc, fmt::format("negative exponent: {} ** {} is not an integer", a, b));
            std::int64_t r = 1, base = a;
            for (std::int64_t e = b; e > 0; e >>= 1) {
                if (e & 1)
                    if (__builtin_mul_overflow(r, base, &r)) overflow(x, a, "**", b);
                if (e > 1 && __builtin_mul_overflow(base, base, &base)) {
                    if (a == 0 || a == 1) break;
                    if (a == -1) return (b & 1) ? -1 : 1;
                    overflow(x, a, "**", b);
                }
            }
            return r;
        }
        case Op::shl: {
            std::int64_t a = eval(x.a), b = eval(x.b);
            if (b < 0 || b > 62) fail("E023", x.loc, fmt::format("shift by {}: the amount must be between 0 and 62", b));
            std::int64_t r = static_cast<std::int64_t>(static_cast<std::uint64_t>(a) << b);
            if ((r >> b) != a) overflow(x, a, "<<", b);
            return r;
        }
        case Op::shr: {
            std::int64_t a = eval(x.a), b = eval(x.b);
            if (b < 0 || b > 62) fail("E023", x.loc, fmt::format("shift by {}: the amount must be between 0 and 62", b));
            return a >> b;
        }
        case Op::log2: {
            std::int64_t v = eval(x.a);
            if (v <= 0 || (v & (v - 1)) != 0)
                fail("E022", x.loc, fmt::format("log2({}): the argument must be a power of two", v));
            return std::countr_zero(static_cast<std::uint64_t>(v));
        }
        case Op::abs: {
            std::int64_t v = eval(x.a);
            if (v == std::numeric_limits<std::int64_t>::min()) fail("E020", x.loc, fmt::format("integer overflow: abs({}) does not fit in 64 bits", v));
            return v < 0 ? -v : v;
        }
        default: break;
    }
    COLLSCHED_ASSERT_MSG(false, "an operation outside its group");
    return 0;
}

/// The capacity of a tree level, and expressions checked to name a node or a processor.
std::int64_t Env::node(const XExpr& x) {
    switch (x.op) {
        case Op::cap: {
            std::int64_t l = eval(x.a);
            if (!topo->is_tree())
                fail("E041", x.loc, fmt::format("cap({}): {} is not a fat tree (cap gives the capacity of a tree's branch level)", l, topo->spec()));
            if (l < 1 || l > std::int64_t{topo->tree_levels()})
                fail("E041", x.loc, fmt::format("cap({}): {} has branch levels 1..{}", l, topo->spec(), topo->tree_levels()));
            return topo->level_caps()[static_cast<std::size_t>(l - 1)];
        }
        case Op::node_of: {
            std::int64_t v = eval(x.a);
            if (v < 0 || v >= processors) fail("E040", x.loc, fmt::format("processor {} does not exist ({})", v, processors_text()));
            return v;
        }
        case Op::proc_of: {
            std::int64_t v = eval(x.a);
            if (ir.exprs[x.a].type == Type::node) {
                if (v >= processors)
                    fail("E043", x.loc, fmt::format("{} is a router; messages and collectives name processors", node_text(v)));
            } else if (v < 0 || v >= processors) {
                fail("E040", x.loc, fmt::format("processor {} does not exist ({})", v, processors_text()));
            }
            return v;
        }
        default: break;
    }
    COLLSCHED_ASSERT_MSG(false, "an operation outside its group");
    return 0;
}

/// Messages: m(s, d), b(s), a(s), a(i .. j) and bundles.
std::int64_t Env::message(const XExpr& x) {
    switch (x.op) {
        case Op::msg_m: {
            std::int64_t s = eval(x.a), d = eval(x.b);
            return idx(messages.personal(static_cast<std::uint32_t>(s), static_cast<std::uint32_t>(d), chunk_of(x, s, d)));
        }
        case Op::msg_b: {
            std::int64_t s = eval(x.a);
            return idx(messages.broadcast(static_cast<std::uint32_t>(s), chunk_of(x, s, -1)));
        }
        case Op::msg_a: {
            std::int64_t s = eval(x.a);
            return idx(messages.value(static_cast<std::uint32_t>(s), chunk_of(x, s, -1)));
        }
        case Op::msg_range: {
            std::int64_t lo = eval(x.a), hi = eval(x.b);
            if (lo > hi) fail("E048", x.loc, fmt::format("a({} .. {}): a combined value a(i .. j) needs i <= j", lo, hi));
            if (lo == hi) return idx(messages.value(static_cast<std::uint32_t>(lo)));
            check_rule(MessageKind::combined, x.loc);
            return idx((*composites).intern({MessageKind::combined, static_cast<std::uint32_t>(lo), static_cast<std::uint32_t>(hi), {}, {}}));
        }
        case Op::msg_join: {
            std::vector<MessageId> parts;
            add_parts(parts, MessageId{static_cast<std::uint32_t>(eval(x.a))}, x);
            add_parts(parts, MessageId{static_cast<std::uint32_t>(eval(x.b))}, x);
            return make_bundle(std::move(parts));
        }
        default: break;
    }
    COLLSCHED_ASSERT_MSG(false, "an operation outside its group");
    return 0;
}

/// partial(p[, c]): a reference to p's buffer, resolved to the partial it holds once the table
/// is complete (resolve_partials, compiler/table/partials.cpp): kept as a partial without sources.
std::int64_t Env::partial_ref(const XExpr& x) {
    std::int64_t p = eval(x.a), c = x.b == none ? 0 : eval(x.b);
    if (current_step < 1) fail("E056", x.loc, "partial(p) names what p's buffer holds when it sends: it is written in a step");
    if (x.b != none && !chunks_stated)
        fail("E054", x.loc, fmt::format("a chunk argument, but the collective does not split its data: write partial({}), or "
                                        "`collective ... chunks C`",
                                        p));
    check_rule(MessageKind::partial, x.loc);
    if (c < 0 || c >= chunks)
        fail("E056", x.loc, fmt::format("partial({}, {}): the chunk must be in 0 .. {} (the collective has {} chunk{})", p, c,
                                        chunks - 1, chunks, chunks == 1 ? "" : "s"));
    return idx((*composites).intern({MessageKind::partial, static_cast<std::uint32_t>(c), static_cast<std::uint32_t>(current_step),
                                     {MessageId{static_cast<std::uint32_t>(p)}}, {}}));
}

/// a({sources}[, c]): a partial of listed contributions.
std::int64_t Env::partial_set(const XExpr& x) {
    std::vector<std::uint32_t> src;
    for (std::uint32_t k = 0; k < x.b; ++k) {
        std::int64_t lo = eval(ir.lists[x.a + 2 * k]);
        std::uint32_t last = ir.lists[x.a + 2 * k + 1];
        std::int64_t hi = last == none ? lo : eval(last);
        if (lo > hi) fail("E048", x.loc, fmt::format("a partial's range {} .. {} is empty (write i .. j with i <= j)", lo, hi));
        // Sources are processors: checked before the range is listed (a({0 .. 2000000000}) must not allocate).
        if (lo < 0 || hi >= processors)
            fail("E040", x.loc, fmt::format("a partial's source {} does not exist ({})", lo < 0 ? lo : hi, processors_text()));
        for (std::int64_t v = lo; v <= hi; ++v) src.push_back(static_cast<std::uint32_t>(v));
    }
    std::sort(src.begin(), src.end());
    if (auto d = std::adjacent_find(src.begin(), src.end()); d != src.end())
        fail("E048", x.loc, fmt::format("a partial counts each contribution once; source {} is listed twice", *d));
    if (src.empty()) fail("E048", x.loc, "a partial needs at least one source");
    if (x.imm >= 0 && !chunks_stated)
        fail("E054", x.loc, "a chunk argument, but the collective does not split its data: write the partial without it, or "
                            "`collective ... chunks C`");
    std::int64_t c = x.imm < 0 ? 0 : eval(static_cast<std::uint32_t>(x.imm));
    if (c < 0 || c >= chunks)
        fail("E056", x.loc, fmt::format("a partial of chunk {}: the chunk must be in 0 .. {} (the collective has {} chunk{})", c,
                                        chunks - 1, chunks, chunks == 1 ? "" : "s"));
    if (src.size() == 1 && c == 0) return idx(messages.value(src[0]));
    check_rule(MessageKind::partial, x.loc);
    return idx((*composites).intern({MessageKind::partial, static_cast<std::uint32_t>(c), 0, {}, std::move(src)}));
}

/// Appends the base messages m stands for (a bundle's parts) to a bundle under construction.
void Env::add_parts(std::vector<MessageId>& parts, MessageId m, const XExpr& x) {
    if (idx(m) == empty_bundle) return;
    if (messages.is_composite(m) && messages.composite(m).kind == MessageKind::combined)
        fail("E048", x.loc, fmt::format("a bundle joins base messages; {} is a combined value", messages.name(m)));
    messages.for_each_part(m, [&](MessageId p) {
        if (std::find(parts.begin(), parts.end(), p) != parts.end())
            fail("E048", x.loc, fmt::format("{} is twice in the bundle", messages.name(p)));
        parts.push_back(p);
    });
}

std::int64_t Env::make_bundle(std::vector<MessageId> parts) {
    if (parts.empty()) return empty_bundle;
    if (parts.size() == 1) return idx(parts[0]);  // a bundle of one message is that message
    std::sort(parts.begin(), parts.end(), [](MessageId a, MessageId b) { return idx(a) < idx(b); });
    return idx((*composites).intern({MessageKind::bundle, 0, 0, std::move(parts), {}}));
}

/// `bundle(e for i in a .. b if c)`: the parts of every e where c holds.
std::int64_t Env::fold_bundle(const XExpr& x) {
    std::int64_t lo = eval(ir.lists[x.a]), hi = eval(ir.lists[x.a + 1]);
    std::uint32_t body = ir.lists[x.a + 2], cond = ir.lists[x.a + 3];
    std::vector<MessageId> parts;
    std::int64_t saved = slots[x.b];
    count_iterations(range_size(lo, hi), x.loc);
    for (std::int64_t v = lo; v <= hi; ++v) {
        slots[x.b] = v;
        if (cond == none || eval(cond)) add_parts(parts, MessageId{static_cast<std::uint32_t>(eval(body))}, x);
        if (v == hi) break;
    }
    slots[x.b] = saved;
    return make_bundle(std::move(parts));
}

/// `sum(e for i in a .. b)`, `min(...)`, `max(...)`: runs the body for each i, counting the
/// iterations against the limit like a loop. min and max of an empty range are E026.
std::int64_t Env::fold(const XExpr& x) {
    std::int64_t lo = eval(ir.lists[x.a]), hi = eval(ir.lists[x.a + 1]);
    std::uint32_t body = ir.lists[x.a + 2], cond = ir.lists[x.a + 3];
    if (hi < lo) {
        if (x.op == Op::fold_sum) return 0;
        fail("E026", x.loc, fmt::format("{}() over the empty range {} .. {}", x.op == Op::fold_min ? "min" : "max", lo, hi));
    }
    std::int64_t saved = slots[x.b], acc = 0;
    bool any = false;
    count_iterations(range_size(lo, hi), x.loc);
    for (std::int64_t v = lo;; ++v) {
        slots[x.b] = v;
        if (cond != none && !eval(cond)) {
            if (v == hi) break;
            continue;
        }
        std::int64_t y = eval(body);
        if (!any) acc = y, any = true;
        else if (x.op == Op::fold_min) acc = std::min(acc, y);
        else if (x.op == Op::fold_max) acc = std::max(acc, y);
        else if (__builtin_add_overflow(acc, y, &acc)) fail("E020", x.loc, fmt::format("integer overflow: the sum does not fit in 64 bits"));
        if (v == hi) break;
    }
    slots[x.b] = saved;
    if (!any && x.op != Op::fold_sum)
        fail("E026", x.loc, fmt::format("{}() over {} .. {}: the condition holds for no value", x.op == Op::fold_min ? "min" : "max", lo, hi));
    return acc;
}

std::int64_t Env::router(const XExpr& x, std::int64_t level, std::int64_t index) {
    const Topology& t = *topo;
    if (level_first.empty())
        fail("E041", x.loc, fmt::format("r({}, {}): {} has no routers (only processors 0..{})", level, index, t.spec(), t.processors() - 1));
    std::int64_t levels = static_cast<std::int64_t>(level_first.size());
    if (level < 1 || level > levels)
        fail("E041", x.loc, fmt::format("r({}, {}): {} has router levels 1..{}", level, index, t.spec(), levels));
    std::int64_t count = level_count[static_cast<std::size_t>(level - 1)];
    if (index < 0 || index >= count)
        fail("E041", x.loc, fmt::format("r({}, {}): level {} of {} has routers r({}, 0)..r({}, {})", level, index, level, t.spec(),
                                        level, level, count - 1));
    return level_first[static_cast<std::size_t>(level - 1)] + index;
}

std::int64_t Env::coord(const XExpr& x) {
    const auto& dims = topo->dims();
    if (dims.empty() || topo->family() == Family::hypercube)
        fail("E042", x.loc, fmt::format("{} has no coordinates; (x, y, ...) names nodes of meshes, tori and products", topo->spec()));
    if (x.b != dims.size())
        fail("E042", x.loc, fmt::format("{} has {} dimensions, the node has {} coordinates", topo->spec(), dims.size(), x.b));
    std::int64_t v = 0;
    for (std::uint32_t i = 0; i < x.b; ++i) {
        std::int64_t c = eval(ir.lists[x.a + i]);
        if (c < 0 || c >= dims[i])
            fail("E042", ir.exprs[ir.lists[x.a + i]].loc,
                 fmt::format("coordinate {} is {}; dimension {} of {} has coordinates 0..{}", i + 1, c, i + 1, topo->spec(), dims[i] - 1));
        v = v * dims[i] + c;
    }
    return v;
}

}  // namespace collsched::compiler
