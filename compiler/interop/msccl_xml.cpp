#include "compiler/interop/msccl_xml.hpp"

#include <charconv>

#include <fmt/format.h>

#include "support/assert.hpp"
#include "support/error.hpp"

namespace collsched::msccl {

namespace {

class Lexer {
public:
    Lexer(std::string_view text, std::string_view name, std::string_view kind) : s_(text), name_(name), kind_(kind) {}

    Elem parse() {
        skip_misc();
        Elem root = element();
        skip_misc();
        if (i_ != s_.size()) fail("content after the closing </" + root.name + ">");
        return root;
    }

private:
    [[noreturn]] void fail(const std::string& what) const {
        int line = 1, col = 1;
        for (std::size_t k = 0; k < i_ && k < s_.size(); ++k) {
            if (s_[k] == '\n') {
                ++line;
                col = 1;
            } else {
                ++col;
            }
        }
        throw InputError(fmt::format("{}:{}:{}: malformed {}: {}", name_, line, col, kind_, what));
    }
    bool at(std::string_view p) const { return s_.substr(i_, p.size()) == p; }
    static bool space(char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }
    void skip_space() {
        while (i_ < s_.size() && space(s_[i_])) ++i_;
    }
    void skip_misc() {
        for (;;) {
            skip_space();
            if (at("<?")) {
                auto e = s_.find("?>", i_);
                if (e == std::string_view::npos) fail("unterminated <?");
                i_ = e + 2;
            } else if (at("<!--")) {
                auto e = s_.find("-->", i_);
                if (e == std::string_view::npos) fail("unterminated comment");
                i_ = e + 3;
            } else {
                return;
            }
        }
    }
    std::string name() {
        std::size_t b = i_;
        while (i_ < s_.size() && !space(s_[i_]) && s_[i_] != '>' && s_[i_] != '/' && s_[i_] != '=') ++i_;
        if (b == i_) fail("expected a name");
        return std::string(s_.substr(b, i_ - b));
    }
    std::string value() {
        if (i_ >= s_.size() || (s_[i_] != '"' && s_[i_] != '\'')) fail("expected a quoted attribute value");
        char q = s_[i_++];
        std::string v;
        while (i_ < s_.size() && s_[i_] != q) {
            if (s_[i_] == '<') fail("'<' in an attribute value");
            if (s_[i_] != '&') {
                v += s_[i_++];
                continue;
            }
            auto e = s_.find(';', i_);
            if (e == std::string_view::npos || e - i_ > 10) fail("bad entity");
            std::string_view ent = s_.substr(i_ + 1, e - i_ - 1);
            if (ent == "quot") v += '"';
            else if (ent == "amp") v += '&';
            else if (ent == "lt") v += '<';
            else if (ent == "gt") v += '>';
            else if (ent == "apos") v += '\'';
            else if (ent.starts_with("#") && ent.size() > 1) {
                unsigned code = 0;
                bool hex = ent[1] == 'x';
                auto [p, ec] = std::from_chars(ent.data() + (hex ? 2 : 1), ent.data() + ent.size(), code, hex ? 16 : 10);
                if (ec != std::errc() || p != ent.data() + ent.size() || code > 127) fail("unsupported character reference");
                if (code < 0x20 && code != '\t' && code != '\n' && code != '\r')  // XML 1.0's Char: no NUL, no other control byte
                    fail(fmt::format("character reference &{}; is no XML character", ent));
                v += char(code);
            } else {
                fail(fmt::format("unknown entity &{};", ent));
            }
            i_ = e + 1;
        }
        if (i_ >= s_.size()) fail("unterminated attribute value");
        ++i_;
        return v;
    }
    void locate(Elem& e) const {
        for (std::size_t k = line_from_; k < i_; ++k) {
            if (s_[k] == '\n') {
                ++line_;
                col_ = 1;
            } else {
                ++col_;
            }
        }
        line_from_ = i_;
        e.line = line_;
        e.col = col_;
    }
    /// Reads one element and everything inside it with an explicit stack (no recursion: a file
    /// nested 100,000 deep is refused at max_depth, not by the C++ stack).
    Elem element() {
        std::vector<Elem> open;  // the elements whose children are being read, outermost first
        for (;;) {
            if (!at("<")) fail(i_ < s_.size() ? "expected '<'" : "unexpected end of file");
            if (open.size() >= max_depth)
                fail(fmt::format("elements nested more than {} deep (MSCCL-IR needs 4: <algo>, <gpu>, <tb>, <step>)", max_depth));
            Elem e;
            locate(e);
            ++i_;
            e.name = name();
            bool closed = false;  // <name ... />
            for (;;) {
                skip_space();
                if (at("/>")) {
                    i_ += 2;
                    closed = true;
                    break;
                }
                if (at(">")) {
                    ++i_;
                    break;
                }
                if (at("<") || i_ >= s_.size()) fail(fmt::format("<{}> is not closed with '>'", e.name));
                std::string k = name();
                skip_space();
                if (!at("=")) fail(fmt::format("attribute '{}' of <{}> without a value", k, e.name));
                ++i_;
                skip_space();
                // XML allows an attribute once; NCCL's reader silently takes the first (src/graph/xml.h xmlGetAttrIndex)
                for (const auto& [key, v] : e.attrs)
                    if (key == k) fail(fmt::format("attribute '{}' of <{}> given twice", k, e.name));
                e.attrs.emplace_back(std::move(k), value());
            }
            if (!closed) {
                open.push_back(std::move(e));
            } else if (open.empty()) {
                return e;
            } else {
                open.back().subs.push_back(std::move(e));
            }
            // the closing tags that follow, then the next child
            for (;;) {
                skip_misc();
                if (!at("</")) break;
                i_ += 2;
                std::string n = name();
                skip_space();
                if (n != open.back().name) fail(fmt::format("</{}> closes <{}>", n, open.back().name));
                if (!at(">")) fail("expected '>'");
                ++i_;
                Elem done = std::move(open.back());
                open.pop_back();
                if (open.empty()) return done;
                open.back().subs.push_back(std::move(done));
            }
            if (i_ >= s_.size()) fail(fmt::format("unterminated <{}>", open.back().name));
            if (!at("<")) fail(fmt::format("text inside <{}>", open.back().name));
        }
    }

    static constexpr std::size_t max_depth = 64;

    std::string_view s_, name_, kind_;
    std::size_t i_ = 0;
    mutable std::size_t line_from_ = 0;
    mutable int line_ = 1, col_ = 1;
};

}  // namespace

Elem parse_xml(std::string_view text, std::string_view name, std::string_view kind) { return Lexer(text, name, kind).parse(); }

}  // namespace collsched::msccl
