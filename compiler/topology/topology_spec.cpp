#include "compiler/topology/topology.hpp"

#include <cctype>
#include <charconv>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "compiler/topology/names.hpp"
#include "compiler/topology/topology_checks.hpp"
#include "support/assert.hpp"
#include "support/error.hpp"
#include "support/number.hpp"

namespace collsched {

namespace {

using topology_checks::bad_spec;
using topology_checks::check_processors;
using topology_checks::is_power_of;
using topology_checks::split;


std::uint64_t parse_count(std::string_view spec, std::string_view text, std::string_view what) {
    auto v = support::parse_decimal(text);
    if (!v) bad_spec(spec, fmt::format("'{}' is not a valid {} (expected a positive integer)", text, what));
    return *v;
}

/// The offset of the first byte of `s` that is an ASCII control character or not part of a
/// well-formed UTF-8 sequence (overlong forms, surrogates and code points above U+10FFFF included).
std::optional<std::size_t> first_bad_text_byte(std::string_view s) {
    for (std::size_t i = 0; i < s.size();) {
        auto c = static_cast<unsigned char>(s[i]);
        if (c < 0x20 || c == 0x7f) return i;
        if (c < 0x80) {
            ++i;
            continue;
        }
        std::size_t n = c >= 0xc2 && c <= 0xdf ? 2 : c >= 0xe0 && c <= 0xef ? 3 : c >= 0xf0 && c <= 0xf4 ? 4 : 0;
        if (n == 0 || i + n > s.size()) return i;
        auto b1 = static_cast<unsigned char>(s[i + 1]);
        unsigned lo = c == 0xe0 ? 0xa0 : c == 0xf0 ? 0x90 : 0x80;
        unsigned hi = c == 0xed ? 0x9f : c == 0xf4 ? 0x8f : 0xbf;
        if (b1 < lo || b1 > hi) return i;
        for (std::size_t k = 2; k < n; ++k)
            if ((static_cast<unsigned char>(s[i + k]) & 0xc0) != 0x80) return i;
        i += n;
    }
    return std::nullopt;
}

/// A tiny evaluator for the ideal fat tree's capacity function w(n): integers, n, + - * / %,
/// parentheses, log2/log (base 2, floor), sqrt (floor), min, max. Floors keep it integral.
class CapExpr {
public:
    CapExpr(std::string_view spec, std::string_view text) : spec_(spec), text_(text) {}

    std::int64_t eval(std::int64_t n) {
        n_ = n;
        pos_ = 0;
        depth_ = 0;
        std::int64_t v = expr();
        skip();
        if (pos_ != text_.size()) fail("unexpected text");
        return v;
    }

private:
    [[noreturn]] void fail(std::string_view what) {
        bad_spec(spec_, fmt::format("in w={}: {} at column {} (expected integers, n, + - * / %, "
                                    "log2(), sqrt(), min(,), max(,))",
                                    text_, what, pos_ + 1));
    }
    void skip() {
        while (pos_ < text_.size() && text_[pos_] == ' ') ++pos_;
    }
    bool eat(char c) {
        skip();
        if (pos_ < text_.size() && text_[pos_] == c) {
            ++pos_;
            return true;
        }
        return false;
    }
    // Every value is kept within +-2^40, so sums cannot overflow and products are checked.
    std::int64_t bounded(std::int64_t v) {
        if (v > (1ll << 40) || v < -(1ll << 40)) fail("value too large");
        return v;
    }
    std::int64_t expr() {
        std::int64_t v = term();
        while (true) {
            if (eat('+')) v = bounded(v + term());
            else if (eat('-')) v = bounded(v - term());
            else return v;
        }
    }
    std::int64_t term() {
        std::int64_t v = unary();
        while (true) {
            if (eat('*')) {
                if (__builtin_mul_overflow(v, unary(), &v)) fail("value too large");
            } else if (eat('/') || eat('%')) {
                char op = text_[pos_ - 1];
                std::int64_t d = unary();
                if (d == 0) fail("division by zero");
                v = op == '/' ? v / d : v % d;
            } else {
                return v;
            }
            bounded(v);
        }
    }
    // Every cycle of the recursion (parentheses, function arguments, unary minus) passes here,
    // so the depth bound keeps a long spec such as "w=((((...))))" off the end of the stack.
    std::int64_t unary() {
        if (++depth_ > max_depth) fail("nested too deeply");
        std::int64_t v = eat('-') ? -unary() : primary();
        --depth_;
        return bounded(v);
    }
    std::int64_t primary() {
        skip();
        if (eat('(')) {
            std::int64_t v = expr();
            if (!eat(')')) fail("missing ')'");
            return v;
        }
        std::size_t start = pos_;
        if (pos_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[pos_]))) {
            std::int64_t v = 0;
            while (pos_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[pos_]))) {
                v = v * 10 + (text_[pos_++] - '0');
                if (v > (1ll << 40)) fail("number too large");
            }
            return v;
        }
        while (pos_ < text_.size() && std::isalnum(static_cast<unsigned char>(text_[pos_]))) ++pos_;
        std::string_view word = text_.substr(start, pos_ - start);
        if (word == "n") return n_;
        if (word == "log2" || word == "log" || word == "sqrt") {
            std::int64_t a = unary();
            if (a < 1) fail(fmt::format("{} of {}", word, a));
            if (word == "sqrt") {
                std::int64_t r = 0;
                while ((r + 1) * (r + 1) <= a) ++r;
                return r;
            }
            std::int64_t l = 0;
            while (a > 1) {
                a /= 2;
                ++l;
            }
            return l;
        }
        if (word == "min" || word == "max") {
            if (!eat('(')) fail("expected '('");
            std::int64_t a = expr();
            if (!eat(',')) fail("expected ','");
            std::int64_t b = expr();
            if (!eat(')')) fail("missing ')'");
            return word == "min" ? std::min(a, b) : std::max(a, b);
        }
        fail(word.empty() ? std::string("expected a value") : fmt::format("unknown name '{}'", word));
    }

    static constexpr int max_depth = 200;
    std::string_view spec_;
    std::string_view text_;
    std::size_t pos_ = 0;
    std::int64_t n_ = 0;
    int depth_ = 0;
};

}  // namespace

// The spec language (docs/topologies.md): the text is checked here, as written, and the values
// go to make(), which checks what a typed caller must get right too.
std::shared_ptr<const Topology> Topology::parse(std::string_view spec, const RunLimits& limits) {
    if (spec.empty()) bad_spec(spec, "empty spec");
    // Specs are written back into JSON, XML and DOT output, and a graph file name is passed to
    // the C library: control characters (a NUL would cut the file name short) and bytes that are
    // not UTF-8 are refused here, without echoing them.
    if (auto bad = first_bad_text_byte(spec))
        throw InputError(fmt::format("topology spec: byte {} is a control character or not UTF-8 text (specs are printable text, "
                                     "such as \"ebft:8\" or \"graph:net.json\")",
                                     *bad + 1));
    std::size_t colon = spec.find(':');
    std::string_view fam = spec.substr(0, colon);
    std::string_view rest = colon == std::string_view::npos ? std::string_view{} : spec.substr(colon + 1);
    auto caps_list = [&](std::string_view text) {
        std::vector<std::int64_t> caps;
        for (std::string_view c : split(text, ',')) {
            std::uint64_t v = parse_count(spec, c, "capacity");
            if (v > (1u << 30)) bad_spec(spec, fmt::format("capacity {} is too large", v));
            caps.push_back(static_cast<std::int64_t>(v));
        }
        return caps;
    };
    auto tree_size = [&](std::string_view text, std::uint64_t b) {
        std::uint64_t n = parse_count(spec, text, "number of leaves");
        if (n > max_processors) check_processors(spec, n);
        if (n < b || !is_power_of(n, b)) bad_spec(spec, fmt::format("{} leaves is not a power of {} (at least {})", n, b, b));
        return n;
    };
    const compiler::FamilyRow* row = compiler::find_family(fam);
    if (!row) bad_spec(spec, fmt::format("unknown family '{}': expected {}", fam, compiler::name_list(compiler::family_rows, &compiler::FamilyRow::name)));
    auto need_rest = [&] {
        if (rest.empty()) bad_spec(spec, fmt::format("missing size: expected {}", row->spec_form));
    };
    auto parts_of = [&](std::size_t least, std::size_t most) {
        auto parts = split(rest, ':');
        if (rest.empty() || parts.size() < least || parts.size() > most) bad_spec(spec, fmt::format("expected {}", row->spec_form));
        return parts;
    };
    TopologyArgs args;
    args.limits = limits;
    switch (row->shape) {
        case compiler::FamilyShape::leaves:
            need_rest();
            args.sizes = {tree_size(rest, 2)};
            if (row->capacity_is_leaves) args.w = [](std::int64_t k) { return k; };
            return make(row->family, args, spec);
        case compiler::FamilyShape::tree: {
            auto parts = parts_of(2, 2);
            args.sizes = {tree_size(parts[0], 2)};
            args.caps = caps_list(parts[1]);
            return make(row->family, args, spec);
        }
        case compiler::FamilyShape::fattree: {
            auto parts = parts_of(3, 3);
            std::uint64_t b = parse_count(spec, parts[0], "arity");
            if (b < 2 || b > 1024) bad_spec(spec, "the arity must be between 2 and 1024");
            args.sizes = {b, tree_size(parts[1], b)};
            args.caps = caps_list(parts[2]);
            return make(row->family, args, spec);
        }
        case compiler::FamilyShape::ideal: {
            auto parts = parts_of(1, 2);
            args.sizes = {tree_size(parts[0], 2)};
            std::string_view w = parts.size() == 2 ? parts[1] : std::string_view("w=1");
            if (w.substr(0, 2) != "w=") bad_spec(spec, fmt::format("'{}': expected w=EXPR, for example w=n or w=log2(n)+1", w));
            CapExpr expr(spec, w.substr(2));
            args.w = [&](std::int64_t k) { return expr.eval(k); };
            return make(row->family, args, spec);
        }
        case compiler::FamilyShape::size: {
            need_rest();
            std::uint64_t n = parse_count(spec, rest, "size");
            if (n < 2) bad_spec(spec, "the size must be at least 2");
            args.sizes = {n};
            return make(row->family, args, spec);
        }
        case compiler::FamilyShape::dims:
            need_rest();
            for (std::string_view d : split(rest, 'x')) {
                std::uint64_t a = parse_count(spec, d, "dimension");
                if (a < 2) bad_spec(spec, fmt::format("dimension {} must be at least 2", a));
                args.sizes.push_back(a);
            }
            return make(row->family, args, spec);
        case compiler::FamilyShape::dimension:
            need_rest();
            args.sizes = {parse_count(spec, rest, "dimension")};
            return make(row->family, args, spec);
        case compiler::FamilyShape::factors:
            need_rest();
            for (std::string_view f : split(rest, '*')) args.factors.push_back(parse(f, limits));
            return make(row->family, args, spec);
        case compiler::FamilyShape::file:
            need_rest();
            args.file = std::string(rest);
            return make(row->family, args, spec);
    }
    bad_spec(spec, "unknown family");
}

}  // namespace collsched

namespace collsched {

// Graph files inside a spec: `graph:FILE` alone or as a factor of `product:A*B*...`. The spec
// grammar has no quoting, so a file name holding '*' inside a product cannot be written anyway.
std::string map_graph_files(std::string_view spec, const std::function<std::string(const std::string&)>& map) {
    if (spec.starts_with("graph:")) return "graph:" + map(std::string(spec.substr(6)));
    if (spec.starts_with("product:")) {
        std::string out = "product:";
        bool first = true;
        for (std::string_view f : topology_checks::split(spec.substr(8), '*')) {
            if (!first) out += '*';
            out += map_graph_files(f, map);
            first = false;
        }
        return out;
    }
    return std::string(spec);
}

namespace {

std::filesystem::path directory_of(std::string_view file) {
    if (file.empty() || file == "-" || file.starts_with('<')) return {};  // "<stdin>", "witness": no file
    return std::filesystem::path(file).parent_path();
}

}  // namespace

std::string spec_written_at(std::string_view spec, std::string_view file) {
    const std::filesystem::path dir = directory_of(file);
    if (dir.empty()) return std::string(spec);
    return map_graph_files(spec, [&](const std::string& graph) {
        const std::filesystem::path p(graph);
        if (p.is_absolute()) return graph;
        // Both relative to the working directory: the graph relative to the file's directory.
        const std::filesystem::path cwd = std::filesystem::current_path();
        return (cwd / p).lexically_normal().lexically_relative((cwd / dir).lexically_normal()).generic_string();
    });
}

std::string spec_read_from(std::string_view spec, std::string_view file) {
    const std::filesystem::path dir = directory_of(file);
    if (dir.empty()) return std::string(spec);
    return map_graph_files(spec, [&](const std::string& graph) {
        const std::filesystem::path p(graph);
        if (p.is_absolute()) return graph;
        const std::filesystem::path near = (dir / p).lexically_normal();
        std::error_code ec;
        // Files written before collsched 0.9 name the graph relative to the working directory
        // they were written from: read so when the file's own directory has no such graph.
        if (!std::filesystem::exists(near, ec) && std::filesystem::exists(p, ec)) return graph;
        return near.generic_string();
    });
}

}  // namespace collsched
