#include "compiler/core/json_tree.hpp"

#include <charconv>

#include <fmt/format.h>

#include "compiler/core/json_error.hpp"
#include "dsl/diagnostics.hpp"
#include "support/error.hpp"
#include "support/teardown.hpp"

namespace collsched::json_tree {

const Value* Value::find(std::string_view key) const {
    const Value* found = nullptr;
    for (const auto& [k, v] : members)
        if (k == key) found = &v;
    return found;
}

int Value::count(std::string_view key) const {
    int n = 0;
    for (const auto& m : members) n += m.first == key;
    return n;
}

std::optional<std::int64_t> Value::integer() const {
    if (kind != Kind::number || text.find_first_of(".eE") != std::string::npos) return std::nullopt;
    std::int64_t v = 0;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
    if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
    return v;
}

std::string_view Value::kind_name() const {
    switch (kind) {
        case Kind::null: return "null";
        case Kind::boolean: return "a boolean";
        case Kind::number: return "a number";
        case Kind::string: return "a string";
        case Kind::array: return "an array";
        case Kind::object: return "an object";
    }
    return "?";
}

namespace {

/// A recursive-descent reader of RFC 8259 JSON that records line and column of every value.
class Parser {
public:
    Parser(std::string_view text, std::string_view file, Deadline deadline) : t_(text), file_(file), deadline_(deadline) {}

    Value document() {
        skip();
        Value v = value();
        skip();
        if (i_ < t_.size()) fail("unexpected text after the JSON value");
        return v;
    }

private:
    [[noreturn]] void fail(std::string_view what) const {
        SourceLoc loc = location_of(t_, std::min(i_, t_.size()));
        throw InputError(fmt::format("{}:{}:{}: malformed JSON: {}", file_, loc.line, loc.column, what));
    }
    void skip() {
        while (i_ < t_.size()) {
            char c = t_[i_];
            if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
                if (c == '\n') {
                    ++line_;
                    line_start_ = i_ + 1;
                }
                ++i_;
            } else {
                break;
            }
        }
    }
    bool eat(char c) {
        if (i_ < t_.size() && t_[i_] == c) {
            ++i_;
            return true;
        }
        return false;
    }
    Value value() {
        if (i_ >= t_.size()) fail("unexpected end of input; expected a value");
        if ((++values_ & 0xffff) == 0 && deadline_.passed())
            throw LimitReached(fmt::format("time limit (parsing {}, at line {})", file_, line_));
        Value v;
        try {
            if (!compound(v)) scalar(v);
            return v;
        } catch (const LimitReached&) {
            bury(std::make_shared<Value>(std::move(v)));  // the command ends: what is parsed is not freed on the way out
            throw;
        }
    }
    /// An object or array into v (true), or false when the value is neither (scalar()).
    bool compound(Value& v) {
        v.line = line_;
        v.col = int(i_ - line_start_) + 1;
        char c = t_[i_];
        if (c == '{') {
            ++i_;
            v.kind = Kind::object;
            skip();
            if (eat('}')) return true;
            for (;;) {
                skip();
                if (i_ >= t_.size() || t_[i_] != '"') fail("expected a member name in double quotes");
                std::string key = string();
                skip();
                if (!eat(':')) fail("expected ':' after a member name");
                skip();
                Value m = value();
                v.members.push_back(Member{std::move(key), std::move(m)});
                skip();
                if (eat(',')) continue;
                if (eat('}')) return true;
                fail("expected ',' or '}' in an object");
            }
        }
        if (c == '[') {
            ++i_;
            v.kind = Kind::array;
            skip();
            if (eat(']')) return true;
            for (;;) {
                skip();
                v.items.push_back(value());
                skip();
                if (eat(',')) continue;
                if (eat(']')) return true;
                fail("expected ',' or ']' in an array");
            }
        }
        return false;
    }
    void scalar(Value& v) {
        const char c = t_[i_];
        if (c == '"') {
            v.kind = Kind::string;
            v.text = string();
            return;
        }
        if (c == '-' || (c >= '0' && c <= '9')) {
            v.kind = Kind::number;
            v.text = number();
            return;
        }
        for (auto [word, kind, b] : {std::tuple{"true", Kind::boolean, true}, std::tuple{"false", Kind::boolean, false},
                                     std::tuple{"null", Kind::null, false}}) {
            std::string_view w(word);
            if (t_.substr(i_, w.size()) == w) {
                i_ += w.size();
                v.kind = kind;
                v.boolean = b;
                return;
            }
        }
        fail("expected a value (an object, array, string, number, true, false or null)");
    }
    std::string number() {
        const std::size_t start = i_;
        auto digits = [&] {
            std::size_t from = i_;
            while (i_ < t_.size() && t_[i_] >= '0' && t_[i_] <= '9') ++i_;
            return i_ - from;
        };
        eat('-');
        if (eat('0')) {
            if (i_ < t_.size() && t_[i_] >= '0' && t_[i_] <= '9') fail("a number may not have a leading zero");
        } else if (!digits()) {
            fail("expected digits");
        }
        if (eat('.') && !digits()) fail("expected digits after '.'");
        if (i_ < t_.size() && (t_[i_] == 'e' || t_[i_] == 'E')) {
            ++i_;
            if (!eat('+')) eat('-');
            if (!digits()) fail("expected digits in the exponent");
        }
        return std::string(t_.substr(start, i_ - start));
    }
    unsigned hex4() {
        if (i_ + 4 > t_.size()) fail("expected four hex digits after \\u");
        unsigned v = 0;
        for (int k = 0; k < 4; ++k) {
            char c = t_[i_++];
            v <<= 4;
            if (c >= '0' && c <= '9') v |= unsigned(c - '0');
            else if (c >= 'a' && c <= 'f') v |= unsigned(c - 'a' + 10);
            else if (c >= 'A' && c <= 'F') v |= unsigned(c - 'A' + 10);
            else fail("expected four hex digits after \\u");
        }
        return v;
    }
    static void utf8(std::string& out, unsigned cp) {
        if (cp < 0x80) {
            out += char(cp);
        } else if (cp < 0x800) {
            out += char(0xc0 | (cp >> 6));
            out += char(0x80 | (cp & 0x3f));
        } else if (cp < 0x10000) {
            out += char(0xe0 | (cp >> 12));
            out += char(0x80 | ((cp >> 6) & 0x3f));
            out += char(0x80 | (cp & 0x3f));
        } else {
            out += char(0xf0 | (cp >> 18));
            out += char(0x80 | ((cp >> 12) & 0x3f));
            out += char(0x80 | ((cp >> 6) & 0x3f));
            out += char(0x80 | (cp & 0x3f));
        }
    }
    std::string string() {
        ++i_;  // the opening quote
        std::string out;
        for (;;) {
            if (i_ >= t_.size()) fail("unterminated string");
            char c = t_[i_++];
            if (c == '"') return out;
            if (static_cast<unsigned char>(c) < 0x20) {
                --i_;
                fail("a control character in a string must be escaped");
            }
            if (c != '\\') {
                out += c;
                continue;
            }
            if (i_ >= t_.size()) fail("unterminated string");
            char e = t_[i_++];
            switch (e) {
                case '"': out += '"'; break;
                case '\\': out += '\\'; break;
                case '/': out += '/'; break;
                case 'b': out += '\b'; break;
                case 'f': out += '\f'; break;
                case 'n': out += '\n'; break;
                case 'r': out += '\r'; break;
                case 't': out += '\t'; break;
                case 'u': {
                    unsigned cp = hex4();
                    if (cp >= 0xd800 && cp < 0xdc00) {
                        if (!(eat('\\') && eat('u'))) fail("a high surrogate must be followed by a low one");
                        unsigned lo = hex4();
                        if (lo < 0xdc00 || lo >= 0xe000) fail("a high surrogate must be followed by a low one");
                        cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
                    } else if (cp >= 0xdc00 && cp < 0xe000) {
                        fail("a lone low surrogate");
                    }
                    utf8(out, cp);
                    break;
                }
                default: --i_; fail("an invalid escape in a string");
            }
        }
    }

    std::string_view t_;
    std::string_view file_;
    Deadline deadline_;
    std::size_t values_ = 0;
    std::size_t i_ = 0;
    int line_ = 1;
    std::size_t line_start_ = 0;
};

}  // namespace

Value parse(std::string_view text, std::string_view file, Deadline deadline) {
    check_json_depth(file, text);
    return Parser(text, file, deadline).document();
}

}  // namespace collsched::json_tree
